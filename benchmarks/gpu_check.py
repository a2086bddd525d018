"""GPU determinism: do reruns of a seed reproduce bit for bit on CUDA, and at what cost?

Trains the example gates' models (``examples/test_gates.py``: GCN, GraphSAGE and GAT on
``karate``; GCN and GraphSAGE on ``csbm_homophilous``) on the first CUDA device, twice per seed
in each ``deterministic`` mode (``on`` and ``off``; the two runs of a mode interleaved with the
other mode's, on off off on, so drift in the machine's load hits both), without the triple
cache, after an untimed one-seed warm-up sweep. Printed per mode and cell:

- whether the two runs gave bit-identical per-epoch histories (and on how many seeds not);
- the largest difference of the reported test metric between the two runs;
- the seed spread: standard deviation of the test metric over seeds (first run);

and the wall-time ratio of a deterministic to a non-deterministic sweep (median of the runs).
``CUBLAS_WORKSPACE_CONFIG`` is set by the first ``on`` run before CUDA starts and stays set
for the process, as in a pytest session: ``off`` differs from ``on`` by torch's flag only.

On a machine without CUDA it says so and exits 0 (nothing to check).

    .venv/bin/python benchmarks/gpu_check.py               # 10 seeds
    .venv/bin/python benchmarks/gpu_check.py --seeds 3     # quicker
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from pathlib import Path

EXAMPLES = Path(__file__).resolve().parent.parent / "examples"
MODES = ("on", "off")


def sweep(mode: str, seeds: list[int], root: str | None,
          device: str = "cuda") -> tuple[list, float]:
    """The example gates' two benchmarks in ``mode``: their reports and the wall seconds."""
    from models import MODELS, gcn, sage

    from pytest_graphnetz import run_benchmark

    start = time.perf_counter()
    reports = [
        run_benchmark("social", MODELS, seeds=seeds, device=device, root=root,
                      deterministic=mode),
        run_benchmark(["csbm_homophilous"], {"GCN": gcn, "GraphSAGE": sage}, seeds=seeds,
                      device=device, root=root, deterministic=mode),
    ]
    return reports, time.perf_counter() - start


def compare(first: list, second: list) -> list[tuple[str, int, int, float, float]]:
    """Per cell: (name, seeds whose histories differ, seeds, max |Δ test|, seed std)."""
    import numpy as np

    rows = []
    for a, b in zip(first, second, strict=True):
        for task in a.tasks:
            for model in a.models:
                differ = sum(a.histories[(task, model, s)] != b.histories[(task, model, s)]
                             for s in a.seeds)
                va, vb = a.values(task, model), b.values(task, model)
                rows.append((f"{task}/{model}", differ, len(a.seeds),
                             float(np.nanmax(np.abs(va - vb))), float(np.std(va, ddof=1))))
    return rows


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--seeds", type=int, default=10, help="seeds 0..N-1 (default 10)")
    parser.add_argument("--root", default=None, help="dataset root (default: the runner's)")
    args = parser.parse_args()

    import torch

    if not torch.cuda.is_available():
        print(f"gpu_check: no CUDA device on this machine (torch {torch.__version__}, built "
              f"with CUDA {torch.version.cuda}); nothing to check. Run it on a GPU machine.")
        return 0
    sys.path.insert(0, str(EXAMPLES))
    seeds = list(range(args.seeds))
    runs: dict[str, list] = {mode: [] for mode in MODES}
    seconds: dict[str, list[float]] = {mode: [] for mode in MODES}
    # Untimed warm-up: starting CUDA and loading kernels must not count against one mode.
    sweep("on", seeds[:1], args.root)
    for mode in ("on", "off", "off", "on"):
        reports, wall = sweep(mode, seeds, args.root)
        runs[mode].append(reports)
        seconds[mode].append(wall)
        print(f"  sweep deterministic={mode}: {wall:.1f} s", flush=True)

    gpu = runs["on"][0][0].protocol["gpu"]
    print(f"\nGPU {gpu['name']} (CUDA {gpu['cuda']}, cuDNN {gpu['cudnn']}), torch "
          f"{torch.__version__}; {len(seeds)} seeds, 2 runs per mode\n")
    print(f"{'mode':<5} {'cell':<28} {'reruns bit-identical':<22} {'max |Δ test|':>12} "
          f"{'seed std':>9}")
    for mode in MODES:
        for name, differ, n, delta, spread in compare(*runs[mode]):
            same = "yes" if differ == 0 else f"no ({differ}/{n} seeds differ)"
            print(f"{mode:<5} {name:<28} {same:<22} {delta:12.3g} {spread:9.4f}")
    on, off = (statistics.median(seconds[m]) for m in MODES)
    print(f"\nwall per sweep (median of 2): on {on:.1f} s, off {off:.1f} s; "
          f"ratio deterministic/non-deterministic {on / off:.3f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
