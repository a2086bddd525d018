"""What tests/fast/test_runner.py and tests/slow/test_runner_slow.py share."""

from __future__ import annotations

from conftest import gcn, sage, tiny_task

from pytest_graphnetz import BenchmarkReport, run_benchmark
from pytest_graphnetz.report.codec import dumps

MODELS = {"GCN": gcn, "SAGE": sage}


def run(root, models=MODELS, seeds=(0, 1), device="cpu", **kw):
    return run_benchmark({"tiny": tiny_task()}, models, seeds=seeds, device=device, root=root,
                         **kw)


def text(report: BenchmarkReport) -> str:
    """Canonical text of everything in a report (NaN-safe bit-for-bit comparison)."""
    return dumps(report.to_dict())
