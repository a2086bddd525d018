"""The tests of tests/fast/test_command_reads.py's unit that cost seconds each: fresh
interpreters, subprocess sessions or killed processes (the slow tier, tests/README.md)."""

from __future__ import annotations

import pytest

pytest.importorskip("torch_geometric")



IMPORTS_TORCH = '''
import torch
import torch_geometric  # its import reads TORCHINDUCTOR_CACHE_DIR
import pytest_graphnetz.script as graphnetz

graphnetz.seed()
graphnetz.record(test=float(torch.sigmoid(torch.randn(3).sum())))
'''

TWO_KINDS = '''
import sys
from pathlib import Path

from pytest_graphnetz import Task
from pytest_graphnetz.runner.command import Command, DataFiles

HERE = Path(__file__).parent


def gcn(in_channels, out_channels):
    from torch_geometric.nn import GCN

    return GCN(in_channels, 4, 1, out_channels)


def test_in_process(graphnetz_run):
    graphnetz_run("social", {"GCN": gcn}, epochs=2)


def test_script(graphnetz_run):
    graphnetz_run({"t": Task("t", DataFiles(), kind="command")},
                  {"A": Command([sys.executable, "train.py"], cwd=HERE)})
'''


def test_what_a_script_inherits_does_not_depend_on_the_runner_importing_torch(
        pytester: pytest.Pytester, monkeypatch) -> None:
    # A session with an in-process gate imports torch and PyG in pytest, and that import sets
    # TORCHINDUCTOR_CACHE_DIR; a session of the command gate alone does not. The script's
    # import of PyG reads that variable: were it inherited, every run the first session made would
    # retrain in the second.
    monkeypatch.delenv("TORCHINDUCTOR_CACHE_DIR", raising=False)
    pytester.makepyfile(test_kinds=TWO_KINDS)
    (pytester.path / "train.py").write_text(IMPORTS_TORCH)
    options = ["-p", "no:randomly", "-p", "no:cacheprovider", "-o", "graphnetz_seeds=3",
               "--graphnetz-device=cpu", f"--graphnetz-cache-dir={pytester.path / 'cache'}",
               "--graphnetz-verify-cache=0"]
    both = pytester.runpytest_subprocess(*options)
    both.assert_outcomes(passed=2)
    script_alone = pytester.runpytest_subprocess(*options, "-k", "script")
    script_alone.assert_outcomes(passed=1, deselected=1)
    script_alone.stdout.fnmatch_lines(["*triples: 0 trained, 3 from cache*"])
