"""Adaptive seeds (group-sequential paired t): boundaries checked against independent references
(scipy's t quantiles and bivariate normal, a brute-force simulation of raw samples with scipy's
t test) and the error-rate guarantees checked by simulation with Wilson intervals."""

from __future__ import annotations

import math

import numpy as np
import pytest
from scipy import stats

from pytest_graphnetz import stats as gs
from pytest_graphnetz.stats import Verdict
from pytest_graphnetz.stats.sequential import (
    run_schedule,
    schedule,
    sequential_decide,
    sequential_design,
    spent,
)
from pytest_graphnetz.stats.sequential import sequential_holm as gs_holm

ALPHA = 0.05


def test_schedule_doubles_from_min_and_ends_at_max():
    assert schedule(5, 20) == (5, 10, 20)
    assert schedule(5, 30) == (5, 10, 20, 30)
    assert schedule(3, 20) == (3, 6, 12, 20)
    assert schedule(10, 10) == (10,)
    for bad in [(1, 10), (10, 5)]:
        with pytest.raises(ValueError, match="3 <= MIN <= MAX"):
            schedule(*bad)
    # MIN = 2 cannot hold α on discrete metrics: refused with the measured reason; a single
    # look at 2 seeds is the fixed gate's (whose rates at n = 2 hold)
    with pytest.raises(ValueError, match=r"cannot hold α on discrete metrics.*7\.9%"):
        schedule(2, 20)
    assert schedule(2, 2) == (2,)


def test_spending_is_hwang_shih_decani():
    t = np.array([0.25, 0.5, 1.0])
    for gamma in (-4.0, 1.0, 4.0):
        expected = ALPHA * (1 - np.exp(-gamma * t)) / (1 - math.exp(-gamma))
        np.testing.assert_allclose(spent(t, ALPHA, gamma), expected, rtol=1e-12)
    np.testing.assert_allclose(spent(t, ALPHA, 0.0), ALPHA * t)


@pytest.mark.parametrize("gamma", [-4.0, 1.0, 4.0])
def test_first_look_is_the_exact_t_quantile(gamma):
    design = sequential_design(5, 20, alpha=ALPHA, gamma=gamma)
    assert design.looks == (5, 10, 20)
    assert design.critical[0] == pytest.approx(stats.t.isf(design.spent[0], 4), rel=1e-9)
    assert design.spent[-1] == ALPHA
    # a single look is the fixed-n one-sided t test
    fixed = sequential_design(10, 10, alpha=ALPHA)
    assert fixed.critical[0] == pytest.approx(stats.t.isf(ALPHA, 9), rel=1e-9)


def test_large_n_boundaries_match_the_bivariate_normal():
    # At 500 and 1000 seeds the t statistics are normal with correlation sqrt(1/2): the
    # second-look boundary must spend exactly the increment under that law (scipy's mvn cdf).
    from scipy.optimize import brentq

    design = sequential_design(500, 1000, alpha=0.025, gamma=-4.0)
    c1 = stats.norm.isf(design.spent[0])
    mvn = stats.multivariate_normal(mean=[0, 0], cov=[[1, math.sqrt(0.5)], [math.sqrt(0.5), 1]])
    increment = design.spent[1] - design.spent[0]
    c2 = brentq(lambda c: stats.norm.cdf(c1) - mvn.cdf([c1, c]) - increment, 0.5, 5)
    # compare per-look nominal p-values (t vs normal quantiles differ by ~1e-3 at df 999)
    assert design.nominal[1] == pytest.approx(stats.norm.sf(c2), abs=3e-4)
    assert design.nominal[0] == pytest.approx(stats.norm.sf(c1), rel=1e-9)


@pytest.mark.parametrize("gamma", [1.0, 4.0])
def test_each_look_spends_its_increment_on_raw_normal_samples(gamma):
    # Brute force, independent of the calibration's sufficient-statistic shortcut: raw normal
    # samples, scipy's one-sample t test at each look, crossing when p <= the look's nominal p.
    design = sequential_design(5, 20, alpha=ALPHA, gamma=gamma)
    trials = 40_000
    X = np.random.default_rng(7).normal(3.0, 2.0, size=(trials, 20))
    alive = np.ones(trials, bool)
    first = []
    for n, nominal in zip(design.looks, design.nominal, strict=True):
        p = stats.ttest_1samp(X[:, :n], 3.0, axis=1, alternative="greater").pvalue
        cross = alive & (p <= nominal)
        first.append(cross.sum())
        alive &= ~cross
    increments = np.diff((0.0, *design.spent))
    for k, (hits, inc) in enumerate(zip(first, increments, strict=True)):
        ci = gs.wilson_interval(int(hits), trials, confidence_level=0.999)
        assert ci.low <= inc <= ci.high, (k, hits / trials, inc)


