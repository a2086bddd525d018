"""Statistics core checked against independent references: scipy.stats and textbook values."""

from __future__ import annotations

import dataclasses
import math
import warnings

import numpy as np
import pytest
from scipy import stats

from pytest_graphnetz import stats as gs
from pytest_graphnetz.stats import Verdict
from pytest_graphnetz.stats.decisions import DecisionSettings, compare, compare_many, holm
from pytest_graphnetz.stats.heldout import (
    bootstrap_metric,
    corrected_resampled_ttest,
    describe_folds,
    wilson_interval,
)
from pytest_graphnetz.stats.intervals import bootstrap_interval, describe, describe_many, t_interval
from pytest_graphnetz.stats.paired import mean_above_zero_p, paired_test, paired_tests
from pytest_graphnetz.stats.planning import mde, seeds_for_width, seeds_to_decide


@pytest.fixture(autouse=True)
def _no_warnings():
    # "No NaN leaking out, no warning": any RuntimeWarning from numpy/scipy is a failure here.
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        yield


# -- intervals ------------------------------------------------------------------------------------

@pytest.mark.parametrize("seed", range(5))
@pytest.mark.parametrize("level", [0.9, 0.95, 0.99])
def test_t_interval_matches_scipy(seed, level):
    x = np.random.default_rng(seed).normal(0.8, 0.03, size=3 + seed * 4)
    ref = stats.t.interval(level, x.size - 1, loc=x.mean(), scale=stats.sem(x))
    ci = t_interval(x, confidence_level=level)
    assert (ci.low, ci.high) == pytest.approx(ref, rel=1e-12)


def test_t_interval_uses_textbook_t_quantile_not_normal():
    x = np.arange(10.0)  # n = 10: t_{0.975, 9} = 2.262 (a normal interval would use 1.96)
    ci = t_interval(x)
    half_in_sems = (ci.high - x.mean()) / (x.std(ddof=1) / math.sqrt(10))
    assert half_in_sems == pytest.approx(2.262, abs=5e-4)


def test_bootstrap_ceiling_example_stays_inside_the_data():
    ci = bootstrap_interval([1.0] * 9 + [0.9])
    assert ci.low == pytest.approx(0.97, abs=1e-9)
    assert ci.high == 1.0  # never above the largest value (a t interval would give ~1.005)
    assert t_interval([1.0] * 9 + [0.9]).high > 1.0


@pytest.mark.parametrize("seed", range(3))
def test_bootstrap_interval_agrees_with_scipy_percentile_bootstrap(seed):
    x = np.random.default_rng(seed).gamma(2.0, 0.05, size=12)  # skewed: asymmetric interval
    ours = bootstrap_interval(x, n_resamples=20_000, rng=seed)
    ref = stats.bootstrap((x,), np.mean, method="percentile", n_resamples=20_000,
                          rng=np.random.default_rng(100 + seed)).confidence_interval
    # Two independent Monte-Carlo estimates of the same percentiles.
    assert ours.low == pytest.approx(ref.low, abs=0.004)
    assert ours.high == pytest.approx(ref.high, abs=0.004)


def test_bootstrap_rng_is_deterministic_by_default_and_accepts_int_or_generator():
    x = np.random.default_rng(7).normal(size=10)
    assert bootstrap_interval(x) == bootstrap_interval(x)
    assert bootstrap_interval(x, rng=3) == bootstrap_interval(
        x, rng=np.random.default_rng(3))
    assert bootstrap_interval(x, rng=3) != bootstrap_interval(x, rng=4)


def test_describe_counts_diverged_seeds_and_describes_the_rest():
    x = [0.81, np.nan, 0.79, 0.83, np.inf, 0.80]
    cell = describe(x)
    finite = np.array([0.81, 0.79, 0.83, 0.80])
    assert (cell.n, cell.n_diverged) == (4, 2)
    assert cell.mean == pytest.approx(finite.mean())
    assert cell.std == pytest.approx(finite.std(ddof=1))
    assert cell.sem == pytest.approx(stats.sem(finite))
    assert cell.ci == t_interval(finite)
    with pytest.raises(ValueError, match="bootstrap interval over 4 seeds refused"):
        describe(x, method="bootstrap")  # 4 finished seeds: too few to bootstrap
    y = [*x, 0.82, 0.78, 0.81, 0.80, 0.79, 0.83]
    assert describe(y, method="bootstrap").ci == bootstrap_interval(
        np.asarray(y)[np.isfinite(y)])


def test_describe_many_rows_equal_describe():
    X = np.random.default_rng(1).normal(size=(4, 11))
    X[2, 3] = np.nan
    for method in gs.CI_METHODS:
        rows = describe_many(X, method=method)
        for row, x in zip(rows, X, strict=True):
            assert _same(row, describe(x, method=method))


def test_interval_functions_refuse_diverged_values():
    with pytest.raises(ValueError, match="non-finite"):
        t_interval([0.1, np.nan, 0.3])


# -- two-sided paired tests -----------------------------------------------------------------------

