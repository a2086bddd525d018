"""Rerun-safe seeds: the chain's boundaries checked against scipy's t quantiles and against a
brute-force simulation of raw normal samples decided with scipy's one-sample t test."""

from __future__ import annotations

import math

import numpy as np
import pytest
from scipy import stats

from pytest_graphnetz.stats.rerun import (
    DEFAULT_RHO,
    calibrate_looks,
    rerun_design,
    rerun_seeds_needed,
    rerun_spending,
)

ALPHA = 0.05


def _wilson(k: int, n: int, z: float = 2.576) -> tuple[float, float]:
    p = k / n
    centre = (p + z * z / (2 * n)) / (1 + z * z / n)
    half = z * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n)) / (1 + z * z / n)
    return centre - half, centre + half


def test_spending_is_open_ended_and_starts_at_rho_alpha():
    assert rerun_spending(10, 10, alpha=ALPHA, rho=0.8) == pytest.approx(0.04)
    assert rerun_spending(20, 10, alpha=ALPHA, rho=0.8) == pytest.approx(0.045)
    assert rerun_spending(10_000, 10, alpha=ALPHA, rho=0.8) < ALPHA
    assert rerun_spending(10_000, 10, alpha=ALPHA, rho=0.8) > 0.0499


def test_first_run_is_the_t_test_at_rho_alpha():
    design = rerun_design([], 10)
    assert design.run == 1
    assert design.current_critical == pytest.approx(stats.t.isf(DEFAULT_RHO * ALPHA, 9),
                                                    rel=1e-10)
    assert design.current_nominal == pytest.approx(DEFAULT_RHO * ALPHA, rel=1e-8)
    assert design.confidence_level == pytest.approx(1 - 2 * DEFAULT_RHO * ALPHA)


def test_recomputing_from_the_record_gives_earlier_boundaries_bit_for_bit():
    first = rerun_design([], 10)
    second = rerun_design([10], 20)
    third = rerun_design([10, 20], 45)
    assert second.critical[:1] == first.critical
    assert third.critical[:2] == second.critical
    assert third.looks == (10, 20, 45)
    # A stricter level gives stricter boundaries at every look (Holm re-tests earlier looks).
    holm = third.at_level(ALPHA / 3)
    assert holm == rerun_design([10, 20], 45, alpha=ALPHA / 3)
    assert all(h > c for h, c in zip(holm.critical, third.critical, strict=True))


def test_each_look_spends_its_increment_on_raw_samples_tested_by_scipy():
    """Raw normal chains 10 -> 20 -> 40, decided with scipy's ttest_1samp: the first crossing
    happens at each look with the probability the spending function gives it."""
    rng = np.random.default_rng(7)
    looks = (10, 20, 40)
    spent = (0.02, 0.035, 0.05)  # large increments, so 20,000 chains resolve each one
    critical = calibrate_looks(looks, spent)
    X = rng.standard_normal((20_000, looks[-1]))
    alive = np.ones(X.shape[0], dtype=bool)
    previous = 0.0
    for n, c, cum in zip(looks, critical, spent, strict=True):
        t = stats.ttest_1samp(X[:, :n], 0.0, axis=1).statistic
        cross = alive & (t >= c)
        low, high = _wilson(int(cross.sum()), X.shape[0])
        assert low <= cum - previous <= high, (n, cross.mean(), cum - previous)
        alive &= ~cross
        previous = cum


def _chain_rate(X: np.ndarray, critical, looks, hit: str) -> float:
    """Share of chains that end with verdict ``hit`` when INCONCLUSIVE runs are rerun at the
    next look (δ = 1, margin 0), every statistic from scipy's ttest_1samp."""
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
def test_rerunning_while_inconclusive_keeps_each_error_at_alpha(mean, hit):
    """sd 4 points, δ 1 point: today's fresh t test at every run is wrong far more often than
    α after three reruns; the chain's boundaries hold α."""
    rng = np.random.default_rng(11)
    looks = (10, 20, 40, 80)
    X = mean + 4.0 * rng.standard_normal((6000, looks[-1]))
    today = _chain_rate(X, [stats.t.isf(ALPHA, n - 1) for n in looks], looks, hit)
    safe = _chain_rate(X, rerun_design(looks[:-1], looks[-1]).critical, looks, hit)
    assert _wilson(round(today * X.shape[0]), X.shape[0])[0] > 0.08
    assert _wilson(round(safe * X.shape[0]), X.shape[0])[0] < ALPHA


def test_a_rerun_needs_more_seeds_and_an_inconclusive_past():
    with pytest.raises(ValueError, match="more than 20 seeds"):
        rerun_design([10, 20], 20)
    with pytest.raises(ValueError, match="run 2 .* was decided REGRESSED"):
        rerun_design([10, 20], 40, prior_verdicts=["INCONCLUSIVE", "REGRESSED"])
    with pytest.raises(ValueError, match="2 prior verdicts for 1"):
        rerun_design([10], 20, prior_verdicts=["INCONCLUSIVE", "INCONCLUSIVE"])
    with pytest.raises(ValueError, match="`rho`"):
        rerun_design([], 10, rho=0.0)
    assert rerun_design([10], 20, prior_verdicts=["INCONCLUSIVE"]).n == 20


def test_nothing_left_to_spend_gives_a_boundary_nothing_crosses():
    assert calibrate_looks((10, 20), (0.05, 0.05))[1] == math.inf
    assert rerun_design([10], 20, rho=1.0).current_nominal == 0.0


@pytest.mark.parametrize("sd", [0.86, 2.0, 4.0])
def test_rerun_advice_decides_at_the_chains_own_boundary(sd):
    """At the advised seed count and the calibrated boundary of that rerun, a drop of δ reads
    REGRESSED and no change reads NOT WORSE with probability >= 0.8 (noncentral t, scipy)."""
    n = rerun_seeds_needed([10], sd, 1.0)
    c = rerun_design([10], n).current_critical
    ncp = 1.0 / sd * math.sqrt(n)
    assert stats.nct.cdf(-c, n - 1, -ncp) >= 0.8          # REGRESSED at Δ = −δ
    assert stats.nct.sf(c, n - 1, ncp) >= 0.8             # NOT WORSE at Δ = 0
    assert rerun_seeds_needed([10], sd, 1.0, max_seeds=n - 1) is None