def _rates(D, design, *, margin, min_effect):
    verdicts, n_used = run_schedule(D, design, margin=margin, min_effect=min_effect)
    return verdicts, n_used


@pytest.mark.parametrize("noise", ["normal", "t3"])
def test_error_rates_hold_over_the_whole_schedule(noise):
    # P(REGRESSED | mean d = -margin) <= α and P(NOT WORSE | mean d = -δ) <= α, within the
    # Wilson interval of 4,000 trials each, for normal and heavy-tailed (t, 3 df) differences.
    design = sequential_design(5, 20, alpha=ALPHA)
    rng = np.random.default_rng(11)
    margin, delta, sd = 0.002, 0.01, 0.008

    def draw(mean):
        z = rng.standard_normal((4000, 20)) if noise == "normal" else \
            rng.standard_t(3, (4000, 20)) / math.sqrt(3)
        return mean + sd * z

    regressed = (_rates(draw(-margin), design, margin=margin, min_effect=delta)[0]
                 == Verdict.REGRESSED).sum()
    not_worse = (_rates(draw(-delta), design, margin=margin, min_effect=delta)[0]
                 == Verdict.NOT_WORSE).sum()
    for k in (regressed, not_worse):
        assert gs.wilson_interval(int(k), 4000).low <= ALPHA, k / 4000


def test_peeking_without_spending_would_break_the_guarantee():
    # The check above can fail: the same looks at the fixed-n threshold (α per look) exceed α.
    naive = sequential_design(5, 20, alpha=ALPHA)
    naive = type(naive)(looks=naive.looks, alpha=ALPHA, gamma=naive.gamma,
                        critical=tuple(stats.t.isf(ALPHA, n - 1) for n in naive.looks),
                        nominal=(ALPHA,) * 3, spent=(ALPHA,) * 3)
    D = np.random.default_rng(3).normal(0.0, 1.0, size=(4000, 20))
    k = (run_schedule(D, naive, margin=0.0)[0] == Verdict.REGRESSED).sum()
    assert gs.wilson_interval(int(k), 4000).low > ALPHA


def test_a_single_look_decides_like_the_fixed_paired_t_gate():
    design = sequential_design(10, 10, alpha=ALPHA)
    rng = np.random.default_rng(5)
    for _ in range(200):
        base = rng.normal(0.8, 0.02, 10)
        cand = base + rng.normal(rng.uniform(-0.02, 0.02), 0.01, 10)
        decision = sequential_decide(cand - base, design, margin=0.0)
        p_less = stats.ttest_rel(cand, base, alternative="less").pvalue
        p_greater = stats.ttest_rel(cand, base, alternative="greater").pvalue
        expected = (Verdict.REGRESSED if p_less <= ALPHA else
                    Verdict.BETTER if p_greater <= ALPHA else Verdict.INCONCLUSIVE)
        assert decision.verdict is expected


def test_decisions_at_each_look():
    design = sequential_design(5, 20, alpha=ALPHA)
    identical = sequential_decide(np.zeros(5), design, min_effect=0.01)
    assert identical.verdict is Verdict.IDENTICAL and identical.saved == 15
    broken = sequential_decide([-0.10, -0.12, -0.09, -0.11, -0.10], design, min_effect=0.01)
    assert broken.verdict is Verdict.REGRESSED and broken.n == 5 and broken.look == 1
    assert broken.ci.high < 0
    # a borderline cell: neither boundary at 5 seeds, so 5 more before the next look
    border = sequential_decide([-0.004, 0.003, -0.012, 0.001, -0.008], design, min_effect=0.01)
    assert border.verdict is None and border.more_seeds == 5 and not border.stopped
    assert border.saved == 0
    same = sequential_decide([0.001, -0.001, 0.0005, 0.0, -0.0005], design, min_effect=0.01)
    assert same.verdict is Verdict.NOT_WORSE
    better = sequential_decide([0.05, 0.06, 0.055, 0.05, 0.06], design, min_effect=0.01)
    assert better.verdict is Verdict.BETTER
    # still open at MAX: INCONCLUSIVE
    d = np.random.default_rng(0).normal(-0.005, 0.02, 20)
    last = sequential_decide(d, design, min_effect=0.01)
    assert last.verdict in (Verdict.INCONCLUSIVE, Verdict.REGRESSED, Verdict.NOT_WORSE)
    assert last.more_seeds == 0 and last.look == 3


