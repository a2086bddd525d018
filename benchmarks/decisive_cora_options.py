"""Fewer seeds per decided pull request at Cora noise: five ways, measured before one is built.

On the committed pools of ``decisive_cora.py`` (``decisive_cora_values.json``: per seed the
baseline's test accuracy and its salted rerun, an innocent change; the in-process GCN and PyG's
gcn.py as a command task, 200 epochs), a pull request is simulated as there: a random order of
the pool's seeds, the candidate the salted run (innocent) or the salted run minus 1 point (a
drop of δ), walked through the design (``stats.sequential.run_schedule``, the gate's own
``decide_look``) in the CI loop up to a budget of 40 seeds, δ 1 point, α 0.05. Also on normal
draws at the pool's moments (baseline and candidate bivariate normal: its per-seed sds and their
correlation), past the pool. The ways:

- (a) ``today``: first look 10, ρ 0.85 (the default schedule);
- (b) a first look per cell from its calibration: the smallest n whose planned power at δ, from
  the 90% upper bound of a 10-seed calibration's paired sd (the bound ``graphnetz calibrate``
  plans from), is ≥ 0.8, floored at 5, capped at the budget (the calibration seeds are 10
  further seeds of the same order, never the PR's); beside it fixed first looks of 5, 6 and 8;
- (c) spending presets: ρ 0.5 (less α on the first look: nightly) and 0.95 (more: PR);
- (d) CUPED: the candidate's paired differences adjusted by the baseline's value at the seed,
  ``d_s − θ·(b_s − mean of the baseline's 40 seeds)``, θ fixed before the candidate runs (the
  calibration's regression of d on b); only where |corr(d, b)| on the pool is ≥ 0.5;
- (e) more epochs: the pools hold only the final epoch's value, so this is read from
  ``calibrate_epochs_results.md``, not simulated.

Last, what it would take: the design on normal differences at paired sds of 0.5-1 δ, per first
look, for the noise at which ≤ 6 seeds per PR would hold.

Printed per row: mean seeds trained per PR (innocent / −1 point), innocent NOT WORSE (or
IDENTICAL / BETTER), detection of −1 point (REGRESSED), false REGRESSED (innocent REGRESSED),
and whether the way meets the target: ≤ 6 seeds per PR in both scenarios, innocent ≥ 90%,
detection ≥ today's (row (a) on the same data), false REGRESSED ≤ α.

    python benchmarks/decisive_cora_options.py          # ~1 CPU min
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Sequence
from pathlib import Path

import numpy as np

HERE = Path(__file__).resolve().parent
sys.path[:0] = [str(HERE.parent), str(HERE)]

from _tables import emit, pct, table  # noqa: E402

from pytest_graphnetz.gates.calibration.resolution import resolvable_min_effect  # noqa: E402
from pytest_graphnetz.stats.boundaries import design  # noqa: E402
from pytest_graphnetz.stats.intervals import sd_upper_bound  # noqa: E402
from pytest_graphnetz.stats.planning import seeds_for_min_effect  # noqa: E402
from pytest_graphnetz.stats.sequential import run_schedule  # noqa: E402

ALPHA, DELTA, BUDGET, CALIBRATION_SEEDS, FLOOR = 0.05, 0.01, 40, 10, 5
CUPED_MIN_CORRELATION = 0.5
PASSES = ("NOT WORSE", "BETTER", "IDENTICAL")


def calibrated_first_look(sd_paired: float, n: int) -> int:
    """The first look a calibration of ``n`` seeds plans: the seeds at which δ is resolved with
    power 0.8 at the 90% upper bound of the paired sd, at least :data:`FLOOR`."""
    upper = sd_upper_bound(sd_paired, n, confidence_level=0.9)
    return min(BUDGET, max(FLOOR, seeds_for_min_effect(upper, DELTA, alpha=ALPHA)))


def draws(base: np.ndarray, cand: np.ndarray, trials: int, rng: np.random.Generator,
          normal: bool) -> tuple[np.ndarray, np.ndarray]:
    """(B, C): ``trials`` rows of per-seed baseline and candidate values, each row a random
    order of the pool's seeds, or bivariate normal at the pool's moments (``normal``)."""
    if normal:
        size = BUDGET + CALIBRATION_SEEDS
        cov = np.cov(np.vstack([base, cand]))
        drawn = rng.multivariate_normal([0.0, 0.0], cov, size=(trials, size))
        return drawn[..., 0], drawn[..., 1]
    orders = np.array([rng.permutation(base.size) for _ in range(trials)])
    return base[orders], cand[orders]


def walk(D: np.ndarray, first: int, rho: float) -> tuple[np.ndarray, np.ndarray]:
    verdicts, used = run_schedule(D[:, :BUDGET], design(first, BUDGET, alpha=ALPHA, rho=rho),
                                  min_effect=DELTA)
    return np.array([str(v) for v in verdicts]), used


def by_first_look(D: np.ndarray, firsts: np.ndarray, rho: float) -> tuple[np.ndarray, np.ndarray]:
    """The walk with each row's own first look (``firsts``), grouped by first look."""
    verdicts = np.empty(D.shape[0], dtype=object)
    used = np.empty(D.shape[0], dtype=int)
    for first in np.unique(firsts):
        rows = firsts == first
        verdicts[rows], used[rows] = walk(D[rows], int(first), rho)
    return verdicts, used


