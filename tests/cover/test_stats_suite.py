"""The suite row: its t test against scipy's ttest_1samp, weighted Holm against statsmodels'
Holm and against closed testing by brute force, and the call's family error by simulation."""

from __future__ import annotations

import gc
import itertools

import numpy as np
import pytest
from scipy import stats
from statsmodels.stats.multitest import multipletests as _statsmodels_multipletests

from pytest_graphnetz.stats import Verdict
from pytest_graphnetz.stats.suite import (
    suite_differences,
    suite_family,
    suite_test,
    weighted_holm,
    weighted_holm_adjusted,
)


def multipletests(*args, **kwargs):
    """statsmodels' ``multipletests``, minus the ``gc.collect()`` its Holm branch runs on every
    call (0.3-0.5 s each in a process that holds torch): the reference's numbers, not its
    housekeeping."""
    collect = gc.collect
    gc.collect = lambda *a: 0
    try:
        return _statsmodels_multipletests(*args, **kwargs)
    finally:
        gc.collect = collect


def test_suite_differences_average_tasks_per_seed():
    base = np.array([[0.80, 0.70, 0.75], [0.60, 0.65, 0.62]])
    cand = base + np.array([[0.01, -0.02, 0.0], [-0.03, 0.0, 0.01]])
    np.testing.assert_allclose(suite_differences(cand, base), [-0.01, -0.01, 0.005])
    np.testing.assert_allclose(suite_differences(cand, base, higher_is_better=False),
                               [0.01, 0.01, -0.005])
    with pytest.raises(ValueError, match=r"\('b', 2\)"):
        suite_differences(np.where(cand == cand[1, 2], np.nan, cand), base, tasks=["a", "b"])
    with pytest.raises(ValueError, match="shaped"):
        suite_differences(cand[:, :2], base)


@pytest.mark.parametrize("margin, delta", [(0.0, None), (0.0, 0.01), (0.005, 0.02)])
def test_suite_test_matches_scipy(margin, delta):
    rng = np.random.default_rng(3)
    for _ in range(20):
        d = rng.normal(-0.004, 0.01, size=rng.integers(3, 25))
        res = suite_test(d, margin=margin, min_effect=delta, n_tasks=5)
        bound = margin if delta is None else delta
        ref = stats.ttest_1samp(d, -margin, alternative="less")
        assert res.p_value == pytest.approx(ref.pvalue, rel=1e-9)
        assert res.statistic == pytest.approx(ref.statistic, rel=1e-12)
        assert res.p_not_worse == pytest.approx(
            stats.ttest_1samp(d, -bound, alternative="greater").pvalue, rel=1e-9)
        assert res.p_better == pytest.approx(
            stats.ttest_1samp(d, margin, alternative="greater").pvalue, rel=1e-9)
        low, high = stats.ttest_1samp(d, 0.0).confidence_interval(0.9)
        assert tuple(res.confidence_interval()) == pytest.approx((low, high), rel=1e-9)
        expected = (Verdict.REGRESSED if ref.pvalue <= 0.05
                    else Verdict.BETTER if res.p_better <= 0.05
                    else Verdict.NOT_WORSE if res.p_not_worse <= 0.05
                    else Verdict.INCONCLUSIVE)
        assert res.verdict is expected


def test_suite_test_on_no_change_is_identical():
    assert suite_test(np.zeros(5)).verdict is Verdict.IDENTICAL
    with pytest.raises(ValueError, match="min_effect"):
        suite_test(np.ones(5), margin=0.01, min_effect=0.01)


def test_equal_weights_are_holm_as_statsmodels_computes_it():
    rng = np.random.default_rng(5)
    P = rng.uniform(0, 0.1, size=(30, 6)) ** rng.uniform(0.5, 2, size=(30, 1))
    reject, _ = weighted_holm(P, np.full(6, 1 / 6), 0.05)
    for row, got in zip(P, reject, strict=True):
        assert list(got) == list(multipletests(row, alpha=0.05, method="holm")[0])


