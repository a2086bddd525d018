"""``--graphnetz-executor``: a gated pytest session whose triples train on a real engine.

Real engines stand in for a cluster, nothing home-made imitates one: submitit's local executor
(each triple a job in its own Python process, submitted as one job array, as on Slurm) and a
Dask ``LocalCluster`` (in-process workers, the fastest cluster there is). Each session's saved
candidate report must equal a local session's bit for bit, the gate must read IDENTICAL against
the baseline the local session wrote, and a local session must read what the engine's workers
cached. Then: a factory path that does not import, or that gives no executor, is refused naming
the option; a baseline made on another kind of hardware is refused unless accepted.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

torch = pytest.importorskip("torch")
pytest.importorskip("torch_geometric.nn")
# Imported here, before any pytester session: modules first imported inside a test are dropped
# with its pytester, and dropping Dask's leaves the later in-process sessions without plugins.
pytest.importorskip("submitit")
pytest.importorskip("distributed")
import pytest_graphnetz.gates  # noqa: E402,F401
import pytest_graphnetz.runner  # noqa: E402,F401
import pytest_graphnetz.runner.training.node  # noqa: E402,F401
from pytest_graphnetz.report import BenchmarkReport  # noqa: E402
from pytest_graphnetz.report.codec import dumps  # noqa: E402
from tests.helpers.sessions import gates_table  # noqa: E402

TOY = '''
import os

import torch
from torch_geometric.data import Data
from torch_geometric.nn import GCNConv
from torch_geometric.utils import stochastic_blockmodel_graph

from pytest_graphnetz import Task

LOG = os.path.join(os.path.dirname(os.path.abspath(__file__)), "trained.log")


def load(root, *, seed):
    gen = torch.Generator().manual_seed(seed)
    y = torch.arange(3).repeat_interleave(20)
    edge_index = stochastic_blockmodel_graph([20, 20, 20], [[0.2, 0.02, 0.02],
                                                            [0.02, 0.2, 0.02],
                                                            [0.02, 0.02, 0.2]])
    x = torch.nn.functional.one_hot(y, 3).float() + 1.5 * torch.randn(60, 3, generator=gen)
    perm = torch.randperm(60, generator=gen)
    masks = [torch.zeros(60, dtype=torch.bool) for _ in range(3)]
    for mask, part in zip(masks, (perm[:20], perm[20:35], perm[35:])):
        mask[part] = True
    return Data(x=x, edge_index=edge_index, y=y, train_mask=masks[0], val_mask=masks[1],
                test_mask=masks[2])


def logged_train(model, data, *, task, device):
    """The built-in loop; one line per training: the process it ran in, its torch threads."""
    from pytest_graphnetz.runner.training import builtin

    with open(LOG, "a") as fh:
        fh.write(f"{os.getpid()} {torch.get_num_threads()}\\n")
    return builtin("node").train(model, data, task=task, device=device)


class GCN(torch.nn.Module):
    def __init__(self, in_channels, out_channels):
        super().__init__()
        self.conv1 = GCNConv(in_channels, 16)
        self.conv2 = GCNConv(16, out_channels)

    def forward(self, x, edge_index):
        x = torch.nn.functional.dropout(self.conv1(x, edge_index).relu(), 0.5, self.training)
        return self.conv2(x, edge_index)


TASKS = {"toy": Task("toy", load, epochs=15, lr=0.05, trainer=logged_train)}
MODELS = {"GCN": GCN}
'''

GATE_TEST = """
from pytest_graphnetz import assert_not_worse

import toy


def test_gcn(graphnetz_run, graphnetz_baseline):
    assert_not_worse(graphnetz_run(toy.TASKS, toy.MODELS), graphnetz_baseline())
"""

CLUSTER = """
import os

HERE = os.path.dirname(os.path.abspath(__file__))


def submitit_local():
    import submitit

    executor = submitit.AutoExecutor(folder=os.path.join(HERE, "submitit-jobs"), cluster="local")
    executor.update_parameters(timeout_min=10)
    return executor


def dask_cluster():
    from distributed import Client, LocalCluster

    with LocalCluster(n_workers=1, threads_per_worker=1, processes=False,
                      dashboard_address=None) as cluster, Client(cluster) as client:
        yield client.get_executor(pure=False)
    with open(os.path.join(HERE, "closed.log"), "a") as fh:
        fh.write("dask closed\\n")


def not_an_executor():
    return 42
