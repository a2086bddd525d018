"""The candidates weighed for skewed paired differences, measured in the rerun chain
10 → 20 → 40 → 80 before one was built, each deciding every look on that look's seeds only (the
design's invariant: no statistic at look k reads a seed past n_k):

- *plain t*: the paired t, no correction;
- *Hall from 20*: Hall's skew-corrected t (``stats.skew.hall_t``, on both tails) where |z| > 2 on
  the look's seeds, on a look of 20 or more seeds (the old guard's rule, made prefix-only);
- *Hall from 10 (shipped before)*: the same from the first look, 10 seeds: the gate's rule until
  the guard became tighten-only (``skew_candidates.py``, which measures its successor);
- *Hall, always*: the correction at every look with the look's skewness, no threshold;
- *bootstrap-t*: the studentised bootstrap's one-sided p-values at each look (B resamples of
  the look's seeds), fewer paths (it costs B times more).

Rows and rates are those of ``benchmarks/conformance.py`` (false REGRESSED in the chain and in
a run holding 80 seeds, a wrong pass at −δ, detection at −δ, with 95% Wilson intervals).

    nice python benchmarks/skew_chain.py --out benchmarks/skew_chain_results.md   # ~3 CPU min

Bit for bit from ``--seed``; the last line is a SHA-256 of the tables.
"""

from __future__ import annotations

import argparse
import math
import sys
from collections.abc import Callable
from pathlib import Path

import numpy as np

sys.path[:0] = [str(Path(__file__).resolve().parents[1]), str(Path(__file__).resolve().parent)]

from _tables import emit, pct, table  # noqa: E402
from conformance import DELTA, FIRST, MAX, ROWS, Rate, Row, rates  # noqa: E402

from pytest_graphnetz.stats.boundaries import design  # noqa: E402
from pytest_graphnetz.stats.decisions import LOOK_VERDICTS, Code, decide_look  # noqa: E402
from pytest_graphnetz.stats.sequential import Hypotheses, walk_looks  # noqa: E402
from pytest_graphnetz.stats.skew import hall_both_tails, skewness, skewness_se  # noqa: E402

DESIGN = design(FIRST, MAX)
SHAPES = ("normal, sd 2", "t(3), sd 2", "exponential +2, sd 2", "exponential −2, sd 2",
          "gamma +1, sd 2", "gamma −1, sd 2", "exponential +2, sd 4", "exponential −2, sd 4")


Rule = Callable[[np.ndarray], np.ndarray]   # a look's seeds (rows, n) -> the G Hall uses (0: none)
WalkFn = Callable[[np.ndarray, float, bool], np.ndarray]


def rule_walk(rule: Rule | None) -> WalkFn:
    """The gate's walk (``stats.sequential.walk_looks``) with Hall's correction on both tails
    (``stats.skew.hall_both_tails``, the rule these candidates were weighed under) at the
    skewness ``rule`` gives from each look's own seeds (None: the plain t)."""

    def walk(D: np.ndarray, delta: float, every_look: bool) -> np.ndarray:
        def at(k: int, n: int, open_: np.ndarray):
            X = D[open_, :n]
            return (X.mean(axis=1), X.std(axis=1, ddof=1), np.max(np.abs(X), axis=1),
                    np.all(X == 0, axis=1))

        def skew(k: int, n: int, open_: np.ndarray) -> np.ndarray:
            assert rule is not None
            return rule(D[open_, :n])

        codes = walk_looks(at, D.shape[0], DESIGN, Hypotheses(0.0, delta), upto=MAX,
                           every_look=every_look,
                           skew=None if rule is None else skew, correct=hall_both_tails)[0]
        return np.array([LOOK_VERDICTS[c] for c in codes], dtype=object)

    return walk


def hall_walk(threshold: float, from_seeds: int) -> WalkFn:
    """The walk with Hall's correction where the look's own skewness is over ``threshold``
    standard errors (0: always) on a look of at least ``from_seeds`` seeds."""

    def rule(X: np.ndarray) -> np.ndarray:
        n = X.shape[1]
        if n < from_seeds:
            return np.zeros(X.shape[0])
        g = skewness(X)
        return np.where(np.abs(g) > threshold * skewness_se(n), g, 0.0)

    return rule_walk(rule)


