"""Plugin overhead: a pytest run of a project with no graphnetz tests, plugin on vs off.

The plugin is loaded by pytest on every run (``pytest11`` entry point), in every project of an
environment where pytest-graphnetz is installed, so its load must cost next to nothing: no
torch, torch_geometric or scipy at import time (about 1.5 s, 3 s and 0.8 s here).

Each repetition runs ``python -m pytest`` in a fresh process on a throw-away project holding
20 trivial tests, once as is and once with ``-p no:graphnetz``, alternating (other third-party
plugins off in both, see ``QUIET``). Printed: the median per-round difference (plugin − no
plugin) in milliseconds and the median per-round ratio, in CPU time of the pytest process
(robust to other users' load) and in wall time. Target: a
difference of a few milliseconds (process start-up and pytest itself cost ~0.3-0.5 s).

    .venv/bin/python benchmarks/plugin_overhead.py               # 30 rounds
    .venv/bin/python benchmarks/plugin_overhead.py --repeats 10  # quick
    .venv/bin/python benchmarks/plugin_overhead.py --instructions  # load-independent

On a loaded machine the time ratios move by several percent from one run to the next;
``--instructions`` instead counts the instructions of one run each way under valgrind's
callgrind (about a minute each; the same count to within a few dozen instructions whatever
else the machine does), and prints their ratio. ``--option-calls`` splits what registering the
options costs by the pytest and argparse call that spends it (callgrind, a bare process each).
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import TYPE_CHECKING

from _timing import describe, interleaved, paired_ratio

if TYPE_CHECKING:
    import pytest

# Other installed plugins (hypothesis alone takes ~1 s to load here) are switched off in both
# variants: they cost the same in both, and their load-time jitter would swamp a few ms.
# anyio's came in with the mlflow extra's dependencies (about 0.3 billion instructions a run here).
QUIET = ("-p", "no:cacheprovider", "-p", "no:hypothesispytest", "-p", "no:xdist",
         "-p", "no:xdist.looponfail", "-p", "no:anyio")
TESTS = "".join(f"def test_{i}():\n    assert {i} + 1 == {i + 1}\n\n" for i in range(20))


def pycache_of(project: Path) -> Path:
    """Where the runs of ``project`` keep their bytecode: beside it, not inside it, where pytest
    would walk its directories (more of them in the runs with the plugin: its bytecode) at
    every collection."""
    return project.parent / "pycache"


def user_env(pycache: Path) -> dict[str, str]:
    """This environment as an installed user's: bytecode written (to ``pycache``, outside the
    repository). With ``PYTHONDONTWRITEBYTECODE=1``, as on our dev machines, every run would
    recompile the plugin's source (~15 ms) — a cost no pip-installed user pays."""
    env = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
    env["PYTHONPYCACHEPREFIX"] = str(pycache)
    return env


def pytest_run(project: Path, *extra: str) -> None:
    """One ``pytest -q`` run of ``project`` in a fresh interpreter; fails loudly on a failure."""
    cmd = [sys.executable, "-m", "pytest", "-q", *QUIET, *extra]
    done = subprocess.run(cmd, cwd=project, capture_output=True, text=True,
                          env=user_env(pycache_of(project)))
    if done.returncode != 0 or "20 passed" not in done.stdout:
        raise SystemExit(f"pytest run {cmd} failed in {project}:\n{done.stdout}\n{done.stderr}")


def import_ms(project: Path) -> float:
    """Milliseconds to import the plugin module in a fresh interpreter where pytest is already
    imported (what pytest pays to load it; a precise complement to the noisy run times)."""
    code = ("import time, pytest; t = time.perf_counter(); import pytest_graphnetz.plugin; "
            "print(1000 * (time.perf_counter() - t))")
    return float(subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                                check=True, env=user_env(pycache_of(project))).stdout)