def _pair(seed, n=10, shift=0.01):
    rng = np.random.default_rng(seed)
    b = rng.normal(0.8, 0.03, n)
    return b + shift + rng.normal(0, 0.01, n), b


@pytest.mark.parametrize("seed", range(4))
def test_paired_t_matches_scipy_ttest_rel(seed):
    a, b = _pair(seed, n=6 + seed)
    res = paired_test(a, b)
    ref = stats.ttest_rel(a, b)
    assert res.p_value == pytest.approx(ref.pvalue, rel=1e-9)
    ci = ref.confidence_interval(0.95)
    assert (res.ci.low, res.ci.high) == pytest.approx((ci.low, ci.high), rel=1e-9)
    d = a - b
    assert res.effect_size == pytest.approx(d.mean() / d.std(ddof=1))


@pytest.mark.parametrize("seed", range(4))
def test_wilcoxon_matches_scipy(seed):
    a, b = _pair(seed, n=7 + seed, shift=0.004)
    res = paired_test(a, b, test="wilcoxon")
    assert res.p_value == pytest.approx(stats.wilcoxon(a, b).pvalue, rel=1e-12)


@pytest.mark.parametrize("seed", range(4))
def test_permutation_matches_scipy_exact_permutation_test(seed):
    a, b = _pair(seed, n=6 + seed, shift=0.005)
    res = paired_test(a, b, test="permutation")
    ref = stats.permutation_test((a, b), lambda x, y, axis: np.mean(x - y, axis=axis),
                                 permutation_type="samples", n_resamples=np.inf, vectorized=True)
    assert res.p_value == pytest.approx(ref.pvalue, rel=1e-12)
    assert res.p_floor == 2 / 2**a.size


def test_permutation_monte_carlo_beyond_exact_size_agrees_with_scipy():
    a, b = _pair(0, n=20, shift=0.006)
    res = paired_test(a, b, test="permutation", n_resamples=20_000)
    ref = stats.permutation_test((a, b), lambda x, y, axis: np.mean(x - y, axis=axis),
                                 permutation_type="samples", n_resamples=20_000, vectorized=True,
                                 rng=np.random.default_rng(1))
    assert res.p_value == pytest.approx(ref.pvalue, abs=0.01)


@pytest.mark.parametrize("seed", range(3))
def test_welch_matches_scipy_ttest_ind(seed):
    a, b = _pair(seed, n=8)
    res = paired_test(a, b, test="welch")
    ref = stats.ttest_ind(a, b, equal_var=False)
    assert res.p_value == pytest.approx(ref.pvalue, rel=1e-9)
    ci = ref.confidence_interval(0.95)
    assert (res.ci.low, res.ci.high) == pytest.approx((ci.low, ci.high), rel=1e-9)


def test_paired_bootstrap_p_is_consistent_with_its_interval():
    for seed in range(6):
        a, b = _pair(seed, n=10, shift=0.004 * seed)
        res = paired_test(a, b, test="bootstrap")
        zero_outside = res.ci.low > 0 or res.ci.high < 0
        if abs(res.p_value - 0.05) > 0.01:  # away from the boundary the two must agree
            assert zero_outside == (res.p_value < 0.05)


def _same(got, expected) -> bool:
    """Result dataclasses equal up to last-bit float differences (BLAS summation order)."""
    for f in dataclasses.fields(got):
        x, y = getattr(got, f.name), getattr(expected, f.name)
        if isinstance(x, gs.ConfidenceInterval):
            x, y = tuple(x), tuple(y)
        if isinstance(y, float) or (isinstance(y, tuple) and y and isinstance(y[0], float)):
            assert x == pytest.approx(y, rel=1e-12), f.name
        else:
            assert x == y, f.name
    return True


def test_paired_tests_batch_equals_one_at_a_time():
    rng = np.random.default_rng(2)
    A, B = rng.normal(size=(5, 10)), rng.normal(size=(5, 10))
    for test in gs.PAIRED_TESTS:
        batch = paired_tests(A, B, test=test)
        # Same resamples either way; only BLAS summation order may differ (last bits).
        for got, (a, b) in zip(batch, zip(A, B, strict=True), strict=True):
            assert _same(got, paired_test(a, b, test=test))


def test_wilcoxon_floor_at_five_seeds_is_said_not_hidden():
    a = np.array([0.9, 0.91, 0.92, 0.93, 0.94])
    res = paired_test(a, a - 0.05, test="wilcoxon")  # all five differences positive
    assert res.p_value == pytest.approx(0.0625)
    assert res.p_floor == pytest.approx(0.0625)
    assert any("cannot reach" in n and "0.0625" in n for n in res.notes)


def test_paired_test_excludes_diverged_pairs_with_a_note_and_needs_two():
    a, b = [0.8, np.nan, 0.82, 0.81], [0.79, 0.8, np.nan, 0.80]
    res = paired_test(a, b)
    assert res.n == 2 and res.n_excluded == 2
    assert any("[1, 2]" in n for n in res.notes)
    with pytest.raises(ValueError, match="cora/GCN.*only 1 usable"):
        paired_test([0.8, np.nan, 0.8], [0.7, 0.7, np.nan], label="cora/GCN")


