"""The test-set reuse ledger against adaptive analysts who read a split through verdicts
(docs/history-bisect.md, "Test-set reuse"), and where it speaks.

The bound (pytest_graphnetz/cli/history/ledger.py): a read chosen knowing b bits of a prefix
code fixed in advance is within τ(b) = √((b·ln 2 + ln(2/β)) / (2n)) of its true value with
probability ≥ 1 − β (Dwork et al. 2015's description-length bound). The ledger charges a read
1 bit when its verdict repeats the cell's last and 1 + log₂(K − 1) bits otherwise. Two
analysts overfit a split of random ±1 labels (every query's true accuracy is 1/2, so holdout
accuracy − 1/2 is pure overfit), each answer a verdict level of the query's holdout z score,
in two regimes: five levels that change often (cuts ±0.5, ±1.64) and three levels of which
the middle (NOT WORSE) is 90% (cuts ±1.64: an ordinary history):

- *boosting* (Blum & Hardt 2015): k − 1 random classifiers read, the k-th read is their vote
  weighted by the verdict level;
- *feature selection* (Dwork et al. 2015's experiment): k − 1 random Gaussian features, each
  read for its correlation with the label on the holdout; kept when the verdict agrees in sign
  with its training correlation and is not the middle level; the k-th read is the sign of the
  signed sum of the kept features.

Per (analyst, regime, n, k): the bits charged per read, the mean and 95th percentile of the
overfit on the reused split, the share past τ at the bits charged (the bound says at most β),
and the same final query on a fresh split. Then where the ledger speaks: ten reads of one
cell, every verdict NOT WORSE, on splits of 120 to 2.2 million examples at δ = 1 point.

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

REGIMES = {"5 levels, change often": [-1.64, -0.5, 0.5, 1.64],
           "3 levels, 90% NOT WORSE": [-1.64, 1.64]}


def names(cuts: list[float]) -> list[str]:
    return (["REGRESSED", "INCONCLUSIVE", "NOT WORSE", "BETTER", "IDENTICAL"] if len(cuts) == 4
            else ["REGRESSED", "NOT WORSE", "BETTER"])


def charged(level: np.ndarray, cuts: list[float], rule: ReuseBudget) -> float:
    """The ledger's bits for the verdicts ``level`` (−m..m, one cell read in order)."""
    said = [names(cuts)[k + len(cuts) // 2] for k in level]
    return sum(rule.cost(v, None if i == 0 else said[i - 1]) for i, v in enumerate(said))


def labels(n: int, rng: np.random.Generator) -> np.ndarray:
    return rng.integers(0, 2, n) * 2 - 1


def boosting(n: int, reads: int, cuts: list[float], rule: ReuseBudget,
             rng: np.random.Generator) -> tuple[float, float, float]:
    """(overfit on the reused split, on a fresh one, bits charged) of the verdict-weighted
    vote."""
    y, fresh = labels(n, rng), labels(n, rng)
    guesses = rng.integers(0, 2, (reads - 1, n)) * 2 - 1
    z = ((guesses == y).mean(axis=1) - 0.5) * 2 * math.sqrt(n)
    level = np.digitize(z, cuts) - len(cuts) // 2
    vote = np.where(level @ guesses >= 0, 1, -1)
    return (float((vote == y).mean() - 0.5), float((vote == fresh).mean() - 0.5),
            charged(level, cuts, rule))


def selection(n: int, reads: int, cuts: list[float], rule: ReuseBudget,
              rng: np.random.Generator) -> tuple[float, float, float]:
    """(overfit on the reused split, on a fresh one, bits charged) of the classifier on
    selected features; training, holdout and fresh sets of n examples each."""
    d = reads - 1
    x_train, x_hold, x_fresh = (rng.standard_normal((n, d)) for _ in range(3))
    y_train, y_hold, y_fresh = (labels(n, rng) for _ in range(3))
    train = y_train @ x_train / math.sqrt(n)      # ≈ N(0, 1): each feature's z on training
    level = np.digitize(y_hold @ x_hold / math.sqrt(n), cuts) - len(cuts) // 2
    keep = (np.sign(level) == np.sign(train)) & (level != 0)
    w = np.where(keep, np.sign(train), 0.0)

    def accuracy(x: np.ndarray, y: np.ndarray) -> float:
        return float((np.where(x @ w >= 0, 1, -1) == y).mean())
    return (accuracy(x_hold, y_hold) - 0.5, accuracy(x_fresh, y_fresh) - 0.5,
            charged(level, cuts, rule))


def speaking_rows(rule: ReuseBudget) -> list[list[str]]:
    """Ten reads of one cell, every verdict NOT WORSE (10 bits), at δ = 1 point: what the
    ledger says per split size."""
    delta, rows = 0.01, []
    for n in (120, 1000, 20_000, 100_000, 2_200_000):
        fresh, now = rule.tolerance(0, n), rule.tolerance(10, n)
        small = fresh > delta
        budget = "—" if small else f"{rule.budget_bits(n, delta):.0f}"
        status = ("TOO SMALL FOR δ" if small else
                  "PAST BUDGET" if now - fresh > rule.share * delta else "ok")
        old = ReuseBudgetPlain.tolerance(10, n) - fresh   # 10 reads at log2 7 bits each
        rows.append([f"{n:,}", f"±{100 * fresh:.2f}", f"+{100 * (now - fresh):.2f}", budget,
                     status, f"+{100 * old:.2f}"])
    return rows


class ReuseBudgetPlain:
    """The count the ledger used to keep: every read charged log₂ 7 bits."""

    @staticmethod
    def tolerance(reads: int, n: int) -> float:
        return ReuseBudget().tolerance(reads * math.log2(7), n)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--trials", type=int, default=500)
    parser.add_argument("--out", default=None)
    args = parser.parse_args()
    rng = np.random.default_rng(20261203)
    analysts: dict[str, Callable[..., tuple[float, float, float]]] = {
        "boosting": boosting, "feature selection": selection}
    rows = []
    for name, analyst in analysts.items():
        for regime, cuts in REGIMES.items():
            rule = ReuseBudget(answers=len(cuts) + 1)
            for n in (500, 4000):
                for reads in (10, 30, 100, 300):
                    runs = np.array([analyst(n, reads, cuts, rule, rng)
                                     for _ in range(args.trials)])
                    reused, fresh, bits = runs[:, 0], runs[:, 1], runs[:, 2]
                    bound = np.array([rule.tolerance(b, n) for b in bits])
                    fresh_bound = rule.tolerance(0, n)
                    rows.append([name, regime, str(n), str(reads),
                                 f"{bits.mean() / (reads - 1):.2f}", f"{reused.mean():.4f}",
                                 f"{np.quantile(reused, 0.95):.4f}", f"{bound.mean():.4f}",
                                 pct((reused > bound).mean()),
                                 f"{reused.mean() / bound.mean():.2f}",
                                 f"{fresh.mean():+.4f}", pct((fresh > fresh_bound).mean())])
    rule = ReuseBudget()
    lines = [
        "# The reuse ledger against adaptive analysts (benchmarks/ledger_reuse.py)", "",
        f"{args.trials} trials per row; β = {rule.beta}; a read costs 1 bit when its verdict "
        "repeats the last, 1 + log₂(K − 1) otherwise. Overfit: holdout accuracy − 1/2 of the "
        "final (k-th) read, labels random; τ at the bits charged the reads before it.", "",
        *table(["analyst", "verdicts", "n", "reads k", "bits per read", "mean overfit",
                "95th pct", "mean τ (charged bits)", "past τ", "mean / τ", "fresh mean",
                "fresh past τ_1"], rows),
        "", "## Where the ledger speaks", "",
        f"Ten reads of one cell, every verdict NOT WORSE (10 bits), δ = 1 point, share "
        f"{rule.share:g} (PAST BUDGET when the reuse term exceeds {100 * rule.share:g}% of δ); "
        "in points. Last column: the reuse term the old count (log₂ 7 bits a read) gave.", "",
        *table(["test n", "fresh ±τ_1 (pt)", "reuse term (pt)", "budget (bits)", "status",
                "old reuse term (pt)"], speaking_rows(rule)), ""]
    emit(lines, args.out)


if __name__ == "__main__":
    main()
