"""PyG's own ``examples/gcn.py``, gated as a command task on Cora, unchanged but for three lines.

At run time the script is copied into a temporary project and three lines are added to the copy
(nothing of PyG's is kept in this repository):

    import pytest_graphnetz.script as graphnetz                         # after the imports
    graphnetz.seed()                                                    # after parse_args()
        graphnetz.record(test=tmp_test_acc, val=val_acc, train_loss=loss)   # in the epoch loop

Offline, gcn.py's ``Planetoid(path, 'Cora')`` cannot download. So the temporary project holds,
where gcn.py looks (``<script dir>/../data/Planetoid/Cora``), an already processed dataset
made from gnn-benchmark's ``cora.npz`` (PyG's ``CitationFull`` reads it with no download). It
takes the largest connected component and the split of gnn-benchmark's protocol: 20 train and
30 validation nodes per class, the rest test, drawn from ``--split-seed``. Planetoid's raw files
are empty placeholders, since Planetoid only checks that they exist once its processed file
does.

Scenarios, each against the baseline run (seeds 0..N-1, its own triple cache):

1. a rerun without the cache, with the determinism check (one more run of seed 0): IDENTICAL;
2. a comment added to the script: every triple a cache hit;
3. argparse's ``--lr`` default edited from 0.01 to 0.003 (lr × 0.3): every triple retrained,
   verdict REGRESSED expected;
4. the data changed (another split seed): the gate refuses the pairing.

    .venv/bin/python benchmarks/command_task_cora.py --quick        # 3 seeds, 100 epochs
    .venv/bin/python benchmarks/command_task_cora.py --seeds 10     # gcn.py's 200 epochs
"""

from __future__ import annotations

import argparse
import shutil
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
SHARED = REPO.parent / "shared"
ADDED = (
    ("from torch_geometric.nn import GCNConv\n",
     "import pytest_graphnetz.script as graphnetz\n"),
    ("args = parser.parse_args()\n", "graphnetz.seed()\n"),
    ("    train_acc, val_acc, tmp_test_acc = test()\n",
     "    graphnetz.record(test=tmp_test_acc, val=val_acc, train_loss=loss)\n"),
)
RAW = ["x", "tx", "allx", "y", "ty", "ally", "graph", "test.index"]


def gateable_copy(source: Path, target: Path, lr_default: str = "0.01") -> None:
    """``source`` with the three lines of :data:`ADDED`, each right after its anchor line."""
    text = source.read_text(encoding="utf-8")
    for anchor, line in ADDED:
        if text.count(anchor) != 1:
            raise SystemExit(f"{source}: the line {anchor.strip()!r} is not there exactly once; "
                             "is this PyG's examples/gcn.py?")
        text = text.replace(anchor, anchor + line)
    text = text.replace("'--lr', type=float, default=0.01", f"'--lr', type=float, "
                        f"default={lr_default}")
    target.parent.mkdir(parents=True, exist_ok=True)
    target.write_text(text, encoding="utf-8")


