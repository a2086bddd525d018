"""What tests/fast/test_cli.py and tests/slow/test_cli_slow.py share."""

from __future__ import annotations

import numpy as np

from pytest_graphnetz import BenchmarkReport

BASE = np.array([0.80, 0.82, 0.78, 0.81, 0.79, 0.83])
# The reports here hold 6 seeds: `compare` and `plot` run as for a project whose first look is
# 6 seeds (`graphnetz_seeds = 6`), so they are a canonical run; a call naming its own keeps it.
FIRST_LOOK = ["--first-look", "6"]


def write(path, values, models=("GCN",)) -> str:
    X = np.asarray(values, dtype=float).reshape(1, len(models), -1)
    BenchmarkReport.from_arrays(X, tasks=["karate"], models=list(models), seeds=range(X.shape[-1]),
                                metric="accuracy").to_json(path)
    return str(path)
