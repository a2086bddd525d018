"""The one sequential design (stats.boundaries) and deciding with it (stats.sequential):
boundaries checked against independent references (scipy's t quantiles and bivariate normal, a
brute-force simulation of raw samples with scipy's t test) and the next-look advice. The
error-rate guarantees by simulation (Wilson intervals): tests/quality/test_sequential_rates.py."""

from __future__ import annotations

import math

import numpy as np
import pytest
from scipy import stats

from pytest_graphnetz.stats import Verdict
from pytest_graphnetz.stats.boundaries import (
    DEFAULT_RHO,
    calibrate,
    design,
    schedule,
    single_look,
    spending,
)
from pytest_graphnetz.stats.heldout import wilson_interval
from pytest_graphnetz.stats.lookahead import PlanSpec, advise_next_look
from pytest_graphnetz.stats.sequential import sequential_decide
from pytest_graphnetz.stats.sequential import sequential_holm as gs_holm

ALPHA = 0.05


def test_schedule_doubles_from_the_first_look_and_is_open_ended():
    assert schedule(5, 20) == (5, 10, 20)
    assert schedule(5, 39) == (5, 10, 20)
    assert schedule(10, 80) == (10, 20, 40, 80)
    assert schedule(10, 10) == (10,) and schedule(10, 9) == ()
    with pytest.raises(ValueError, match="at least 2 seeds"):
        schedule(1, 10)
    # a longer schedule extends a shorter one bit for bit: a rerun walks the same looks
    short, long = design(10, 20), design(10, 80)
    assert long.critical[:2] == short.critical and long.nominal[:2] == short.nominal
    assert long.upto(25) == short and design(10, 40).upto(20) == short


def test_spending_is_open_ended_and_starts_at_rho_alpha():
    assert spending(10, 10, alpha=ALPHA, rho=0.8) == pytest.approx(0.04)
    assert spending(20, 10, alpha=ALPHA, rho=0.8) == pytest.approx(0.045)
    assert 0.0499 < spending(10_000, 10, alpha=ALPHA, rho=0.8) < ALPHA
    d = design(10, 80)
    np.testing.assert_allclose(d.spent, ALPHA * (1 - (1 - DEFAULT_RHO) * 10 / np.array(d.looks)))
    # a run judged alone spends all of α at its one look
    assert single_look(7).spent == (ALPHA,) and not single_look(7).on_schedule


def test_first_look_is_the_exact_t_quantile_at_what_it_spends():
    d = design(5, 20, alpha=ALPHA)
    assert d.looks == (5, 10, 20)
    assert d.critical[0] == pytest.approx(stats.t.isf(DEFAULT_RHO * ALPHA, 4), rel=1e-9)
    assert d.nominal[0] == DEFAULT_RHO * ALPHA
    assert d.confidence_level(0) == pytest.approx(1 - 2 * DEFAULT_RHO * ALPHA)
    # a single look judged alone is the fixed-n one-sided t test at α
    assert single_look(10).critical[0] == pytest.approx(stats.t.isf(ALPHA, 9), rel=1e-9)
    # a stricter level gives stricter boundaries at every look (Holm re-tests earlier looks)
    holm = design(10, 40).at_level(ALPHA / 3)
    assert holm == design(10, 40, alpha=ALPHA / 3)
    assert all(h > c for h, c in zip(holm.critical, design(10, 40).critical, strict=True))


def test_large_n_boundaries_match_the_bivariate_normal():
    # At 500 and 1000 seeds the t statistics are normal with correlation sqrt(1/2): the
    # second-look boundary must spend exactly the increment under that law (scipy's mvn cdf).
    from scipy.optimize import brentq

    d = design(500, 1000, alpha=0.025)
    c1 = stats.norm.isf(d.spent[0])
    mvn = stats.multivariate_normal(mean=[0, 0], cov=[[1, math.sqrt(0.5)], [math.sqrt(0.5), 1]])
    increment = d.spent[1] - d.spent[0]
    c2 = brentq(lambda c: stats.norm.cdf(c1) - mvn.cdf([c1, c]) - increment, 0.5, 5)
    # compare per-look nominal p-values (t vs normal quantiles differ by ~1e-3 at df 999)
    assert d.nominal[1] == pytest.approx(stats.norm.sf(c2), abs=3e-4)
    assert d.nominal[0] == pytest.approx(stats.norm.sf(c1), rel=1e-9)


def test_each_look_spends_its_increment_on_raw_normal_samples():
    # Brute force, independent of the calibration's sufficient-statistic shortcut: raw normal
    # samples, scipy's one-sample t test at each look, crossing when p <= the look's nominal p.
    d = design(5, 20, alpha=ALPHA)
    trials = 40_000
    X = np.random.default_rng(7).normal(3.0, 2.0, size=(trials, 20))
    alive = np.ones(trials, bool)
    first = []
    for n, nominal in zip(d.looks, d.nominal, strict=True):
        p = stats.ttest_1samp(X[:, :n], 3.0, axis=1, alternative="greater").pvalue
        cross = alive & (p <= nominal)
        first.append(cross.sum())
        alive &= ~cross
    increments = np.diff((0.0, *d.spent))
    for k, (hits, inc) in enumerate(zip(first, increments, strict=True)):
        ci = wilson_interval(int(hits), trials, confidence_level=0.999)
        assert ci.low <= inc <= ci.high, (k, hits / trials, inc)


