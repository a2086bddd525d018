"""One design, one decider: the planner's and the power simulation's walk over the
looks (``run_schedule``, ``walk_looks`` on sufficient statistics) decides every cell as the real
gate does (``compare_reports`` on ``from_arrays`` reports), on random data and designs; and the
design itself against independent references: scipy's t quantile at the first look, a raw
simulation with ``scipy.stats.ttest_1samp`` for the spending at each look, statsmodels'
``TTestPower`` for a one-look design's power."""

from __future__ import annotations

import contextlib
import math

import numpy as np
import pytest
from hypothesis import HealthCheck, assume, example, given, settings
from hypothesis import strategies as st
from scipy import stats as sps

import pytest_graphnetz.stats.lookahead as lookahead
import pytest_graphnetz.stats.sequential as sq
from pytest_graphnetz import BenchmarkReport
from pytest_graphnetz.gates import compare_reports
from pytest_graphnetz.stats.boundaries import design, single_look
from pytest_graphnetz.stats.decisions import LOOK_VERDICTS
from pytest_graphnetz.stats.lookahead import PLAN_PATHS, LookPlan, sequential_power
from pytest_graphnetz.stats.sequential import run_schedule, sequential_holm
from pytest_graphnetz.stats.skew import skew_check


@contextlib.contextmanager
def _no_advice():
    """The gate without its INCONCLUSIVE advice (a second of simulation per row; it sets only
    ``seeds_needed`` and ``seeds_expected``, never a verdict). pytest's MonkeyPatch, not the
    fixture: hypothesis runs many examples in one function-scoped test."""
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(lookahead, "plan_next_look", lambda *a, **k: LookPlan(None, None))
        yield


def _reports(base: np.ndarray, cand: np.ndarray) -> tuple[BenchmarkReport, BenchmarkReport]:
    """(cells, seeds) arrays as one task with a model per cell, accuracy."""
    models = [f"m{i}" for i in range(base.shape[0])]
    seeds = list(range(base.shape[1]))
    return tuple(BenchmarkReport.from_arrays(x[None], tasks=["t"], models=models, seeds=seeds,
                                             metric="accuracy") for x in (cand, base))


cases = st.fixed_dictionaries({
    "first": st.integers(3, 12),
    "looks": st.integers(1, 3),
    "extra": st.integers(0, 3),           # seeds past the last look: unused
    "margin": st.sampled_from([0.0, 0.002, 0.005]),
    "delta_over": st.floats(0.002, 0.02),
    "sd": st.floats(0.002, 0.04),
    "shift": st.floats(-0.03, 0.02),
    "seed": st.integers(0, 2**32 - 1),
})


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(case=cases)
def test_run_schedule_decides_each_cell_as_the_gate(case: dict) -> None:
    """One cell per call (no Holm): the verdict and the seeds of the look it is reported at."""
    rng = np.random.default_rng(case["seed"])
    last = case["first"] * 2 ** (case["looks"] - 1)
    n = last + case["extra"]
    delta = case["margin"] + case["delta_over"]
    base = 0.7 + 0.02 * rng.standard_normal((1, n))
    cand = base + case["shift"] + case["sd"] * rng.standard_normal((1, n))
    with _no_advice():
        (v,) = compare_reports(*_reports(base, cand), margin=case["margin"], min_effect=delta,
                               first_look=case["first"])
    D = cand - base
    des = design(case["first"], n)   # the extra seeds may complete one more look
    verdict, used = run_schedule(D, des, margin=case["margin"], min_effect=delta,
                                 every_look=True)   # the gate reads every look it holds
    assert v.verdict == verdict[0].value
    assert v.comparison.evidence.n == used[0]
    assert last <= des.max_seeds <= n < 2 * des.max_seeds and used[0] <= des.max_seeds


