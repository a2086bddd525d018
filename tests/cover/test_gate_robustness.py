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
from tests.helpers.sessions import gates_table  # noqa: E402

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
    match = re.search(rf"^.*{re.escape(cell)}\s.*$", gates_table(output), re.M)
    assert match, gates_table(output)
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
    from pytest_graphnetz.gates.comparing.pairing import collapse_notes

    base = [0.80, 0.82, 0.79, 0.81, 0.80, 0.83, 0.78, 0.80, 0.81, 0.79]
    cand = [b + d for b, d in zip(base, [0.01, -0.01, 0.0, 0.02, -0.02, 0.01, 0.0, -0.01,
                                         0.01, 0.0], strict=True)]
    assert collapse_notes(base, cand, list(range(10)), higher_is_better=True) == ((), "")
    # lower-is-better: the candidate's collapse is a jump up of its loss
    notes, short = collapse_notes([1.0] * 9 + [1.0], [1.0 + 0.01 * (s % 3) for s in range(9)]
                                  + [3.0], list(range(10)), higher_is_better=False)
    assert short == "seed 9 collapsed (candidate): t test less reliable", notes


# Per (task, seed) jitter of the candidate's change, centred per task so that each cell's mean
# change is exactly -DROP (numpy default_rng(0), 0.01 * standard normal, rounded).
JITTER = [[0.0004, -0.0022, 0.0056, 0.0002, -0.0062, 0.0028, 0.0122, 0.0086, -0.0079, -0.0135],
          [-0.0017, 0.0049, -0.0187, 0.0023, -0.0079, -0.0028, -0.0009, 0.0013, 0.0086, 0.0149],
          [-0.0013, 0.0136, -0.0067, 0.0035, 0.009, 0.0009, -0.0075, -0.0092, -0.0046, 0.0022],
          [-0.0113, -0.0033, -0.0028, 0.0042, 0.0009, 0.0023, -0.0078, -0.0025, 0.0066, 0.0137],
          [-0.0215, 0.0063, 0.0046, -0.0011, -0.0062, -0.012, 0.0057, 0.0107, 0.0091, 0.0043]]

SUITE_PROJECT = '''
import math

import torch

from pytest_graphnetz import Task

DROP = {drop}   # the candidate's drop on every task ("diffuse" model only); 0: the baseline
JITTER = {jitter}


def loader(i):
    def load(root, *, seed):
        return {{"seed": torch.tensor([seed]), "task": torch.tensor([i])}}
    return load


def value(data, drop):
    seed, i = int(data["seed"]), int(data["task"])
    v = 0.8 + 0.03 * math.sin(7 * seed + i)
    if drop:
        v += -drop + JITTER[i][seed]
    return v


def diffuse(model, data, *, task, device):
    v = value(data, DROP)
    return {{"test": [v], "val": [v]}}


def steady(model, data, *, task, device):
    v = value(data, 0)
    return {{"test": [v], "val": [v]}}


def model(in_channels, out_channels):
    return torch.nn.Linear(in_channels, out_channels)


TASKS = {{f"t{{i}}": Task(f"t{{i}}", loader(i), trainer={{"diffuse": diffuse, "steady": steady}},
                       epochs=1, in_channels=2, out_channels=2) for i in range(5)}}
MODELS = {{"diffuse": model, "steady": model}}
'''

SUITE_GATE = """
import pytest

from pytest_graphnetz import assert_not_worse

import project

SUITE = {suite}


def test_models(graphnetz_run, graphnetz_baseline):
    report = graphnetz_run(project.TASKS, project.MODELS)
    if not project.DROP:   # the refresh
        assert_not_worse(report, graphnetz_baseline())
        return
    if not SUITE:
        # judged alone at α, as a call with a suite row is (suite calls are one look, not
        # rerun-safe): the same cells' verdicts, without the row
        verdicts = assert_not_worse(report, graphnetz_baseline(), suite=False,
                                    rerun_safe=False)
        assert [v.cell for v in verdicts] == [f"t{{i}}/{{m}}" for i in range(5)
                                              for m in ("diffuse", "steady")]
        # t4's differences are left-skewed (its -2.15-point seed): the skew guard tightens
        # NOT WORSE there, and the cell stays INCONCLUSIVE (it passes too)
        assert [v.verdict for v in verdicts] == (["NOT WORSE", "IDENTICAL"] * 4
                                                 + ["INCONCLUSIVE", "IDENTICAL"])
        return
    with pytest.raises(AssertionError) as failed:
        assert_not_worse(report, graphnetz_baseline(), suite=True)
    message = str(failed.value)
    assert "1 of 12 cell(s) failed" in message, message
    assert "suite/diffuse — accuracy (higher is better): REGRESSED" in message, message
    assert "weighted Holm across the 5 tested cells and 2 suite row(s)" in message, message
    raise failed.value   # the build fails on the suite row
"""


