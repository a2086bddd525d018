"""Rerun-safe seeds (issue 26): wrong-verdict rates under the policy "rerun with more seeds
whenever INCONCLUSIVE, up to 3 times", for today's rule (each run a fresh fixed-n paired t test
at α) and for the rerun-safe rule of :mod:`pytest_graphnetz.stats.rerun` (one α-spending
function over the chain of runs), plus the single-run detection each keeps.

The chain: runs of 10, 20, 40 and 80 seeds (each doubling the last; cached seeds make the
earlier run's differences an exact prefix of the next). A run's verdict, as the gate decides:
REGRESSED when ``(mean + margin)/se <= −c`` (wins), else BETTER when ``(mean − margin)/se >= c``,
else NOT WORSE when ``(mean + δ)/se >= c``, else INCONCLUSIVE (the only verdict that is rerun).
Today ``c`` is ``t_{1−α, n−1}`` at every run; the rule's ``c`` comes from
:func:`~pytest_graphnetz.stats.rerun.rerun_design` given the earlier runs' seed counts.

Paired differences, in accuracy points, δ = 1 point, margin 0:

- *block model*: the "labels -25%" candidate's 200 real per-seed differences on the committed
  gate-quality pool (sd 0.86 point), drawn with replacement and re-centred on the boundary;
- *normal* with sd 0.86, 2, 4 and 8 points.

Wrong verdicts are measured at the boundaries: REGRESSED at Δ = −margin, BETTER at Δ = +margin
(both Δ = 0 here) and NOT WORSE at Δ = −δ. Single-run detection: P(REGRESSED) of a 10-seed run
at the "labels -25%" candidate's true Δ (−0.71 point), on its resampled real differences and on
normal differences of the same sd. The frontier varies ρ, the share of α a first run spends.

    python benchmarks/rerun_safe.py --quick                # 4,000 trials per cell (~1 min)
    python benchmarks/rerun_safe.py --out benchmarks/rerun_safe_results.md   # 20,000 (~4 min)

A last table lets each rerun take the seed count today's INCONCLUSIVE message advises for the
observed sd (rounded up to 20, 40, ..., 320 seeds), so the looks depend on the data's spread.

Every draw comes from ``--seed`` and the committed pool: the output is bit for bit the same on
every run (its last line is a SHA-256 of the tables).
"""

from __future__ import annotations

import argparse
import hashlib
import json
import math
import sys
from collections.abc import Sequence
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from pytest_graphnetz.stats.rerun import DEFAULT_RHO, rerun_design  # noqa: E402

POOL = Path(__file__).with_name("gate_quality_values.json")
ALPHA = 0.05
DELTA = 1.0  # points
MARGIN = 0.0
LOOKS = (10, 20, 40, 80)
SDS = (0.86, 2.0, 4.0, 8.0)
RHOS = (0.7, 0.8, DEFAULT_RHO, 0.9, 0.95)
REG, NW, BT, INC = range(4)


def pool_differences() -> np.ndarray:
    """The "labels -25%" candidate's real per-seed differences on the block model, in points."""
    pool = json.loads(POOL.read_text(encoding="utf-8"))["csbm_homophilous"]["values"]
    base = np.asarray(pool["baseline"]["final"])
    return 100 * (np.asarray(pool["labels -25%"]["final"]) - base)


def today_critical(looks: Sequence[int]) -> tuple[float, ...]:
    from scipy import stats

    return tuple(float(stats.t.isf(ALPHA, n - 1)) for n in looks)


def rule_critical(looks: Sequence[int], rho: float) -> tuple[float, ...]:
    return rerun_design(looks[:-1], looks[-1], alpha=ALPHA, rho=rho).critical


def chain(X: np.ndarray, critical: Sequence[float], reruns: int) -> tuple[np.ndarray, np.ndarray]:
    """Verdict code and seeds used per row of ``X`` (trials, 80) when the cell is rerun at the
    next look while INCONCLUSIVE, at most ``reruns`` times."""
    code = np.full(X.shape[0], INC)
    used = np.zeros(X.shape[0], dtype=int)
    for n, c in zip(LOOKS[:reruns + 1], critical, strict=False):
        open_ = code == INC
        x = X[open_, :n]
        mean, se = x.mean(axis=1), x.std(axis=1, ddof=1) / math.sqrt(n)
        new = np.full(x.shape[0], INC)
        new[(mean + DELTA) / se >= c] = NW
        new[(mean - MARGIN) / se >= c] = BT
        new[(mean + MARGIN) / se <= -c] = REG
        code[open_] = new
        used[open_] = n
    return code, used


