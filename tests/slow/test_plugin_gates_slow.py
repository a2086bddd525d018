"""The tests of tests/fast/test_plugin_gates.py's unit that cost seconds each: fresh
interpreters, subprocess sessions or killed processes (the slow tier, tests/README.md)."""

from __future__ import annotations

import pytest

# Pytester's in-process runs drop modules first imported inside them; a C extension like torch
# cannot be imported twice in one process, so everything heavy is imported here, once.
torch = pytest.importorskip("torch")
pytest.importorskip("torch_geometric.nn")
import pytest_graphnetz.gates  # noqa: E402,F401
import pytest_graphnetz.runner  # noqa: E402,F401
import pytest_graphnetz.runner.training.node  # noqa: E402,F401
from tests.helpers.sessions import SEEDS, TOY, trained, verdicts  # noqa: E402

XDIST_TESTS = """
from pytest_graphnetz import assert_not_worse

import toy


def test_a(graphnetz_run, graphnetz_baseline):
    assert_not_worse(graphnetz_run(toy.TASKS, toy.MODELS), graphnetz_baseline())


def test_b(graphnetz_run, graphnetz_baseline):
    assert_not_worse(graphnetz_run(toy.TASKS, toy.MODELS), graphnetz_baseline())
"""


def test_xdist_same_verdicts_and_each_triple_trained_once(pytester: pytest.Pytester) -> None:
    pytest.importorskip("xdist")
    pytester.makepyfile(toy=TOY.format(hidden=16, lr=0.05), test_model=XDIST_TESTS)
    pytester.makeini("[pytest]\ngraphnetz_seeds = 4\n")  # the project's first look
    # The baselines, from one serial in-process session that caches nothing (both tests train).
    update = pytester.runpytest(SEEDS, "-p", "no:xdist", "--graphnetz-no-cache",
                                "--graphnetz-update-baselines")
    update.assert_outcomes(passed=2)
    assert trained(pytester) == 8
    assert verdicts(update.stdout.str()) == ["WRITTEN", "WRITTEN"]
    # Two tests on two workers run the same 4 triples at once: the file locks make one wait,
    # and both read the serial session's numbers.
    parallel = pytester.runpytest_subprocess(SEEDS, "-n", "2")
    parallel.assert_outcomes(passed=2)
    assert trained(pytester) == 8 + 4
    parallel.stdout.fnmatch_lines(["*triples: 4 trained, 4 from cache*"])
    serial = pytester.runpytest(SEEDS, "-p", "no:xdist")
    serial.assert_outcomes(passed=2)
    assert verdicts(parallel.stdout.str()) == verdicts(serial.stdout.str()) == ["IDENTICAL"] * 2
    assert trained(pytester) == 8 + 4
