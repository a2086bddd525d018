"""Wall time of the test suite's two tiers under ``pytest -n 2`` (the fast tier,
``-m "not slow"``, and the full suite, what `.ci/run` runs), with this machine's speed and
load measured in the same run.

The targets on 2 idle cores: the fast tier ≤ 3 min, the full suite ≤ 10 min, and no test over
60 s (printed beside them). Seconds on these shared VMs are not one unit from
day to day, so the script times, before and after the suites, the imports that the project's
machine notes give for the idle reference machine (``import torch`` ≈ 1.5 s, ``import
torch_geometric`` ≈ 3 s, ``import scipy.stats`` ≈ 0.8 s; fresh interpreters, median of 3 each)
and reads the load average. The imports' ratio to the reference is this machine's slowdown, and
the suites' figures are printed both as measured and divided by it. The division assumes the
suite slows down as those imports do: it is dominated by the same work (importing torch and PyG
in fresh interpreters, then torch/PyG training on one thread), so it is an estimate, printed as
one, not a measurement.

    .venv/bin/python benchmarks/suite_time.py                 # both tiers (~4 + ~8 min idle)
    .venv/bin/python benchmarks/suite_time.py --tier fast     # the fast tier only
    .venv/bin/python benchmarks/suite_time.py --tier full -- tests/cover/test_stats.py  # args

Also printed per tier: test-seconds (the sum of every test's duration: what two workers share),
the CPU seconds of the run (all processes), and for the last tier run the 15 slowest tests and
the 10 costliest files.
"""

from __future__ import annotations

import argparse
import collections
import functools
import os
import statistics
import subprocess
import sys
import tempfile
import time
import xml.etree.ElementTree as ET
from dataclasses import dataclass
from pathlib import Path

from _timing import cpu_seconds, interleaved

ROOT = Path(__file__).resolve().parents[1]
# The project's machine notes (the brief every session starts from): seconds on the machine
# the suite's bounds were set on.
REFERENCE = {"torch": 1.5, "torch_geometric": 3.0, "scipy.stats": 0.8}
# tier -> (pytest arguments selecting it, wall-time target in seconds on 2 idle cores)
TIERS = {"fast": (["-m", "not slow"], 180.0), "full": ([], 600.0)}
BOUND_TEST = 60.0


@dataclass(frozen=True)
class TierRun:
    """One tier's run: exit code, wall and CPU seconds, every test's seconds, the failures."""

    name: str
    code: int
    wall: float
    cpu: float
    rows: list[tuple[float, str]]  # (seconds, test), slowest first
    failed: list[str]


def calibrate(rounds: int = 3) -> dict[str, list[float]]:
    """Wall seconds of each import in fresh interpreters, interleaved round by round."""
    wall, _ = interleaved({module: functools.partial(
        subprocess.run, [sys.executable, "-c", f"import {module}"], check=True)
        for module in REFERENCE}, rounds)
    return wall


def durations(junit: Path) -> tuple[list[tuple[float, str]], list[str]]:
    """Every test's seconds (slowest first) and the tests that failed or errored."""
    rows, failed = [], []
    for case in ET.parse(junit).iter("testcase"):
        name = f"{case.get('classname')}::{case.get('name')}"
        rows.append((float(case.get("time", 0.0)), name))
        if case.find("failure") is not None or case.find("error") is not None:
            failed.append(name)
    return sorted(rows, reverse=True), failed


