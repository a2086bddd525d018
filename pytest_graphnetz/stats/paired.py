"""Paired evidence on two aligned samples: two-sided paired tests (t, Wilcoxon, sign-flip,
bootstrap, Welch) and the one-sided evidence objects the verdicts are decided from."""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, replace
from typing import Any

import numpy as np
from numpy.typing import ArrayLike

from pytest_graphnetz.base.text import fmt_num
from pytest_graphnetz.stats._common import (
    PAIRED_TESTS,
    ConfidenceInterval,
    RngLike,
    as_vector,
    check_choice,
    check_level,
    fold_ratio,
    resolve_rng,
    standardized_effect,
    t_moments,
    t_p_greater,
    t_quantile,
)
from pytest_graphnetz.stats.resampling import (
    BOOTSTRAP_MIN_SEEDS,
    bootstrap_means,
    bootstrap_p_greater,
    bootstrap_p_less,
    expanded_level,
    expanded_p,
    percentile_ci,
    require_bootstrap_seeds,
    sign_matrix,
    signflip_p,
)


@dataclass(frozen=True)
class PairedResult:
    """A two-sided comparison of two aligned samples (``a - b``).

    - ``mean_diff``: mean of ``a - b`` over usable pairs (for ``welch``: difference of means).
    - ``ci``: interval for ``mean_diff`` at ``confidence_level``; ``interval`` says how it was
      built: ``"t"`` (paired-t, and the wilcoxon and permutation tests below 10 seeds),
      ``"welch"``, ``"bootstrap"`` (expanded percentile bootstrap of the mean paired difference,
      see :func:`~pytest_graphnetz.stats.resampling.expanded_level`; used for the bootstrap
      test, and for wilcoxon and permutation, whose own statistics are not the mean, from 10
      seeds), or ``"corrected-t"`` (Nadeau–Bengio).
    - ``effect_size``: Cohen's d_z = mean / sd of the paired differences (Cohen's d with the
      averaged variance for ``welch``); 0 when there is no difference at all and ±inf when the
      differences are constant and non-zero.
    - ``p_floor``: the smallest two-sided p-value this test can produce at this n (0 for t tests).
      When it exceeds ``1 - confidence_level`` the test cannot be significant; ``notes`` says so.
    - ``n_excluded``: pairs left out because either side was non-finite (named in ``notes``).
    """

    test: str
    n: int
    mean_diff: float
    ci: ConfidenceInterval
    p_value: float
    effect_size: float
    confidence_level: float
    interval: str
    p_floor: float = 0.0
    n_excluded: int = 0
    notes: tuple[str, ...] = ()


def _welch_moments(A: np.ndarray, B: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray,
                                                          np.ndarray]:
    """Per row of two unpaired samples: mean difference, its se, Welch df, pooled sd."""
    n1, n2 = A.shape[-1], B.shape[-1]
    va, vb = A.var(axis=-1, ddof=1), B.var(axis=-1, ddof=1)
    qa, qb = va / n1, vb / n2
    se = np.sqrt(qa + qb)
    denom = qa**2 / (n1 - 1) + qb**2 / (n2 - 1)
    with np.errstate(divide="ignore", invalid="ignore"):
        df = np.where(denom > 0, (qa + qb) ** 2 / np.where(denom > 0, denom, 1.0), n1 + n2 - 2.0)
    return A.mean(axis=-1) - B.mean(axis=-1), se, df, np.sqrt((va + vb) / 2)


def paired_test(a: ArrayLike, b: ArrayLike, *, test: str = "paired-t",
                confidence_level: float = 0.95, n_resamples: int = 10_000, rng: RngLike = None,
                label: str | None = None) -> PairedResult:
    """Two-sided comparison of ``a`` and ``b`` (n_seeds,), aligned by seed, on ``a - b``.

    ``test``: ``paired-t`` (Student's t on the differences), ``wilcoxon`` (signed-rank, scipy),
    ``permutation`` (sign-flip; exact for n <= 16, Monte-Carlo with ``n_resamples`` beyond),
    ``bootstrap`` (expanded percentile bootstrap of the mean difference, p by inverting it;
    refused below 10 seeds, where it is far too narrow),
    ``welch`` (unpaired Welch t, for seeds that cannot be paired). Pairs with a non-finite value
    on either side are excluded and named in ``notes``; fewer than 2 usable pairs is an error.
    """
    where = label or "paired test"
    a, b = as_vector(a, "a", where), as_vector(b, "b", where)
    if a.shape != b.shape:
        raise ValueError(f"{where}: `a` has {a.size} seeds but `b` has {b.size}; "
                         "align them by seed")
    keep = np.isfinite(a) & np.isfinite(b)
    require_pairs(int(keep.sum()), where, np.flatnonzero(~keep).tolist())
    result = paired_tests(a[None, keep], b[None, keep], test=test,
                          confidence_level=confidence_level, n_resamples=n_resamples, rng=rng)[0]
    if keep.all():
        return result
    dropped = np.flatnonzero(~keep).tolist()
    note = f"{len(dropped)} pair(s) excluded: a or b diverged at seed position(s) {dropped}"
    return replace(result, n_excluded=len(dropped), notes=(*result.notes, note))


