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
Then two checks of what travels in the cache key (docs/cache.md):

- TF32: a GCN and a GAT sweep of ``karate`` under ``deterministic=off`` with
  ``torch.set_float32_matmul_precision("high")`` (TF32) against ``"highest"``: whether the values
  differ and the largest difference, and whether the cache keys differ (they must); under
  ``on`` the precision is pinned, so values and keys must not differ.
- ``CUBLAS_WORKSPACE_CONFIG``: in a fresh interpreter with the variable unset and the runner's
  own setting of it switched off, two ``deterministic=on`` runs of the same sweep: are they
  still bit-identical on this torch? (PyTorch removed its check of the variable in PR
  #161749; the runner keeps pinning it only while a GPU shows it is needed.)
``CUBLAS_WORKSPACE_CONFIG`` is set by the first ``on`` run before CUDA starts and stays set
for the process, as in a pytest session: ``off`` differs from ``on`` by torch's flag only.

On a machine without CUDA it says "no CUDA device", prints the CPU part of the key check (the
matmul precision in the key) and exits 0.

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
        print(key_check("cpu"))
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
    print(key_check("cuda"))
    for mode in MODES:
        print(tf32_check(mode, seeds, args.root))
    print(cublas_check(seeds, args.root))
    return 0


def key_check(device: str) -> str:
    """Whether the float32 matmul precision enters the cache key's context on ``device``."""
    import torch

    from pytest_graphnetz.runner import environment

    def context(precision: str, mode: str) -> str:
        before = torch.get_float32_matmul_precision()
        torch.set_float32_matmul_precision(precision)
        try:
            return repr(environment.key_context(environment.machine(device, mode), mode))
        finally:
            torch.set_float32_matmul_precision(before)

    lines = [f"\nkey check on {device}:"]
    for mode in ("on", "off"):
        differ = context("highest", mode) != context("high", mode)
        lines.append(f"  deterministic={mode}: precision high vs highest -> keys "
                     f"{'differ' if differ else 'are the same'}")
    return "\n".join(lines)


def tf32_check(mode: str, seeds: list[int], root: str | None) -> str:
    """Values of a GCN and a GAT on karate with TF32 matmuls against full float32 in ``mode``."""
    import numpy as np
    import torch
    from models import gat, gcn

    from pytest_graphnetz import run_benchmark

    reports = {}
    for precision in ("highest", "high"):
        torch.set_float32_matmul_precision(precision)
        try:
            reports[precision] = run_benchmark(["karate"], {"GCN": gcn, "GAT": gat},
                                               seeds=seeds, device="cuda", root=root,
                                               deterministic=mode)
        finally:
            torch.set_float32_matmul_precision("highest")
    a, b = reports["highest"], reports["high"]
    lines = [f"\nTF32 (precision high vs highest), deterministic={mode}:"]
    for model in a.models:
        va, vb = a.values("karate", model), b.values("karate", model)
        same = all(a.histories[("karate", model, s)] == b.histories[("karate", model, s)]
                   for s in a.seeds)
        lines.append(f"  karate/{model}: histories {'identical' if same else 'differ'}, max "
                     f"|Δ test| {float(np.nanmax(np.abs(va - vb))):.3g}; recorded "
                     f"{b.protocol['numerics']['float32_matmul_precision']}")
    return "\n".join(lines)


CUBLAS_PROBE = """
import json, os, sys
os.environ.pop("CUBLAS_WORKSPACE_CONFIG", None)
sys.path.insert(0, sys.argv[1])
from models import gat, gcn
from pytest_graphnetz import run_benchmark
from pytest_graphnetz.runner import determinism
determinism.prepare_cublas = lambda mode: None   # leave the variable unset
runs = [run_benchmark(["karate"], {"GCN": gcn, "GAT": gat}, seeds=json.loads(sys.argv[2]),
                      device="cuda", deterministic="on") for _ in range(2)]
differ = {m: sum(runs[0].histories[("karate", m, s)] != runs[1].histories[("karate", m, s)]
                 for s in runs[0].seeds) for m in runs[0].models}
print(json.dumps({"cublas": os.environ.get("CUBLAS_WORKSPACE_CONFIG"), "differ": differ}))
"""


def cublas_check(seeds: list[int], root: str | None) -> str:
    """Two deterministic runs in a fresh interpreter without ``CUBLAS_WORKSPACE_CONFIG``."""
    import json
    import os
    import subprocess

    env = {k: v for k, v in os.environ.items() if k != "CUBLAS_WORKSPACE_CONFIG"}
    if root is not None:
        env["GRAPHNETZ_ROOT"] = root
    out = subprocess.run([sys.executable, "-c", CUBLAS_PROBE, str(EXAMPLES), json.dumps(seeds)],
                         capture_output=True, text=True, env=env, check=False)
    if out.returncode != 0:
        return f"\nCUBLAS_WORKSPACE_CONFIG unset: the probe failed:\n{out.stderr[-2000:]}"
    found = json.loads(out.stdout.strip().splitlines()[-1])
    verdict = ("still bit-identical: the pin is not needed on this torch"
               if not any(found["differ"].values()) else
               f"NOT bit-identical ({found['differ']} seeds differ): keep the pin")
    return (f"\nCUBLAS_WORKSPACE_CONFIG unset (was {found['cublas']!r}), deterministic=on, two "
            f"runs of karate/GCN and karate/GAT: {verdict}")


if __name__ == "__main__":
    sys.exit(main())
