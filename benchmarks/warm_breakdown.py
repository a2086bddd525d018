"""Where a warm gate session's CPU goes: the examples' warm session (every triple and model
record in the cache) and 20 trivial tests, with the other third-party plugins off in both, as
``cache_hit.py --against-trivial`` runs them, each in fresh processes; in-process CPU seconds
(``time.process_time``) at pytest's phases and inside the package's main steps, medians over
``--repeats``. Used as this file's own pytest plugin (``-p warm_breakdown``).

    .venv/bin/python benchmarks/warm_breakdown.py --repeats 5             # makes its own cache
    .venv/bin/python benchmarks/warm_breakdown.py --cache-dir DIR          # a warm cache to reuse
"""

from __future__ import annotations

import argparse
import atexit
import functools
import importlib
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from cache_hit import OTHER_PLUGINS_OFF, REPO, TRIVIAL, gates

# (module, function): what the package spends in a warm session, besides importing itself.
STEPS = [("pytest_graphnetz.runner.sweep", "run_benchmark"),
         ("pytest_graphnetz.runner.triple", "code_identities"),
         ("pytest_graphnetz.runner.workers", "execute"),
         ("pytest_graphnetz.runner.environment", "machine"),
         ("pytest_graphnetz.gates.api", "assert_not_worse"),
         ("pytest_graphnetz.stats.boundaries", "_design")]   # its first call imports scipy.special
SPENT: dict[str, float] = {}
_START = time.process_time()


def _timed(module: str, name: str) -> None:
    """Wrap ``module.name`` (and every module's binding of it) to add up its CPU seconds."""
    target = importlib.import_module(module)
    original = getattr(target, name)

    @functools.wraps(original)
    def wrapper(*args: object, **kwargs: object) -> object:
        start = time.process_time()
        try:
            return original(*args, **kwargs)
        finally:
            SPENT[name] = SPENT.get(name, 0.0) + time.process_time() - start

    for loaded in list(sys.modules.values()):
        if getattr(loaded, name, None) is original:
            setattr(loaded, name, wrapper)


def pytest_collection_finish(session: object) -> None:
    SPENT["collected (from plugin load)"] = time.process_time() - _START
    if "pytest_graphnetz.gates" in sys.modules:   # the warm session: its steps
        for module, name in STEPS:
            _timed(module, name)


def pytest_sessionfinish(session: object) -> None:
    SPENT["session finished (from plugin load)"] = time.process_time() - _START


def _report() -> None:
    SPENT["process, at exit"] = time.process_time()
    with open(os.environ["WARM_BREAKDOWN_OUT"], "w") as fh:
        json.dump(SPENT, fh)


if "WARM_BREAKDOWN_OUT" in os.environ:
    atexit.register(_report)


def measure(cmd: list[str], cwd: Path, env: dict[str, str], out: Path) -> dict[str, float]:
    subprocess.run([*cmd, "-p", "warm_breakdown"], cwd=cwd, capture_output=True, check=True,
                   env={**env, "WARM_BREAKDOWN_OUT": str(out)})
    return json.loads(out.read_text())


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--cache-dir", type=Path, help="a warm cache of the examples")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        data, trivial = Path(tmp) / "data", Path(tmp) / "trivial"
        cache = args.cache_dir or Path(tmp) / "cache"
        if args.cache_dir is None:
            gates(cache, data, 10)
            gates(cache, data, 10)
        trivial.mkdir()
        (trivial / "test_trivial_twenty.py").write_text(TRIVIAL)
        env = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
        env["GRAPHNETZ_ROOT"] = str(data)
        env["PYTHONPATH"] = os.pathsep.join([str(REPO / "benchmarks"), str(REPO),
                                             env.get("PYTHONPATH", "")])
        base = [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider",
                *OTHER_PLUGINS_OFF]
        sessions = {"warm examples": ([*base, "examples", f"--graphnetz-cache-dir={cache}",
                                       "--graphnetz-seeds=10"], REPO),
                    "20 trivial tests": (base, trivial)}
        runs: dict[str, list[dict[str, float]]] = {name: [] for name in sessions}
        for i in range(args.repeats + 1):   # the first round writes bytecode: not counted
            for name, (cmd, cwd) in sessions.items():
                measured = measure(cmd, cwd, env, Path(tmp) / "spent.json")
                if i:
                    runs[name].append(measured)
    print(f"CPU seconds, medians of {args.repeats} fresh processes each (load average "
          f"{os.getloadavg()[0]:.1f}); other third-party plugins off")
    for name, measured in runs.items():
        print(f"  {name}:")
        for step in measured[0]:
            print(f"    {step:<40} {statistics.median(m[step] for m in measured):.3f}")


if __name__ == "__main__":
    main()
