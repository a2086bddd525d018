"""Injected faults: sessions in unprivileged interpreters (so permission bits bind, even as
root), a sweep that records each triple's status, and what is planted where a file is
expected (a FIFO, a hard-linked or dangling file)."""

from __future__ import annotations

import os
import shutil
import sys
from pathlib import Path

import pytest

BASELINE_GATE = """
import numpy as np
from pytest_graphnetz import BenchmarkReport, assert_not_worse

def test_gcn(graphnetz_baseline):
    X = 0.8 + np.array([[[0.01, 0.03, 0.0, 0.02, 0.01, 0.04]]])
    report = BenchmarkReport.from_arrays(X, tasks=["karate"], models=["GCN"], seeds=range(6),
                                         metric="accuracy")
    assert_not_worse(report, graphnetz_baseline())
"""

NO_ROOT_POWERS = ["--inh-caps=-dac_override,-dac_read_search",
                   "--bounding-set=-dac_override,-dac_read_search"]


def unprivileged(*command: str) -> list[str]:
    """``command`` run so that permission bits bind it, even when the suite runs as root."""
    if os.geteuid() != 0:
        return list(command)
    if shutil.which("setpriv") is None:
        pytest.skip("running as root without `setpriv`: a read-only directory is not read-only")
    return ["setpriv", *NO_ROOT_POWERS, *command]


def run_pytest(pytester: pytest.Pytester, *args: str) -> pytest.RunResult:
    """A pytest session in a fresh, unprivileged interpreter."""
    return pytester.run(*unprivileged(sys.executable, "-m", "pytest", "-p", "no:randomly", *args))



def sweep(root, cache, seeds=(0,), **kwargs):
    """``(report, statuses)`` of the tiny task × GCN, statuses in seed order."""
    from pytest_graphnetz import run_benchmark
    from tests.helpers.tiny import gcn, tiny_task

    statuses = []
    report = run_benchmark({"tiny": tiny_task()}, {"GCN": gcn}, seeds=list(seeds), device="cpu",
                           root=root, cache_dir=cache,
                           progress=lambda *a: statuses.append(a[3]), **kwargs)
    return report, statuses


# -- what is planted where a file is expected (tests/cover/test_faults_reads.py) -------------

def fifo_at(path: Path) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    os.mkfifo(path)


def zero_link_at(path: Path) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.symlink_to("/dev/zero")


def dangling_link_at(path: Path) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.symlink_to(path.parent / "gone.json")