def cuped(B: np.ndarray, C: np.ndarray) -> np.ndarray:
    """Paired differences adjusted by the baseline's value at each seed: θ from the
    calibration seeds (regression of d on b there), the centre the mean of the baseline's
    :data:`BUDGET` seeds (both known before the candidate runs)."""
    D = C - B
    cal_b, cal_d = B[:, BUDGET:BUDGET + CALIBRATION_SEEDS], D[:, BUDGET:BUDGET + CALIBRATION_SEEDS]
    cb = cal_b - cal_b.mean(axis=1, keepdims=True)
    theta = (cb * (cal_d - cal_d.mean(axis=1, keepdims=True))).sum(axis=1) / (cb ** 2).sum(axis=1)
    centre = B[:, :BUDGET].mean(axis=1, keepdims=True)
    return D - theta[:, None] * (B - centre)


def rows_for(base: np.ndarray, cand: np.ndarray, trials: int, rng: np.random.Generator,
             normal: bool, correlation: float) -> list[list[str]]:
    B, C = draws(base, cand, trials, rng, normal)
    D = C - B
    cal = D[:, BUDGET:BUDGET + CALIBRATION_SEEDS]
    calibrated = np.array([calibrated_first_look(float(s), CALIBRATION_SEEDS)
                           for s in cal.std(axis=1, ddof=1)])
    ways: list[tuple[str, np.ndarray, object]] = [
        ("(a) today: first look 10, ρ 0.85", D, 10),
        ("(b) first look from the calibration "
         f"(median {int(np.median(calibrated))}, {pct(float(np.mean(calibrated < 10)))} < 10)",
         D, calibrated),
        *((f"(b) fixed first look {n}", D, n) for n in (5, 6, 8)),
    ]
    presets = [(f"(c) ρ {rho:g}, first look {n}", D, n, rho)
               for rho in (0.5, 0.95) for n in (10, 5)]
    if abs(correlation) >= CUPED_MIN_CORRELATION:
        ways += [(f"(d) CUPED on b, first look {n}", cuped(B, C), n) for n in (10, 5)]
    out = []
    today = None
    for label, diffs, first, *rho in [(*w, 0.85) for w in ways] + presets:
        got = {}
        for name, drop in (("innocent", 0.0), ("-1", DELTA)):
            X = diffs - drop
            if isinstance(first, np.ndarray):
                got[name] = by_first_look(X, first, rho[0])
            else:
                got[name] = walk(X, int(first), rho[0])
        (vi, ui), (vd, ud) = got["innocent"], got["-1"]
        seeds, innocent = max(ui.mean(), ud.mean()), float(np.isin(vi, PASSES).mean())
        detection, false = float(np.mean(vd == "REGRESSED")), float(np.mean(vi == "REGRESSED"))
        today = detection if today is None else today
        missed = [what for what, bad in (("seeds > 6", seeds > 6), ("innocent < 90%",
                  innocent < 0.9), ("detection < today's", detection < today),
                  ("false REGRESSED > α", false > ALPHA)) if bad]
        out.append([label, f"{ui.mean():.1f} / {ud.mean():.1f}", pct(innocent), pct(detection),
                    pct(false), "yes" if not missed else "no: " + ", ".join(missed)])
    return out