def require_pairs(n: int, where: str, bad: Sequence) -> None:
    if n < 2:
        extra = f" (seeds {list(bad)} diverged on one side or both)" if bad else ""
        raise ValueError(
            f"{where}: only {n} usable paired seed(s){extra}; a paired comparison needs at "
            "least 2 — run more seeds (e.g. `--graphnetz-seeds=5`)"
        )


def paired_tests(A: ArrayLike, B: ArrayLike, *, test: str = "paired-t",
                 confidence_level: float = 0.95, n_resamples: int = 10_000,
                 rng: RngLike = None) -> list[PairedResult]:
    """:func:`paired_test` for every row of finite ``A``, ``B`` (k, n), vectorised over rows."""

    check_choice("test", test, PAIRED_TESTS)
    level = check_level(confidence_level)
    A, B = np.asarray(A, dtype=float), np.asarray(B, dtype=float)
    if A.shape != B.shape or A.ndim != 2 or not (np.isfinite(A).all() and np.isfinite(B).all()):
        raise ValueError("`A` and `B` must be finite arrays of the same (cells, seeds) shape")
    k, n = A.shape
    if n < 2:
        raise ValueError(f"a paired comparison needs at least 2 seeds, got {n}")
    D = _snap(A - B, _tolerance(A, B))
    mean, sd, se = t_moments(D)
    effect = standardized_effect(mean, sd)
    floor = np.zeros(k)
    interval = "t"
    if test in ("paired-t", "welch"):
        df: Any = n - 1
        if test == "welch":
            mean, se, df, pooled = _welch_moments(A, B)
            effect, interval = standardized_effect(mean, pooled), "welch"
        p_greater = t_p_greater(mean, se, df)
        p = np.minimum(1.0, 2 * np.minimum(p_greater, 1 - p_greater))
        half = t_quantile((1 + level) / 2, df) * se
        low, high = mean - half, mean + half
    else:
        if test == "bootstrap":
            require_bootstrap_seeds(n, "test='bootstrap'", _T_INSTEAD)
        gen = resolve_rng(rng)
        if n >= BOOTSTRAP_MIN_SEEDS:  # the expanded percentile interval
            means = bootstrap_means(D, n_resamples, gen)
            low, high = percentile_ci(means, expanded_level(level, n), D)
            interval = "bootstrap"
        else:  # a rank or sign-flip test on too few seeds to bootstrap: the t interval
            half = t_quantile((1 + level) / 2, n - 1) * se
            low, high = mean - half, mean + half
        if test == "bootstrap":
            p = np.minimum(1.0, 2 * np.minimum(expanded_p(bootstrap_p_greater(means), n),
                                               expanded_p(bootstrap_p_less(means), n)))
            floor[:] = 2 * expanded_p(1 / (n_resamples + 1), n)
        elif test == "permutation":
            signs, exact = sign_matrix(n, n_resamples, gen)
            p = signflip_p(D, signs, exact, alternative="two-sided")
            # Flipping a zero changes nothing: only the non-zero differences' signs count.
            floor[:] = (np.minimum(1.0, 2.0 ** (1 - np.count_nonzero(D, axis=-1))) if exact
                        else 2 / (n_resamples + 1))
        else:
            p = _wilcoxon_p(D, "two-sided")
            floor = np.minimum(1.0, 2.0 ** (1 - np.count_nonzero(D, axis=-1)))
    results = []
    for i in range(k):
        notes = floor_notes(test, n, float(floor[i]), 1 - level, "two-sided")
        results.append(PairedResult(
            test=test, n=n, mean_diff=float(mean[i]), ci=ConfidenceInterval(float(low[i]),
            float(high[i])), p_value=float(p[i]), effect_size=float(effect[i]),
            confidence_level=level, interval=interval, p_floor=float(floor[i]), notes=notes,
        ))
    return results


