"""Expected validation performance of a hyperparameter search as a function of its budget
(Dodge et al. 2019, "Show Your Work: Improved Reporting of Experimental Results", EMNLP):
the expected best of ``k`` trials drawn at random, with replacement, from the ``N`` trials a
search ran, computed exactly from the order statistics of the empirical distribution.

With the trial scores sorted, ``v_(1) <= ... <= v_(N)``, the best of ``k`` draws is ``v_(i)``
with probability ``(i/N)^k − ((i−1)/N)^k``, so ``E[max_k] = Σ_i v_(i)·((i/N)^k − ((i−1)/N)^k)``
(ties need no care: the terms of tied values add up to their shared value's probability).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
from numpy.typing import ArrayLike


@dataclass(frozen=True)
class ExpectedMax:
    """``mean[j]``: the expected best trial score of ``budgets[j]`` random trials (the best is
    the maximum when ``higher_is_better``, else the minimum); ``n_trials``: the trials drawn
    from; ``sd[j]``: the standard deviation of that best."""

    budgets: tuple[int, ...]
    mean: tuple[float, ...]
    sd: tuple[float, ...]
    n_trials: int
    higher_is_better: bool


def expected_max(scores: ArrayLike, budgets: Sequence[int] | None = None, *,
                 higher_is_better: bool = True) -> ExpectedMax:
    """The expected best of ``k`` trials for every ``k`` in ``budgets`` (default ``1..N``).

    ``scores``: shape ``(N,)``, one score per trial (e.g. its mean validation metric over its
    seeds); all must be finite (a diverged trial has no score: leave it out, and say so).
    """
    values = np.asarray(scores, dtype=float)
    if values.ndim != 1 or values.size == 0:
        raise ValueError(f"`scores` must be a non-empty 1-D array, got shape {values.shape}")
    if not np.isfinite(values).all():
        raise ValueError("`scores` must be finite: leave diverged trials out")
    n = values.size
    ks = tuple(range(1, n + 1)) if budgets is None else tuple(int(k) for k in budgets)
    if any(k < 1 for k in ks):
        raise ValueError(f"`budgets` must be positive trial counts, got {list(ks)}")
    ordered = np.sort(values if higher_is_better else -values)
    cdf = np.arange(n + 1) / n
    means, sds = [], []
    for k in ks:
        weights = np.diff(cdf ** k)           # P(best of k draws = ordered[i])
        mean = float(weights @ ordered)
        var = float(weights @ (ordered - mean) ** 2)
        means.append(mean if higher_is_better else -mean)
        sds.append(float(np.sqrt(max(var, 0.0))))
    return ExpectedMax(ks, tuple(means), tuple(sds), n, bool(higher_is_better))


__all__ = ["ExpectedMax", "expected_max"]
