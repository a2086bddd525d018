"""What a session writes and prints besides baselines: output paths checked at session start,
failures after the start that warn and keep the verdict, the table's test column. Real pytest
sessions (pytester).
"""

from __future__ import annotations

import pytest

# In-process pytester runs drop modules first imported inside them, and scipy's extensions do
# not survive a second import: load the gates (and the scipy they use) here, once.
pytest.importorskip("scipy.stats")
pytest.importorskip("scipy.optimize")
import pytest_graphnetz.gates  # noqa: E402,F401

PASSING = """
import os
import shutil

from pytest_graphnetz import BenchmarkReport, assert_not_worse


def report():
    return BenchmarkReport.from_arrays([[[0.80, 0.82, 0.79]]], tasks=["karate"],
                                       models=["GCN"], seeds=range(3), metric="accuracy")


def test_gate():
    for blocked in {blocked!r}:  # a path that became a file after the session started
        shutil.rmtree(blocked, ignore_errors=True)
        open(blocked, "w").close()
    assert_not_worse(report(), report())
"""


@pytest.mark.parametrize(("option", "message"), [
    ("--graphnetz-report-dir=blocker/reports",
     "graphnetz: `--graphnetz-report-dir` cannot be written: blocker is a file, not a "
     "directory; name a writable path"),
    ("--graphnetz-summary=blocker/gates.md",
     "graphnetz: `--graphnetz-summary` cannot be written: blocker is a file, not a directory; "
     "name a writable path"),
    ("--graphnetz-summary=.",
     "graphnetz: `--graphnetz-summary` cannot be written: . is a directory, not a file; name a "
     "writable path"),
])
def test_an_unwritable_output_path_is_a_usage_error_before_any_test(
        pytester: pytest.Pytester, option: str, message: str) -> None:
    pytester.makepyfile(PASSING.format(blocked=[]))
    (pytester.path / "blocker").write_text("a file")
    result = pytester.runpytest(option)
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    assert message in result.stderr.str()


def test_an_unwritable_step_summary_is_one_warning_and_the_run_passes(
        pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch) -> None:
    pytester.makepyfile(PASSING.format(blocked=[]))
    (pytester.path / "summary-dir").mkdir()
    monkeypatch.setenv("GITHUB_STEP_SUMMARY", str(pytester.path / "summary-dir"))
    result = pytester.runpytest()
    assert result.ret == 0
    result.assert_outcomes(passed=1, warnings=1)
    result.stdout.fnmatch_lines([
        "*graphnetz: $GITHUB_STEP_SUMMARY (*summary-dir) cannot be written: summary-dir is a "
        "directory, not a file; this run's gate table is not added to the job summary"])
    assert "Traceback" not in result.stdout.str() + result.stderr.str()


def test_outputs_that_fail_after_the_start_warn_and_keep_the_verdict(
        pytester: pytest.Pytester) -> None:
    """The report dir and the summary's directory turn into files during the run (a full
    disk behaves the same): the gate still passes, each loss is one line."""
    pytester.makepyfile(PASSING.format(blocked=["reports", "out"]))
    result = pytester.runpytest("--graphnetz-report-dir=reports", "--graphnetz-summary=out/g.md")
    assert result.ret == 0
    result.assert_outcomes(passed=1, warnings=1)
    result.stdout.fnmatch_lines([
        "*graphnetz: the candidate report of test_outputs_that_fail_after_the_start_warn_and_"
        "keep_the_verdict.py::test_gate was not saved under reports: *",
        "graphnetz: the Markdown summary was not written to out/g.md (*Error: *)"])
    assert "Traceback" not in result.stdout.str() + result.stderr.str()


def test_the_test_column_keeps_a_slash_inside_a_parameter_id(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(test_ids="""
import pytest
from pytest_graphnetz import BenchmarkReport, assert_not_worse


@pytest.mark.parametrize("variant", ["a/b"])
def test_p(variant):
    report = BenchmarkReport.from_arrays([[[0.80, 0.82, 0.79]]], tasks=["karate"],
                                         models=["GCN"], seeds=range(3), metric="accuracy")
    assert_not_worse(report, report)
""")
    result = pytester.runpytest()
    result.assert_outcomes(passed=1)
    result.stdout.fnmatch_lines(["test_ids.py::test_p[[]a/b[]]*karate/GCN*IDENTICAL*"])
