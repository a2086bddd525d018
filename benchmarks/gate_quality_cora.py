"""Gate quality on real data: Cora (gnn-benchmark's cora.npz) with PyG-example GCN and GAT.

The other gate-quality figures come from synthetic graphs. This trains two models
written in the style of PyG's ``examples/gcn.py`` and ``examples/gat.py`` (their layers,
dropout, optimizers, 200 epochs; the graph, split and loop are gnn-benchmark's protocol below)
over a pool of seeds, each seed once per variant:

- ``baseline``;
- innocent changes: ``salted`` (the baseline trained under ``graphnetz calibrate``'s salted
  seeds: other initialisation and dropout draws, same data and split) and ``layers reordered``
  (the second layer built first: the same model, its initialisation draws land elsewhere);
- injected regressions: ``lr x 0.3`` and ``dropout on in eval`` (``F.dropout(training=True)``).

Data: ``cora.npz`` read offline by PyG's ``CitationFull`` from ``<root>/cora/raw/cora.npz``,
features row-normalised (as the examples do), the largest connected component (2,485 nodes),
and per seed 20 training and 30 validation nodes per class, the rest test (gnn-benchmark's
``make_dataset.py`` protocol), drawn from the benchmark seed.

From the pool it measures: the seed spread (sd per seed, paired sd of each innocent change),
the verdicts of ``assert_not_worse`` (paired t, α = 0.05) at 10 seeds per side, with the
library's default δ = 1 point and with the δ that ``graphnetz calibrate`` says 10 seeds
resolve: the false-alarm rate (REGRESSED) of innocent changes, how often they read NOT WORSE,
and the power (REGRESSED) on each regression.

    python benchmarks/gate_quality_cora.py --npz ../shared/data/cora.npz --quick
    python benchmarks/gate_quality_cora.py --npz ../shared/data/cora.npz --pool 100
    python benchmarks/gate_quality_cora.py --from-values benchmarks/gate_quality_cora_values.json

Every run writes the per-seed values (``--values``) and the results (``--out``,
``benchmarks/gate_quality_cora_results.md``); ``--from-values`` recomputes the results from a
committed pool, bit for bit, without training.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import shutil
import sys
import time
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))  # gate_quality's pure helpers (rates, verdicts, resampling)
import gate_quality as gq  # noqa: E402

TASK = "cora_npz"
SEED_OFFSET = 1000  # clear of the seeds 0..N-1 that tests and examples use
EPOCHS = 200        # PyG's examples' default
S = 10              # seeds per side of a simulated pull request
POINT = 0.01
RESAMPLED = 2000    # random S-seed subsets of the pool (overlapping: shares, no CI)
SELECTIONS = ("final", "best_val")
VARIANTS = ("baseline", "salted", "layers reordered", "lr x 0.3", "dropout on in eval")
INNOCENT = ("salted", "layers reordered")
REGRESSIONS = ("lr x 0.3", "dropout on in eval")
# On this 2-core machine a run costs ~20 s of CPU at 200 epochs (the examples' dense dropout on
# 2,485 x 1,433 features dominates): the quick plan (60 runs at 100 epochs, ~12 s each) fits
# ~15 CPU minutes: one S-seed trial, the spread of both models, two regressions of GCN.
FULL_PLAN = {"GCN": VARIANTS, "GAT": VARIANTS}
QUICK_PLAN = {"GCN": ("baseline", "salted", "lr x 0.3", "dropout on in eval"),
              "GAT": ("baseline", "salted")}
QUICK_EPOCHS = 100


# -- data: gnn-benchmark's protocol on cora.npz, read by PyG's CitationFull -----------------------


class CoraNpz:
    """A seeded loader: Cora from ``npz`` (copied to ``<root>/cora/raw/cora.npz`` once), its
    largest connected component, features row-normalised, and a per-seed split of 20 train and
    30 validation nodes per class (the rest test)."""

    def __init__(self, npz: str) -> None:
        self.npz = str(Path(npz).resolve())

    def __call__(self, root: str, *, seed: int) -> Any:
        import torch
        import torch_geometric.transforms as T
        from filelock import FileLock
        from torch_geometric.datasets import CitationFull

        from pytest_graphnetz.runner.tasks.splits import derive_seed

        raw = Path(root) / "cora" / "raw"
        raw.mkdir(parents=True, exist_ok=True)
        with FileLock(str(Path(root) / ".cora.lock")):
            if not (raw / "cora.npz").is_file():
                part = raw / "cora.npz.part"
                shutil.copyfile(self.npz, part)
                os.replace(part, raw / "cora.npz")
            data = CitationFull(root, "cora")[0]
        data = T.LargestConnectedComponents()(data)
        data = T.NormalizeFeatures()(data)
        gen = torch.Generator().manual_seed(derive_seed(seed, "cora_npz_split"))
        masks = {name: torch.zeros(data.num_nodes, dtype=torch.bool)
                 for name in ("train_mask", "val_mask", "test_mask")}
        for c in range(int(data.y.max()) + 1):
            idx = (data.y == c).nonzero().view(-1)
            idx = idx[torch.randperm(idx.numel(), generator=gen)]
            masks["train_mask"][idx[:20]] = True
            masks["val_mask"][idx[20:50]] = True
        masks["test_mask"] = ~(masks["train_mask"] | masks["val_mask"])
        for name, mask in masks.items():
            setattr(data, name, mask)
        return data


# -- models in the style of PyG's examples/gcn.py and gat.py -------------------------------------


def _gcn(in_channels: int, out_channels: int, *, reverse: bool = False, lr_scale: float = 1.0,
         eval_dropout: bool = False) -> Any:
    import torch
    import torch.nn.functional as F
    from torch_geometric.nn import GCNConv

    class GCN(torch.nn.Module):
        def __init__(self) -> None:
            super().__init__()
            if reverse:
                self.conv2 = GCNConv(16, out_channels)
                self.conv1 = GCNConv(in_channels, 16)
            else:
                self.conv1 = GCNConv(in_channels, 16)
                self.conv2 = GCNConv(16, out_channels)
            self.lr = 0.01 * lr_scale
            self.eval_dropout = eval_dropout

        def forward(self, x, edge_index):
            on = self.training or self.eval_dropout
            x = F.dropout(x, p=0.5, training=on)
            x = self.conv1(x, edge_index).relu()
            x = F.dropout(x, p=0.5, training=on)
            return self.conv2(x, edge_index)

        def optimizer(self) -> Any:
            # gcn.py: weight decay on the first convolution only
            return torch.optim.Adam([dict(params=self.conv1.parameters(), weight_decay=5e-4),
                                     dict(params=self.conv2.parameters(), weight_decay=0)],
                                    lr=self.lr)

    return GCN()


def _gat(in_channels: int, out_channels: int, *, reverse: bool = False, lr_scale: float = 1.0,
         eval_dropout: bool = False) -> Any:
    import torch
    import torch.nn.functional as F
    from torch_geometric.nn import GATConv

    class GAT(torch.nn.Module):
        def __init__(self) -> None:
            super().__init__()
            if reverse:
                self.conv2 = GATConv(64, out_channels, heads=1, concat=False, dropout=0.6)
                self.conv1 = GATConv(in_channels, 8, heads=8, dropout=0.6)
            else:
                self.conv1 = GATConv(in_channels, 8, heads=8, dropout=0.6)
                self.conv2 = GATConv(64, out_channels, heads=1, concat=False, dropout=0.6)
            self.lr = 0.005 * lr_scale
            self.eval_dropout = eval_dropout

        def forward(self, x, edge_index):
            on = self.training or self.eval_dropout
            x = F.dropout(x, p=0.6, training=on)
            x = F.elu(self.conv1(x, edge_index))
            x = F.dropout(x, p=0.6, training=on)
            return self.conv2(x, edge_index)

        def optimizer(self) -> Any:
            return torch.optim.Adam(self.parameters(), lr=self.lr, weight_decay=5e-4)

    return GAT()


def gcn(i: int, o: int) -> Any:
    return _gcn(i, o)


def gcn_reordered(i: int, o: int) -> Any:
    return _gcn(i, o, reverse=True)


def gcn_low_lr(i: int, o: int) -> Any:
    return _gcn(i, o, lr_scale=0.3)


def gcn_eval_dropout(i: int, o: int) -> Any:
    return _gcn(i, o, eval_dropout=True)


def gat(i: int, o: int) -> Any:
    return _gat(i, o)


def gat_reordered(i: int, o: int) -> Any:
    return _gat(i, o, reverse=True)


def gat_low_lr(i: int, o: int) -> Any:
    return _gat(i, o, lr_scale=0.3)


def gat_eval_dropout(i: int, o: int) -> Any:
    return _gat(i, o, eval_dropout=True)


FACTORIES = {
    "GCN": {"baseline": gcn, "layers reordered": gcn_reordered, "lr x 0.3": gcn_low_lr,
            "dropout on in eval": gcn_eval_dropout},
    "GAT": {"baseline": gat, "layers reordered": gat_reordered, "lr x 0.3": gat_low_lr,
            "dropout on in eval": gat_eval_dropout},
}


def train_like_the_examples(model: Any, data: Any, *, task: Any, device: Any) -> dict:
    """The examples' loop: per epoch one full-batch step with the model's own optimizer, then
    one eval-mode forward giving validation and test accuracy (the report's ``best_val``
    selection is gcn.py's rule: test accuracy at the first best validation accuracy)."""
    import torch
    import torch.nn.functional as F

    optimizer = model.optimizer()
    y = data.y
    history: dict[str, list[float]] = {"test": [], "val": [], "train_loss": []}
    for _ in range(task.epochs):
        model.train()
        optimizer.zero_grad()
        out = model(data.x, data.edge_index)
        loss = F.cross_entropy(out[data.train_mask], y[data.train_mask])
        loss.backward()
        optimizer.step()
        model.eval()
        with torch.no_grad():
            pred = model(data.x, data.edge_index).argmax(dim=-1)
        history["train_loss"].append(float(loss.detach()))
        for name, mask in (("val", data.val_mask), ("test", data.test_mask)):
            history[name].append(int((pred[mask] == y[mask]).sum()) / int(mask.sum()))
    return history


def cora_task(npz: str, epochs: int = EPOCHS) -> Any:
    from pytest_graphnetz import Task

    return Task(TASK, CoraNpz(npz), kind="node", epochs=epochs,
                trainer=train_like_the_examples)


# -- the pool ------------------------------------------------------------------------------------


def train_pool(npz: str, *, pool: int, epochs: int, root: str, cache_dir: str | None,
               plan: Mapping[str, Sequence[str]] = FULL_PLAN, workers: int = 1,
               ) -> dict[str, dict[str, dict[str, np.ndarray]]]:
    """``[model][variant][selection]`` -> per-seed test accuracy, shape [pool] (seeds
    ``SEED_OFFSET + 0..pool-1``), for the variants ``plan`` lists per model. One
    ``run_benchmark`` call per variant (every model that has it)."""
    from pytest_graphnetz import run_benchmark
    from pytest_graphnetz.gates.calibration.salting import salted_models

    task = {TASK: cora_task(npz, epochs)}
    seeds = range(SEED_OFFSET, SEED_OFFSET + pool)
    values: dict[str, dict[str, dict[str, np.ndarray]]] = {m: {} for m in plan}
    for variant in VARIANTS:
        models = [m for m in plan if variant in plan[m]]
        if not models:
            continue
        start = time.perf_counter()
        if variant == "salted":
            factories = salted_models({m: FACTORIES[m]["baseline"] for m in models})
        else:
            factories = {m: FACTORIES[m][variant] for m in models}
        report = run_benchmark(task, factories, seeds=seeds, device="cpu", root=root,
                               cache_dir=cache_dir, workers=workers)
        for m in models:
            values[m][variant] = {}
            for selection in SELECTIONS:
                report.epoch_selection = selection
                values[m][variant][selection] = np.asarray(report.values(TASK, m), float)
        print(f"  {variant}: {len(models) * pool} runs in {time.perf_counter() - start:.0f} s",
              file=sys.stderr)
    return values


def save_values(path: Path, values: Mapping[str, Mapping[str, Mapping[str, np.ndarray]]],
                meta: Mapping[str, Any]) -> None:
    data = {"meta": dict(meta),
            "values": {m: {v: {sel: [float(x) for x in arr] for sel, arr in by_sel.items()}
                           for v, by_sel in per_model.items()}
                       for m, per_model in values.items()}}
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(data, indent=1) + "\n", encoding="utf-8")