def test_the_calibrator_spends_large_increments_on_raw_samples_tested_by_scipy():
    """Raw normal paths 10 -> 20 -> 40, decided with scipy's ttest_1samp: the first crossing
    happens at each look with the probability given to it (large increments, so 20,000 paths
    resolve each one)."""
    rng = np.random.default_rng(7)
    looks, spent = (10, 20, 40), (0.02, 0.035, 0.05)
    critical = calibrate(looks, spent)
    X = rng.standard_normal((20_000, looks[-1]))
    alive = np.ones(X.shape[0], dtype=bool)
    previous = 0.0
    for n, c, cum in zip(looks, critical, spent, strict=True):
        t = stats.ttest_1samp(X[:, :n], 0.0, axis=1).statistic
        cross = alive & (t >= c)
        ci = wilson_interval(int(cross.sum()), X.shape[0], confidence_level=0.99)
        assert ci.low <= cum - previous <= ci.high, (n, cross.mean(), cum - previous)
        alive &= ~cross
        previous = cum
    # a look with nothing to spend: a boundary nothing crosses
    assert calibrate((10, 20), (0.05, 0.05))[1] == math.inf


def test_a_single_look_decides_like_the_fixed_paired_t_gate():
    one = single_look(10, alpha=ALPHA)
    rng = np.random.default_rng(5)
    for _ in range(200):
        base = rng.normal(0.8, 0.02, 10)
        cand = base + rng.normal(rng.uniform(-0.02, 0.02), 0.01, 10)
        # the plain t (the skew guard off: tests/cover/test_stats_skew.py covers it)
        decision = sequential_decide(cand - base, one, margin=0.0, skew_threshold=None)
        p_less = stats.ttest_rel(cand, base, alternative="less").pvalue
        p_greater = stats.ttest_rel(cand, base, alternative="greater").pvalue
        expected = (Verdict.REGRESSED if p_less <= ALPHA else
                    Verdict.BETTER if p_greater <= ALPHA else Verdict.INCONCLUSIVE)
        assert decision.verdict is expected


def test_decisions_at_each_look():
    d = design(5, 20, alpha=ALPHA)
    identical = sequential_decide(np.zeros(5), d, min_effect=0.01)
    assert identical.verdict is Verdict.IDENTICAL
    broken = sequential_decide([-0.10, -0.12, -0.09, -0.11, -0.10], d, min_effect=0.01)
    assert broken.verdict is Verdict.REGRESSED and broken.n == 5 and broken.look == 1
    assert broken.ci.high < 0
    # a borderline cell: neither boundary at 5 seeds, so 5 more before the next look
    border = sequential_decide([-0.004, 0.003, -0.012, 0.001, -0.008], d, min_effect=0.01)
    assert border.verdict is None and border.more_seeds == 5 and not border.stopped
    same = sequential_decide([0.001, -0.001, 0.0005, 0.0, -0.0005], d, min_effect=0.01)
    assert same.verdict is Verdict.NOT_WORSE
    better = sequential_decide([0.05, 0.06, 0.055, 0.05, 0.06], d, min_effect=0.01)
    assert better.verdict is Verdict.BETTER
    # still open at the design's last look: INCONCLUSIVE
    x = np.random.default_rng(0).normal(-0.005, 0.02, 20)
    last = sequential_decide(x, d, min_effect=0.01)
    assert last.verdict in (Verdict.INCONCLUSIVE, Verdict.REGRESSED, Verdict.NOT_WORSE)
    assert last.more_seeds == 0 and last.look == 3


def test_rounding_at_the_margin_is_not_a_regression():
    # every seed drops by exactly the margin in two-decimal accuracies: the data sit on the
    # boundary (d + margin = -8.7e-18 with no spread): no evidence of a drop beyond it, and
    # clear evidence that the drop is within δ = 2 points
    base = np.array([0.81, 0.79, 0.83, 0.80, 0.82])
    decision = sequential_decide((base - 0.01) - base, design(5, 20), margin=0.01,
                                 min_effect=0.02)
    assert decision.t_regressed == 0 and decision.verdict is Verdict.NOT_WORSE


