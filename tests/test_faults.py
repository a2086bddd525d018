"""Faults: dead parents, killed writes, read-only and occupied paths, corrupt cache entries.

Process-level faults go through real processes (``kill -9``, a second interpreter); a read-only
directory is real too: as root, the session runs without the capability that lets root write
anywhere (``setpriv``), so the permission bits apply.
"""

from __future__ import annotations

import os
import shutil
import stat
import sys
from pathlib import Path

import numpy  # noqa: F401  (in-process pytester runs must not import numpy a second time)
import pytest

import pytest_graphnetz.gates  # noqa: F401  (loaded once: see test_plugin.py)

BASELINE_GATE = """
import numpy as np
from pytest_graphnetz import BenchmarkReport, assert_not_worse

def test_gcn(graphnetz_baseline):
    X = 0.8 + np.array([[[0.01, 0.03, 0.0, 0.02, 0.01, 0.04]]])
    report = BenchmarkReport.from_arrays(X, tasks=["karate"], models=["GCN"], seeds=range(6),
                                         metric="accuracy")
    assert_not_worse(report, graphnetz_baseline())
"""

_NO_ROOT_POWERS = ["--inh-caps=-dac_override,-dac_read_search",
                   "--bounding-set=-dac_override,-dac_read_search"]


def unprivileged(*command: str) -> list[str]:
    """``command`` run so that permission bits bind it, even when the suite runs as root."""
    if os.geteuid() != 0:
        return list(command)
    if shutil.which("setpriv") is None:
        pytest.skip("running as root without `setpriv`: a read-only directory is not read-only")
    return ["setpriv", *_NO_ROOT_POWERS, *command]


def read_only(directory: Path) -> None:
    directory.mkdir(parents=True, exist_ok=True)
    directory.chmod(stat.S_IRUSR | stat.S_IXUSR)


def run_pytest(pytester: pytest.Pytester, *args: str) -> pytest.RunResult:
    """A pytest session in a fresh, unprivileged interpreter."""
    return pytester.run(*unprivileged(sys.executable, "-m", "pytest", "-p", "no:randomly", *args))


# -- baselines -----------------------------------------------------------------------------------


def test_a_baseline_path_that_is_a_directory_says_so(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(test_model=BASELINE_GATE)
    occupied = pytester.path / "baselines" / "test_model" / "test_gcn.json"
    occupied.mkdir(parents=True)
    result = pytester.runpytest()
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines(["*baseline *test_gcn.json is a directory, not a report file*"])
    result.stdout.no_fnmatch_line("*no baseline at*")
    # the suggested refresh fails with the same clear reason, not an IsADirectoryError
    refresh = pytester.runpytest("--graphnetz-update-baselines")
    refresh.assert_outcomes(failed=1)
    refresh.stdout.fnmatch_lines(["*cannot write baseline *test_gcn.json: it is a directory*"])
    refresh.stdout.no_fnmatch_line("*IsADirectoryError*")
    assert occupied.is_dir()


def test_a_read_only_baseline_directory_names_itself(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(test_model=BASELINE_GATE)
    folder = pytester.path / "baselines" / "test_model"
    read_only(folder)
    try:
        result = run_pytest(pytester, "--graphnetz-update-baselines")
    finally:
        folder.chmod(0o755)
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines([f"*cannot write baseline {folder}/test_gcn.json: no permission "
                                 f"to write in {folder}*--graphnetz-baseline-dir*"])
    result.stdout.no_fnmatch_line("*.tmp*")
    assert list(folder.iterdir()) == []
