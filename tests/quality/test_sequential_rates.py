"""The sequential design's error rates and power, by simulation: each error at most α over the
whole schedule (normal and heavy-tailed differences, and when an INCONCLUSIVE cell takes the
next look), the family-wise rate under Holm, power through sufficient statistics equal to that
of raw samples, and the check failing where the looks spend nothing (Wilson intervals)."""

from __future__ import annotations

import math

import numpy as np
import pytest
from scipy import stats

from pytest_graphnetz.stats import Verdict
from pytest_graphnetz.stats.boundaries import Design, design
from pytest_graphnetz.stats.heldout import wilson_interval
from pytest_graphnetz.stats.sequential import run_schedule
from pytest_graphnetz.stats.sequential import sequential_holm as gs_holm

ALPHA = 0.05


def _rates(D, d, *, margin, min_effect):
    return run_schedule(D, d, margin=margin, min_effect=min_effect)


@pytest.mark.parametrize("noise", ["normal", "t3"])
def test_error_rates_hold_over_the_whole_schedule(noise):
    # P(REGRESSED | mean d = -margin) <= α and P(NOT WORSE | mean d = -δ) <= α, within the
    # Wilson interval of 4,000 trials each, for normal and heavy-tailed (t, 3 df) differences.
    d = design(5, 20, alpha=ALPHA)
    rng = np.random.default_rng(11)
    margin, delta, sd = 0.002, 0.01, 0.008

    def draw(mean):
        z = rng.standard_normal((4000, 20)) if noise == "normal" else \
            rng.standard_t(3, (4000, 20)) / math.sqrt(3)
        return mean + sd * z

    regressed = (_rates(draw(-margin), d, margin=margin, min_effect=delta)[0]
                 == Verdict.REGRESSED).sum()
    not_worse = (_rates(draw(-delta), d, margin=margin, min_effect=delta)[0]
                 == Verdict.NOT_WORSE).sum()
    for k in (regressed, not_worse):
        assert wilson_interval(int(k), 4000).low <= ALPHA, k / 4000


def _chain_rate(X: np.ndarray, critical, looks, hit: str) -> float:
    """Share of cells that end with verdict ``hit`` when an INCONCLUSIVE cell takes the next
    look (δ = 1, margin 0), every statistic from scipy's ttest_1samp."""
    verdict = np.full(X.shape[0], "INCONCLUSIVE", dtype=object)
    for n, c in zip(looks, critical, strict=True):
        open_ = verdict == "INCONCLUSIVE"
        t0 = stats.ttest_1samp(X[open_, :n], 0.0, axis=1).statistic
        t_nw = stats.ttest_1samp(X[open_, :n], -1.0, axis=1).statistic
        new = np.full(t0.size, "INCONCLUSIVE", dtype=object)
        new[t_nw >= c] = "NOT WORSE"
        new[t0 >= c] = "BETTER"
        new[t0 <= -c] = "REGRESSED"
        verdict[open_] = new
    return float(np.mean(verdict == hit))


@pytest.mark.parametrize("mean, hit", [(0.0, "REGRESSED"), (-1.0, "NOT WORSE")])
def test_taking_the_next_look_while_inconclusive_keeps_each_error_at_alpha(mean, hit):
    """sd 4 points, δ 1 point, 10 -> 20 -> 40 -> 80: a fresh t test at α at every run is wrong
    far more often than α; the schedule's boundaries hold α (scipy's t statistics)."""
    rng = np.random.default_rng(11)
    looks = (10, 20, 40, 80)
    X = mean + 4.0 * rng.standard_normal((6000, looks[-1]))
    fresh = _chain_rate(X, [stats.t.isf(ALPHA, n - 1) for n in looks], looks, hit)
    safe = _chain_rate(X, design(10, 80).critical, looks, hit)
    assert wilson_interval(round(fresh * X.shape[0]), X.shape[0]).low > 0.08
    assert wilson_interval(round(safe * X.shape[0]), X.shape[0]).high < 0.06
    assert wilson_interval(round(safe * X.shape[0]), X.shape[0]).low <= ALPHA


def test_peeking_without_spending_would_break_the_guarantee():
    # The check above can fail: the same looks at the fixed-n threshold (α per look) exceed α.
    looks = (5, 10, 20)
    naive = Design(looks=looks, alpha=ALPHA, rho=0.85, spent=(ALPHA,) * 3,
                   critical=tuple(stats.t.isf(ALPHA, n - 1) for n in looks),
                   nominal=(ALPHA,) * 3)
    D = np.random.default_rng(3).normal(0.0, 1.0, size=(4000, 20))
    k = (run_schedule(D, naive, margin=0.0)[0] == Verdict.REGRESSED).sum()
    assert wilson_interval(int(k), 4000).low > ALPHA


def test_holm_across_cells_keeps_the_familywise_rate():
    # three cells, all at the boundary, the whole schedule: P(any REGRESSED) <= α
    d = design(5, 20, alpha=ALPHA)
    rng = np.random.default_rng(21)
    trials, hits = 3000, 0
    X = rng.standard_normal((trials, 3, 20))
    P = np.stack([stats.t.cdf(X[..., :n].mean(-1) / (X[..., :n].std(-1, ddof=1) / math.sqrt(n)),
                              n - 1) for n in d.looks], axis=-1)
    for p in P:
        hits += any(gs_holm(p.tolist(), [d] * 3).rejected)
    assert wilson_interval(hits, trials).low <= ALPHA


@pytest.mark.parametrize("sd, delta, lo, hi", [(1.0, 0.5, 5, 40), (0.02, 0.01, 3, 12)])
def test_planned_power_through_sufficient_statistics_is_that_of_raw_samples(sd, delta, lo, hi):
    """`sequential_power` simulates each look's mean and sum of squares; the same design run on
    raw normal samples (`run_schedule`, another rng) gives the same two chances within
    Monte-Carlo error."""
    from pytest_graphnetz.stats.lookahead import PLAN_PATHS, sequential_power

    d = design(lo, hi)
    planned = sequential_power(sd, delta, d, regressed_alpha=0.02)
    paths = 40_000
    Z = np.random.default_rng(77).normal(0.0, sd, size=(paths, hi))
    null, _ = run_schedule(Z, d, min_effect=delta, regressed_alpha=0.02)
    drop, _ = run_schedule(Z - delta, d, min_effect=delta, regressed_alpha=0.02)
    raw = (float(np.isin(null, [Verdict.NOT_WORSE, Verdict.BETTER]).mean()),
           float(np.mean(drop == Verdict.REGRESSED)))
    for p, q in zip(planned, raw, strict=True):
        # both estimates' Monte-Carlo sd, four of them
        assert abs(p - q) <= 4 * math.sqrt(q * (1 - q) * (1 / PLAN_PATHS + 1 / paths)) + 1e-9, (
            planned, raw)
    assert 0.05 < raw[0] < 0.99 and 0.05 < raw[1] < 0.99   # neither chance trivial here
