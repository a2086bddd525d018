"""Bisecting a regression under noise (not named ``bisect.py``: run as a script, any
file in this folder would import it as the standard library's ``bisect``, which ``random``
imports): the paired three-valued bisect of
:func:`pytest_graphnetz.cli.bisection.search.bisect_commits` (the search ``graphnetz bisect``
runs, at its default budget of 160 seeds) against the same search at budgets of 80, 40 and 10
seeds (and at
an equal share of the level per look), a single-value bisect (asv's ``find``: one seed per
probe, recurse into the half with the bigger drop) and asv's rule on 10-seed means, on the same
histories.

A history is 32 commits of a real PyG model: a 2-layer GCN (``torch_geometric.nn.GCNConv``) on a
fixed 400-node stochastic block model (4 blocks, ``torch_geometric.utils.stochastic_blockmodel_
graph``), 80 training nodes, 300 test nodes, trained full-batch with Adam. GOOD is commit 0; each
later commit is innocent, either changing nothing (its per-seed values are bit for bit its
parent's, as an unchanged model is) or, with probability 0.3, changing the RNG streams (every seed
draws a new initialisation and dropout: same model, new noise), except one culprit at a uniform
position in 1..31 that trains for fewer epochs: 11 instead of 20, or 14. The search runs at the
default δ of an accuracy (0.01, ``min_effect=None``), and the culprit's per-seed values are moved
by one constant so that its mean effect on the pool is exactly −2δ (the 11-epoch model) or −δ
(the 14-epoch model): its noise is the trained model's own.

Trainings are real and pooled: every (model, stream, seed) of 8 streams × 3 models × 160 seeds
is trained once (``benchmarks/bisect_pool.json``, committed; seeds 48-159 were added to the
first pool's 0-47, which retrain bit for bit). A trial draws its commits' streams from the pool
and a permutation of the 160 seeds (seed s of a probe is the permutation's s-th). Seed-trainings
per search count the distinct (model, stream, seed) a search asked for: what it trains with the
triple cache, which keys on the model's code, so an innocent commit that changes nothing costs
nothing.

    python benchmarks/bisect_search.py --pool benchmarks/bisect_pool.json --trials 40  # quick
    python benchmarks/bisect_search.py --pool benchmarks/bisect_pool.json \
        --out benchmarks/bisect_results.md                # 400 trials, the results file

``--drift`` measures a drift against a step instead (:func:`run_drift`): the same pool, one
−2δ step, or the −2δ spread over 5 or 8 consecutive commits (each step below δ), searched
with and without the drift checks (``bisection.drift_split``, ``bisection.culprit_step``):

    python benchmarks/bisect_search.py --drift --trials 150 --pool benchmarks/bisect_pool.json \
        --out benchmarks/bisect_drift_results.md
"""

from __future__ import annotations

import argparse
import sys
import time
from collections.abc import Sequence
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

COMMITS = 32
# GOOD's model trains 20 epochs; the culprit 11 (about −2δ) or 14 (about −δ): δ is set from the
# culprit's measured effect, so that it is exactly −2δ or −δ.
EPOCHS = {"good": 20, "2δ": 11, "δ": 14}
STREAM_CHANGE = 0.3
ALPHA = 0.05