def profiled_ms(project: Path) -> float:
    """Milliseconds spent in the plugin during one pytest run, by cProfile: importing
    ``pytest_graphnetz.plugin`` plus every hook it implements (cProfile inflates small calls,
    so this is an upper bound; unlike run times it does not move with the machine's load)."""
    import pstats

    out = project / "plugin.prof"
    cmd = [sys.executable, "-m", "cProfile", "-o", str(out), "-m", "pytest", "-q", *QUIET]
    subprocess.run(cmd, cwd=project, capture_output=True, check=True,
                   env=user_env(pycache_of(project)))
    seconds = 0.0
    package = os.path.join("pytest_graphnetz", "plugin", "")
    entry = os.path.join(package, "__init__.py")  # its import includes its modules' imports
    for (filename, _, name), row in pstats.Stats(str(out)).stats.items():  # type: ignore[attr-defined]
        if package in filename and (name.startswith("pytest_") or (
                name == "<module>" and filename.endswith(entry))):
            seconds += row[3]  # cumulative time
    return 1000 * seconds


def instructions(project: Path, *extra: str) -> int:
    """Instructions executed by one ``pytest -q`` run of ``project`` (callgrind's ``Ir``)."""
    import re
    import shutil

    if shutil.which("valgrind") is None:
        raise SystemExit("--instructions needs valgrind on PATH")
    pytest_run(project, *extra)  # bytecode written: the counted run reads it
    env = {**user_env(pycache_of(project)), "PYTHONHASHSEED": "0"}
    done = subprocess.run(["valgrind", "--tool=callgrind", "--callgrind-out-file=/dev/null",
                           sys.executable, "-m", "pytest", "-q", *QUIET, *extra], cwd=project,
                          capture_output=True, text=True, env=env, check=True)
    found = re.search(r"Collected : (\d+)", done.stderr)
    if found is None:
        raise SystemExit(f"no instruction count in valgrind's output:\n{done.stderr}")
    return int(found.group(1))


# What registering the 35 options costs, call by call (``--option-calls``): each variant adds
# the options to pytest's own parser in a bare process, one more of pytest's layers per variant.
OPTION_CALLS = ("none", "argparse add_argument", "pytest _addoption", "pytest addoption",
                "addoption + addini", "addoption + addini, two parses", "none, two parses")


def probe(variant: str) -> pytest.Parser:
    """pytest's own parser with the plugin's options registered as ``variant`` says (what
    :func:`option_calls` counts), returned."""
    from _pytest.config import get_config

    from pytest_graphnetz.plugin.declared import OPTIONS, add_options

    parser = get_config()._parser
    group = parser.getgroup("graphnetz", "graphnetz: statistically aware GNN regression gates")
    for option in OPTIONS if variant in OPTION_CALLS[1:4] else ():
        attrs: dict = {"dest": option.dest, "help": option.help, "default": None}
        if option.flag:
            attrs["action"] = "store_true"
        else:
            attrs.update(metavar=option.metavar, action="append" if option.repeat else "store")
            if option.const is not None:
                attrs.update(nargs="?", const=option.const)
        flag = f"--graphnetz-{option.name}"
        if variant == OPTION_CALLS[1]:
            group._arggroup.add_argument(flag, **attrs)   # argparse alone
        elif variant == OPTION_CALLS[2]:
            group._addoption(flag, **attrs)                # pytest's, without addoption's checks
        else:
            group.addoption(flag, **attrs)
    if variant in OPTION_CALLS[4:6]:
        add_options(parser)                                # what the plugin does
    if variant in OPTION_CALLS[5:]:
        parser.parse_known_args(["-q"])
        parser.parse_known_args(["-q"])
    return parser


