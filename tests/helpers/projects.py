"""A team's scratch project whose cache keys are checked: a models package (GCN, SAGE, GAT
over a shared layers module), its gate tests, a command script over a project library, and
the fixtures that build it and keep bytecode out of it."""

from __future__ import annotations

import re
import sys

import pytest

TASK = '''
import torch
from torch_geometric.data import Data

from pytest_graphnetz import Task


def load(root, *, seed):
    g = torch.Generator().manual_seed(seed)
    y = torch.arange(2).repeat_interleave(20)
    x = torch.nn.functional.one_hot(y, 2).float() + torch.randn(40, 2, generator=g)
    mask = torch.arange(40) % 2 == 0
    return Data(x=x, y=y, edge_index=torch.randint(0, 40, (2, 60), generator=g),
                train_mask=mask, val_mask=~mask, test_mask=~mask)


TASKS = {"toy": Task("toy", load, epochs=3, lr=0.05)}
'''

INIT = '''
"""The team's models."""
from .gcn import GCN
from .sage import SAGE
from .gat import GAT
from .layers import attention

__all__ = ["GCN", "SAGE", "GAT", "attention"]
'''

LAYERS = '''
import torch


def act(x):
    return torch.relu(x)


def attention(x):
    return torch.softmax(x, dim=-1) * x
'''


def model(name: str, body: str, helper: str = "act") -> str:
    return f'''
import torch

from .layers import {helper}

WIDTH = 8


class {name}(torch.nn.Module):
    def __init__(self, in_channels, out_channels):
        super().__init__()
        self.a = torch.nn.Linear(in_channels, WIDTH)
        self.b = torch.nn.Linear(WIDTH, out_channels)

    def forward(self, x, edge_index):
        return self.b({body})
'''


GCN = model("GCN", "act(self.a(x))")
SAGE = model("SAGE", "act(self.a(x)) * 0.5")
GAT = model("GAT", "attention(self.a(x))", helper="attention")


def gate_test(name: str) -> str:
    return f'''
import team_task
from team_models import {name}


def test_{name.lower()}(graphnetz_run):
    report = graphnetz_run(team_task.TASKS, {{"{name}": {name}}})
    assert report.values("toy", "{name}").shape == (2,)
'''


@pytest.fixture
def team(pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch) -> pytest.Pytester:
    # Python's bytecode cache trusts a file's mtime in whole seconds and its size: an edit
    # within the same second that keeps the size would run stale bytecode.
    monkeypatch.setattr(sys, "dont_write_bytecode", True)
    package = pytester.mkpydir("team_models")
    for name, text in (("__init__", INIT), ("layers", LAYERS), ("gcn", GCN), ("sage", SAGE),
                       ("gat", GAT)):
        (package / f"{name}.py").write_text(text)
    pytester.makepyfile(team_task=TASK, test_gcn=gate_test("GCN"), test_sage=gate_test("SAGE"),
                        test_gat=gate_test("GAT"))
    pytester.makeini("[pytest]\ngraphnetz_seeds = 2\n")
    pytester.syspathinsert()
    return pytester


def counts(pytester: pytest.Pytester, passed: int) -> tuple[int, int]:
    """``(trained, from cache)`` of one session, from its summary line."""
    result = pytester.runpytest("-p", "no:cacheprovider", "--graphnetz-cache-dir=cache")
    result.assert_outcomes(passed=passed)
    found = re.findall(r"triples: (\d+) trained, (\d+) from cache", result.stdout.str())
    assert len(found) == 1, result.stdout.str()
    return int(found[0][0]), int(found[0][1])


def edit(path, old: str, new: str) -> None:
    text = path.read_text()
    assert old in text, (path, old)
    path.write_text(text.replace(old, new))


# A command task: a plain Python script (each run a fraction of a second) that imports a
# project module, reads a config, an environment variable and a processed data file.
SCRIPT = '''
import json, os
import pytest_graphnetz.script as graphnetz
{imports}

config = json.load(open("config.json"))
with open("processed/features.txt") as fh:
    total = sum(float(v) for v in fh.read().split())
scale = float(os.environ.get("TEAM_SCALE", "1"))
graphnetz.seed()
for epoch in range(2):
    graphnetz.record(test={score}(config["hidden"], scale, total))
'''

LIB = '''
def score(hidden, scale, total):
    return min(1.0, 0.5 + 0.001 * hidden * scale + 0.0001 * total)


def unrelated(x):
    return x
'''

COMMAND_GATE = '''
import sys

from pytest_graphnetz import Task
from pytest_graphnetz.runner.command import Command, DataFiles


def test_script(graphnetz_run):
    report = graphnetz_run({"t": Task("t", DataFiles(), kind="command")},
                           {"m": Command([sys.executable, "train.py"])})
    assert report.values("t", "m").shape == (2,)
'''

DIRECT = ("from team_lib import score", "score")


def command_project(pytester: pytest.Pytester, imports: str, score: str) -> None:
    pytester.makepyfile(train=SCRIPT.format(imports=imports, score=score), team_lib=LIB,
                        test_script=COMMAND_GATE)
    (pytester.path / "config.json").write_text('{"hidden": 16}')
    (pytester.path / "processed").mkdir()
    (pytester.path / "processed" / "features.txt").write_text("1 2 3\n")
    pytester.makeini("[pytest]\ngraphnetz_seeds = 2\n")


def command_counts(pytester: pytest.Pytester) -> tuple[int, int]:
    """``(trained, from cache)`` of one session of the command task, without the verify
    sample (whose retrains are what this counts otherwise)."""
    result = pytester.runpytest("-p", "no:cacheprovider", "--graphnetz-cache-dir=cache",
                                "--graphnetz-verify-cache=0")
    result.assert_outcomes(passed=1)
    found = re.findall(r"triples: (\d+) trained, (\d+) from cache", result.stdout.str())
    assert len(found) == 1, result.stdout.str()
    return int(found[0][0]), int(found[0][1])


@pytest.fixture
def no_bytecode(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(sys, "dont_write_bytecode", True)
    monkeypatch.delenv("TEAM_SCALE", raising=False)
