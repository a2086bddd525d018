"""A new model or task beside cells that have a baseline (real pytest sessions): the cells with a
baseline are gated as usual, only the new ones read MISSING BASELINE, and the command those rows
give (``--graphnetz-add-missing``) writes the new cells alone, leaving every other cell's
baseline as it was. The toy project is tests/helpers/sessions.py's."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

# Pytester's in-process runs drop modules first imported inside them; a C extension like torch
# cannot be imported twice in one process, so everything heavy is imported here, once.
torch = pytest.importorskip("torch")
pytest.importorskip("torch_geometric.nn")
import pytest_graphnetz.gates  # noqa: E402,F401
import pytest_graphnetz.runner  # noqa: E402,F401
import pytest_graphnetz.runner.training.node  # noqa: E402,F401
from tests.helpers.sessions import (  # noqa: E402
    SEEDS,
    TOY,
    gates_table,  # noqa: E402
    trained,
)

GATE_TEST = """
from pytest_graphnetz import assert_not_worse

import toy


def test_gcn(graphnetz_run, graphnetz_baseline):
    assert_not_worse(graphnetz_run(toy.TASKS, toy.MODELS), graphnetz_baseline())
"""

# The pull request: a new model and a new task, and lr ÷ 20 (the existing GCN regresses).
GROWN = """
TASKS["toy2"] = Task("toy2", load, epochs=40, lr={lr}, trainer=counting_train)
MODELS["GCN2"] = GCN
"""


def rows(output: str) -> dict[str, str]:
    """Cell → its row of the session's gate table."""
    found = {}
    for line in gates_table(output).splitlines():
        match = re.match(r"\S+::test_gcn\s+(\S+/\S+)\s", line)
        if match:
            found[match.group(1)] = line
    return found


def cells(path: Path) -> dict[str, list[float]]:
    """Cell → its per-seed values in a committed baseline file."""
    data = json.loads(path.read_text())
    return {f"{t}/{m}": cell["values"]["final"]
            for m, model in data["models"].items() for t, cell in model["tasks"].items()}


def test_a_new_model_and_task_fail_alone_and_are_added_alone(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(toy=TOY.format(hidden=16, lr=0.05), test_model=GATE_TEST)
    pytester.makeini("[pytest]\ngraphnetz_seeds = 4\n")
    pytester.runpytest(SEEDS, "--graphnetz-update-baselines").assert_outcomes(passed=1)
    baseline = pytester.path / "baselines" / "test_model" / "test_gcn.json"
    before = cells(baseline)
    assert list(before) == ["toy/GCN"]

    pytester.makepyfile(toy=TOY.format(hidden=16, lr=0.0025) + GROWN.format(lr=0.0025))
    result = pytester.runpytest(SEEDS)
    result.assert_outcomes(failed=1)
    out = result.stdout.str()
    found = rows(out)
    assert list(found) == ["toy/GCN", "toy/GCN2", "toy2/GCN", "toy2/GCN2"]
    assert "REGRESSED" in found["toy/GCN"], "the cell with a baseline must still be gated"
    add = "pytest test_model.py::test_gcn --graphnetz-add-missing"
    for cell in ("toy/GCN2", "toy2/GCN", "toy2/GCN2"):
        assert "MISSING BASELINE" in found[cell] and f"`{add}`" in found[cell], found[cell]
    assert "NOT COMPARED" not in out
    assert "4 of 4 gate row(s) failed the build (✗ FAIL), in 1 test(s): 1 failed, 3 refused, " \
           "0 passed" in out
    # the failure message: the compared cell's verdict, then the missing cells and the command
    assert "assert_not_worse: 1 of 1 compared cell(s) failed" in out
    assert "has no baseline for toy/GCN2, toy2/GCN, toy2/GCN2" in out
    assert cells(baseline) == before
    trainings = trained(pytester)

    added = pytester.runpytest(SEEDS, "--graphnetz-add-missing")
    added.assert_outcomes(failed=1)   # the regression still fails: nothing was refreshed
    found = rows(added.stdout.str())
    assert "REGRESSED" in found["toy/GCN"]
    assert all("WRITTEN" in found[c] for c in ("toy/GCN2", "toy2/GCN", "toy2/GCN2")), found
    after = cells(baseline)
    assert after["toy/GCN"] == before["toy/GCN"], "a cell with a baseline must not be rewritten"
    assert sorted(after) == ["toy/GCN", "toy/GCN2", "toy2/GCN", "toy2/GCN2"]
    assert trained(pytester) == trainings, "the new cells are written from the cache"

    # the same project again: every cell has a baseline now, the new ones read IDENTICAL
    again = pytester.runpytest(SEEDS)
    again.assert_outcomes(failed=1)
    found = rows(again.stdout.str())
    assert "REGRESSED" in found["toy/GCN"]
    assert all("IDENTICAL" in found[c] for c in ("toy/GCN2", "toy2/GCN", "toy2/GCN2"))


def test_adaptive_seeds_write_the_new_cells_at_max_seeds(pytester: pytest.Pytester) -> None:
    """Under --graphnetz-seeds=MIN..MAX a refresh holds MAX seeds; so do the cells
    --graphnetz-add-missing writes, while the old cell is gated on its looks."""
    pytester.makepyfile(toy=TOY.format(hidden=16, lr=0.05), test_model=GATE_TEST)
    pytester.makeini("[pytest]\ngraphnetz_seeds = 3..6\n")
    pytester.runpytest("--graphnetz-update-baselines").assert_outcomes(passed=1)
    baseline = pytester.path / "baselines" / "test_model" / "test_gcn.json"
    before = cells(baseline)
    assert [len(v) for v in before.values()] == [6]

    pytester.makepyfile(toy=TOY.format(hidden=16, lr=0.05) + 'MODELS["GCN2"] = GCN\n')
    added = pytester.runpytest("--graphnetz-add-missing")
    added.assert_outcomes(passed=1)
    found = rows(added.stdout.str())
    assert "WRITTEN" in found["toy/GCN2"] and "IDENTICAL" in found["toy/GCN"], found
    after = cells(baseline)
    assert after["toy/GCN"] == before["toy/GCN"] and len(after["toy/GCN2"]) == 6
