"""Harness overhead: ``run_benchmark`` vs a minimal hand-written PyG loop doing the same work.

Both sides train a 2-layer GCN on the catalogue's ``csbm_homophilous`` block model (1,600
nodes) for the same seeds and epochs, on the CPU with the same thread count: per epoch one
training step, then one no-grad forward giving validation and test accuracy. The hand-written
loop loads each seed's data with the same loader (from the same on-disk dataset cache) and
keeps its per-epoch numbers with ``.item()``, as a user's script would. The harness adds
reseeding, fingerprints of data and model, divergence checks and report assembly (no triple
cache: ``cache_dir=None``). Both sides must produce bit-for-bit the same test-accuracy
histories (checked), so they did the same work.

Runs alternate (harness, loop, loop, harness, ...) in this one process; the printed ratios are
medians over rounds of harness / loop, in CPU time (robust to other users' load on a shared
machine: both sides are single-process and compute-bound) and in wall time, with a
distribution-free 95% interval for the CPU median. Target: <= 1.0.

    .venv/bin/python benchmarks/harness_overhead.py --repeats 15 # 10 seeds × 200 epochs
    .venv/bin/python benchmarks/harness_overhead.py --seeds 3 --epochs 50 --repeats 3   # quick
    .venv/bin/python benchmarks/harness_overhead.py --instructions --seeds 2  # load-independent

``--instructions`` counts each side's instructions under valgrind's callgrind instead (from
after a warm-up to the process's end, at 20 and at 60 epochs: about a minute each): the slope
is each side's cost per epoch, the rest its fixed cost for the seeds; printed with the ratio
they imply at ``--epochs``. The count does not move with the machine's load, where the timed
ratio moves by ±10% from round to round.
"""

from __future__ import annotations

import argparse
import os
import random
import re
import subprocess
import sys
import tempfile
from dataclasses import replace

import numpy as np
import torch
import torch.nn.functional as F
from _timing import describe, interleaved, median_ratio, paired_ratio, ratio_interval
from torch_geometric.nn import GCN

from pytest_graphnetz import run_benchmark
from pytest_graphnetz.runner.tasks.synthetic import TASKS, load_homophilous

HIDDEN = 16


def make_gcn(in_channels: int, out_channels: int) -> torch.nn.Module:
    """2-layer GCN with dropout: training draws from the RNG on both sides."""
    return GCN(in_channels, HIDDEN, 2, out_channels, dropout=0.5)


def hand_loop(root: str, seeds: list[int], epochs: int, threads: int) -> list[list[float]]:
    """The loop a user would write; per seed, the per-epoch test accuracies ``[epochs]``."""
    torch.set_num_threads(threads)
    task = TASKS["csbm_homophilous"]()
    out = []
    for seed in seeds:
        random.seed(seed)
        np.random.seed(seed)
        torch.manual_seed(seed)
        data = load_homophilous(root, seed=seed)
        torch.manual_seed(seed)  # the harness seeds the model independently of the loading
        model = make_gcn(data.num_features, int(data.y.max()) + 1)
        opt = torch.optim.Adam(model.parameters(), lr=task.lr, weight_decay=task.weight_decay)
        x, edge_index, y = data.x, data.edge_index, data.y
        train_mask, val_mask, test_mask = data.train_mask, data.val_mask, data.test_mask
        losses, vals, tests = [], [], []
        for _ in range(epochs):
            model.train()
            opt.zero_grad()
            loss = F.cross_entropy(model(x, edge_index)[train_mask], y[train_mask])
            loss.backward()
            opt.step()
            model.eval()
            with torch.no_grad():
                pred = model(x, edge_index).argmax(dim=-1)
                vals.append((pred[val_mask] == y[val_mask]).float().mean().item())
                tests.append((pred[test_mask] == y[test_mask]).float().mean().item())
            losses.append(loss.item())
        out.append(tests)
    return out