def _wilcoxon_p(D: np.ndarray, alternative: str) -> np.ndarray:
    """Wilcoxon signed-rank p per row of snapped differences ``D`` (k, n) (see :func:`_snap`).

    scipy's test with ``zero_method="pratt"``: a zero difference (a seed the change did not
    move) keeps its place in the ranking and its rank then drops out of the statistic, so the
    seeds that did not move still count as seeds, yet the null distribution is over the signs
    of the non-zero differences only (its floor is ``2**-nonzero`` one-sided). "wilcox" would
    re-rank as if the unmoved seeds had never run; "zsplit" lets them vote half for each side.
    As scipy's default method does: the exact distribution without zeros or ties (up to 50
    pairs); with them, the exact permutation distribution up to 13 pairs, which is enumerated
    here (the sign-flip test on the signed midranks, the same numbers as scipy's
    ``permutation_test`` path at a thousandth of its cost), and the tie-corrected normal
    approximation beyond. A row of zeros carries no evidence: p = 1.
    """
    from scipy import stats

    p = np.ones(D.shape[0])
    for i, row in enumerate(D):
        if not np.any(row != 0):
            continue
        mag = np.abs(row)
        if row.size <= _WILCOXON_ENUMERATE_MAX_N and np.unique(mag).size < row.size:
            signed = np.sign(row) * stats.rankdata(mag)  # Pratt: zeros ranked, then dropped
            signs, _ = sign_matrix(row.size, 0, np.random.default_rng(0))
            p[i] = signflip_p(signed[None, :], signs, True, 0.0, alternative)[0]
        else:
            p[i] = stats.wilcoxon(row, zero_method="pratt", alternative=alternative).pvalue
    return p


# scipy's wilcoxon enumerates sign flips for tied/zero data up to this many pairs.
_WILCOXON_ENUMERATE_MAX_N = 13


_T_INSTEAD = "the paired t-test (test='paired-t'; 'paired' in the gates)"


# Rounding noise is not a difference: two-decimal accuracies that each drop by exactly the
# margin give d + margin = -8.7e-18, which a test with zero spread would call significant.
# Differences are compared at the precision the values were stored at: within a few ulps of
# the data's magnitude they are equal. Values that survive a float32 round trip are taken to
# be float32 data (a GPU metric widened to float64 keeps float32's rounding).
_ULPS = 4


def _tolerance(*arrays: Any, shift: float = 0.0) -> np.ndarray:
    """Per row of the (k, n) ``arrays`` (the values a difference is taken of, and the ``shift``
    it is compared with): how far apart two such differences may be and still be equal."""
    X = np.concatenate([np.atleast_2d(np.asarray(a, dtype=float)) for a in arrays], axis=-1)
    X = np.where(np.isfinite(X), X, 0.0)
    with np.errstate(over="ignore"):
        single = np.all(X.astype(np.float32).astype(float) == X, axis=-1)
    eps = np.where(single, np.finfo(np.float32).eps, np.finfo(float).eps)
    return _ULPS * eps * np.maximum(np.abs(X).max(axis=-1), abs(shift))


def _snap(D: np.ndarray, tol: np.ndarray) -> np.ndarray:
    """Differences ``D`` (k, n) with rounding noise removed, per row at ``tol`` (k,): entries
    within ``tol`` of 0 become exact zeros, and magnitudes within ``tol`` of the next smaller
    one take its value, so the tests see the zeros and ties the data really have."""
    D = np.array(D, dtype=float)
    for row, t in zip(D, tol, strict=True):
        row[np.abs(row) <= t] = 0.0
        mag = np.abs(row)
        order = np.argsort(mag, kind="stable")
        sorted_mag = mag[order]
        starts = np.diff(sorted_mag, prepend=-np.inf) > t
        head = np.maximum.accumulate(np.where(starts, np.arange(mag.size), 0))
        mag[order] = sorted_mag[head]
        row[:] = np.sign(row) * mag
    return D


def floor_notes(test: str, n: int, floor: float, alpha: float, sides: str) -> tuple[str, ...]:
    if floor <= alpha:
        return ()
    # The floor is an exact fraction (1/16 = 0.0625): four significant digits, not fmt_p's three
    # decimals, so it reads exactly against α.
    return (f"{test} with n={n} cannot reach α={fmt_num(alpha)}: its smallest possible {sides} "
            f"p is {fmt_num(floor)}, so no result can be significant; add seeds or use "
            "test='paired-t'",)


