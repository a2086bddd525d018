"""Resampling kernels shared by intervals and paired tests: bootstrap means, percentile
endpoints and sign-flip p-values, batched over rows (cells) of ``D`` (k, n)."""

from __future__ import annotations

import math

import numpy as np

from pytest_graphnetz.stats._common import EXACT_SIGNFLIP_MAX_N, t_quantile

# A percentile bootstrap over seeds needs this many. Below it the resampled means cannot
# spread as far as the mean itself varies (simulated on normal data, 95% intervals cover
# 49% / 75% / 85% of the time at 2 / 3 / 5 seeds, and a one-sided bootstrap test at α = 0.05
# raises 19% / 10% false alarms at 3 / 5 seeds), so it is refused there, never quietly used.
# At 10 seeds a plain 95% percentile interval covers about 90%, at 20 about 93%
# (benchmarks/bootstrap_coverage.py); the bootstrap *test* is expanded (:func:`expanded_p`).
BOOTSTRAP_MIN_SEEDS = 10


def require_bootstrap_seeds(n: int, what: str, instead: str) -> None:
    """Refuse a percentile bootstrap over ``n`` < :data:`BOOTSTRAP_MIN_SEEDS` seeds."""
    if n < BOOTSTRAP_MIN_SEEDS:
        raise ValueError(
            f"{what} over {n} seeds refused: a percentile bootstrap needs at least "
            f"{BOOTSTRAP_MIN_SEEDS} (below that its intervals are far too narrow: 95% intervals "
            f"cover 75% of the time at 3 seeds, 85% at 5); use {instead}, or run at least "
            f"{BOOTSTRAP_MIN_SEEDS} seeds (e.g. `--graphnetz-seeds={BOOTSTRAP_MIN_SEEDS}`)"
        )


def expanded_level(confidence_level: float, n: int) -> float:
    """The percentile level that gives an *expanded* percentile interval (Hesterberg 2015,
    "What teachers should know about the bootstrap"): the one whose normal quantile is
    ``sqrt(n / (n-1)) · t_{n-1}`` at ``confidence_level``, undoing the bootstrap's two
    small-sample biases (variance divisor n, normal instead of t tails)."""
    from scipy import special

    z = math.sqrt(n / (n - 1)) * float(t_quantile((1 + confidence_level) / 2, n - 1))
    return float(2 * special.ndtr(z) - 1)


def expanded_p(p: np.ndarray | float, n: int) -> np.ndarray:
    """One-sided bootstrap p-values ``p`` of an ``n``-seed sample, expanded as
    :func:`expanded_level` expands intervals (the test rejects at α exactly when the expanded
    one-sided 1 - α bound excludes the boundary)."""
    from scipy import special

    return special.stdtr(n - 1, special.ndtri(np.asarray(p, dtype=float))
                         * math.sqrt((n - 1) / n))


def bootstrap_means(D: np.ndarray, n_resamples: int, gen: np.random.Generator) -> np.ndarray:
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


def percentile_ci(means: np.ndarray, confidence_level: float,
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


def bootstrap_p_greater(means: np.ndarray, c: float = 0.0, tol: float = 0.0) -> np.ndarray:
    """Bootstrap p for H1 "mean > c": share of resampled means at or below c (+1 smoothing);
    a mean within ``tol`` (rounding) of c counts as sitting on it."""
    b = means.shape[-1]
    return (np.count_nonzero(means <= c + tol, axis=-1) + 1) / (b + 1)


def bootstrap_p_less(means: np.ndarray, c: float = 0.0, tol: float = 0.0) -> np.ndarray:
    b = means.shape[-1]
    return (np.count_nonzero(means >= c - tol, axis=-1) + 1) / (b + 1)


def sign_matrix(n: int, n_resamples: int, gen: np.random.Generator) -> tuple[np.ndarray, bool]:
    """Sign vectors for the sign-flip test: every one of the 2^n (exact), or a random draw."""
    if n <= EXACT_SIGNFLIP_MAX_N:
        bits = (np.arange(2**n)[:, None] >> np.arange(n)) & 1
        return 1.0 - 2.0 * bits, True
    return gen.choice([-1.0, 1.0], size=(n_resamples, n)), False


def signflip_p(D: np.ndarray, signs: np.ndarray, exact: bool, c: float = 0.0,
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
        return np.minimum(1.0, 2 * np.minimum(signflip_p(D, signs, exact, c, "greater"),
                                              signflip_p(D, signs, exact, c, "less")))
    m = signs.shape[0]
    # Exact enumeration contains the observed signs (all +1); Monte-Carlo adds it (+1 smoothing).
    return hits / m if exact else (hits + 1) / (m + 1)

