"""The test-set reuse ledger's budget against adaptive analysts who read a split through
verdicts (docs/history-bisect.md, "Test-set reuse").

The bound (pytest_graphnetz/cli/history/ledger.py): the k-th read of a split of n examples, chosen
knowing
the answers of the k − 1 reads before it (each one of K verdicts), is within
τ_k = √(((k − 1)·ln K + ln(2/β)) / (2n)) of its true value with probability ≥ 1 − β
(Dwork et al. 2015's description-length bound). Two analysts overfit a split of random ±1
labels (every query's true accuracy is 1/2, so holdout accuracy − 1/2 is pure overfit), each
answer a 5-level verdict of the query's holdout z score (cuts ±0.5, ±1.64: BETTER-, NOT
WORSE-, INCONCLUSIVE-like):

- *boosting* (Blum & Hardt 2015): k − 1 random classifiers read, the k-th read is their vote
  weighted by the verdict level;
- *feature selection* (Dwork et al. 2015's experiment): k − 1 random Gaussian features, each
  read for its correlation with the label on the holdout; kept when the verdict agrees in sign
  with its training correlation and is not the middle level; the k-th read is the sign of the
  signed sum of the kept features.

Per (analyst, n, k): the mean and 95th percentile of the overfit on the reused split, the share
past τ_k (the bound says at most β), the bound, and the same final query on a fresh split of n
examples (mean, and the share past the fresh τ_1).

    PYTHONPATH=. .venv/bin/python benchmarks/ledger_reuse.py \
        --out benchmarks/ledger_reuse_results.md
"""

from __future__ import annotations

import argparse
import math
import sys
from collections.abc import Callable
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from _tables import emit, pct, table  # noqa: E402

from pytest_graphnetz.cli.history.ledger import ReuseBudget  # noqa: E402

CUTS = [-1.64, -0.5, 0.5, 1.64]   # 5 verdict levels of a z score: -2 .. 2
RULE = ReuseBudget(answers=len(CUTS) + 1)


def labels(n: int, rng: np.random.Generator) -> np.ndarray:
    return rng.integers(0, 2, n) * 2 - 1


def boosting(n: int, reads: int, rng: np.random.Generator) -> tuple[float, float]:
    """(overfit on the reused split, on a fresh one) of the verdict-weighted vote."""
    y, fresh = labels(n, rng), labels(n, rng)
    guesses = rng.integers(0, 2, (reads - 1, n)) * 2 - 1
    z = ((guesses == y).mean(axis=1) - 0.5) * 2 * math.sqrt(n)
    vote = np.where((np.digitize(z, CUTS) - 2) @ guesses >= 0, 1, -1)
    return float((vote == y).mean() - 0.5), float((vote == fresh).mean() - 0.5)


def selection(n: int, reads: int, rng: np.random.Generator) -> tuple[float, float]:
    """(overfit on the reused split, on a fresh one) of the classifier on selected features;
    training, holdout and fresh sets of n examples each."""
    d = reads - 1
    x_train, x_hold, x_fresh = (rng.standard_normal((n, d)) for _ in range(3))
    y_train, y_hold, y_fresh = (labels(n, rng) for _ in range(3))
    train = y_train @ x_train / math.sqrt(n)      # ≈ N(0, 1): each feature's z on training
    level = np.digitize(y_hold @ x_hold / math.sqrt(n), CUTS) - 2
    keep = (np.sign(level) == np.sign(train)) & (level != 0)
    w = np.where(keep, np.sign(train), 0.0)

    def accuracy(x: np.ndarray, y: np.ndarray) -> float:
        return float((np.where(x @ w >= 0, 1, -1) == y).mean())
    return accuracy(x_hold, y_hold) - 0.5, accuracy(x_fresh, y_fresh) - 0.5


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--trials", type=int, default=500)
    parser.add_argument("--out", default=None)
    args = parser.parse_args()
    rng = np.random.default_rng(20261203)
    analysts: dict[str, Callable[[int, int, np.random.Generator], tuple[float, float]]] = {
        "boosting": boosting, "feature selection": selection}
    rows = []
    for name, analyst in analysts.items():
        for n in (500, 1000, 4000):
            for reads in (RULE.reads, 30, 100, 300):
                runs = np.array([analyst(n, reads, rng) for _ in range(args.trials)])
                reused, fresh = runs[:, 0], runs[:, 1]
                bound, fresh_bound = RULE.tolerance(reads, n), RULE.tolerance(1, n)
                rows.append([name, str(n), str(reads), f"{reused.mean():.4f}",
                             f"{np.quantile(reused, 0.95):.4f}", f"{bound:.4f}",
                             pct((reused > bound).mean()), f"{reused.mean() / bound:.2f}",
                             f"{fresh.mean():+.4f}", f"{fresh_bound:.4f}",
                             pct((fresh > fresh_bound).mean())])
    lines = [
        "# The reuse budget against adaptive analysts (benchmarks/ledger_reuse.py)", "",
        f"{args.trials} trials per row; answers of {RULE.answers} kinds, β = {RULE.beta}, "
        f"budget {RULE.reads} reads at factor {RULE.factor:g} (ledger.ReuseBudget). Overfit: "
        "holdout accuracy − 1/2 of the final (k-th) read, labels random.", "",
        *table(["analyst", "n", "reads k", "mean overfit", "95th pct", "bound τ_k",
                "past τ_k", "mean / τ_k", "fresh mean", "fresh τ_1", "fresh past τ_1"], rows),
        ""]
    emit(lines, args.out)


if __name__ == "__main__":
    main()