@settings(max_examples=12, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(case=cases, m=st.integers(2, 4))
@example(case={"first": 5, "looks": 3, "extra": 0, "margin": 0.0, "delta_over": 0.01,
               "sd": 0.01, "shift": -0.012, "seed": 3}, m=3)   # REGRESSED at several looks
@example(case={"first": 4, "looks": 2, "extra": 0, "margin": 0.0, "delta_over": 0.015625,
               "sd": 0.0078125, "shift": -0.015625, "seed": 216}, m=4)   # NOT WORSE, then REGRESSED
def test_group_sequential_holm_decides_the_family_as_the_gate(case: dict, m: int) -> None:
    """m cells in one call: REGRESSED from ``sequential_holm`` fed by scipy's one-sided p of
    each cell at every look the run holds, in time order, the rest per cell as ``run_schedule``
    decides them.
    Futility is non-binding: a cell that crossed NOT WORSE or BETTER at an early look is still
    read at every later look, and a REGRESSED crossing there wins (DESIGN.md, "What passes was
    read"), so its history runs to the last look whatever it crossed before."""
    rng = np.random.default_rng(case["seed"])
    first = case["first"]
    last = first * 2 ** (case["looks"] - 1)
    delta = case["margin"] + case["delta_over"]
    base = 0.7 + 0.02 * rng.standard_normal((m, last))
    shifts = case["shift"] * rng.uniform(0, 1.5, size=(m, 1))
    cand = base + shifts + case["sd"] * rng.standard_normal((m, last))
    with _no_advice():
        got = compare_reports(*_reports(base, cand), margin=case["margin"], min_effect=delta,
                              first_look=first)
    D = cand - base
    des = design(first, last)
    # the histories below are the plain t's: a cell the skew guard corrects at a look is not
    # this case
    assume(not any(skew_check(row[:k]).corrects for row in D for k in des.looks))
    # NOT WORSE / BETTER per cell with REGRESSED switched off (its level ~0)
    alone, _ = run_schedule(D, des, margin=case["margin"], min_effect=delta,
                            regressed_alpha=1e-12, every_look=True)
    histories = [[float(sps.ttest_1samp(D[i, :k] + case["margin"], 0.0,
                                        alternative="less").pvalue) for k in des.looks]
                 for i in range(m)]
    # In time order, as the gate walks: after look k the family sees each open cell's p-values
    # up to look k; a rejected cell's history ends at the look the family rejected it at.
    ends = [len(des.looks)] * m
    for k in range(1, len(des.looks) + 1):
        family = sequential_holm([h[:min(k, e)] for h, e in zip(histories, ends, strict=True)],
                                 [des] * m)
        ends = [min(e, k) if family.rejected[i] else e for i, e in enumerate(ends)]
    for i, v in enumerate(got):
        if family.rejected[i]:
            assert v.verdict == "REGRESSED", (i, v.verdict, histories[i])
            assert v.comparison.evidence.n == des.looks[family.at_look[i]]
        else:
            assert v.verdict == alone[i].value, (i, v.verdict, histories[i])


@settings(max_examples=30, deadline=None)
@given(case=cases, rows=st.integers(1, 40))
def test_the_walk_on_sufficient_statistics_equals_the_walk_on_data(case: dict,
                                                                   rows: int) -> None:
    """``walk_looks`` fed by running sums (the power simulation's path) decides as
    ``walk_differences``."""
    rng = np.random.default_rng(case["seed"])
    n = case["first"] * 2 ** (case["looks"] - 1)
    delta = case["margin"] + case["delta_over"]
    D = case["shift"] + case["sd"] * rng.standard_normal((rows, n))
    des = design(case["first"], n)
    S, SS = np.cumsum(D, axis=1), np.cumsum(D * D, axis=1)
    M = np.maximum.accumulate(np.abs(D), axis=1)

    def at(k, size, open_):
        s, ss = S[open_, size - 1], SS[open_, size - 1]
        mean = s / size
        var = np.maximum(ss - size * mean * mean, 0.0) / (size - 1)
        return mean, np.sqrt(var), M[open_, size - 1], np.zeros(mean.shape, dtype=bool)

    kw = dict(margin=case["margin"], min_effect=delta, regressed_alpha=None)
    walked = sq.walk_looks(at, rows, des, sq.Hypotheses(**kw), upto=n)
    ran = sq.walk_differences(D, des, **kw, upto=n, skew_threshold=None)   # plain t
    assert walked[1].tolist() == ran[1].tolist()
    # A t within rounding of a boundary may tip either way between the two sums: all but
    # those agree.
    t_gap = np.abs(ran[2][6]) + np.abs(ran[2][5])
    same = walked[0] == ran[0]
    assert same.all() or np.all(t_gap[~same] < 1e-6), [LOOK_VERDICTS[c] for c in walked[0]]


def test_the_first_look_spends_rho_alpha_at_scipys_t_quantile() -> None:
    for first, alpha, rho in [(10, 0.05, 0.85), (5, 0.05, 0.85), (8, 0.025, 0.9), (3, 0.1, 0.7)]:
        d = design(first, 4 * first, alpha=alpha, rho=rho)
        assert d.critical[0] == pytest.approx(sps.t.isf(rho * alpha, first - 1), rel=1e-10)
        assert d.spent[0] == pytest.approx(rho * alpha)
        assert d.nominal[0] == pytest.approx(rho * alpha)
        assert d.spent == pytest.approx(tuple(alpha * (1 - (1 - rho) * first / n)
                                              for n in d.looks))
    one = single_look(12, alpha=0.05)
    assert one.critical[0] == pytest.approx(sps.t.isf(0.05, 11), rel=1e-10)


def test_the_crossings_at_each_look_are_the_spending_increments() -> None:
    """Raw normal data under the null (mean at REGRESSED's boundary), ``ttest_1samp`` on each
    look's prefix: the share first crossing at look k is α(n_k) − α(n_{k−1}), within 4.5
    Monte-Carlo standard errors; likewise NOT WORSE's boundary at a mean of −δ."""
    des = design(10, 40)
    paths = 100_000
    rng = np.random.default_rng(2024)
    X = rng.standard_normal((paths, 40))
    increments = np.diff((0.0, *des.spent))
    for sign in (-1, +1):   # REGRESSED: t <= −c; NOT WORSE (mirror image): t >= c
        running = np.ones(paths, dtype=bool)
        for k, n in enumerate(des.looks):
            t = sps.ttest_1samp(X[:, :n], 0.0, axis=1).statistic
            cross = running & (sign * t >= des.critical[k])
            p = increments[k]
            se = math.sqrt(p * (1 - p) / paths)
            assert abs(cross.mean() - p) < 4.5 * se, (sign, n, cross.mean(), p)
            running &= ~cross
    assert des.spent[-1] < 0.05


@pytest.mark.parametrize("sd, n", [(0.01, 10), (0.02, 10), (0.02, 25)])
def test_one_look_power_is_statsmodels_ttest_power(sd: float, n: int) -> None:
    """A one-look design at α: P(a drop of δ reads REGRESSED) is the one-sided t test's power at
    effect δ/sd (statsmodels), within 4.5 Monte-Carlo standard errors of the simulation's 2^15
    paths. P(no change reads NOT WORSE or BETTER) is NOT WORSE's power less the paths where
    REGRESSED also rejects (it takes precedence): against a raw simulation with scipy's t."""
    from statsmodels.stats.power import TTestPower

    delta = 0.01
    ok_null, ok_drop = sequential_power(sd, delta, single_look(n, alpha=0.05))
    expected = TTestPower().power(effect_size=delta / sd, nobs=n, alpha=0.05,
                                  alternative="larger")
    se = math.sqrt(expected * (1 - expected) / PLAN_PATHS)
    assert abs(ok_drop - expected) < 4.5 * se + 1e-12
    assert expected - 0.05 - 4.5 * se < ok_null < expected + 4.5 * se
    rng = np.random.default_rng(7)
    X = sd * rng.standard_normal((200_000, n))
    c = sps.t.isf(0.05, n - 1)
    t_reg = sps.ttest_1samp(X, 0.0, axis=1).statistic
    t_nw = sps.ttest_1samp(X, -delta, axis=1).statistic
    raw = np.mean((t_nw >= c) & (t_reg > -c))
    se_null = math.sqrt(raw * (1 - raw) / PLAN_PATHS + raw * (1 - raw) / X.shape[0])
    assert abs(ok_null - raw) < 4.5 * se_null
