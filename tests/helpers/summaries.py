"""What tests/fast/test_plugin_summary.py and tests/slow/test_plugin_summary_slow.py share."""

from __future__ import annotations

import re

import numpy as np

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


def report(values, data="a"):
    # `data` stands for the task's data/split fingerprint: a data-pipeline change alters it.
    return BenchmarkReport.from_arrays(
        np.asarray(values, dtype=float)[None, None, :], tasks=["karate"], models=["GCN"],
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
    match = re.search(r"=+ graphnetz gates =+\n(.*?)(?:^=+|\Z)", output, re.S | re.M)
    assert match, output
    return match.group(1).splitlines()
