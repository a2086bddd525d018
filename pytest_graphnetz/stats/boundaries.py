"""The boundaries of adaptive seeds (:mod:`.sequential`): the looks of ``MIN..MAX``, the
α-spending function and the per-look critical values of the Student t statistics.

Spending: the Hwang–Shih–DeCani family (Hwang, Shih & DeCani 1990, Statistics in Medicine
9:1439-1445), an α-spending function in the sense of Lan & DeMets (1983, Biometrika
70:659-663): at information fraction ``t = n / MAX`` it has spent
``α·(1 − e^{−γt}) / (1 − e^{−γ})``. ``γ = 1`` is close to Pocock's boundaries, ``γ = −4`` to
O'Brien–Fleming's; the default ``γ = 4`` spends more at the first looks, because most cells of a
pull request are clear after a few seeds (``benchmarks/adaptive_seeds.py`` measures the choice).
The boundaries are not the normal-theory ones: ``c_k`` is
calibrated for the Student t statistics themselves (at n = 5 a t has 4 degrees of freedom).
Under normal differences at the boundary mean the joint law of the sequential t statistics does
not depend on σ; it is simulated exactly through its sufficient statistics (per look, the new
block's mean is normal and its within-block sum of squares is χ², independent), ``c_1`` is the
exact t quantile, and each later ``c_k`` is the order statistic that spends exactly the
increment ``α(t_k) − α(t_{k−1})`` among the simulated paths still running (deterministic:
a fixed seed and :data:`CALIBRATION_PATHS` paths, Monte-Carlo error about 1e-4 on α).
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass, replace
from functools import lru_cache
from typing import Any

import numpy as np

from ._common import _t_quantile

DEFAULT_GAMMA = 4.0
DEFAULT_LEAN = 1.5  # an early NOT WORSE needs (mean + margin) / se > -DEFAULT_LEAN
CALIBRATION_PATHS = 1 << 20
CALIBRATION_SEED = 20_231_983  # any fixed seed: the boundaries must not depend on the session


def schedule(min_seeds: int, max_seeds: int) -> tuple[int, ...]:
    """The looks of ``MIN..MAX``: MIN, doubling while below MAX, the last at MAX
    (``schedule(5, 20) == (5, 10, 20)``, ``schedule(5, 30) == (5, 10, 20, 30)``)."""
    if isinstance(min_seeds, bool) or isinstance(max_seeds, bool):
        raise TypeError("`min_seeds` and `max_seeds` must be integers")
    if not 2 <= int(min_seeds) <= int(max_seeds):
        raise ValueError(f"adaptive seeds need 3 <= MIN <= MAX, got {min_seeds}..{max_seeds}")
    if int(min_seeds) < 3 and int(max_seeds) > int(min_seeds):
        # At 2 seeds two equal non-zero differences have no spread: t = ±inf crosses any
        # boundary, and on a discrete metric that happens far more often than the α the first
        # look may spend (karate, 8 test nodes: 2..20 read false REGRESSED 7.9% [6.4, 9.7] of
        # 1,000 null trials through the real gate, benchmarks/adaptive_fwer.py; 2..40 7.0-8.9%
        # in issue 21).
        raise ValueError(
            f"adaptive seeds need 3 <= MIN <= MAX, got {min_seeds}..{max_seeds}: a first look "
            "at 2 seeds cannot hold α on discrete metrics (two equal non-zero differences give "
            "t = ±inf; on karate-like accuracies 2..20 read false REGRESSED 7.9% of the time at "
            "α = 0.05, measured by benchmarks/adaptive_fwer.py). Start at 3 or more (e.g. 5..20)")
    looks = []
    n = int(min_seeds)
    while n < max_seeds:
        looks.append(n)
        n *= 2
    return (*looks, int(max_seeds))


def spent(fraction: Any, alpha: float, gamma: float = DEFAULT_GAMMA) -> np.ndarray:
    """Cumulative one-sided α the Hwang–Shih–DeCani function spends at information fractions
    ``fraction`` (in (0, 1]): ``α·(1 − e^{−γt}) / (1 − e^{−γ})``, ``α·t`` at ``γ = 0``."""
    t = np.asarray(fraction, dtype=float)
    if gamma == 0:
        return alpha * t
    return alpha * np.expm1(-gamma * t) / math.expm1(-gamma)


@dataclass(frozen=True)
class SequentialDesign:
    """A group-sequential design for one cell's paired differences.

    ``looks``: seeds at each look (increasing, the last is MAX); ``gamma``: the spending
    function's parameter; ``critical[k]``: the one-sided t critical value at look k for level
    ``alpha``; ``nominal[k]``: its per-look one-sided p
    threshold (``P(T_{n_k − 1} >= critical[k])``); ``spent[k]``: the cumulative α the spending
    function allows by look k; ``lean``: the lean rule's bound in standard errors (None: off).
    Build with :func:`sequential_design`.
    """

    looks: tuple[int, ...]
    alpha: float
    gamma: float
    critical: tuple[float, ...]
    nominal: tuple[float, ...]
    spent: tuple[float, ...]
    lean: float | None = DEFAULT_LEAN

    @property
    def max_seeds(self) -> int:
        return self.looks[-1]

    def at_level(self, alpha: float) -> SequentialDesign:
        """The same looks and spending at another level (e.g. α/m for Holm across m cells)."""
        return sequential_design(self.looks[0], self.looks[-1], alpha=alpha, gamma=self.gamma,
                                 lean=self.lean)


def sequential_design(min_seeds: int, max_seeds: int, *, alpha: float = 0.05,
                      gamma: float = DEFAULT_GAMMA,
                      lean: float | None = DEFAULT_LEAN) -> SequentialDesign:
    """The design of ``MIN..MAX`` (looks from :func:`schedule`) at one-sided level ``alpha`` for
    each of the three boundaries, with the lean rule at ``lean`` standard errors (None: off).
    Deterministic and cached per process."""
    looks = schedule(min_seeds, max_seeds)
    if not 0 < alpha < 0.5:
        raise ValueError(f"`alpha` must lie in (0, 0.5), got {alpha!r}")
    if not math.isfinite(gamma):
        raise ValueError(f"`gamma` must be a finite number, got {gamma!r}")
    if lean is not None and not 0 <= lean < math.inf:
        raise ValueError(f"`lean` must be a number >= 0 or None, got {lean!r}")
    return replace(_design(looks, float(alpha), float(gamma)),
                   lean=None if lean is None else float(lean))


@lru_cache(maxsize=64)
def _design(looks: tuple[int, ...], alpha: float, gamma: float) -> SequentialDesign:
    from scipy import special

    cum = spent(np.asarray(looks, dtype=float) / looks[-1], alpha, gamma)
    cum[-1] = alpha  # exactly α at MAX, whatever the rounding
    critical = _calibrate(looks, cum)
    # The first look's critical value is the exact t quantile of what it spends, so its nominal
    # level is that spend itself: a one-look design (a fixed seed count) decides at exactly
    # `alpha`, bit for bit as the fixed-n test does.
    nominal = (float(cum[0]), *(float(special.stdtr(n - 1, -c))
                                for n, c in zip(looks[1:], critical[1:], strict=True)))
    return SequentialDesign(looks=looks, alpha=alpha, gamma=gamma, critical=critical,
                            nominal=nominal, spent=tuple(float(a) for a in cum))


def _calibrate(looks: tuple[int, ...], cum: np.ndarray) -> tuple[float, ...]:
    """Per-look critical values of the sequential one-sample t statistics under the null
    (normal differences with mean at the boundary): crossing first at look k has probability
    ``cum[k] − cum[k−1]``."""
    critical = [float(_t_quantile(1 - cum[0], looks[0] - 1))]
    if len(looks) == 1:
        return tuple(critical)
    # The paths do not depend on α or on the spending: designs that share the looks before MAX
    # (5..160 and 5..200 share 5, 10, 20, 40, 80) share those looks' statistics.
    stats = _paths(looks).stats
    running = stats[0] < critical[0]
    for k in range(1, len(looks)):
        stat = stats[k]
        # paths that should first cross at look k
        j = int(round((cum[k] - cum[k - 1]) * CALIBRATION_PATHS))
        c = crossing(stat, running, j, looks[k])
        if c is None:   # nothing left to spend at this look
            c = float(stat[running].max(initial=0.0)) + 1
        critical.append(c)
        running &= stat < c
    return tuple(critical)


def crossing(stat: np.ndarray, running: np.ndarray, j: int, n: int) -> float | None:
    """The critical value that ``j`` of the running paths cross: halfway between the j-th and
    (j+1)-th largest of ``stat[running]`` (t statistics of ``n`` seeds); None when ``j`` is 0
    or all of them (the caller says what such a look's boundary is).

    Only the top ``j + 1`` running values matter, so the order statistics are taken among the
    running values above a cut (from the t law of ``stat``, generous), which holds them all
    when at least ``j + 1`` values pass it (checked; else all running values): the same
    numbers as sorting every path, at a fraction of the cost."""
    alive = int(np.count_nonzero(running))
    if not 0 < j < alive:
        return None
    share = 2 * (j + 1 + running.size - alive) / running.size + 1e-3
    top = stat[running & (stat >= _t_quantile(1 - share, n - 1))] if share < 0.5 else None
    if top is None or top.size <= j:
        top = stat[running]
    pair = -np.partition(-top, (j - 1, j))[j - 1:j + 1]
    return float(pair.mean())


@dataclass(frozen=True)
class _Paths:
    """:data:`CALIBRATION_PATHS` simulated null paths up to the last of some looks: the t
    statistic at each look, the running sum ``S`` and sum of squares about the mean ``Q`` at
    the last (σ = 1), and the generator state that draws the next look's block."""

    stats: tuple[np.ndarray, ...]
    S: np.ndarray
    Q: np.ndarray
    state: Mapping[str, Any]


@lru_cache(maxsize=6)
def _paths(looks: tuple[int, ...]) -> _Paths:
    """The paths of ``looks``, drawn look by look from :data:`CALIBRATION_SEED`, so the paths
    of a prefix of the looks are the first looks' paths of the whole: a search over MAX draws
    the looks before MAX once (arrays of 4 MB per look; six sets of looks kept)."""
    if len(looks) > 1:
        return _extend(_paths(looks[:-1]), looks[-2], looks[-1])
    gen = np.random.default_rng(CALIBRATION_SEED)
    zero = np.zeros(CALIBRATION_PATHS, dtype=np.float32)
    S, Q = grow_paths(gen, zero, zero, 0, looks[0])
    return _Paths((t_stat(S, Q, looks[0]),), S, Q, gen.bit_generator.state)


def _extend(head: _Paths, n_prev: int, n: int) -> _Paths:
    """``head``'s paths taken from ``n_prev`` to ``n`` seeds."""
    gen = np.random.Generator(np.random.PCG64())
    gen.bit_generator.state = head.state
    S, Q = grow_paths(gen, head.S, head.Q, n_prev, n)
    return _Paths((*head.stats, t_stat(S, Q, n)), S, Q, gen.bit_generator.state)


def grow_paths(gen: np.random.Generator, S: np.ndarray, Q: np.ndarray, n_prev: int,
               n: int) -> tuple[np.ndarray, np.ndarray]:
    """Simulated paths of standard normal differences taken from ``n_prev`` to ``n`` seeds
    through their sufficient statistics: ``S`` the running sum, ``Q`` the sum of squares about
    the mean (both zero at ``n_prev = 0``). The block of ``m = n − n_prev`` new normals adds a
    sum ~ N(0, m) and a within-block SS ~ χ²_{m−1}, independent; the dtype is ``S``'s."""
    m = n - n_prev
    dtype = S.dtype
    block = gen.standard_normal(S.size, dtype=dtype) * math.sqrt(m)
    within = _chi2(gen, m - 1, S.size, dtype)
    if n_prev == 0:
        return block, within
    return S + block, Q + within + (n_prev * m / n) * (S / n_prev - block / m) ** 2


def _chi2(gen: np.random.Generator, df: int, size: int, dtype: Any = np.float32) -> np.ndarray:
    if df == 0:
        return np.zeros(size, dtype=dtype)
    return 2 * gen.standard_gamma(df / 2, size, dtype=dtype)


def t_stat(S: np.ndarray, Q: np.ndarray, n: int) -> np.ndarray:
    """The one-sample t statistic of each path from its sum ``S`` and sum of squares about the
    mean ``Q`` at ``n`` seeds."""
    # A float32 χ² draw can be exactly 0 among millions of paths (small df): that path's t is
    # ±inf, its true limit, not a warning for the user of MIN..MAX = 3..6.
    with np.errstate(divide="ignore"):
        return (S / n) / np.sqrt(Q / (n - 1) / n)
