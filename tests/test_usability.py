"""What a new user hits in the first hour: an absent pinned device, ``-k`` and the marker,
refreshing one gate, tuning catalogue tasks, models paired with the tasks they fit."""

from __future__ import annotations

import sys

import pytest

# In-process pytester runs drop modules first imported inside them; torch cannot be imported
# twice in one process, so everything heavy is imported here, once.
pytest.importorskip("torch")
pytest.importorskip("torch_geometric.nn")
import pytest_graphnetz.gates  # noqa: E402,F401
import pytest_graphnetz.runner  # noqa: E402,F401

TWO_GATES = """
import pytest

pytestmark = pytest.mark.graphnetz


def test_one(graphnetz_run):
    graphnetz_run("social", {})


def test_two(graphnetz_run):
    graphnetz_run("social", {})
"""


@pytest.mark.parametrize("device", ["cuda:99", "tpu"])
def test_absent_pinned_device_is_one_usage_error_at_session_start(pytester, device):
    pytester.makepyfile(test_gates=TWO_GATES)
    result = pytester.runpytest(f"--graphnetz-device={device}")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    errors = result.stderr.str()
    assert errors.count("--graphnetz-device") == 1 and device in errors, errors
    assert "collected" not in result.stdout.str()  # no test ran, none failed one by one


# -- tuning catalogue tasks ------------------------------------------------------------------


def test_overrides_retune_every_task_and_enter_the_cache_key(root, tmp_path):
    from conftest import gcn, tiny_task

    from pytest_graphnetz import run_benchmark

    statuses = []

    def run(**overrides):
        statuses.clear()
        return run_benchmark({"tiny": tiny_task(epochs=5, options={"keep": 1})}, {"GCN": gcn},
                             seeds=[0], device="cpu", root=root, cache_dir=tmp_path / "cache",
                             progress=lambda *a: statuses.append(a[3]), **overrides)

    report = run(epochs=2, lr=0.05, weight_decay=0.0, options={"hidden": 8})
    config = report.protocol["tasks"]["tiny"]["config"]
    assert report.histories[("tiny", "GCN", 0)].n_epochs == 2
    assert (config["epochs"], config["lr"], config["weight_decay"]) == (2, 0.05, 0.0)
    assert config["options"] == {"hidden": 8, "keep": 1}
    assert statuses == ["trained"]
    run(epochs=2, lr=0.05, weight_decay=0.0, options={"hidden": 8})
    assert statuses == ["cached"]
    run(epochs=2, lr=0.02, weight_decay=0.0, options={"hidden": 8})
    assert statuses == ["trained"]  # another lr: another key
    assert run().histories[("tiny", "GCN", 0)].n_epochs == 5  # no override: the task's own


def test_a_catalogue_task_is_tuned_from_a_test(pytester):
    pytester.makepyfile(test_tuned="""
        import dataclasses

        from torch_geometric.nn import GCN

        from pytest_graphnetz.tasks import get_task


        def gcn(i, o):
            return GCN(i, 8, 2, o)


        def test_keywords(graphnetz_run):
            report = graphnetz_run(["karate"], {"GCN": gcn}, epochs=3, lr=0.05)
            assert report.protocol["tasks"]["karate"]["config"]["lr"] == 0.05
            assert report.histories[("karate", "GCN", 0)].n_epochs == 3


        def test_replace(graphnetz_run):
            fast = dataclasses.replace(get_task("karate"), epochs=4)
            report = graphnetz_run({"karate": fast}, {"GCN": gcn})
            assert report.histories[("karate", "GCN", 1)].n_epochs == 4
    """)
    result = pytester.runpytest("--graphnetz-seeds=2", "-p", "no:cacheprovider")
    result.assert_outcomes(passed=2)


# -- models and the kinds of tasks they fit ---------------------------------------------------

GRAPH_MODEL = """
import torch
from torch_geometric.nn import GCN, GIN, global_mean_pool


class Pooled(torch.nn.Module):
    def __init__(self, in_channels, out_channels):
        super().__init__()
        self.gin = GIN(in_channels, 16, 2, 16)
        self.head = torch.nn.Linear(16, out_channels)

    def forward(self, x, edge_index, batch):
        return self.head(global_mean_pool(self.gin(x, edge_index), batch))


def gcn(in_channels, out_channels):
    return GCN(in_channels, 16, 2, out_channels)
"""


def test_a_graph_model_on_a_node_task_fails_before_training_saying_what_it_needs(root, tmp_path):
    from pytest_graphnetz import run_benchmark
    from pytest_graphnetz.runner import TripleError
    from pytest_graphnetz.training import KindMismatchError

    (tmp_path / "kindmodels_direct.py").write_text(GRAPH_MODEL)
    import sys

    sys.path.insert(0, str(tmp_path))
    try:
        import kindmodels_direct as kindmodels
    finally:
        sys.path.remove(str(tmp_path))
    finished = []
    with pytest.raises(TripleError) as caught:
        run_benchmark(["karate"], {"GIN": kindmodels.Pooled}, seeds=[0], device="cpu",
                      root=root, progress=lambda *a: finished.append(a))
    assert isinstance(caught.value.__cause__, KindMismatchError)
    message = str(caught.value)
    assert "(kind 'node')" in message and "calls model(x, edge_index)" in message
    assert "Pooled.forward(x, edge_index, batch)" in message and "'batch'" in message
    assert finished == []
    # PyG's node-level GCN on a graph task: `batch` would land in `edge_weight`
    with pytest.raises(TripleError, match=r"calls model\(x, edge_index, batch\).*`edge_weight`"):
        run_benchmark(["motifs"], {"GCN": kindmodels.gcn}, seeds=[0], device="cpu", root=root,
                      epochs=1)


