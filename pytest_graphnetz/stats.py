"""Statistics core: intervals, paired tests, three-way verdicts, power and seeds-needed.

Pure functions over numpy arrays returning frozen dataclasses; numpy + scipy only (never torch
or pytest). scipy is imported inside the functions that use it, so importing this module stays
cheap. Every function that draws takes ``rng``: ``None`` means the fixed seed
:data:`DEFAULT_SEED` (so a report's views are deterministic), an ``int`` seeds a fresh
``numpy.random.Generator``, and a ``Generator`` is drawn from as is.

Conventions:

- A cell is a 1-D array of per-seed values, shape ``(n_seeds,)``. A non-finite entry (NaN, ±inf)
  is a diverged seed: counted and reported, never dropped silently.
- Paired arrays (``candidate``/``baseline``, ``a``/``b``) are already aligned by seed.
- ``compare`` works on ``d_s = candidate_s - baseline_s``, sign-flipped for lower-is-better
  metrics, so ``d > 0`` always means "candidate is better".
- A p-value "rejects at α" when ``p <= alpha``.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, replace
from enum import Enum
from typing import Any

import numpy as np

from .text import format_table, markdown_table

DEFAULT_SEED = 0
CI_METHODS = ("t", "bootstrap")
PAIRED_TESTS = ("paired-t", "wilcoxon", "permutation", "bootstrap", "welch")
KINDS = ("not_worse", "better", "equivalent")
# Up to 2^16 = 65,536 sign vectors the sign-flip test enumerates them all (exact p-values);
# beyond that it draws `n_resamples` random sign vectors (Monte-Carlo).
EXACT_SIGNFLIP_MAX_N = 16

RngLike = np.random.Generator | int | None


# -- result types ---------------------------------------------------------------------------------

@dataclass(frozen=True)
class ConfidenceInterval:
    """A two-sided interval ``[low, high]``; unpacks as ``low, high = ci``."""

    low: float
    high: float

    @property
    def width(self) -> float:
        return self.high - self.low

    def __iter__(self) -> Iterator[float]:
        return iter((self.low, self.high))


@dataclass(frozen=True)
class CellStats:
    """Description of one cell's per-seed values.

    ``n`` counts the finite values the statistics are computed over, ``n_diverged`` the
    non-finite ones (diverged seeds). ``std`` is the sample standard deviation (ddof=1),
    ``sem = std / sqrt(n)``. With ``n < 2`` the spread and the interval are NaN (undefined).
    """

    n: int
    n_diverged: int
    mean: float
    std: float
    sem: float
    ci: ConfidenceInterval
    method: str
    confidence_level: float


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


class Verdict(str, Enum):
    """Outcome of one gated cell.

    ``IDENTICAL`` (every paired difference exactly 0) passes ``not_worse`` and ``equivalent``
    gates and fails a ``better`` gate; the others read as their names.
    """

    REGRESSED = "REGRESSED"
    NOT_WORSE = "NOT WORSE"
    INCONCLUSIVE = "INCONCLUSIVE"
    IDENTICAL = "IDENTICAL"
    BETTER = "BETTER"
    EQUIVALENT = "EQUIVALENT"
    NOT_EQUIVALENT = "NOT EQUIVALENT"

    def __str__(self) -> str:
        return self.value


@dataclass(frozen=True)
class Comparison:
    """The verdict on one cell: candidate against baseline on paired seeds.

    Differences ``d = candidate - baseline`` are sign-flipped for lower-is-better metrics, so
    ``mean_diff > 0`` means the candidate is better. Fields:

    - ``n``: usable pairs; ``sd_diff``: their sample standard deviation.
    - ``ci``: two-sided ``1 - alpha`` interval of ``mean_diff``; ``lower_bound``: one-sided
      ``1 - alpha`` lower confidence bound (both by ``test``'s method, see :class:`PairedResult`).
    - ``p_value``: raw p of the kind's primary test: for ``not_worse`` H1 "mean d < -margin"
      (small p = REGRESSED); for ``better`` H1 "mean d > margin" (small p = BETTER); for
      ``equivalent`` the TOST p = max of the two one-sided p-values (small p = EQUIVALENT).
      ``p_adjusted``: Holm-adjusted across the cells of one comparison (== p_value for one cell).
    - ``p_reverse``: raw p of the opposite one-sided test: for ``not_worse`` H1 "mean d > -margin"
      (small p = NOT WORSE, the same as ``lower_bound > -margin`` for the t test); for ``better``
      H1 "mean d < 0" (small p = REGRESSED); for ``equivalent`` equal to ``p_value``.
    - ``mde``: minimum detectable effect at this n (one-sided α, ``power``, noncentral t; see
      :func:`mde`): a true shift of ``mde`` beyond the margin's boundary is caught with
      probability ``power`` (0.8 by default). ``inf`` when the test cannot reach α at this n.
    - ``seeds_needed``: for an INCONCLUSIVE cell, the total number of seeds at which the observed
      mean difference would be decided with probability ``power`` (None when no number of seeds
      would).
    - ``p_floor``: smallest one-sided p the test can produce at this n.
    - ``diverged_seeds``: seeds where the candidate diverged and the baseline did not; each counts
      as a failure of that seed and forces REGRESSED (NOT EQUIVALENT for ``equivalent``).
    - ``excluded_seeds``: seeds left out of the test: both diverged, or only the baseline did.
    """

    verdict: Verdict
    kind: str
    test: str
    n: int
    mean_diff: float
    sd_diff: float
    ci: ConfidenceInterval
    lower_bound: float
    p_value: float
    p_adjusted: float
    p_reverse: float
    margin: float
    alpha: float
    mde: float
    seeds_needed: int | None
    p_floor: float
    higher_is_better: bool
    label: str
    diverged_seeds: tuple = ()
    excluded_seeds: tuple = ()
    notes: tuple[str, ...] = ()
    power: float = 0.8


@dataclass(frozen=True)
class HolmResult:
    """Holm step-down adjustment: adjusted p-values and rejections, in the input order."""

    p_adjusted: tuple[float, ...]
    reject: tuple[bool, ...]
    alpha: float


@dataclass(frozen=True)
class FoldSummary:
    """Mean ± standard deviation of k fold scores: a description of fold spread.

    Deliberately no confidence level: fold scores share training data, so ``std / sqrt(k)`` is
    not a valid standard error (Bengio & Grangier, 2004).
    """

    mean: float
    std: float
    k: int

    def __str__(self) -> str:
        return f"{self.mean:.4f} ± {self.std:.4f} (spread over {self.k} folds, not a CI)"


# -- input handling -------------------------------------------------------------------------------

def _rng(rng: RngLike) -> np.random.Generator:
    if isinstance(rng, np.random.Generator):
        return rng
    return np.random.default_rng(DEFAULT_SEED if rng is None else int(rng))


def _vector(x: Any, name: str, label: str | None = None) -> np.ndarray:
    arr = np.asarray(x, dtype=float)
    if arr.ndim != 1:
        where = f"{label}: " if label else ""
        raise ValueError(f"{where}`{name}` must be 1-D (one value per seed), got shape {arr.shape}")
    return arr


def _finite(x: Any, name: str, *, min_n: int = 2) -> np.ndarray:
    arr = _vector(x, name)
    if not np.all(np.isfinite(arr)):
        raise ValueError(
            f"`{name}` has non-finite values at positions "
            f"{np.flatnonzero(~np.isfinite(arr)).tolist()} (diverged seeds); use `describe`, "
            "which counts them, or drop them explicitly"
        )
    if arr.size < min_n:
        raise ValueError(f"`{name}` needs at least {min_n} values, got {arr.size}")
    return arr


def _check_level(confidence_level: float) -> float:
    if not 0.0 < confidence_level < 1.0:
        raise ValueError(f"`confidence_level` must lie in (0, 1), got {confidence_level!r}")
    return float(confidence_level)


def _check_choice(name: str, value: str, choices: Sequence[str]) -> None:
    if value not in choices:
        raise ValueError(f"`{name}` must be one of {tuple(choices)}, got {value!r}")


# -- batched building blocks: rows of D are independent cells, shape (k, n) -----------------------

def _t_quantile(q: Any, df: Any) -> Any:
    """Student's t quantile. scipy.special's ufuncs, not ``scipy.stats.t``: the distribution
    objects cost ~100x more per call, and power searches call these dozens of times."""
    from scipy import special

    return special.stdtrit(df, q)


def _t_sf(t: Any, df: Any) -> Any:
    from scipy import special

    return special.stdtr(df, -np.asarray(t, dtype=float))


def _t_p_greater(mean: Any, se: Any, df: Any, c: float = 0.0) -> np.ndarray:
    """One-sided p for H1 "mean > c" from a t statistic; zero ``se`` gives an exact 0/0.5/1."""
    mean, se = np.asarray(mean, dtype=float), np.asarray(se, dtype=float)
    with np.errstate(divide="ignore", invalid="ignore"):
        t = (mean - c) / se
    # With no spread the data decide exactly: all above c, all below, or sitting on it.
    exact = np.where(mean > c, np.inf, np.where(mean < c, -np.inf, 0.0))
    return _t_sf(np.where(se > 0, t, exact), df)


def _t_moments(D: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Per row: mean, sample sd (ddof=1) and standard error of the mean."""
    n = D.shape[-1]
    mean = D.mean(axis=-1)
    sd = D.std(axis=-1, ddof=1)
    return mean, sd, sd / math.sqrt(n)


def _effect(mean: np.ndarray, sd: np.ndarray) -> np.ndarray:
    with np.errstate(divide="ignore", invalid="ignore"):
        return np.where(sd > 0, mean / np.where(sd > 0, sd, 1.0),
                        np.where(mean == 0, 0.0, np.sign(mean) * np.inf))


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


def _bootstrap_means(D: np.ndarray, n_resamples: int, gen: np.random.Generator) -> np.ndarray:
    """Means of ``n_resamples`` resamples (with replacement) of each row: shape (k, n_resamples).

    One ``(n_resamples, n)`` index draw is shared by all rows; it is turned into per-resample
    counts so the means are one matrix product instead of a (k, n_resamples, n) gather.
    """
    n = D.shape[-1]
    idx = gen.integers(0, n, size=(n_resamples, n))
    offsets = (np.arange(n_resamples) * n)[:, None]
    counts = np.bincount((idx + offsets).ravel(), minlength=n_resamples * n)
    counts = counts.reshape(n_resamples, n).astype(float)
    return D @ counts.T / n


def _percentile_ci(means: np.ndarray, confidence_level: float,
                   data: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Per row of bootstrap ``means`` (k, B): the (1 ± level)/2 quantiles (numpy's "linear"
    rule), clipped to the [min, max] of each row of the resampled ``data`` (k, n), so rounding
    in the resampled means can never put an endpoint beyond the data ("nine 1.00 and one 0.90"
    must end at 1.00, never 1.005).

    Reorders ``means`` in place (callers only count in it afterwards): two single-pivot
    in-place partitions instead of ``np.quantile``'s copy and multi-pivot selection, which
    dominated the cost of every bootstrap view.
    """
    tail = (1 - confidence_level) / 2
    b = means.shape[-1]
    h_lo, h_hi = tail * (b - 1), (1 - tail) * (b - 1)
    j_lo, j_hi = int(math.floor(h_lo)), int(math.floor(h_hi))
    if not 0 <= j_lo < j_hi < b - 1:
        low, high = np.quantile(means, [tail, 1 - tail], axis=-1)
    else:
        means.partition(j_lo + 1, axis=-1)
        x0, x1 = means[..., :j_lo + 1].max(axis=-1), means[..., j_lo + 1]
        low = x0 + (h_lo - j_lo) * (x1 - x0)
        means.partition(j_hi, axis=-1)
        y0, y1 = means[..., j_hi], means[..., j_hi + 1:].min(axis=-1)
        high = y0 + (h_hi - j_hi) * (y1 - y0)
    lowest, highest = data.min(axis=-1), data.max(axis=-1)
    return np.clip(low, lowest, highest), np.clip(high, lowest, highest)


def _bootstrap_p_greater(means: np.ndarray, c: float = 0.0) -> np.ndarray:
    """Bootstrap p for H1 "mean > c": share of resampled means at or below c (+1 smoothing)."""
    b = means.shape[-1]
    return (np.count_nonzero(means <= c, axis=-1) + 1) / (b + 1)


def _bootstrap_p_less(means: np.ndarray, c: float = 0.0) -> np.ndarray:
    b = means.shape[-1]
    return (np.count_nonzero(means >= c, axis=-1) + 1) / (b + 1)


def _sign_matrix(n: int, n_resamples: int, gen: np.random.Generator) -> tuple[np.ndarray, bool]:
    """Sign vectors for the sign-flip test: every one of the 2^n (exact), or a random draw."""
    if n <= EXACT_SIGNFLIP_MAX_N:
        bits = (np.arange(2**n)[:, None] >> np.arange(n)) & 1
        return 1.0 - 2.0 * bits, True
    return gen.choice([-1.0, 1.0], size=(n_resamples, n)), False


def _signflip_p(D: np.ndarray, signs: np.ndarray, exact: bool, c: float = 0.0,
                alternative: str = "greater") -> np.ndarray:
    """Sign-flip p-values of H0 "d - c is symmetric about 0", per row of D."""
    X = D - c
    n = X.shape[-1]
    obs = X.mean(axis=-1, keepdims=True)
    null = X @ signs.T / n
    # Ties between the observed mean and its own re-summed copy must count: allow rounding.
    tol = 1e-12 * np.maximum(np.abs(X).mean(axis=-1, keepdims=True), 1e-300)
    if alternative == "greater":
        hits = np.count_nonzero(null >= obs - tol, axis=-1)
    elif alternative == "less":
        hits = np.count_nonzero(null <= obs + tol, axis=-1)
    else:
        return np.minimum(1.0, 2 * np.minimum(_signflip_p(D, signs, exact, c, "greater"),
                                              _signflip_p(D, signs, exact, c, "less")))
    m = signs.shape[0]
    # Exact enumeration contains the observed signs (all +1); Monte-Carlo adds it (+1 smoothing).
    return hits / m if exact else (hits + 1) / (m + 1)


# -- describing a cell ----------------------------------------------------------------------------

def t_interval(x: Any, *, confidence_level: float = 0.95) -> ConfidenceInterval:
    """Student's t interval ``mean ± t_{1-α/2, n-1} · s / sqrt(n)`` of finite values ``x`` (n,)."""
    arr = _finite(x, "x")
    level = _check_level(confidence_level)
    mean, _, se = _t_moments(arr)
    half = _t_quantile((1 + level) / 2, arr.size - 1) * se
    return ConfidenceInterval(float(mean - half), float(mean + half))


def bootstrap_interval(x: Any, *, confidence_level: float = 0.95, n_resamples: int = 10_000,
                       rng: RngLike = None) -> ConfidenceInterval:
    """Percentile bootstrap interval of the mean of finite values ``x`` (n,).

    Reported by its own endpoints, so asymmetric near a bound and never outside
    ``[min(x), max(x)]``.
    """
    arr = _finite(x, "x")
    means = _bootstrap_means(arr[None, :], n_resamples, _rng(rng))
    low, high = _percentile_ci(means, _check_level(confidence_level), arr[None, :])
    return ConfidenceInterval(float(low[0]), float(high[0]))


def describe(x: Any, *, method: str = "t", confidence_level: float = 0.95,
             n_resamples: int = 10_000, rng: RngLike = None) -> CellStats:
    """Describe one cell ``x`` (n_seeds,): NaN/inf entries are diverged seeds, counted in
    ``n_diverged``; the statistics are over the finite values."""
    return describe_many(_vector(x, "x")[None, :], method=method,
                         confidence_level=confidence_level, n_resamples=n_resamples, rng=rng)[0]


def describe_many(X: Any, *, method: str = "t", confidence_level: float = 0.95,
                  n_resamples: int = 10_000, rng: RngLike = None) -> list[CellStats]:
    """:func:`describe` for every row of ``X`` (k, n_seeds), vectorised.

    Rows with the same pattern of diverged seeds are computed together. With ``rng`` None or an
    int, each pattern starts from that seed, so a row gets the interval ``describe`` would give.
    """

    _check_choice("method", method, CI_METHODS)
    level = _check_level(confidence_level)
    X = np.asarray(X, dtype=float)
    if X.ndim != 2:
        raise ValueError(f"`X` must be 2-D (cells, seeds), got shape {X.shape}")
    out: list[CellStats | None] = [None] * X.shape[0]
    finite = np.isfinite(X)
    for mask, rows in _group_rows(finite):
        D = X[np.ix_(rows, mask)]
        n = D.shape[-1]
        nan = np.full(len(rows), np.nan)
        if n >= 2:
            mean, sd, se = _t_moments(D)
            if method == "t":
                half = _t_quantile((1 + level) / 2, n - 1) * se
                low, high = mean - half, mean + half
            else:
                means = _bootstrap_means(D, n_resamples, _rng(rng))
                low, high = _percentile_ci(means, level, D)
        else:
            mean = D[:, 0] if n == 1 else nan
            sd = se = low = high = nan
        for i, row in enumerate(rows):
            out[row] = CellStats(
                n=n, n_diverged=int(X.shape[1] - n), mean=float(mean[i]), std=float(sd[i]),
                sem=float(se[i]), ci=ConfidenceInterval(float(low[i]), float(high[i])),
                method=method, confidence_level=level,
            )
    return out  # type: ignore[return-value]


def _group_rows(mask: np.ndarray) -> list[tuple[np.ndarray, list[int]]]:
    """Rows of a boolean (k, n) mask grouped by identical pattern: [(pattern, row indices)]."""
    groups: dict[bytes, tuple[np.ndarray, list[int]]] = {}
    for i, row in enumerate(mask):
        groups.setdefault(row.tobytes(), (row, []))[1].append(i)
    return list(groups.values())


# -- two-sided comparisons ------------------------------------------------------------------------

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


# -- one-sided evidence and verdicts --------------------------------------------------------------

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


def compare(candidate: Any, baseline: Any, *, higher_is_better: bool = True,
            kind: str = "not_worse", test: str = "paired-t", margin: float = 0.0,
            alpha: float = 0.05, power: float = 0.8, n_resamples: int = 10_000,
            rng: RngLike = None, label: str | None = None,
            seeds: Sequence[Any] | None = None) -> Comparison:
    """Verdict on one cell: ``candidate`` vs ``baseline`` (n_seeds,), aligned by seed.

    ``kind="not_worse"``: REGRESSED when the one-sided test rejects H0 "mean d >= -margin" at
    ``alpha``; else NOT WORSE when the one-sided ``1 - alpha`` lower bound of mean d is above
    ``-margin`` (for non-t tests: when the test rejects H0 "mean d <= -margin"); else INCONCLUSIVE.
    ``kind="better"``: BETTER on one-sided evidence of mean d > margin; else REGRESSED on evidence
    of mean d < 0 (raw one-sided p <= alpha); else INCONCLUSIVE. ``kind="equivalent"``: TOST
    against ``±margin``.
    All exact-zero differences give IDENTICAL for every kind (no test is run).

    Diverged seeds (non-finite values): where only the candidate diverged, the seed counts as a
    failure: the verdict is REGRESSED (NOT EQUIVALENT for ``equivalent``) whatever the test on the
    other seeds says, with a note naming the seeds. Where both or only the baseline diverged, the
    seed is excluded from the test with a note. Fewer than 2 usable pairs raises ``ValueError``
    naming ``label``. ``seeds`` labels the positions in notes (default: 0, 1, ...).
    """
    where = label or "cell"
    cand, base = _vector(candidate, "candidate", where), _vector(baseline, "baseline", where)
    if cand.shape != base.shape:
        raise ValueError(f"{where}: candidate has {cand.size} seeds but baseline has {base.size}; "
                         "pair them by seed value first")
    _check_choice("kind", kind, KINDS)
    _check_choice("test", test, PAIRED_TESTS)
    if not margin >= 0:
        raise ValueError(f"{where}: `margin` must be >= 0 (in metric units), got {margin!r}")
    if not 0 < alpha < 0.5:
        raise ValueError(f"{where}: `alpha` must lie in (0, 0.5), got {alpha!r}")
    names = list(range(cand.size)) if seeds is None else list(seeds)
    if len(names) != cand.size:
        raise ValueError(f"{where}: {len(names)} seed labels for {cand.size} values")

    c_bad, b_bad = ~np.isfinite(cand), ~np.isfinite(base)
    keep = ~(c_bad | b_bad)
    diverged = tuple(names[i] for i in np.flatnonzero(c_bad & ~b_bad))
    excluded = tuple(names[i] for i in np.flatnonzero(b_bad))
    _require_pairs(int(keep.sum()), where, [names[i] for i in np.flatnonzero(~keep)])
    notes: list[str] = []
    if diverged:
        notes.append(f"candidate diverged (non-finite metric) at seed(s) {list(diverged)} where "
                     "the baseline did not: counted as failures, so the cell cannot pass")
    if excluded:
        notes.append(f"seed(s) {list(excluded)} excluded: the baseline diverged there "
                     "(both sides, or baseline only), so there is no pair to compare")

    sign = 1.0 if higher_is_better else -1.0
    c, b = sign * cand[keep], sign * base[keep]
    d = c - b
    n = int(d.size)
    sd = float(d.std(ddof=1)) if test != "welch" else float(np.sqrt(c.var(ddof=1) + b.var(ddof=1)))
    identical = not diverged and bool(np.all(d == 0))
    common = dict(kind=kind, test=test, n=n, mean_diff=float(d.mean()), sd_diff=sd, margin=margin,
                  alpha=alpha, higher_is_better=higher_is_better, label=where,
                  diverged_seeds=diverged, excluded_seeds=excluded, power=power)
    if identical:
        notes.append("every paired difference is exactly 0 (an unchanged model): no test run")
        return Comparison(verdict=Verdict.IDENTICAL, ci=ConfidenceInterval(0.0, 0.0),
                          lower_bound=0.0, p_value=1.0, p_adjusted=1.0, p_reverse=1.0, mde=0.0,
                          seeds_needed=None, p_floor=0.0, notes=tuple(notes), **common)

    ev = _evidence(test, c, b, n_resamples, rng)
    if kind == "not_worse":
        p_primary, p_reverse = ev.p_less(-margin), ev.p_greater(-margin)
    elif kind == "better":
        p_primary, p_reverse = ev.p_greater(margin), ev.p_less(0.0)
    else:
        p_primary = max(ev.p_greater(-margin), ev.p_less(margin))
        p_reverse = p_primary
    low, high = ev.bounds(1 - alpha)
    lower_bound = ev.bounds(1 - 2 * alpha)[0]
    notes.extend(_floor_notes(test, n, ev.floor, alpha, "one-sided"))
    if test == "welch":
        notes.append("welch: unpaired test; the seeds' pairing is ignored")
    if ev.interval == "bootstrap" and n < 10:
        notes.append(f"{test}: bootstrap bounds on n={n} seeds are unreliable (too narrow)")
    se_for_power = sd / math.sqrt(n)
    effect_mde = (math.inf if ev.floor > alpha
                  else _mde_se(se_for_power, n - 1, alpha=alpha, power=power, one_sided=True))
    if test not in ("paired-t", "welch") and math.isfinite(effect_mde):
        notes.append(f"MDE from the paired-t power formula (approximate for {test})")
    verdict = _decide(kind, p_primary, p_reverse, alpha, bool(diverged))
    needed = None
    if verdict is Verdict.INCONCLUSIVE:
        needed = _seeds_needed(float(d.mean()), sd, n, margin=margin, alpha=alpha, power=power,
                               kind=kind)
    return Comparison(verdict=verdict, ci=ConfidenceInterval(low, high), lower_bound=lower_bound,
                      p_value=p_primary, p_adjusted=p_primary, p_reverse=p_reverse, mde=effect_mde,
                      seeds_needed=needed, p_floor=ev.floor, notes=tuple(notes), **common)


def _seeds_needed(mean_diff: float, sd_diff: float, n: int, *, margin: float, alpha: float,
                  kind: str, power: float = 0.8) -> int | None:
    """:func:`seeds_to_decide` for a cell that already has ``n`` seeds: never ``n`` or fewer.

    For paired-t an undecided effect always needs more than ``n``; for the other tests the
    power formula is approximate, but "fewer seeds than you have" would be wrong advice.
    """
    needed = seeds_to_decide(mean_diff, sd_diff, margin=margin, alpha=alpha, power=power,
                             kind=kind)
    return None if needed is None else max(needed, n + 1)


def _decide(kind: str, p_adjusted: float, p_reverse: float, alpha: float,
            candidate_diverged: bool) -> Verdict:
    if kind == "not_worse":
        if candidate_diverged or p_adjusted <= alpha:
            return Verdict.REGRESSED
        return Verdict.NOT_WORSE if p_reverse <= alpha else Verdict.INCONCLUSIVE
    if kind == "better":
        if candidate_diverged:
            return Verdict.REGRESSED
        if p_adjusted <= alpha:
            return Verdict.BETTER
        return Verdict.REGRESSED if p_reverse <= alpha else Verdict.INCONCLUSIVE
    if candidate_diverged or p_adjusted > alpha:
        return Verdict.NOT_EQUIVALENT
    return Verdict.EQUIVALENT


def holm(p_values: Sequence[float], alpha: float = 0.05) -> HolmResult:
    """Holm's step-down adjustment of ``p_values`` (m,), controlling the family-wise error.

    Sorted ascending, ``p_adj(i) = max_{j <= i} min(1, (m - j + 1) p(j))``; a hypothesis is
    rejected when its adjusted p is ``<= alpha``. Returned in the input order.
    """
    p = np.asarray(p_values, dtype=float)
    if p.ndim != 1 or np.any(~np.isfinite(p)) or np.any((p < 0) | (p > 1)):
        raise ValueError(f"`p_values` must be a 1-D sequence of numbers in [0, 1], "
                         f"got {p_values!r}")
    m = p.size
    order = np.argsort(p, kind="stable")
    adjusted_sorted = np.maximum.accumulate(np.minimum(1.0, (m - np.arange(m)) * p[order]))
    adjusted = np.empty(m)
    adjusted[order] = adjusted_sorted
    return HolmResult(p_adjusted=tuple(float(v) for v in adjusted),
                      reject=tuple(bool(v <= alpha) for v in adjusted), alpha=alpha)


def holm_adjust(comparisons: Sequence[Comparison]) -> list[Comparison]:
    """The comparisons of one gate call with ``p_adjusted`` set by Holm across them and their
    verdicts re-decided; IDENTICAL cells take part with their p of 1. Only the primary p (the
    one that can fail a ``not_worse`` gate or pass a ``better``/``equivalent`` gate) is adjusted;
    ``p_reverse`` decisions (NOT WORSE, and REGRESSED under ``better``) stay at raw ``alpha``."""
    comparisons = list(comparisons)
    if len(comparisons) < 2:
        return comparisons
    alphas = {c.alpha for c in comparisons}
    if len(alphas) != 1:
        raise ValueError(f"Holm needs one `alpha` for the whole family, got {sorted(alphas)}")
    alpha = alphas.pop()
    adjusted = holm([c.p_value for c in comparisons], alpha).p_adjusted
    out = []
    for comp, p_adj in zip(comparisons, adjusted, strict=True):
        note = f"p Holm-adjusted across {len(comparisons)} cells"
        verdict = comp.verdict
        if verdict is not Verdict.IDENTICAL:
            verdict = _decide(comp.kind, p_adj, comp.p_reverse, alpha, bool(comp.diverged_seeds))
        needed = None
        if verdict is Verdict.INCONCLUSIVE:
            # Planned at alpha / m, the level Holm demands of the most significant cell, so the
            # advice holds whichever cell ends up first.
            needed = _seeds_needed(comp.mean_diff, comp.sd_diff, comp.n, margin=comp.margin,
                                   alpha=alpha / len(comparisons), kind=comp.kind,
                                   power=comp.power)
        out.append(replace(comp, p_adjusted=p_adj, verdict=verdict, seeds_needed=needed,
                           notes=(*comp.notes, note)))
    return out


def compare_many(cells: Sequence[Mapping[str, Any]], **common: Any) -> list[Comparison]:
    """:func:`compare` per cell, then Holm across them (:func:`holm_adjust`).

    Each cell is a mapping of :func:`compare`'s arguments (at least ``candidate`` and
    ``baseline``; typically also ``label``, ``higher_is_better``, ``seeds``); ``common`` holds
    the arguments shared by every cell (``kind``, ``test``, ``margin``, ``alpha`` ...).
    """
    return holm_adjust([compare(**{**common, **cell}) for cell in cells])


# -- power and adequacy ---------------------------------------------------------------------------

def _power(ncp: float, df: float, alpha: float, one_sided: bool) -> float:
    from scipy import special

    crit = _t_quantile(1 - (alpha if one_sided else alpha / 2), df)
    return float(1 - special.nctdtr(df, ncp, crit))


def _mde_se(se: float, df: float, *, alpha: float, power: float, one_sided: bool) -> float:
    """Smallest true mean shift detected with probability ``power`` by a t test whose standard
    error is ``se`` with ``df`` degrees of freedom (exact noncentral t, solved for the ncp)."""
    from scipy import optimize

    if se == 0:
        return 0.0
    if not alpha < power < 1:
        raise ValueError(f"`power` must lie in (alpha, 1), got {power!r}")
    hi = 4.0
    while _power(hi, df, alpha, one_sided) < power:
        hi *= 2
    ncp = optimize.brentq(lambda x: _power(x, df, alpha, one_sided) - power, 0.0, hi, xtol=1e-10)
    return float(ncp * se)


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
    return _mde_se(sd_diff / math.sqrt(n), n - 1, alpha=alpha, power=power, one_sided=one_sided)


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
    probability ``power`` (one-sided paired t, noncentral t).

    The distance that must be resolved is the gap between ``mean_diff`` and the verdict's
    boundary: ``-margin`` for ``not_worse`` (either way: REGRESSED or NOT WORSE), ``+margin`` for
    ``better`` (only above it), the nearer of ``±margin`` for ``equivalent`` (only inside).
    None when no number of seeds would decide it (zero gap, or on the wrong side).
    """
    _check_choice("kind", kind, KINDS)
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
    ratio = gap / sd_diff
    return _smallest_n(lambda n: _power(ratio * math.sqrt(n), n - 1, alpha, True) >= power)


def seeds_for_width(sd: float, max_width: float, *, confidence_level: float = 0.95) -> int:
    """Smallest n whose t interval ``2 · t_{1-α/2, n-1} · sd / sqrt(n)`` is at most ``max_width``
    wide (``sd``: the per-seed standard deviation, in metric units)."""
    level = _check_level(confidence_level)
    if not max_width > 0:
        raise ValueError(f"`max_width` must be > 0, got {max_width!r}")
    if not sd >= 0 or not math.isfinite(sd):
        raise ValueError(f"`sd` must be a finite number >= 0, got {sd!r}")
    q = (1 + level) / 2
    return _smallest_n(lambda n: 2 * _t_quantile(q, n - 1) * sd / math.sqrt(n) <= max_width)


# -- cross-validation folds and single held-out evaluations ---------------------------------------

def describe_folds(scores: Any) -> FoldSummary:
    """Mean ± sample std of k fold scores (k,): fold spread, with no confidence level."""
    arr = _finite(scores, "scores")
    return FoldSummary(mean=float(arr.mean()), std=float(arr.std(ddof=1)), k=int(arr.size))


def corrected_resampled_ttest(a: Any, b: Any, *, n_train: int, n_test: int,
                              confidence_level: float = 0.95) -> PairedResult:
    """Nadeau–Bengio corrected resampled t test on paired fold scores ``a``, ``b`` (J,).

    The variance of the mean difference is ``(1/J + n_test/n_train) · s²`` instead of ``s²/J``,
    because fold training sets overlap; t has J - 1 degrees of freedom. ``J`` may be k folds or
    r × k repeated folds; ``n_train``/``n_test`` are the sizes of one fold's splits.
    """
    a, b = _finite(a, "a"), _finite(b, "b")
    if a.shape != b.shape:
        raise ValueError(f"`a` has {a.size} folds but `b` has {b.size}; pair them by fold")
    if n_train <= 0 or n_test <= 0:
        raise ValueError(f"`n_train` and `n_test` must be positive, got {n_train}, {n_test}")
    level = _check_level(confidence_level)
    d = a - b
    j = d.size
    mean, sd = float(d.mean()), float(d.std(ddof=1))
    se = math.sqrt(1 / j + n_test / n_train) * sd
    p_greater = float(_t_p_greater(mean, se, j - 1))
    p = min(1.0, 2 * min(p_greater, 1 - p_greater))
    half = float(_t_quantile((1 + level) / 2, j - 1)) * se
    return PairedResult(test="corrected-t", n=j, mean_diff=mean,
                        ci=ConfidenceInterval(mean - half, mean + half), p_value=p,
                        effect_size=float(_effect(np.array(mean), np.array(sd))),
                        confidence_level=level, interval="corrected-t")


def wilson_interval(k: int, n: int, *, confidence_level: float = 0.95) -> ConfidenceInterval:
    """Wilson score interval for a proportion: ``k`` successes (e.g. correct answers) of ``n``."""
    from scipy import special

    if n <= 0 or not 0 <= k <= n:
        raise ValueError(f"need 0 <= k <= n and n > 0, got k={k}, n={n}")
    z = float(special.ndtri((1 + _check_level(confidence_level)) / 2))
    p = k / n
    centre = (p + z * z / (2 * n)) / (1 + z * z / n)
    half = z / (1 + z * z / n) * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n))
    return ConfidenceInterval(max(0.0, centre - half), min(1.0, centre + half))


def bootstrap_metric(y_true: Any, y_pred: Any, metric: Callable[[np.ndarray, np.ndarray], float],
                     *, confidence_level: float = 0.95, n_resamples: int = 10_000,
                     rng: RngLike = None) -> ConfidenceInterval:
    """Percentile bootstrap interval of ``metric(y_true, y_pred)`` over test examples.

    ``y_true``, ``y_pred``: arrays whose first axis is the example axis (n, ...); each resample
    draws n examples with replacement and calls ``metric`` once. For one held-out evaluation:
    it is the uncertainty from the finite test set, not from training randomness.
    """
    y_true, y_pred = np.asarray(y_true), np.asarray(y_pred)
    if len(y_true) != len(y_pred) or len(y_true) < 2:
        raise ValueError(f"`y_true` ({len(y_true)}) and `y_pred` ({len(y_pred)}) need the same "
                         "length, at least 2 examples")
    level = _check_level(confidence_level)
    idx = _rng(rng).integers(0, len(y_true), size=(n_resamples, len(y_true)))
    values = np.array([float(metric(y_true[i], y_pred[i])) for i in idx])
    low, high = np.quantile(values, [(1 - level) / 2, (1 + level) / 2])
    return ConfidenceInterval(float(low), float(high))


# -- report views: Summary and Pairwise tables ----------------------------------------------------

def _fmt(x: float, digits: int = 4) -> str:
    return f"{x:.{digits}f}" if math.isfinite(x) else str(x)


def _fmt_p(p: float) -> str:
    return f"{p:.3g}"


class _Table(Sequence):
    """A tuple of frozen rows that prints as an aligned table (``str``) or Markdown."""

    rows: tuple

    def __getitem__(self, i: Any) -> Any:
        return self.rows[i]

    def __len__(self) -> int:
        return len(self.rows)

    def _table(self) -> tuple[list[str], list[list[str]]]:
        raise NotImplementedError

    def __str__(self) -> str:
        return format_table(*self._table())

    def to_markdown(self) -> str:
        return markdown_table(*self._table())


@dataclass(frozen=True)
class SummaryRow:
    """One (task, model) cell: ``n_seeds`` finite seeds described, ``n_diverged`` non-finite."""

    task: str
    model: str
    metric: str
    n_seeds: int
    n_diverged: int
    mean: float
    std: float
    sem: float
    ci_low: float
    ci_high: float
    method: str


@dataclass(frozen=True, repr=False)
class Summary(_Table):
    """Rows of :class:`SummaryRow` in (task, model) order; ``str()`` is an aligned table."""

    rows: tuple[SummaryRow, ...]
    method: str
    confidence_level: float

    def _table(self) -> tuple[list[str], list[list[str]]]:
        pct = f"{100 * self.confidence_level:g}%"
        headers = ["task", "model", "metric", "seeds", "diverged", "mean", "std", "sem",
                   f"{pct} CI low", f"{pct} CI high", "method"]
        return headers, [[r.task, r.model, r.metric, r.n_seeds, r.n_diverged, _fmt(r.mean),
                          _fmt(r.std), _fmt(r.sem), _fmt(r.ci_low), _fmt(r.ci_high), r.method]
                         for r in self.rows]

    def __repr__(self) -> str:
        return f"Summary({len(self.rows)} rows, method={self.method!r})\n{self}"


@dataclass(frozen=True)
class PairwiseRow:
    """One model pair on one task, on seeds paired by seed value.

    Sign convention: ``mean_diff``, ``ci_low``, ``ci_high`` and ``effect_size`` are oriented so
    that a positive value means ``model_a`` is better than ``model_b``: ``a - b`` for
    higher-is-better metrics, ``b - a`` for lower-is-better ones. ``p_holm`` is Holm-adjusted
    across the pairs of the task. ``intervals_overlap`` says whether the two cells' own intervals
    (the report's CI method) overlap: a caution for readers, never the verdict. A pair skipped
    as untestable (``untestable="skip"``: fewer than 2 seeds finite in both models) has NaN
    statistics, ``n`` usable seeds and ``intervals_overlap=False``.
    """

    task: str
    model_a: str
    model_b: str
    n: int
    mean_diff: float
    ci_low: float
    ci_high: float
    p_value: float
    p_holm: float
    effect_size: float
    intervals_overlap: bool
    test: str


@dataclass(frozen=True, repr=False)
class Pairwise(_Table):
    """Rows of :class:`PairwiseRow`; ``notes`` collects caveats (excluded seeds, p floors)."""

    rows: tuple[PairwiseRow, ...]
    test: str
    confidence_level: float
    notes: tuple[str, ...] = ()

    def _table(self) -> tuple[list[str], list[list[str]]]:
        pct = f"{100 * self.confidence_level:g}%"
        headers = ["task", "A", "B", "n", "Δ (+: A better)", f"{pct} CI low", f"{pct} CI high",
                   "p", "p (Holm)", "effect", "CIs overlap", "test"]
        return headers, [[r.task, r.model_a, r.model_b, r.n, _fmt(r.mean_diff), _fmt(r.ci_low),
                          _fmt(r.ci_high), _fmt_p(r.p_value), _fmt_p(r.p_holm),
                          _fmt(r.effect_size, 2), "yes" if r.intervals_overlap else "no", r.test]
                         for r in self.rows]

    def __str__(self) -> str:
        return "\n".join([super().__str__(), *(f"note: {n}" for n in self.notes)])

    def __repr__(self) -> str:
        return f"Pairwise({len(self.rows)} rows, test={self.test!r})\n{self}"


def summarize(X: Any, *, tasks: Sequence[str], models: Sequence[str], metrics: Sequence[str],
              method: str = "t", confidence_level: float = 0.95, n_resamples: int = 10_000,
              rng: RngLike = None) -> Summary:
    """:class:`Summary` of ``X[task, model, seed]`` (T, M, S); ``metrics``: each task's metric."""
    X = np.asarray(X, dtype=float)
    t, m, s = X.shape
    cells = describe_many(X.reshape(t * m, s), method=method, confidence_level=confidence_level,
                          n_resamples=n_resamples, rng=rng)
    rows = tuple(
        SummaryRow(task=tasks[i], model=models[j], metric=metrics[i], n_seeds=c.n,
                   n_diverged=c.n_diverged, mean=c.mean, std=c.std, sem=c.sem, ci_low=c.ci.low,
                   ci_high=c.ci.high, method=method)
        for (i, j), c in zip(np.ndindex(t, m), cells, strict=True)
    )
    return Summary(rows=rows, method=method, confidence_level=_check_level(confidence_level))


def pairwise_table(X: Any, *, tasks: Sequence[str], models: Sequence[str],
                   higher_is_better: Sequence[bool], test: str = "paired-t",
                   confidence_level: float = 0.95, ci_method: str = "t",
                   n_resamples: int = 10_000, rng: RngLike = None,
                   seeds: Sequence[Any] | None = None, untestable: str = "raise") -> Pairwise:
    """:class:`Pairwise` over ``X[task, model, seed]`` (T, M, S): every pair i < j of models per
    task; sign convention in :class:`PairwiseRow`.

    All pairs of all tasks that share a pattern of diverged seeds are tested in one batch.
    A pair with fewer than 2 seeds finite in both models raises, or with
    ``untestable="skip"`` gets a row of NaN statistics (its ``n`` says how many seeds were
    usable), a note, and no part in its task's Holm family.
    """
    _check_choice("test", test, PAIRED_TESTS)
    _check_choice("untestable", untestable, ("raise", "skip"))
    level = _check_level(confidence_level)
    X = np.asarray(X, dtype=float)
    t_n, m_n, s_n = X.shape
    seeds = list(range(s_n)) if seeds is None else list(seeds)
    # Orient every task so that larger is better: then "a - b > 0" reads "a is better".
    V = X * np.where(np.asarray(higher_is_better, dtype=bool), 1.0, -1.0)[:, None, None]
    cells = describe_many(V.reshape(t_n * m_n, s_n), method=ci_method, confidence_level=level,
                          n_resamples=n_resamples, rng=rng)
    keys = [(t, i, j) for t in range(t_n) for i in range(m_n) for j in range(i + 1, m_n)]
    if not keys:
        return Pairwise(rows=(), test=test, confidence_level=level)
    A = np.stack([V[t, i] for t, i, _ in keys])
    B = np.stack([V[t, j] for t, _, j in keys])
    results: list[Any] = [None] * len(keys)
    notes: list[str] = []
    finite = np.isfinite(A) & np.isfinite(B)
    for mask, idx in _group_rows(finite):
        bad = [seeds[s] for s in np.flatnonzero(~mask)]
        n_usable = int(mask.sum())
        skip = untestable == "skip" and n_usable < 2
        for k in idx:
            t, i, j = keys[k]
            where = f"task {tasks[t]!r}, {models[i]} vs {models[j]}"
            if skip:
                notes.append(f"{where}: not compared, only {n_usable} seed(s) finite in both "
                             "models")
                continue
            _require_pairs(n_usable, where, bad)
            if bad:
                notes.append(f"{where}: seed(s) {bad} excluded (diverged in one model or both)")
        if skip:
            continue  # results[k] stays None for these pairs
        batch = paired_tests(A[np.ix_(idx, mask)], B[np.ix_(idx, mask)], test=test,
                             confidence_level=level, n_resamples=n_resamples, rng=rng)
        for k, res in zip(idx, batch, strict=True):
            results[k] = res
            notes.extend(n for n in res.notes if n not in notes)
    p_holm = np.full(len(keys), np.nan)
    for t in range(t_n):
        in_task = [k for k, key in enumerate(keys) if key[0] == t and results[k] is not None]
        if in_task:
            p_holm[in_task] = holm([results[k].p_value for k in in_task]).p_adjusted
    rows = []
    nan = float("nan")
    for k, (t, i, j) in enumerate(keys):
        res, ca, cb = results[k], cells[t * m_n + i].ci, cells[t * m_n + j].ci
        if res is None:  # skipped as untestable: NaN statistics (p_holm is NaN already)
            found = dict(n=int(finite[k].sum()), mean_diff=nan, ci_low=nan, ci_high=nan,
                         p_value=nan, effect_size=nan, intervals_overlap=False)
        else:
            found = dict(n=res.n, mean_diff=res.mean_diff, ci_low=res.ci.low,
                         ci_high=res.ci.high, p_value=res.p_value, effect_size=res.effect_size,
                         intervals_overlap=bool(ca.low <= cb.high and cb.low <= ca.high))
        rows.append(PairwiseRow(task=tasks[t], model_a=models[i], model_b=models[j],
                                p_holm=float(p_holm[k]), test=test, **found))
    return Pairwise(rows=tuple(rows), test=test, confidence_level=level, notes=tuple(notes))