def test_all_zero_differences_give_clean_numbers():
    a = np.array([0.8, 0.81, 0.79, 0.82, 0.83, 0.78, 0.8, 0.81, 0.79, 0.84])
    for test in gs.PAIRED_TESTS:
        res = paired_test(a, a.copy(), test=test)
        assert res.mean_diff == 0 and res.effect_size == 0
        assert res.p_value == 1.0
        assert np.isfinite([res.ci.low, res.ci.high]).all()


# -- verdicts -------------------------------------------------------------------------------------

def test_identical_results_are_identical_without_nan_or_warning():
    x = np.array([0.81, 0.79, 0.84, 0.80, 0.82])
    assert np.isnan(stats.ttest_rel(x, x).pvalue)  # what we must not leak
    for test in gs.PAIRED_TESTS:
        c = compare(x, x.copy(), DecisionSettings(test=test))
        assert c.decision.verdict is Verdict.IDENTICAL
        assert np.isfinite([c.evidence.p_value, c.decision.p_adjusted, c.evidence.mean_diff,
                            c.decision.ci.low, c.decision.ci.high,
                            c.evidence.interval(0.05, 0.05).low,
                            c.decision.mde]).all()


def test_clear_drop_is_regressed_and_matches_one_sided_ttest():
    cand, base = _pair(0, n=10, shift=-0.03)
    c = compare(cand, base, DecisionSettings(margin=0.005))
    assert c.decision.verdict is Verdict.REGRESSED
    ref = stats.ttest_rel(cand + 0.005, base, alternative="less")
    assert c.evidence.p_value == pytest.approx(ref.pvalue, rel=1e-9)
    assert str(c.decision.verdict) == "REGRESSED"


def test_not_worse_uses_the_one_sided_lower_bound():
    cand, base = _pair(1, n=10, shift=0.0)
    margin = 0.02
    c = compare(cand, base, DecisionSettings(margin=margin))
    d = cand - base
    lower = d.mean() - stats.t.ppf(0.95, 9) * stats.sem(d)
    assert c.evidence.interval(0.05, 0.05).low == pytest.approx(lower, rel=1e-9)
    assert lower > -margin and c.decision.verdict is Verdict.NOT_WORSE
    # The printed interval is the two-sided 90% one whose ends are the one-sided bounds.
    two_sided = stats.t.interval(0.90, 9, loc=d.mean(), scale=stats.sem(d))
    assert (c.decision.ci.low, c.decision.ci.high) == pytest.approx(two_sided, rel=1e-9)
    assert c.confidence_level == pytest.approx(0.90)
    assert c.evidence.interval(0.05, 0.05).low == c.decision.ci.low


def test_inconclusive_says_how_many_seeds_would_decide_it():
    rng = np.random.default_rng(5)
    base = rng.normal(0.8, 0.02, 4)
    cand = base - 0.004 + rng.normal(0, 0.01, 4)
    c = compare(cand, base, DecisionSettings(min_effect=0.01))
    assert c.decision.verdict is Verdict.INCONCLUSIVE
    assert c.plan.needed is not None and c.plan.needed > c.evidence.n
    # planned for δ, not for the observed mean difference
    assert c.plan.needed == max(gs.seeds_for_min_effect(c.evidence.sd_diff, 0.01), c.evidence.n + 1)
    # without δ there is nothing to plan for
    assert compare(cand, base).plan.needed is None


def test_direction_lower_is_better_flips_the_sign():
    base = np.array([0.50, 0.52, 0.49, 0.51, 0.50, 0.53])  # an MAE
    cand = base + 0.05  # higher MAE: worse
    c = compare(cand, base, higher_is_better=False)
    assert c.evidence.mean_diff == pytest.approx(-0.05) and c.decision.verdict is Verdict.REGRESSED
    assert compare(base - 0.05, base, higher_is_better=False).decision.verdict is Verdict.BETTER
    noisy = base + np.array([0.01, -0.01, 0.0, 0.005, -0.005, 0.0])
    assert compare(noisy, base, DecisionSettings(min_effect=0.02),
                   higher_is_better=False).decision.verdict is Verdict.NOT_WORSE


def test_zero_variance_nonzero_mean_is_decisive_not_nan():
    base = np.array([0.5, 0.75, 0.25, 1.0])  # dyadic: every difference is exactly ±0.125
    for shift, verdict in [(-0.125, Verdict.REGRESSED), (0.125, Verdict.BETTER)]:
        c = compare(base + shift, base)  # exactly representable: sd of d is exactly 0
        assert c.evidence.sd_diff == 0 and c.decision.verdict is verdict
        assert np.isfinite([c.evidence.p_value, c.decision.ci.low,
                            c.decision.mde]).all()
    better = compare(base + 0.125, base, DecisionSettings(kind="better"))
    assert better.decision.verdict is Verdict.BETTER and better.evidence.p_value == 0.0