def test_rounding_at_the_margin_is_not_a_regression():
    # every seed drops by exactly the margin in two-decimal accuracies: the data sit on the
    # boundary (d + margin = -8.7e-18 with no spread): no evidence of a drop beyond it, and
    # clear evidence that the drop is within δ = 2 points
    base = np.array([0.81, 0.79, 0.83, 0.80, 0.82])
    decision = sequential_decide((base - 0.01) - base, sequential_design(5, 20), margin=0.01,
                                 min_effect=0.02)
    assert decision.t_regressed == 0 and decision.verdict is Verdict.NOT_WORSE


def test_refusals_name_the_problem():
    design = sequential_design(5, 20)
    with pytest.raises(ValueError, match=r"7 paired seeds is not a look .*\(5, 10, 20\)"):
        sequential_decide(np.zeros(7), design)
    with pytest.raises(ValueError, match="finite"):
        sequential_decide([0.1, np.nan, 0, 0, 0], design)
    with pytest.raises(ValueError, match="must exceed `margin`"):
        sequential_decide(np.ones(5), design, margin=0.01, min_effect=0.01)
    with pytest.raises(ValueError, match="alpha"):
        sequential_design(5, 20, alpha=0.7)


def test_holm_across_cells_steps_down_and_retests_earlier_looks():
    # histories are each look's own one-sided REGRESSED p (never an earlier look's statistic)
    design = sequential_design(5, 20, alpha=ALPHA)
    n3, n2 = (design.at_level(ALPHA / k).nominal[0] for k in (3, 2))
    between = (n3 + n2) / 2  # crosses at α/2 but not at α/3
    designs = [design] * 3
    assert gs_holm([[1e-9], [between], [0.5]], designs).rejected == (True, True, False)
    assert gs_holm([[0.5], [between], [0.5]], designs).rejected == (False, False, False)
    # a cell whose first look crossed only at the new level is rejected at that look, even
    # though it has since moved on (its later statistic is ordinary)
    both = gs_holm([[0.3, 1e-9], [between, 0.7], [0.5, 0.5]], designs)
    assert both.rejected == (True, True, False) and both.at_look == (1, 0, None)
    assert both.level == ALPHA  # one left: the last step's level
    # one look per cell: Holm's step-down itself, with its adjusted p
    one = sequential_design(10, 10, alpha=ALPHA)
    p = [0.012, 0.04, 0.3]
    family = gs_holm([[x] for x in p], [one] * 3)
    assert family.rejected == (True, False, False) and family.level == ALPHA / 2
    assert family.p_adjusted == pytest.approx([0.036, 0.08, 0.3])


def test_holm_across_cells_keeps_the_familywise_rate():
    # three cells, all at the boundary, full schedules: P(any REGRESSED) <= α
    design = sequential_design(5, 20, alpha=ALPHA)
    rng = np.random.default_rng(21)
    trials, hits = 3000, 0
    X = rng.standard_normal((trials, 3, 20))
    P = np.stack([stats.t.cdf(X[..., :n].mean(-1) / (X[..., :n].std(-1, ddof=1) / math.sqrt(n)),
                              n - 1) for n in design.looks], axis=-1)
    for p in P:
        hits += any(gs_holm(p.tolist(), [design] * 3).rejected)
    assert gs.wilson_interval(hits, trials).low <= ALPHA


def test_short_schedules_design_without_a_runtime_warning():
    """3..6 and 3..5 (small df at the first look) warned "divide by zero" into the user's pytest
    output: a float32 χ² path draw of exactly 0. That path's t is ±inf, which is its limit."""
    import warnings

    from pytest_graphnetz.stats.boundaries import _design

    for lo, hi in [(3, 6), (3, 5)]:
        _design.cache_clear()
        with warnings.catch_warnings():
            warnings.simplefilter("error")
            design = sequential_design(lo, hi)
        assert all(math.isfinite(c) and c > 0 for c in design.critical), design.critical
        # the first look is the exact t quantile, untouched by the change
        assert design.critical[0] == pytest.approx(stats.t.ppf(1 - design.spent[0], lo - 1))


