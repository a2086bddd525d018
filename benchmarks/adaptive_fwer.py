"""Adaptive seeds under the null, through the real gate: family-wise false REGRESSED
of ``assert_not_worse`` on an adaptive report, m = 1, 3, 10 cells, every true Δ = 0.

Each trial scripts a runner (no training): per (cell, seed) a baseline value and a candidate
value drawn from the same law, so every cell sits exactly on REGRESSED's boundary (margin 0).
``run_adaptive`` with that runner gives the AdaptiveReport, ``assert_not_worse`` decides it
(training the open cells' next seeds through the runner), and the trial counts as a false
alarm when any cell reads REGRESSED. Any other exception is counted, and must be zero.

Two laws:

- *normal*: baseline N(0.8, 0.02²), candidate = baseline + N(0, 0.01²) (continuous);
- *karate*: baseline and candidate drawn independently from the karate pool's per-seed test
  accuracies (8 test nodes: 12.5-point steps, many exact-zero and tied differences), the
  discrete case where two equal non-zero differences give t = ±inf.

The karate rows also run a small grid of MIN..MAX (MAX a look of the schedule, MIN·2^k; MIN < 3
is refused, see ``pytest_graphnetz.gates.comparing.adaptive.check_adaptive``), m = 1.

The advice an INCONCLUSIVE row carries (``seeds_needed``: about a second of simulation per
row here) is stubbed out (``--with-advice`` keeps it): it sets the message's seed count, never
a verdict, so the rates are the gate's.

    python benchmarks/adaptive_fwer.py --out benchmarks/adaptive_seeds_results.md   # full run
    python benchmarks/adaptive_fwer.py --quick    # 200 trials per row, prints only

``--out`` replaces this benchmark's section (from its heading on) and keeps what is above it.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from collections.abc import Sequence
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
ALPHA = 0.05
POOL = ROOT / "benchmarks" / "gate_quality_values.json"
RESULTS = ROOT / "benchmarks" / "adaptive_seeds_results.md"
MARK = "## Family-wise false REGRESSED through the real gate (issue 21)"


class ScriptedRunner:
    """Stands in for run_benchmark: each (model, seed) value comes from a table drawn up front,
    so the trial's data do not depend on the order seeds are asked for."""

    def __init__(self, values: dict[str, np.ndarray]) -> None:
        self.values = values

    def __call__(self, tasks, models, *, seeds, **kwargs):
        from pytest_graphnetz import BenchmarkReport

        seeds = list(seeds)
        X = [[[self.values[m][s] for s in seeds] for m in models] for _ in tasks]
        return BenchmarkReport.from_arrays(X, tasks=list(tasks), models=list(models),
                                           seeds=seeds, metric="accuracy")


def trial(law: str, m: int, lo: int, hi: int, rng: np.random.Generator,
          karate: np.ndarray) -> tuple[bool, str | None, int]:
    """One gate call under the null: (any REGRESSED, exception text or None, seeds trained)."""
    from pytest_graphnetz import BenchmarkReport, assert_not_worse
    from pytest_graphnetz.gates.comparing.adaptive import run_adaptive

    models = [f"m{i}" for i in range(m)]
    if law == "normal":
        base = 0.8 + 0.02 * rng.standard_normal((m, hi))
        cand = base + 0.01 * rng.standard_normal((m, hi))
    else:
        base = rng.choice(karate, size=(m, hi))
        cand = rng.choice(karate, size=(m, hi))
    runner = ScriptedRunner({name: cand[i] for i, name in enumerate(models)})
    baseline = BenchmarkReport.from_arrays([base], tasks=["toy"], models=models,
                                           seeds=list(range(hi)), metric="accuracy")
    try:
        report = run_adaptive({"toy": lambda root: None}, dict.fromkeys(models, object),
                              seeds=range(hi), min_seeds=lo, runner=runner)
    except ValueError as exc:   # a design refused up front
        return False, f"refused: {exc}", 0
    try:
        verdicts = assert_not_worse(report, baseline, alpha=ALPHA)
    except AssertionError as exc:
        regressed = "REGRESSED" in str(exc)
        return regressed, None if regressed else f"AssertionError: {exc}", 0
    except Exception as exc:  # noqa: BLE001 - counted: the figure must be zero
        return False, f"{type(exc).__name__}: {exc}", 0
    return any(v.verdict == "REGRESSED" for v in verdicts), None, sum(
        v.stop.trained for v in verdicts)