def load_values(path: Path) -> tuple[dict[str, dict[str, dict[str, np.ndarray]]], dict]:
    data = json.loads(path.read_text(encoding="utf-8"))
    values = {m: {v: {sel: np.asarray(arr, float) for sel, arr in by_sel.items()}
                  for v, by_sel in per_model.items()}
              for m, per_model in data["values"].items()}
    return values, data["meta"]


# -- analysis (pure: from the pool) --------------------------------------------------------------


def calibrated(values: Mapping[str, Mapping[str, np.ndarray]], selection: str,
               seeds: int = S) -> tuple[float, float, int]:
    """What ``graphnetz calibrate`` says from the pool's ``salted`` variant: the paired sd of
    salted − baseline, the smallest δ ``seeds`` seeds resolve (power 0.8 both ways, α = 0.05),
    and the seeds a 1-point δ needs."""
    from pytest_graphnetz.gates.calibration.resolution import resolvable_min_effect
    from pytest_graphnetz.stats.planning import seeds_for_min_effect

    sd = float(np.std(values["salted"][selection] - values["baseline"][selection], ddof=1))
    return (sd, resolvable_min_effect(sd, seeds, alpha=gq.ALPHA),
            seeds_for_min_effect(sd, POINT, alpha=gq.ALPHA))


