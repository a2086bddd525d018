"""What one ``graphnetz bisect`` probe costs beyond training: seconds per probe of the probe
``graphnetz bisect`` runs (:class:`pytest_graphnetz.cli.bisection.probes.GitProbe`), warm (a fork of
the warm interpreter, :mod:`pytest_graphnetz.cli.bisection.probe_server`) and cold (``python -m
pytest``, a new
interpreter per probe), with the import costs beside them, all from the same run.

The scratch project is what a PyG team's gated test looks like at import: a module that imports
torch and torch_geometric and gates a report, here built from per-seed numbers
(``BenchmarkReport.from_arrays``) so that a probe trains nothing and its seconds are all
overhead: ``git worktree add``, the pytest session (start, collection, the plugin, the gate,
the saved report), ``git worktree remove``. Each probe checks out a commit again in a new
worktree, as ``graphnetz bisect`` does. Warm and cold probes are interleaved (A B B A ...),
medians reported; the warm interpreter's first two probes (the first teaches it what to import,
the second waits while it imports that) are counted apart.

    python benchmarks/bisect_probe_overhead.py            # 6 probes each way
"""

from __future__ import annotations

import argparse
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

TEST = '''
import numpy as np
import torch  # noqa: F401  (what a PyG project's test module imports)
import torch_geometric  # noqa: F401

from pytest_graphnetz import BenchmarkReport, assert_not_worse


def test_model(pytestconfig, graphnetz_baseline):
    n = int(pytestconfig.getoption("graphnetz_seeds"))
    values = [0.8 + 0.003 * np.random.default_rng([0, s]).standard_normal() for s in range(n)]
    report = BenchmarkReport.from_arrays(np.array(values)[None, None, :], tasks=["t"],
                                         models=["GCN"], seeds=range(n), metric="accuracy")
    assert_not_worse(report, graphnetz_baseline())
'''


def seconds(code: str, repeats: int = 3) -> float:
    """Median seconds of ``python -c code`` in fresh interpreters."""
    def run() -> float:
        t0 = time.perf_counter()
        subprocess.run([sys.executable, "-c", code], check=True)
        return time.perf_counter() - t0

    return statistics.median(run() for _ in range(repeats))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--probes", type=int, default=6, help="timed probes each way")
    args = parser.parse_args()
    from pytest_graphnetz.cli.bisection.probes import GitProbe, Workspace

    with tempfile.TemporaryDirectory() as tmp:
        repo = Path(tmp) / "project"
        repo.mkdir()
        (repo / "test_model.py").write_text(TEST)
        for cmd in (["git", "init", "-q"], ["git", "add", "-A"],
                    ["git", "-c", "user.name=b", "-c", "user.email=b@b", "commit", "-qm", "c"]):
            subprocess.run(cmd, cwd=repo, check=True)
        commit = subprocess.run(["git", "rev-parse", "HEAD"], cwd=repo, check=True,
                                capture_output=True, text=True).stdout.strip()
        spaces = {kind: Workspace(repo) for kind in ("warm", "cold")}
        probes = {kind: GitProbe(spaces[kind], "", ["-p", "no:hypothesispytest"],
                                 cache_dir=spaces[kind].root / "cache", log=lambda _: None,
                                 warm=kind == "warm") for kind in spaces}
        try:
            first_warm = []   # the first probe, then the one that waits for the learning
            for _ in range(2):
                t0 = time.perf_counter()
                probes["warm"](commit, 10)
                first_warm.append(time.perf_counter() - t0)
            times: dict[str, list[float]] = {"warm": [], "cold": []}
            for i in range(args.probes):
                for kind in ("warm", "cold") if i % 2 == 0 else ("cold", "warm"):
                    t0 = time.perf_counter()
                    probes[kind](commit, 10)
                    times[kind].append(time.perf_counter() - t0)
            worktree = []
            for _ in range(3):
                t0 = time.perf_counter()
                spaces["cold"].remove(spaces["cold"].add("timing", commit))
                worktree.append(time.perf_counter() - t0)
        finally:
            for kind in spaces:
                probes[kind].close()
                spaces[kind].close()
    start = seconds("pass")
    costs = {"interpreter start (python -c pass)": start,
             "import pytest": seconds("import pytest") - start,
             "import torch": seconds("import torch") - start,
             "import torch_geometric (torch included)": seconds("import torch_geometric") - start}
    with open("/proc/loadavg") as f:
        load = f.read().split()[:3]
    warm, cold = statistics.median(times["warm"]), statistics.median(times["cold"])
    print(f"load average {' '.join(load)}; {args.probes} timed probes each way, interleaved")
    print(f"seconds per probe, warm: median {warm:.2f} (min {min(times['warm']):.2f}, max "
          f"{max(times['warm']):.2f}); its first two probes (the first teaches it the "
          f"imports, the second waits while it imports them): "
          f"{first_warm[0]:.2f}, {first_warm[1]:.2f}")
    print(f"seconds per probe, cold: median {cold:.2f} (min {min(times['cold']):.2f}, max "
          f"{max(times['cold']):.2f})")
    print(f"ratio warm / cold: {warm / cold:.3f}")
    print(f"of which git worktree add + remove: median {statistics.median(worktree):.2f} s")
    for name, cost in costs.items():
        print(f"  {name}: {cost:.2f} s")


if __name__ == "__main__":
    main()