ADVICE_GRID = (10, 20, 40, 80, 160, 320)  # advised seeds, rounded up to 10·2^j, at most 320


def advice_thresholds() -> np.ndarray:
    """thresholds[j]: the largest observed sd (points) whose advice, today's
    ``seeds_for_min_effect(sd, δ)``, is at most ``ADVICE_GRID[j]`` seeds."""
    from pytest_graphnetz.stats.planning import seeds_for_min_effect

    out = []
    for target in ADVICE_GRID:
        lo, hi = 0.0, 50.0
        for _ in range(40):
            mid = (lo + hi) / 2
            lo, hi = (mid, hi) if seeds_for_min_effect(mid, DELTA, alpha=ALPHA) <= target else (
                lo, mid)
        out.append(lo)
    return np.array(out)


def chain_advised(X: np.ndarray, rule: float | None, thresholds: np.ndarray,
                  reruns: int = 3) -> tuple[np.ndarray, np.ndarray]:
    """Like :func:`chain`, but each rerun takes the seeds today's message advises for the
    observed sd (rounded up to the grid, at least the next grid step): verdict code and seeds
    used per row. ``rule``: ρ of the rerun-safe rule, None for today's fresh t test."""
    from scipy import stats

    trials = X.shape[0]
    code = np.full(trials, INC)
    n = np.full(trials, ADVICE_GRID[0])
    history = np.zeros(trials, dtype=np.int64)  # bit j set: a run at ADVICE_GRID[j] seeds
    for stage in range(reruns + 1):
        open_ = np.flatnonzero(code == INC)
        if stage:
            open_ = open_[n[open_] > 0]
        for look in np.unique(n[open_]):
            for hist in np.unique(history[open_][n[open_] == look]):
                rows = open_[(n[open_] == look) & (history[open_] == hist)]
                prior = [g for j, g in enumerate(ADVICE_GRID) if hist >> j & 1]
                c = (float(stats.t.isf(ALPHA, look - 1)) if rule is None
                     else rerun_design(prior, int(look), alpha=ALPHA, rho=rule).current_critical)
                x = X[rows, :look]
                mean, sd = x.mean(axis=1), x.std(axis=1, ddof=1)
                se = sd / math.sqrt(look)
                new = np.full(rows.size, INC)
                new[(mean + DELTA) / se >= c] = NW
                new[(mean - MARGIN) / se >= c] = BT
                new[(mean + MARGIN) / se <= -c] = REG
                code[rows] = new
                history[rows] |= 1 << ADVICE_GRID.index(int(look))
                # The first grid entry whose advice covers sd, past this run, at most the last;
                # a run already at the last entry is not rerun (n = 0).
                here = ADVICE_GRID.index(int(look))
                step = np.maximum(np.searchsorted(thresholds, sd), here + 1)
                n[rows] = (np.take(ADVICE_GRID, np.minimum(step, len(ADVICE_GRID) - 1))
                           if here + 1 < len(ADVICE_GRID) else 0)
    used = np.array([max((g for j, g in enumerate(ADVICE_GRID) if h >> j & 1), default=0)
                     for h in history])
    return code, used


def advised_rows(rng: np.random.Generator, trials: int, real: np.ndarray) -> list[list[str]]:
    """Wrong verdicts after up to 3 reruns at the advised seed counts, today vs the rule."""
    thresholds = advice_thresholds()
    rows = []
    for shape in ("block model", *(f"{s}" for s in SDS)):
        X0 = draws(shape, 0.0, rng, trials, real, ADVICE_GRID[-1])
        Xd = draws(shape, -DELTA, rng, trials, real, ADVICE_GRID[-1])
        label = "block model (real, 0.86)" if shape == "block model" else f"normal, sd {shape}"
        for name, rule in (("today", None), (f"rerun-safe, ρ = {DEFAULT_RHO}", DEFAULT_RHO)):
            c0, u0 = chain_advised(X0, rule, thresholds)
            cd, _ = chain_advised(Xd, rule, thresholds)
            rows.append([label, name, pct(np.mean(c0 == REG)), pct(np.mean(cd == NW)),
                         pct(np.mean(c0 == BT)), f"{u0.mean():.1f}"])
    return rows