def model_lines(model: str, values: dict, trials: int, rng: np.random.Generator) -> list[str]:
    base, cand = np.asarray(values["baseline"]), np.asarray(values["salted"])
    D = cand - base
    r = float(np.corrcoef(D, base)[0, 1])
    lines = [f"## {model}: pool of {base.size} seeds, paired sd {100 * D.std(ddof=1):.2f} pt, "
             f"corr(baseline, salted) {np.corrcoef(base, cand)[0, 1]:+.2f}", "",
             f"CUPED covariate (the baseline's value at the seed): corr(d, b) = {r:+.2f} on the "
             f"pool; " + (f"|r| ≥ {CUPED_MIN_CORRELATION}: simulated (variance × "
                          f"{1 - r * r:.2f} at the pool's θ)" if abs(r) >= CUPED_MIN_CORRELATION
                          else f"|r| < {CUPED_MIN_CORRELATION}: dropped"), ""]
    sd = float(D.std(ddof=1))
    lines += [f"One look at this sd: {seeds_for_min_effect(sd, DELTA, alpha=ALPHA)} seeds give "
              f"power 0.8 both ways, {seeds_for_min_effect(sd, DELTA, alpha=ALPHA, power=0.9)} "
              f"give 0.9; 6 seeds give 0.8 only at a paired sd up to "
              f"{100 * DELTA / resolvable_min_effect(1.0, 6, alpha=ALPHA):.2f} pt.", ""]
    header = ["data", "way", "seeds per PR (innocent / −1 pt)", "innocent NOT WORSE",
              "−1 pt REGRESSED", "false REGRESSED", "≤ 6 seeds, every rate held"]
    body = []
    for normal in (False, True):
        data = "normal at the pool's moments" if normal else "pool resamples"
        body += [[data, *row] for row in rows_for(base, cand, trials, rng, normal, r)]
    return lines + table(header, body) + [""]


NEEDED_SDS = (0.5, 0.6, 0.7, 0.8, 1.0)   # paired sd as a share of δ
NEEDED_FIRST_LOOKS = (4, 5, 6, 8, 10)


def what_it_would_take(trials: int, rng: np.random.Generator) -> list[str]:
    """The noise at which ≤ 6 seeds per PR would hold every rate: the design's walk (ρ 0.85,
    up to 40 seeds) on normal paired differences at each paired sd of :data:`NEEDED_SDS` (in
    units of δ: only the ratio matters), per first look."""
    body = []
    for ratio in NEEDED_SDS:
        Z = rng.standard_normal((trials, BUDGET)) * ratio * DELTA
        for first in NEEDED_FIRST_LOOKS:
            (vi, ui), (vd, ud) = walk(Z, first, 0.85), walk(Z - DELTA, first, 0.85)
            body.append([f"{ratio:g} δ", str(first), f"{ui.mean():.1f} / {ud.mean():.1f}",
                         pct(float(np.isin(vi, PASSES).mean())),
                         pct(float(np.mean(vd == "REGRESSED"))),
                         pct(float(np.mean(vi == "REGRESSED")))])
    return ["## What it would take: the design at a given paired sd (normal differences)", "",
            *table(["paired sd", "first look", "seeds per PR (innocent / −δ)",
                    "innocent NOT WORSE", "−δ REGRESSED", "false REGRESSED"], body), ""]


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--values", type=Path, default=HERE / "decisive_cora_values.json")
    parser.add_argument("--trials", type=int, default=20_000)
    parser.add_argument("--seed", type=int, default=59)
    parser.add_argument("--out", default=None)
    args = parser.parse_args(argv)
    pools = json.loads(args.values.read_text())
    rng = np.random.default_rng(args.seed)
    lines = [f"# decisive_cora_options: fewer seeds per PR at Cora noise (δ 1 point, α {ALPHA}, "
             f"CI loop up to {BUDGET} seeds, {args.trials:,} PRs per row and scenario, seed "
             f"{args.seed})", ""]
    for model, values in pools.items():
        lines += model_lines(model, values, args.trials, rng)
    lines += ["(e) more epochs: the pools hold the final epoch only (no per-epoch values); "
              "`calibrate_epochs_results.md` measured the paired sd per training budget on 10 "
              "seeds up to 200 epochs, the pools' own budget: not simulated here.", ""]
    lines += what_it_would_take(args.trials, rng)
    emit(lines, args.out)
    return 0


if __name__ == "__main__":
    sys.exit(main())
