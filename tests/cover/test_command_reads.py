"""Command tasks track what each run read: a cached run is reused only while every file, variable
and project module it read is unchanged, with no ``DataFiles`` named.

The first test's script reads a JSON and a YAML config, an environment variable, and a project
module whose name is in the config (an import no static analysis sees); it is plain Python, so
each run costs a fraction of a second. The second runs PyG's own ``CitationFull`` on a tiny
graph in the Cora npz format, so its processed/ directory is PyG's real one.
"""

from __future__ import annotations

import json
import os
import shutil
import sys
from pathlib import Path

import numpy as np
import pytest

pytest.importorskip("torch_geometric")

from pytest_graphnetz import run_benchmark  # noqa: E402
from pytest_graphnetz.runner.command import Command, DataFiles  # noqa: E402
from pytest_graphnetz.runner.command.run import CommandExecutor  # noqa: E402
from pytest_graphnetz.runner.tasks.base import Task  # noqa: E402

SCRIPT = '''
import importlib, json, os, random
import pytest_graphnetz.script as graphnetz

config = json.load(open("config.json"))
with open("config.yaml") as fh:   # a YAML file, read by hand: what counts is that it is read
    decay = float(fh.read().split(":")[1])
scale = float(os.environ.get("PROJECT_SCALE", "1"))
helper = importlib.import_module(config["helper"])
graphnetz.seed()
for epoch in range(3):
    graphnetz.record(test=helper.score(config["hidden"], decay, scale, random.random()))
'''

HELPER = '''
def score(hidden, decay, scale, noise):
    return max(0.0, min(1.0, 0.5 + 0.001 * hidden * scale - 0.1 * decay + 0.01 * noise))
'''

SEEDS = [0, 1]


def project(where: Path) -> None:
    where.mkdir(parents=True)
    (where / "train.py").write_text(SCRIPT)
    (where / "helpers.py").write_text(HELPER)
    (where / "config.json").write_text(json.dumps({"hidden": 16, "helper": "helpers"}))
    (where / "config.yaml").write_text("weight_decay: 5e-4\n")


def statuses(where: Path, cache: Path) -> list[str]:
    seen: list[str] = []
    tasks = {"t": Task("t", DataFiles(), kind="command")}
    models = {"m": Command([sys.executable, "train.py"], cwd=where)}
    run_benchmark(tasks, models, seeds=SEEDS, device="cpu", cache_dir=cache,
                  progress=lambda *a: seen.append(a[3]))
    return seen


TRAINED, CACHED = ["trained"] * len(SEEDS), ["cached"] * len(SEEDS)


def test_config_files_variables_and_imported_modules_retrain_a_script(tmp_path,
                                                                       monkeypatch) -> None:
    monkeypatch.delenv("PROJECT_SCALE", raising=False)
    where, cache = tmp_path / "clone1", tmp_path / "cache"
    project(where)
    assert statuses(where, cache) == TRAINED
    assert statuses(where, cache) == CACHED

    (where / "config.json").write_text(json.dumps({"hidden": 4, "helper": "helpers"}))
    assert statuses(where, cache) == TRAINED
    (where / "config.yaml").write_text("weight_decay: 0.5\n")
    assert statuses(where, cache) == TRAINED
    monkeypatch.setenv("PROJECT_SCALE", "2")   # set by the caller, read by the script
    assert statuses(where, cache) == TRAINED
    assert statuses(where, cache) == CACHED
    monkeypatch.setenv("UNRELATED_VARIABLE", "x")   # not read: still a hit
    assert statuses(where, cache) == CACHED

    (where / "helpers.py").write_text("# a comment\n" + HELPER)   # formatting: a hit
    assert statuses(where, cache) == CACHED
    (where / "helpers.py").write_text(HELPER.replace("0.01 * noise", "0.02 * noise"))
    assert statuses(where, cache) == TRAINED

    # Unchanged, a copy in another directory (another absolute path) is a full cache hit.
    clone = tmp_path / "elsewhere" / "clone2"
    shutil.copytree(where, clone)
    assert statuses(clone, cache) == CACHED


