"""Statistics moved into stats/ from gates/ and report/ (issue 60 item 3), checked against
independent references: scipy's paired t and statsmodels' Holm, a lattice simulation."""

from __future__ import annotations

import math

import numpy as np
import pytest

from pytest_graphnetz.stats.decisions import beats_reference
from pytest_graphnetz.stats.robust import tie_chance
from pytest_graphnetz.stats.tables import PairwiseRow


def test_beats_reference_is_scipys_one_sided_paired_t_holm_adjusted_by_statsmodels():
    stats = pytest.importorskip("scipy.stats")
    multipletests = pytest.importorskip("statsmodels.stats.multitest").multipletests
    rng = np.random.default_rng(3)
    scores = rng.normal(0.0, 1.0, (5, 8)) + np.array([0, 0.2, 1.5, -1, 0.8])[:, None]
    scores[3, 2] = math.nan  # a diverged challenger is not tested
    diffs, p_adj = beats_reference(scores, 0, alpha=0.05)
    tested = [1, 2, 4]
    raw = [stats.ttest_rel(scores[i], scores[0], alternative="greater").pvalue for i in tested]
    expected = multipletests(raw, method="holm")[1]
    assert p_adj[tested] == pytest.approx(expected, rel=1e-12)
    assert math.isnan(p_adj[0]) and math.isnan(p_adj[3]) and math.isnan(diffs[3])
    assert diffs[0] == 0 and diffs[2] == pytest.approx((scores[2] - scores[0]).mean())


def test_beats_reference_tests_nothing_against_a_diverged_reference_and_ties_give_p_1():
    scores = np.array([[1.0, math.nan, 2.0], [1.5, 2.5, 3.0]])
    diffs, p_adj = beats_reference(scores, 0)
    assert np.isnan(diffs).all() and np.isnan(p_adj).all()
    _, p_adj = beats_reference(np.array([[1.0, 2.0, 3.0], [1.0, 2.0, 3.0]]), 0)
    assert p_adj[1] == 1.0


@pytest.mark.parametrize(("p_holm", "diff", "better"), [
    (0.01, 0.3, "A"), (0.01, -0.3, "B"), (0.05, 0.3, "A"), (0.051, 0.3, None), (0.01, 0.0, None),
    (math.nan, math.nan, None)])
def test_a_pair_is_distinguishable_at_alpha_when_holm_p_is_at_most_alpha(p_holm, diff, better):
    row = PairwiseRow("t", "A", "B", 5, diff, 0, 0, p_holm, p_holm, 0, False, "paired-t")
    assert row.better_at(0.05) == better


def test_tie_chance_matches_a_lattice_simulation():
    rng = np.random.default_rng(7)
    step, sd = 0.01, 0.05
    # two independent draws of sd `sd` on a lattice of `step`: how often they are equal
    a, b = (np.round(rng.normal(0.0, sd, 400_000) / step) for _ in range(2))
    rate = float(np.mean(a == b))
    assert rate == pytest.approx(tie_chance(step, sd, 1), rel=0.03)
    assert tie_chance(step, sd, 3) == pytest.approx(tie_chance(step, sd, 1) ** 3, rel=1e-12)
    assert tie_chance(1.0, 0.01, 5) == 1.0
