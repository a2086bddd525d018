"""What tests/fast/test_baselines.py and tests/slow/test_baselines_slow.py share."""

from __future__ import annotations

import pytest_graphnetz.gates as gates
from pytest_graphnetz import BenchmarkReport

SHIFT = {"GCN": 0.0, "SAGE": 0.02, "GAT": 0.04}   # a model's numbers do not depend on its company


def report(models=("GCN",), seeds=range(4), offset=0.0) -> BenchmarkReport:
    X = [[[0.8 + offset + SHIFT[m] + 0.01 * (s % 4) + 0.001 * (s % 3) for s in seeds]
          for m in models]]
    return BenchmarkReport.from_arrays(X, tasks=["karate"], models=list(models), seeds=seeds,
                                       metric="accuracy")


def judge(candidate, reference, source):
    # as the gates' ratchet judges a refresh: alone at α (a refresh is not a rerun)
    return gates.compare_reports(candidate, reference, gate="not_worse", source=source,
                                 rerun_safe=False)