def test_refusals_name_the_problem():
    d = design(5, 20)
    with pytest.raises(ValueError, match=r"7 paired seeds is not a look of \(5, 10, 20\)"):
        sequential_decide(np.zeros(7), d)
    with pytest.raises(ValueError, match="finite"):
        sequential_decide([0.1, np.nan, 0, 0, 0], d)
    with pytest.raises(ValueError, match="must exceed `margin`"):
        sequential_decide(np.ones(5), d, margin=0.01, min_effect=0.01)
    with pytest.raises(ValueError, match="alpha"):
        design(5, 20, alpha=0.7)
    with pytest.raises(ValueError, match="`rho`"):
        design(5, 20, rho=0.0)
    with pytest.raises(ValueError, match="hold no look"):
        design(10, 9)


def test_holm_across_cells_steps_down_and_retests_earlier_looks():
    # histories are each look's own one-sided REGRESSED p (never an earlier look's statistic)
    d = design(5, 20, alpha=ALPHA)
    n3, n2 = (d.at_level(ALPHA / k).nominal[0] for k in (3, 2))
    between = (n3 + n2) / 2  # crosses at α/2 but not at α/3
    designs = [d] * 3
    assert gs_holm([[1e-9], [between], [0.5]], designs).rejected == (True, True, False)
    assert gs_holm([[0.5], [between], [0.5]], designs).rejected == (False, False, False)
    # a cell whose first look crossed only at the new level is rejected at that look, even
    # though it has since moved on (its later statistic is ordinary)
    both = gs_holm([[0.3, 1e-9], [between, 0.7], [0.5, 0.5]], designs)
    assert both.rejected == (True, True, False) and both.at_look == (1, 0, None)
    assert both.level == ALPHA  # one left: the last step's level
    # one look per cell judged alone: Holm's step-down itself, with its adjusted p
    one = single_look(10, alpha=ALPHA)
    p = [0.012, 0.04, 0.3]
    family = gs_holm([[x] for x in p], [one] * 3)
    assert family.rejected == (True, False, False) and family.level == ALPHA / 2
    assert family.p_adjusted == pytest.approx([0.036, 0.08, 0.3])
    # the schedule's first look alone: Holm at what it spends (ρα)
    first = gs_holm([[x] for x in p], [design(10, 10)] * 3)
    assert first.p_adjusted == pytest.approx([0.036, 0.08, 0.3])
    assert first.rejected == (True, False, False)


def test_short_schedules_design_without_a_runtime_warning():
    """3..6 (small df at the first look) warned "divide by zero" into the user's pytest output:
    a float32 χ² path draw of exactly 0. That path's t is ±inf, which is its limit."""
    import warnings

    from pytest_graphnetz.stats.boundaries import clear_caches

    for lo, hi in [(3, 6), (3, 12)]:
        clear_caches()
        with warnings.catch_warnings():
            warnings.simplefilter("error")
            d = design(lo, hi)
        assert all(math.isfinite(c) and c > 0 for c in d.critical), d.critical
        assert d.critical[0] == pytest.approx(stats.t.ppf(1 - d.spent[0], lo - 1))


def test_boundaries_do_not_depend_on_which_designs_were_calibrated_before():
    """Designs that share looks share simulated paths (a cache): each design's boundaries are
    those of calibrating it first, in a fresh process state."""
    from pytest_graphnetz.stats import boundaries

    def fresh(lo, hi, alpha):
        boundaries.clear_caches()
        return design(lo, hi, alpha=alpha).critical

    alone = {(lo, hi, a): fresh(lo, hi, a)
             for lo, hi in [(5, 20), (5, 40), (10, 80), (3, 24)] for a in (0.05, 0.01)}
    boundaries.clear_caches()
    for lo, hi in [(5, 40), (3, 24), (10, 80), (5, 20), (5, 20), (3, 24)]:   # shared paths
        for level in (0.01, 0.05):
            assert design(lo, hi, alpha=level).critical == alone[lo, hi, level]


def test_the_advice_is_a_look_of_the_schedule_past_the_seeds_taken():
    # sd 2 points, δ 1 point, INCONCLUSIVE at 10 seeds: a later look (20, 40, 80, ...)
    n = advise_next_look(0.02, 10, PlanSpec(0.01, first=10), taken=10)
    assert n is not None and n > 10 and math.log2(n / 10).is_integer()
    # more noise needs at least as many seeds; a larger δ at most as many
    assert advise_next_look(0.04, 10, PlanSpec(0.01, first=10), taken=10) >= n
    assert advise_next_look(0.02, 10, PlanSpec(0.02, first=10), taken=10) <= n
    # a cell that has had no look yet (judged alone on fewer seeds) may be advised look 1
    assert advise_next_look(0.002, 5, PlanSpec(0.01, first=10), taken=0) == 10
    # a spread so small that simulated cells are never open at 10 seeds: the next look, not
    # "no affordable seed count" (the condition carries no information there)
    assert advise_next_look(0.002, 10, PlanSpec(0.01, first=10), taken=10) == 20
    # nothing affordable: None
    assert advise_next_look(0.5, 10, PlanSpec(0.01, first=10), taken=10) is None
    assert advise_next_look(0.02, 10, PlanSpec(0.01, first=10, max_seeds=n // 2), taken=10) is None
