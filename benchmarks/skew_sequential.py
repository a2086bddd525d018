"""Skewed paired differences on the real look schedule: false REGRESSED (at Δ = 0, margin 0)
and a wrong NOT WORSE or BETTER (at Δ = −δ) of the plain paired t test and of the gate's skew
guard (:mod:`pytest_graphnetz.stats.skew`), walking the looks 10 → 20 → 40 → 80 as the gate
does: every verdict comes from ``stats.sequential.run_schedule``, the walk that decides each
cell as ``compare_reports`` does (``tests/fast/test_stats_design.py``), with the guard off
(``skew_threshold=None``: the plain t) or at its default.

Three ways a run walks the schedule (first look 10, α = 0.05, δ = 1 point unless stated):

- *10 seeds*: a run holding the first look only (what most CI runs are);
- *20 / 40 / 80 held*: a run holding that many seeds, which reads every look (a REGRESSED
  crossing at any look wins over an earlier NOT WORSE or BETTER); the guard measures them all;
- *adaptive*: ``--graphnetz-seeds=10..80``, each look trained while the cell is open; the guard
  measures the seeds held at that look.

Shapes of the paired differences d (candidate − baseline, + = better):

- normal, gamma (skew ±1) and exponential (skew ±2), each of sd σ = 0.8, 2 or 4 points;
- AUC near its ceiling: each arm's per-seed AUC a beta of mean 0.99 (0.98 for the candidate at
  −δ, δ = 0.01) and concentration κ; the arms' concentrations differ (a tight and a loose
  model), which is what makes d skewed: two arms of one shape give a symmetric d;
- MRR on the catalogue's link task (``sbm_link``, a 2-layer GCN, 40 epochs, 20 real seeds in
  ``skew_mrr_values.json`` from ``skew_mrr_pool.py``): the innocent change's paired
  differences resampled (centred, then shifted to −δ, δ = 0.01); and a candidate whose per-seed
  MRR spreads a quarter as much as the baseline's (the baseline's real right-skewed values
  resampled: d = c − b inherits their skew, negated);
- the committed real Cora pools' paired differences, resampled the same way (controls).

Then the guard's threshold: its firing rate on normal differences, on the committed real pools
and its rates on the skewed shapes at |z| thresholds 1.5-3; and the skewness of every committed
real pool, whole.

    python benchmarks/skew_sequential.py --quick     # 4,000 trials per row
    python benchmarks/skew_sequential.py --out benchmarks/skew_sequential_results.md  # 20,000

Bit for bit from ``--seed`` and the committed pools; the last line is a SHA-256 of the tables.
"""

from __future__ import annotations

import argparse
import json
import math
import sys
from collections.abc import Callable, Sequence
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from _tables import emit, pct, table  # noqa: E402

from pytest_graphnetz.stats.boundaries import design  # noqa: E402
from pytest_graphnetz.stats.decisions import Verdict  # noqa: E402
from pytest_graphnetz.stats.sequential import run_schedule  # noqa: E402
from pytest_graphnetz.stats.skew import (  # noqa: E402
    DEFAULT_SKEW_Z,
    skew_check,
    skewness,
    skewness_se,
)

HERE = Path(__file__).parent
ALPHA, FIRST, MAX = 0.05, 10, 80
MODES = ("10 seeds", "20 held", "40 held", "80 held", "adaptive")
THRESHOLDS = (1.5, 2.0, 2.5, 3.0)
Sampler = Callable[[np.random.Generator, int, float], np.ndarray]   # (rng, trials, Δ) -> D


def synthetic(kind: str, sd: float) -> Sampler:
    """Mean-Δ differences of shape ``kind`` and sd ``sd`` (points)."""
    k = {"gamma +1": 4.0, "gamma −1": 4.0, "exponential +2": 1.0, "exponential −2": 1.0}.get(kind)
    sign = -1.0 if "−" in kind else 1.0

    def draw(rng: np.random.Generator, trials: int, delta: float) -> np.ndarray:
        if k is None:
            z = rng.standard_normal((trials, MAX))
        else:
            z = sign * (rng.standard_gamma(k, (trials, MAX)) - k) / math.sqrt(k)
        return delta + sd * z

    return draw


def auc(kappa_candidate: float, kappa_baseline: float) -> Sampler:
    """Per-seed AUC of each arm a beta of mean 0.99 (the candidate's 0.99 + Δ), in points."""

    def beta(rng: np.random.Generator, mean: float, kappa: float, trials: int) -> np.ndarray:
        return rng.beta(mean * kappa, (1 - mean) * kappa, (trials, MAX))

    def draw(rng: np.random.Generator, trials: int, delta: float) -> np.ndarray:
        c = beta(rng, 0.99 + delta / 100, kappa_candidate, trials)
        return 100 * (c - beta(rng, 0.99, kappa_baseline, trials))

    return draw


def resampled(d: np.ndarray) -> Sampler:
    """``d``'s values (points) drawn with replacement, centred and shifted to mean Δ."""
    centred = d - d.mean()

    def draw(rng: np.random.Generator, trials: int, delta: float) -> np.ndarray:
        return delta + centred[rng.integers(0, d.size, (trials, MAX))]

    return draw


