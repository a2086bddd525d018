"""Metrics the built-in trainers record: pure functions over 1-D arrays of scores.

PyG's ``torch_geometric.metrics`` (2.8) holds retrieval metrics for recommendation (per-source
top-k lists of destinations); link *prediction* benchmarks rank each positive edge against the
sampled negative edges of its split instead (the OGB convention), so those are written here.
AUC comes from scipy's average ranks (the Mann-Whitney U statistic), which handles ties.

Every function takes array-likes (numpy arrays, lists, CPU tensors) and returns a float.
"""

from __future__ import annotations

from typing import Any

import numpy as np


def _vector(values: Any, name: str) -> np.ndarray:
    arr = np.asarray(values, dtype=float).reshape(-1)
    if arr.size == 0:
        raise ValueError(f"`{name}` is empty: a metric needs at least one value")
    return arr


def _pair(predicted: Any, target: Any, names: tuple[str, str] = ("predicted", "target")
          ) -> tuple[np.ndarray, np.ndarray]:
    p, t = _vector(predicted, names[0]), _vector(target, names[1])
    if p.shape != t.shape:
        raise ValueError(f"`{names[0]}` has {p.size} values but `{names[1]}` has {t.size}")
    return p, t


def roc_auc(scores: Any, labels: Any) -> float:
    """Area under the ROC curve of ``scores`` [n] for binary ``labels`` [n] (1 = positive).

    Equals P(score of a random positive > score of a random negative), ties counting one half:
    U / (n_pos * n_neg) with U the Mann-Whitney statistic from average ranks.
    """
    from scipy.stats import rankdata

    s, y = _pair(scores, labels, names=("scores", "labels"))
    pos = y == 1
    n_pos, n_neg = int(pos.sum()), int((~pos).sum())
    if n_pos == 0 or n_neg == 0:
        raise ValueError(f"AUC needs both classes; got {n_pos} positives and {n_neg} negatives")
    ranks = rankdata(s)  # average ranks: a tie between a positive and a negative counts 1/2
    u = ranks[pos].sum() - n_pos * (n_pos + 1) / 2
    return float(u / (n_pos * n_neg))


def hits_at_k(pos_scores: Any, neg_scores: Any, k: int) -> float:
    """Fraction of positive edges [n_pos] scored strictly above the k-th best negative [n_neg].

    The OGB link-prediction Hits@K. With fewer than ``k`` negatives every positive is a hit.
    """
    if k < 1:
        raise ValueError(f"`k` must be >= 1, got {k}")
    pos, neg = _vector(pos_scores, "pos_scores"), _vector(neg_scores, "neg_scores")
    if neg.size < k:
        return 1.0
    kth_best = np.sort(neg)[-k]
    return float(np.mean(pos > kth_best))


def mrr(pos_scores: Any, neg_scores: Any) -> float:
    """Mean reciprocal rank of each positive [n_pos] among all negatives [n_neg] of its split.

    A positive's rank is 1 + the number of negatives above it; a negative tied with it counts
    one half (the mean of the optimistic and pessimistic rank, as OGB does).
    """
    pos, neg = _vector(pos_scores, "pos_scores"), _vector(neg_scores, "neg_scores")
    neg = np.sort(neg)
    not_above = np.searchsorted(neg, pos, side="right")
    above = neg.size - not_above
    tied = not_above - np.searchsorted(neg, pos, side="left")
    rank = 1.0 + above + 0.5 * tied
    return float(np.mean(1.0 / rank))


def accuracy(predicted: Any, target: Any) -> float:
    """Fraction of ``predicted`` class ids [n] equal to ``target`` [n]."""
    p, t = _pair(predicted, target)
    return float(np.mean(p == t))


def mae(predicted: Any, target: Any) -> float:
    """Mean absolute error between ``predicted`` [n] and ``target`` [n]."""
    p, t = _pair(predicted, target)
    return float(np.mean(np.abs(p - t)))


def rmse(predicted: Any, target: Any) -> float:
    """Root mean squared error between ``predicted`` [n] and ``target`` [n]."""
    p, t = _pair(predicted, target)
    return float(np.sqrt(np.mean((p - t) ** 2)))
