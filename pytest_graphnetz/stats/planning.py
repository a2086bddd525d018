"""Power and adequacy: the minimum detectable effect of a paired t test, and how many seeds
would decide a cell or narrow an interval (exact noncentral t)."""

from __future__ import annotations

import math
from collections.abc import Callable
from functools import lru_cache

import numpy as np

from pytest_graphnetz.stats._common import KINDS, check_choice, check_level, fold_ratio, t_quantile


def _power(ncp: float, df: float, alpha: float, one_sided: bool) -> float:
    from scipy import special

    crit = t_quantile(1 - (alpha if one_sided else alpha / 2), df)
    return float(1 - special.nctdtr(df, ncp, crit))


def mde_from_se(se: float, df: float, *, alpha: float, power: float, one_sided: bool) -> float:
    """Smallest true mean shift detected with probability ``power`` by a t test whose standard
    error is ``se`` with ``df`` degrees of freedom (exact noncentral t, solved for the ncp)."""
    if se == 0:
        return 0.0
    if not alpha < power < 1:
        raise ValueError(f"`power` must lie in (alpha, 1), got {power!r}")
    hi = 4.0
    while _power(hi, df, alpha, one_sided) < power:
        hi *= 2
    ncp = brentq(lambda x: _power(x, df, alpha, one_sided) - power, 0.0, hi, xtol=1e-10)
    return float(ncp * se)


_RTOL = 4 * 2.220446049250313e-16   # scipy.optimize.brentq's default: 4 machine epsilons


def brentq(f: Callable[[float], float], a: float, b: float, *, xtol: float,
           maxiter: int = 100) -> float:
    """A root of ``f`` in ``[a, b]`` (``f(a)``, ``f(b)`` of opposite signs) by Brent's method:
    scipy.optimize.brentq's C loop step for step (same floats, same root to the bit: a test
    compares them), since importing scipy.optimize costs a gated session more CPU than the
    rest of its statistics (it pulls in scipy.linalg, sparse and spatial)."""
    xpre, xcur = float(a), float(b)
    xblk = fblk = spre = scur = 0.0
    fpre, fcur = _finite_value(f, xpre), _finite_value(f, xcur)
    if fpre * fcur > 0:
        raise ValueError("f(a) and f(b) must have different signs")
    if fpre == 0:
        return xpre
    if fcur == 0:
        return xcur
    for _ in range(maxiter):
        if fpre != 0 and fcur != 0 and math.copysign(1, fpre) != math.copysign(1, fcur):
            xblk, fblk = xpre, fpre
            spre = scur = xcur - xpre
        if abs(fblk) < abs(fcur):
            xpre, xcur, xblk = xcur, xblk, xcur
            fpre, fcur, fblk = fcur, fblk, fcur
        delta = (xtol + _RTOL * abs(xcur)) / 2
        sbis = (xblk - xcur) / 2
        if fcur == 0 or abs(sbis) < delta:
            return xcur
        if abs(spre) > delta and abs(fcur) < abs(fpre):
            if xpre == xblk:    # interpolate
                stry = -fcur * (xcur - xpre) / (fcur - fpre)
            else:               # extrapolate
                dpre = (fpre - fcur) / (xpre - xcur)
                dblk = (fblk - fcur) / (xblk - xcur)
                stry = -fcur * (fblk * dblk - fpre * dpre) / (dblk * dpre * (fblk - fpre))
            if 2 * abs(stry) < min(abs(spre), 3 * abs(sbis) - delta):
                spre, scur = scur, stry     # a good short step
            else:
                spre = scur = sbis          # bisect
        else:
            spre = scur = sbis              # bisect
        xpre, fpre = xcur, fcur
        xcur += scur if abs(scur) > delta else (delta if sbis > 0 else -delta)
        fcur = _finite_value(f, xcur)
    raise RuntimeError(f"brentq: no convergence after {maxiter} iterations, at {xcur!r}")


def _finite_value(f: Callable[[float], float], x: float) -> float:
    value = float(f(x))
    if math.isnan(value):
        raise ValueError(f"the function gave NaN at {x!r}")
    return value