def results_lines(title: str, note: str, header: list[str], body: list[list[str]]) -> list[str]:
    """The results text: ``title``, the schedule and targets (``note``: what else to say of the
    paths), the table."""
    return [title, "",
            f"Looks {' → '.join(map(str, DESIGN.looks))}, α = 0.05, δ = {DELTA:g} point, "
            f"{note}each look on its own seeds; 95% Wilson intervals; targets: ≤ α = "
            f"{pct(0.05)} (normal, t(3)), ≤ 2α on skewed shapes, detection within 5 points of "
            "the plain t's.", "", *table(header, body), ""]


def bootstrap_walk(resamples: int, seed: int) -> Callable[[np.ndarray, float, bool], np.ndarray]:
    """The studentised bootstrap at each look: p-values of the three one-sided statistics from
    ``resamples`` resamples of the look's seeds. ``every_look``: REGRESSED at any look wins
    over an earlier pass (as the gate reads a run that holds its seeds)."""

    def walk(D: np.ndarray, delta: float, every_look: bool) -> np.ndarray:
        rng = np.random.default_rng(seed)
        code = np.full(D.shape[0], int(Code.CONTINUE))
        for k, n in enumerate(DESIGN.looks):
            X = D[:, :n]
            mean, sd = X.mean(axis=1), X.std(axis=1, ddof=1)
            se = sd / math.sqrt(n)
            idx = rng.integers(0, n, (resamples, n))
            tb = np.empty((X.shape[0], resamples))
            for lo in range(0, X.shape[0], 200):   # (200, B, n) at a time: memory
                Xb = X[lo:lo + 200][:, idx]
                sb = Xb.std(axis=2, ddof=1) / math.sqrt(n)
                tb[lo:lo + 200] = (Xb.mean(axis=2) - mean[lo:lo + 200, None]) / np.where(
                    sb > 0, sb, np.inf)

            def p(t: np.ndarray, lower: bool, tb: np.ndarray = tb) -> np.ndarray:
                hits = tb <= t[:, None] if lower else tb >= t[:, None]
                return (1 + hits.sum(axis=1)) / (resamples + 1)

            new = decide_look(p(mean / se, True), p((mean + delta) / se, False),
                              p(mean / se, False), level=DESIGN.nominal[k],
                              regressed_level=DESIGN.nominal[k],
                              last=k == len(DESIGN.looks) - 1)
            open_ = code == Code.CONTINUE
            code[open_] = new[open_]
            if every_look:
                code[new == Code.REGRESSED] = Code.REGRESSED
        return np.array([LOOK_VERDICTS[c] for c in code], dtype=object)

    return walk


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--paths", type=int, default=100_000)
    parser.add_argument("--bootstrap-paths", type=int, default=4_000)
    parser.add_argument("--resamples", type=int, default=499)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--out", default=None)
    args = parser.parse_args()
    candidates = [("plain t", hall_walk(math.inf, MAX + 1), args.paths),
                  ("Hall from 20", hall_walk(2.0, 20), args.paths),
                  ("Hall from 10 (shipped before)", hall_walk(2.0, FIRST), args.paths),
                  ("Hall, always", hall_walk(0.0, FIRST), args.paths),
                  (f"bootstrap-t (B = {args.resamples})",
                   bootstrap_walk(args.resamples, args.seed), args.bootstrap_paths)]
    header = ["shape", "candidate", "paths", "false REGRESSED, chain",
              "false REGRESSED, 80 held", "wrong pass at −δ", "detection at −δ"]
    body = []
    rows = {row.name: row for row in ROWS}
    for shape in SHAPES:
        for name, walk, paths in candidates:
            # the same paths for every candidate of a shape
            got: dict[str, Rate] = rates(Row(shape, rows[shape].draw, rows[shape].target, walk),
                                         np.random.default_rng(args.seed), paths)
            body.append([shape, name, f"{paths:,}",
                         *(got[k].text() for k in header[3:])])
            print(shape, name, file=sys.stderr, flush=True)
    emit(results_lines(f"# Skewed differences in the rerun chain: the candidates (seed "
                       f"{args.seed})", "", header, body), args.out)


if __name__ == "__main__":
    main()
