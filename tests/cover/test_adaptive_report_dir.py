"""``--graphnetz-report-dir`` with adaptive seeds: real pytest sessions (pytester).

The project's trainer trains nothing: each model's accuracy is a fixed function of the seed
(and of the task's ``options``, which switch a change on), so which cell stops where is known
and every saved value can be checked against the formula itself.
"""

from __future__ import annotations

import json
import math
import re

import pytest

# Pytester's in-process runs drop modules first imported inside them; torch cannot be imported
# twice in one process, so everything heavy is imported here, once.
torch = pytest.importorskip("torch")
pytest.importorskip("torch_geometric.nn")
import pytest_graphnetz.gates  # noqa: E402,F401
import pytest_graphnetz.runner  # noqa: E402,F401
from pytest_graphnetz import BenchmarkReport  # noqa: E402
from pytest_graphnetz.gates.refreshing.baselines import load_baseline  # noqa: E402
from tests.helpers.sessions import gates_table  # noqa: E402

PROJECT = '''
import math

import torch

from pytest_graphnetz import Task


def load(root, *, seed):
    return {{"seed": torch.tensor([seed])}}


def scripted(model, data, *, task, device):
    """No training: the accuracy of a (model, seed) is a formula (see accuracy())."""
    value = accuracy(type(model).__name__, int(data["seed"]), task.options)
    return {{"test": [value], "val": [value]}}


def accuracy(model, seed, options):
    if options["diverged"].get(model) == seed:
        return math.nan
    border = options["border"] * (-0.004 + 0.02 * math.sin(11 * seed + 1))
    shift = {{"Same": 0.0, "Broken": -0.1 * options["broken"], "Border": border,
             "Border2": border}}
    return 0.8 + 0.03 * math.sin(7 * seed) + shift[model]


class Same(torch.nn.Linear):
    pass


class Broken(torch.nn.Linear):
    pass


class Border(torch.nn.Linear):
    pass


class Border2(torch.nn.Linear):
    pass


def task(name, *, border, broken=0, diverged=None):
    return Task(name, load, trainer=scripted, epochs=1, in_channels=2, out_channels=2,
                options={{"border": border, "broken": broken, "diverged": diverged or {{}}}})


MODELS = {{"same": Same, "broken": Broken, "border": Border}}
ONE = {{"toy": task("toy", border={change})}}
TWO = {{"a": task("a", border=0, broken={change}), "b": task("b", border={change})}}
THREE = {{"c": task("c", border={change})}}
# the baseline diverged at seed 7 of border: refused (a look would have nothing to pair with)
BROKEN_BASELINE = {{"c": task("c", border={change},
                             diverged=None if {change} else {{"Border": 7}})}}
PAIR = {{"border": Border, "border2": Border2}}
'''

GATES = """
import json
from pathlib import Path

from pytest_graphnetz import assert_not_worse

import project


def test_one(graphnetz_run, graphnetz_baseline):
    verdicts = assert_not_worse(graphnetz_run(project.ONE, project.MODELS), graphnetz_baseline())
    Path("verdicts.json").write_text(json.dumps({
        v.cell: {"seeds": list(v.seeds), "mean": v.candidate.mean,
                 "delta": v.comparison.evidence.mean_diff} for v in verdicts}))


def test_two(graphnetz_run, graphnetz_baseline):
    assert_not_worse(graphnetz_run(project.TWO, project.MODELS), graphnetz_baseline())


def test_three(graphnetz_run, graphnetz_baseline):
    assert_not_worse(graphnetz_run(project.THREE, project.PAIR), graphnetz_baseline())
"""

ADAPTIVE = "--graphnetz-seeds=5..10"  # looks at 5 and 10 seeds


