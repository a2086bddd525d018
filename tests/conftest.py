"""Shared test helpers: a tiny seeded node task and tiny model factories.

Kept free of module-level torch imports: plugin tests check that pytest runs without it.
Factories are module-level functions so worker processes can unpickle them.
"""

from __future__ import annotations

import contextlib
from typing import Any

import pytest

# An in-process pytester session drops the modules first imported inside it, and hypothesis's
# pytest plugin imports hypothesis at the end of every session: imported here, once, it stays.
# A whole-suite run imports it anyway (test_report_json.py); a run of a few files paid about
# 4 CPU seconds per in-process session without it (0.2 s with it) where no bytecode is written.
with contextlib.suppress(ImportError):
    import hypothesis  # noqa: F401

TINY_EPOCHS = 5


# Files whose module-scoped fixture costs seconds (a Dask cluster, a baseline trained in
# subprocesses, a trained report): under `-n` all tests of such a file go to one worker, so the
# fixture is built once instead of once per worker (tests/README.md, "Keeping it fast").
ONE_WORKER = frozenset({"tests/test_command_task.py", "tests/test_dask.py",
                        "tests/test_schedule_reruns.py",
                        "tests/test_epoch_selection.py"})


def scope_of(nodeid: str) -> str:
    """The unit ``-n`` hands out: the file for a file of :data:`ONE_WORKER`, else the test."""
    path = nodeid.split("::", 1)[0]
    return path if path in ONE_WORKER else nodeid


@pytest.hookimpl(optionalhook=True)
def pytest_xdist_make_scheduler(config: pytest.Config, log: Any) -> Any:
    """``-n N`` (xdist's default ``--dist load``) hands tests out one at a time, except the
    files of :data:`ONE_WORKER`, each of which goes whole to one worker.

    Through xdist's scheduler hook, not ``xdist_group`` marks: xdist 3.8 tags a grouped test
    by setting ``item._nodeid``, which pytest 9.2 no longer reads, so its groups were inert.
    Set here rather than in pyproject's addopts, which would make every pytest run in this
    repository (the README's ``pytest examples``) need pytest-xdist. Another ``--dist`` given
    on the command line is left alone."""
    if config.getvalue("dist") != "load":
        return None
    from xdist.scheduler import LoadScopeScheduling

    class OneWorkerPerSharedFile(LoadScopeScheduling):
        def _split_scope(self, nodeid: str) -> str:
            return scope_of(nodeid)

    return OneWorkerPerSharedFile(config, log)


def tiny_csbm(root: str, *, seed: int) -> Any:
    """A 60-node, 3-class CSBM drawn from ``seed`` (cached under ``root``)."""
    from pytest_graphnetz.tasks.synthetic import CSBM, load_csbm

    params = CSBM("tiny", num_classes=3, nodes_per_class=20, p_in=0.2, p_out=0.03,
                  num_features=8, mean_norm=1.0)
    return load_csbm(params, root, seed)


def tiny_task(name: str = "tiny", epochs: int = TINY_EPOCHS, **kwargs: Any):
    from pytest_graphnetz import Task

    return Task(name, kwargs.pop("loader", tiny_csbm), epochs=epochs, **kwargs)


def gcn(in_channels: int, out_channels: int) -> Any:
    """2-layer GCN with dropout (training draws from the RNG, so reseeding matters)."""
    from torch_geometric.nn import GCN

    return GCN(in_channels, 16, 2, out_channels, dropout=0.5)


def sage(in_channels: int, out_channels: int) -> Any:
    from torch_geometric.nn import GraphSAGE

    return GraphSAGE(in_channels, 16, 2, out_channels, dropout=0.5)


@pytest.fixture
def root(tmp_path) -> str:
    """A fresh dataset root for one test."""
    return str(tmp_path / "data")


@pytest.fixture(autouse=True)
def _isolated_from_the_ci_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    """Sessions under test must not append their gate tables to the real job summary of the
    GitHub Actions run that is testing this suite."""
    monkeypatch.delenv("GITHUB_STEP_SUMMARY", raising=False)


@pytest.fixture
def pytester(pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch) -> pytest.Pytester:
    """pytest's ``pytester``, whose sessions load no hypothesis plugin: in a fresh interpreter
    (``runpytest_subprocess``, its xdist workers, ``graphnetz refresh``) that plugin's terminal
    summary imports all of hypothesis, about 1.6 s a session here, for nothing these tests
    check. Through ``PYTEST_ADDOPTS``, which pytester clears when it starts. (The README/docs
    blocks drop the variable: they run as a reader runs them.)"""
    monkeypatch.setenv("PYTEST_ADDOPTS", "-p no:hypothesispytest")
    return pytester