def test_models_are_paired_with_the_tasks_they_fit_one_gate_per_kind(pytester):
    pytester.makepyfile(kindmodels=GRAPH_MODEL, test_by_kind="""
        import pytest

        from kindmodels import Pooled, gcn
        from pytest_graphnetz import assert_not_worse
        from pytest_graphnetz.tasks import tasks_of_kind

        TASKS = ["karate", "motifs"]
        FITS = {"node": {"GCN": gcn}, "graph": {"GIN": Pooled}}


        @pytest.mark.parametrize("kind", FITS)
        def test_not_worse(graphnetz_run, graphnetz_baseline, kind):
            report = graphnetz_run(tasks_of_kind(TASKS, kind), FITS[kind], epochs=2)
            assert list(report.tasks) == [t for t in TASKS if (t == "karate") == (kind == "node")]
            assert_not_worse(report, graphnetz_baseline())
    """)
    result = pytester.runpytest("--graphnetz-seeds=2", "--graphnetz-update-baselines",
                                "-p", "no:cacheprovider")
    result.assert_outcomes(passed=2)
    written = sorted(p.name for p in (pytester.path / "baselines" / "test_by_kind").glob("*.json"))
    assert written == ["test_not_worse[graph].json", "test_not_worse[node].json"]


# -- noise -------------------------------------------------------------------------------------


def test_t_intervals_are_clipped_to_the_metric_range_and_say_so():
    import numpy as np
    from scipy import stats as sps

    from pytest_graphnetz import BenchmarkReport

    values = np.array([1.0] * 9 + [0.9])
    low, high = sps.t.interval(0.95, df=9, loc=values.mean(), scale=sps.sem(values))
    assert high > 1.0  # what t gives: beyond what an accuracy can be
    X = np.stack([values, values])[:, None, :]
    for metric, clipped in (("accuracy", True), ("mae", False)):
        report = BenchmarkReport.from_arrays(X[:1], tasks=["motifs"], models=["GIN"],
                                             seeds=list(range(10)), metric=metric)
        row = report.summary().rows[0]
        assert row.ci_low == pytest.approx(low)
        assert row.ci_high == (1.0 if clipped else pytest.approx(high))
        assert (row.method == "t, clipped to [0, 1]") is clipped
        assert ("clipped to it" in report.to_markdown()) is clipped
        assert ("0.990 [0.967, 1.000]" in report.to_markdown()) is clipped  # not a false ±


def test_pyg_import_warning_is_not_shown_in_a_users_session(pytester):
    pytester.makepyfile(test_imports_pyg="""
        import torch_geometric.nn  # what a user's model module does


        def test_nothing():
            pass
    """)
    without = pytester.runpytest_subprocess("-p", "no:graphnetz", "-W", "default")
    assert "torch.jit.script` is deprecated" in without.stdout.str()  # the noise exists...
    result = pytester.runpytest_subprocess()
    result.assert_outcomes(passed=1)
    assert "torch.jit.script" not in result.stdout.str()              # ...and we remove it


# -- selecting gates ---------------------------------------------------------------------------

MARKED = """
import pytest

pytestmark = pytest.mark.graphnetz


def test_graph_classification():
    pass


def test_node_task():
    pass


@pytest.mark.slow
def test_slow_node_task():
    pass
"""


@pytest.mark.parametrize("args, selected", [
    (["-k", "graph"], ["test_graph_classification"]),
    (["-k", "not graph"], ["test_node_task", "test_slow_node_task"]),
    (["-k", "node and not slow"], ["test_node_task"]),
    (["-k", "slow"], ["test_slow_node_task"]),             # other markers still match -k
    (["-m", "graphnetz"], ["test_graph_classification", "test_node_task", "test_slow_node_task"]),
    (["-m", "graphnetz", "-k", "graph"], ["test_graph_classification"]),
    (["-m", "not graphnetz", "-k", "node"], []),
    (["-k", "graphnetz"], ["test_graph_classification", "test_node_task",   # asked by name
                           "test_slow_node_task"]),
])
def test_k_does_not_match_the_graphnetz_marker(pytester, args, selected):
    pytester.makeini("[pytest]\nmarkers =\n    slow: slow\n")
    pytester.makepyfile(test_marked=MARKED)
    result = pytester.runpytest("--collect-only", "-q", *args)
    got = [line.split("::")[1] for line in result.stdout.lines if "::" in line]
    assert got == selected


GATED = """
import pytest

from pytest_graphnetz import BenchmarkReport, assert_not_worse

pytestmark = pytest.mark.graphnetz


def report():
    return BenchmarkReport.from_arrays([[[0.8, 0.7, 0.9]]], tasks=["t"], models=["m"],
                                       seeds=[0, 1, 2], metric="accuracy")


def test_graph(graphnetz_baseline):
    assert_not_worse(report(), graphnetz_baseline())


def test_node(graphnetz_baseline):
    assert_not_worse(report(), graphnetz_baseline())
"""


def test_refresh_takes_a_node_id_and_rewrites_that_baseline_only(pytester):
    pytester.makepyfile(test_gated=GATED)
    result = pytester.run(sys.executable, "-m", "pytest_graphnetz.cli", "refresh",
                          "test_gated.py::test_graph", "-p", "no:cacheprovider")
    assert result.ret == 0, result.stdout.str()
    written = sorted(p.name for p in (pytester.path / "baselines" / "test_gated").glob("*.json"))
    assert written == ["test_graph.json"]