def mde(sd_diff: float, n: int, *, alpha: float = 0.05, power: float = 0.8,
        one_sided: bool = True) -> float:
    """Minimum detectable effect of a paired t test on ``n`` pairs with difference sd ``sd_diff``.

    The true mean difference that a level-``alpha`` test rejects with probability ``power``,
    from the exact noncentral t distribution (not the normal or t-quantile approximation;
    two-sided ignores the far tail). In the units of the metric.
    """
    if n < 2:
        raise ValueError(f"`n` must be at least 2 paired seeds, got {n}")
    if not sd_diff >= 0:
        raise ValueError(f"`sd_diff` must be >= 0, got {sd_diff!r}")
    return mde_from_se(sd_diff / math.sqrt(n), n - 1, alpha=alpha, power=power, one_sided=one_sided)


def _smallest_n(ok: Callable[[int], bool], start: int = 2) -> int:
    """Smallest n >= start with ok(n), for ok monotone (False ... False True ...)."""
    if ok(start):
        return start
    lo, hi = start, start * 2
    while not ok(hi):
        lo, hi = hi, hi * 2
    while hi - lo > 1:
        mid = (lo + hi) // 2
        lo, hi = (lo, mid) if ok(mid) else (mid, hi)
    return hi


def seeds_to_decide(mean_diff: float, sd_diff: float, *, margin: float = 0.0, alpha: float = 0.05,
                    power: float = 0.8, kind: str = "not_worse") -> int | None:
    """Total paired seeds at which a true effect equal to ``mean_diff`` would be decided with
    probability ``power`` (one-sided paired t, noncentral t; for ``equivalent`` the power of
    the TOST, both one-sided tests rejecting, see :func:`tost_power`).

    The distance that must be resolved is the gap between ``mean_diff`` and the verdict's
    boundary: ``-margin`` for ``not_worse`` (either way: REGRESSED or NOT WORSE), ``+margin`` for
    ``better`` (only above it), the nearer of ``±margin`` for ``equivalent`` (only inside).
    None when no number of seeds would decide it (zero gap, or on the wrong side).
    """
    check_choice("kind", kind, KINDS)
    if kind == "not_worse":
        gap = abs(mean_diff + margin)
    elif kind == "better":
        gap = mean_diff - margin
    else:
        gap = margin - abs(mean_diff)
    if not gap > 0 or not math.isfinite(gap) or not math.isfinite(sd_diff):
        return None
    if sd_diff == 0:
        return 2
    if kind == "equivalent":  # both one-sided tests must reject: TOST power, not one side's
        return _smallest_n(
            lambda n: tost_power(mean_diff, sd_diff, margin, n, alpha) >= power)
    ratio = gap / sd_diff
    return _smallest_n(lambda n: _power(ratio * math.sqrt(n), n - 1, alpha, True) >= power)


def tost_power(mean_diff: float, sd_diff: float, margin: float, n: int, alpha: float) -> float:
    """Power of the paired TOST at ``n`` pairs: the chance that both one-sided t tests at
    ``alpha`` reject (``-margin`` below, ``+margin`` above) when the differences have true mean
    ``mean_diff`` and sd ``sd_diff``. Exact: given the sample sd s, TOST passes when the sample
    mean lies within ``±(margin - t_{1-α} s / sqrt(n))``; that normal probability is integrated
    over the distribution of s (Phillips 1990)."""
    from scipy import integrate, special, stats

    df = n - 1
    crit = float(t_quantile(1 - alpha, df))
    a, m = margin * math.sqrt(n) / sd_diff, mean_diff * math.sqrt(n) / sd_diff
    # v = s / sd_diff, distributed as chi_df / sqrt(df); past a / crit the bounds cross.
    root = math.sqrt(df)

    def passes(v: float) -> float:
        inside = special.ndtr(a - m - crit * v) - special.ndtr(-a - m + crit * v)
        return float(inside * root * stats.chi.pdf(root * v, df))

    return integrate.quad(passes, 0.0, a / crit, limit=200)[0]


def seeds_for_width(sd: float, max_width: float, *, confidence_level: float = 0.95) -> int:
    """Smallest n whose t interval ``2 · t_{1-α/2, n-1} · sd / sqrt(n)`` is at most ``max_width``
    wide (``sd``: the per-seed standard deviation, in metric units)."""
    level = check_level(confidence_level)
    if not max_width > 0:
        raise ValueError(f"`max_width` must be > 0, got {max_width!r}")
    if not sd >= 0 or not math.isfinite(sd):
        raise ValueError(f"`sd` must be a finite number >= 0, got {sd!r}")
    q = (1 + level) / 2
    return _smallest_n(lambda n: 2 * t_quantile(q, n - 1) * sd / math.sqrt(n) <= max_width)


