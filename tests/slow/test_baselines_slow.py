"""The tests of tests/fast/test_baselines.py's unit that cost seconds each: fresh
interpreters, subprocess sessions or killed processes (the slow tier, tests/README.md)."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import numpy as np
import pytest

from pytest_graphnetz.gates.refreshing.baselines import (
    BaselineHandle,
    load_baseline,
    write_baseline,
)

pytest.importorskip("scipy.stats")
from pytest_graphnetz.gates.refreshing.ratchet import refresh  # noqa: E402
from tests.helpers.reports import judge, report


def git(cwd: Path, *args: str) -> str:
    return subprocess.run(["git", *args], cwd=cwd, check=True, capture_output=True,
                          text=True).stdout


def test_two_branches_refreshing_different_models_merge_without_conflict(tmp_path) -> None:
    if shutil.which("git") is None:
        pytest.skip("git is not installed")
    repo = tmp_path / "repo"
    repo.mkdir()
    git(repo, "init", "-q", "-b", "main")
    git(repo, "config", "user.email", "t@example.com")
    git(repo, "config", "user.name", "t")
    path = repo / "baselines" / "test_m" / "test_gates.json"
    refresh(BaselineHandle(path, update=True),
            report(models=("GAT", "GCN", "SAGE"), seeds=range(10)), judge)
    git(repo, "add", ".")
    git(repo, "commit", "-qm", "baseline")
    for branch, model in (("gcn", "GCN"), ("sage", "SAGE")):
        git(repo, "checkout", "-qb", branch, "main")
        # an improvement the ratchet accepts, different in each branch
        refresh(BaselineHandle(path, update=True),
                report(models=(model,), seeds=range(10), offset=0.05), judge)
        git(repo, "commit", "-qam", f"refresh {model}")
    git(repo, "checkout", "-q", "gcn")
    merge = subprocess.run(["git", "merge", "--no-edit", "sage"], cwd=repo, capture_output=True,
                           text=True)
    assert merge.returncode == 0, merge.stdout + merge.stderr
    merged = load_baseline(path)
    for model in ("GCN", "SAGE"):
        np.testing.assert_array_equal(
            merged.values("karate", model),
            report(models=(model,), seeds=range(10), offset=0.05).values("karate", model))
    np.testing.assert_array_equal(merged.values("karate", "GAT"),
                                  report(models=("GAT",), seeds=range(10)).values("karate", "GAT"))


# -- xdist and test ids ----------------------------------------------------------------------------

SHARED = """
import os
import time

import numpy as np
from pytest_graphnetz import BenchmarkReport, assert_not_worse


def barrier(name):
    # both tests reach the refresh together, so their read-merge-writes overlap
    open(name, "w").close()
    deadline = time.time() + 30
    while not all(os.path.exists(n) for n in ("ready_a", "ready_b")) and time.time() < deadline:
        time.sleep(0.05)


def refresh(model, name, graphnetz_baseline):
    X = np.array([[[0.8, 0.82, 0.81, 0.83]]])
    report = BenchmarkReport.from_arrays(X, tasks=["karate"], models=[model], seeds=range(4),
                                         metric="accuracy")
    barrier(name)
    assert_not_worse(report, graphnetz_baseline("shared"))


def test_a(graphnetz_baseline):
    refresh("GCN", "ready_a", graphnetz_baseline)


def test_b(graphnetz_baseline):
    refresh("GAT", "ready_b", graphnetz_baseline)
"""
SLOW_WRITES = """
import os
import time

_replace = os.replace


def slow_replace(src, dst, *args, **kwargs):
    # widen the window between reading a baseline and writing it back
    if str(dst).endswith("shared.json"):
        time.sleep(0.5)
    return _replace(src, dst, *args, **kwargs)


os.replace = slow_replace
"""


def test_two_xdist_workers_refreshing_one_baseline_both_keep_their_cells(
        pytester: pytest.Pytester) -> None:
    pytest.importorskip("xdist")
    pytester.makepyfile(test_shared=SHARED)
    pytester.makeconftest(SLOW_WRITES)
    # an old file no test uses: the workers tell the controller what they used, so this full
    # refresh deletes it and only it
    orphan = write_baseline(pytester.path / "baselines" / "test_shared" / "old_name.json",
                            report(), {})
    result = pytester.runpytest_subprocess("-n", "2", "--graphnetz-update-baselines")
    result.assert_outcomes(passed=2)
    shared = load_baseline(pytester.path / "baselines" / "test_shared" / "shared.json")
    assert sorted(shared.models) == ["GAT", "GCN"]
    result.stdout.fnmatch_lines(["*graphnetz: deleted 1 baseline(s) that no test used*",
                                 f"  {orphan.relative_to(pytester.path)}"])
    assert not orphan.exists()
