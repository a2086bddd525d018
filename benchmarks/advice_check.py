"""Does the advice match what cells do? An INCONCLUSIVE row's Note names the next look (what
the CI loop, ``graphnetz next-seeds``, runs next) and the seeds the cell is expected to need
before it decides (``plan_next_look``, called as ``GateCell._plan`` calls it). This measures
that expected need against the seeds cells at the true sd actually use, walking the schedule
look by look; it must be within 1.3x. For comparison it also prints the look the older advice
named (``advise_next_look``: the look by which the cell decides with probability 0.8), which
the CI loop never waited for.

Cells are simulated at the true paired sd (0.8, 2 and 4 points; δ = 1 point, margin 0, α 0.05),
normal differences, ``--cells`` per (sd, target), from a fixed generator, under no change (true
mean 0) and a drop of δ (true mean −δ). Each cell takes the first look (and, second table, the
second: ``run_schedule`` on its first 10 or 20 seeds, the gate's decision kernel); the
INCONCLUSIVE ones get the advice from their own observed sd on those seeds, and the same
simulated cell walks the schedule 10→20→40→… up to 1280 seeds (``run_schedule``; a cell still
open at 1280 counts 1280, as the planner counts it). With Holm (m = 3): the cell is one of 3 in
its call and the other two are innocent and never rejected, so REGRESSED is tested at α/3, in
the simulation and in the advice (``regressed_alpha = α/m``, as the gate passes it).

The expected need depends on the observed sd only through sd/δ and is smooth in it, so it is
computed on a grid of sds and interpolated (log-log), and checked against direct calls on
``--check`` random cells (the largest relative difference is printed), and against the real
gate's ``seeds_expected`` (``compare_reports`` on ``from_arrays`` reports) on a few cells.

    nice -n 10 python benchmarks/advice_check.py --out benchmarks/advice_check_results.md
"""

from __future__ import annotations

import argparse
import hashlib
import math
import sys
import time
from pathlib import Path

import numpy as np

from pytest_graphnetz.stats.boundaries import design
from pytest_graphnetz.stats.decisions import Verdict
from pytest_graphnetz.stats.lookahead import (
    ADVICE_MAX_SEEDS,
    PlanSpec,
    advise_next_look,
    plan_next_look,
)
from pytest_graphnetz.stats.sequential import run_schedule

DELTA = 0.01       # metric units (1 point), as the gate sees accuracy
ALPHA = 0.05
FIRST = 10
SDS = (0.8, 2.0, 4.0)   # points
FAMILIES = (1, 3)       # cells in the call: REGRESSED at α/m
PASS = {Verdict.NOT_WORSE, Verdict.BETTER, Verdict.IDENTICAL}
GRID = np.geomspace(0.001, 0.12, 48)   # observed sds (metric units) the advice is computed at
RATIO_LIMIT = 1.3


def plan(sd: float, taken: int, m: int) -> tuple[float, float]:
    """(expected need, old power look) for an INCONCLUSIVE cell of observed paired sd ``sd``
    on ``taken`` seeds in a call of ``m`` cells; NaN where there is no affordable look."""
    spec = PlanSpec(DELTA, FIRST, alpha=ALPHA, margin=0.0, regressed_alpha=ALPHA / m,
                    power=0.8)
    p = plan_next_look(float(sd), taken, spec, taken=taken)
    old = advise_next_look(float(sd), taken, spec, taken=taken)
    return (math.nan if p.expected is None else float(p.expected),
            math.nan if old is None else float(old))


