"""Time the statistics of a 10 tasks × 10 models × 10 seeds report against a 1-second budget.

Everything a report view computes: ``summary`` with both interval methods, and ``pairwise``
(45 model pairs per task) with every test, bootstrap with 10,000 resamples.

    .venv/bin/python benchmarks/stats_speed.py
"""

from __future__ import annotations

import time

import numpy as np

from pytest_graphnetz.report import BenchmarkReport
from pytest_graphnetz.stats import CI_METHODS, PAIRED_TESTS

BUDGET_S = 1.0


def build_report() -> BenchmarkReport:
    rng = np.random.default_rng(0)
    X = rng.normal(0.8, 0.02, size=(10, 10, 10))
    return BenchmarkReport.from_arrays(
        X, tasks=[f"task{i}" for i in range(10)], models=[f"model{j}" for j in range(10)],
        seeds=range(10), metric="accuracy",
    )


def run_all(report: BenchmarkReport) -> None:
    for method in CI_METHODS:
        report.summary(method)
    for test in PAIRED_TESTS:
        report.pairwise(test)


def main() -> None:
    report = build_report()
    run_all(report)  # warm-up: scipy's lazy imports are not what we are timing
    wall, cpu = [], []
    for _ in range(5):
        start, start_cpu = time.perf_counter(), time.process_time()
        run_all(report)
        wall.append(time.perf_counter() - start)
        cpu.append(time.process_time() - start_cpu)
    # CPU time too: on a shared machine wall time also counts waiting for a core.
    median_wall, median_cpu = sorted(wall)[2], sorted(cpu)[2]
    print(f"10 tasks x 10 models x 10 seeds: summary ({', '.join(CI_METHODS)}) + pairwise "
          f"({', '.join(PAIRED_TESTS)}), 10,000 bootstrap resamples")
    print(f"median of 5 runs: wall {median_wall:.3f} s (best {min(wall):.3f} s), "
          f"CPU {median_cpu:.3f} s; wall / {BUDGET_S:g} s budget = {median_wall / BUDGET_S:.2f}")


if __name__ == "__main__":
    main()