def test_candidate_divergence_is_a_failure_and_named():
    base = np.array([0.80, 0.81, 0.79, 0.82, 0.80])
    cand = base + 0.02
    cand[3] = np.nan
    c = compare(cand, base, seeds=[10, 11, 12, 13, 14], label="cora/GCN")
    assert c.decision.verdict is Verdict.REGRESSED
    assert c.evidence.diverged_seeds == (13,) and c.evidence.n == 4
    assert any("[13]" in n for n in c.notes)
    equivalent = compare(cand, base, DecisionSettings(kind="equivalent", margin=0.1))
    assert equivalent.decision.verdict is Verdict.NOT_EQUIVALENT


def test_both_or_baseline_diverged_seeds_are_excluded_with_a_note():
    base = np.array([0.80, np.nan, 0.79, np.nan, 0.80, 0.81])
    cand = np.array([0.80, np.nan, 0.79, 0.85, 0.80, 0.81])
    c = compare(cand, base)
    assert c.decision.verdict is Verdict.IDENTICAL
    assert c.evidence.excluded_seeds == (1, 3) and c.evidence.n == 4
    assert any("excluded" in n for n in c.notes)


def test_fewer_than_two_pairs_names_the_cell():
    with pytest.raises(ValueError, match=r"zinc/GIN: only 1 usable paired seed"):
        compare([0.5, 0.4], [0.4, np.nan], label="zinc/GIN")  # the baseline lacks a seed
    with pytest.raises(ValueError, match="zinc/GIN: only 1"):
        compare([0.5], [0.4], label="zinc/GIN")


def test_a_test_without_power_at_this_n_says_so():
    base = np.array([0.80, 0.81, 0.79, 0.82])
    c = compare(base - 0.05, base, DecisionSettings(test="wilcoxon"))  # every seed clearly worse
    assert c.evidence.p_floor == pytest.approx(1 / 16) and c.evidence.p_floor > c.decision.level
    assert c.decision.verdict is Verdict.INCONCLUSIVE  # cannot be REGRESSED: and it says why
    assert math.isinf(c.decision.mde)
    assert any("cannot reach α=0.05" in n for n in c.notes)
    assert compare(base - 0.05, base).decision.verdict is Verdict.REGRESSED  # paired-t can


@pytest.mark.parametrize("test", gs.PAIRED_TESTS)
def test_every_test_reaches_a_decision_with_enough_seeds(test):
    rng = np.random.default_rng(3)
    base, noise = rng.normal(0.8, 0.01, 12), rng.normal(0, 0.01, 12)
    assert compare(base - 0.03 + noise, base,
                   DecisionSettings(test=test)).decision.verdict is Verdict.REGRESSED
    c = compare(base + 0.03 + noise, base, DecisionSettings(test=test, kind="better"))
    assert c.decision.verdict is Verdict.BETTER and c.decision.ci.low > 0


def test_better_needs_evidence_above_the_margin():
    cand, base = _pair(2, n=10, shift=0.01)
    c = compare(cand, base, DecisionSettings(kind="better"))
    d = cand - base
    reference = stats.ttest_1samp(d, 0.0, alternative="greater").pvalue
    assert c.evidence.p_value == pytest.approx(reference)
    assert c.decision.verdict is Verdict.BETTER
    better = DecisionSettings(kind="better")
    assert compare(cand, base, DecisionSettings(kind="better", margin=0.03)).decision.verdict \
        is Verdict.INCONCLUSIVE
    assert compare(base - 0.03, base, better).decision.verdict is Verdict.REGRESSED


def test_equivalence_is_tost():
    cand, base = _pair(4, n=12, shift=0.0)
    d = cand - base
    for margin in (0.002, 0.02):
        c = compare(cand, base, DecisionSettings(kind="equivalent", margin=margin))
        p_lo = stats.ttest_1samp(d, -margin, alternative="greater").pvalue
        p_hi = stats.ttest_1samp(d, margin, alternative="less").pvalue
        assert c.evidence.p_value == pytest.approx(max(p_lo, p_hi), rel=1e-9)
        expected = Verdict.EQUIVALENT if max(p_lo, p_hi) <= 0.05 else Verdict.NOT_EQUIVALENT
        assert c.decision.verdict is expected
    assert {compare(cand, base, DecisionSettings(kind="equivalent", margin=m)).decision.verdict
            for m in (0.002, 0.02)} == {Verdict.EQUIVALENT, Verdict.NOT_EQUIVALENT}


# -- the smallest regression that matters (min_effect, δ) ----------------------------------------

