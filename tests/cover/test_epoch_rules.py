"""Epoch rules real code uses: selection on a validation *loss* (its minimum) and early stopping
that restores the best weights (``History.val_metric`` and ``History.restored_epoch``).

The histories are written by hand so the chosen epochs are known exactly; a run through a real
custom trainer checks that a trainer's mapping carries both fields into the report.
"""

from __future__ import annotations

import json

import numpy as np
import pytest

from pytest_graphnetz import BenchmarkReport, History, MetricSpec
from pytest_graphnetz.report.codec import dumps
from pytest_graphnetz.report.schema import SCHEMA_VERSION

ACCURACY = {"t": MetricSpec("accuracy", True)}

# test accuracy per epoch; the validation loss falls to its minimum at epoch 2, then rises.
TEST = [0.50, 0.60, 0.70, 0.65, 0.62]
VAL_LOSS = [1.20, 0.90, 0.40, 0.55, 0.80]


def _report(**histories: History) -> BenchmarkReport:
    seeds = sorted(int(s) for s in histories)
    return BenchmarkReport(tasks=["t"], models=["m"], seeds=seeds, metrics=ACCURACY,
                           histories={("t", "m", int(s)): h for s, h in histories.items()})


def test_best_val_on_a_validation_loss_takes_its_minimum() -> None:
    report = _report(**{"0": History(test=TEST, val=VAL_LOSS, val_metric="loss")})
    assert report.selected_epochs("best_val")[("t", "m", 0)] == 2
    assert report.values("t", "m", epoch_selection="best_val").tolist() == [0.70]
    # Without `val_metric` the series is read as accuracy, so its maximum (epoch 0) would win:
    # the field is what turns the direction around.
    as_accuracy = _report(**{"0": History(test=TEST, val=VAL_LOSS)})
    assert as_accuracy.selected_epochs("best_val")[("t", "m", 0)] == 0


def test_a_loss_task_with_an_accuracy_validation_series_takes_its_maximum() -> None:
    mae = {"t": MetricSpec("mae", False)}
    hist = History(test=[3.0, 2.0, 2.5], val=[0.2, 0.9, 0.4], val_metric="accuracy")
    report = BenchmarkReport(tasks=["t"], models=["m"], seeds=[0], metrics=mae,
                             histories={("t", "m", 0): hist})
    assert report.selected_epochs("best_val")[("t", "m", 0)] == 1


def test_a_restored_epoch_is_what_final_reports() -> None:
    # Early stopping at epoch 4 (patience 2) restored the weights of epoch 2.
    restored = History(test=TEST, val=VAL_LOSS, val_metric="loss", restored_epoch=2)
    last = History(test=TEST, val=VAL_LOSS, val_metric="loss")
    report = _report(**{"0": restored, "1": last})
    assert report.selected_epochs("final") == {("t", "m", 0): 2, ("t", "m", 1): 4}
    assert report.values("t", "m").tolist() == [0.70, 0.62]


@pytest.mark.parametrize("kwargs, match", [
    ({"val_metric": "loss"}, "names a `val` series, but there is none"),
    ({"val": VAL_LOSS, "val_metric": "wobble"}, "direction cannot be detected"),
    ({"restored_epoch": 5}, r"0-based epoch of the run \(0..4\), got 5"),
    ({"restored_epoch": True}, "got True"),
])
def test_bad_epoch_rule_fields_are_refused(kwargs: dict, match: str) -> None:
    with pytest.raises(ValueError, match=match):
        History(test=TEST, **kwargs)


def test_json_keeps_the_rules_and_old_reports_still_load(tmp_path) -> None:
    plain = _report(**{"0": History(test=TEST, val=VAL_LOSS)})
    # A report that uses neither field is written exactly as before (version 3): earlier
    # readers still read it.
    assert plain.to_dict()["schema_version"] == 3
    assert "val_metric" not in dumps(plain.to_dict())
    ruled = _report(**{"0": History(test=TEST, val=VAL_LOSS, val_metric="loss",
                                    restored_epoch=3)})
    data = ruled.to_dict()
    assert data["schema_version"] == 4 and SCHEMA_VERSION == 5
    path = tmp_path / "r.json"
    ruled.to_json(path)
    back = BenchmarkReport.from_json(path)
    hist = back.histories[("t", "m", 0)]
    assert (hist.val_metric, hist.restored_epoch) == ("loss", 3)
    assert back.selected_epochs("best_val")[("t", "m", 0)] == 2
    assert back.values("t", "m").tolist() == [0.65]
    # Float64 values (not float32-exact) take the other JSON path; it keeps them too.
    wide = _report(**{"0": History(test=[0.1 + 1e-12, 0.2], val=[0.3, 0.1], val_metric="loss",
                                   restored_epoch=1)})
    again = BenchmarkReport.from_dict(json.loads(dumps(wide.to_dict())))
    assert again.histories[("t", "m", 0)] == wide.histories[("t", "m", 0)]
    # A baseline read back names each rule's epoch (`selected`): version 5, kept by a round trip.
    baseline = BenchmarkReport.from_dict(ruled.to_values_dict())
    assert baseline.histories[("t", "m", 0)].selected == {"best_val": 0, "final": 1}
    assert baseline.to_dict()["schema_version"] == 5
    assert BenchmarkReport.from_dict(json.loads(dumps(baseline.to_dict()))) == baseline
    for rule in ("final", "best_val"):
        assert baseline.values("t", "m", epoch_selection=rule).tolist() == \
            ruled.values("t", "m", epoch_selection=rule).tolist()


def test_the_committed_values_form_keeps_both_selections() -> None:
    report = _report(**{"0": History(test=TEST, val=VAL_LOSS, val_metric="loss",
                                     restored_epoch=3),
                        "1": History(test=TEST[::-1], val=VAL_LOSS[::-1], val_metric="loss")})
    values = BenchmarkReport.from_dict(report.to_values_dict())
    for rule in ("final", "best_val"):
        np.testing.assert_array_equal(values.values("t", "m", epoch_selection=rule),
                                      report.values("t", "m", epoch_selection=rule))


def early_stopping_trainer(model, data, *, task, device) -> dict:
    """A scripted early-stopping loop: validation loss bottoms out at epoch 1, patience 2."""
    import torch

    noise = float(torch.rand(1))  # seeded by the runner: runs differ per seed
    return {"test": [0.5 + noise / 10, 0.8, 0.7, 0.6], "val": [1.0, 0.3, 0.5, 0.9],
            "val_metric": "loss", "restored_epoch": 1}


def test_a_trainer_reports_both_fields_through_its_mapping(tmp_path) -> None:
    pytest.importorskip("torch")
    from pytest_graphnetz import Task, run_benchmark
    from tests.helpers.tiny import tiny_csbm

    task = Task("es", tiny_csbm, trainer=early_stopping_trainer, in_channels=8, out_channels=3,
                epochs=4)
    report = run_benchmark({"es": task}, {"lin": _linear}, seeds=[0, 1], device="cpu",
                           root=str(tmp_path), cache_dir=tmp_path / "cache")
    assert report.values("es", "lin").tolist() == [0.8, 0.8]
    assert report.values("es", "lin", epoch_selection="best_val").tolist() == [0.8, 0.8]
    cached = run_benchmark({"es": task}, {"lin": _linear}, seeds=[0, 1], device="cpu",
                           root=str(tmp_path), cache_dir=tmp_path / "cache")
    assert cached.histories == report.histories  # the cache keeps both fields


def _linear(in_channels: int, out_channels: int):
    import torch

    return torch.nn.Linear(in_channels, out_channels)
