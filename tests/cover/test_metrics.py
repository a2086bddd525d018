"""Link and regression metrics against hand-computed values and scipy's Mann-Whitney U."""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy.stats import mannwhitneyu

from pytest_graphnetz.base.metrics import accuracy, hits_at_k, mae, mrr, rmse, roc_auc


def test_auc_by_hand():
    # Positives 0.9, 0.4; negatives 0.5, 0.1. Pairs (pos > neg): (0.9,0.5) (0.9,0.1) (0.4,0.1)
    # win, (0.4,0.5) loses: 3 of 4.
    assert roc_auc([0.9, 0.4, 0.5, 0.1], [1, 1, 0, 0]) == 0.75


def test_auc_counts_a_tie_as_one_half():
    # Pairs: (0.5 vs 0.5) tie = 1/2, (0.5 vs 0.2) win = 1: (1.5) / 2.
    assert roc_auc([0.5, 0.5, 0.2], [1, 0, 0]) == 0.75


@settings(max_examples=50, deadline=None)
@given(st.lists(st.integers(0, 6), min_size=2, max_size=30), st.data())
def test_auc_equals_mann_whitney_u(scores, data):
    labels = data.draw(st.lists(st.integers(0, 1), min_size=len(scores), max_size=len(scores)))
    n_pos = sum(labels)
    if n_pos in (0, len(labels)):
        return
    s, y = np.asarray(scores, float), np.asarray(labels)
    u = mannwhitneyu(s[y == 1], s[y == 0]).statistic
    assert roc_auc(s, y) == pytest.approx(u / (n_pos * (len(y) - n_pos)))


def test_auc_refuses_one_class():
    with pytest.raises(ValueError, match="both classes"):
        roc_auc([0.1, 0.2], [1, 1])


def test_hits_at_k_by_hand():
    neg = [0.9, 0.7, 0.5, 0.3]
    pos = [0.95, 0.8, 0.6, 0.2]
    # Hits@1: above 0.9 -> 0.95 only. Hits@2: above 0.7 -> 0.95, 0.8. Hits@3: above 0.5 -> 3.
    assert hits_at_k(pos, neg, 1) == 0.25
    assert hits_at_k(pos, neg, 2) == 0.5
    assert hits_at_k(pos, neg, 3) == 0.75
    # A positive equal to the k-th negative is not a hit (strictly above, as OGB).
    assert hits_at_k([0.7], neg, 2) == 0.0
    # Fewer negatives than k: every positive is a hit.
    assert hits_at_k(pos, neg, 10) == 1.0


def test_mrr_by_hand():
    neg = [0.9, 0.7, 0.5]
    # 0.95: rank 1; 0.8: rank 2; 0.6: rank 3; 0.1: rank 4 -> (1 + 1/2 + 1/3 + 1/4) / 4.
    assert mrr([0.95, 0.8, 0.6, 0.1], neg) == pytest.approx((1 + 1 / 2 + 1 / 3 + 1 / 4) / 4)
    # Tied with 0.7: optimistic rank 2, pessimistic 3 -> 2.5.
    assert mrr([0.7], neg) == pytest.approx(1 / 2.5)


def test_regression_and_accuracy_by_hand():
    pred, target = [1.0, 2.0, 4.0], [1.0, 4.0, 1.0]
    assert mae(pred, target) == pytest.approx(5 / 3)
    assert rmse(pred, target) == pytest.approx(math.sqrt(13 / 3))
    assert accuracy([0, 1, 2, 2], [0, 1, 1, 2]) == 0.75
    with pytest.raises(ValueError, match="`predicted` has 2 values but `target` has 3"):
        mae([1, 2], [1, 2, 3])