def test_not_worse_at_min_effect_is_statsmodels_non_inferiority_test():
    from statsmodels.stats.weightstats import ttost_paired

    delta = 0.01
    rng = np.random.default_rng(11)
    seen = set()
    guarded = 0
    for _ in range(60):
        base = rng.normal(0.8, 0.03, 10)
        cand = base + rng.normal(rng.uniform(-0.015, 0.01), 0.008, 10)
        c = compare(cand, base, DecisionSettings(min_effect=delta))
        # ttost_paired's first test: H0 mean(cand - base) <= -δ (non-inferiority at δ)
        _, (t_low, p_low, _), _ = ttost_paired(cand, base, -delta, delta)
        p_reg = stats.ttest_rel(cand, base, alternative="less").pvalue
        p_bt = stats.ttest_rel(cand, base, alternative="greater").pvalue
        if c.evidence.skew.fires:   # the skew guard: Hall's t on the tail it tightens
            guarded += 1
            n, t = 10, stats.ttest_rel(cand, base).statistic
            a = stats.skew(cand - base, bias=False) / math.sqrt(n)

            def hall(x: float, a: float = a) -> float:
                return x + a * (x * x / 3 + 1 / 6) + a * a * x ** 3 / 27

            p_low = stats.t.sf(min(t_low, hall(t_low)), n - 1)
            p_reg = stats.t.cdf(max(t, hall(t)), n - 1)
            p_bt = stats.t.sf(min(t, hall(t)), n - 1)
        assert c.evidence.p_reverse == pytest.approx(p_low, rel=1e-9, abs=1e-15)
        regressed, better = p_reg <= 0.05, p_bt <= 0.05
        expected = (Verdict.REGRESSED if regressed else Verdict.BETTER if better
                    else Verdict.NOT_WORSE if p_low <= 0.05 else Verdict.INCONCLUSIVE)
        assert c.decision.verdict is expected
        seen.add(expected)
    assert seen == {Verdict.REGRESSED, Verdict.BETTER, Verdict.NOT_WORSE, Verdict.INCONCLUSIVE}
    assert 0 < guarded < 30   # both branches are checked


def test_a_significant_drop_below_min_effect_is_regressed_and_says_so():
    base = np.array([0.80, 0.82, 0.78, 0.81, 0.79, 0.83, 0.80, 0.84, 0.81, 0.82])
    cand = base - 0.003 + np.array([1, -1, 0, 1, -1, 0, 1, -1, 0, 0]) * 0.001
    c = compare(cand, base, DecisionSettings(min_effect=0.01))
    assert c.decision.verdict is Verdict.REGRESSED and c.below_min_effect
    assert c.evidence.p_reverse <= 0.05 and c.decision.ci.high < 0 and c.decision.ci.low > -0.01
    # accepting the drop is a margin decision: at margin = -ci.low it no longer fails
    accepted = compare(cand, base, DecisionSettings(margin=-c.decision.ci.low, min_effect=0.01))
    assert accepted.decision.verdict is Verdict.NOT_WORSE
    # a drop that matters is REGRESSED without that remark
    assert not compare(cand - 0.02, base, DecisionSettings(min_effect=0.01)).below_min_effect


def test_an_improvement_reads_better_not_not_worse():
    # +3.7 points must not read "NOT WORSE, p = 1.000"
    rng = np.random.default_rng(3)
    base = rng.normal(0.78, 0.02, 10)
    cand = base + 0.037 + rng.normal(0, 0.012, 10)
    c = compare(cand, base, DecisionSettings(min_effect=0.01))
    assert c.decision.verdict is Verdict.BETTER
    assert c.evidence.p_better == pytest.approx(
        stats.ttest_rel(cand, base, alternative="greater").pvalue, rel=1e-9)
    # with a margin, BETTER needs the improvement beyond it
    settings = DecisionSettings(margin=0.005, min_effect=0.01)
    assert compare(cand, base, settings).evidence.p_better == pytest.approx(
        stats.ttest_1samp(cand - base - 0.005, 0.0, alternative="greater").pvalue, rel=1e-9)


@pytest.mark.parametrize("min_effect", [0.0, 0.01, -0.01, float("nan"), float("inf")])
def test_min_effect_must_exceed_the_margin(min_effect):
    a, b = _pair(0)
    with pytest.raises(ValueError, match=r"cellX: `min_effect` .* larger than `margin` \(0\.01"):
        compare(a, b, DecisionSettings(margin=0.01, min_effect=min_effect), label="cellX")


@pytest.mark.parametrize("sd, delta, margin, alpha_reg", [
    (0.008, 0.01, 0.0, 0.05), (0.012, 0.01, 0.0, 0.05), (0.01, 0.02, 0.005, 0.05),
    (0.008, 0.01, 0.0, 0.05 / 4)])