@pytest.mark.parametrize("suite, seeds", [(True, "10"), (False, "10"), (True, "5..10")],
                         ids=["suite", "no-suite", "suite-adaptive"])
def test_a_diffuse_drop_fails_only_on_the_suite_row(pytester: pytest.Pytester, suite: bool,
                                                    seeds: str) -> None:
    """Adaptive seeds with a suite row are judged at MAX: the same verdicts as fixed 10."""
    pytester.makepyfile(project=SUITE_PROJECT.format(drop=0, jitter=JITTER),
                        test_model=SUITE_GATE.format(suite=suite))
    option = f"--graphnetz-seeds={seeds}"
    pytester.runpytest(option, "--graphnetz-update-baselines").assert_outcomes(passed=1)
    pytester.makepyfile(project=SUITE_PROJECT.format(drop=0.004, jitter=JITTER))
    result = pytester.runpytest(option, "-p", "no:cacheprovider")
    out = result.stdout.str()
    if not suite:
        result.assert_outcomes(passed=1)
        assert "suite/" not in gates_table(out)
        return
    result.assert_outcomes(failed=1)
    assert "REGRESSED" in _row(out, "suite/diffuse"), gates_table(out)
    assert "IDENTICAL" in _row(out, "suite/steady"), gates_table(out)
    for i in range(5):   # no cell shows the drop
        assert "NOT WORSE" in _row(out, f"t{i}/diffuse"), gates_table(out)


def test_suite_false_changes_no_verdict_and_a_suite_row_keeps_the_cells_open_verdicts() -> None:
    """Outside pytest, on arrays: ``suite=False`` is the call without it, and with the row the
    cells keep every verdict but REGRESSED (only the family's levels move)."""
    import numpy as np

    from pytest_graphnetz import BenchmarkReport, assert_not_worse

    rng = np.random.default_rng(3)
    base = 0.8 + 0.02 * rng.standard_normal((4, 2, 8))
    cand = base + 0.006 * rng.standard_normal((4, 2, 8)) - 0.001
    kw = {"tasks": ["a", "b", "c", "d"], "models": ["m", "n"], "seeds": list(range(8)),
          "metric": "accuracy"}
    b, c = BenchmarkReport.from_arrays(base, **kw), BenchmarkReport.from_arrays(cand, **kw)
    plain = assert_not_worse(c, b, first_look=8)
    off = assert_not_worse(c, b, suite=False, first_look=8)
    assert [(v.cell, v.verdict, v.comparison.evidence.p_value) for v in off] == \
        [(v.cell, v.verdict, v.comparison.evidence.p_value) for v in plain]
    on = assert_not_worse(c, b, suite=True, first_look=8)
    assert [v.cell for v in on[len(plain):]] == ["suite/m", "suite/n"]
    # a call with a suite row is one look at α (not rerun-safe): the cells' verdicts are
    # those of the call judged alone at α
    alone = assert_not_worse(c, b, rerun_safe=False)
    assert [v.verdict for v in on[:len(plain)]] == [v.verdict for v in alone]
    # the table's p is the weighted-Holm adjusted p of the family with the rows
    assert all(v.comparison.decision.p_adjusted >= v.comparison.evidence.p_value for v in on)
    assert all("weighted Holm" in " ".join(v.comparison.notes) for v in on[:len(plain)])


def test_a_suite_row_leaves_out_tasks_of_another_metric() -> None:
    import numpy as np

    from pytest_graphnetz import BenchmarkReport
    from pytest_graphnetz.gates import compare_reports
    from pytest_graphnetz.stats.suite import suite_differences, suite_test

    rng = np.random.default_rng(4)
    base = 0.8 + 0.02 * rng.standard_normal((4, 1, 6))
    cand = base + 0.005 * rng.standard_normal((4, 1, 6))
    kw = {"tasks": ["a", "x", "b", "c"], "models": ["m"], "seeds": list(range(6)),
          "metric": {"a": "accuracy", "x": "mae", "b": "accuracy", "c": "accuracy"}}
    b, c = BenchmarkReport.from_arrays(base, **kw), BenchmarkReport.from_arrays(cand, **kw)
    verdicts = compare_reports(c, b, suite=True)
    row = verdicts[-1]
    assert row.cell == "suite/m"
    assert any("task(s) ['x'] left out" in n for n in row.notes), row.notes
    # the row's p is suite_test's on the three accuracy tasks, independently recomputed
    expected = suite_test(suite_differences(cand[[0, 2, 3], 0], base[[0, 2, 3], 0]),
                          min_effect=0.01)
    assert row.comparison.evidence.p_value == pytest.approx(expected.p_value)