def seeds_to_decide_beyond(mean_diff: float, sd_diff: float, n: int, *, margin: float, alpha: float,
                           kind: str, power: float = 0.8) -> int | None:
    """:func:`seeds_to_decide` for a cell that already has ``n`` seeds: never ``n`` or fewer.

    For paired-t an undecided effect always needs more than ``n``; for the other tests the
    power formula is approximate, but "fewer seeds than you have" would be wrong advice.
    """
    needed = seeds_to_decide(mean_diff, sd_diff, margin=margin, alpha=alpha, power=power,
                             kind=kind)
    return None if needed is None else max(needed, n + 1)



# Points of the quantile grid over which P(NOT WORSE) averages the sample sd (see below).
_SD_GRID = 2048


@lru_cache(maxsize=1024)
def _sd_grid(df: int) -> np.ndarray:
    """s / σ at the midpoints of :data:`_SD_GRID` equal-probability bins of s² ~ χ²(df)/df
    (read-only; the planning searches ask for the same df many times)."""
    from scipy import special

    q = (np.arange(_SD_GRID) + 0.5) / _SD_GRID
    s = np.sqrt(special.chdtri(df, q) / df)
    s.flags.writeable = False
    return s


def _p_not_worse(n: int, delta: float, margin: float, *, alpha: float,
                 alpha_regressed: float, mean: float = 0.0, rho: float = 0.0) -> float:
    """P(the paired t gate passes as NOT WORSE or BETTER) on ``n`` pairs whose differences are
    N(``mean``, 1): the lower ``1 - alpha`` bound lies above ``-delta`` *and* the REGRESSED test
    at ``alpha_regressed`` does not reject (it would win). ``delta``, ``margin``, ``mean`` in
    units of the sd of the differences.

    Given the sample sd s, the mean must exceed ``max(-delta + t1·s/√n, -margin - t2·s/√n)``
    (a normal probability); that is averaged over s² ~ χ²(n-1)/(n-1) on a grid of its quantiles.
    ``rho`` > 0: a k-fold CV task under the corrected resampled t test, whose standard error
    (and, in its model, the sd of the mean) is ``sqrt(1/n + rho)`` instead of ``1/√n``.
    """
    from scipy import special

    df = n - 1
    s = _sd_grid(df)
    t_nw, t_reg = t_quantile(1 - alpha, df), t_quantile(1 - alpha_regressed, df)
    root = 1 / math.sqrt(1 / n + rho)
    threshold = np.maximum(-delta + t_nw * s / root, -margin - t_reg * s / root)
    return float(special.ndtr((mean - threshold) * root).mean())


def seeds_for_min_effect(sd_diff: float, min_effect: float, *, margin: float = 0.0,
                         alpha: float = 0.05, alpha_regressed: float | None = None,
                         power: float = 0.8) -> int:
    """Paired seeds at which the ``not_worse`` verdict separates "no change" from "a drop of δ".

    The smallest n at which, with paired differences of sd ``sd_diff`` (metric units):

    - a true mean change of 0 reads NOT WORSE (or BETTER) with probability >= ``power``: the
      one-sided ``1 - alpha`` lower bound lies above ``-min_effect`` and the REGRESSED test does
      not reject;
    - a true change of ``-min_effect`` reads REGRESSED with probability >= ``power``: the
      one-sided test of "mean d >= -margin" rejects at ``alpha_regressed`` (default ``alpha``;
      the Holm level ``alpha / m`` in a family of m cells).

    Exact for the paired t test (noncentral t; the first also accounts for the REGRESSED test
    winning); a planning figure for the other tests.
    """
    if not (math.isfinite(min_effect) and min_effect > margin >= 0):
        raise ValueError(f"`min_effect` must be a number larger than `margin` ({margin!r}), "
                         f"got {min_effect!r}")
    if not (math.isfinite(sd_diff) and sd_diff >= 0):
        raise ValueError(f"`sd_diff` must be a finite number >= 0, got {sd_diff!r}")
    a_reg = alpha if alpha_regressed is None else alpha_regressed
    for name, level in (("alpha", alpha), ("alpha_regressed", a_reg)):
        if not 0 < level < 0.5:
            raise ValueError(f"`{name}` must lie in (0, 0.5), got {level!r}")
    if sd_diff == 0:
        return 2
    return _smallest_n(_min_effect_decided(sd_diff, min_effect, margin=margin, alpha=alpha,
                                           alpha_regressed=a_reg, power=power))


