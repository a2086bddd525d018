"""``final`` vs ``best_val`` epoch selection on real runs of the graph-regression trainer.

Three tasks on small triangle-count data (MAE, lower is better): one that overfits (a few
training graphs, a high learning rate, many epochs), one whose validation error still falls at
the last epoch (few epochs, a small learning rate), and one whose loader returns a
``(train, val)`` pair, so it has no held-out series.
"""

from __future__ import annotations

import numpy as np
import pytest

torch = pytest.importorskip("torch")

from pytest_graphnetz import BenchmarkReport, Task, run_benchmark  # noqa: E402
from pytest_graphnetz.report import EpochSelectionError  # noqa: E402
from pytest_graphnetz.runner.tasks.structure import triangle_graphs  # noqa: E402
from tests.helpers.graph_models import pooled_gin  # noqa: E402

SEEDS = (0, 1)

# The module-scoped report (three trained tasks) is built once under `-n`, which hands out whole
# files (tests/conftest.py).


def few_graphs(root: str, *, seed: int):
    train, val, test = triangle_graphs(root, seed=seed, num_graphs=60)
    return train[:12], val, test


def pair_only(root: str, *, seed: int):
    train, val, _ = few_graphs(root, seed=seed)
    return train, val


TASKS = {
    "overfit": Task("overfit", few_graphs, kind="graph_reg", epochs=60, lr=0.03,
                    weight_decay=0.0, batch_size=12),
    "peaks_last": Task("peaks_last", few_graphs, kind="graph_reg", epochs=4, lr=0.002,
                       batch_size=12),
    "pair": Task("pair", pair_only, kind="graph_reg", epochs=4, lr=0.002, batch_size=12),
}


@pytest.fixture(scope="module")
def report(tmp_path_factory) -> BenchmarkReport:
    root = tmp_path_factory.mktemp("data")
    return run_benchmark(TASKS, {"GIN": pooled_gin}, seeds=SEEDS, device="cpu", root=str(root))


def test_support_per_task(report):
    assert report.epoch_selection_support() == {"overfit": True, "peaks_last": True,
                                                "pair": False}
    assert report.histories[("pair", "GIN", 0)].val is None


def test_best_val_differs_from_final_on_an_overfitting_run(report):
    sub = report.subset(tasks=["overfit"])
    chosen = sub.selected_epochs("best_val")
    for seed in SEEDS:
        hist = sub.histories[("overfit", "GIN", seed)]
        # Lower is better: the minimum of validation MAE, computed here independently.
        assert chosen[("overfit", "GIN", seed)] == int(np.argmin(hist.val))
        assert chosen[("overfit", "GIN", seed)] < hist.n_epochs - 1
    final = sub.values("overfit", "GIN", epoch_selection="final")
    best = sub.values("overfit", "GIN", epoch_selection="best_val")
    assert np.all(final != best)
    sub.epoch_selection = "best_val"
    assert np.array_equal(sub.X[0, 0], best)


def test_best_val_equals_final_where_validation_peaks_last(report):
    sub = report.subset(tasks=["peaks_last"])
    for seed in SEEDS:
        val = report.histories[("peaks_last", "GIN", seed)].val
        assert np.all(np.diff(val) < 0)  # still improving at the end
    assert set(sub.selected_epochs("best_val").values()) == {TASKS["peaks_last"].epochs - 1}
    assert np.array_equal(sub.values("peaks_last", "GIN", epoch_selection="best_val"),
                          sub.values("peaks_last", "GIN", epoch_selection="final"))


def test_best_val_raises_without_a_held_out_series(report):
    report.epoch_selection = "best_val"
    try:
        with pytest.raises(EpochSelectionError, match=r"task\(s\) \['pair'\] have none"):
            report.X  # noqa: B018 - the property does the work
    finally:
        report.epoch_selection = "final"


def test_a_cell_is_judged_by_its_own_task(report):
    """``values`` of a supported task works under best_val even beside an unsupported one."""
    best = report.values("overfit", "GIN", epoch_selection="best_val")
    assert np.array_equal(best, report.subset(tasks=["overfit"]).to_array("best_val")[0, 0])
    with pytest.raises(EpochSelectionError):
        report.values("pair", "GIN", epoch_selection="best_val")


def test_fallback_to_final_when_not_strict(report):
    chosen = report.selected_epochs("best_val", strict=False)
    assert {chosen[("pair", "GIN", s)] for s in SEEDS} == {TASKS["pair"].epochs - 1}
    X = report.to_array("best_val", strict=False)
    i_pair, i_over = report.tasks.index("pair"), report.tasks.index("overfit")
    assert np.array_equal(X[i_pair], report.to_array("final")[i_pair])
    assert np.array_equal(X[i_over], report.subset(tasks=["overfit"]).to_array("best_val")[0])


def test_selection_is_rederived_from_json_without_retraining(report, tmp_path):
    loaded = BenchmarkReport.from_json(report.to_json(tmp_path / "r.json"))
    assert loaded.selected_epochs("best_val", strict=False) == report.selected_epochs(
        "best_val", strict=False)
    assert np.array_equal(loaded.to_array("best_val", strict=False),
                          report.to_array("best_val", strict=False))
