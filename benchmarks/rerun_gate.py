"""Rerun-safe seeds through the real gate: wrong-verdict rates when a user reruns with more
seeds whenever a cell reads INCONCLUSIVE (up to 3 times: 10 → 20 → 40 → 80 seeds).

Each trial is one cell: paired differences drawn normal (sd ``--sd`` points, δ = 1 point,
margin 0) on top of a fixed baseline, built as ``BenchmarkReport.from_arrays`` reports and
judged by ``pytest_graphnetz.gates.compare_reports`` exactly as ``assert_not_worse`` judges
them, with a chain store (``gates.chain.ChainStore``) in a temporary directory, one test id per
trial. Rows: rerun-safe (the default) and single-run (``rerun_safe=False``, each run at α).

    python benchmarks/rerun_gate.py --quick      # 200 trials per row
    python benchmarks/rerun_gate.py              # 4,000 trials per row
    python benchmarks/rerun_gate.py --trials 2000 --mode safe &   # the results file's larger
    python benchmarks/rerun_gate.py --trials 2000 --mode single    # table, one core per mode

Wrong verdicts: REGRESSED and BETTER at true mean 0 (−margin and +margin coincide at margin
0), NOT WORSE or BETTER at −δ. Each must be ≤ α = 0.05 within Monte-Carlo error.
"""

from __future__ import annotations

import argparse
import math
import tempfile
from pathlib import Path

import numpy as np

from pytest_graphnetz import BenchmarkReport
from pytest_graphnetz.gates import compare_reports
from pytest_graphnetz.gates.chain import ChainStore

LOOKS = (10, 20, 40, 80)
DELTA = 0.01


def _report(values: np.ndarray) -> BenchmarkReport:
    return BenchmarkReport.from_arrays(values[None, None, :], tasks=["t"], models=["m"],
                                       seeds=list(range(values.size)), metric="accuracy")


def trial(diffs: np.ndarray, base: np.ndarray, store: ChainStore | None,
          rerun_safe: bool) -> str:
    """The verdict the last run gives under "rerun whenever INCONCLUSIVE, up to 3 times"."""
    baseline = _report(base)
    verdict = "INCONCLUSIVE"
    for n in LOOKS:
        (v,) = compare_reports(_report(base[:n] + diffs[:n]), baseline, min_effect=DELTA,
                               rerun_safe=rerun_safe, chains=store)
        verdict = v.verdict
        if verdict != "INCONCLUSIVE":
            break
    return verdict


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--quick", action="store_true")
    parser.add_argument("--sd", type=float, default=2.0, help="paired sd, in points")
    parser.add_argument("--seed", type=int, default=26)
    parser.add_argument("--trials", type=int, default=None,
                        help="trials per row (default 4,000; --quick: 200)")
    parser.add_argument("--mode", choices=("both", "safe", "single"), default="both",
                        help="one mode per process: run two in parallel on two cores")
    args = parser.parse_args()
    trials = args.trials or (200 if args.quick else 4000)
    sd = args.sd / 100
    rng = np.random.default_rng(args.seed)
    base = 0.8 + 0.01 * rng.standard_normal(LOOKS[-1])
    noise = rng.standard_normal((trials, LOOKS[-1])) * sd
    print(f"{trials} trials per row, paired sd {args.sd:g} points, δ 1 point, margin 0, "
          f"α 0.05, looks {LOOKS}")
    print("| mode | REGRESSED at 0 | BETTER at 0 | NOT WORSE/BETTER at −δ |")
    print("|---|---|---|---|")
    modes = {"both": (True, False), "safe": (True,), "single": (False,)}[args.mode]
    for rerun_safe in modes:
        with tempfile.TemporaryDirectory() as tmp:
            rates = []
            for mean, wrong in ((0.0, {"REGRESSED"}), (0.0, {"BETTER"}),
                                (-DELTA, {"NOT WORSE", "BETTER"})):
                hits = 0
                for i in range(trials):
                    store = (ChainStore(Path(tmp), test=f"{mean}-{sorted(wrong)}-{i}")
                             if rerun_safe else None)
                    hits += trial(mean + noise[i], base, store, rerun_safe) in wrong
                p = hits / trials
                rates.append(f"{p:.1%} ± {1.96 * math.sqrt(p * (1 - p) / trials):.1%}")
        mode = "rerun-safe (default)" if rerun_safe else "single run (rerun_safe=False)"
        print(f"| {mode} | " + " | ".join(rates) + " |")


if __name__ == "__main__":
    main()
