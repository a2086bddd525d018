"""IDENTICAL on a changed model: real pytest sessions (pytester).

On a coarse test set (karate's 8 test nodes) a real change, such as halving the hidden width,
can score exactly the baseline's values on every seed, and the gate reads IDENTICAL, which a
reviewer takes for "nothing changed". The model fingerprint (structure and initial weights)
says otherwise: such a cell must say so in the table's Note, with fixed and adaptive seeds.

The project's trainer trains nothing: the accuracy is a formula of the seed alone, whatever the
model, which is the coarse test set in its purest form.
"""

from __future__ import annotations

import re

import pytest

# Pytester's in-process runs drop modules first imported inside them; torch cannot be imported
# twice in one process, so everything heavy is imported here, once.
torch = pytest.importorskip("torch")
import pytest_graphnetz.gates  # noqa: E402,F401
import pytest_graphnetz.runner  # noqa: E402,F401
from pytest_graphnetz.gates.verdicts.values import CHANGED_MODEL_NOTE  # noqa: E402
from tests.helpers.sessions import gates_table  # noqa: E402

PROJECT = '''
import math

import torch

from pytest_graphnetz import Task

WIDTH = {width}


def load(root, *, seed):
    return {{"seed": torch.tensor([seed])}}


def scripted(model, data, *, task, device):
    value = 0.8 + 0.03 * math.sin(7 * int(data["seed"]))  # the same for every model
    return {{"test": [value], "val": [value]}}


def changed(in_channels, out_channels):
    return torch.nn.Sequential(torch.nn.Linear(in_channels, WIDTH),
                               torch.nn.Linear(WIDTH, out_channels))


def same(in_channels, out_channels):
    return torch.nn.Linear(in_channels, out_channels)


TASKS = {{"coarse": Task("coarse", load, trainer=scripted, epochs=1, in_channels=2,
                        out_channels=2)}}
MODELS = {{"changed": changed, "same": same}}
'''

GATES = """
from pathlib import Path

from pytest_graphnetz import assert_not_worse

import project


def test_models(graphnetz_run, graphnetz_baseline):
    verdicts = assert_not_worse(graphnetz_run(project.TASKS, project.MODELS),
                                graphnetz_baseline())
    if not Path("compare").exists():  # the refresh: nothing compared yet
        return
    assert [v.verdict for v in verdicts] == ["IDENTICAL", "IDENTICAL"]
    changed, same = verdicts
    assert any("fingerprint" in n and "seed(s) 0-3" in n for n in changed.notes), changed.notes
    assert not any("fingerprint" in n for n in same.notes), same.notes
"""


def _note(output: str, cell: str) -> str:
    """What the gate table's row of ``cell`` says after its verdict (Build, MDE, n, Note)."""
    match = re.search(rf"{re.escape(cell)}\s.*IDENTICAL(.*)$", gates_table(output), re.M)
    assert match, gates_table(output)
    return match.group(1)


@pytest.mark.parametrize("seeds", ["4", "4..8"], ids=["fixed", "adaptive"])
def test_an_identical_cell_whose_model_changed_says_so(pytester: pytest.Pytester,
                                                       seeds: str) -> None:
    pytester.makepyfile(project=PROJECT.format(width=8), test_model=GATES)
    pytester.makeini(f"[pytest]\ngraphnetz_seeds = {seeds}\n")  # the project's first look
    option = f"--graphnetz-seeds={seeds}"
    pytester.runpytest(option, "--graphnetz-update-baselines").assert_outcomes(passed=1)
    pytester.makepyfile(project=PROJECT.format(width=4))  # half the width: a real change
    (pytester.path / "compare").touch()
    result = pytester.runpytest(option, "-p", "no:cacheprovider")
    result.assert_outcomes(passed=1)
    out = result.stdout.str()
    assert CHANGED_MODEL_NOTE in _note(out, "coarse/changed")
    assert CHANGED_MODEL_NOTE not in _note(out, "coarse/same")