def pct(x: float) -> str:
    return f"{100 * x:.1f}%"


def draws(shape: str, mean: float, rng: np.random.Generator, trials: int,
          real: np.ndarray, seeds: int = LOOKS[-1]) -> np.ndarray:
    """``trials`` rows of ``seeds`` paired differences (points) of ``shape``, true mean
    ``mean``."""
    if shape == "block model":
        return (real - real.mean() + mean)[rng.integers(0, real.size, (trials, seeds))]
    return mean + float(shape) * rng.standard_normal((trials, seeds))


def guarantee_rows(rng: np.random.Generator, trials: int, real: np.ndarray,
                   rho: float) -> tuple[list[list[str]], dict]:
    """Rows of the guarantees table, and the worst rate after 3 reruns per rule."""
    rules = {"today (fresh t at α each run)": today_critical(LOOKS),
             f"rerun-safe, ρ = {rho}": rule_critical(LOOKS, rho)}
    rows, worst = [], dict.fromkeys(rules, 0.0)
    for shape in ("block model", *(f"{s}" for s in SDS)):
        X0 = draws(shape, -MARGIN, rng, trials, real)   # REGRESSED and BETTER (margin 0)
        Xd = draws(shape, -DELTA, rng, trials, real)    # NOT WORSE
        label = "block model (real, 0.86)" if shape == "block model" else f"normal, sd {shape}"
        for name, crit in rules.items():
            cells = []
            for X, code in ((X0, REG), (Xd, NW), (X0, BT)):
                rates = [np.mean(chain(X, crit, r)[0] == code) for r in (0, 1, 3)]
                worst[name] = max(worst[name], rates[-1])
                cells.append(" / ".join(f"{100 * r:.1f}" for r in rates))
            rows.append([label, name, *cells])
    return rows, worst


def detection(rng: np.random.Generator, trials: int, real: np.ndarray,
              rhos: Sequence[float]) -> list[list[str]]:
    """Single-run detection of the real −0.71-point regression at 10 seeds, per ρ."""
    true = float(real.mean())
    Xr = draws("block model", true, rng, trials, real)
    Xn = draws(f"{real.std(ddof=1)}", true, rng, trials, real)
    today = [np.mean(chain(X, today_critical(LOOKS), 0)[0] == REG) for X in (Xr, Xn)]
    rows = [["today", f"{100 * today[0]:.1f}%", f"{100 * today[1]:.1f}%", "1.000", "10"]]
    for rho in rhos:
        crit = rule_critical(LOOKS, rho)
        got = [np.mean(chain(X, crit, 0)[0] == REG) for X in (Xr, Xn)]
        rows.append([f"ρ = {rho}", f"{100 * got[0]:.1f}%", f"{100 * got[1]:.1f}%",
                     f"{got[0] / today[0]:.3f}", "10"])
    return rows


def frontier(rng: np.random.Generator, trials: int, real: np.ndarray,
             rhos: Sequence[float]) -> list[list[str]]:
    """Per ρ: the worst wrong-verdict rate after 3 reruns over every shape and boundary, and
    what the reruns still decide at sd 4 points (innocent: NOT WORSE or BETTER; a drop of δ:
    REGRESSED), with the seeds the chain trains per cell."""
    rows = []
    shapes = ("block model", *(f"{s}" for s in SDS))
    data = {s: (draws(s, 0.0, rng, trials, real), draws(s, -DELTA, rng, trials, real))
            for s in shapes}
    for rho in (*rhos, None):
        crit = today_critical(LOOKS) if rho is None else rule_critical(LOOKS, rho)
        worst = 0.0
        for X0, Xd in data.values():
            worst = max(worst, np.mean(chain(X0, crit, 3)[0] == REG),
                        np.mean(chain(X0, crit, 3)[0] == BT), np.mean(chain(Xd, crit, 3)[0] == NW))
        X0, Xd = data["4.0"]
        c0, u0 = chain(X0, crit, 3)
        cd, ud = chain(Xd, crit, 3)
        rows.append(["today" if rho is None else f"ρ = {rho}", f"{100 * worst:.1f}%",
                     f"{100 * np.mean((c0 == NW) | (c0 == BT)):.1f}%",
                     f"{100 * np.mean(cd == REG):.1f}%", f"{u0.mean():.1f} / {ud.mean():.1f}"])
    return rows


