"""One level per row: in a call of several tested cells, a row's MDE and its interval's upper
end are at the level its REGRESSED was actually tested at (the step of Holm's step-down that
rejected it, or the last step for a row not rejected), its lower end at the look's level, and
the message states exactly those levels. Recomputed here from the seeds with scipy and
statsmodels, Holm's steps written out by hand.
"""

from __future__ import annotations

import numpy as np
import pytest

sps = pytest.importorskip("scipy.stats")
TTestPower = pytest.importorskip("statsmodels.stats.power").TTestPower
from pytest_graphnetz import BenchmarkReport, assert_not_worse  # noqa: E402
from pytest_graphnetz.base.text import fmt_num, fmt_p  # noqa: E402
from pytest_graphnetz.gates.comparing.compare import compare_reports  # noqa: E402

RHO_ALPHA = 0.85 * 0.05   # what look 1 of the schedule spends at α = 0.05 (docs/guarantees.md)


def _reports(shifts: list[float], n: int = 10, seed: int = 4):
    rng = np.random.default_rng(seed)
    base = 0.8 + 0.02 * rng.standard_normal((len(shifts), 1, n))
    cand = base + np.array(shifts)[:, None, None] + 0.01 * rng.standard_normal(base.shape)
    tasks = [f"t{i}" for i in range(len(shifts))]
    make = [BenchmarkReport.from_arrays(x, tasks=tasks, models=["m"], seeds=range(n),
                                        metric="accuracy") for x in (base, cand)]
    return make[0], make[1], base[:, 0, :], cand[:, 0, :]


def _holm_steps(p: np.ndarray, alpha: float) -> list[float]:
    """Per cell, the level Holm's step-down tested it at last (by hand)."""
    m, order, steps = len(p), np.argsort(p), [0.0] * len(p)
    rejected = 0
    for j, i in enumerate(order):
        if p[i] <= alpha / (m - j):
            steps[i], rejected = alpha / (m - j), rejected + 1
        else:
            break
    for i in order[rejected:]:
        steps[i] = alpha / (m - rejected)
    return steps


@pytest.mark.parametrize("shifts", [[-0.05, -0.03, 0.0], [-0.05, 0.0, 0.002, 0.001]],
                         ids=["two-rejected", "one-rejected"])
def test_mde_and_both_ends_are_at_the_level_each_row_was_tested_at(shifts) -> None:
    base, cand, b, c = _reports(shifts)
    with pytest.raises(AssertionError) as info:
        assert_not_worse(cand, base)
    message = str(info.value)
    verdicts = compare_reports(cand, base)
    d = c - b
    p = np.array([sps.ttest_1samp(x, 0.0, alternative="less").pvalue for x in d])
    steps = _holm_steps(p, RHO_ALPHA)
    assert sum(v.verdict == "REGRESSED" for v in verdicts) == sum(
        p[i] <= steps[i] for i in range(len(p)))
    for i, v in enumerate(verdicts):
        x, comp = d[i], v.comparison
        n, se = len(x), x.std(ddof=1) / np.sqrt(len(x))
        assert comp.decision.regressed_level == pytest.approx(steps[i], rel=1e-9)
        assert comp.decision.ci.low == pytest.approx(x.mean() - sps.t.isf(RHO_ALPHA, n - 1) * se)
        assert comp.decision.ci.high == pytest.approx(x.mean() + sps.t.isf(steps[i], n - 1) * se)
        mde = TTestPower().solve_power(nobs=n, alpha=steps[i], power=0.8,
                                       alternative="larger") * x.std(ddof=1)
        assert comp.decision.mde == pytest.approx(mde, rel=1e-4)
        if v.verdict == "REGRESSED":   # its interval excludes −margin at the rejecting level
            assert comp.decision.ci.high < 0
            assert (f"upper end at {fmt_num(steps[i])}, REGRESSED's, after Holm" in message)
            assert (f"at REGRESSED's one-sided level {fmt_num(steps[i])}, after Holm"
                    in message)
    # one α in the message: the call's; the look's level is named as a level
    assert "alpha 0.05 (this look: one-sided level 0.0425)" in message
    assert "alpha 0.0425" not in message


def test_the_first_line_fits_a_terminal_and_a_better_row_shows_the_p_of_its_gain() -> None:
    from pytest_graphnetz.base.text import FIRST_LINE_WIDTH

    base, cand, b, c = _reports([-0.05, 0.03, 0.0])
    with pytest.raises(AssertionError) as info:
        assert_not_worse(cand, base)
    first, second = str(info.value).split("\n")[:2]
    assert first == "assert_not_worse: 1 of 3 cell(s) failed: t0/m REGRESSED"
    assert len(first) <= FIRST_LINE_WIDTH and second.startswith("Paired regression gate")
    verdicts = compare_reports(cand, base)
    better = verdicts[1]
    assert better.verdict == "BETTER"
    x = c[1] - b[1]
    # this cell's differences are skewed (+1.4, past the guard), so the gain's p is the guarded
    # t: Hall's skew-corrected t (Hall 1992, written out here from the textbook formula) where
    # it is stricter than the plain t's (BETTER: the smaller statistic)
    assert "skew-guarded t" in better.row()["note"]
    t, n = sps.ttest_1samp(x, 0.0).statistic, x.size
    a = sps.skew(x, bias=False) / np.sqrt(n)
    gain = sps.t.sf(min(t, t + a * (t * t / 3 + 1 / 6) + a * a * t ** 3 / 27), n - 1)
    assert better.p == pytest.approx(gain, rel=1e-9)
    assert better.p != pytest.approx(better.comparison.evidence.p_value)   # not REGRESSED's
    assert better.row()["p"] == fmt_p(gain)
    assert "of the gain" in better.message()
