"""Does the advice hold where it is shown? Given a cell INCONCLUSIVE at the first look (10 seeds;
and, second table, at look 2, 20 seeds), the gate advises the schedule's look at which, given
INCONCLUSIVE so far, no change reads NOT WORSE/BETTER and a drop of δ reads REGRESSED, each with
probability 0.8 (``advise_next_look``, called as ``GateCell._plan`` calls it). This measures what
that advice delivers (issue 32).

Cells are simulated at the true paired sd (0.8, 2 and 4 points; δ = 1 point, margin 0, α 0.05,
one cell per call so REGRESSED's level is α), normal differences, ``--cells`` per (sd, target),
from a fixed generator. Each cell takes the first look (``run_schedule`` on its first 10 seeds,
the gate's decision kernel); the INCONCLUSIVE ones get the advice from their own observed sd on
those 10 seeds exactly as the gate computes it (``advise_next_look(sd, 10, δ, first=10,
taken=10, alpha=0.05, margin=0, regressed_alpha=0.05, power=0.8)``), and the same simulated cell
continues to the advised look L: ``run_schedule`` walks looks 10, 20, ..., L on its prefixes
(the cell was open at look 1, so its verdict is that of looks 2..L). Delivered: no change
(true mean 0) reads NOT WORSE/BETTER by L; a drop of δ (true mean −δ) reads REGRESSED by L.
Target ≥ 0.8 for each.

The advice costs about a second of simulation per call here, and depends on the observed sd
only through sd/δ (margin 0: every statistic scales), stepping up at thresholds; so it is
computed at every cell through those thresholds, found by bisection on the real function
(each bracket narrowed to 1e-3 relative; cells inside a bracket are called directly), and
checked against direct calls on ``--check`` random cells (mismatches printed, must be 0), and
against the real gate's ``seeds_needed`` (``compare_reports`` on ``from_arrays`` reports) on a
few cells.

    nice -n 10 python benchmarks/advice_check.py --out benchmarks/advice_check_results.md
"""

from __future__ import annotations

import argparse
import hashlib
import math
import time
from pathlib import Path

import numpy as np

from pytest_graphnetz.stats.boundaries import design, schedule
from pytest_graphnetz.stats.decisions import Verdict
from pytest_graphnetz.stats.sequential import ADVICE_MAX_SEEDS, advise_next_look, run_schedule

DELTA = 0.01       # metric units (1 point), as the gate sees accuracy
ALPHA = 0.05
FIRST = 10
SDS = (0.8, 2.0, 4.0)   # points
PASS = {Verdict.NOT_WORSE, Verdict.BETTER, Verdict.IDENTICAL}


def advice(sd: float, taken: int) -> int | None:
    """The gate's advice for an INCONCLUSIVE cell of observed paired sd ``sd`` on ``taken``
    seeds (``GateCell._plan`` with one cell: REGRESSED's level is α)."""
    return advise_next_look(float(sd), taken, DELTA, first=FIRST, taken=taken, alpha=ALPHA,
                            margin=0.0, regressed_alpha=ALPHA, power=0.8)


PIVOT = 0.01   # an observed sd (1 point) with advice: None below it is the low end's