def test_what_a_run_read_is_recorded_relative_to_its_directory(tmp_path, monkeypatch) -> None:
    monkeypatch.setenv("PROJECT_SCALE", "3")
    project(tmp_path / "p")
    command = Command([sys.executable, "train.py"], cwd=tmp_path / "p")
    with CommandExecutor() as commands:
        history, reads = commands.run_traced(command, task="t", model="m", metric="accuracy",
                                             seed=0, device="cpu", threads=1,
                                             deterministic="off")
    assert len(history.test) == 3
    assert reads is not None
    assert sorted(reads["files"]) == ["config.json", "config.yaml"]
    assert list(reads["modules"]) == ["helpers.py"]   # train.py itself is in the key already
    assert set(reads["env"]) == {"PROJECT_SCALE"}     # not GRAPHNETZ_SEED (set by the runner)


def write_citation_npz(path: Path, seed: int) -> None:
    """A 60-node graph in gnn-benchmark's sparse npz layout (what CitationFull reads)."""
    import scipy.sparse as sp

    rng = np.random.default_rng(seed)
    n, f = 60, 12
    labels = np.repeat(np.arange(3), n // 3)
    upper = np.triu(rng.random((n, n)) < np.where(labels[:, None] == labels[None, :], 0.2,
                                                      0.02), 1)
    adj = sp.csr_matrix((upper | upper.T).astype(np.float32))
    attr = sp.csr_matrix((rng.random((n, f)) < 0.3).astype(np.float32))
    path.parent.mkdir(parents=True, exist_ok=True)
    np.savez(path, adj_data=adj.data, adj_indices=adj.indices, adj_indptr=adj.indptr,
             adj_shape=adj.shape, attr_data=attr.data, attr_indices=attr.indices,
             attr_indptr=attr.indptr, attr_shape=attr.shape, labels=labels)


PYG_SCRIPT = '''
import torch
from torch_geometric.datasets import CitationFull
import pytest_graphnetz.script as graphnetz

data = CitationFull("data", "cora")[0]
graphnetz.seed()
w = torch.randn(data.num_features, 3)
pred = (data.x @ w).argmax(1)
graphnetz.record(test=float((pred == data.y).float().mean()) + 0.0 * float(data.x.sum()),
                 nodes=data.num_nodes, edges=data.edge_index.size(1))
'''


@pytest.mark.slow   # 9-29 s on an idle core: over the fast tier's budget
def test_pyg_processed_data_retrains_after_a_raw_change_without_data_files(tmp_path) -> None:
    where, cache = tmp_path / "repo", tmp_path / "cache"
    where.mkdir()
    (where / "train.py").write_text(PYG_SCRIPT)
    write_citation_npz(where / "data" / "cora" / "raw" / "cora.npz", seed=0)
    tasks = {"cora": Task("cora", DataFiles(), kind="command")}
    models = {"m": Command([sys.executable, "train.py"], cwd=where)}

    def run() -> tuple[list[str], list[float]]:
        seen: list[str] = []
        report = run_benchmark(tasks, models, seeds=SEEDS, device="cpu", cache_dir=cache,
                               progress=lambda *a: seen.append(a[3]))
        edges = [report.histories[("cora", "m", s)].extra["edges"][0] for s in SEEDS]
        return seen, edges

    first, edges = run()
    assert first == TRAINED and (where / "data" / "cora" / "processed").is_dir()
    assert run() == (CACHED, edges)
    # A new raw file, processed again (as PyG does once processed/ is gone): retrained.
    write_citation_npz(where / "data" / "cora" / "raw" / "cora.npz", seed=1)
    shutil.rmtree(where / "data" / "cora" / "processed")
    again, new_edges = run()
    assert again == TRAINED and new_edges != edges
    # A fresh copy elsewhere is a full hit, with processed/ and without it (a git clone has
    # only the raw file): the runs that read processed/ stand while what made it is unchanged.
    def run_in(clone: Path) -> list[str]:
        # no verify sample: its retrain would make processed/ in the clone, which this checks
        seen: list[str] = []
        run_benchmark(tasks, {"m": Command([sys.executable, "train.py"], cwd=clone)},
                      seeds=SEEDS, device="cpu", cache_dir=cache, verify_cache=0,
                      progress=lambda *a: seen.append(a[3]))
        return seen

    shutil.copytree(where, tmp_path / "copy")
    assert run_in(tmp_path / "copy") == CACHED
    clone = tmp_path / "clone"
    shutil.copytree(where, clone, ignore=shutil.ignore_patterns("processed"))
    assert run_in(clone) == CACHED
    # Another raw file there: processed/ cannot stand in, every seed retrains.
    write_citation_npz(clone / "data" / "cora" / "raw" / "cora.npz", seed=2)
    assert run_in(clone) == TRAINED


def test_a_shell_command_is_keyed_as_before(tmp_path) -> None:
    (tmp_path / "run.sh").write_text(
        'printf \'{"metric": "accuracy", "test": [0.5]}\' > "$GRAPHNETZ_OUTPUT"\n')
    command = Command(["sh", "run.sh"], script="run.sh", cwd=tmp_path)
    seen: list[str] = []
    for _ in range(2):
        run_benchmark({"t": Task("t", DataFiles(), kind="command")}, {"m": command}, seeds=[0],
                      device="cpu", cache_dir=tmp_path / "cache",
                      progress=lambda *a: seen.append(a[3]))
    assert seen == ["trained", "cached"]
    assert os.path.exists(tmp_path / "cache")


OWN_VARIABLE = '''
import os
import pytest_graphnetz.script as graphnetz

os.environ["RUN_OWN"] = "set by the run"       # set, then read: the run's own value
os.putenv("RUN_PUT", "set by the run")
mode = os.environ["RUN_OWN"] + str(os.environ.get("PROJECT_MODE"))
graphnetz.record(test=0.5)
'''


def test_a_variable_the_run_set_before_reading_it_is_not_an_input(tmp_path,
                                                                   monkeypatch) -> None:
    (tmp_path / "train.py").write_text(OWN_VARIABLE)
    monkeypatch.setenv("RUN_OWN", "inherited")
    command = Command([sys.executable, "train.py"], cwd=tmp_path)
    with CommandExecutor() as commands:
        _, reads = commands.run_traced(command, task="t", model="m", metric="accuracy",
                                       seed=0, device="cpu", threads=1, deterministic="off")
    assert reads is not None
    assert "RUN_OWN" not in reads["env"]
    assert reads["env"]["PROJECT_MODE"] is None   # read, unset: still an input


# -- costs seconds each (marked slow): fresh interpreters, subprocess sessions or killed
# processes (the slow tier, tests/README.md) ------------------------------------------------


IMPORTS_TORCH = '''
import torch
import torch_geometric  # its import reads TORCHINDUCTOR_CACHE_DIR
import pytest_graphnetz.script as graphnetz

graphnetz.seed()
graphnetz.record(test=float(torch.sigmoid(torch.randn(3).sum())))
'''


TWO_KINDS = '''
import sys
from pathlib import Path

from pytest_graphnetz import Task
from pytest_graphnetz.runner.command import Command, DataFiles

HERE = Path(__file__).parent


def gcn(in_channels, out_channels):
    from torch_geometric.nn import GCN

    return GCN(in_channels, 4, 1, out_channels)


def test_in_process(graphnetz_run):
    graphnetz_run("social", {"GCN": gcn}, epochs=2)


def test_script(graphnetz_run):
    graphnetz_run({"t": Task("t", DataFiles(), kind="command")},
                  {"A": Command([sys.executable, "train.py"], cwd=HERE)})
'''


@pytest.mark.slow
def test_what_a_script_inherits_does_not_depend_on_the_runner_importing_torch(
        pytester: pytest.Pytester, monkeypatch) -> None:
    # A session with an in-process gate imports torch and PyG in pytest, and that import sets
    # TORCHINDUCTOR_CACHE_DIR; a session of the command gate alone does not. The script's
    # import of PyG reads that variable: were it inherited, every run the first session made would
    # retrain in the second.
    monkeypatch.delenv("TORCHINDUCTOR_CACHE_DIR", raising=False)
    pytester.makepyfile(test_kinds=TWO_KINDS)
    (pytester.path / "train.py").write_text(IMPORTS_TORCH)
    options = ["-p", "no:randomly", "-p", "no:cacheprovider", "-o", "graphnetz_seeds=3",
               "--graphnetz-device=cpu", f"--graphnetz-cache-dir={pytester.path / 'cache'}",
               "--graphnetz-verify-cache=0"]
    both = pytester.runpytest_subprocess(*options)
    both.assert_outcomes(passed=2)
    script_alone = pytester.runpytest_subprocess(*options, "-k", "script")
    script_alone.assert_outcomes(passed=1, deselected=1)
    script_alone.stdout.fnmatch_lines(["*triples: 0 trained, 3 from cache*"])
