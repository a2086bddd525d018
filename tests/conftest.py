"""The suite's one conftest: its tiers, how ``-n`` hands out files, the fixtures every test
gets, and the helper modules (tests/helpers, named by what they hold) whose fixtures reach
every test through ``pytest_plugins``.

Kept free of module-level torch imports: plugin tests check that pytest runs without it.
"""

from __future__ import annotations

import contextlib
import os
from pathlib import Path
from typing import Any

import pytest

# An in-process pytester session drops the modules first imported inside it, and hypothesis's
# pytest plugin imports hypothesis at the end of every session: imported here, once, it stays.
# A whole-suite run imports it anyway (test_report_json.py); a run of a few files paid about
# 4 CPU seconds per in-process session without it (0.2 s with it) where no bytecode is written.
with contextlib.suppress(ImportError):
    import hypothesis

    # CI is red only for a reason: where `CI` is set (.ci/run, GitHub Actions) every property
    # test replays the same examples, derived from its own name, and no example database carries
    # a failure from one run into the next; a failure prints the blob that reproduces it.
    # Locally the default profile explores new examples on every run.
    hypothesis.settings.register_profile("ci", derandomize=True, database=None, print_blob=True)
    if os.environ.get("CI"):
        hypothesis.settings.load_profile("ci")

# Fixtures shared across files, from the helper modules that hold them (tests/README.md).
pytest_plugins = [
    "tests.helpers.commands",
    "tests.helpers.projects",
    "tests.helpers.reports",
    "tests.helpers.sessions",
]

# The slow tier is the mark `slow`: on a test (`@pytest.mark.slow`), on a file
# (`pytestmark`), or, for every test under tests/nocover, here, so that `-m "not slow"` leaves
# out the same tests whatever paths are given (tests/README.md, "Two tiers").
NOCOVER = Path(__file__).resolve().parent / "nocover"


@pytest.hookimpl(tryfirst=True)  # before `-m` reads the marks
def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    for item in items:
        if item.path.resolve().is_relative_to(NOCOVER):
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


@pytest.fixture
def root(tmp_path) -> str:
    """A fresh dataset root for one test."""
    return str(tmp_path / "data")


@pytest.fixture(autouse=True)
def _isolated_from_the_ci_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    """Sessions under test must not append their gate tables to the real job summary of the
    GitHub Actions run that is testing this suite, nor share a dataset cache through the
    machine's ``XDG_CACHE_HOME`` (without it, a pytester session's default data root lies under
    its own ``HOME``, which pytester makes a temporary directory)."""
    monkeypatch.delenv("GITHUB_STEP_SUMMARY", raising=False)
    monkeypatch.delenv("XDG_CACHE_HOME", raising=False)


@pytest.fixture(scope="session")
def _imported_before_pytester() -> None:
    """Imports what an in-process session cannot import twice (see ``pytester`` below).
    Requested before pytest's own ``pytester``, whose module snapshot is taken when it is
    created and restored when the test ends: what is imported after it is dropped again."""
    import numpy.fft  # noqa: F401
    import scipy.stats  # noqa: F401
    import torch  # noqa: F401
    import torch_geometric  # noqa: F401


@pytest.fixture
def pytester(_imported_before_pytester: None, pytester: pytest.Pytester,
             monkeypatch: pytest.MonkeyPatch) -> pytest.Pytester:
    """pytest's ``pytester``, whose sessions load no hypothesis plugin: in a fresh interpreter
    (``runpytest_subprocess``, its xdist workers, ``graphnetz refresh``) that plugin's terminal
    summary imports all of hypothesis, about 1.6 s a session here, for nothing these tests
    check. Through ``PYTEST_ADDOPTS``, which pytester clears when it starts. (The README/docs
    blocks drop the variable: they run as a reader runs them.)

    An in-process session (``runpytest``) drops the modules first imported inside it, and
    some extension modules cannot be imported twice in one process: NumPy 2.4's (``cannot
    load module more than once per process``) and the C++ operator libraries torch._dynamo
    registers when PyG imports it. ``_imported_before_pytester`` imports them first, so they
    stay. Tests of what a session imports run it in a subprocess (``runpytest_subprocess``)."""
    monkeypatch.setenv("PYTEST_ADDOPTS", "-p no:hypothesispytest")
    return pytester