def test_seeds_for_min_effect_against_statsmodels_and_simulation(sd, delta, margin, alpha_reg):
    from statsmodels.stats.power import TTestPower

    n = gs.seeds_for_min_effect(sd, delta, margin=margin, alpha_regressed=alpha_reg)
    # REGRESSED at a true -δ: the one-sample t power statsmodels solves for
    n_reg = TTestPower().solve_power(effect_size=(delta - margin) / sd, alpha=alpha_reg,
                                     power=0.8, alternative="larger")
    assert n >= math.ceil(n_reg)
    rng = np.random.default_rng(0)

    def rates(k):
        reps = 20_000
        t_nw, t_reg = stats.t.ppf(0.95, k - 1), stats.t.ppf(1 - alpha_reg, k - 1)
        out = []
        for true in (0.0, -delta):
            d = rng.normal(true, sd, (reps, k))
            m, se = d.mean(1), d.std(1, ddof=1) / math.sqrt(k)
            regressed = m + t_reg * se < -margin
            out.append(((m - t_nw * se > -delta) & ~regressed).mean() if true == 0
                       else regressed.mean())
        return out

    ok_nw, ok_reg = rates(n)
    assert ok_nw >= 0.8 - 0.01 and ok_reg >= 0.8 - 0.01
    if n > 2:
        low_nw, low_reg = rates(n - 1)
        assert min(low_nw, low_reg) < 0.8 + 0.01   # n is the smallest such n


def test_an_inconclusive_cell_plans_seeds_for_min_effect_not_the_observed_delta():
    # planning for the observed Δ (here ~0) would give absurd counts
    rng = np.random.default_rng(0)
    base = rng.normal(0.8, 0.02, 5)
    cand = base + rng.normal(0, 0.012, 5)
    c = compare(cand, base, DecisionSettings(min_effect=0.01))
    assert c.decision.verdict is Verdict.INCONCLUSIVE and abs(c.evidence.mean_diff) < 0.002
    # 444 seeds for a Δ of +0.15 pt
    observed = seeds_to_decide(c.evidence.mean_diff, c.evidence.sd_diff)
    assert c.plan.needed == gs.seeds_for_min_effect(c.evidence.sd_diff, 0.01) == 13 < observed


def test_holm_family_is_the_tested_cells_only():
    from statsmodels.stats.multitest import multipletests

    rng = np.random.default_rng(15)
    base = rng.normal(0.8, 0.02, (5, 8))
    cand = base.copy()
    cand[0] = base[0] - 0.01 + rng.normal(0, 0.01, 8)   # the one changed cell
    cells = [{"candidate": c, "baseline": b, "label": f"cell{i}"}
             for i, (c, b) in enumerate(zip(cand, base, strict=True))]
    many = compare_many(cells, DecisionSettings(min_effect=0.01))
    assert [m.decision.verdict for m in many[1:]] == [Verdict.IDENTICAL] * 4
    # raw p 0.017, alone in the family (the others IDENTICAL), stays REGRESSED
    assert many[0].evidence.p_value == pytest.approx(0.017, abs=0.003)
    assert many[0].decision.p_adjusted == many[0].evidence.p_value
    assert many[0].decision.verdict is Verdict.REGRESSED
    # two changed cells: Holm over those two, as statsmodels computes it
    cand[1] = base[1] - 0.004 + rng.normal(0, 0.01, 8)
    cells[1]["candidate"] = cand[1]
    many = compare_many(cells, DecisionSettings(min_effect=0.01))
    raw = [m.evidence.p_value for m in many[:2]]
    reject, adjusted, _, _ = multipletests(raw, alpha=0.05, method="holm")
    assert [m.decision.p_adjusted for m in many[:2]] == pytest.approx(adjusted)
    assert [m.decision.verdict is Verdict.REGRESSED for m in many[:2]] == list(reject)
    # the MDE is stated at the level Holm tested each cell at last: α/2 for the smaller p
    # (the first step), α/2 again for the other unless the first was rejected (then α)
    first = int(np.argmin(raw))
    for i, m in enumerate(many[:2]):
        level = 0.025 if i == first or not reject[first] else 0.05
        assert m.decision.regressed_level == pytest.approx(level)
        assert m.decision.mde == pytest.approx(mde(m.evidence.sd_diff, m.evidence.n, alpha=level),
                                               rel=1e-6)


@pytest.mark.parametrize("kind, margin", [("better", 0.0), ("equivalent", 0.02)])
def test_better_and_equivalent_gates_are_intersection_union_without_holm(kind, margin):
    rng = np.random.default_rng(4)
    base = rng.normal(0.8, 0.02, (3, 8))
    cand = base + 0.012 + rng.normal(0, 0.01, (3, 8))
    cells = [{"candidate": c, "baseline": b} for c, b in zip(cand, base, strict=True)]
    many = compare_many(cells, DecisionSettings(kind=kind, margin=margin))
    single = [compare(c, b, DecisionSettings(kind=kind, margin=margin))
              for c, b in zip(cand, base, strict=True)]
    assert many == single
    assert all(m.decision.p_adjusted == m.evidence.p_value for m in many)


# -- multiplicity ---------------------------------------------------------------------------------

def test_holm_against_a_hand_worked_example():
    # Sorted: 0.005*4 = 0.02, 0.01*3 = 0.03, 0.03*2 = 0.06, 0.04*1 = 0.04 -> running max 0.06.
    res = holm([0.01, 0.04, 0.03, 0.005], alpha=0.05)
    assert res.p_adjusted == pytest.approx((0.03, 0.06, 0.06, 0.02))
    assert res.reject == (True, False, False, True)
    assert holm([0.5, 0.9]).p_adjusted == (1.0, 1.0)  # capped at 1


