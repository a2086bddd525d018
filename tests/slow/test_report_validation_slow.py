"""The tests of tests/fast/test_report_validation.py's unit that cost seconds each: fresh
interpreters, subprocess sessions or killed processes (the slow tier, tests/README.md)."""

from __future__ import annotations

import subprocess
import sys

HUGE_GRID = """
import json, resource, sys
from pytest_graphnetz import BenchmarkReport
from pytest_graphnetz.report import ReportFormatError

data = BenchmarkReport.from_arrays([[[0.5, 0.6]]], tasks=["t"], models=["m"], seeds=[0, 1],
                                   metric="accuracy").to_dict()
data["tasks"] = [f"t{i}" for i in range(2000)]
data["models"] = [f"m{i}" for i in range(2000)]
data["seeds"] = list(range(2000))
data["metrics"] = {t: {"name": "accuracy", "higher_is_better": True} for t in data["tasks"]}
data["histories"] = {"t0": {"m0": {"0": {"test": [0.5]}}}}
with open(sys.argv[1], "w") as fh:
    json.dump(data, fh)
# Far less than the 8e9 (task, model, seed) tuples the grid declares would take.
limit = 1 << 30
resource.setrlimit(resource.RLIMIT_AS, (limit, limit))
try:
    BenchmarkReport.from_json(sys.argv[1])
except ReportFormatError as exc:
    print("REFUSED", exc)
"""


def test_a_small_file_declaring_a_huge_grid_is_refused_before_allocating(tmp_path) -> None:
    path = tmp_path / "huge.json"
    run = subprocess.run([sys.executable, "-c", HUGE_GRID, str(path)], capture_output=True,
                         text=True, timeout=600)
    assert run.returncode == 0, run.stderr[-2000:]
    assert path.stat().st_size < 200_000
    assert ("`histories` has no history for 7999999999 of the 2000 × 2000 × 2000 = 8000000000 "
            "cells") in run.stdout
