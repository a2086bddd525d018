"""Gate summaries of scratch sessions: one cell's reports over six seeds, the scenarios every
kind of row comes from (verdicts, refusals, errors, a missing baseline), the outcomes a test
can have around a gate, and the summary table read back."""

from __future__ import annotations

import numpy as np
import pytest

from tests.helpers.sessions import gates_table

BASE = np.array([0.80, 0.82, 0.78, 0.81, 0.79, 0.83])
DROPS = np.array([-0.02, -0.01, -0.01, -0.02, -0.015, -0.01])
SHIFT = np.array([0.01, 0.03, 0.0, 0.02, 0.01, 0.02])

COMMON = f"""
import os

import numpy as np
import pytest

from pytest_graphnetz import BenchmarkReport, assert_ci_width, assert_not_worse

BASE = np.array({BASE.tolist()})
DROPS = np.array({DROPS.tolist()})
SHIFT = np.array({SHIFT.tolist()})


def report(values, models=("GCN",), data="a"):
    # `data` stands for the task's data/split fingerprint: a data-pipeline change alters it.
    values = np.asarray(values, dtype=float)
    return BenchmarkReport.from_arrays(
        np.array([[values for _ in models]]), tasks=["karate"], models=list(models),
        seeds=range(6), metric="accuracy",
        fingerprints={{"data": {{"karate": {{s: data for s in range(6)}}}}}})
"""

SCENARIOS = COMMON + """

def test_unchanged():
    assert_not_worse(report(BASE), report(BASE))


def test_regressed():
    assert_not_worse(report(BASE + DROPS), report(BASE))


def test_data_changed():
    assert_not_worse(report(BASE + SHIFT, data="b"), report(BASE))


def test_missing(graphnetz_baseline):
    assert_not_worse(report(BASE), graphnetz_baseline())


def test_error(tmp_path):
    (tmp_path / "bad.json").write_text("[]")
    assert_not_worse(report(BASE), tmp_path / "bad.json")


def test_ci_width_bad_bound():
    assert_ci_width(report(BASE), 0.0)


def test_refusal_expected():
    with pytest.raises(ValueError, match="fictional"):
        assert_not_worse(report(BASE, data="b"), report(BASE))
"""


def table(output: str) -> list[str]:
    """The lines of the session's gate table."""
    lines = gates_table(output).splitlines()
    assert lines, output
    return lines


def declare_six_seeds(pytester: pytest.Pytester) -> None:
    """The scratch project's configured seed count, its first look: the reports of these
    projects hold 6 seeds, which a gate judges only when they are a look of the schedule."""
    pytester.makeini("[pytest]\ngraphnetz_seeds = 6\n")


OUTCOMES = COMMON + """

@pytest.fixture
def broken(graphnetz_baseline):
    raise RuntimeError("fixture refused: no GPU")


def test_raises_before_gate(graphnetz_baseline):
    raise RuntimeError("the model exploded\\nin layer 2")


def test_fails_after_gate():
    assert_not_worse(report(BASE), report(BASE))
    assert 0, "checked something else"


@pytest.mark.graphnetz
def test_marked():
    raise ValueError("bad hyperparameter")


def test_setup_error(broken):
    pass


def test_fine():
    assert_not_worse(report(BASE), report(BASE))


def test_unrelated():
    assert 0, "not ours"
"""
