"""Report size and load time: 10 tasks × 10 models × 10 seeds × 200 epochs of histories.

Built the way a real run's report is (``BenchmarkReport`` with per-epoch ``test``, ``val`` and
``train_loss`` series), with realistic values: training records float32 tensors, so every
value is a float32 widened to a Python float — accuracies are float32 means of 0/1 vectors,
losses decaying float32 cross-entropies. Their shortest *double* repr is long
(``0.6931471824645996``), which is what makes a naive JSON large.

Printed: JSON size in MB, and the median seconds (over ``--repeats``) to write it and to load
it back, plus the check that the round trip is exact. Target: loading well under a second.

    .venv/bin/python benchmarks/report_load.py
"""

from __future__ import annotations

import argparse
import statistics
import tempfile
import time
from pathlib import Path

import numpy as np

from pytest_graphnetz.report import BenchmarkReport
from pytest_graphnetz.report.epochs import History, MetricSpec


def build_report(tasks: int = 10, models: int = 10, seeds: int = 10,
                 epochs: int = 200) -> BenchmarkReport:
    """A report with float32-derived per-epoch series; ``X`` has shape (tasks, models, seeds)."""
    rng = np.random.default_rng(0)
    n_eval = 1000  # evaluation nodes: accuracies are k / 1000 computed in float32
    histories = {}
    for t in range(tasks):
        for m in range(models):
            for s in range(seeds):
                skill = np.clip(0.5 + 0.4 * (1 - np.exp(-np.arange(epochs) / 30))
                                + rng.normal(0, 0.02, epochs), 0, 1)
                correct = rng.binomial(n_eval, np.stack([skill, skill]))  # [2, epochs]
                acc = (correct.astype(np.float32) / np.float32(n_eval)).astype(np.float32)
                loss = (np.float32(1.4) * np.exp(-np.arange(epochs, dtype=np.float32) / 50)
                        + rng.gamma(2.0, 0.01, epochs).astype(np.float32)).astype(np.float32)
                histories[(f"task{t}", f"model{m}", s)] = History(
                    test=acc[0].tolist(), val=acc[1].tolist(), train_loss=loss.tolist())
    return BenchmarkReport(
        tasks=[f"task{t}" for t in range(tasks)], models=[f"model{m}" for m in range(models)],
        seeds=range(seeds), metrics={f"task{t}": MetricSpec("accuracy", True)
                                     for t in range(tasks)},
        histories=histories, protocol={"device": {"kind": "cpu", "name": "benchmark"}},
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=5)
    args = parser.parse_args()
    report = build_report()
    writes, loads = [], []
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "report.json"
        for _ in range(args.repeats):
            start = time.perf_counter()
            report.to_json(path)
            writes.append(time.perf_counter() - start)
            start = time.perf_counter()
            back = BenchmarkReport.from_json(path)
            loads.append(time.perf_counter() - start)
        size_mb = path.stat().st_size / 1e6
    exact = back == report and back.histories == report.histories
    n_values = sum(h.n_epochs * 3 for h in report.histories.values())
    print(f"report: {len(report.tasks)} tasks × {len(report.models)} models × "
          f"{len(report.seeds)} seeds × 200 epochs × 3 series = {n_values:,} float32 values")
    print(f"JSON size: {size_mb:.2f} MB ({1e6 * size_mb / n_values:.1f} bytes per value)")
    print(f"write: median {statistics.median(writes):.3f} s, load: median "
          f"{statistics.median(loads):.3f} s over {args.repeats} (target: load well under 1 s)")
    print(f"round trip exact: {exact}")
    if not exact:
        raise SystemExit("the JSON round trip changed the report")


if __name__ == "__main__":
    main()