def _share(counts: Mapping[str, int], names: Sequence[str]) -> str:
    total = sum(counts.values())
    return f"{100 * sum(counts[n] for n in names) / total:.0f}%"


def verdict_rows(values: Mapping[str, Mapping[str, np.ndarray]], selection: str,
                 min_effect: float) -> list[list[str]]:
    """Per candidate at S seeds and δ = ``min_effect``: REGRESSED over the disjoint S-seed
    blocks of the pool (k/n with its Wilson interval), then the shares of REGRESSED / NOT WORSE
    (or BETTER) / INCONCLUSIVE over :data:`RESAMPLED` random S-seed subsets of the pool (with a
    pool of only S seeds: the one trial's verdict)."""
    base = values["baseline"][selection]
    n_pool = len(base)
    blocks = gq.seed_blocks(n_pool, S)
    subsets = gq.resampled_trials(n_pool, S, RESAMPLED, seed=0) if n_pool > S else blocks
    if not subsets:
        raise ValueError(f"a pool of {n_pool} seeds holds no {S}-seed trial; train at least {S}")
    rows = []
    for variant in (v for v in (*INNOCENT, *REGRESSIONS) if v in values):
        cand = values[variant][selection]
        disjoint = sum(gq.verdict(cand[b], base[b], min_effect=min_effect) == "REGRESSED"
                       for b in blocks)
        counts = dict.fromkeys(gq.VERDICTS, 0)
        for idx in subsets:
            counts[gq.verdict(cand[idx], base[idx], min_effect=min_effect)] += 1
        mean = float(np.mean(cand - base))
        sd = float(np.std(cand - base, ddof=1))
        rows.append([variant, "innocent" if variant in INNOCENT else "regression",
                     f"{mean / POINT:+.2f}", f"{sd / POINT:.2f}",
                     str(gq.rate(disjoint, len(blocks))) if blocks else "—",
                     _share(counts, ("REGRESSED",)), _share(counts, ("NOT WORSE", "BETTER")),
                     _share(counts, ("INCONCLUSIVE",))])
    return rows