class PairedEvidence:
    """One-sided p-values and bounds for the mean difference of one cell under one test.

    Every hypothesis "mean d vs c" is tested on ``d - c`` snapped to the data's precision
    (:func:`_snap`), so rounding never decides a verdict at the boundary.
    """

    interval: str = "t"

    def __init__(self, cand: np.ndarray, base: np.ndarray) -> None:
        self.cand, self.base = cand, base
        self.d = self.shifted(0.0)
        self.df = float(self.d.size - 1)  # degrees of freedom of the t the p-values read
        self.floor = 0.0  # smallest one-sided p, at the boundaries the verdict is decided at

    def shifted(self, c: float) -> np.ndarray:
        """``d - c``, with differences within rounding of each other (or of 0) made equal."""
        tol = _tolerance(self.cand, self.base, shift=c)
        return _snap((self.cand - self.base - c)[None, :], tol)[0]

    def floor_at(self, c: float) -> float:  # smallest one-sided p of a test against c
        return 0.0

    def p_greater(self, c: float) -> float:  # H1: mean difference > c
        raise NotImplementedError

    def p_less(self, c: float) -> float:  # H1: mean difference < c
        raise NotImplementedError

    def bounds(self, level: float) -> tuple[float, float]:  # two-sided interval at `level`
        raise NotImplementedError


class _TEvidence(PairedEvidence):
    def p_greater(self, c: float) -> float:
        mean, _, se = t_moments(self.shifted(c))
        return float(t_p_greater(mean, se, self.d.size - 1))

    def p_less(self, c: float) -> float:
        mean, _, se = t_moments(self.shifted(c))
        return float(t_p_greater(-mean, se, self.d.size - 1))

    def bounds(self, level: float) -> tuple[float, float]:
        return _t_bounds(self.d, level)


def _t_bounds(d: np.ndarray, level: float) -> tuple[float, float]:
    """The two-sided t interval at ``level`` for the mean of ``d``."""
    mean, _, se = t_moments(d)
    half = float(t_quantile((1 + level) / 2, d.size - 1)) * se
    return float(mean - half), float(mean + half)


class _WelchEvidence(PairedEvidence):
    interval = "welch"

    def __init__(self, cand: np.ndarray, base: np.ndarray) -> None:
        super().__init__(cand, base)
        mean, se, df, _ = _welch_moments(cand[None, :], base[None, :])
        self.mean, self.se, self.df = float(mean[0]), float(se[0]), float(df[0])

    def _gap(self, c: float) -> float:  # mean - c, zero within rounding
        gap = self.mean - c
        return 0.0 if abs(gap) <= _tolerance(self.cand, self.base, shift=c)[0] else gap

    def p_greater(self, c: float) -> float:
        return float(t_p_greater(self._gap(c), self.se, self.df))

    def p_less(self, c: float) -> float:
        return float(t_p_greater(-self._gap(c), self.se, self.df))

    def bounds(self, level: float) -> tuple[float, float]:
        half = float(t_quantile((1 + level) / 2, self.df)) * self.se
        return self.mean - half, self.mean + half


class _BootstrapEvidence(PairedEvidence):
    """The bootstrap test (expanded, :func:`expanded_p`); its bounds are the expanded
    percentile interval. The rank and sign-flip tests below share those bounds, and below
    :data:`BOOTSTRAP_MIN_SEEDS` seeds, where no bootstrap is made, use the t interval."""

    def __init__(self, cand: np.ndarray, base: np.ndarray, n_resamples: int,
                 gen: np.random.Generator) -> None:
        super().__init__(cand, base)
        self.n_resamples, n = n_resamples, self.d.size
        self.means = (bootstrap_means(self.d[None, :], n_resamples, gen)
                      if n >= BOOTSTRAP_MIN_SEEDS else None)
        self.interval = "bootstrap" if self.means is not None else "t"

    def floor_at(self, c: float) -> float:
        return float(expanded_p(1 / (self.n_resamples + 1), self.d.size))

    def _tol(self, c: float) -> float:
        return float(_tolerance(self.cand, self.base, shift=c)[0])

    def _resampled(self) -> np.ndarray:
        # evidence_of refuses test="bootstrap" below BOOTSTRAP_MIN_SEEDS: its p-values always
        # have resampled means (only the rank and sign-flip subclasses' bounds go without).
        if self.means is None:
            raise RuntimeError(f"no bootstrap below {BOOTSTRAP_MIN_SEEDS} seeds")
        return self.means

    def p_greater(self, c: float) -> float:
        raw = bootstrap_p_greater(self._resampled(), c, self._tol(c))[0]
        return float(expanded_p(raw, self.d.size))

    def p_less(self, c: float) -> float:
        raw = bootstrap_p_less(self._resampled(), c, self._tol(c))[0]
        return float(expanded_p(raw, self.d.size))

    def bounds(self, level: float) -> tuple[float, float]:
        if self.means is None:
            return _t_bounds(self.d, level)
        low, high = percentile_ci(self.means, expanded_level(level, self.d.size),
                                  self.d[None, :])
        return float(low[0]), float(high[0])


