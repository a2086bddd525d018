"""Collapsed seeds: a check that flags a cell in which one seed of one side fell far below the
others, so the gate can say so beside its verdict.

A seed "collapses" when training fails quietly (a dead initialisation, a loss spike, a bad
split) and its metric lands far below the other seeds'. On the paired differences
``d = candidate − baseline`` (+ = better) a baseline collapse is a high outlier and a candidate
collapse a low one. Each side is tested with the one-sided Grubbs test (Grubbs 1969,
Technometrics 11:1-21): ``G = (max d − mean) / sd`` (baseline) or ``(mean − min d) / sd``
(candidate) against ``((n − 1)/√n)·√(t² / (n − 2 + t²))``, ``t`` the upper ``α/n`` quantile of
Student's t with ``n − 2`` df, which flags normal differences with probability at most ``α``
per side.

What a flag does not do: restore the t test's error rate. When seeds collapse at a small rate,
the t test's excess errors come from the samples in which no seed collapsed (their mean sits
away from the true mean, which the rare collapses carry), and no check on those seeds can see
them (``benchmarks/skew.py`` measures both). The flag reports a collapse that did happen.

Its converse, :func:`tie_chance`: how unlikely seeds that all came out exactly equal are, were
training changed.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
from numpy.typing import ArrayLike

from pytest_graphnetz.stats._common import as_vector, t_moments, t_quantile

DEFAULT_COLLAPSE_ALPHA = 0.01  # false flags per side on normal differences


def grubbs_critical(n: int, alpha: float = DEFAULT_COLLAPSE_ALPHA) -> float:
    """One-sided Grubbs critical value for ``n`` observations at level ``alpha``."""
    if n < 3:
        raise ValueError(f"the Grubbs test needs at least 3 values, got {n}")
    if not 0 < alpha < 1:
        raise ValueError(f"`alpha` must lie in (0, 1), got {alpha!r}")
    t = float(t_quantile(1 - alpha / n, n - 2))
    return (n - 1) / math.sqrt(n) * math.sqrt(t * t / (n - 2 + t * t))


@dataclass(frozen=True)
class CollapseCheck:
    """Whether a cell's paired seeds show a collapse.

    ``baseline_seeds`` / ``candidate_seeds``: the seed (label) whose side collapsed, empty when
    none; ``g_baseline`` / ``g_candidate``: the Grubbs statistics of the highest and lowest
    difference; ``critical``: their critical value at ``alpha`` and ``n`` (``inf`` below 3
    seeds or with no spread: nothing can be flagged).
    """

    n: int
    baseline_seeds: tuple[int, ...]
    candidate_seeds: tuple[int, ...]
    g_baseline: float
    g_candidate: float
    critical: float
    alpha: float

    @property
    def flagged(self) -> bool:
        return bool(self.baseline_seeds or self.candidate_seeds)


def collapse_check(baseline: ArrayLike, candidate: ArrayLike, *, higher_is_better: bool = True,
                   alpha: float = DEFAULT_COLLAPSE_ALPHA,
                   seeds: Sequence[int] | None = None) -> CollapseCheck:
    """Flags a seed at which the baseline or the candidate collapsed: ``baseline`` and
    ``candidate`` (n_seeds,) aligned by seed, finite (diverged seeds are decided apart).
    ``seeds`` labels the positions (default 0, 1, ...)."""
    base, cand = as_vector(baseline, "baseline"), as_vector(candidate, "candidate")
    if base.shape != cand.shape:
        raise ValueError(f"`baseline` has {base.size} seeds but `candidate` has {cand.size}; "
                         "pair them by seed value first")
    if not (np.all(np.isfinite(base)) and np.all(np.isfinite(cand))):
        raise ValueError("`baseline` and `candidate` must be finite: diverged seeds are decided "
                         "by the gate, not by the collapse check")
    names = list(range(base.size)) if seeds is None else list(seeds)
    if len(names) != base.size:
        raise ValueError(f"{len(names)} seed labels for {base.size} values")
    if not 0 < alpha < 1:
        raise ValueError(f"`alpha` must lie in (0, 1), got {alpha!r}")
    d = (cand - base) * (1.0 if higher_is_better else -1.0)
    n = d.size
    sd = float(t_moments(d)[1]) if n >= 2 else 0.0   # scaled: finite never gives inf
    if n < 3 or not sd > 0:
        return CollapseCheck(n=n, baseline_seeds=(), candidate_seeds=(), g_baseline=0.0,
                             g_candidate=0.0, critical=math.inf, alpha=float(alpha))
    mean = float(d.mean())
    g_base, g_cand = (float(d.max()) - mean) / sd, (mean - float(d.min())) / sd
    crit = grubbs_critical(n, alpha)
    return CollapseCheck(
        n=n,
        baseline_seeds=(names[int(d.argmax())],) if g_base > crit else (),
        candidate_seeds=(names[int(d.argmin())],) if g_cand > crit else (),
        g_baseline=g_base, g_candidate=g_cand, critical=crit, alpha=float(alpha))


def grubbs_statistics(D: ArrayLike) -> tuple[np.ndarray, np.ndarray]:
    """Per row of ``D`` (cells, n) of paired differences: the one-sided Grubbs statistics of
    the highest (baseline collapse) and lowest (candidate collapse) value; 0 with no spread.
    The vectorised form of :func:`collapse_check`, for simulation."""
    D = np.asarray(D, dtype=float)
    mean = D.mean(axis=1)
    sd = D.std(axis=1, ddof=1)
    safe = np.where(sd > 0, sd, 1.0)
    high = np.where(sd > 0, (D.max(axis=1) - mean) / safe, 0.0)
    low = np.where(sd > 0, (mean - D.min(axis=1)) / safe, 0.0)
    return high, low


def tie_chance(step: float, sd: float, n: int) -> float:
    """The chance that ``n`` independent paired differences of sd ``sd·√2``, on a lattice of
    step ``step`` (a test set's resolution), all land exactly on 0: about
    ``step / (2·sd·√π)`` each (the normal density at 0 times the step), capped at 1."""
    return min(1.0, step / (2 * sd * math.sqrt(math.pi))) ** n