class Steps:
    """``advice(sd, taken)`` through its thresholds. Its steps, as measured: None for a small
    observed sd (an INCONCLUSIVE look there is too rare for the conditional simulation), then
    the looks in increasing order, then None again past the largest look; for each step the sd
    up to which the advice is at most that step, bracketed by bisection on the real function.
    Direct calls on random cells check the order holds (``main``)."""

    def __init__(self, taken: int, lo: float, hi: float) -> None:
        self.taken = taken
        self.looks = [n for n in schedule(FIRST, ADVICE_MAX_SEEDS) if n > taken]
        self.calls = 0
        self.brackets: list[tuple[float, float]] = []
        start = lo
        a_lo, a_hi = self._key(lo), self._key(hi)
        for k in range(-1, len(self.looks)):
            # bracket (x, y): key(x) <= k < key(y); a later step's threshold is above
            x, y = start, hi
            if a_lo > k:
                self.brackets.append((0.0, lo))
                continue
            if a_hi <= k:
                self.brackets.append((hi, math.inf))
                continue
            while y / x - 1 > 1e-3:
                mid = math.sqrt(x * y)
                if self._key(mid) <= k:
                    x = mid
                else:
                    y = mid
            self.brackets.append((x, y))
            start = x

    def _key(self, sd: float) -> int:
        """-1: no advice (low end), k: the k-th look past ``taken``, len(looks): none (high)."""
        self.calls += 1
        a = advice(sd, self.taken)
        if a is None:
            return -1 if sd < PIVOT else len(self.looks)
        return self.looks.index(a)

    def __call__(self, sd: float) -> int | None:
        for k, (x, y) in enumerate(self.brackets):
            if sd <= x:
                return None if k == 0 else self.looks[k - 1]
            if sd < y:           # inside the bracket: the real function
                self.calls += 1
                return advice(sd, self.taken)
        return None


def measure(sd_points: float, taken: int, cells: int, steps: Steps, seed: int,
            ) -> tuple[dict, dict]:
    """Per target (0: no change, 1: drop of δ): INCONCLUSIVE cells, delivered rate, advice."""
    sd = sd_points / 100
    out = {}
    advised_all = {}
    for target, mean in ((0, 0.0), (1, -DELTA)):
        rng = np.random.default_rng([seed, int(sd_points * 10), target, taken])
        head = mean + sd * rng.standard_normal((cells, taken))
        verdict, _ = run_schedule(head, design(FIRST, taken), min_effect=DELTA)
        open_ = np.flatnonzero([x is Verdict.INCONCLUSIVE for x in verdict])
        sds = head[open_].std(axis=1, ddof=1)
        advised = np.array([steps(s) or 0 for s in sds])
        ok = np.zeros(open_.size, dtype=bool)
        used = np.zeros(open_.size)
        for L in np.unique(advised):
            rows = np.flatnonzero(advised == L)
            if L == 0:    # no advice (no look up to the largest): counted as not delivered
                continue
            tail = mean + sd * rng.standard_normal((rows.size, int(L) - taken))
            D = np.concatenate([head[open_[rows]], tail], axis=1)
            v, n = run_schedule(D, design(FIRST, int(L)), min_effect=DELTA)
            ok[rows] = [x in PASS if target == 0 else x is Verdict.REGRESSED for x in v]
            used[rows] = n
        out[target] = (open_.size, int(ok.sum()), float(np.mean(advised[advised > 0]))
                       if (advised > 0).any() else math.nan, int((advised == 0).sum()),
                       float(used[advised > 0].mean()) if (advised > 0).any() else math.nan)
        advised_all[target] = (sds, advised)
    return out, advised_all


def wilson(k: int, n: int, z: float = 1.959964) -> tuple[float, float]:
    if n == 0:
        return math.nan, math.nan
    p = k / n
    c = (p + z * z / (2 * n)) / (1 + z * z / n)
    h = z * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n)) / (1 + z * z / n)
    return c - h, c + h


