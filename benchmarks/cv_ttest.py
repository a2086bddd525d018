"""False-positive rate of the plain vs the corrected resampled t test on k-fold CV.

A null comparison by construction: two nearest-centroid classifiers on a two-class Gaussian
problem, A reading features 0..9 and B features 10..19, every feature equally informative, so
both have the same expected accuracy. Each replication draws a fresh data set of ``n``
examples, runs r × 10-fold cross-validation (r repeats, each a new stratified partition) with
the split ``Task(folds=k)`` uses (test: fold f; validation: fold f + 1, unused by this learner;
training: the other k − 2 folds) and tests the J = 10·r paired fold differences A − B two ways
at α = 0.05:

- the plain paired t test (variance s²/J), which treats the folds as independent;
- the corrected resampled t test (Nadeau–Bengio, variance (1/J + n_test/n_train)·s² with
  n_test/n_train = 1/(k − 2), what ``Task(folds=k)`` reports and gates use), via
  ``pytest_graphnetz.stats``.

The share of replications that reject is each test's false-positive rate. The plain test's
rate climbs above α (more so with more repeats: repeating the CV adds no independent data);
the corrected test's stays at or below α.

Run: ``python benchmarks/cv_ttest.py [--reps 2000] [--out benchmarks/cv_ttest_results.md]``.
"""

from __future__ import annotations

import argparse
from pathlib import Path

import numpy as np
from scipy import stats

from pytest_graphnetz.stats.heldout import corrected_resampled_ttest

K = 10
ALPHA = 0.05


def fold_accuracies(x: np.ndarray, y: np.ndarray, repeats: int, rng: np.random.Generator):
    """Per fold of ``repeats`` × 10-fold CV: accuracies of A and B, each (10·repeats,)."""
    acc_a, acc_b = [], []
    for _ in range(repeats):
        order = rng.permutation(y.size)
        order = order[np.argsort(y[order], kind="stable")]  # stratified, as Task(folds=k)
        fold = np.empty(y.size, dtype=int)
        fold[order] = np.arange(y.size) % K
        for f in range(K):
            test, train = fold == f, (fold != f) & (fold != (f + 1) % K)
            for cols, out in ((slice(0, 10), acc_a), (slice(10, 20), acc_b)):
                xs = x[:, cols]
                c0, c1 = xs[train & (y == 0)].mean(0), xs[train & (y == 1)].mean(0)
                pred = (np.square(xs[test] - c1).sum(1) < np.square(xs[test] - c0).sum(1))
                out.append(np.mean(pred == y[test]))
    return np.array(acc_a), np.array(acc_b)


def simulate(repeats: int, n: int, reps: int, seed: int) -> tuple[float, float]:
    """(plain, corrected) false-positive rates over ``reps`` null replications."""
    rng = np.random.default_rng(seed)
    plain = corrected = 0
    for _ in range(reps):
        y = rng.integers(0, 2, size=n)
        x = rng.normal(size=(n, 20)) + np.where(y[:, None] == 1, 0.15, -0.15)
        a, b = fold_accuracies(x, y, repeats, rng)
        d = a - b
        if np.all(d == d[0]):
            continue  # no spread: neither test can reject
        plain += stats.ttest_rel(a, b).pvalue <= ALPHA
        corrected += corrected_resampled_ttest(a, b, n_train=K - 2, n_test=1).p_value <= ALPHA
    return plain / reps, corrected / reps


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--reps", type=int, default=2000)
    parser.add_argument("--out", type=Path, default=None)
    args = parser.parse_args()
    lines = [f"Null difference, {K}-fold CV, α = {ALPHA}, {args.reps} replications per row "
             "(benchmarks/cv_ttest.py)", "",
             "| examples | repeats × folds | plain paired t: false positives | "
             "corrected resampled t: false positives |", "|---:|---:|---:|---:|"]
    for i, (n, repeats) in enumerate([(200, 1), (200, 10), (1000, 1), (1000, 10)]):
        plain, corrected = simulate(repeats, n, args.reps, seed=i)
        se = (ALPHA * (1 - ALPHA) / args.reps) ** 0.5
        lines.append(f"| {n} | {repeats} × {K} | {plain:.3f} | {corrected:.3f} |")
        print(lines[-1], f"(binomial se at α: {se:.3f})", flush=True)
    text = "\n".join(lines)
    print(text)
    if args.out:
        args.out.write_text(text + "\n")


if __name__ == "__main__":
    main()
