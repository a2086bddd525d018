"""Collapsed seeds and the suite row, where a user meets them: real pytest sessions (pytester)
on a scratch project whose trainer trains nothing (each value is a formula of the seed and a
module constant), so the candidate's per-seed numbers are exactly what the test scripts.
"""

from __future__ import annotations

import re

import pytest

# Pytester's in-process runs drop modules first imported inside them; torch cannot be imported
# twice in one process, so everything heavy is imported here, once.
torch = pytest.importorskip("torch")
import pytest_graphnetz.gates  # noqa: E402,F401
import pytest_graphnetz.runner  # noqa: E402,F401
from tests.test_plugin_gates import _table  # noqa: E402

COLLAPSE_PROJECT = '''
import math

import torch

from pytest_graphnetz import Task

COLLAPSED = {collapsed}   # candidate seed whose training fails quietly (None: none)


def load(root, *, seed):
    return {{"seed": torch.tensor([seed])}}


def scripted(model, data, *, task, device):
    seed = int(data["seed"])
    value = 0.8 + 0.03 * math.sin(7 * seed)
    if COLLAPSED is not None:   # the candidate: a tiny per-seed change, one seed collapsed
        value += 0.002 * math.cos(3 * seed) if seed != COLLAPSED else -0.4
    return {{"test": [value], "val": [value]}}


def model(in_channels, out_channels):
    return torch.nn.Linear(in_channels, out_channels)


TASKS = {{"steady": Task("steady", load, trainer=scripted, epochs=1, in_channels=2,
                        out_channels=2)}}
MODELS = {{"m": model}}
'''

COLLAPSE_GATE = """
from pytest_graphnetz import assert_not_worse

import project


def test_models(graphnetz_run, graphnetz_baseline):
    verdicts = assert_not_worse(graphnetz_run(project.TASKS, project.MODELS),
                                graphnetz_baseline())
    if project.COLLAPSED is None:   # the refresh
        return
    (v,) = verdicts
    assert any("candidate collapsed at seed(s) 7" in n and "skew_results.md" in n
               for n in v.notes), v.notes
"""


def _row(output: str, cell: str) -> str:
    match = re.search(rf"^.*{re.escape(cell)}\s.*$", _table(output), re.M)
    assert match, _table(output)
    return match.group(0)


@pytest.mark.parametrize("seeds", ["10", "10..20"], ids=["fixed", "adaptive"])
def test_a_collapsed_candidate_seed_is_named_in_the_table(pytester: pytest.Pytester,
                                                          seeds: str) -> None:
    pytester.makepyfile(project=COLLAPSE_PROJECT.format(collapsed=None), test_model=COLLAPSE_GATE)
    option = f"--graphnetz-seeds={seeds}"
    pytester.runpytest(option, "--graphnetz-update-baselines").assert_outcomes(passed=1)
    pytester.makepyfile(project=COLLAPSE_PROJECT.format(collapsed=7))
    result = pytester.runpytest(option, "-p", "no:cacheprovider")
    result.assert_outcomes(passed=1)   # the verdict is the t test's: INCONCLUSIVE passes
    assert "seed 7 collapsed (candidate): t test less reliable" in _row(
        result.stdout.str(), "steady/m")


def test_no_collapse_no_note() -> None:
    from pytest_graphnetz.pairing import collapse_notes

    base = [0.80, 0.82, 0.79, 0.81, 0.80, 0.83, 0.78, 0.80, 0.81, 0.79]
    cand = [b + d for b, d in zip(base, [0.01, -0.01, 0.0, 0.02, -0.02, 0.01, 0.0, -0.01,
                                         0.01, 0.0], strict=True)]
    assert collapse_notes(base, cand, list(range(10)), higher_is_better=True) == ((), "")
    # lower-is-better: the candidate's collapse is a jump up of its loss
    notes, short = collapse_notes([1.0] * 9 + [1.0], [1.0 + 0.01 * (s % 3) for s in range(9)]
                                  + [3.0], list(range(10)), higher_is_better=False)
    assert short == "seed 9 collapsed (candidate): t test less reliable", notes