def run_tier(name: str, pytest_args: list[str]) -> TierRun:
    selection, _ = TIERS[name]
    with tempfile.TemporaryDirectory() as tmp:
        junit = Path(tmp) / "junit.xml"
        start_wall, start_cpu = time.perf_counter(), cpu_seconds()
        done = subprocess.run([sys.executable, "-m", "pytest", "-n", "2", "-q", "-p",
                               "no:cacheprovider", f"--junitxml={junit}", *selection,
                               *pytest_args], cwd=ROOT,
                              stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
        wall, cpu = time.perf_counter() - start_wall, cpu_seconds() - start_cpu
        rows, failed = durations(junit) if junit.exists() else ([], [])
    last = done.stdout.strip().splitlines()[-1] if done.stdout.strip() else "(no output)"
    print(f"{name} tier: {last}", flush=True)
    return TierRun(name, done.returncode, wall, cpu, rows, failed)


def slowdown_of(before: dict[str, list[float]], after: dict[str, list[float]]) -> float:
    """Print each import's time against the reference; the median ratio of the three."""
    print("\nthis machine (fresh interpreters, median of 3 before and 3 after the suites):")
    ratios = []
    for module, reference in REFERENCE.items():
        seconds = statistics.median(before[module] + after[module])
        ratios.append(seconds / reference)
        print(f"  import {module:<16} {seconds:5.2f} s  (idle reference {reference} s: "
              f"x{seconds / reference:.2f}; before {statistics.median(before[module]):.2f}, "
              f"after {statistics.median(after[module]):.2f})")
    slowdown = statistics.median(ratios)
    print(f"  slowdown against the reference machine: x{slowdown:.2f} (median of the three)")
    return slowdown


def report_tier(run: TierRun, slowdown: float) -> None:
    _, target = TIERS[run.name]
    test_seconds = sum(seconds for seconds, _ in run.rows)
    slowest = run.rows[0] if run.rows else (0.0, "(none)")
    selection = " ".join(repr(arg) if " " in arg else arg for arg in TIERS[run.name][0])
    print(f"\n{run.name} tier (pytest -n 2 {selection}".rstrip() +
          f"): exit {run.code}, {len(run.rows)} tests")
    for name in run.failed:
        print(f"  FAILED {name}")
    print(f"  wall          {run.wall:6.1f} s   scaled to the reference "
          f"{run.wall / slowdown:6.1f} s  (target {target:.0f} s on 2 idle cores)")
    print(f"  slowest test  {slowest[0]:6.1f} s   scaled to the reference "
          f"{slowest[0] / slowdown:6.1f} s  (bound {BOUND_TEST:.0f} s): {slowest[1]}")
    print(f"  test-seconds  {test_seconds:6.1f} s   (two workers share them: "
          f"{test_seconds / 2:.1f} s each)")
    print(f"  CPU seconds   {run.cpu:6.1f} s   (every process of the run)")


def report_costliest(run: TierRun) -> None:
    print(f"\nslowest tests ({run.name} tier):")
    for seconds, name in run.rows[:15]:
        print(f"  {seconds:6.1f}  {name}")
    by_file: collections.Counter[str] = collections.Counter()
    for seconds, name in run.rows:
        by_file[name.split("::")[0]] += seconds
    print(f"\ncostliest files ({run.name} tier, test-seconds):")
    for name, seconds in by_file.most_common(10):
        print(f"  {seconds:6.1f}  {name}")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--tier", choices=["fast", "full", "both"], default="both",
                        help="which tier to time (default: both, the fast one first)")
    parser.add_argument("pytest_args", nargs="*", help="arguments for pytest (after --)")
    args = parser.parse_args()
    names = list(TIERS) if args.tier == "both" else [args.tier]

    load_before = os.getloadavg()
    before = calibrate()
    runs = [run_tier(name, args.pytest_args) for name in names]
    after = calibrate()
    load_after = os.getloadavg()

    print(f"\nload average (1, 5, 15 min) on {os.cpu_count()} cores: before "
          + ", ".join(f"{x:.2f}" for x in load_before) + "; after "
          + ", ".join(f"{x:.2f}" for x in load_after))
    slowdown = slowdown_of(before, after)
    for run in runs:
        report_tier(run, slowdown)
    report_costliest(runs[-1])
    return max(run.code for run in runs)


if __name__ == "__main__":
    sys.exit(main())
