"""Cache-hit path: rerunning the example gates (``pytest examples``) with a warm triple cache.

Each round runs the example project's gates twice in fresh processes on one new, empty
``--graphnetz-cache-dir``: cold (every triple trained and written) and then warm (every triple
read back; the report, gates and summary rebuilt). Datasets are generated once beforehand, so
the cold run's extra cost is training alone. Printed: the median over rounds of warm / cold,
and — since a warm run is mostly imports — what importing torch, torch_geometric and
scipy.stats alone costs in a fresh process.

    .venv/bin/python benchmarks/cache_hit.py                         # 3 seeds, 3 rounds
    .venv/bin/python benchmarks/cache_hit.py --seeds 10 --repeats 2  # the CI seed count
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from _timing import paired_ratio

REPO = Path(__file__).resolve().parent.parent


def gates(cache: Path, data: Path, seeds: int) -> tuple[float, str]:
    """Wall seconds of one ``pytest examples`` run, and its triple-count line."""
    cmd = [sys.executable, "-m", "pytest", "examples", "-q", "-p", "no:cacheprovider",
           f"--graphnetz-cache-dir={cache}", f"--graphnetz-seeds={seeds}"]
    start = time.perf_counter()
    done = subprocess.run(cmd, cwd=REPO, capture_output=True, text=True,
                          env={**os.environ, "GRAPHNETZ_ROOT": str(data)})
    seconds = time.perf_counter() - start
    if done.returncode != 0:
        raise SystemExit(f"{' '.join(cmd)} failed:\n{done.stdout[-3000:]}\n{done.stderr[-3000:]}")
    counts = [line for line in done.stdout.splitlines() if line.startswith("triples:")]
    return seconds, counts[-1] if counts else "triples: ?"


def import_seconds() -> float:
    code = ("import time; t = time.perf_counter(); import torch, torch_geometric, scipy.stats; "
            "print(time.perf_counter() - t)")
    return float(subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                                check=True).stdout)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seeds", type=int, default=3)
    parser.add_argument("--repeats", type=int, default=3)
    args = parser.parse_args()
    times: dict[str, list[float]] = {"cold": [], "warm": []}
    imports = []
    with tempfile.TemporaryDirectory() as tmp:
        data = Path(tmp) / "data"
        gates(Path(tmp) / "warmup", data, args.seeds)  # generates the datasets, once
        for i in range(args.repeats):
            cache = Path(tmp) / f"cache{i}"
            cold, cold_counts = gates(cache, data, args.seeds)
            warm, warm_counts = gates(cache, data, args.seeds)
            if not warm_counts.startswith("triples: 0 trained"):
                raise SystemExit(f"the warm run trained something: {warm_counts}")
            times["cold"].append(cold)
            times["warm"].append(warm)
            imports.append(import_seconds())
    print(f"cache hit: pytest examples --graphnetz-seeds={args.seeds}, fresh processes, "
          f"{args.repeats} rounds of (cold, warm)")
    print(f"  cold: median {statistics.median(times['cold']):.2f} s ({cold_counts})")
    print(f"  warm: median {statistics.median(times['warm']):.2f} s ({warm_counts})")
    print(f"  import torch + torch_geometric + scipy.stats alone: median "
          f"{statistics.median(imports):.2f} s")
    print(f"ratio warm / cold: {paired_ratio(times, 'warm', 'cold'):.3f} (median of per-round "
          "ratios; target: a small fraction)")


if __name__ == "__main__":
    main()