def harness(root: str, seeds: list[int], epochs: int, threads: int):
    task = replace(TASKS["csbm_homophilous"](), epochs=epochs)
    return run_benchmark({"csbm_homophilous": task}, {"GCN": make_gcn}, seeds=seeds,
                         device="cpu", root=root, threads=threads, cache_dir=None)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seeds", type=int, default=10)
    parser.add_argument("--epochs", type=int, default=200)
    parser.add_argument("--repeats", type=int, default=3, help="rounds of (harness, loop)")
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("--instructions", action="store_true",
                        help="count instructions under callgrind instead of timing")
    parser.add_argument("--count-one", choices=["harness", "loop"], help=argparse.SUPPRESS)
    parser.add_argument("--root", help=argparse.SUPPRESS)
    args = parser.parse_args()
    seeds = list(range(args.seeds))
    if args.count_one:
        count_one(args.count_one, args.root, seeds, args.epochs, args.threads)
        return
    if args.instructions:
        instructions(args.seeds, args.epochs, args.threads)
        return

    with tempfile.TemporaryDirectory() as tmp:
        # The runner gives the loader <root>/<category>/<task>; the loop reads the same files.
        data_root = f"{tmp}/synthetic/csbm_homophilous"
        # Warm-up, and the same-work check: generates every seed's dataset file once.
        report = harness(tmp, seeds, args.epochs, args.threads)
        loop = hand_loop(data_root, seeds, args.epochs, args.threads)
        for seed, tests in zip(seeds, loop, strict=True):
            got = list(report.histories[("csbm_homophilous", "GCN", seed)].test)
            # float32 accuracies: the harness stores the float32 value as a Python float.
            if got != [float(np.float32(v)) for v in tests]:
                raise SystemExit(f"seed {seed}: harness and hand-written loop disagree; "
                                 "they are not doing the same work")
        wall, cpu = interleaved({
            "run_benchmark": lambda: harness(tmp, seeds, args.epochs, args.threads),
            "hand-written loop": lambda: hand_loop(data_root, seeds, args.epochs, args.threads),
        }, args.repeats)

    a, b = "run_benchmark", "hand-written loop"
    print(f"harness overhead: {args.seeds} seeds × {args.epochs} epochs, GCN on "
          f"csbm_homophilous, cpu, threads={args.threads}, {args.repeats} interleaved rounds")
    print(describe(wall, "wall"))
    print(describe(cpu, "cpu"))
    print(f"ratio {a} / {b}: cpu {paired_ratio(cpu, a, b):.3f}, "
          f"wall {paired_ratio(wall, a, b):.3f} (medians of per-round ratios; ratios of "
          f"medians: cpu {median_ratio(cpu, a, b):.3f}, "
          f"wall {median_ratio(wall, a, b):.3f}; target <= 1.0)")
    low, high = ratio_interval(cpu, a, b)
    print(f"cpu ratio's median over {args.repeats} rounds: {paired_ratio(cpu, a, b):.3f}, "
          f"95% interval [{low:.3f}, {high:.3f}] (order statistics of the per-round ratios)")

def count_one(side: str, root: str, seeds: list[int], epochs: int, threads: int) -> None:
    """In a process under callgrind (collection off): warm both sides up, switch collection on
    for this process, run ``side``."""
    data_root = f"{root}/synthetic/csbm_homophilous"
    harness(root, seeds, 2, threads)
    hand_loop(data_root, seeds, 2, threads)
    subprocess.run(["callgrind_control", "-i", "on", str(os.getpid())], capture_output=True,
                   check=True)
    if side == "harness":
        harness(root, seeds, epochs, threads)
    else:
        hand_loop(data_root, seeds, epochs, threads)


def instructions(n_seeds: int, epochs: int, threads: int) -> None:
    """Each side's instructions at 20 and 60 epochs; per epoch, fixed, and the ratio they
    imply at ``epochs``."""
    import shutil

    if shutil.which("valgrind") is None:
        raise SystemExit("--instructions needs valgrind on PATH")
    counts: dict[tuple[str, int], int] = {}
    with tempfile.TemporaryDirectory() as root:
        for side in ("harness", "loop"):
            for n in (20, 60):
                done = subprocess.run(
                    ["valgrind", "--tool=callgrind", "--instr-atstart=no",
                     "--callgrind-out-file=/dev/null", sys.executable, __file__, "--count-one",
                     side, "--root", root, "--seeds", str(n_seeds), "--epochs", str(n),
                     "--threads", str(threads)], capture_output=True, text=True, check=True)
                found = re.search(r"Collected : (\d+)", done.stderr)
                if found is None:
                    raise SystemExit(f"no instruction count in valgrind's output:\n{done.stderr}")
                counts[side, n] = int(found.group(1))
    print(f"harness overhead by instructions: {n_seeds} seeds, GCN on csbm_homophilous, cpu, "
          f"threads={threads}")
    cost = {}
    for side in ("harness", "loop"):
        per_epoch = (counts[side, 60] - counts[side, 20]) / (40 * n_seeds)
        fixed = counts[side, 20] - 20 * n_seeds * per_epoch
        cost[side] = fixed + epochs * n_seeds * per_epoch
        print(f"  {side:8s} 20 epochs {counts[side, 20]:,}, 60 epochs {counts[side, 60]:,}: "
              f"{per_epoch / 1e6:.3f}M per epoch, {fixed / 1e6:.1f}M fixed")
    print(f"ratio run_benchmark / hand-written loop at {epochs} epochs: "
          f"{cost['harness'] / cost['loop']:.4f} (target <= 1.0)")


if __name__ == "__main__":
    main()
