"""Bisecting a regression under noise (issue 36; not named ``bisect.py``: run as a script, any
file in this folder would import it as the standard library's ``bisect``, which ``random``
imports): the paired three-valued bisect of
:func:`pytest_graphnetz.bisection.bisect_commits` (the search ``graphnetz bisect`` runs) against
a single-value bisect (asv's ``find``: one seed per probe, recurse into the half with the bigger
drop) and a fixed 10-seed bisect (the same rule on 10-seed means), on the same histories.

A history is 32 commits of a real PyG model: a 2-layer GCN (``torch_geometric.nn.GCNConv``) on a
fixed 400-node stochastic block model (4 blocks, ``torch_geometric.utils.stochastic_blockmodel_
graph``), 80 training nodes, 300 test nodes, trained full-batch with Adam. GOOD is commit 0; each
later commit is innocent, either changing nothing (its per-seed values are bit for bit its
parent's, as an unchanged model is) or, with probability 0.3, changing the RNG streams (every seed
draws a new initialisation and dropout: same model, new noise), except one culprit at a uniform
position in 1..31 that trains for fewer epochs: 11 instead of 20 (about −2δ) or 14 (about −δ).
Its true effect E is measured on the whole pool (below), and the search runs at δ = E/2 for the
first culprit (exactly −2δ) and δ = E for the second (exactly −δ); the same histories serve both.

Trainings are real but pooled: every (model, stream, seed) of 8 streams × 3 models × 48 seeds is
trained once, up front; a trial draws its commits' streams from the pool and a permutation of
the 48 seeds (seed s of a probe is the permutation's s-th). Seed-trainings per search count the
distinct (model, stream, seed) a search asked for: what it trains with the triple cache, which
keys on the model's code, so an innocent commit that changes nothing costs nothing.

    python benchmarks/bisect_search.py --quick          # 40 trials, a smaller pool
    python benchmarks/bisect_search.py --out benchmarks/bisect_results.md     # 200 trials
    python benchmarks/bisect_search.py --pool pool.json ...   # the pool trained once, then reused
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


def train_pool(epochs: Sequence[int], streams: int, seeds: int) -> tuple[np.ndarray, float]:
    """values[model, stream, seed]: test accuracy of the model trained ``epochs[model]``
    epochs, and the seconds per training."""
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

    start = time.perf_counter()
    values = np.array([[[accuracy(n, 100_003 * stream + seed) for seed in range(seeds)]
                        for stream in range(streams)] for n in epochs])
    return values, (time.perf_counter() - start) / values.size


def history(rng: np.random.Generator, streams: int) -> tuple[list[tuple[int, int]], int]:
    """(model, stream) per commit, model 1 from the culprit on, and the culprit's index."""
    culprit = int(rng.integers(1, COMMITS))
    model, stream = 0, int(rng.integers(streams))
    out = [(model, stream)]
    for i in range(1, COMMITS):
        if i == culprit:
            model = 1
        elif rng.random() < STREAM_CHANGE:
            stream = int(rng.integers(streams))
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


def paired_search(trial: Trial, delta: float, seeds: int, max_seeds: int) -> int | str:
    """The culprit's index, or "refused" (BAD did not read REGRESSED) or "undecided"."""
    from pytest_graphnetz.bisection import BisectRefusal, bisect_commits

    try:
        result = bisect_commits([str(i) for i in range(COMMITS)], trial.probe, seeds=seeds,
                                max_seeds=max_seeds, alpha=ALPHA, min_effect=delta)
    except BisectRefusal:
        return "refused"
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


METHODS = ("paired, 10 → 40 seeds (graphnetz bisect)", "paired, fixed 10 seeds",
           "single value (asv find)", "10-seed means, asv rule")


def load_or_train(path: str | None, streams: int, pool_seeds: int) -> tuple[np.ndarray, str]:
    """The pool, from ``path`` when it holds one of this shape (bit for bit what was trained),
    else trained and, with ``path``, saved there."""
    import json

    if path and Path(path).exists():
        data = json.loads(Path(path).read_text())
        pool = np.array(data["values"])
        if pool.shape == (len(EPOCHS), streams, pool_seeds) \
                and data["epochs"] == list(EPOCHS.values()):
            return pool, (f"read from {path} (trained at {data['ms_per_training']:.0f} ms "
                          "each)")
    t0 = time.perf_counter()
    pool, per_training = train_pool(list(EPOCHS.values()), streams, pool_seeds)
    note = (f"{per_training * 1000:.0f} ms per training here "
            f"({time.perf_counter() - t0:.0f} s)")
    if path:
        Path(path).write_text(json.dumps({"epochs": list(EPOCHS.values()),
                                          "ms_per_training": per_training * 1000,
                                          "values": pool.tolist()}))
    return pool, note


