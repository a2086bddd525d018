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
    gen = np.random.default_rng(CALIBRATION_SEED)
    N = CALIBRATION_PATHS
    # Sufficient statistics per path with σ = 1: running sum S and sum of squares about the
    # mean Q. A block of m new normals adds a sum ~ N(0, m) and within-block SS ~ χ²_{m−1}.
    n_prev = looks[0]
    S = gen.standard_normal(N, dtype=np.float32) * math.sqrt(n_prev)
    Q = _chi2(gen, n_prev - 1, N)
    running = _t_stat(S, Q, n_prev) < critical[0]
    for k in range(1, len(looks)):
        m = looks[k] - n_prev
        block = gen.standard_normal(N, dtype=np.float32) * math.sqrt(m)
        within = _chi2(gen, m - 1, N)
        n = looks[k]
        Q = Q + within + (n_prev * m / n) * (S / n_prev - block / m) ** 2
        S = S + block
        stat = _t_stat(S, Q, n)
        target = (cum[k] - cum[k - 1]) * N  # paths that should first cross at look k
        alive = stat[running]
        j = int(round(target))
        if 0 < j < alive.size:
            top = -np.partition(-alive, (j - 1, j))[j - 1:j + 1]
            c = float(top.mean())
        else:  # nothing left to spend at this look
            c = float(alive.max(initial=0.0)) + 1
        critical.append(c)
        running &= stat < c
        n_prev = n
    return tuple(critical)


def _chi2(gen: np.random.Generator, df: int, size: int) -> np.ndarray:
    if df == 0:
        return np.zeros(size, dtype=np.float32)
    return 2 * gen.standard_gamma(df / 2, size, dtype=np.float32)


def _t_stat(S: np.ndarray, Q: np.ndarray, n: int) -> np.ndarray:
    # A float32 χ² draw can be exactly 0 among millions of paths (small df): that path's t is
    # ±inf, its true limit, not a warning for the user of MIN..MAX = 3..6.
    with np.errstate(divide="ignore"):
        return (S / n) / np.sqrt(Q / (n - 1) / n)
