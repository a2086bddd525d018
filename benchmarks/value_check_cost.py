"""Cost of the [0, 1] value check in BenchmarkReport.__init__.

Builds a report of 10 tasks x 10 models x 20 seeds x 200 epochs (400,000 test values) with and
without the check. Run: `python benchmarks/value_check_cost.py`.
"""

from __future__ import annotations

import time

import numpy as np

from pytest_graphnetz.report import model as report
from pytest_graphnetz.report.epochs import History, MetricSpec

rng = np.random.default_rng(0)
tasks, models, seeds = [f"t{i}" for i in range(10)], [f"m{i}" for i in range(10)], range(20)
hist = {(t, m, s): History(test=rng.uniform(0, 1, 200).tolist())
        for t in tasks for m in models for s in seeds}
metrics = {t: MetricSpec("accuracy", True) for t in tasks}


def build() -> float:
    start = time.perf_counter()
    report.BenchmarkReport(tasks=tasks, models=models, seeds=seeds, metrics=metrics,
                           histories=hist)
    return time.perf_counter() - start


with_check = min(build() for _ in range(5))
report.unit_interval_problem = lambda name, values: None
without = min(build() for _ in range(5))
print(f"build with check {with_check * 1e3:.1f} ms, without {without * 1e3:.1f} ms, "
      f"check {1e3 * (with_check - without):.1f} ms for 400,000 values")