def gate_check(taken: int, sds: np.ndarray, advised: np.ndarray, k: int, seed: int) -> str:
    """The real gate's seeds_needed on ``k`` cells built to have the observed sds."""
    from pytest_graphnetz import BenchmarkReport
    from pytest_graphnetz.gates import compare_reports

    rng = np.random.default_rng(seed)
    agree = 0
    tried = 0
    for i in rng.choice(sds.size, size=min(k, sds.size), replace=False):
        z = rng.standard_normal(taken)
        z = (z - z.mean()) / z.std(ddof=1)
        d = sds[i] * z                 # mean 0: INCONCLUSIVE at every look for these sds
        base = 0.8 + 0.01 * rng.standard_normal(taken)
        rep = [BenchmarkReport.from_arrays(v[None, None, :], tasks=["t"], models=["m"],
                                           seeds=list(range(taken)), metric="accuracy")
               for v in (base + d, base)]
        (v,) = compare_reports(rep[0], rep[1], min_effect=DELTA, first_look=FIRST)
        if v.verdict != "INCONCLUSIVE":
            continue
        tried += 1
        agree += v.comparison.seeds_needed == advice(float(np.std(d, ddof=1)), taken)
    return f"{agree} of {tried}"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--cells", type=int, default=6000, help="cells per (sd, target)")
    parser.add_argument("--check", type=int, default=12, help="direct advice calls checked")
    parser.add_argument("--gate", type=int, default=4, help="cells checked through the gate")
    parser.add_argument("--seed", type=int, default=32)
    parser.add_argument("--out", type=Path, default=None)
    args = parser.parse_args()
    t0 = time.perf_counter()
    lines = ["# Advice given INCONCLUSIVE: what the advised look delivers", "",
             f"{args.cells} simulated cells per (sd, target), normal paired differences, δ = 1 "
             f"point, margin 0, α = {ALPHA}, one cell per call, schedule 10→20→40→…, power "
             f"target 0.8, seed {args.seed}; 95% Wilson intervals.", ""]
    for taken in (FIRST, 2 * FIRST):
        steps = Steps(taken, 0.001, 0.2)
        look = int(math.log2(taken // FIRST)) + 1
        lines += [f"## Given INCONCLUSIVE at {taken} seeds (look {look})", "",
                  "| paired sd (points) | target | INCONCLUSIVE cells | delivered [95%] | "
                  "mean advised look | no advice | mean seeds used |",
                  "|---|---|---|---|---|---|---|"]
        mismatches, checked = 0, 0
        for sd in SDS:
            res, adv = measure(sd, taken, args.cells, steps, args.seed)
            for target, name in ((0, "no change → NOT WORSE/BETTER"), (1, "drop δ → REGRESSED")):
                n, k, mean_l, none, used = res[target]
                lo, hi = wilson(k, n)
                share = k / n if n else math.nan
                lines.append(f"| {sd:g} | {name} | {n} | {share:.1%} [{lo:.1%}, {hi:.1%}] | "
                             f"{mean_l:.1f} | {none} | {used:.1f} |")
            sds, advised = adv[0]
            rng = np.random.default_rng([args.seed, taken, int(sd * 10)])
            for i in rng.choice(sds.size, size=min(args.check // len(SDS), sds.size),
                                replace=False):
                checked += 1
                mismatches += (advice(float(sds[i]), taken) or 0) != advised[i]
            print(f"taken {taken}, sd {sd:g} done ({time.perf_counter() - t0:.0f} s)",
                  flush=True)
        thresholds = ", ".join(f"≤ {x * 100:.4g} pt → {L}" for L, (x, _) in
                               zip(["none", *steps.looks], steps.brackets, strict=True)
                               if 0 < x < math.inf)
        lines += ["", f"Advice thresholds (observed sd on {taken} seeds → advised look): "
                  f"{thresholds}. Threshold advice against direct `advise_next_look` calls on "
                  f"{checked} random INCONCLUSIVE cells: {mismatches} mismatches.", ""]
        if args.gate:
            agree = gate_check(taken, *adv[0], args.gate, args.seed)
            lines += [f"The real gate's `seeds_needed` (`compare_reports`, first look 10) "
                      f"equals `advise_next_look` on {agree} INCONCLUSIVE cells.", ""]
    body = "\n".join(lines)
    digest = hashlib.sha256(body.encode()).hexdigest()[:16]
    body += f"\nTables' SHA-256 (first 16): {digest}; {time.perf_counter() - t0:.0f} s here.\n"
    print(body)
    if args.out:
        args.out.write_text(body, encoding="utf-8")


if __name__ == "__main__":
    main()
