"""Task definitions: names that could leave the data root are refused, plain names stay allowed;
catalogue tasks retuned by overrides, from a script and from a test.
"""

from __future__ import annotations

import pytest

# In-process pytester runs drop modules first imported inside them; torch cannot be imported
# twice in one process, so everything heavy is imported here, once.
pytest.importorskip("torch")
pytest.importorskip("torch_geometric.nn")
import pytest_graphnetz.gates  # noqa: E402,F401
import pytest_graphnetz.runner  # noqa: E402,F401
from pytest_graphnetz import Task  # noqa: E402

# -- task names ------------------------------------------------------------------------------------


def _loader(root):  # never called: the name is refused first
    raise AssertionError("loaded")


@pytest.mark.parametrize("name", ["../../../x", "/tmp/escape", "..", ".", "", "a/b", "a\\b",
                                  "C:evil"])
def test_a_task_name_cannot_leave_the_data_root(name: str) -> None:
    from pytest_graphnetz.runner.tasks import resolve_tasks

    with pytest.raises(ValueError, match="cannot name a directory under the data root"):
        Task(name, _loader)
    with pytest.raises(ValueError, match="cannot name a directory under the data root"):
        resolve_tasks({name: _loader})
    with pytest.raises(ValueError, match="`category`"):
        Task("fine", _loader, category="../up")


def test_a_hostile_task_name_writes_nothing_outside_the_root(tmp_path) -> None:
    from pytest_graphnetz import run_benchmark
    from tests.helpers.tiny import gcn, tiny_csbm

    root = tmp_path / "a" / "b" / "root"
    with pytest.raises(ValueError, match=r"rename it, e\.g\. to 'x'"):
        run_benchmark({"../../../x": tiny_csbm}, {"GCN": gcn}, seeds=[0], device="cpu",
                      root=root)
    # <root>/custom/../../../x would have been tmp_path/a/x
    assert [p for p in tmp_path.rglob("*") if p.is_file()] == []


def test_plain_names_with_spaces_and_dots_stay_allowed(tmp_path) -> None:
    assert Task("cora v2.1 (full)", _loader).name == "cora v2.1 (full)"


# -- tuning catalogue tasks ------------------------------------------------------------------------


def test_overrides_retune_every_task_and_enter_the_cache_key(root, tmp_path):
    from pytest_graphnetz import run_benchmark
    from tests.helpers.tiny import gcn, tiny_task

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

        from pytest_graphnetz.runner.tasks import get_task


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


# -- models and the kinds of tasks they fit --------------------------------------------------------


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
    from pytest_graphnetz.runner.training import KindMismatchError

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
        from pytest_graphnetz.runner.tasks import tasks_of_kind

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