def table(header: list[str], rows: list[list[str]]) -> list[str]:
    return ["| " + " | ".join(header) + " |", "|" + "---|" * len(header),
            *("| " + " | ".join(r) + " |" for r in rows)]


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--trials", type=int, default=20_000)
    parser.add_argument("--quick", action="store_true", help="4,000 trials per cell")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--out", default=None, help="also write the tables to this file")
    args = parser.parse_args(argv)
    trials = 4000 if args.quick else args.trials
    real = pool_differences()
    lines = [f"# Rerun-safe seeds: {trials} trials per cell, seed {args.seed}, α = {ALPHA}, "
             f"δ = {DELTA:g} point, margin {MARGIN:g}, runs of {' → '.join(map(str, LOOKS))} "
             "seeds", ""]
    rows, worst = guarantee_rows(np.random.default_rng(args.seed), trials, real, DEFAULT_RHO)
    lines += ["## Wrong verdicts at the boundaries after 0 / 1 / 3 reruns (%)", "",
              "Monte-Carlo standard error about "
              f"{100 * math.sqrt(ALPHA * (1 - ALPHA) / trials):.2f} points at 5%.", "",
              *table(["differences", "rule", "REGRESSED at Δ = −margin",
                      "NOT WORSE at Δ = −δ", "BETTER at Δ = +margin"], rows), "",
              "Worst rate after 3 reruns: " + "; ".join(
                  f"{k}: {100 * v:.1f}%" for k, v in worst.items()), ""]
    design = rerun_design(LOOKS[:-1], LOOKS[-1], alpha=ALPHA, rho=DEFAULT_RHO)
    lines += [f"Rule's boundaries (ρ = {DEFAULT_RHO}): critical t "
              + ", ".join(f"{n}: {c:.3f}" for n, c in zip(design.looks, design.critical,
                                                            strict=True))
              + "; cumulative α " + ", ".join(f"{a:.5f}" for a in design.spent), ""]
    lines += ["## Single run of 10 seeds: detection of the real −0.71-point regression", "",
              *table(["rule", "REGRESSED, resampled real", "REGRESSED, normal sd 0.86",
                      "ratio to today (real)", "seeds per cell"],
                     detection(np.random.default_rng(args.seed + 1), trials, real, RHOS)), ""]
    lines += ["## Frontier over ρ (3 reruns allowed)", "",
              *table(["rule", "worst wrong verdict (all shapes, 3 boundaries)",
                      "sd 4: Δ = 0 ends NOT WORSE/BETTER", "sd 4: Δ = −δ ends REGRESSED",
                      "sd 4: seeds per cell (Δ = 0 / −δ)"],
                     frontier(np.random.default_rng(args.seed + 2), trials, real, RHOS)), ""]
    lines += ["## Reruns at the advised seed counts (up to 3 reruns)", "",
              "Each rerun takes the seeds today's INCONCLUSIVE message advises for the observed "
              "sd (`seeds_for_min_effect(sd, δ)`), rounded up to 20, 40, 80, 160 or 320 and at "
              "least the next of these; 320 when the advice is more. The rule's boundaries "
              "come from the recorded seed counts, whatever they were.", "",
              *table(["differences", "rule", "REGRESSED at Δ = −margin", "NOT WORSE at Δ = −δ",
                      "BETTER at Δ = +margin", "seeds of the last run (Δ = 0)"],
                     advised_rows(np.random.default_rng(args.seed + 3), trials, real)), ""]
    text = "\n".join(lines)
    digest = hashlib.sha256(text.encode()).hexdigest()[:16]
    text += f"sha256 of the tables above: {digest}\n"
    print(text)
    if args.out:
        Path(args.out).write_text(text, encoding="utf-8")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
