"""An INCONCLUSIVE cell's advice is the next look of the schedule it walks, planned for that
design given that the cell is still open (stats.lookahead.advise_next_look), in fixed and
adaptive runs alike; a k-fold cell that no seed count can resolve says so and what would.
Reports come from arrays and a scripted runner: no training."""

from __future__ import annotations

import math

import numpy as np
import pytest

from pytest_graphnetz import BenchmarkReport
from pytest_graphnetz.gates import compare_reports
from pytest_graphnetz.gates.comparing.adaptive import run_adaptive
from pytest_graphnetz.gates.comparing.compare import compare_schedule
from pytest_graphnetz.stats import Verdict
from pytest_graphnetz.stats.boundaries import design
from pytest_graphnetz.stats.lookahead import PlanSpec, advise_next_look, plan_next_look
from pytest_graphnetz.stats.planning import fold_min_effect_floor, fold_seeds_for_min_effect
from pytest_graphnetz.stats.sequential import run_schedule

PATHS = 20_000


@pytest.mark.parametrize("sd", [0.008, 0.02, 0.04])
def test_the_advised_look_delivers_the_power_given_the_cell_was_open(sd):
    """With the sd known (a huge ``n_observed``), the advised look is the smallest later look
    of the schedule at which cells INCONCLUSIVE at 10 seeds, continued on the same raw normal
    differences (an rng the planner does not use, decided by run_schedule), read no change as
    NOT WORSE/BETTER and a drop of δ as REGRESSED with probability 0.8 each. (What the advice
    delivers from each cell's own observed sd: benchmarks/advice_check.py.)"""
    n = advise_next_look(sd, 10**9, PlanSpec(0.01, first=10), taken=10)
    assert n is not None and n > 10
    full = design(10, n)
    rng = np.random.default_rng(99)

    def delivered(upto: int) -> float:
        rates = []
        for shift, hits in ((0.0, (Verdict.NOT_WORSE, Verdict.BETTER)),
                            (-0.01, (Verdict.REGRESSED,))):
            Z = shift + sd * rng.standard_normal((PATHS, upto))
            verdict, used = run_schedule(Z, full.upto(upto), min_effect=0.01)
            open_ = used > 10   # INCONCLUSIVE at the first look
            rates.append(float(np.isin(verdict[open_], hits).mean()))
        return min(rates)

    tol = 3 * math.sqrt(0.8 * 0.2 / (PATHS * 0.3))   # Monte-Carlo error of this check
    assert delivered(n) >= 0.8 - tol
    if n > 20:   # the look before falls short: the advice is the smallest that delivers
        assert delivered(n // 2) < 0.8 + tol


class Scripted:
    def __init__(self, values) -> None:
        self.values = values

    def __call__(self, tasks, models, *, seeds, **kwargs):
        seeds = list(seeds)
        X = [[[self.values[m][s] for s in seeds] for m in models] for _ in tasks]
        return BenchmarkReport.from_arrays(X, tasks=list(tasks), models=list(models),
                                           seeds=seeds, metric="accuracy")


def test_an_inconclusive_cell_advises_the_same_next_look_fixed_or_adaptive():
    rng = np.random.default_rng(3)
    hi = 20
    d = rng.normal(0.0, 0.02, hi)
    d -= d.mean()   # no change: INCONCLUSIVE at 20 seeds for δ = 0.01 at this spread
    cand = {"GCN": {s: 0.8 + float(d[s]) for s in range(hi)}}
    report = run_adaptive({"toy": lambda root: None}, dict.fromkeys(cand, object),
                          seeds=range(hi), min_seeds=5, runner=Scripted(cand))
    base_report = BenchmarkReport.from_arrays([[[0.8] * hi]], tasks=["toy"], models=["GCN"],
                                              seeds=range(hi), metric="accuracy")
    (v,) = compare_schedule(report, report.schedule, base_report)
    assert v.verdict == "INCONCLUSIVE"
    c = v.comparison
    plan = plan_next_look(c.evidence.sd_diff, 20, PlanSpec(0.01, first=5), taken=20)
    planned = plan.next_look   # the look after 5→10→20, what the CI loop runs next
    assert planned == 40 and plan.expected is not None and plan.expected >= 40
    assert advise_next_look(c.evidence.sd_diff, 20, PlanSpec(0.01, first=5), taken=20) is not None
    assert (c.plan.needed, c.plan.expected) == (planned, plan.expected)
    assert f"--graphnetz-seeds=5..{planned}" in v.message()
    # the same cell in a run that holds its 20 seeds walks the same looks: the same advice
    fixed_cand = BenchmarkReport.from_arrays([[[cand["GCN"][s] for s in range(hi)]]],
                                             tasks=["toy"], models=["GCN"], seeds=range(hi),
                                             metric="accuracy")
    (f,) = compare_reports(fixed_cand, base_report, first_look=5)
    assert f.verdict == "INCONCLUSIVE" and f.comparison.plan.needed == planned
    assert f.comparison.plan.expected == plan.expected
    assert f"--graphnetz-seeds={planned}" in f.message()


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
    assert v.comparison.plan.needed is None
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
    assert n is not None and v.comparison.plan.needed == max(n, 5)
    assert f"per-fold sd of Δ ({sd:.4g}" in v.message()
    # the inflated sd the corrected test runs on is not printed as the sd of Δ
    assert f"{v.comparison.evidence.sd_diff:.4g}" not in v.message().split("minimum detectable")[1]
