"""Does the ratchet stop slow drift? Chains of refreshes that each lose a little, simulated.

Each chain starts from a baseline of ``--seeds`` seeds and then refreshes it ``--steps`` times;
every refresh is a model whose true accuracy is ``--step`` lower than the last one's. Per-seed
numbers are ``mean + seed effect + noise`` (the seed effect is shared by every model, as the
paired design assumes). Two rules decide whether a refresh is written:

- ``previous only``: the rule before anchors (refuse only a cell REGRESSED against the
  baseline being replaced);
- ``ratchet``: :func:`gates.refreshing.ratchet.refresh` itself, on real baseline files, with
  the gates' not-worse comparison (refuse REGRESSED, or INCONCLUSIVE with a negative mean Δ,
  against the replaced baseline or the anchor).

Printed per rule: how far the committed baseline's true accuracy fell below the first one
(mean and the largest over chains) and the share of chains in which it fell more than the
margin. Run: ``python benchmarks/ratchet_drift.py`` (about a minute).
"""

from __future__ import annotations

import argparse
import tempfile
from pathlib import Path

import numpy as np

from pytest_graphnetz import BenchmarkReport
from pytest_graphnetz.gates import compare_reports
from pytest_graphnetz.gates.refreshing.baselines import BaselineHandle
from pytest_graphnetz.gates.refreshing.ratchet import refresh


def cell(values: np.ndarray, seeds: range) -> BenchmarkReport:
    return BenchmarkReport.from_arrays(values.reshape(1, 1, -1), tasks=["task"],
                                       models=["model"], seeds=seeds, metric="accuracy")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--chains", type=int, default=100)
    parser.add_argument("--steps", type=int, default=12)
    parser.add_argument("--step", type=float, default=0.003, help="true loss per refresh")
    parser.add_argument("--seeds", type=int, default=10)
    parser.add_argument("--seed-sd", type=float, default=0.02, help="seed-to-seed spread")
    parser.add_argument("--noise-sd", type=float, default=0.004, help="per-run noise")
    parser.add_argument("--margin", type=float, default=0.01)
    args = parser.parse_args()
    seeds = range(args.seeds)
    rng = np.random.default_rng(2026)

    def judge(candidate, reference, source):
        return compare_reports(candidate, reference, gate="not_worse", margin=args.margin,
                               source=source)

    falls: dict[str, list[float]] = {"previous only": [], "ratchet": []}
    with tempfile.TemporaryDirectory() as tmp:
        for chain in range(args.chains):
            seed_effect = rng.normal(0.0, args.seed_sd, args.seeds)

            def run(mean: float, seed_effect: np.ndarray = seed_effect) -> np.ndarray:
                return 0.8 + mean + seed_effect + rng.normal(0.0, args.noise_sd, args.seeds)

            first = run(0.0)
            handle = BaselineHandle(Path(tmp) / f"chain{chain}.json", update=True)
            refresh(handle, cell(first, seeds), judge)
            committed = {"previous only": (0.0, first), "ratchet": 0.0}
            for k in range(1, args.steps + 1):
                values = run(-args.step * k)
                # the old rule, on the numbers it would have kept
                true_old, old_values = committed["previous only"]
                verdict = judge(cell(values, seeds), cell(old_values, seeds), "old")[0]
                if verdict.verdict != "REGRESSED":
                    committed["previous only"] = (-args.step * k, values)
                # the ratchet, on real files
                try:
                    written = refresh(handle, cell(values, seeds), judge).written
                except AssertionError:
                    written = False
                if written:
                    committed["ratchet"] = -args.step * k
            falls["previous only"].append(-committed["previous only"][0])
            falls["ratchet"].append(-committed["ratchet"])

    print(f"{args.chains} chains × {args.steps} refreshes, each {args.step} worse in truth; "
          f"{args.seeds} seeds, seed sd {args.seed_sd}, noise sd {args.noise_sd}, "
          f"margin {args.margin}, alpha 0.05")
    print(f"{'rule':<15} {'mean true fall':>15} {'largest':>8} {'P(fall > margin)':>17}")
    for rule, values in falls.items():
        arr = np.array(values)
        print(f"{rule:<15} {arr.mean():>15.4f} {arr.max():>8.4f} "
              f"{np.mean(arr > args.margin + 1e-12):>17.2f}")


if __name__ == "__main__":
    main()
