"""Cross-validation folds and single held-out evaluations: fold spread, the Nadeau–Bengio
corrected resampled t test, Wilson intervals and the bootstrap over test examples."""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np

from ._common import (
    ConfidenceInterval,
    RngLike,
    _check_level,
    _effect,
    _finite,
    _rng,
    _t_p_greater,
    _t_quantile,
)
from .paired import PairedResult


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