def test_compare_many_applies_holm_to_the_regression_verdicts():
    rng = np.random.default_rng(24)
    base = rng.normal(0.8, 0.02, (3, 8))
    cand = base - 0.01 + rng.normal(0, 0.01, (3, 8))
    single = [compare(c, b, DecisionSettings(min_effect=0.01))
              for c, b in zip(cand, base, strict=True)]
    many = compare_many([{"candidate": c, "baseline": b, "label": f"cell{i}"}
                         for i, (c, b) in enumerate(zip(cand, base, strict=True))],
                        DecisionSettings(min_effect=0.01))
    expected = holm([s.evidence.p_value for s in single]).p_adjusted
    assert [m.decision.p_adjusted for m in many] == pytest.approx(expected)
    for s, m in zip(single, many, strict=True):
        assert m.evidence.p_value == s.evidence.p_value
        assert (m.decision.verdict is Verdict.REGRESSED) == (m.decision.p_adjusted <= 0.05)
    # This draw (raw p 0.034, 0.028, 0.005) has all three REGRESSED alone, one after Holm.
    assert [s.decision.verdict for s in single] == [Verdict.REGRESSED] * 3
    assert [m.decision.verdict for m in many] == [Verdict.INCONCLUSIVE] * 2 + [Verdict.REGRESSED]
    assert all(m.plan.needed and m.plan.needed > 8 for m in many[:2])


def test_compare_many_plans_seeds_at_the_callers_power_and_holm_alpha():
    rng = np.random.default_rng(24)
    base = rng.normal(0.8, 0.02, (3, 8))
    cand = base - 0.01 + rng.normal(0, 0.01, (3, 8))
    cells = [{"candidate": c, "baseline": b, "label": f"cell{i}"}
             for i, (c, b) in enumerate(zip(cand, base, strict=True))]
    for power in (0.8, 0.95):
        many = compare_many(cells, DecisionSettings(power=power, min_effect=0.01))
        for m in many[:2]:  # the two INCONCLUSIVE cells, REGRESSED planned at alpha / 3
            # (their MDE at the last step of the step-down, one cell rejected: alpha / 2)
            assert m.settings.power == power
            assert m.decision.regressed_level == pytest.approx(0.05 / 2)
            assert m.plan.needed == max(
                gs.seeds_for_min_effect(m.evidence.sd_diff, 0.01, alpha=0.05,
                                        alpha_regressed=0.05 / 3, power=power),
                m.evidence.n + 1)
    assert compare_many(cells, DecisionSettings(power=0.95, min_effect=0.01))[0].plan.needed > \
        compare_many(cells, DecisionSettings(min_effect=0.01))[0].plan.needed


# -- power and adequacy ---------------------------------------------------------------------------

def test_mde_is_the_shift_caught_with_80_percent_power():
    n, sd = 10, 0.02
    effect = mde(sd, n)
    approx = (stats.t.ppf(0.95, n - 1) + stats.t.ppf(0.8, n - 1)) * sd / math.sqrt(n)
    assert effect == pytest.approx(approx, rel=0.02)  # the t-quantile approximation is close
    # Independent check by simulation: one-sided paired t at the MDE rejects ~80% of the time.
    d = np.random.default_rng(0).normal(effect, sd, size=(4000, n))
    power = np.mean(stats.ttest_1samp(d, 0.0, axis=1, alternative="greater").pvalue <= 0.05)
    assert power == pytest.approx(0.8, abs=0.03)


def test_seeds_to_decide_is_the_smallest_n_with_enough_power():
    mean, sd = -0.01, 0.02
    n = seeds_to_decide(mean, sd, margin=0.0)

    def power(k):
        crit = stats.t.ppf(0.95, k - 1)
        return stats.nct.sf(crit, k - 1, abs(mean) / sd * math.sqrt(k))

    assert power(n) >= 0.8 > power(n - 1)
    assert seeds_to_decide(0.0, sd, margin=0.0) is None  # sits on the boundary
    assert seeds_to_decide(0.01, sd, margin=0.02, kind="better") is None
    assert seeds_to_decide(0.03, sd, margin=0.02, kind="equivalent") is None
    assert seeds_to_decide(0.01, 0.0, margin=0.0) == 2


def test_seeds_for_width():
    sd, width = 0.02, 0.02
    n = seeds_for_width(sd, width)
    full = [2 * stats.t.ppf(0.975, k - 1) * sd / math.sqrt(k) for k in (n - 1, n)]
    assert full[1] <= width < full[0]
    assert n == 18  # 2 * t_{0.975,17} * 0.02 / sqrt(18) = 0.0199
    assert seeds_for_width(0.0, 0.01) == 2