def accuracy(model: str, seed: int, border: int, broken: int = 0) -> float:
    """The project's formula, restated (so the saved numbers are checked independently)."""
    change = border * (-0.004 + 0.02 * math.sin(11 * seed + 1))
    shift = {"same": 0.0, "broken": -0.1 * broken, "border": change, "border2": change}
    return 0.8 + 0.03 * math.sin(7 * seed) + shift[model]


@pytest.fixture
def project(pytester: pytest.Pytester) -> pytest.Pytester:
    pytester.makepyfile(project=PROJECT.format(change=0), test_model=GATES)
    pytester.runpytest(ADAPTIVE, "--graphnetz-update-baselines").assert_outcomes(passed=3)
    return pytester


def _n(output: str, cell: str) -> str:
    """The n column (``used/MAX``) of one cell's row in the gate table."""
    match = re.search(rf"{re.escape(cell)}\s.*?(\d+/10)", gates_table(output))
    assert match, gates_table(output)
    return match.group(1)


def test_each_cell_is_saved_at_the_seeds_it_was_decided_on(project: pytest.Pytester) -> None:
    # toy/border and b/border change by a borderline amount (open at 5 seeds: they take the
    # next look's 5); a/broken drops 10 points (REGRESSED at 5, so test_two fails); every
    # other cell is unchanged (IDENTICAL at 5). c/border and c/border2 change as the borders
    # do: each goes on to the look at 10 seeds.
    project.makepyfile(project=PROJECT.format(change=1))
    result = project.runpytest(ADAPTIVE, "--graphnetz-report-dir=reports", "--junitxml=j.xml")
    result.assert_outcomes(passed=2, failed=1)
    out = result.stdout.str()
    assert [_n(out, c) for c in ("toy/same", "toy/broken", "toy/border")] == ["5/10", "5/10",
                                                                               "10/10"]
    assert [_n(out, c) for c in ("a/broken", "b/same", "b/border")] == ["5/10", "5/10", "10/10"]
    assert [_n(out, c) for c in ("c/border", "c/border2")] == ["10/10", "10/10"]

    saved = project.path / "reports" / "test_model"
    assert sorted(p.name for p in saved.iterdir()) == [
        "test_one.10-seeds.json", "test_one.json", "test_three.json", "test_two.b.10-seeds.json",
        "test_two.json"]
    junit = (project.path / "j.xml").read_text()
    assert junit.count('<property name="graphnetz_report"') == 5
    result.stdout.fnmatch_lines(["graphnetz: 5 candidate report(s) saved under *reports"])

    # Each file is a valid dense report: every cell at the first look, and the cells that went
    # further at all the seeds they were decided on.
    one, one_more = (BenchmarkReport.from_json(saved / f"test_one{s}.json")
                     for s in ("", ".10-seeds"))
    assert (one.tasks, one.models, one.seeds) == (("toy",), ("same", "broken", "border"),
                                                  (0, 1, 2, 3, 4))
    assert (one_more.tasks, one_more.models, one_more.seeds) == (("toy",), ("border",),
                                                                 tuple(range(10)))
    two, two_more = (BenchmarkReport.from_json(saved / f"test_two{s}.json")
                     for s in ("", ".b.10-seeds"))
    assert (two.tasks, two.models, two.seeds) == (("a", "b"), ("same", "broken", "border"),
                                                  (0, 1, 2, 3, 4))
    assert (two_more.tasks, two_more.models, two_more.seeds) == (("b",), ("border",),
                                                                 tuple(range(10)))
    # both c cells were decided at the look of 10 seeds: one file holds them at those seeds
    three = BenchmarkReport.from_json(saved / "test_three.json")
    assert (three.models, three.seeds) == (("border", "border2"), tuple(range(10)))
    for report in (one, one_more, two, two_more, three):
        for task in report.tasks:
            for model in report.models:
                border, broken = (0, 1) if task == "a" else (1, 0)
                assert report.values(task, model).tolist() == [
                    accuracy(model, s, border, broken) for s in report.seeds]
    assert len(one.histories[("toy", "border", 0)].test) == 1   # the histories, whole

    # ...and they hold what the gate judged: its seeds, its candidate mean, its paired Δ.
    baseline = load_baseline(project.path / "baselines" / "test_model" / "test_one.json")
    used = json.loads((project.path / "verdicts.json").read_text())
    for cell, report in (("toy/same", one), ("toy/broken", one), ("toy/border", one_more)):
        model = cell.split("/")[1]
        assert used[cell]["seeds"] == list(report.seeds)
        values = report.values("toy", model)
        assert float(values.mean()) == used[cell]["mean"]
        delta = values - baseline.subset(seeds=report.seeds).values("toy", model)
        assert float(delta.mean()) == used[cell]["delta"]

    # The failing gate's message says which file holds which cells.
    assert re.search(r"note: the candidate reports saved \(--graphnetz-report-dir\) hold each "
                     r"cell at the seeds it was decided on: \S*test_two\.json holds every cell "
                     r"at seeds 0-4; \S*test_two\.b\.10-seeds\.json holds b/border at seeds "
                     r"0-9", out), out