def train_pool(epochs: Sequence[int], streams: int, seeds: int, start: int = 0
               ) -> tuple[np.ndarray, float]:
    """values[model, stream, seed - start] for seeds ``start..seeds-1``: test accuracy of the
    model trained ``epochs[model]`` epochs, and the seconds per training."""
    import torch
    import torch.nn.functional as F
    from torch_geometric.nn import GCNConv
    from torch_geometric.utils import stochastic_blockmodel_graph

    torch.set_num_threads(1)
    torch.manual_seed(0)
    blocks, size = 4, 100
    edges = stochastic_blockmodel_graph(
        [size] * blocks, [[0.06 if i == j else 0.015 for j in range(blocks)]
                          for i in range(blocks)])
    y = torch.arange(blocks).repeat_interleave(size)
    x = torch.randn(blocks * size, 8) + F.one_hot(y, 8).float()
    perm = torch.randperm(blocks * size)
    train, test = perm[:80], perm[100:]

    class GCN(torch.nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.conv1, self.conv2 = GCNConv(8, 16, cached=True), GCNConv(16, blocks, cached=True)

        def forward(self, x: torch.Tensor, edges: torch.Tensor) -> torch.Tensor:
            h = F.dropout(torch.relu(self.conv1(x, edges)), 0.5, self.training)
            return self.conv2(h, edges)

    def accuracy(n_epochs: int, seed: int) -> float:
        torch.manual_seed(seed)
        model = GCN()
        opt = torch.optim.Adam(model.parameters(), lr=0.05, weight_decay=5e-4)
        for _ in range(n_epochs):
            model.train()
            opt.zero_grad()
            F.cross_entropy(model(x, edges)[train], y[train]).backward()
            opt.step()
        model.eval()
        with torch.no_grad():
            return float((model(x, edges).argmax(1)[test] == y[test]).float().mean())

    t0 = time.perf_counter()
    values = np.array([[[accuracy(n, 100_003 * stream + seed) for seed in range(start, seeds)]
                        for stream in range(streams)] for n in epochs])
    return values, (time.perf_counter() - t0) / values.size


def history(rng: np.random.Generator, streams: int) -> tuple[list[tuple[int, int]], int]:
    """(model, stream) per commit, model 1 from the culprit on, and the culprit's index."""
    culprit = int(rng.integers(1, COMMITS))
    model, stream = 0, int(rng.integers(streams))
    out = [(model, stream)]
    for i in range(1, COMMITS):
        if i == culprit:
            model = 1
        elif rng.random() < STREAM_CHANGE:   # a new stream, never the one it had
            stream = (stream + 1 + int(rng.integers(streams - 1))) % streams
        out.append((model, stream))
    return out, culprit


class Trial:
    """One history's probes: per-seed values from the pool (model 1 of the history read as
    ``culprit_model``), the distinct trainings counted."""

    def __init__(self, pool: np.ndarray, commits: Sequence[tuple[int, int]], perm: np.ndarray,
                 culprit_model: int) -> None:
        self.pool, self.perm = pool, perm
        self.commits = [(culprit_model if m else 0, s) for m, s in commits]
        self.trained: set[tuple[int, int, int]] = set()

    def values(self, i: int, n: int) -> np.ndarray:
        model, stream = self.commits[i]
        self.trained.update((model, stream, int(s)) for s in self.perm[:n])
        return self.pool[model, stream, self.perm[:n]]

    def probe(self, commit: str, n: int) -> dict:
        from pytest_graphnetz import BenchmarkReport

        v = self.values(int(commit), n)
        return {"bench": BenchmarkReport.from_arrays(v[None, None, :], tasks=["sbm"],
                                                     models=["GCN"], seeds=range(n),
                                                     metric="accuracy")}


def paired_search(trial: Trial, seeds: int, max_seeds: int, *, equal_share: bool = False
                  ) -> int | str:
    """The culprit's index, or "refused" (BAD did not read REGRESSED) or "undecided", at the
    default δ. ``equal_share``: each look of a probe at an equal share of its level (the former
    split, measured here, not used)."""
    from pytest_graphnetz.cli.bisection import search as bisection
    from pytest_graphnetz.cli.bisection.search import NothingRegressed, bisect_commits

    proportional = bisection.look_alphas
    if equal_share:
        bisection.look_alphas = lambda alpha, tests, looks: tuple(   # type: ignore[assignment]
            alpha / tests / len(looks) for _ in looks)
    try:
        result = bisect_commits([str(i) for i in range(COMMITS)], trial.probe, seeds=seeds,
                                max_seeds=max_seeds, alpha=ALPHA)
    except NothingRegressed:
        return "refused"
    finally:
        bisection.look_alphas = proportional
    culprit = result.findings[0].culprit
    return "undecided" if culprit is None else int(culprit)


def value_search(trial: Trial, seeds: int) -> int:
    """asv's rule on ``seeds``-seed means: recurse into the half whose ends differ more (here:
    the half with the larger drop)."""
    lo, hi = 0, COMMITS - 1
    mean = {i: float(trial.values(i, seeds).mean()) for i in (lo, hi)}
    while hi - lo > 1:
        mid = (lo + hi) // 2
        mean[mid] = float(trial.values(mid, seeds).mean())
        if mean[lo] - mean[mid] > mean[mid] - mean[hi]:
            hi = mid
        else:
            lo = mid
    return hi


METHODS = {
    "paired, 10 → 160 seeds, α ∝ seeds per look (graphnetz bisect)":
        lambda t: paired_search(t, 10, 160),
    "paired, 10 → 160 seeds, equal α per look": lambda t: paired_search(t, 10, 160,
                                                                          equal_share=True),
    "paired, 10 → 80 seeds, α ∝ seeds per look": lambda t: paired_search(t, 10, 80),
    "paired, 10 → 80 seeds, equal α per look": lambda t: paired_search(t, 10, 80,
                                                                        equal_share=True),
    "paired, 10 → 40 seeds, equal α per look (the former default)":
        lambda t: paired_search(t, 10, 40, equal_share=True),
    "paired, fixed 10 seeds": lambda t: paired_search(t, 10, 10),
    "single value (asv find)": lambda t: value_search(t, 1),
    "10-seed means, asv rule": lambda t: value_search(t, 10),
}
STREAMS, SEEDS = 8, 160   # the committed pool: streams × seeds (the budget's last look)


def load_or_train(path: str | None) -> tuple[np.ndarray, str]:
    """The pool, from ``path`` when it holds one of the stored shape (bit for bit what was
    trained), else trained and, with ``path``, saved there; read as 4 streams × 96 seeds."""
    import json

    pool = None
    if path and Path(path).exists():
        data = json.loads(Path(path).read_text())
        pool = np.array(data["values"])
        if pool.shape == (len(EPOCHS), STREAMS, SEEDS) and data["epochs"] == list(EPOCHS.values()):
            note = f"read from {path} (trained at {data['ms_per_training']:.0f} ms each)"
        else:
            pool = None
    if pool is None:
        t0 = time.perf_counter()
        pool, per_training = train_pool(list(EPOCHS.values()), STREAMS, SEEDS)
        note = (f"{per_training * 1000:.0f} ms per training here "
                f"({time.perf_counter() - t0:.0f} s)")
        if path:
            Path(path).write_text(json.dumps({"epochs": list(EPOCHS.values()),
                                              "ms_per_training": per_training * 1000,
                                              "values": pool.tolist()}))
    return pool, note


def run(trials: int, seed: int, pool_file: str | None) -> str:
    from pytest_graphnetz.gates.verdicts.rules import DEFAULT_MIN_EFFECT

    raw, trained = load_or_train(pool_file)
    delta = DEFAULT_MIN_EFFECT
    pool = raw.copy()
    scenarios = {}   # label -> (culprit's model index, its measured effect, paired sd)
    for k, label, times in ((1, "2δ", 2), (2, "δ", 1)):
        diffs = raw[k] - raw[0]            # paired by (stream, seed)
        effect = float(diffs.mean())
        pool[k] = raw[k] - effect - times * delta   # its mean effect: exactly −2δ or −δ
        scenarios[label] = (k, effect, float(diffs.std(ddof=1)))
    cross = raw[0, 1:] - raw[0, :-1]   # GOOD's model, adjacent streams: an innocent change
    rng = np.random.default_rng(seed)
    keys = [(m, s) for m in METHODS for s in scenarios]
    found, wrong, refused = (dict.fromkeys(keys, 0) for _ in range(3))
    cost: dict[tuple[str, str], list[int]] = {k: [] for k in keys}
    t1 = time.perf_counter()
    for _ in range(trials):
        commits, culprit = history(rng, STREAMS)
        perm = rng.permutation(SEEDS)
        for label, (model, _, _) in scenarios.items():
            for method, search in METHODS.items():
                trial = Trial(pool, commits, perm, model)
                got = search(trial)
                found[method, label] += got == culprit
                wrong[method, label] += isinstance(got, int) and got != culprit
                refused[method, label] += got == "refused"
                cost[method, label].append(len(trial.trained))
    search_s = time.perf_counter() - t1
    lines = [
        f"# Bisect under noise: {trials} histories of {COMMITS} commits, seed {seed}",
        "",
        f"Command: `python benchmarks/bisect_search.py --trials {trials} --seed {seed}`"
        + (f" (pool: `--pool {pool_file}`)" if pool_file else ""),
        "",
        f"Model: GCN on a 400-node 4-block SBM, {EPOCHS['good']} epochs; the culprit trains "
        f"{EPOCHS['2δ']} (−2δ) or {EPOCHS['δ']} (−δ) epochs, moved to exactly that effect. "
        f"Pool {STREAMS} streams × 3 models × {SEEDS} seeds, {trained}; searches "
        f"{search_s:.0f} s.",
        f"GOOD's accuracy {raw[0].mean():.4f} (seed sd {raw[0].std(ddof=1):.4f}); an "
        f"RNG-stream change's paired sd {cross.std(ddof=1):.4f}. "
        + "; ".join(f"culprit at −{label}: the {EPOCHS[label]}-epoch model (measured effect "
                    f"{effect:+.4f}, paired sd {sd:.4f}) moved to "
                    f"{-delta * (2 if label == '2δ' else 1):+.4f}"
                    for label, (_, effect, sd) in scenarios.items())
        + f". δ = {delta} (the default for an accuracy); alpha {ALPHA} for the whole search.",
        "",
        "| method | culprit at | culprit found | wrong commit named | nothing regressed "
        "(endpoints) | seed-trainings per search (mean, max) |",
        "|---|---|---|---|---|---|",
    ]
    for label in scenarios:
        for method in METHODS:
            k, c = found[method, label], np.array(cost[method, label])
            lo, hi = wilson(k, trials)
            w = wrong[method, label]
            wlo, whi = wilson(w, trials)
            lines.append(f"| {method} | −{label} | {100 * k / trials:.1f}% "
                         f"[{100 * lo:.1f}, {100 * hi:.1f}] | {100 * w / trials:.1f}% "
                         f"[{100 * wlo:.1f}, {100 * whi:.1f}] | "
                         f"{100 * refused[method, label] / trials:.1f}% | "
                         f"{c.mean():.1f}, {c.max()} |")
    lines += ["", f"Trials: {trials} histories per row (the same histories in every row). "
              "Brackets: 95% Wilson interval over the trials. Target: ≥ 95% at −2δ, ≥ 80% at −δ, "
              "a wrong commit ≤ 1% (the first row of each). A paired search that neither finds "
              "the culprit nor names a wrong commit read BAD as not regressed (its seeds and "
              "level did not show the drop: exit 3, or 1 with the δ they resolve) or stopped "
              "undecided with the culprit's range; the value bisects always name a commit."]
    return "\n".join(lines) + "\n"


# -- a drift against a step (--drift) -----------------------------------------------------------

# (label, commits that move, each moving the cell by this share of −2δ)
DRIFTS = (("one step of −2δ", 1), ("5 steps of −0.4δ (drift)", 5), ("8 steps of −0.25δ (drift)", 8))


class DriftTrial(Trial):
    """A history whose cell moves over ``steps`` consecutive commits from a uniform start, each
    by 1/steps of the −2δ model's effect: commit i's per-seed values are GOOD's plus the share
    of the −2δ model's paired difference (same stream and seed) reached by then."""

    def __init__(self, pool: np.ndarray, streams: Sequence[int], perm: np.ndarray, start: int,
                 steps: int) -> None:
        self.pool, self.perm = pool, perm
        self.shares = [min(max(i - start + 1, 0), steps) / steps for i in range(COMMITS)]
        self.streams = list(streams)
        self.trained: set[tuple[float, int, int]] = set()

    def values(self, i: int, n: int) -> np.ndarray:
        share, stream = self.shares[i], self.streams[i]
        self.trained.update((share, stream, int(s)) for s in self.perm[:n])
        good, worse = self.pool[0, stream, self.perm[:n]], self.pool[1, stream, self.perm[:n]]
        return good + share * (worse - good)


def drift_search(trial: Trial, *, check: bool) -> str:
    """What the search says: "culprit N", "drift", "undecided" or "refused"; ``check`` False
    runs it without the drift check (what bisect did before)."""
    from pytest_graphnetz.cli.bisection import search as bisection
    from pytest_graphnetz.cli.bisection.search import NothingRegressed, bisect_commits

    split, step = bisection.drift_split, bisection.culprit_step
    if not check:
        bisection.drift_split = lambda *a, **k: None   # type: ignore[assignment]
        bisection.culprit_step = lambda *a, **k: ()    # type: ignore[assignment]
    try:
        result = bisect_commits([str(i) for i in range(COMMITS)], trial.probe, seeds=10,
                                max_seeds=DEFAULT_BUDGET, alpha=ALPHA)
    except NothingRegressed:
        return "refused"
    finally:
        bisection.drift_split, bisection.culprit_step = split, step
    finding = result.findings[0]
    if finding.drift:
        return "drift"
    return "undecided" if finding.culprit is None else f"culprit {finding.culprit}"


DEFAULT_BUDGET = 160


def run_drift(trials: int, seed: int, pool_file: str | None) -> str:
    from pytest_graphnetz.gates.verdicts.rules import DEFAULT_MIN_EFFECT

    raw, trained = load_or_train(pool_file)
    delta = DEFAULT_MIN_EFFECT
    pool = raw.copy()
    pool[1] = raw[1] - float((raw[1] - raw[0]).mean()) - 2 * delta   # exactly −2δ in all
    rng = np.random.default_rng(seed)
    methods = {"graphnetz bisect (drift check)": True, "without the drift check (before)": False}
    keys = [(label, m) for label, _ in DRIFTS for m in methods]
    counts: dict[tuple[str, str], dict[str, int]] = {k: {} for k in keys}
    cost: dict[tuple[str, str], list[int]] = {k: [] for k in keys}
    t1 = time.perf_counter()
    for _ in range(trials):
        commits, _ = history(rng, STREAMS)
        streams = [s for _, s in commits]
        perm = rng.permutation(SEEDS)
        for label, steps in DRIFTS:
            start = int(rng.integers(1, COMMITS - steps + 1))
            for method, check in methods.items():
                trial = DriftTrial(pool, streams, perm, start, steps)
                got = drift_search(trial, check=check)
                if got.startswith("culprit"):
                    first = int(got.split()[1])
                    got = ("right culprit" if steps == 1 and first == start else
                           "wrong culprit" if steps == 1 else "one commit blamed")
                counts[label, method][got] = counts[label, method].get(got, 0) + 1
                cost[label, method].append(len(trial.trained))
    search_s = time.perf_counter() - t1
    outcomes = ["right culprit", "wrong culprit", "one commit blamed", "drift", "undecided",
                "refused"]
    lines = [f"# Bisect on a drift and on a step: {trials} histories of {COMMITS} commits, "
             f"seed {seed}", "",
             f"Command: `python benchmarks/bisect_search.py --drift --trials {trials} --seed "
             f"{seed}`" + (f" (pool: `--pool {pool_file}`)" if pool_file else ""), "",
             f"The pool of benchmarks/bisect_results.md ({trained}), its 11-epoch model moved "
             f"to exactly −2δ (δ = {delta}). A step: one commit at a uniform position takes "
             "the whole −2δ. A drift: k consecutive commits from a uniform start each take "
             "1/k of it (per seed, GOOD's value plus that share of the −2δ model's paired "
             "difference), so each step is below δ and the total is 2δ. Innocent commits "
             f"change RNG streams with probability {STREAM_CHANGE}, as there. Searches "
             f"{search_s:.0f} s; budget 10 → {DEFAULT_BUDGET} seeds, alpha {ALPHA}.", "",
             "| history | search | " + " | ".join(outcomes)
             + " | seed-trainings per search (mean, max) |",
             "|---|---|" + "---|" * len(outcomes) + "---|"]
    for label, method in keys:
        got = counts[label, method]
        c = np.array(cost[label, method])
        lines.append(f"| {label} | {method} | "
                     + " | ".join(f"{100 * got.get(o, 0) / trials:.1f}%" for o in outcomes)
                     + f" | {c.mean():.1f}, {c.max()} |")
    lines += ["", "right culprit / wrong culprit: a step's commit named or another one; one "
              "commit blamed: a drift read as a single culprit (the first commit where the "
              "cumulative drop read REGRESSED); drift: the search said no single commit carries "
              "the drop; undecided: a probe stayed INCONCLUSIVE at the budget; refused: BAD did "
              "not read REGRESSED against GOOD (nothing to bisect). A drift's cost includes "
              "probing each commit at 10 seeds to name those that moved."]
    return "\n".join(lines) + "\n"


def wilson(k: int, n: int) -> tuple[float, float]:
    from scipy.stats import binomtest

    ci = binomtest(k, n).proportion_ci(0.95, method="wilson")
    return ci.low, ci.high


def main(argv: Sequence[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--trials", type=int, default=400)
    parser.add_argument("--pool", help="JSON file of the pool: read when it fits, else written")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--out", help="also write the table to this file")
    parser.add_argument("--drift", action="store_true",
                        help="measure a drift against a step (bisect_drift_results.md)")
    args = parser.parse_args(argv)
    text = (run_drift if args.drift else run)(args.trials, args.seed, args.pool)
    print(text, end="")
    if args.out:
        Path(args.out).write_text(text)


if __name__ == "__main__":
    main()
