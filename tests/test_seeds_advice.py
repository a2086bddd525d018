"""Issue 21, item 5: an INCONCLUSIVE cell's plan is computed for the design it recommends
(adaptive seeds: the sequential boundaries of MIN..MAX, not a fixed t test at MAX), and a k-fold
cell that no seed count can resolve says so and what would. Reports come from arrays and a
scripted runner: no training."""

from __future__ import annotations

import math

import numpy as np
import pytest

from pytest_graphnetz import BenchmarkReport
from pytest_graphnetz.adaptive import run_adaptive
from pytest_graphnetz.gates import compare_reports, compare_schedule
from pytest_graphnetz.stats import Verdict
from pytest_graphnetz.stats.planning import (
    fold_min_effect_floor,
    fold_seeds_for_min_effect,
    seeds_for_min_effect,
)
from pytest_graphnetz.stats.sequential import (
    run_schedule,
    sequential_design,
    sequential_seeds_for_min_effect,
)

PATHS = 40_000   # Monte-Carlo sd of a chance near 0.8: 0.002


def _delivered(sd, delta, design, margin=0.0, seed=12_345):
    """P(no change reads NOT WORSE/BETTER), P(a drop of δ reads REGRESSED) under ``design``,
    simulated here from a fixed rng the planner does not use."""
    Z = np.random.default_rng(seed).normal(0.0, sd, size=(PATHS, design.max_seeds))
    null, _ = run_schedule(Z, design, margin=margin, min_effect=delta)
    drop, _ = run_schedule(Z - delta, design, margin=margin, min_effect=delta)
    return (float(np.isin(null, [Verdict.NOT_WORSE, Verdict.BETTER]).mean()),
            float(np.mean(drop == Verdict.REGRESSED)))


@pytest.mark.parametrize("sd, delta, margin, lo", [
    (0.0195, 0.01, 0.0, 5),   # issue 21: fixed plan 34, and 5..34 delivered 0.61 / 0.61
    (0.01, 0.02, 0.01, 5),
    (0.03, 0.02, 0.0, 3),
])
def test_the_adaptive_plan_delivers_the_power_under_the_design_it_recommends(sd, delta, margin,
                                                                            lo):
    fixed = seeds_for_min_effect(sd, delta, margin=margin)
    hi = sequential_seeds_for_min_effect(sd, delta, min_seeds=lo, start=fixed, margin=margin)
    tol = 3 * math.sqrt(0.8 * 0.2 / PATHS)   # Monte-Carlo error of this check, not a slack
    assert min(_delivered(sd, delta, sequential_design(lo, hi), margin)) >= 0.8 - tol
    # the smallest such MAX: one seed fewer falls short on a target
    assert min(_delivered(sd, delta, sequential_design(lo, hi - 1), margin)) < 0.8 + tol
    # and the fixed-n plan run as lo..fixed falls short (the bug the plan fixes)
    assert min(_delivered(sd, delta, sequential_design(lo, fixed), margin)) < 0.8 - tol


class Scripted:
    def __init__(self, values) -> None:
        self.values = values

    def __call__(self, tasks, models, *, seeds, **kwargs):
        seeds = list(seeds)
        X = [[[self.values[m][s] for s in seeds] for m in models] for _ in tasks]
        return BenchmarkReport.from_arrays(X, tasks=list(tasks), models=list(models),
                                           seeds=seeds, metric="accuracy")


def test_an_adaptive_inconclusive_cell_recommends_the_max_its_design_needs():
    rng = np.random.default_rng(3)
    hi = 20
    d = rng.normal(0.0, 0.02, hi)
    d -= d.mean()   # no change: INCONCLUSIVE at 20 seeds for δ = 0.01 at this spread
    cand = {"GCN": {s: 0.8 + float(d[s]) for s in range(hi)}}
    report = run_adaptive({"toy": lambda root: None}, dict.fromkeys(cand, object),
                          seeds=range(hi), min_seeds=5, runner=Scripted(cand))
    base_report = BenchmarkReport.from_arrays([[[0.8] * hi]], tasks=["toy"], models=["GCN"],
                                              seeds=range(hi), metric="accuracy")
    (v,) = compare_schedule(report, base_report)
    assert v.verdict == "INCONCLUSIVE"
    c = v.comparison
    fixed = seeds_for_min_effect(c.sd_diff, 0.01)
    planned = sequential_seeds_for_min_effect(c.sd_diff, 0.01, min_seeds=5, start=fixed)
    assert planned > fixed   # the sequential design needs more than the fixed test's plan
    assert c.seeds_needed == planned
    assert f"--graphnetz-seeds=5..{planned}" in v.message()


def _fold_reports(d, k):
    seeds = range(d.size)
    base = BenchmarkReport.from_arrays([[[0.8] * d.size]], tasks=["toy"], models=["GCN"],
                                       seeds=seeds, metric="accuracy")
    cand = BenchmarkReport.from_arrays([[list(0.8 + d)]], tasks=["toy"], models=["GCN"],
                                       seeds=seeds, metric="accuracy")
    for r in (base, cand):
        r.protocol = {"source": "from_arrays", "tasks": {"toy": {"config": {"folds": k}}}}
    return cand, base


def test_a_fold_cell_no_seed_count_can_resolve_says_so_and_what_would():
    k = 10
    d = np.random.default_rng(0).normal(0.0, 0.03, 10)
    d -= d.mean()
    cand, base = _fold_reports(d, k)
    (v,) = compare_reports(cand, base, min_effect=0.01)
    assert v.verdict == "INCONCLUSIVE"
    sd = float(d.std(ddof=1))
    # the corrected se's floor sqrt(1/(k-2))·sd puts δ = 0.01 out of reach of any seed count
    least = fold_min_effect_floor(sd, folds=k)
    assert least > 0.01
    assert fold_seeds_for_min_effect(sd, 0.01, folds=k) is None
    assert v.comparison.seeds_needed is None
    text = v.message()
    assert "no number of seeds would decide it" in text
    assert f"per-fold sd of Δ ({sd:.4g})" in text and f"{least:.4g}" in text
    assert "observed sd of Δ" not in text and "--graphnetz-seeds" not in text
    # the normal limit of the floor, by hand: (z_0.95 + z_0.8) · sqrt(1/8) · sd
    assert least == pytest.approx((1.6448536 + 0.8416212) * math.sqrt(1 / 8) * sd, rel=1e-6)


def test_a_resolvable_fold_cell_plans_at_the_per_fold_sd():
    k = 10
    d = np.random.default_rng(1).normal(0.0, 0.02, 4)
    d = (d - d.mean()) * 0.02 / d.std(ddof=1)   # sd 0.02 exactly: δ = 0.024 is 1.2 sd
    cand, base = _fold_reports(d, k)
    (v,) = compare_reports(cand, base, min_effect=0.024)
    if v.verdict != "INCONCLUSIVE":
        pytest.fail(f"expected INCONCLUSIVE, got {v.verdict}: {v.message()}")
    sd = float(d.std(ddof=1))
    n = fold_seeds_for_min_effect(sd, 0.024, folds=k)
    assert fold_min_effect_floor(sd, folds=k) < 0.024
    assert n is not None and v.comparison.seeds_needed == max(n, 5)
    assert f"per-fold sd of Δ ({sd:.4g}" in v.message()
    # the inflated sd the corrected test runs on is not printed as the sd of Δ
    assert f"{v.comparison.sd_diff:.4g}" not in v.message().split("minimum detectable")[1]