def wilson(k: int, n: int) -> tuple[float, float]:
    from pytest_graphnetz.stats.heldout import wilson_interval

    ci = wilson_interval(k, n)
    return ci.low, ci.high


def row(law: str, m: int, lo: int, hi: int, trials: int, seed: int,
        karate: np.ndarray) -> list[str]:
    rng = np.random.default_rng(seed)
    hits, errors, refused = 0, [], None
    for _ in range(trials):
        hit, error, _ = trial(law, m, lo, hi, rng, karate)
        if error and error.startswith("refused"):
            refused = error
            break
        hits += hit
        if error:
            errors.append(error)
    if refused:
        return [law, f"{lo}..{hi}", str(m), "refused", "", "", refused[9:120]]
    low, high = wilson(hits, trials)
    holds = "yes" if low <= ALPHA else "NO"
    return [law, f"{lo}..{hi}", str(m), str(trials), f"{100 * hits / trials:.2f}%",
            f"[{100 * low:.2f}, {100 * high:.2f}]", f"{len(errors)} exceptions; ≤ α: {holds}"
            + (f" (first: {errors[0][:80]})" if errors else "")]


def table(rows: Sequence[Sequence[str]]) -> str:
    head = ["law", "MIN..MAX", "cells m", "trials", "false REGRESSED (any cell)",
            "95% Wilson", "notes"]
    lines = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    lines += ["| " + " | ".join(r) + " |" for r in rows]
    return "\n".join(lines)


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="200 trials per row, print only")
    parser.add_argument("--trials", type=int, default=None,
                        help="trials per normal row (default 2000; --quick 200)")
    parser.add_argument("--karate-trials", type=int, default=None,
                        help="trials per karate row (default 1000; --quick 200)")
    parser.add_argument("--rows", default="",
                        help="comma-separated row indices to run (default: all 12)")
    parser.add_argument("--out", type=Path, default=None,
                        help=f"write the section into this file (the full run: {RESULTS})")
    parser.add_argument("--seed-shift", type=int, default=0,
                        help="added to each row's seed: more trials of a row in another process")
    parser.add_argument("--with-advice", action="store_true",
                        help="keep the INCONCLUSIVE rows' advice (slow; never a verdict)")
    args = parser.parse_args(argv)
    if not args.with_advice:
        import pytest_graphnetz.stats.lookahead as lookahead

        lookahead.advise_next_look = lambda *a, **k: None
    trials = args.trials or (200 if args.quick else 2000)
    k_trials = args.karate_trials or (200 if args.quick else 1000)
    karate = np.asarray(json.loads(POOL.read_text())["karate"]["values"]["baseline"]["final"])
    start = time.perf_counter()
    specs = [("normal", m, 5, 20, trials, 100 + m) for m in (1, 3, 10)]
    specs += [("karate", m, 5, 20, k_trials, 200 + m) for m in (1, 3, 10)]
    grid = [(2, 16), (3, 12), (3, 24), (5, 10), (5, 40), (10, 20)]
    specs += [("karate", 1, lo, hi, k_trials, 300 + lo * 100 + hi) for lo, hi in grid]
    if args.rows:
        specs = [specs[int(i)] for i in args.rows.split(",")]
    rows = []
    for law, m, lo, hi, n, seed in specs:
        rows.append(row(law, m, lo, hi, n, seed + 1000 * args.seed_shift, karate))
        print("| " + " | ".join(rows[-1]) + " |", flush=True)   # each row as it is measured
    text = (f"{MARK}\n\n`python benchmarks/adaptive_fwer.py` (α = {ALPHA}, margin 0, every "
            f"true Δ = 0; trials per row as listed, "
            f"{time.perf_counter() - start:.0f} s on a shared 2-core machine; advice "
            f"{'kept' if args.with_advice else 'stubbed'}). Each "
            "trial is one `assert_not_worse` call on an adaptive report built by `run_adaptive` "
            "with a scripted runner: the real pairing, looks, group-sequential Holm and "
            "verdicts, no training.\n\n" + table(rows) + "\n")
    print(text)
    if args.out is not None:
        old = args.out.read_text() if args.out.exists() else ""
        head = old.split(MARK)[0].rstrip()
        args.out.write_text((head + "\n\n" if head else "") + text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