"""

SEEDS = 3
# `pythonpath = .`: the factory's module beside the ini imports when the session starts.
INI = f"[pytest]\npythonpath = .\ngraphnetz_seeds = {SEEDS}\n"


@pytest.fixture
def toy(pytester: pytest.Pytester) -> pytest.Pytester:
    pytester.makepyfile(toy=TOY, test_model=GATE_TEST, cluster=CLUSTER)
    pytester.makeini(INI)
    return pytester


def run(project: pytest.Pytester, name: str, *args: str, apart: bool = False
        ) -> pytest.RunResult:
    """A session that saves its candidate report under ``reports-<name>`` and trains with its
    own cache ``cache-<name>`` (so a fresh cache really trains on the engine). ``apart``: in a
    fresh interpreter, as CI runs pytest."""
    args = (f"--graphnetz-report-dir=reports-{name}", f"--graphnetz-cache-dir=cache-{name}",
            *args)
    return project.runpytest_subprocess(*args) if apart else project.runpytest(*args)


def saved(project: pytest.Pytester, name: str) -> BenchmarkReport:
    return BenchmarkReport.from_json(project.path / f"reports-{name}" / "test_model" /
                                     "test_gcn.json")


def trainings(project: pytest.Pytester) -> list[tuple[int, int]]:
    log = project.path / "trained.log"
    lines = log.read_text().splitlines() if log.exists() else []
    return [tuple(map(int, line.split())) for line in lines]   # type: ignore[misc]


def test_a_gated_session_on_submitit_and_on_dask_equals_the_local_one(toy: pytest.Pytester
                                                                        ) -> None:
    toy.runpytest("--graphnetz-update-baselines", "--graphnetz-no-cache").assert_outcomes(
        passed=1)
    run(toy, "local").assert_outcomes(passed=1)
    local = saved(toy, "local")
    (toy.path / "trained.log").unlink()

    remote = run(toy, "submitit", "--graphnetz-executor=cluster:submitit_local", "-v",
                 apart=True)
    remote.assert_outcomes(passed=1)
    out = remote.stdout.str()
    assert "executor cluster:submitit_local" in out  # the header says where triples train
    assert "IDENTICAL" in gates_table(out)
    # Each triple trained once, in a job process of its own (not this one), on one thread.
    ran = trainings(toy)
    assert len(ran) == SEEDS and len({pid for pid, _ in ran}) == SEEDS
    assert os.getpid() not in {pid for pid, _ in ran} and {t for _, t in ran} == {1}
    assert dumps(saved(toy, "submitit").to_dict()) == dumps(local.to_dict())
    assert saved(toy, "submitit").protocol["hardware"] == local.protocol["hardware"]

    (toy.path / "trained.log").unlink()
    on_dask = run(toy, "dask", "--graphnetz-executor=cluster:dask_cluster")
    on_dask.assert_outcomes(passed=1)
    assert "IDENTICAL" in gates_table(on_dask.stdout.str())
    assert len(trainings(toy)) == SEEDS
    assert dumps(saved(toy, "dask").to_dict()) == dumps(local.to_dict())
    # the generator factory's code after its yield ran at session end
    assert (toy.path / "closed.log").read_text() == "dask closed\n"

    # What submitit's job processes cached, a local session (in this interpreter) reads:
    # nothing trains.
    (toy.path / "trained.log").unlink()
    again = run(toy, "submitit")
    again.assert_outcomes(passed=1)
    assert trainings(toy) == []
    assert dumps(saved(toy, "submitit").to_dict()) == dumps(local.to_dict())


def test_a_factory_that_does_not_import_is_a_usage_error_naming_the_option(
        toy: pytest.Pytester) -> None:
    result = toy.runpytest("--graphnetz-executor=nosuch_cluster_module:executor")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(["*`--graphnetz-executor` 'nosuch_cluster_module:executor': "
                                 "module 'nosuch_cluster_module' does not import*"])
    toy.makeini(INI + "graphnetz_executor = cluster\n")
    result = toy.runpytest()
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(["*the ini key `graphnetz_executor` in tox.ini 'cluster' is not "
                                 "`module:factory`*"])


def test_a_factory_that_gives_no_executor_fails_the_test_naming_the_option(
        toy: pytest.Pytester) -> None:
    result = toy.runpytest("--graphnetz-executor=cluster:not_an_executor")
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines([
        "*`--graphnetz-executor` (cluster:not_an_executor returned it): 42 (int) is not a "
        "concurrent.futures.Executor nor a submitit executor*"])


def test_a_baseline_from_another_kind_of_hardware_is_refused_unless_accepted(
        toy: pytest.Pytester) -> None:
    toy.runpytest("--graphnetz-update-baselines").assert_outcomes(passed=1)
    path = toy.path / "baselines" / "test_model" / "test_gcn.json"
    baseline = json.loads(path.read_text())
    hardware = baseline["environment"]["hardware"]
    assert hardware["device"] == "cpu" and hardware["arch"]
    hardware["arch"] = "arm64"
    path.write_text(json.dumps(baseline))

    refused = toy.runpytest()
    refused.assert_outcomes(failed=1)
    out = refused.stdout.str()
    assert "REFUSED" in gates_table(out)
    assert f"the candidate ran on {_kind(toy)} but baselines/test_model/test_gcn.json" in out
    assert "on arm64 cpu (arch differs)" in out and "--graphnetz-accept-hardware" in out

    accepted = toy.runpytest("--graphnetz-accept-hardware", "-rA")
    accepted.assert_outcomes(passed=1)
    assert "IDENTICAL" in gates_table(accepted.stdout.str())


def _kind(project: pytest.Pytester) -> str:
    import platform

    return f"{platform.machine()} cpu"


def test_the_hardware_record_is_where_the_gate_reads_it(tmp_path: Path) -> None:
    """Outside pytest the same refusal: one line naming both kinds and the fix."""
    import numpy as np

    from pytest_graphnetz import assert_not_worse
    from pytest_graphnetz.gates.verdicts.values import GateRefusal

    values = np.linspace(0.7, 0.8, 10).reshape(1, 1, 10)
    kw = dict(tasks=["t"], models=["m"], seeds=list(range(10)), metric="accuracy")
    base, cand = BenchmarkReport.from_arrays(values, **kw), BenchmarkReport.from_arrays(
        values, **kw)
    record = {"arch": "x86_64", "cpu": "A", "device": "cuda", "accelerator": "NVIDIA H200",
              "torch": "2.13.0", "cuda": "12.8"}
    base.protocol["hardware"] = record
    cand.protocol["hardware"] = {**record, "cpu": "B", "torch": "2.14.0"}
    assert assert_not_worse(cand, base)[0].verdict == "IDENTICAL"  # CPU model, torch: noted
    cand.protocol["hardware"] = {**record, "accelerator": "NVIDIA A100"}
    with pytest.raises(GateRefusal, match=r"the candidate ran on x86_64 cuda NVIDIA A100 but "
                                          r"the baseline report on x86_64 cuda NVIDIA H200 "
                                          r"\(accelerator differs\)"):
        assert_not_worse(cand, base)


def test_graphnetz_compare_refuses_another_kind_of_hardware_unless_accepted(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    import numpy as np

    from pytest_graphnetz.cli.main import main

    values = np.linspace(0.7, 0.8, 10).reshape(1, 1, 10)
    kw = dict(tasks=["t"], models=["m"], seeds=list(range(10)), metric="accuracy")
    record = {"arch": "x86_64", "cpu": "A", "device": "cpu", "accelerator": None,
              "torch": "2.13.0", "cuda": None}
    for name, arch in (("base", "x86_64"), ("cand", "aarch64")):
        report = BenchmarkReport.from_arrays(values, **kw)
        report.protocol["hardware"] = {**record, "arch": arch}
        report.to_json(tmp_path / f"{name}.json")
    pair = [str(tmp_path / "base.json"), str(tmp_path / "cand.json")]
    assert main(["compare", *pair]) == 2
    err = capsys.readouterr().err
    assert "the candidate ran on aarch64 cpu but" in err and "--accept-hardware" in err
    assert main(["compare", *pair, "--accept-hardware"]) == 0
    assert "IDENTICAL" in capsys.readouterr().out


def test_a_sweep_whose_workers_ran_on_different_machines_is_an_error() -> None:
    """Each triple on an executor describes its machine; two kinds in one sweep cannot make one
    report (each entry is still cached under its own machine's key)."""
    from pytest_graphnetz.runner.environment import one_machine

    def ran_on(name: str) -> dict:
        return {"device": "cpu", "info": {"kind": "cpu", "name": name}, "gpu": None,
                "versions": {"torch": "2.13.0"}, "hardware": {}, "platform": "p"}

    assert one_machine([ran_on("A"), ran_on("A")])["info"]["name"] == "A"
    with pytest.raises(RuntimeError, match=r"different machines: cpu 'A' .*; cpu 'B'"):
        one_machine([ran_on("A"), ran_on("B")])