def tight_candidate(b: np.ndarray, ratio: float) -> Sampler:
    """A candidate of the baseline's mean whose seeds spread ``ratio`` as much: d = c − b with
    b and the candidate's own draw resampled independently from the baseline's values."""
    centred = b - b.mean()

    def draw(rng: np.random.Generator, trials: int, delta: float) -> np.ndarray:
        base = centred[rng.integers(0, b.size, (trials, MAX))]
        cand = ratio * centred[rng.integers(0, b.size, (trials, MAX))]
        return delta + cand - base

    return draw


def real_pools() -> dict[str, np.ndarray]:
    """Every committed real paired-difference pool (points): name -> d."""
    pools: dict[str, np.ndarray] = {}
    dec = json.loads((HERE / "decisive_cora_values.json").read_text(encoding="utf-8"))
    for model, v in dec.items():
        pools[f"Cora {model}: salted ({len(v['baseline'])} seeds)"] = 100 * (
            np.asarray(v["salted"]) - np.asarray(v["baseline"]))
    gq = json.loads((HERE / "gate_quality_cora_values.json").read_text(encoding="utf-8"))
    for model, cands in gq["values"].items():
        base = np.asarray(cands["baseline"]["final"])
        for name, v in cands.items():
            if name != "baseline":
                pools[f"Cora {model} (gate quality): {name}"] = 100 * (
                    np.asarray(v["final"]) - base)
    rep = json.loads((HERE / "baseline_replicates_values.json").read_text(encoding="utf-8"))
    base = np.asarray(rep["values"]["salt 0"]["test"]["final"])
    for name, v in rep["values"].items():
        if name != "salt 0":
            pools[f"Cora GCN (replicates): {name} − salt 0"] = 100 * (
                np.asarray(v["test"]["final"]) - base)
    mrr = json.loads((HERE / "skew_mrr_values.json").read_text(encoding="utf-8"))["values"]
    pools["sbm_link MRR: extra draw"] = 100 * (np.asarray(mrr["extra draw"])
                                               - np.asarray(mrr["baseline"]))
    return pools


def shapes() -> dict[str, tuple[Sampler, float]]:
    """Row name -> (sampler, δ in points)."""
    rows: dict[str, tuple[Sampler, float]] = {}
    for sd in (0.8, 2.0, 4.0):
        for kind in ("normal", "gamma +1", "gamma −1", "exponential +2", "exponential −2"):
            rows[f"{kind}, sd {sd:g}"] = (synthetic(kind, sd), 1.0)
    rows["AUC ≈ 0.99: candidate κ 100, baseline κ 1000"] = (auc(100, 1000), 1.0)
    rows["AUC ≈ 0.99: candidate κ 1000, baseline κ 100"] = (auc(1000, 100), 1.0)
    rows["AUC ≈ 0.99: both κ 100"] = (auc(100, 100), 1.0)
    mrr = json.loads((HERE / "skew_mrr_values.json").read_text(encoding="utf-8"))["values"]
    b = 100 * np.asarray(mrr["baseline"])
    rows["MRR sbm_link: innocent change, resampled"] = (
        resampled(100 * np.asarray(mrr["extra draw"]) - b), 1.0)
    rows["MRR sbm_link: candidate spread × 0.25"] = (tight_candidate(b, 0.25), 1.0)
    pools = real_pools()
    for name in ("Cora GCN (in-process): salted (60 seeds)",
                 "Cora gcn.py (command task): salted (50 seeds)"):
        rows[f"{name}, resampled"] = (resampled(pools[name]), 1.0)
    return rows


def walk(D: np.ndarray, mode: str, delta: float, threshold: float | None) -> np.ndarray:
    """The verdicts of the rows of ``D`` (trials, 80) walked as ``mode``."""
    if mode == "adaptive":
        return run_schedule(D, design(FIRST, MAX), margin=0.0, min_effect=delta,
                            skew_threshold=threshold)[0]
    n = held_seeds(mode)
    return run_schedule(D[:, :n], design(FIRST, n), margin=0.0, min_effect=delta,
                        every_look=True, skew_threshold=threshold)[0]


def held_seeds(mode: str) -> int:
    """The seeds a run of ``mode`` holds (adaptive: up to 80)."""
    return FIRST if mode == "10 seeds" else int(mode.split()[0]) if "held" in mode else MAX


def fired(D: np.ndarray, mode: str, threshold: float) -> float:
    """Share of rows on which the guard fires on the seeds the run holds (adaptive: all 80):
    the Note names the skew; from 20 held seeds the looks decide on the corrected t."""
    X = D[:, :held_seeds(mode)]
    return float(np.mean(np.abs(skewness(X)) > threshold * skewness_se(X.shape[1])))


