"""The end of a session (plugin/closing.py): the output files are written at
``pytest_sessionfinish``, before the terminal summary, which only prints; a session of plain
tests builds no summary. Real pytest sessions (pytester), serial and under xdist.
"""

from __future__ import annotations

import ast
import json

import pytest

# In-process pytester runs drop modules first imported inside them, and scipy's extensions do
# not survive a second import: load the gates (and the scipy they use) here, once.
pytest.importorskip("scipy.stats")
pytest.importorskip("scipy.optimize")
import pytest_graphnetz.gates  # noqa: E402,F401

GATES = """
from pytest_graphnetz import BenchmarkReport, assert_not_worse


def report():
    return BenchmarkReport.from_arrays([[[0.80, 0.82, 0.79]]], tasks=["karate"],
                                       models=["GCN"], seeds=range(3), metric="accuracy")


def test_a():
    assert_not_worse(report(), report(), first_look=3)


def test_b():
    assert_not_worse(report(), report(), first_look=3)
"""

# Another plugin's terminal summary sees the files already written (pytest calls every
# pytest_sessionfinish first), and a worker never writes them.
CONFTEST = """
import os


def pytest_terminal_summary(terminalreporter, config):
    if not hasattr(config, "workerinput"):
        terminalreporter.write_line(f"seen at terminal summary: {os.path.isfile('v.json')}")
"""


@pytest.mark.parametrize("workers", [0, 2])
def test_the_files_are_written_before_the_terminal_summary_prints_them(
        pytester: pytest.Pytester, workers: int) -> None:
    if workers:
        pytest.importorskip("xdist")
    pytester.makepyfile(test_gates=GATES)
    pytester.makeconftest(CONFTEST)
    mode = ("-n", str(workers)) if workers else ("-p", "no:xdist")
    result = pytester.runpytest_subprocess("-p", "no:cacheprovider", *mode,
                                           "--graphnetz-json=v.json", "--graphnetz-summary=g.md")
    result.assert_outcomes(passed=2)
    result.stdout.fnmatch_lines(["*graphnetz gates*", "graphnetz: json written to v.json",
                                 "graphnetz: Markdown summary written to g.md"])
    result.stdout.fnmatch_lines(["seen at terminal summary: True"])
    rows = json.loads((pytester.path / "v.json").read_text())["rows"]
    assert sorted(r["test"] for r in rows) == ["test_gates.py::test_a", "test_gates.py::test_b"]


def test_a_session_of_plain_tests_loads_nothing_it_does_not_use(
        pytester: pytest.Pytester) -> None:
    """No summary, and none of the modules only a graphnetz test, ``-k`` or a chosen mode
    needs; no hooks per test either (plugin/hooks.py): what a project's plain tests
    pay for the plugin (benchmarks/plugin_overhead.py)."""
    pytester.makeconftest("""
        import sys

        LAZY = ("summary", "plugin.selection", "plugin.closing", "determinism")

        def pytest_unconfigure(config):
            loaded = [m for m in LAZY if "pytest_graphnetz." + m in sys.modules]
            per_test = config.pluginmanager.has_plugin("graphnetz-tests")
            with open("loaded.txt", "w") as fh:
                fh.write(repr((loaded, per_test)))
    """)
    pytester.makepyfile("def test_plain():\n    assert 1 + 1 == 2\n")
    result = pytester.runpytest_subprocess("-p", "no:cacheprovider", "-p", "no:xdist")
    result.assert_outcomes(passed=1)
    assert "graphnetz gates" not in result.stdout.str()
    assert (pytester.path / "loaded.txt").read_text() == "([], False)"
    # Teeth: -k loads the selection; a test with our marker gets the per-test hooks.
    pytester.makepyfile(test_marked="""
        import pytest

        @pytest.mark.graphnetz
        def test_marked():
            pass
    """)
    result = pytester.runpytest_subprocess("-p", "no:cacheprovider", "-p", "no:xdist", "-k",
                                           "plain or marked")
    result.assert_outcomes(passed=2)
    loaded, per_test = ast.literal_eval((pytester.path / "loaded.txt").read_text())
    assert "plugin.selection" in loaded and per_test is True