def _min_effect_decided(sd_diff: float, min_effect: float, *, margin: float, alpha: float,
                        alpha_regressed: float, power: float,
                        rho: float = 0.0) -> Callable[[int], bool]:
    """Whether n pairs separate "no change" from "a drop of δ" (:func:`seeds_for_min_effect`);
    ``rho``: the fold term of the corrected resampled t test (see :func:`_p_not_worse`)."""
    delta, gap = min_effect / sd_diff, (min_effect - margin) / sd_diff

    def decided(n: int) -> bool:
        scale = 1 / math.sqrt(1 / n + rho)
        return (_power(gap * scale, n - 1, alpha_regressed, True) >= power
                and _p_not_worse(n, delta, margin / sd_diff, alpha=alpha,
                                 alpha_regressed=alpha_regressed, rho=rho) >= power)

    return decided


def fold_seeds_for_min_effect(sd_diff: float, min_effect: float, *, folds: int,
                              margin: float = 0.0, alpha: float = 0.05,
                              alpha_regressed: float | None = None,
                              power: float = 0.8) -> int | None:
    """:func:`seeds_for_min_effect` for a ``folds``-fold CV task, judged by the corrected
    resampled t test: ``sd_diff`` is the sd of the per-fold differences (not the inflated sd the
    corrected test is computed on), and the standard error on J pairs is
    ``sqrt(1/J + ρ)·sd_diff``, ρ = 1/(k − 2) (Nadeau & Bengio 2003, whose model also takes it
    for the sd of the mean). It never falls below ``sqrt(ρ)·sd_diff``, so the power of either
    test tends to ``Φ(gap / (sqrt(ρ)·sd) − z)``, not 1: None when that limit is below ``power``
    for either target (no number of seeds decides it; see :func:`fold_min_effect_floor`)."""
    a_reg = alpha if alpha_regressed is None else alpha_regressed
    if fold_min_effect_floor(sd_diff, folds=folds, margin=margin, alpha=alpha,
                             alpha_regressed=a_reg, power=power) >= min_effect:
        return None
    if sd_diff == 0:
        return 2
    return _smallest_n(_min_effect_decided(sd_diff, min_effect, margin=margin, alpha=alpha,
                                           alpha_regressed=a_reg, power=power,
                                           rho=fold_ratio(folds)))


def fold_se_floor(sd_diff: float, *, folds: int) -> float:
    """The corrected resampled t's standard error on infinitely many seeds of a ``folds``-fold
    CV task whose per-fold differences have sd ``sd_diff``: ``sqrt(ρ)·sd_diff``, ρ = 1/(k − 2);
    no number of seeds brings it lower."""
    return math.sqrt(fold_ratio(folds)) * sd_diff


def fold_min_effect_floor(sd_diff: float, *, folds: int, margin: float = 0.0,
                          alpha: float = 0.05, alpha_regressed: float | None = None,
                          power: float = 0.8) -> float:
    """The δ that infinitely many seeds would just resolve on a ``folds``-fold CV task (per-fold
    sd of the differences ``sd_diff``): with the standard error at its floor ``sqrt(ρ)·sd``,
    ``δ = max((z_{1-α} + z_p)·floor, margin + (z_{1-α_reg} + z_p)·floor)`` (normal limit of
    the t). Any δ at or below it is resolved by no number of seeds."""
    from scipy import special

    a_reg = alpha if alpha_regressed is None else alpha_regressed
    floor = fold_se_floor(sd_diff, folds=folds)
    z_p = float(special.ndtri(power))
    return max((float(special.ndtri(1 - alpha)) + z_p) * floor,
               margin + (float(special.ndtri(1 - a_reg)) + z_p) * floor)
