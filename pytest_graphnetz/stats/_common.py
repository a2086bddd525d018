"""The base every module of the statistics package stands on (private to the package; users
get its public names from :mod:`pytest_graphnetz.stats`): constants and choices, the interval
type, the rng convention, input checks, the batched Student-t building blocks (rows of ``D`` are
independent cells, shape (k, n)) and the resolution below which two values are one."""

from __future__ import annotations

import math
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
from numpy.typing import ArrayLike

DEFAULT_SEED = 0
CI_METHODS = ("t", "bootstrap")
PAIRED_TESTS = ("paired-t", "wilcoxon", "permutation", "bootstrap", "welch")
KINDS = ("not_worse", "better", "equivalent")
# Up to 2^16 = 65,536 sign vectors the sign-flip test enumerates them all (exact p-values);
# beyond that it draws `n_resamples` random sign vectors (Monte-Carlo).
EXACT_SIGNFLIP_MAX_N = 16

RngLike = np.random.Generator | int | None


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


def resolve_rng(rng: RngLike) -> np.random.Generator:
    if isinstance(rng, np.random.Generator):
        return rng
    return np.random.default_rng(DEFAULT_SEED if rng is None else int(rng))


def as_vector(x: ArrayLike, name: str, label: str | None = None) -> np.ndarray:
    arr = np.asarray(x, dtype=float)
    if arr.ndim != 1:
        where = f"{label}: " if label else ""
        raise ValueError(f"{where}`{name}` must be 1-D (one value per seed), got shape {arr.shape}")
    return arr


def finite_vector(x: ArrayLike, name: str, *, min_n: int = 2) -> np.ndarray:
    arr = as_vector(x, name)
    if not np.all(np.isfinite(arr)):
        raise ValueError(
            f"`{name}` has non-finite values at positions "
            f"{np.flatnonzero(~np.isfinite(arr)).tolist()} (diverged seeds); use `describe`, "
            "which counts them, or drop them explicitly"
        )
    if arr.size < min_n:
        raise ValueError(f"`{name}` needs at least {min_n} values, got {arr.size}")
    return arr


def check_level(confidence_level: float) -> float:
    if not 0.0 < confidence_level < 1.0:
        raise ValueError(f"`confidence_level` must lie in (0, 1), got {confidence_level!r}")
    return float(confidence_level)


def check_choice(name: str, value: str, choices: Sequence[str]) -> None:
    if value not in choices:
        raise ValueError(f"`{name}` must be one of {tuple(choices)}, got {value!r}")


def t_quantile(q: Any, df: Any) -> Any:
    """Student's t quantile. scipy.special's ufuncs, not ``scipy.stats.t``: the distribution
    objects cost ~100x more per call, and power searches call these dozens of times."""
    from scipy import special

    return special.stdtrit(df, q)


def t_sf(t: Any, df: Any) -> Any:
    from scipy import special

    return special.stdtr(df, -np.asarray(t, dtype=float))


def t_p_greater(mean: Any, se: Any, df: Any, c: float = 0.0) -> np.ndarray:
    """One-sided p for H1 "mean > c" from a t statistic; zero ``se`` gives an exact 0/0.5/1."""
    mean, se = np.asarray(mean, dtype=float), np.asarray(se, dtype=float)
    with np.errstate(divide="ignore", invalid="ignore"):
        t = (mean - c) / se
    # With no spread the data decide exactly: all above c, all below, or sitting on it.
    exact = np.where(mean > c, np.inf, np.where(mean < c, -np.inf, 0.0))
    return t_sf(np.where(se > 0, t, exact), df)


def t_moments(D: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Per row: mean, sample sd (ddof=1) and standard error of the mean.

    Each row is scaled by the power of two at its largest magnitude before squaring (exact:
    the same bits wherever the plain formulas do not overflow), so finite values never give
    an infinite sd: a loss near 1e300 keeps its spread."""
    D = np.asarray(D, dtype=float)
    n = D.shape[-1]
    if n == 0:
        return D.mean(axis=-1), D.std(axis=-1, ddof=1), D.std(axis=-1, ddof=1)
    top = np.max(np.abs(D), axis=-1, keepdims=True)
    top = np.where(np.isfinite(top) & (top > 0), top, 1.0)
    scale = np.ldexp(1.0, np.frexp(top)[1])
    Y = D / scale
    scale = scale[..., 0]
    mean = scale * Y.mean(axis=-1)
    sd = scale * Y.std(axis=-1, ddof=1)
    return mean, sd, sd / math.sqrt(n)


def standardized_effect(mean: np.ndarray, sd: np.ndarray) -> np.ndarray:
    with np.errstate(divide="ignore", invalid="ignore"):
        return np.where(sd > 0, mean / np.where(sd > 0, sd, 1.0),
                        np.where(mean == 0, 0.0, np.sign(mean) * np.inf))


def group_rows(mask: np.ndarray) -> list[tuple[np.ndarray, list[int]]]:
    """Rows of a boolean (k, n) mask grouped by identical pattern: [(pattern, row indices)]."""
    groups: dict[bytes, tuple[np.ndarray, list[int]]] = {}
    for i, row in enumerate(mask):
        groups.setdefault(row.tobytes(), (row, []))[1].append(i)
    return list(groups.values())



def fold_ratio(k: int) -> float:
    """``n_test / n_train`` of one fold of ``Task(folds=k)``: 1 test fold, k − 2 training
    folds (the validation fold trains nothing)."""
    return 1.0 / (k - 2)


# Relative resolution below which two values are one: 4 float32 ulps (2^-21 ≈ 4.8e-7), so a
# value that went through float32 (a tensor's .item(), a half-precision metric) pairs with its
# float64 twin as equal, while any real metric difference (at least 1e-6 of the value) counts.
RESOLUTION = 2.0 ** -21


def within_resolution(a: Any, b: Any) -> np.ndarray:
    """Where ``a`` and ``b`` (same shape, finite) are equal up to :data:`RESOLUTION` of the
    larger magnitude: their difference is rounding, not evidence."""
    a, b = np.asarray(a, dtype=float), np.asarray(b, dtype=float)
    scale = np.maximum(np.abs(a), np.abs(b))
    return np.abs(a - b) <= RESOLUTION * scale
