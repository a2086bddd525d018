"""Loading the plugin must not import torch, torch_geometric, scipy, numpy or mlflow (seconds
a run); a session whose command-task triples are all cache hits imports neither torch nor PyG."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

HEAVY = ("torch", "torch_geometric", "scipy", "numpy", "mlflow")


def test_importing_the_plugin_imports_nothing_heavy() -> None:
    code = ("import sys, pytest_graphnetz, pytest_graphnetz.plugin; "
            f"print([m for m in {HEAVY!r} if m in sys.modules])")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         check=True).stdout
    assert out.strip() == "[]"


def test_a_pytest_run_without_graphnetz_tests_imports_nothing_heavy(
        pytester: pytest.Pytester) -> None:
    # Checked after the whole session, terminal summary included (pytest_unconfigure runs last).
    pytester.makeconftest(f"""
        import sys

        def pytest_unconfigure(config):
            with open("heavy.txt", "w") as fh:
                fh.write(repr([m for m in {HEAVY!r} if m in sys.modules]))
    """)
    pytester.makepyfile("def test_plain():\n    assert 1 + 1 == 2\n")
    result = pytester.runpytest_subprocess("-v")
    result.assert_outcomes(passed=1)
    result.stdout.fnmatch_lines(["plugins:*graphnetz*"])   # the plugin was loaded
    assert (pytester.path / "heavy.txt").read_text() == "[]"


COMMAND_PROJECT = '''
import sys
from pathlib import Path

from pytest_graphnetz import Task
from pytest_graphnetz.runner.command import Command, DataFiles

HERE = Path(__file__).parent
TASKS = {"t": Task("t", DataFiles([HERE / "data.txt"]), kind="command")}
MODELS = {"A": Command([sys.executable, "train.py", "{output}"], cwd=HERE)}
'''

COMMAND_TRAIN = '''
import json, os, random, sys
random.seed(int(os.environ["GRAPHNETZ_SEED"]))
json.dump({"metric": "accuracy", "test": [0.5 + 0.1 * random.random()]}, open(sys.argv[1], "w"))
'''

COMMAND_GATE = '''
from pytest_graphnetz import assert_not_worse

import project


def test_script(graphnetz_run, graphnetz_baseline):
    assert_not_worse(graphnetz_run(project.TASKS, project.MODELS), graphnetz_baseline())
'''


def test_a_fully_cached_command_task_session_imports_neither_torch_nor_pyg(
        pytester: pytest.Pytester) -> None:
    # The device stays at its default, auto, where the installed torch has no GPU build (auto
    # is then known to be the CPU without importing torch); elsewhere auto asks torch, so the
    # session pins the CPU.
    device = [] if _torch_is_cpu_only() else ["--graphnetz-device=cpu"]
    pytester.makeconftest(f"""
        import sys

        def pytest_unconfigure(config):
            with open("heavy.txt", "w") as fh:
                fh.write(repr([m for m in {HEAVY[:2]!r} if m in sys.modules]))
    """)
    pytester.makepyfile(project=COMMAND_PROJECT, train=COMMAND_TRAIN, test_script=COMMAND_GATE)
    (pytester.path / "data.txt").write_text("a graph")
    first = pytester.runpytest_subprocess("-o", "graphnetz_seeds=3", "--graphnetz-update-baselines",
                                          *device)
    first.assert_outcomes(passed=1)
    first.stdout.fnmatch_lines(["triples: 3 trained, 0 from cache"])
    cached = pytester.runpytest_subprocess("-o", "graphnetz_seeds=3", *device)
    cached.assert_outcomes(passed=1)
    # the verify sample retrains one seed of the command task: a subprocess, still no torch here
    cached.stdout.fnmatch_lines(["*t/A*IDENTICAL*", "triples: 0 trained, 3 from cache "
                                 "(1 of them retrained to check the cache)"])
    assert (pytester.path / "heavy.txt").read_text() == "[]"


def test_the_versions_in_the_cache_key_spell_what_the_imports_say() -> None:
    # Read from package metadata (no import); a cache written by a run that read `__version__`
    # stays valid only if the two spell the same string (a local suffix such as +cpu included).
    _needs_pyg()
    code = ("import json; from pytest_graphnetz.runner.environment import versions; "
            "import numpy, torch, torch_geometric; print(json.dumps([versions(), "
            "[torch.__version__, torch_geometric.__version__, numpy.__version__]]))")
    got, imported = json.loads(subprocess.run([sys.executable, "-c", code], capture_output=True,
                                              text=True, check=True).stdout)
    assert [got["torch"], got["torch_geometric"], got["numpy"]] == imported


def test_auto_resolves_without_torch_to_what_torch_says() -> None:
    code = ("import sys; from pytest_graphnetz.runner.environment import resolve_device; "
            "device = resolve_device('auto'); imported = 'torch' in sys.modules; "
            "import torch; print(device, imported, torch.cuda.is_available())")
    device, imported, cuda = subprocess.run([sys.executable, "-c", code], capture_output=True,
                                            text=True, check=True).stdout.split()
    assert device == ("cuda:0" if cuda == "True" else "cpu") or sys.platform == "darwin"
    if _torch_is_cpu_only():
        assert imported == "False"


def _torch_is_cpu_only() -> bool:
    """Whether the installed torch has neither a CUDA nor a ROCm build, and this is no Mac (MPS),
    asked of torch in a fresh interpreter (this one must not import it inside a pytester run:
    pytester drops the modules a test imports, and torch cannot be imported twice)."""
    _needs_pyg()
    code = "import torch; print(torch.version.cuda is None and torch.version.hip is None)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         check=True).stdout
    return out.strip() == "True" and sys.platform != "darwin"


def _needs_pyg() -> None:
    """Skip without torch_geometric, found without importing it in this process."""
    import importlib.util

    if importlib.util.find_spec("torch_geometric") is None:
        pytest.skip("needs torch_geometric")