class Interpolated:
    """The advice at any observed sd, interpolated on :data:`GRID` (log-log; NaN outside the
    affordable range)."""

    def __init__(self, taken: int, m: int) -> None:
        self.taken, self.m = taken, m
        values = np.array([plan(s, taken, m) for s in GRID])
        self.expected, self.old = values[:, 0], values[:, 1]

    def __call__(self, sds: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        x = np.log(sds)
        out = []
        for y in (self.expected, self.old):
            ok = np.isfinite(y)
            val = np.exp(np.interp(x, np.log(GRID[ok]), np.log(y[ok])))
            hi = GRID[ok].max()
            val[sds > hi] = math.nan   # past the last affordable grid point: no advice
            out.append(val)
        return out[0], out[1]


def measure(sd_points: float, taken: int, m: int, cells: int, advice: Interpolated,
            seed: int) -> dict:
    """INCONCLUSIVE cells at ``taken`` seeds under both targets, pooled: the seeds each uses
    walking the schedule, the expected need and the old power look shown to it, and how many
    decided right (no change: NOT WORSE/BETTER; drop: REGRESSED)."""
    sd = sd_points / 100
    used, expected, old, right, sds = [], [], [], [], []
    full = design(FIRST, ADVICE_MAX_SEEDS, alpha=ALPHA)
    for target, mean in ((0, 0.0), (1, -DELTA)):
        rng = np.random.default_rng([seed, int(sd_points * 10), target, taken, m])
        head = mean + sd * rng.standard_normal((cells, taken))
        verdict, _ = run_schedule(head, design(FIRST, taken, alpha=ALPHA), min_effect=DELTA,
                                  regressed_alpha=ALPHA / m)
        open_ = np.flatnonzero([x is Verdict.INCONCLUSIVE for x in verdict])
        if open_.size == 0:
            continue
        tail = mean + sd * rng.standard_normal((open_.size, ADVICE_MAX_SEEDS - taken))
        D = np.concatenate([head[open_], tail], axis=1)
        v, n = run_schedule(D, full, min_effect=DELTA, regressed_alpha=ALPHA / m)
        s = head[open_].std(axis=1, ddof=1)
        e, o = advice(s)
        used.append(n)
        expected.append(e)
        old.append(o)
        sds.append(s)
        right.append([x in PASS if target == 0 else x is Verdict.REGRESSED for x in v])
    if not used:
        return {"cells": 0}
    used_a, exp_a, old_a = (np.concatenate(x) for x in (used, expected, old))
    advised = np.isfinite(exp_a)
    return {"cells": used_a.size, "no_advice": int((~advised).sum()),
            "used": float(used_a[advised].mean()), "median": float(np.median(used_a[advised])),
            "expected": float(exp_a[advised].mean()), "old": float(np.nanmean(old_a)),
            "right": float(np.concatenate(right).mean()), "sds": np.concatenate(sds)}


def gate_check(taken: int, m: int, sds: np.ndarray, k: int, seed: int) -> str:
    """The real gate's seeds_expected on ``k`` cells built to have the observed sds."""
    from pytest_graphnetz import BenchmarkReport
    from pytest_graphnetz.gates import compare_reports

    rng = np.random.default_rng(seed)
    agree = tried = 0
    for i in rng.choice(sds.size, size=min(k, sds.size), replace=False):
        z = rng.standard_normal((m, taken))
        z = (z - z.mean(axis=1, keepdims=True)) / z.std(axis=1, ddof=1, keepdims=True)
        d = sds[i] * z            # mean 0: INCONCLUSIVE at every look for these sds
        base = 0.8 + 0.01 * rng.standard_normal((m, taken))
        rep = [BenchmarkReport.from_arrays(v[None], tasks=["t"],
                                           models=[f"m{j}" for j in range(m)],
                                           seeds=list(range(taken)), metric="accuracy")
               for v in (base + d, base)]
        v = compare_reports(rep[0], rep[1], min_effect=DELTA, first_look=FIRST)[0]
        if v.verdict != "INCONCLUSIVE":
            continue
        tried += 1
        spec = PlanSpec(DELTA, FIRST, alpha=ALPHA, margin=0.0, regressed_alpha=ALPHA / m,
                        power=0.8)
        p = plan_next_look(float(np.std(d[0], ddof=1)), taken, spec, taken=taken)
        agree += (v.comparison.plan.needed, v.comparison.plan.expected) == (
            p.next_look, p.expected)
    return f"{agree} of {tried}"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--cells", type=int, default=4000, help="cells per (sd, target)")
    parser.add_argument("--check", type=int, default=12, help="direct advice calls checked")
    parser.add_argument("--gate", type=int, default=3, help="cells checked through the gate")
    parser.add_argument("--seed", type=int, default=42)
    parser.add_argument("--out", type=Path, default=None)
    args = parser.parse_args()
    t0 = time.perf_counter()
    lines = ["# Advice given INCONCLUSIVE: expected need against the seeds cells use", "",
             f"Produced by `nice -n 10 python benchmarks/advice_check.py {' '.join(sys.argv[1:])}`."
             f" {args.cells} simulated cells per (sd, target), normal paired differences, δ = 1 "
             f"point, margin 0, α = {ALPHA}, schedule 10→20→40→… up to {ADVICE_MAX_SEEDS}, seed "
             f"{args.seed}. Rows pool the INCONCLUSIVE cells of both targets (no change, drop "
             "of δ). *used*: the mean seeds a cell walking the schedule look by look uses before "
             "it decides (median beside it); *expected*: the mean of the expected need its Note "
             "shows (`plan_next_look`); *power look*: the mean of the look the older advice "
             "named (decided by then with probability 0.8); *right*: the share that decided "
             "right (no change NOT WORSE/BETTER, drop REGRESSED).", ""]
    worst = 0.0
    for taken in (FIRST, 2 * FIRST):
        look = int(math.log2(taken // FIRST)) + 1
        lines += [f"## Given INCONCLUSIVE at {taken} seeds (look {look}); next look "
                  f"{2 * taken}", "",
                  "| paired sd (points) | cells in the call (REGRESSED at) | INCONCLUSIVE cells "
                  "| used (median) | expected | expected / used | power look | right | "
                  "no advice |", "|---|---|---|---|---|---|---|---|---|"]
        notes: list[str] = []
        for m in FAMILIES:
            advice = Interpolated(taken, m)
            checked, dev = 0, 0.0
            gate_line = (f"m = {m}: too few INCONCLUSIVE cells at sd {SDS[1]:g} to check "
                         "the real gate (raise --cells).")
            for sd in SDS:
                r = measure(sd, taken, m, args.cells, advice, args.seed)
                level = f"{m} (α/{m})" if m > 1 else "1 (α)"
                if r["cells"] < 30:
                    lines.append(f"| {sd:g} | {level} | {r['cells']} | too few to measure | "
                                 "| | | | |")
                    continue
                ratio = r["expected"] / r["used"]
                worst = max(worst, ratio, 1 / ratio)
                lines.append(f"| {sd:g} | {level} | {r['cells']} | {r['used']:.1f} "
                             f"({r['median']:.0f}) | {r['expected']:.1f} | {ratio:.2f} | "
                             f"{r['old']:.1f} | {r['right']:.1%} | {r['no_advice']} |")
                rng = np.random.default_rng([args.seed, taken, m, int(sd * 10)])
                sds = r["sds"]
                for i in rng.choice(sds.size, size=min(args.check // len(SDS), sds.size),
                                    replace=False):
                    direct = plan(float(sds[i]), taken, m)[0]
                    interp = advice(sds[i:i + 1])[0][0]
                    if math.isfinite(direct) and math.isfinite(interp):
                        checked += 1
                        dev = max(dev, abs(interp / direct - 1))
                if args.gate and sd == SDS[1]:
                    agree = gate_check(taken, m, sds, args.gate, args.seed)
                    gate_line = (f"The real gate's (`seeds_needed`, `seeds_expected`) equals "
                                 f"`plan_next_look`'s (next look, expected) on {agree} "
                                 f"INCONCLUSIVE cells at m = {m}.")
                print(f"taken {taken}, m {m}, sd {sd:g} done ({time.perf_counter() - t0:.0f} s)",
                      flush=True)
            notes.append(f"m = {m}: the interpolated advice against direct calls on {checked} "
                         f"random INCONCLUSIVE cells: largest relative difference {dev:.1%}.")
            if args.gate:
                notes.append(gate_line)
        lines += ["", *notes, ""]
    verdict = ("nothing measured: raise --cells" if worst == 0.0
               else "holds" if worst <= RATIO_LIMIT else "FAILS")
    lines += [f"Largest ratio either way between expected and used: {worst:.2f} (limit "
              f"{RATIO_LIMIT}: {verdict}).", ""]
    body = "\n".join(lines)
    digest = hashlib.sha256(body.encode()).hexdigest()[:16]
    body += f"\nTables' SHA-256 (first 16): {digest}; {time.perf_counter() - t0:.0f} s here.\n"
    print(body)
    if args.out:
        args.out.write_text(body, encoding="utf-8")


if __name__ == "__main__":
    main()