def test_false_alarm_rate_of_the_not_worse_gate_is_at_most_alpha():
    # No true difference: candidate and baseline share a seed effect, then independent noise.
    draws, n, alpha = 2000, 10, 0.05
    rng = np.random.default_rng(2024)
    seed_effect = rng.normal(0.8, 0.03, (draws, n))
    base = seed_effect + rng.normal(0, 0.01, (draws, n))
    cand = seed_effect + rng.normal(0, 0.01, (draws, n))
    settings = DecisionSettings(alpha=alpha)
    alarms = np.mean([compare(c, b, settings).decision.verdict is Verdict.REGRESSED
                      for c, b in zip(cand, base, strict=True)])
    se = math.sqrt(alpha * (1 - alpha) / draws)
    assert alarms <= alpha + 3 * se
    assert alarms >= alpha - 3 * se  # and it is calibrated, not just conservative


def test_pairing_detects_a_shift_that_overlapping_intervals_miss():
    rng = np.random.default_rng(3)
    seed_effect = rng.normal(0.80, 0.03, 10)  # big seed-to-seed spread, shared by both models
    base = seed_effect + rng.normal(0, 0.002, 10)
    cand = seed_effect + 0.01 + rng.normal(0, 0.002, 10)
    ci_c, ci_b = t_interval(cand), t_interval(base)
    assert ci_c.low < ci_b.high  # the two cells' intervals overlap a lot
    assert stats.ttest_ind(cand, base).pvalue > 0.05  # unpaired: no evidence
    assert compare(cand, base, DecisionSettings(kind="better")).decision.verdict is Verdict.BETTER
    assert compare(cand, base, DecisionSettings(kind="better", test="welch")).decision.verdict \
        is Verdict.INCONCLUSIVE


# -- folds and single held-out evaluations --------------------------------------------------------

def test_wilson_textbook_and_scipy():
    ci = wilson_interval(261, 300)
    assert (round(ci.low, 2), round(ci.high, 2)) == (0.83, 0.90)
    assert ci.low == pytest.approx(0.83, abs=0.005) and ci.high == pytest.approx(0.905, abs=0.005)
    rng = np.random.default_rng(0)
    for _ in range(20):
        n = int(rng.integers(1, 500))
        k = int(rng.integers(0, n + 1))
        level = float(rng.choice([0.9, 0.95, 0.99]))
        ref = stats.binomtest(k, n).proportion_ci(confidence_level=level, method="wilson")
        ours = wilson_interval(k, n, confidence_level=level)
        assert (ours.low, ours.high) == pytest.approx((ref.low, ref.high), abs=1e-12)


def test_bootstrap_metric_over_test_examples():
    rng = np.random.default_rng(1)
    y = rng.integers(0, 2, 300)
    pred = np.where(rng.random(300) < 0.87, y, 1 - y)
    acc = float(np.mean(pred == y))
    ci = bootstrap_metric(y, pred, lambda t, p: np.mean(t == p), n_resamples=2000)
    wilson = wilson_interval(int(np.sum(pred == y)), 300)
    assert ci.low < acc < ci.high
    assert (ci.low, ci.high) == pytest.approx((wilson.low, wilson.high), abs=0.01)
    assert ci == bootstrap_metric(y, pred, lambda t, p: np.mean(t == p), n_resamples=2000)


def test_corrected_resampled_ttest():
    rng = np.random.default_rng(4)
    a = rng.normal(0.80, 0.01, 10)
    b = a - 0.005 + rng.normal(0, 0.004, 10)
    # With no overlap correction it is exactly the paired t test.
    plain = corrected_resampled_ttest(a, b, n_train=10**12, n_test=1)
    assert plain.p_value == pytest.approx(stats.ttest_rel(a, b).pvalue, rel=1e-6)
    # 10-fold CV: n_test / n_train = 1/9 inflates the variance by (1/10 + 1/9) / (1/10).
    res = corrected_resampled_ttest(a, b, n_train=900, n_test=100)
    d = a - b
    t = d.mean() / math.sqrt((1 / 10 + 100 / 900) * d.var(ddof=1))
    assert res.p_value == pytest.approx(2 * stats.t.sf(abs(t), 9), rel=1e-9)
    assert res.p_value > plain.p_value


def test_describe_folds_has_no_confidence_level():
    summary = describe_folds([0.8, 0.82, 0.79, 0.81, 0.83])
    assert summary.mean == pytest.approx(0.81) and summary.k == 5
    assert summary.std == pytest.approx(np.std([0.8, 0.82, 0.79, 0.81, 0.83], ddof=1))
    assert not hasattr(summary, "ci") and "not a CI" in str(summary)


def test_mean_above_zero_p_is_scipys_one_sided_one_sample_t():
    rng = np.random.default_rng(7)
    for n in (3, 5, 10, 40):
        for shift in (-0.5, 0.0, 0.3, 1.0):
            x = rng.normal(shift, 1.0, n)
            want = stats.ttest_1samp(x, 0.0, alternative="greater").pvalue
            assert mean_above_zero_p(x) == pytest.approx(want, rel=1e-9, abs=1e-15)
    # no spread: the values decide exactly (scipy returns NaN here)
    assert mean_above_zero_p([0.5, 0.5, 0.5]) == 0.0
    assert mean_above_zero_p([-0.5, -0.5, -0.5]) == 1.0