def test_cells_that_all_stop_together_are_saved_as_one_report(project: pytest.Pytester) -> None:
    result = project.runpytest(ADAPTIVE, "--graphnetz-report-dir=reports")
    result.assert_outcomes(passed=3)
    saved = project.path / "reports" / "test_model"
    assert sorted(p.name for p in saved.iterdir()) == ["test_one.json", "test_three.json",
                                                       "test_two.json"]
    one = BenchmarkReport.from_json(saved / "test_one.json")
    assert one.seeds == (0, 1, 2, 3, 4) and one.models == ("same", "broken", "border")
    assert "decided on" not in result.stdout.str()


def test_a_report_that_cannot_be_saved_warns_and_keeps_the_verdicts(
        project: pytest.Pytester) -> None:
    # The adaptive gate saves its reports after it decided: a failed write (here the module's
    # folder is a file) must warn, not replace the gate's own failure with an OSError.
    project.makepyfile(project=PROJECT.format(change=1))
    (project.path / "reports").mkdir()
    (project.path / "reports" / "test_model").write_text("in the way")
    result = project.runpytest(ADAPTIVE, "--graphnetz-report-dir=reports", "-k", "test_two")
    result.assert_outcomes(failed=1, deselected=2)
    out = result.stdout.str()
    assert "assert_not_worse: 1 of 6 cell(s) failed" in out
    assert "a/broken — accuracy (higher is better): REGRESSED" in out
    assert re.search(r"UserWarning: graphnetz: the candidate report of \S+::test_two was not "
                     r"saved under reports: ", out), out


def test_a_baseline_diverged_at_a_planned_seed_is_refused(pytester: pytest.Pytester) -> None:
    """An adaptive run refuses, before any look, a baseline non-finite at a planned seed it
    holds, as a fixed run does: a look reaching seed 7 would have nothing to pair it with, and
    a pass must not rest on a seed nobody judged. The refusal names the cell, side and seed."""
    gate = (GATES.split("def test_one")[0]
            + "def test_broken(graphnetz_run, graphnetz_baseline):\n"
            + "    assert_not_worse(graphnetz_run(project.BROKEN_BASELINE, project.PAIR),\n"
            + "                     graphnetz_baseline())\n")
    pytester.makepyfile(project=PROJECT.format(change=0), test_model=gate)
    pytester.runpytest(ADAPTIVE, "--graphnetz-update-baselines").assert_outcomes(passed=1)
    pytester.makepyfile(project=PROJECT.format(change=1))
    result = pytester.runpytest(ADAPTIVE)
    result.assert_outcomes(failed=1)
    out = result.stdout.str()
    assert "c/border: " in out and (
        "(the baseline side) is non-finite (diverged) at seed(s) 7 of the paired seeds" in out)
    assert "REFUSED" in gates_table(out)