def test_weighted_holm_is_closed_testing_with_weighted_bonferroni():
    """Brute force: reject H_i when every intersection containing i is rejected by weighted
    Bonferroni with the weights of that intersection renormalised."""
    rng = np.random.default_rng(9)
    w = np.array([0.5, 0.2, 0.2, 0.1])
    alpha = 0.05
    subsets = [s for r in range(1, 5) for s in itertools.combinations(range(4), r)]
    for _ in range(300):
        p = rng.uniform(0, 0.08, size=4)
        closed = []
        for i in range(4):
            closed.append(all(
                any(p[j] <= alpha * w[j] / w[list(s)].sum() for j in s)
                for s in subsets if i in s))
        assert list(weighted_holm(p, w, alpha)[0]) == closed


def test_weighted_holm_adjusted_p_is_the_smallest_rejecting_alpha():
    rng = np.random.default_rng(11)
    P = rng.uniform(0, 0.1, size=(30, 5)) ** rng.uniform(0.5, 2, size=(30, 1))
    for row in P:   # equal weights: statsmodels' Holm
        np.testing.assert_allclose(weighted_holm_adjusted(row, np.full(5, 0.2)),
                                   multipletests(row, method="holm")[1], rtol=1e-12)
    w = np.array([0.1, 0.1, 0.1, 0.2, 0.5])
    adjusted = np.array([weighted_holm_adjusted(row, w) for row in P])
    for a in np.linspace(0.001, 0.2, 400):   # every row at once (weighted_holm is vectorised)
        np.testing.assert_array_equal(weighted_holm(P, w, a)[0], adjusted <= a + 1e-12)


def test_suite_family_weights_and_levels():
    fam = suite_family([0.2, 0.011, 0.3], [0.02], alpha=0.05, suite_weight=0.5)
    # Suite first at 0.025 (rejected), then its weight goes to the cells: 0.011 <= 0.05/3.
    assert fam.reject_suite == (True,)
    assert fam.reject_cells == (False, True, False)
    assert fam.level_suite == (pytest.approx(0.025),)
    assert fam.level_cells[1] == pytest.approx(0.05 / 3)
    assert fam.level_cells[0] == pytest.approx(0.025)   # 0.05 · (1/6) / (1/3) at the stop
    holm = suite_family([0.2, 0.011, 0.3], [0.02], alpha=0.05, suite_weight=0.25)
    assert holm.reject_suite == tuple(multipletests([0.2, 0.011, 0.3, 0.02], 0.05, "holm")[0][3:])
    assert suite_family([0.01, 0.5], [], alpha=0.05).reject_cells == (True, False)


def test_call_family_error_holds_alpha_with_correlated_tasks():
    """No change on 5 tasks whose differences share a per-seed effect (correlation 0.5): the
    call fails (any REGRESSED among cells and the suite row) at most α of the time; testing
    the row at its own α beside Holm over the cells would not."""
    rng = np.random.default_rng(13)
    trials, tasks, seeds = 4000, 5, 10
    shared = rng.standard_normal((trials, 1, seeds))
    D = np.sqrt(0.5) * shared + np.sqrt(0.5) * rng.standard_normal((trials, tasks, seeds))
    cell_p = stats.ttest_1samp(D, 0.0, axis=2, alternative="less").pvalue
    suite_p = stats.ttest_1samp(D.mean(axis=1), 0.0, axis=1, alternative="less").pvalue
    family = weighted_holm(np.column_stack([cell_p, suite_p]),
                           np.array([0.1] * 5 + [0.5]), 0.05)[0].any(axis=1)
    separate = (weighted_holm(cell_p, np.full(5, 0.2), 0.05)[0].any(axis=1) | (suite_p <= 0.05))
    assert family.mean() <= 0.058
    assert separate.mean() > 0.065