def planetoid_from_npz(npz: Path, project: Path, split_seed: int) -> Path:
    """Cora from gnn-benchmark's npz where gcn.py's Planetoid looks; the processed file."""
    import torch
    from torch_geometric.data import InMemoryDataset
    from torch_geometric.datasets import CitationFull
    from torch_geometric.transforms import LargestConnectedComponents

    staging = project / "staging"
    (staging / "cora" / "raw").mkdir(parents=True, exist_ok=True)
    shutil.copy(npz, staging / "cora" / "raw" / "cora.npz")
    data = LargestConnectedComponents()(CitationFull(str(staging), "cora")[0])
    generator = torch.Generator().manual_seed(split_seed)
    masks = {name: torch.zeros(data.num_nodes, dtype=torch.bool) for name in ("train", "val")}
    for c in range(int(data.y.max()) + 1):
        nodes = (data.y == c).nonzero().view(-1)
        nodes = nodes[torch.randperm(len(nodes), generator=generator)]
        masks["train"][nodes[:20]] = True
        masks["val"][nodes[20:50]] = True
    data.train_mask, data.val_mask = masks["train"], masks["val"]
    data.test_mask = ~(masks["train"] | masks["val"])
    root = project / "data" / "Planetoid" / "Cora"
    (root / "raw").mkdir(parents=True, exist_ok=True)
    for name in RAW:
        (root / "raw" / f"ind.cora.{name}").touch()
    (root / "processed").mkdir(parents=True, exist_ok=True)
    InMemoryDataset.save([data], str(root / "processed" / "data.pt"))
    shutil.rmtree(staging)
    return root / "processed" / "data.pt"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--gcn", type=Path,
                        default=SHARED / "reference" / "pyg-examples" / "gcn.py")
    parser.add_argument("--cora", type=Path, default=SHARED / "data" / "cora.npz")
    parser.add_argument("--seeds", type=int, default=10)
    parser.add_argument("--epochs", type=int, default=200, help="gcn.py's --epochs")
    parser.add_argument("--split-seed", type=int, default=0)
    parser.add_argument("--device", default="cpu")
    parser.add_argument("--quick", action="store_true", help="3 seeds, 100 epochs")
    args = parser.parse_args()
    if args.quick:
        args.seeds, args.epochs = 3, 100
    for path in (args.gcn, args.cora):
        if not path.is_file():
            raise SystemExit(f"{path} does not exist: pass --gcn / --cora")

    from pytest_graphnetz import run_benchmark
    from pytest_graphnetz.gates import compare_reports
    from pytest_graphnetz.gates.verdicts.values import GateRefusal
    from pytest_graphnetz.runner.command import Command, DataFiles
    from pytest_graphnetz.runner.tasks.base import Task

    seeds = list(range(args.seeds))
    with tempfile.TemporaryDirectory(prefix="graphnetz-cora-") as tmp:
        project = Path(tmp)
        cache = project / "cache"
        data_file = planetoid_from_npz(args.cora, project, args.split_seed)
        tasks = {"cora": Task("cora", DataFiles([data_file]), kind="command")}

        def command(script: Path, **kw) -> dict:
            return {"GCN": Command([sys.executable, str(script), "--epochs", str(args.epochs)],
                                   **kw)}

        def run(models: dict, use_cache: bool = True) -> tuple:
            statuses: list[str] = []
            start = time.perf_counter()
            report = run_benchmark(tasks, models, seeds=seeds, device=args.device,
                                   cache_dir=cache if use_cache else None,
                                   progress=lambda *a: statuses.append(a[3]))
            return report, statuses, time.perf_counter() - start

        def verdict(candidate, baseline) -> str:
            try:
                v = compare_reports(candidate, baseline)[0]
            except GateRefusal as exc:
                return "REFUSED (" + str(exc).split(":")[1].split(", so")[0].strip() + ")"
            c = v.comparison
            ev, ci = c.evidence, c.decision.ci
            return (f"{v.verdict}: paired Δ {ev.mean_diff:+.4f} (CI [{ci.low:+.4f}, "
                    f"{ci.high:+.4f}]), paired sd {ev.sd_diff:.4f}, p {ev.p_value:.3g}")

        script = project / "examples" / "gcn.py"
        gateable_copy(args.gcn, script)
        base, statuses, seconds = run(command(script))
        values = base.values("cora", "GCN")
        print(f"gcn.py (+3 lines) on Cora (LCC, gnn-benchmark split seed {args.split_seed}), "
              f"{args.epochs} epochs, seeds 0-{args.seeds - 1}, device {args.device}")
        print(f"baseline: final-epoch test accuracy {values.mean():.4f} "
              f"(per seed {', '.join(f'{v:.4f}' for v in values)}); best_val "
              f"{base.values('cora', 'GCN', epoch_selection='best_val').mean():.4f}; "
              f"{statuses.count('trained')} trained in {seconds:.1f} s")

        rerun, statuses, seconds = run(command(script, check_determinism=True), use_cache=False)
        print(f"1. rerun, no cache, determinism check on seed 0: {verdict(rerun, base)}; "
              f"{statuses.count('trained')} trained + 1 check run in {seconds:.1f} s")

        script.write_text("# a comment a reviewer added\n" + script.read_text())
        commented, statuses, seconds = run(command(script))
        print(f"2. comment edit: {statuses.count('cached')}/{len(seeds)} cache hits in "
              f"{seconds:.1f} s; {verdict(commented, base)}")

        slow_script = project / "slow" / "examples" / "gcn.py"
        gateable_copy(args.gcn, slow_script, lr_default="0.003")
        (project / "slow" / "data").symlink_to(project / "data")
        slow, statuses, seconds = run(command(slow_script))
        print(f"3. argparse --lr default 0.01 -> 0.003: {statuses.count('trained')} retrained "
              f"in {seconds:.1f} s; {verdict(slow, base)}")

        planetoid_from_npz(args.cora, project, args.split_seed + 1)
        moved, statuses, seconds = run(command(script))
        print(f"4. data changed (split seed {args.split_seed + 1}): "
              f"{statuses.count('trained')} retrained in {seconds:.1f} s; {verdict(moved, base)}")


if __name__ == "__main__":
    main()
