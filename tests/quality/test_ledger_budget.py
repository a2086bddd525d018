"""The reuse ledger's budget by simulation: an analyst who reads a split only through verdicts
(Blum & Hardt's boosting attack, answered by verdicts) overfits it within the bound at the bits
the ledger charged, the bound is not vacuous, and a fresh split shows no bias."""

from __future__ import annotations

import math

import numpy as np
import pytest

from pytest_graphnetz.cli.history.ledger import ReuseBudget

LEVELS = ["REGRESSED", "INCONCLUSIVE", "NOT WORSE", "BETTER", "IDENTICAL"]


def verdict_attack(n: int, reads: int, cuts: list[float], rule: ReuseBudget,
                   rng: np.random.Generator) -> tuple[float, float, float]:
    """An analyst who reads a holdout of ``n`` random ±1 labels only through verdicts:
    ``reads`` − 1 random classifiers, each answered with a level of its holdout z score
    (``cuts``; the middle level reads NOT WORSE); the last read is their vote weighted by level
    (Blum & Hardt's boosting attack, answered by verdicts). Every classifier's true accuracy
    is 1/2, so its accuracy minus 1/2 is overfit: returned on the reused holdout and on a
    fresh one, with the bits the ledger charged the reads before the last."""
    y, fresh = (rng.integers(0, 2, n) * 2 - 1 for _ in range(2))
    guesses = rng.integers(0, 2, (reads - 1, n)) * 2 - 1
    z = ((guesses == y).mean(axis=1) - 0.5) * 2 * math.sqrt(n)
    level = np.digitize(z, cuts) - len(cuts) // 2
    names = LEVELS if len(cuts) == 4 else ["REGRESSED", "NOT WORSE", "BETTER"]
    said = [names[k + len(cuts) // 2] for k in level]
    bits = sum(rule.cost(v, None if i == 0 else said[i - 1]) for i, v in enumerate(said))
    vote = np.where(level @ guesses >= 0, 1, -1)
    return float((vote == y).mean() - 0.5), float((vote == fresh).mean() - 0.5), bits


@pytest.mark.parametrize("cuts", [[-1.64, -0.5, 0.5, 1.64], [-1.64, 1.64]])
def test_an_analyst_reading_verdicts_overfits_a_reused_split_within_the_bound(cuts) -> None:
    """Five verdict levels that change often (≈2.4 bits a read), or three of which NOT WORSE is
    90% (≈1.2 bits a read, the ordinary history): at 20 and 60 reads the last read's overfit
    stays under τ at the bits charged in at least 1 − β of trials, and reaches a fifth of it
    on average (the bound is not vacuous); on a fresh split the same classifier shows no
    bias."""
    rule, n, trials = ReuseBudget(answers=len(cuts) + 1), 500, 200
    rng = np.random.default_rng(7)
    for reads in (20, 60):
        runs = np.array([verdict_attack(n, reads, cuts, rule, rng) for _ in range(trials)])
        reused, fresh, bits = runs[:, 0], runs[:, 1], runs[:, 2]
        bound = np.array([rule.tolerance(b, n) for b in bits])
        assert (reused > bound).mean() <= rule.beta
        assert reused.mean() >= 0.2 * bound.mean()
        assert abs(fresh.mean()) <= 3 * fresh.std(ddof=1) / math.sqrt(trials)
        assert (fresh > rule.tolerance(0, n)).mean() <= rule.beta
        per_read = bits.mean() / (reads - 1)
        assert per_read < 1.4 if len(cuts) == 2 else per_read > 2.2
