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


# The slow tier, deselected by `-m "not slow"` (the fast tier: tests/README.md, "Two tiers").
# Chosen from `--durations=0` of a full `-n 2` run: files whose every test costs seconds
# (fresh pytest sessions that train, subprocesses, a cluster, the documents' blocks) by name,
# and elsewhere the costliest tests by function name (every parametrization of it).
# tests/test_suite_scheduling.py checks that each entry names a file or test that exists.
SLOW_FILES = frozenset({
    "test_dask.py",
})
SLOW_TESTS = frozenset({
    "test_readme.py::test_block_runs_as_written",
})


def is_slow(item: pytest.Item) -> bool:
    """Whether ``item`` belongs to the slow tier (:data:`SLOW_FILES`, :data:`SLOW_TESTS`)."""
    name = item.path.name
    return name in SLOW_FILES or f"{name}::{getattr(item, 'originalname', item.name)}" \
        in SLOW_TESTS


@pytest.hookimpl(tryfirst=True)  # before `-m` reads the marks
def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    for item in items:
        if is_slow(item):
            item.add_marker(pytest.mark.slow)


@pytest.hookimpl(optionalhook=True)
def pytest_xdist_make_scheduler(config: pytest.Config, log: Any) -> Any:
    """``-n N`` hands out whole files (xdist's ``--dist loadfile``) instead of one test at a
    time (its default, ``--dist load``): a file's module-scoped fixtures (a Dask cluster, a
    baseline trained in subprocesses, a trained report) are then built once, not once per
    worker, and measured, whole files cost the suite no wall time (tests/README.md).

    Through xdist's public scheduler hook rather than pyproject's addopts, which would make
    every pytest run in this repository (the README's ``pytest examples``) need pytest-xdist.
    Another ``--dist`` given on the command line is left alone."""
    if config.getvalue("dist") != "load":
        return None
    from xdist.scheduler import LoadFileScheduling

    return LoadFileScheduling(config, log)


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