def run(trials: int, streams: int, pool_seeds: int, seed: int, pool_file: str | None) -> str:
    pool, trained = load_or_train(pool_file, streams, pool_seeds)
    scenarios = {}   # label -> (culprit's model index, δ, paired sd)
    for k, label in ((1, "2δ"), (2, "δ")):
        diffs = pool[k] - pool[0]            # paired by (stream, seed)
        effect = -float(diffs.mean())
        scenarios[label] = (k, effect / (2 if label == "2δ" else 1), float(diffs.std(ddof=1)))
    cross = pool[0, 1:] - pool[0, :-1]   # GOOD's model, adjacent streams: an innocent change
    rng = np.random.default_rng(seed)
    found = {(m, s): 0 for m in METHODS for s in ("2δ", "δ")}
    wrong = {(m, s): 0 for m in METHODS for s in ("2δ", "δ")}
    refused = {(m, s): 0 for m in METHODS for s in ("2δ", "δ")}
    cost = {(m, s): [] for m in METHODS for s in ("2δ", "δ")}
    t1 = time.perf_counter()
    for _ in range(trials):
        commits, culprit = history(rng, streams)
        perm = rng.permutation(pool_seeds)
        for label, (model, delta, _) in scenarios.items():
            for method in METHODS:
                trial = Trial(pool, commits, perm, model)
                if method == METHODS[0]:
                    got = paired_search(trial, delta, 10, 40)
                elif method == METHODS[1]:
                    got = paired_search(trial, delta, 10, 10)
                elif method == METHODS[2]:
                    got = value_search(trial, 1)
                else:
                    got = value_search(trial, 10)
                found[method, label] += got == culprit
                wrong[method, label] += isinstance(got, int) and got != culprit
                refused[method, label] += got == "refused"
                cost[method, label].append(len(trial.trained))
    search_s = time.perf_counter() - t1
    lines = [
        f"# Bisect under noise: {trials} histories of {COMMITS} commits, seed {seed}",
        "",
        f"Command: `python benchmarks/bisect_search.py --trials {trials} --streams {streams} "
        f"--pool-seeds {pool_seeds} --seed {seed}`"
        + (f" (pool: `--pool {pool_file}`)" if pool_file else ""),
        "",
        f"Model: GCN on a 400-node 4-block SBM, {EPOCHS['good']} epochs; the culprit trains "
        f"{EPOCHS['2δ']} (−2δ) or {EPOCHS['δ']} (−δ). Pool {streams} streams × 3 models × "
        f"{pool_seeds} seeds, {trained}; searches {search_s:.0f} s.",
        f"GOOD's accuracy {pool[0].mean():.4f} (seed sd {pool[0].std(ddof=1):.4f}); an "
        f"RNG-stream change's paired sd {cross.std(ddof=1):.4f}. "
        + "; ".join(f"culprit at −{label}: true effect {-delta * (2 if label == '2δ' else 1):+.4f}"
                    f" (paired sd {sd:.4f}), so δ = {delta:.4f}"
                    for label, (_, delta, sd) in scenarios.items())
        + f". alpha {ALPHA} for the whole search.",
        "",
        "| method | culprit at | culprit found | wrong commit named | endpoints refused | "
        "seed-trainings per search (mean, max) |",
        "|---|---|---|---|---|---|",
    ]
    for label in ("2δ", "δ"):
        for method in METHODS:
            k, c = found[method, label], np.array(cost[method, label])
            lo, hi = wilson(k, trials)
            w = wrong[method, label]
            lines.append(f"| {method} | −{label} | {100 * k / trials:.1f}% "
                         f"[{100 * lo:.1f}, {100 * hi:.1f}] | {100 * w / trials:.1f}% | "
                         f"{100 * refused[method, label] / trials:.1f}% | "
                         f"{c.mean():.1f}, {c.max()} |")
    lines += ["", "Brackets: 95% Wilson interval over the trials. Target: ≥ 95% at −2δ, "
              "≥ 80% at −δ (the first row of each). A paired search that neither finds the culprit "
              "nor names a wrong commit refused the endpoints (BAD did not read REGRESSED at its "
              "seeds and level) or stopped undecided with the culprit's range; the value "
              "bisects always name a commit."]
    return "\n".join(lines) + "\n"


def wilson(k: int, n: int) -> tuple[float, float]:
    from scipy.stats import binomtest

    ci = binomtest(k, n).proportion_ci(0.95, method="wilson")
    return ci.low, ci.high


def main(argv: Sequence[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--trials", type=int, default=200)
    parser.add_argument("--streams", type=int, default=8)
    parser.add_argument("--pool-seeds", type=int, default=48)
    parser.add_argument("--pool", help="JSON file of the pool: read when it fits, else written")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--quick", action="store_true", help="40 trials, 6 streams, 40 seeds")
    parser.add_argument("--out", help="also write the table to this file")
    args = parser.parse_args(argv)
    if args.quick:
        args.trials, args.streams, args.pool_seeds = 40, 6, 40
    text = run(args.trials, args.streams, args.pool_seeds, args.seed, args.pool)
    print(text, end="")
    if args.out:
        Path(args.out).write_text(text)


if __name__ == "__main__":
    main()
