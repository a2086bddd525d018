"""Paired evidence on two aligned samples: two-sided paired tests (t, Wilcoxon, sign-flip,
bootstrap, Welch) and the one-sided evidence objects the verdicts are decided from."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, replace
from typing import Any

import numpy as np

from ._common import (
    PAIRED_TESTS,
    ConfidenceInterval,
    RngLike,
    _check_choice,
    _check_level,
    _effect,
    _rng,
    _t_moments,
    _t_p_greater,
    _t_quantile,
    _vector,
)
from ._resampling import (
    _bootstrap_means,
    _bootstrap_p_greater,
    _bootstrap_p_less,
    _percentile_ci,
    _sign_matrix,
    _signflip_p,
)


@dataclass(frozen=True)
class PairedResult:
    """A two-sided comparison of two aligned samples (``a - b``).

    - ``mean_diff``: mean of ``a - b`` over usable pairs (for ``welch``: difference of means).
    - ``ci``: interval for ``mean_diff`` at ``confidence_level``; ``interval`` says how it was
      built: ``"t"`` (paired-t), ``"welch"``, ``"bootstrap"`` (percentile bootstrap of the mean
      paired difference; used for the bootstrap, wilcoxon and permutation tests, whose own
      statistics are not the mean), or ``"corrected-t"`` (Nadeau–Bengio).
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


def paired_test(a: Any, b: Any, *, test: str = "paired-t", confidence_level: float = 0.95,
                n_resamples: int = 10_000, rng: RngLike = None,
                label: str | None = None) -> PairedResult:
    """Two-sided comparison of ``a`` and ``b`` (n_seeds,), aligned by seed, on ``a - b``.

    ``test``: ``paired-t`` (Student's t on the differences), ``wilcoxon`` (signed-rank, scipy),
    ``permutation`` (sign-flip; exact for n <= 16, Monte-Carlo with ``n_resamples`` beyond),
    ``bootstrap`` (percentile bootstrap of the mean difference; p by inverting it),
    ``welch`` (unpaired Welch t, for seeds that cannot be paired). Pairs with a non-finite value
    on either side are excluded and named in ``notes``; fewer than 2 usable pairs is an error.
    """
    where = label or "paired test"
    a, b = _vector(a, "a", where), _vector(b, "b", where)
    if a.shape != b.shape:
        raise ValueError(f"{where}: `a` has {a.size} seeds but `b` has {b.size}; "
                         "align them by seed")
    keep = np.isfinite(a) & np.isfinite(b)
    _require_pairs(int(keep.sum()), where, np.flatnonzero(~keep).tolist())
    result = paired_tests(a[None, keep], b[None, keep], test=test,
                          confidence_level=confidence_level, n_resamples=n_resamples, rng=rng)[0]
    if keep.all():
        return result
    dropped = np.flatnonzero(~keep).tolist()
    note = f"{len(dropped)} pair(s) excluded: a or b diverged at seed position(s) {dropped}"
    return replace(result, n_excluded=len(dropped), notes=(*result.notes, note))


def _require_pairs(n: int, where: str, bad: Sequence) -> None:
    if n < 2:
        extra = f" (seeds {list(bad)} diverged on one side or both)" if bad else ""
        raise ValueError(
            f"{where}: only {n} usable paired seed(s){extra}; a paired comparison needs at "
            "least 2 — run more seeds (e.g. `--graphnetz-seeds=5`)"
        )


def paired_tests(A: Any, B: Any, *, test: str = "paired-t", confidence_level: float = 0.95,
                 n_resamples: int = 10_000, rng: RngLike = None) -> list[PairedResult]:
    """:func:`paired_test` for every row of finite ``A``, ``B`` (k, n), vectorised over rows."""

    _check_choice("test", test, PAIRED_TESTS)
    level = _check_level(confidence_level)
    A, B = np.asarray(A, dtype=float), np.asarray(B, dtype=float)
    if A.shape != B.shape or A.ndim != 2 or not (np.isfinite(A).all() and np.isfinite(B).all()):
        raise ValueError("`A` and `B` must be finite arrays of the same (cells, seeds) shape")
    k, n = A.shape
    if n < 2:
        raise ValueError(f"a paired comparison needs at least 2 seeds, got {n}")
    D = A - B
    mean, sd, se = _t_moments(D)
    effect = _effect(mean, sd)
    floor = np.zeros(k)
    interval = "t"
    if test in ("paired-t", "welch"):
        df: Any = n - 1
        if test == "welch":
            mean, se, df, pooled = _welch_moments(A, B)
            effect, interval = _effect(mean, pooled), "welch"
        p_greater = _t_p_greater(mean, se, df)
        p = np.minimum(1.0, 2 * np.minimum(p_greater, 1 - p_greater))
        half = _t_quantile((1 + level) / 2, df) * se
        low, high = mean - half, mean + half
    else:
        means = _bootstrap_means(D, n_resamples, _rng(rng))
        low, high = _percentile_ci(means, level, D)
        interval = "bootstrap"
        if test == "bootstrap":
            p = np.minimum(1.0, 2 * np.minimum(_bootstrap_p_greater(means),
                                               _bootstrap_p_less(means)))
            floor[:] = 2 / (n_resamples + 1)
        elif test == "permutation":
            signs, exact = _sign_matrix(n, n_resamples, _rng(rng))
            p = _signflip_p(D, signs, exact, alternative="two-sided")
            floor[:] = 2 / signs.shape[0] if exact else 2 / (n_resamples + 1)
        else:
            p = _wilcoxon_p(D, "two-sided")
            floor = np.minimum(1.0, 2.0 ** (1 - np.count_nonzero(D, axis=-1)))
    results = []
    for i in range(k):
        notes = _floor_notes(test, n, float(floor[i]), 1 - level, "two-sided")
        results.append(PairedResult(
            test=test, n=n, mean_diff=float(mean[i]), ci=ConfidenceInterval(float(low[i]),
            float(high[i])), p_value=float(p[i]), effect_size=float(effect[i]),
            confidence_level=level, interval=interval, p_floor=float(floor[i]), notes=notes,
        ))
    return results