def spread_rows(values: Mapping[str, Mapping[str, Mapping[str, np.ndarray]]]) -> list[list[str]]:
    rows = []
    for model, per in values.items():
        for selection in SELECTIONS:
            base = per["baseline"][selection]
            paired = [f"{float(np.std(per[v][selection] - base, ddof=1)) / POINT:.2f}"
                      if v in per else "—" for v in INNOCENT]
            sd, delta, needed = calibrated(per, selection)
            rows.append([model, selection, f"{np.mean(base):.4f}",
                         f"{np.std(base, ddof=1) / POINT:.2f}", *paired,
                         f"{delta / POINT:.2f}", str(needed)])
    return rows


def _table(headers: Sequence[str], rows: Sequence[Sequence[str]]) -> list[str]:
    return ["| " + " | ".join(headers) + " |", "|" + "---|" * len(headers),
            *("| " + " | ".join(r) + " |" for r in rows)]


def analyse(values: Mapping[str, Mapping[str, Mapping[str, np.ndarray]]],
            meta: Mapping[str, Any]) -> str:
    n_pool = len(next(iter(values.values()))["baseline"]["final"])
    n_runs = sum(len(per) for per in values.values()) * n_pool
    lines = [
        "# Gate quality on Cora (GCN and GAT in the style of PyG's examples)", "",
        f"Generated by `benchmarks/gate_quality_cora.py` from the pool "
        f"`{meta.get('values_file', 'benchmarks/gate_quality_cora_values.json')}`: "
        f"{n_pool} seeds ({SEED_OFFSET}..{SEED_OFFSET + n_pool - 1}), {n_runs} runs ("
        + "; ".join(f"{m}: {', '.join(per)}" for m, per in values.items())
        + f"), {meta.get('epochs')} epochs, trained on {meta.get('machine', '?')} in "
        f"{meta.get('train_seconds', '?')} s wall (torch {meta.get('torch', '?')}, PyG "
        f"{meta.get('torch_geometric', '?')}). Data: `cora.npz` (sha256 "
        f"{str(meta.get('npz_sha256', '?'))[:12]}…), largest connected component (2,485 "
        "nodes), 20/30 train/val nodes per class drawn per seed, the rest test. "
        "`python benchmarks/gate_quality_cora.py --from-values "
        "benchmarks/gate_quality_cora_values.json` recomputes this file from the pool.", "",
        "## Seed spread (accuracy points)", "",
        "sd per seed: of the baseline's per-seed test accuracy. Paired sd: of the per-seed "
        "difference candidate − baseline for each innocent change. Calibrated δ: the smallest δ "
        f"that {S} seeds resolve (NOT WORSE on no change, REGRESSED on a drop of δ, each with "
        "probability ≥ 0.8, α = 0.05) at the `salted` paired sd — what `graphnetz calibrate` "
        "prints; seeds for δ = 1 pt: what the library's default δ needs at that sd.", "",
        *_table(["model", "selection", "mean acc", "sd per seed", "paired sd: salted",
                 "paired sd: layers reordered", f"calibrated δ at {S} seeds",
                 "seeds for δ = 1 pt"], spread_rows(values)),
    ]
    trials = (f"over {RESAMPLED} random {S}-seed subsets of the pool (overlapping: the verdict "
              "rates the pool implies, no interval)" if n_pool > S else
              f"the verdict of the pool's single {S}-seed trial (a quick run: no rate)")
    for model, per in values.items():
        for selection in SELECTIONS:
            _, delta, _ = calibrated(per, selection)
            for name, d in (("δ = 1 point (the default)", POINT),
                            (f"δ = the calibrated {delta / POINT:.2f} points", delta)):
                lines += [
                    "", f"## {model}, `{selection}`: verdicts at {S} seeds, {name}", "",
                    f"Mean Δ and paired sd: over the whole pool, points. REGRESSED, disjoint: "
                    f"in k of {n_pool // S} independent {S}-seed blocks [95% Wilson]. The "
                    f"three shares: {trials}.", "",
                    *_table(["candidate", "kind", "mean Δ (pt)", "paired sd (pt)",
                             "REGRESSED, disjoint", "REGRESSED", "NOT WORSE/BETTER",
                             "INCONCLUSIVE"], verdict_rows(per, selection, d)),
                ]
    return "\n".join(lines) + "\n"


