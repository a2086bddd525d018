"""The suite row: how often a gate call over T tasks fails (any REGRESSED) when a
model loses 0.3 point on every task (diffuse), when it loses on one task only (concentrated),
and when nothing changed, for Holm over the cells alone and for the cells plus the suite row
(the per-seed mean difference across tasks, one paired t test) in several families.

Per-task paired differences d[task, seed] (accuracy points, 10 seeds):

- *normal*: independent across tasks, sd 0.86 point (the block model's paired sd: the
  "labels -25%" candidate's real differences on the committed gate-quality pool);
- *resampled real*: each task's differences drawn with replacement from the pool's
  "extra draws" candidate (an innocent change, real shape, sd 0.86), re-centred on the effect;
- *correlated*: normal, sd 0.86, correlation 0.5 between tasks at the same seed (a seed that
  is lucky on one task is lucky on the others: the row's spread grows, its test stays valid).

Families (one-sided α = 0.05 per call, REGRESSED at margin 0):

- *cells, Holm*: today;
- *suite row alone*: the row at α, no cells (the reference: the row tested alone);
- *one family, weight w*: weighted Holm over the cells and the row
  (:func:`pytest_graphnetz.stats.suite.suite_family`), the row first tested at ``w·α``;
  ``w = 1/(T+1)`` is plain Holm over T + 1 hypotheses;
- *separate α*: Holm over the cells at α and the row at its own α (the call can then fail by
  luck up to 2α).

    python benchmarks/suite_row.py --quick          # 4,000 trials per cell
    python benchmarks/suite_row.py --out benchmarks/suite_row_results.md   # 20,000

Bit for bit from ``--seed`` and the committed pool; the last line is a SHA-256 of the tables.
"""

from __future__ import annotations

import argparse
import json
import math
import sys
from collections.abc import Sequence
from pathlib import Path

import numpy as np
from scipy import special

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from _tables import emit, table  # noqa: E402

from pytest_graphnetz.stats.suite import weighted_holm  # noqa: E402

POOL = Path(__file__).with_name("gate_quality_values.json")
ALPHA = 0.05
SEEDS = 10
TASKS = (5, 10)
SD = 0.86
DIFFUSE = -0.3
CONCENTRATED = -1.5  # the "fewer epochs" regression's size, on one task only


def pool_shape() -> np.ndarray:
    pool = json.loads(POOL.read_text(encoding="utf-8"))["csbm_homophilous"]["values"]
    d = 100 * (np.asarray(pool["extra draws"]["final"]) - np.asarray(pool["baseline"]["final"]))
    return d - d.mean()


def noise(kind: str, rng: np.random.Generator, trials: int, tasks: int,
          real: np.ndarray) -> np.ndarray:
    """(trials, tasks, seeds) paired differences with mean 0."""
    shape = (trials, tasks, SEEDS)
    if kind == "resampled real":
        return real[rng.integers(0, real.size, shape)]
    if kind == "correlated 0.5":
        shared = rng.standard_normal((trials, 1, SEEDS))
        return SD * (math.sqrt(0.5) * shared + math.sqrt(0.5) * rng.standard_normal(shape))
    return SD * rng.standard_normal(shape)


def p_less(X: np.ndarray) -> np.ndarray:
    """One-sided paired t p-value of H1 "mean < 0" along the last axis."""
    n = X.shape[-1]
    t = X.mean(axis=-1) / (X.std(axis=-1, ddof=1) / math.sqrt(n))
    return special.stdtr(n - 1, t)


def fails(D: np.ndarray, tasks: int) -> dict[str, float]:
    """Share of trials in which the call fails, per family."""
    cells = p_less(D)
    row = p_less(D.mean(axis=1))
    out = {
        "cells, Holm (today)": weighted_holm(cells, np.full(tasks, 1 / tasks), ALPHA)[0].any(1),
        "suite row alone at α": row <= ALPHA,
    }
    both = np.column_stack([cells, row])
    for label, w in ((f"one family, w = 1/{tasks + 1} (Holm)", 1 / (tasks + 1)),
                     ("one family, w = 0.5", 0.5), ("one family, w = 0.8", 0.8)):
        weights = np.array([(1 - w) / tasks] * tasks + [w])
        out[label] = weighted_holm(both, weights, ALPHA)[0].any(axis=1)
    out["separate α (cells Holm + row)"] = out["cells, Holm (today)"] | (row <= ALPHA)
    return {k: float(np.mean(v)) for k, v in out.items()}


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--trials", type=int, default=20_000)
    parser.add_argument("--quick", action="store_true", help="4,000 trials per cell")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--out", default=None)
    args = parser.parse_args(argv)
    trials = 4000 if args.quick else args.trials
    rng = np.random.default_rng(args.seed)
    real = pool_shape()
    lines = [f"# Suite row: {trials} trials per cell, seed {args.seed}, {SEEDS} seeds, α = "
             f"{ALPHA}, paired sd {SD} point per task", "",
             "Share of calls that fail (any REGRESSED). Monte-Carlo standard error about "
             f"{100 * math.sqrt(ALPHA * (1 - ALPHA) / trials):.2f} points at 5%.", ""]
    for kind in ("normal", "resampled real", "correlated 0.5"):
        rows = []
        results = {}
        for tasks in TASKS:
            base = noise(kind, rng, trials, tasks, real)
            diffuse = base + DIFFUSE
            concentrated = base.copy()
            concentrated[:, 0, :] += CONCENTRATED
            null = noise(kind, rng, trials, tasks, real)
            results[tasks] = [fails(X, tasks) for X in (null, diffuse, concentrated)]
        names = list(results[TASKS[0]][0])
        for i, name in enumerate(names):
            row = [name.replace(f"1/{TASKS[0] + 1}", "1/(T+1)")]
            for tasks in TASKS:
                key = list(results[tasks][0])[i]
                row += [f"{100 * results[tasks][j][key]:.1f}%" for j in range(3)]
            rows.append(row)
        header = ["family"]
        for tasks in TASKS:
            header += [f"T={tasks}: no change", f"T={tasks}: {DIFFUSE:g} pt on every task",
                       f"T={tasks}: {CONCENTRATED:g} pt on one task"]
        lines += [f"## {kind}", "", *table(header, rows), ""]
    emit(lines, args.out)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