class _SignFlipEvidence(_BootstrapEvidence):
    def __init__(self, cand: np.ndarray, base: np.ndarray, n_resamples: int,
                 gen: np.random.Generator) -> None:
        super().__init__(cand, base, n_resamples, gen)
        self.signs, self.exact = sign_matrix(self.d.size, n_resamples, gen)

    def floor_at(self, c: float) -> float:
        # Flipping a zero changes nothing: only the non-zero differences' signs count.
        if self.exact:
            return 2.0 ** -np.count_nonzero(self.shifted(c))
        return 1 / (self.n_resamples + 1)

    def p_greater(self, c: float) -> float:
        return float(signflip_p(self.shifted(c)[None, :], self.signs, self.exact, 0.0,
                                "greater")[0])

    def p_less(self, c: float) -> float:
        return float(signflip_p(self.shifted(c)[None, :], self.signs, self.exact, 0.0,
                                "less")[0])


class _WilcoxonEvidence(_BootstrapEvidence):
    def floor_at(self, c: float) -> float:
        return 2.0 ** -np.count_nonzero(self.shifted(c))

    def p_greater(self, c: float) -> float:
        return float(_wilcoxon_p(self.shifted(c)[None, :], "greater")[0])

    def p_less(self, c: float) -> float:
        return float(_wilcoxon_p(self.shifted(c)[None, :], "less")[0])


def evidence_of(test: str, cand: np.ndarray, base: np.ndarray, n_resamples: int,
                rng: RngLike, at: Sequence[float] = (0.0,)) -> PairedEvidence:
    """The evidence of ``test`` on one cell; its ``floor`` is the largest one-sided floor of
    the tests against the boundaries in ``at`` (those the verdict is decided at)."""
    ev: PairedEvidence
    if test == "paired-t":
        ev = _TEvidence(cand, base)
    elif test == "welch":
        ev = _WelchEvidence(cand, base)
    else:
        if test == "bootstrap":
            require_bootstrap_seeds(cand.size, "test='bootstrap'", _T_INSTEAD)
        cls = {"bootstrap": _BootstrapEvidence, "permutation": _SignFlipEvidence,
               "wilcoxon": _WilcoxonEvidence}[test]
        ev = cls(cand, base, n_resamples, resolve_rng(rng))
    ev.floor = max(ev.floor_at(c) for c in at)
    return ev


def fold_corrected(candidate: ArrayLike, baseline: ArrayLike, *, k: int) -> np.ndarray:
    """Candidate values (n,) on which the *plain* paired t test against ``baseline`` is the
    Nadeau–Bengio corrected resampled t test of k-fold CV.

    The paired differences' deviations from their mean are scaled by ``sqrt(1 + J·ρ)``
    (J finite pairs, ρ = :func:`fold_ratio`): their mean is unchanged and their standard
    error becomes ``sqrt(1/J + ρ)·s``, the corrected one. Non-finite pairs are left as they
    are. Lets every verdict built on the paired t (gates, power, MDE) use the correction.
    """
    c, b = np.asarray(candidate, dtype=float), np.asarray(baseline, dtype=float)
    keep = np.isfinite(c) & np.isfinite(b)
    d = c[keep] - b[keep]
    if d.size < 2:
        return c.copy()
    out = c.copy()
    factor = math.sqrt(1 + d.size * fold_ratio(k))
    out[keep] = b[keep] + d.mean() + factor * (d - d.mean())
    return out


def mean_above_zero_p(x: ArrayLike) -> float:
    """One-sided p of the one-sample t test of H1 "mean of ``x`` > 0" (what
    ``scipy.stats.ttest_1samp(x, 0, alternative="greater")`` gives), ``x`` finite, n ≥ 2; with
    no spread the data decide exactly (0 when every value is above 0, 1 when below)."""
    d = np.asarray(x, dtype=float)
    se = float(np.std(d, ddof=1)) / np.sqrt(d.size)
    return float(t_p_greater(d.mean(), se, d.size - 1))