def rates(draw: Sampler, delta: float, mode: str, threshold: float | None,
          rng: np.random.Generator, trials: int) -> tuple[float, float, float]:
    """(false REGRESSED at Δ = 0, wrong NOT WORSE or BETTER at −δ, REGRESSED at −δ)."""
    null = walk(draw(rng, trials, 0.0), mode, delta, threshold)
    drop = walk(draw(rng, trials, -delta), mode, delta, threshold)
    passed = (drop == Verdict.NOT_WORSE) | (drop == Verdict.BETTER)
    return (float(np.mean(null == Verdict.REGRESSED)), float(np.mean(passed)),
            float(np.mean(drop == Verdict.REGRESSED)))


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--trials", type=int, default=20_000)
    parser.add_argument("--quick", action="store_true")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--out", default=None)
    args = parser.parse_args(argv)
    trials = 4000 if args.quick else args.trials
    calib_trials = max(trials // 2, 2000)
    mc = math.sqrt(ALPHA * (1 - ALPHA) / trials)
    limit = 1.5 * ALPHA
    lines = [f"# Skewed differences on the look schedule: {trials} trials per row, seed "
             f"{args.seed}, one-sided α = {ALPHA}, looks 10 → 20 → 40 → 80", "",
             "Each cell: plain paired t → the gate (skew guard at |z| > "
             f"{DEFAULT_SKEW_Z:g}; Hall's skew-corrected t where it fires on 20 or more held "
             "seeds, the plain t with the skew named on 10-19). Monte-Carlo "
             f"standard error {100 * mc:.2f} points at 5% ({trials} trials); **bold**: above "
             f"1.5α = {pct(limit)}. Fires: share of cells at Δ = 0 on which the guard fires "
             "(on the seeds the run holds; adaptive: all 80). Detection: REGRESSED at −δ.", ""]
    rng = np.random.default_rng(args.seed)

    def cell(a: float, b: float) -> str:
        fa = f"**{pct(a)}**" if a > limit else pct(a)
        fb = f"**{pct(b)}**" if b > limit else pct(b)
        return f"{fa} → {fb}"

    rows = []
    for name, (draw, delta) in shapes().items():
        for mode in MODES:
            plain = rates(draw, delta, mode, None, rng, trials)
            guard = rates(draw, delta, mode, DEFAULT_SKEW_Z, rng, trials)
            fire = fired(draw(rng, trials, 0.0), mode, DEFAULT_SKEW_Z)
            rows.append([name, mode, cell(plain[0], guard[0]), cell(plain[1], guard[1]),
                         f"{pct(plain[2])} → {pct(guard[2])}", pct(fire)])
        print(rows[-1], flush=True)
    lines += ["## False REGRESSED and wrong NOT WORSE: plain t → the gate", "",
              *table(["shape of d", "run", "false REGRESSED at Δ = 0",
                      "wrong NOT WORSE/BETTER at −δ", "detection at −δ", "guard fires"], rows),
              ""]

    # The threshold: where the guard fires, and what each threshold holds.
    calib = []
    normal = synthetic("normal", 2.0)
    for z in THRESHOLDS:
        row = [f"{z:g}"]
        for n in (FIRST, MAX):
            X = normal(rng, calib_trials, 0.0)[:, :n]
            row.append(pct(float(np.mean(np.abs(skewness(X)) > z * skewness_se(n)))))
        for kind, which in (("gamma +1", 0), ("exponential +2", 0), ("gamma −1", 1),
                            ("exponential −2", 1)):
            draw = synthetic(kind, 2.0)
            row.append(" / ".join(pct(rates(draw, 1.0, mode, z, rng, calib_trials)[which])
                                  for mode in MODES))
        calib.append(row)
    lines += [f"## The guard's threshold ({calib_trials} trials per cell, sd 2)", "",
              "Fires on normal: share of normal cells with |z| above the threshold. The four "
              "shapes: the rate the guard exists for (right skew: false REGRESSED; left skew: "
              "wrong NOT WORSE/BETTER), the gate's, at " + " / ".join(MODES) + ".", "",
              *table(["|z| threshold", "fires on normal, 10 seeds", "fires on normal, 80",
                      "gamma +1: false REGRESSED", "exponential +2: false REGRESSED",
                      "gamma −1: wrong NOT WORSE", "exponential −2: wrong NOT WORSE"], calib),
              ""]

    pools = []
    for name, d in real_pools().items():
        check = skew_check(d)
        sub = d[rng.integers(0, d.size, (calib_trials, FIRST))]
        pools.append([name, str(d.size), f"{d.mean():+.2f}", f"{d.std(ddof=1):.2f}",
                      f"{check.skewness:+.2f}", f"{check.z:+.2f}",
                      "yes" if check.fires else "no",
                      pct(fired(sub, "10 seeds", DEFAULT_SKEW_Z))])
    lines += ["## The committed real pools, whole", "",
              f"Skewness G1 of each pool's paired differences (points), z = G1 / SE(n), "
              f"whether the guard fires on the whole pool (|z| > {DEFAULT_SKEW_Z:g}), and on "
              f"how many of {calib_trials} 10-seed resamples of it.", "",
              *table(["pool", "n", "mean Δ (pt)", "paired sd (pt)", "G1", "z", "fires",
                      "fires on 10-seed resamples"], pools), ""]
    emit(lines, args.out)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