def option_calls() -> None:
    """Instructions of each :data:`OPTION_CALLS` variant, less the one before it."""
    import re

    counts = []
    for variant in OPTION_CALLS:
        done = subprocess.run(["valgrind", "--tool=callgrind", "--callgrind-out-file=/dev/null",
                               sys.executable, __file__, "--probe", variant],
                              capture_output=True, text=True, check=True,
                              env={**os.environ, "PYTHONHASHSEED": "0"})
        found = re.search(r"Collected : (\d+)", done.stderr)
        if found is None:
            raise SystemExit(f"no instruction count in valgrind's output:\n{done.stderr}")
        counts.append(int(found.group(1)))
    print("registering the plugin's options in pytest's parser, instructions, each call less "
          "the one before it (garbage collector off):")
    for variant, before, now in zip(OPTION_CALLS[1:5], counts[:4], counts[1:5], strict=True):
        print(f"  {variant:32s} {(now - before) / 1e6:+.2f}M")
    parses = (counts[5] - counts[4]) - (counts[6] - counts[0])
    print(f"  two parses of a command line, what the 35 options add: {parses / 1e6:+.2f}M")
    print(f"  all of it: {(counts[5] - counts[6]) / 1e6:+.2f}M")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=30)
    parser.add_argument("--instructions", action="store_true",
                        help="count instructions under callgrind instead of timing")
    parser.add_argument("--option-calls", action="store_true",
                        help="the instructions of registering the options, call by call")
    parser.add_argument("--probe", choices=OPTION_CALLS, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.probe:
        # The garbage collector off: a full pass (~10M instructions here) would fall in one
        # variant and not the next, whatever the calls themselves cost.
        import gc

        gc.disable()
        probe(args.probe)
        return
    if args.option_calls:
        option_calls()
        return
    if args.instructions:
        with tempfile.TemporaryDirectory() as tmp:
            project = Path(tmp) / "project"
            project.mkdir()
            (project / "pytest.ini").write_text("[pytest]\n")
            (project / "test_plain.py").write_text(TESTS)
            on, off = instructions(project), instructions(project, "-p", "no:graphnetz")
        print(f"instructions of one pytest run on 20 trivial tests: plugin loaded {on:,}, "
              f"-p no:graphnetz {off:,}, ratio {on / off:.4f}")
        return

    with tempfile.TemporaryDirectory() as tmp:
        project = Path(tmp) / "project"
        project.mkdir()
        (project / "pytest.ini").write_text("[pytest]\n")  # own rootdir: no outer addopts
        (project / "test_plain.py").write_text(TESTS)
        # The plugin really is loaded in the "on" runs (and really absent in the "off" ones).
        env = user_env(pycache_of(project))
        on = subprocess.run([sys.executable, "-m", "pytest", "--help"], cwd=project,
                            capture_output=True, text=True, env=env).stdout
        off = subprocess.run([sys.executable, "-m", "pytest", "-p", "no:graphnetz", "--help"],
                             cwd=project, capture_output=True, text=True, env=env).stdout
        if "--graphnetz-seeds" not in on or "--graphnetz-seeds" in off:
            raise SystemExit("pytest-graphnetz is not installed as a pytest11 plugin here")
        pytest_run(project)  # warm the OS file cache and write the bytecode, for both variants
        wall, cpu = interleaved({
            "plugin loaded": lambda: pytest_run(project),
            "-p no:graphnetz": lambda: pytest_run(project, "-p", "no:graphnetz"),
        }, args.repeats)

        imports = sorted(import_ms(project) for _ in range(5))
        profiled = sorted(profiled_ms(project) for _ in range(5))

    a, b = "plugin loaded", "-p no:graphnetz"
    print(f"plugin overhead: pytest on 20 trivial tests, fresh process each, "
          f"{args.repeats} interleaved rounds")
    print(describe(wall, "wall"))
    print(describe(cpu, "cpu"))
    for label, times in (("cpu", cpu), ("wall", wall)):
        diffs_ms = [1000 * (x - y) for x, y in zip(times[a], times[b], strict=True)]
        of_medians = 1000 * (statistics.median(times[a]) - statistics.median(times[b]))
        print(f"{label}: plugin − no plugin per run: median of per-round differences "
              f"{statistics.median(diffs_ms):+.1f} ms, difference of medians {of_medians:+.1f} ms, "
              f"ratio {paired_ratio(times, a, b):.3f} (target: a few ms)")
    print(f"import pytest_graphnetz.plugin after pytest (median of 5 fresh processes): "
          f"{imports[2]:.1f} ms")
    print(f"time inside the plugin (import + hooks) per run, cProfile, median of 5: "
          f"{profiled[2]:.1f} ms")

if __name__ == "__main__":
    main()
