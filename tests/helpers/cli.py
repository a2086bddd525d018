"""What tests/fast/test_cli.py and tests/slow/test_cli_slow.py share (and baseline files that
bind a schedule, for the gates' tests)."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np

from pytest_graphnetz import BenchmarkReport
from pytest_graphnetz.stats.boundaries import LookSchedule

BASE = np.array([0.80, 0.82, 0.78, 0.81, 0.79, 0.83])
# The reports here hold 6 seeds: `compare` and `plot` run as for a project whose first look is
# 6 seeds (`graphnetz_seeds = 6`), so they are a canonical run; a call naming its own keeps it.
FIRST_LOOK = ["--first-look", "6"]


def write(path, values, models=("GCN",), alpha: float = 0.05) -> str:
    """A report of ``values`` at ``path`` that, as a baseline, binds that project's schedule
    (first look 6 seeds, ``alpha``; a report stored without one binds the default, 10)."""
    X = np.asarray(values, dtype=float).reshape(1, len(models), -1)
    BenchmarkReport.from_arrays(X, tasks=["karate"], models=list(models), seeds=range(X.shape[-1]),
                                metric="accuracy").to_json(path)
    return bind(path, LookSchedule(6, alpha))


def bind(path, schedule: LookSchedule) -> str:
    """The report file at ``path``, made to bind ``schedule`` as a baseline (what a refresh
    under it writes)."""
    data = json.loads(Path(path).read_text())
    data["schedule"] = schedule.to_json()
    Path(path).write_text(json.dumps(data))
    return str(path)