def _wilcoxon_p(D: np.ndarray, alternative: str) -> np.ndarray:
    """Wilcoxon signed-rank p per row (scipy); a row of exact zeros carries no evidence: p = 1."""
    from scipy import stats

    p = np.ones(D.shape[0])
    live = np.any(D != 0, axis=-1)
    if live.any():
        p[live] = stats.wilcoxon(D[live], alternative=alternative, axis=-1).pvalue
    return p


def _floor_notes(test: str, n: int, floor: float, alpha: float, sides: str) -> tuple[str, ...]:
    if floor <= alpha:
        return ()
    return (f"{test} with n={n} cannot reach α={alpha:g}: its smallest possible {sides} p is "
            f"{floor:.4g}, so no result can be significant; add seeds or use test='paired-t'",)


class _Evidence:
    """One-sided p-values and bounds for the mean difference of one cell under one test."""

    floor: float = 0.0  # smallest one-sided p the test can produce
    interval: str = "t"

    def p_greater(self, c: float) -> float:  # H1: mean difference > c
        raise NotImplementedError

    def p_less(self, c: float) -> float:  # H1: mean difference < c
        raise NotImplementedError

    def bounds(self, level: float) -> tuple[float, float]:  # two-sided interval at `level`
        raise NotImplementedError


class _TEvidence(_Evidence):
    def __init__(self, mean: float, se: float, df: float) -> None:
        self.mean, self.se, self.df = mean, se, df

    def p_greater(self, c: float) -> float:
        return float(_t_p_greater(self.mean, self.se, self.df, c))

    def p_less(self, c: float) -> float:
        return float(_t_p_greater(-self.mean, self.se, self.df, -c))

    def bounds(self, level: float) -> tuple[float, float]:
        half = float(_t_quantile((1 + level) / 2, self.df)) * self.se
        return self.mean - half, self.mean + half


class _BootstrapEvidence(_Evidence):
    interval = "bootstrap"

    def __init__(self, d: np.ndarray, n_resamples: int, gen: np.random.Generator) -> None:
        self.d = d
        self.means = _bootstrap_means(d[None, :], n_resamples, gen)
        self.floor = 1 / (n_resamples + 1)

    def p_greater(self, c: float) -> float:
        return float(_bootstrap_p_greater(self.means, c)[0])

    def p_less(self, c: float) -> float:
        return float(_bootstrap_p_less(self.means, c)[0])

    def bounds(self, level: float) -> tuple[float, float]:
        low, high = _percentile_ci(self.means, level, self.d[None, :])
        return float(low[0]), float(high[0])


class _SignFlipEvidence(_BootstrapEvidence):
    def __init__(self, d: np.ndarray, n_resamples: int, gen: np.random.Generator) -> None:
        super().__init__(d, n_resamples, gen)
        self.signs, self.exact = _sign_matrix(d.size, n_resamples, gen)
        self.floor = 1 / self.signs.shape[0] if self.exact else 1 / (n_resamples + 1)

    def p_greater(self, c: float) -> float:
        return float(_signflip_p(self.d[None, :], self.signs, self.exact, c, "greater")[0])

    def p_less(self, c: float) -> float:
        return float(_signflip_p(self.d[None, :], self.signs, self.exact, c, "less")[0])


class _WilcoxonEvidence(_BootstrapEvidence):
    def __init__(self, d: np.ndarray, n_resamples: int, gen: np.random.Generator) -> None:
        super().__init__(d, n_resamples, gen)
        self.floor = 2.0 ** -d.size

    def p_greater(self, c: float) -> float:
        return float(_wilcoxon_p((self.d - c)[None, :], "greater")[0])

    def p_less(self, c: float) -> float:
        return float(_wilcoxon_p((self.d - c)[None, :], "less")[0])


def _evidence(test: str, cand: np.ndarray, base: np.ndarray, n_resamples: int,
              rng: RngLike) -> _Evidence:
    d = cand - base
    if test == "paired-t":
        mean, _, se = _t_moments(d)
        return _TEvidence(float(mean), float(se), d.size - 1)
    if test == "welch":
        mean, se, df, _ = _welch_moments(cand[None, :], base[None, :])
        ev = _TEvidence(float(mean[0]), float(se[0]), float(df[0]))
        ev.interval = "welch"
        return ev
    cls = {"bootstrap": _BootstrapEvidence, "permutation": _SignFlipEvidence,
           "wilcoxon": _WilcoxonEvidence}[test]
    return cls(d, n_resamples, _rng(rng))

