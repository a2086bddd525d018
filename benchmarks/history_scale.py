"""`graphnetz history` at scale: 500 commits × 50 cells, as a results branch reaches in months.

Builds a history folder the way CI collects it (docs/history-bisect.md): one folder per commit
with ``commit.json``, ``reports/<module>/<test>.json`` (what ``--graphnetz-report-dir`` writes:
real ``BenchmarkReport`` files with test, val and train-loss series of ``--epochs`` epochs;
1 by default, values as ``from_arrays`` writes them and as the docs' example does) and a
``graphnetz-verdicts.json``. 50 cells = 10 gated tests × 5 models on one task, 10 seeds; every
tenth commit changes nothing (its values are its parent's, bit for bit); one cell declines by
2 points over the history so the page has a drift to show.

Printed: the seconds to build the folder (not part of the figure), then `graphnetz history` in
a fresh interpreter (``python -m pytest_graphnetz.cli.main history``: what a user runs, imports
included; wall and CPU seconds, the CPU figure barely moving with other users' load) with the
import costs beside it (``import pytest_graphnetz.cli.main`` alone, and numpy,
scipy.stats, the report layer), each timed in its own fresh interpreter, and the page's size.

    .venv/bin/python benchmarks/history_scale.py                     # 500 × 50
    .venv/bin/python benchmarks/history_scale.py --commits 30 --tests 1   # 30 × 5
    .venv/bin/python benchmarks/history_scale.py --values-only           # the baselines' form
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import platform
import subprocess
import sys
import tempfile
import time
from datetime import datetime, timedelta, timezone
from pathlib import Path

import numpy as np
from _timing import cpu_seconds

from pytest_graphnetz.report import BenchmarkReport
from pytest_graphnetz.report.codec import dumps
from pytest_graphnetz.report.epochs import History, MetricSpec

MODELS = ("GCN", "GraphSAGE", "GAT", "GIN", "SGC")


def build(root: Path, *, commits: int, tests: int, seeds: int, epochs: int,
          values_only: bool = False) -> None:
    """``commits`` folders under ``root``, each with ``tests`` reports of 1 task × 5 models
    (``values_only``: in the values-only form committed baselines use)."""
    rng = np.random.default_rng(0)
    seed_effect = rng.normal(0, 0.01, (tests, len(MODELS), seeds))
    start = datetime(2026, 1, 1, tzinfo=timezone.utc)
    values = None
    for c in range(commits):
        if values is None or c % 10:
            decline = np.zeros((tests, len(MODELS), 1))
            decline[0, 0] = 0.02 * c / max(commits - 1, 1)
            values = 0.8 + seed_effect - decline + rng.normal(0, 0.005, seed_effect.shape)
        folder = root / f"{c:04d}"
        sha = hashlib.sha1(f"commit {c}".encode()).hexdigest()
        rows = []
        for t in range(tests):
            histories = {}
            for m, model in enumerate(MODELS):
                for s in range(seeds):
                    ramp = np.linspace(0.3, 1.0, epochs) if epochs > 1 else np.ones(1)
                    test = np.float32(values[t, m, s]) * ramp.astype(np.float32)
                    histories[("karate", model, s)] = History(
                        test=test.tolist(), val=(test * np.float32(0.98)).tolist(),
                        train_loss=(np.float32(1.5) - test).tolist())
                rows.append({"test": f"tests/test_models.py::test_gate_{t}", "task": "karate",
                             "model": model, "verdict": "NOT WORSE"})
            report = BenchmarkReport(tasks=["karate"], models=list(MODELS), seeds=range(seeds),
                                     metrics={"karate": MetricSpec("accuracy", True)},
                                     histories=histories,
                                     protocol={"device": {"kind": "cpu", "name": "bench"}})
            path = folder / "reports" / "test_models" / f"test_gate_{t}.json"
            if values_only:
                path.parent.mkdir(parents=True, exist_ok=True)
                path.write_text(dumps(report.to_values_dict()))
            else:
                report.to_json(path)
        (folder / "commit.json").write_text(json.dumps(
            {"commit": sha, "date": (start + timedelta(hours=c)).isoformat(),
             "subject": f"change {c}"}))
        (folder / "graphnetz-verdicts.json").write_text(json.dumps({"rows": rows}))


def fresh(code: str) -> float:
    """Seconds a fresh interpreter takes to run ``code`` (start-up included)."""
    started = time.perf_counter()
    subprocess.run([sys.executable, "-c", code], check=True)
    return time.perf_counter() - started


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--commits", type=int, default=500)
    parser.add_argument("--tests", type=int, default=10, help="reports per commit (5 cells each)")
    parser.add_argument("--seeds", type=int, default=10)
    parser.add_argument("--epochs", type=int, default=1,
                        help="epochs per history (1: values as from_arrays writes them)")
    parser.add_argument("--values-only", action="store_true",
                        help="write the reports in the values-only form (no histories)")
    parser.add_argument("--repeats", type=int, default=3)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp) / "history"
        started = time.perf_counter()
        build(root, commits=args.commits, tests=args.tests, seeds=args.seeds, epochs=args.epochs,
              values_only=args.values_only)
        built = time.perf_counter() - started
        size = sum(p.stat().st_size for p in root.rglob("*") if p.is_file())
        form = "values-only reports" if args.values_only else f"{args.epochs} epochs"
        print(f"{args.commits} commits × {args.tests * len(MODELS)} cells, {args.seeds} seeds, "
              f"{form}: folder {size / 1e6:.1f} MB, built in {built:.1f} s")
        print(f"python {platform.python_version()}, {os.cpu_count()} CPUs, "
              f"load average {os.getloadavg()[0]:.1f} at start")
        runs, cpu = [], []
        for i in range(args.repeats):
            out = Path(tmp) / f"page{i}"
            started, started_cpu = time.perf_counter(), cpu_seconds()
            done = subprocess.run([sys.executable, "-m", "pytest_graphnetz.cli", "history",
                                   str(root), "-o", str(out)], capture_output=True, text=True)
            runs.append(time.perf_counter() - started)
            cpu.append(cpu_seconds() - started_cpu)
            if done.returncode not in (0, 1):
                raise SystemExit(done.stderr)
        page = Path(tmp) / "page0" / "index.html"
        files = len(list((Path(tmp) / "page0").iterdir()))
        print(f"graphnetz history: median {np.median(runs):.2f} s (min {min(runs):.2f}, "
              f"max {max(runs):.2f}, n={len(runs)}), CPU {np.median(cpu):.2f} s, exit "
              f"{done.returncode}; page "
              f"{page.stat().st_size / 1e6:.2f} MB, {files} file(s) written")
        print(done.stdout.splitlines()[-1])
        imports = {
            "interpreter start": "pass",
            "import pytest_graphnetz.cli.main": "import pytest_graphnetz.cli.main",
            "import numpy": "import numpy",
            "import scipy.stats": "import scipy.stats",
            "import pytest_graphnetz.report": "import pytest_graphnetz.report",
            "import matplotlib.figure": "import matplotlib.figure",
        }
        print("import costs (fresh interpreter each, start-up included, median of "
              f"{args.repeats}):")
        for label, code in imports.items():
            times = [fresh(code) for _ in range(args.repeats)]
            print(f"  {label:<32} {np.median(times):.3f} s")
        print(f"load average {os.getloadavg()[0]:.1f} at end")


if __name__ == "__main__":
    main()