def _cpu_model() -> str:
    import platform

    try:
        for line in Path("/proc/cpuinfo").read_text(encoding="utf-8").splitlines():
            if line.startswith("model name"):
                return line.partition(":")[2].strip()
    except OSError:
        pass
    return platform.machine()


# -- main ----------------------------------------------------------------------------------------


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--npz", help="path of gnn-benchmark's cora.npz")
    parser.add_argument("--pool", type=int, default=100, help="seeds per variant (default 100)")
    parser.add_argument("--epochs", type=int, default=None,
                        help=f"default {EPOCHS} ({QUICK_EPOCHS} with --quick)")
    parser.add_argument("--quick", action="store_true",
                        help=f"~15 CPU minutes: one {S}-seed trial, {QUICK_EPOCHS} epochs, "
                         f"variants {QUICK_PLAN}")
    parser.add_argument("--workers", type=int, default=1, help="processes training runs")
    parser.add_argument("--variants", default=None,
                        help="comma-separated: train only these variants of the plan")
    parser.add_argument("--root", default=".graphnetz/cora_data", help="dataset directory")
    parser.add_argument("--cache-dir", default=".graphnetz/cora_cache",
                        help="triple cache (a rerun trains nothing twice); '' for none")
    parser.add_argument("--values", type=Path, default=HERE / "gate_quality_cora_values.json",
                        help="where the per-seed pool is written")
    parser.add_argument("--from-values", type=Path, default=None,
                        help="recompute the results from this pool, training nothing")
    parser.add_argument("--out", type=Path, default=HERE / "gate_quality_cora_results.md")
    args = parser.parse_args(argv)

    if args.from_values is not None:
        values, meta = load_values(args.from_values)
    else:
        if not args.npz:
            parser.error("--npz PATH is needed to train (or --from-values POOL.json)")
        import torch
        import torch_geometric

        pool = S if args.quick else args.pool
        plan = QUICK_PLAN if args.quick else FULL_PLAN
        if args.variants:
            keep = [v.strip() for v in args.variants.split(",")]
            plan = {m: tuple(v for v in vs if v in keep) for m, vs in plan.items()}
        epochs = QUICK_EPOCHS if args.quick and args.epochs is None else (args.epochs or EPOCHS)
        start = time.perf_counter()
        values = train_pool(args.npz, pool=pool, epochs=epochs, root=args.root,
                            cache_dir=args.cache_dir or None,
                            plan=plan,
                            workers=args.workers)
        meta = {"epochs": epochs, "quick": bool(args.quick), "pool": pool,
                "seed_offset": SEED_OFFSET,
                "train_seconds": round(time.perf_counter() - start),
                "npz_sha256": hashlib.sha256(Path(args.npz).read_bytes()).hexdigest(),
                "torch": torch.__version__, "torch_geometric": torch_geometric.__version__,
                "machine": f"{_cpu_model()} (CPU, 1 thread per run, {os.cpu_count()} cores "
                           "shared with other users)",
                "values_file": os.path.relpath(args.values, HERE.parent)}
        save_values(args.values, values, meta)
    args.out.write_text(analyse(values, meta), encoding="utf-8")
    print(f"wrote {args.out}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
