"""The tests of tests/fast/test_plugin_progress.py's unit that cost seconds each: fresh
interpreters, subprocess sessions or killed processes (the slow tier, tests/README.md)."""

from __future__ import annotations

from pathlib import Path

import pytest

# In-process pytester runs drop modules first imported inside them; torch cannot be imported
# twice in one process, so everything heavy is imported here, once.
pytest.importorskip("torch")
pytest.importorskip("torch_geometric.nn")
import pytest_graphnetz.gates  # noqa: E402,F401
import pytest_graphnetz.runner  # noqa: E402,F401
import pytest_graphnetz.runner.training.node  # noqa: E402,F401
from tests.helpers import tiny
from tests.helpers.sessions import live_lines


def test_xdist_controller_prints_per_test_counts(project):
    pytest.importorskip("xdist")
    # One worker is enough: the controller's reporting is what is under test.
    result = project.runpytest_subprocess("-n", "1", "--graphnetz-seeds=3", "-p", "xdist")
    result.assert_outcomes(passed=1)
    out = result.stdout.str()
    assert "test_p.py::test_trains: 3 triples (3 trained, 0 from cache) in " in out
    assert not live_lines(out)  # the worker's live lines are not relayed (nor garbled)


def test_the_first_progress_line_is_not_captured_into_a_failing_tests_report(pytester):
    """The opening ``0/N`` line goes to the terminal like the others, never into the test's
    captured stdout (where it showed up under "Captured stdout call" of a failing gate)."""
    pytester.makepyfile(scratch_tiny=Path(tiny.__file__).read_text(), test_f='''
from scratch_tiny import gcn, tiny_task


def test_fails(graphnetz_run):
    graphnetz_run({"tiny": tiny_task(epochs=2)}, {"GCN": gcn})
    raise AssertionError("the gate failed")
''')
    # a subprocess: in-process pytester sessions do not capture the terminal reporter's output
    result = pytester.runpytest_subprocess("--graphnetz-seeds=2")
    result.assert_outcomes(failed=1)
    out = result.stdout.str()
    assert live_lines(out)[0] == (0, 2, 0, 0)          # still shown, on the terminal
    assert "Captured stdout call" not in out, out