def test_the_lean_rule_holds_an_early_not_worse_whose_estimate_leans_towards_a_drop():
    # Five seeds 0.4 points worse on average, with a spread so small that the interval already
    # clears -δ: NOT WORSE's boundary is crossed, but the mean sits 2 standard errors below 0.
    d = -0.004 + 0.0045 * stats.zscore([-2.0, -1.0, 0.0, 1.0, 2.0], ddof=1)
    se = d.std(ddof=1) / math.sqrt(5)
    design = sequential_design(5, 20, alpha=ALPHA)
    assert (d.mean() + 0.01) / se >= design.critical[0] and d.mean() / se <= -design.lean
    held = sequential_decide(d, design, min_effect=0.01)
    assert held.verdict is None and held.more_seeds == 5
    off = sequential_decide(d, sequential_design(5, 20, alpha=ALPHA, lean=None), min_effect=0.01)
    assert off.verdict is Verdict.NOT_WORSE
    # at MAX there is nothing left to wait for: a cell open at looks 1 and 2 that leans the
    # same way at 20 seeds is NOT WORSE
    z = stats.zscore(np.random.default_rng(2).standard_normal(20), ddof=1)
    d20 = -0.004 + 0.009 * z
    assert all(sequential_decide(d20[:n], design, min_effect=0.01).verdict is None
               for n in (5, 10))
    last = sequential_decide(d20, design, min_effect=0.01)
    assert last.t_regressed <= -design.lean and last.verdict is Verdict.NOT_WORSE


def test_the_lean_rule_only_shrinks_not_worse():
    # Same paths with and without the rule: every NOT WORSE with it crossed the boundary
    # without it too (at this look or an earlier one), and at Δ = -δ it is rarer.
    rng = np.random.default_rng(17)
    D = -0.01 + 0.012 * rng.standard_normal((20_000, 20))
    with_rule, n_with = run_schedule(D, sequential_design(5, 20), min_effect=0.01)
    without, n_without = run_schedule(D, sequential_design(5, 20, lean=None), min_effect=0.01)
    nw, nw_off = with_rule == Verdict.NOT_WORSE, without == Verdict.NOT_WORSE
    assert np.all(nw_off[nw] & (n_without[nw] <= n_with[nw]))
    assert nw.sum() < nw_off.sum()
    assert gs.wilson_interval(int(nw.sum()), len(D)).low <= ALPHA


def test_boundaries_do_not_depend_on_which_designs_were_calibrated_before():
    """Designs that share the looks before MAX share simulated paths (a cache): each design's
    boundaries are those of calibrating it first, in a fresh process state."""
    from pytest_graphnetz.stats import boundaries

    def fresh(lo, hi, alpha):
        boundaries._design.cache_clear()
        boundaries._paths.cache_clear()
        return sequential_design(lo, hi, alpha=alpha).critical

    alone = {(lo, hi, a): fresh(lo, hi, a)
             for lo, hi in [(5, 30), (5, 40), (5, 37), (3, 24)] for a in (0.05, 0.01)}
    boundaries._design.cache_clear()
    boundaries._paths.cache_clear()
    for lo, hi in [(5, 40), (3, 24), (5, 37), (5, 30), (5, 30), (3, 24)]:   # shared paths
        for level in (0.01, 0.05):
            assert sequential_design(lo, hi, alpha=level).critical == alone[lo, hi, level]


@pytest.mark.parametrize("sd, delta, lo, hi", [(1.0, 0.5, 5, 40), (0.02, 0.01, 3, 12)])
def test_planned_power_through_sufficient_statistics_is_that_of_raw_samples(sd, delta, lo, hi):
    """`sequential_power` simulates each look's mean and sum of squares; the same design run on
    raw normal samples (`run_schedule`, another rng) gives the same two chances within
    Monte-Carlo error."""
    from pytest_graphnetz.stats.sequential import sequential_power

    design = sequential_design(lo, hi)
    planned = sequential_power(sd, delta, design, regressed_alpha=0.02)
    paths = 40_000
    Z = np.random.default_rng(77).normal(0.0, sd, size=(paths, hi))
    null, _ = run_schedule(Z, design, min_effect=delta, regressed_alpha=0.02)
    drop, _ = run_schedule(Z - delta, design, min_effect=delta, regressed_alpha=0.02)
    raw = (float(np.isin(null, [Verdict.NOT_WORSE, Verdict.BETTER]).mean()),
           float(np.mean(drop == Verdict.REGRESSED)))
    for p, q in zip(planned, raw, strict=True):
        # both estimates' Monte-Carlo sd (2^14 and 40,000 paths), four of them
        assert abs(p - q) <= 4 * math.sqrt(q * (1 - q) * (1 / 2**14 + 1 / paths)) + 1e-9, (
            planned, raw)
    assert 0.05 < raw[0] < 0.99 and 0.05 < raw[1] < 0.99   # neither chance trivial here
