"""Plugin overhead: a pytest run of a project with no graphnetz tests, plugin on vs off.

The plugin is loaded by pytest on every run (``pytest11`` entry point), in every project of an
environment where pytest-graphnetz is installed, so its load must cost next to nothing: no
torch, torch_geometric or scipy at import time (about 1.5 s, 3 s and 0.8 s here).

Each repetition runs ``python -m pytest`` in a fresh process on a throw-away project holding
20 trivial tests, once as is and once with ``-p no:graphnetz``, alternating (other third-party
plugins off in both, see ``QUIET``). Printed: the median
per-round difference (plugin − no plugin) in milliseconds and the ratio of medians. Target: a
difference of a few milliseconds (process start-up and pytest itself cost ~0.3-0.5 s).

    .venv/bin/python benchmarks/plugin_overhead.py               # 30 rounds
    .venv/bin/python benchmarks/plugin_overhead.py --repeats 10  # quick
"""

from __future__ import annotations

import argparse
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

from _timing import describe, interleaved, median_ratio

# Other installed plugins (hypothesis alone takes ~1 s to load here) are switched off in both
# variants: they cost the same in both, and their load-time jitter would swamp a few ms.
QUIET = ("-p", "no:cacheprovider", "-p", "no:hypothesispytest", "-p", "no:xdist",
         "-p", "no:xdist.looponfail")
TESTS = "".join(f"def test_{i}():\n    assert {i} + 1 == {i + 1}\n\n" for i in range(20))


def pytest_run(project: Path, *extra: str) -> None:
    """One ``pytest -q`` run of ``project`` in a fresh interpreter; fails loudly on a failure."""
    cmd = [sys.executable, "-m", "pytest", "-q", *QUIET, *extra]
    done = subprocess.run(cmd, cwd=project, capture_output=True, text=True)
    if done.returncode != 0 or "20 passed" not in done.stdout:
        raise SystemExit(f"pytest run {cmd} failed in {project}:\n{done.stdout}\n{done.stderr}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=30)
    args = parser.parse_args()

    with tempfile.TemporaryDirectory() as tmp:
        project = Path(tmp)
        (project / "pytest.ini").write_text("[pytest]\n")  # own rootdir: no outer addopts
        (project / "test_plain.py").write_text(TESTS)
        # The plugin really is loaded in the "on" runs (and really absent in the "off" ones).
        on = subprocess.run([sys.executable, "-m", "pytest", "--help"], cwd=project,
                            capture_output=True, text=True).stdout
        off = subprocess.run([sys.executable, "-m", "pytest", "-p", "no:graphnetz", "--help"],
                             cwd=project, capture_output=True, text=True).stdout
        if "--graphnetz-seeds" not in on or "--graphnetz-seeds" in off:
            raise SystemExit("pytest-graphnetz is not installed as a pytest11 plugin here")
        pytest_run(project)  # warm the OS file cache for both variants
        times = interleaved({
            "plugin loaded": lambda: pytest_run(project),
            "-p no:graphnetz": lambda: pytest_run(project, "-p", "no:graphnetz"),
        }, args.repeats)

    diffs_ms = [1000 * (a - b) for a, b in zip(times["plugin loaded"], times["-p no:graphnetz"],
                                               strict=True)]
    print(f"plugin overhead: pytest on 20 trivial tests, fresh process each, "
          f"{args.repeats} interleaved rounds")
    print(describe(times))
    print(f"median difference plugin − no plugin: {statistics.median(diffs_ms):+.1f} ms per run "
          f"(ratio of medians {median_ratio(times, 'plugin loaded', '-p no:graphnetz'):.3f}; "
          "target: a few ms)")


if __name__ == "__main__":
    main()
