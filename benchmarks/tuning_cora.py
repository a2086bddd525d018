"""Tune, then confirm, on real Cora (gnn-benchmark's cora.npz, read offline by PyG's CitationFull;
the loader of ``gate_quality_cora.py``: per-seed split of 20 train / 30 validation nodes per class).

A grid for PyG's GCN (hidden × dropout × lr), every trial trained under the reserved search
seeds, the winner confirmed on seeds 0..n-1, for three arms:

- ``baseline``: the search as main would run it;
- ``innocent``: the same search under salted seeds (every initialisation and dropout draw moves,
  data and splits do not): an innocent change, which the gate should read NOT WORSE;
- ``regressed``: the same search with the model's logits damped by a random mask on a fraction
  of the nodes at evaluation (``--drop`` of them answered by a fixed class): a real drop;
- ``innocent, incumbent`` and ``regressed, incumbent``: the two candidates searched again with
  the baseline's winner as incumbent (``tune(..., incumbent=baseline)``), which they keep
  unless a challenger beats it on validation.

Each candidate is gated against the baseline with ``assert_not_worse`` (the real gate), and the
same comparison is read on the search seeds (the winners' test values there, judged alone: what
a gate without the confirmation step would see). Prints one table; ``--out`` writes it as
Markdown with the per-arm search records.

    nice -n 10 python benchmarks/tuning_cora.py --npz ../shared/data/cora.npz --out \\
        benchmarks/tuning_cora_results.md
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
from gate_quality_cora import CoraNpz  # noqa: E402

TASK = "cora_npz"


def build(config: dict) -> Any:
    """PyG's GCN at this configuration (lr reaches the run through the grid's ``lr`` key)."""
    import functools

    return functools.partial(_gcn, hidden=config["hidden"], dropout=config["dropout"])


def _gcn(in_channels: int, out_channels: int, *, hidden: int, dropout: float) -> Any:
    from torch_geometric.nn import GCN

    return GCN(in_channels, hidden, 2, out_channels, dropout=dropout)


class Damped:
    """A regression: at evaluation, a fixed ``share`` of the nodes (drawn from the seed) is
    answered with class 0 whatever the model says (about ``share`` × 86% of them were right)."""

    def __init__(self, factory: Any, share: float) -> None:
        self.factory, self.share = factory, share

    def __call__(self, in_channels: int, out_channels: int) -> Any:
        import torch

        inner = self.factory(in_channels, out_channels)
        share = self.share

        class DampedModel(torch.nn.Module):
            def __init__(self) -> None:
                super().__init__()
                self.inner = inner
                self.share = share

            def forward(self, x, edge_index):
                out = self.inner(x, edge_index)
                if self.training:
                    return out
                gen = torch.Generator().manual_seed(x.shape[0])
                hit = torch.rand(x.shape[0], generator=gen) < self.share
                forced = torch.full_like(out, -1e4)
                forced[:, 0] = 1e4
                return torch.where(hit[:, None], forced, out)

        return DampedModel()


def run(args: argparse.Namespace) -> str:
    import numpy as np

    from pytest_graphnetz import Task, grid, tune
    from pytest_graphnetz.base.text import fmt_num
    from pytest_graphnetz.gates.calibration.salting import SaltedFactory
    from pytest_graphnetz.gates.comparing.compare import compare_reports

    task = {TASK: Task(TASK, CoraNpz(args.npz), epochs=args.epochs)}
    space = grid(hidden=[16, 64], dropout=[0.5, 0.8], lr=[0.01, 0.005])[: args.trials]
    common = dict(search_seeds=args.search_seeds, seeds=range(args.seeds), device="cpu",
                  root=args.root, cache_dir=args.cache_dir, verify_cache=0)
    arms = {
        "baseline": {"GCN": build},
        "innocent": {"GCN": lambda c: SaltedFactory(build(c), salt=1)},
        "regressed": {"GCN": lambda c: Damped(build(c), args.drop)},
    }
    results, seconds = {}, {}
    for arm, models in arms.items():
        start = time.perf_counter()
        results[arm] = tune(task, models, space, **common)
        seconds[arm] = time.perf_counter() - start
        print(f"{arm}: {results[arm].record.describe()} ({seconds[arm]:.0f} s)", flush=True)
    base = results["baseline"]
    # the same candidates given the baseline's winner as incumbent (their trials are cache hits)
    for arm in ("innocent", "regressed"):
        start = time.perf_counter()
        name = f"{arm}, incumbent"
        results[name] = tune(task, arms[arm], space, incumbent=base.record, **common)
        seconds[name] = time.perf_counter() - start
        print(f"{name}: {results[name].record.describe()} ({seconds[name]:.0f} s)", flush=True)
    lines = ["| candidate | winner | optimism | confirmed: verdict, mean Δ [CI] | on search "
             "seeds: verdict, mean Δ |", "|---|---|---|---|---|"]
    for arm in ("innocent", "regressed", "innocent, incumbent", "regressed, incumbent"):
        cand = results[arm]
        confirmed = compare_reports(cand.report, base.report, canonical=True,
                                    first_look=args.seeds)[0]
        # what a gate without the confirmation step reads: each winner's values on the search
        # seeds it was chosen on (paired by seed: both arms searched the same reserved block)
        searched = compare_reports(cand.searches[cand.record.winner],
                                   base.searches[base.record.winner], rerun_safe=False)[0]
        lo, hi = confirmed.comparison.decision.ci
        lines.append(
            f"| {arm} | {dict(cand.winner)} | {fmt_num(cand.record.optimism)} | "
            f"{confirmed.verdict.value} {fmt_num(confirmed.comparison.evidence.mean_diff)} "
            f"[{fmt_num(lo)}, {fmt_num(hi)}] | {searched.verdict.value} "
            f"{fmt_num(searched.comparison.evidence.mean_diff)} |")
    trial_table = ["| arm | trial means (validation, search seeds) | winner | winner's "
                   "validation: search / confirmation seeds | winner's test: search / "
                   "confirmation seeds |", "|---|---|---|---|---|"]
    for arm, res in results.items():
        record = res.record
        means = ", ".join(fmt_num(m) for m in record.trial_means())
        test = float(np.nanmean(res.report.values(TASK, "GCN")))
        test_search = float(np.nanmean(res.searches[record.winner].values(TASK, "GCN")))
        trial_table.append(
            f"| {arm} | {means} | {record.winner} | "
            f"{fmt_num(record.trials[record.winner].mean)} / "
            f"{fmt_num(record.confirmation_mean)} | {fmt_num(test_search)} / {fmt_num(test)} |")
    budget = base.record.budget
    return "\n".join([
        f"# Tune, then confirm, on Cora ({budget}, {args.seeds} confirmation seeds, "
        f"{args.epochs} epochs)", "",
        f"`python benchmarks/tuning_cora.py --trials {args.trials} --search-seeds "
        f"{args.search_seeds} --seeds {args.seeds} --epochs {args.epochs} --drop {args.drop}`; "
        "wall seconds per arm in this run (a rerun reads the triple cache): "
        + ", ".join(f"{a} {s:.0f}" for a, s in seconds.items()), "",
        *lines, "", *trial_table, "",
        *(f"- {arm}: {res.record.describe()}" for arm, res in results.items()), ""])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--npz", required=True)
    parser.add_argument("--trials", type=int, default=8)
    parser.add_argument("--search-seeds", type=int, default=5)
    parser.add_argument("--seeds", type=int, default=10)
    parser.add_argument("--epochs", type=int, default=100)
    parser.add_argument("--drop", type=float, default=0.025)
    parser.add_argument("--root", default="data/benchmark")
    parser.add_argument("--cache-dir", default=".graphnetz-cache/tuning-cora")
    parser.add_argument("--out", default=None)
    args = parser.parse_args()
    text = run(args)
    print(text)
    if args.out:
        Path(args.out).write_text(text, encoding="utf-8")


if __name__ == "__main__":
    main()
