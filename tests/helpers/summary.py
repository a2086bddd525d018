"""What tests/fast/test_summary.py and tests/slow/test_summary_slow.py share."""

from __future__ import annotations

import numpy as np
import pytest

BASE = np.array([0.80, 0.82, 0.78, 0.81, 0.79, 0.83])
DROPS = np.array([-0.02, -0.01, -0.01, -0.02, -0.015, -0.01])

COMMON = f"""
import os

import numpy as np
import pytest

from pytest_graphnetz import BenchmarkReport, assert_not_worse

BASE = np.array({BASE.tolist()})
DROPS = np.array({DROPS.tolist()})


def report(values, models=("GCN",)):
    values = np.asarray(values, dtype=float)
    return BenchmarkReport.from_arrays(
        np.array([[values for _ in models]]), tasks=["karate"], models=list(models),
        seeds=range(6), metric="accuracy")
"""


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
