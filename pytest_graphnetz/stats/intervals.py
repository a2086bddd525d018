"""Describing one cell: mean, spread and a Student-t or percentile-bootstrap interval of the
mean over seeds. A cell is a 1-D array of per-seed values (n_seeds,); NaN/inf entries are
diverged seeds, counted, never dropped silently."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from numpy.typing import ArrayLike

from pytest_graphnetz.stats._common import (
    CI_METHODS,
    ConfidenceInterval,
    RngLike,
    as_vector,
    check_choice,
    check_level,
    finite_vector,
    group_rows,
    resolve_rng,
    t_moments,
    t_quantile,
)
from pytest_graphnetz.stats.resampling import (
    bootstrap_means,
    percentile_ci,
    require_bootstrap_seeds,
)

_T_INSTEAD = "the Student-t interval (method='t'; report.ci_method = 't')"


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


def sd_upper_bound(sd: float, n: int, *, confidence_level: float = 0.95) -> float:
    """The one-sided upper confidence bound of a normal population's sd from a sample sd ``sd``
    of ``n`` values: sd·√((n − 1)/χ²_{1−level}(n − 1)). A sample sd of 10 seeds is off by ±25%
    (1 sd); a rule that plans or flags from it uses this bound where erring low costs."""
    from scipy import special

    level = check_level(confidence_level)
    if n < 2:
        return float("nan")
    return float(sd * np.sqrt((n - 1) / special.chdtri(n - 1, level)))


def t_interval(x: ArrayLike, *, confidence_level: float = 0.95) -> ConfidenceInterval:
    """Student's t interval ``mean ± t_{1-α/2, n-1} · s / sqrt(n)`` of finite values ``x`` (n,)."""
    arr = finite_vector(x, "x")
    level = check_level(confidence_level)
    mean, _, se = t_moments(arr)
    half = t_quantile((1 + level) / 2, arr.size - 1) * se
    return ConfidenceInterval(float(mean - half), float(mean + half))


def bootstrap_interval(x: ArrayLike, *, confidence_level: float = 0.95, n_resamples: int = 10_000,
                       rng: RngLike = None) -> ConfidenceInterval:
    """Percentile bootstrap interval of the mean of finite values ``x`` (n,).

    Reported by its own endpoints, so asymmetric near a bound and never outside
    ``[min(x), max(x)]``. Refused (``ValueError``) below
    :data:`~pytest_graphnetz.stats.resampling.BOOTSTRAP_MIN_SEEDS` (10) values, where it
    covers far less than ``confidence_level``.
    """
    arr = finite_vector(x, "x")
    require_bootstrap_seeds(arr.size, "a percentile bootstrap interval", _T_INSTEAD)
    means = bootstrap_means(arr[None, :], n_resamples, resolve_rng(rng))
    low, high = percentile_ci(means, check_level(confidence_level), arr[None, :])
    return ConfidenceInterval(float(low[0]), float(high[0]))


def describe(x: ArrayLike, *, method: str = "t", confidence_level: float = 0.95,
             n_resamples: int = 10_000, rng: RngLike = None) -> CellStats:
    """Describe one cell ``x`` (n_seeds,): NaN/inf entries are diverged seeds, counted in
    ``n_diverged``; the statistics are over the finite values."""
    return describe_many(as_vector(x, "x")[None, :], method=method,
                         confidence_level=confidence_level, n_resamples=n_resamples, rng=rng)[0]


def describe_many(X: ArrayLike, *, method: str = "t", confidence_level: float = 0.95,
                  n_resamples: int = 10_000, rng: RngLike = None) -> list[CellStats]:
    """:func:`describe` for every row of ``X`` (k, n_seeds), vectorised.

    ``method="bootstrap"`` on a row with 2 to 9 finite values raises ``ValueError`` (see
    :func:`bootstrap_interval`). Rows with the same pattern of diverged seeds are computed
    together. With ``rng`` None or an
    int, each pattern starts from that seed, so a row gets the interval ``describe`` would give.
    """

    check_choice("method", method, CI_METHODS)
    level = check_level(confidence_level)
    X = np.asarray(X, dtype=float)
    if X.ndim != 2:
        raise ValueError(f"`X` must be 2-D (cells, seeds), got shape {X.shape}")
    out: list[CellStats | None] = [None] * X.shape[0]
    finite = np.isfinite(X)
    for mask, rows in group_rows(finite):
        D = X[np.ix_(np.asarray(rows), mask)]
        n = D.shape[-1]
        nan = np.full(len(rows), np.nan)
        if n >= 2:
            mean, sd, se = t_moments(D)
            if method == "t":
                half = t_quantile((1 + level) / 2, n - 1) * se
                low, high = mean - half, mean + half
            else:
                require_bootstrap_seeds(n, "a percentile bootstrap interval", _T_INSTEAD)
                means = bootstrap_means(D, n_resamples, resolve_rng(rng))
                low, high = percentile_ci(means, level, D)
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

