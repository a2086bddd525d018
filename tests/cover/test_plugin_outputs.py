"""What a session writes and prints besides baselines: output paths checked at session start,
failures after the start that warn and keep the verdict, the table's test column. Real pytest
sessions (pytester).
"""

from __future__ import annotations

from pathlib import Path

import pytest

# In-process pytester runs drop modules first imported inside them, and scipy's extensions do
# not survive a second import: load the gates (and the scipy they use) here, once.
pytest.importorskip("scipy.stats")
pytest.importorskip("scipy.optimize")
import os

import pytest_graphnetz.gates  # noqa: E402,F401
from tests.helpers.sessions import OUTPUTS, PASSING


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
import os
from pathlib import Path

import pytest
from pytest_graphnetz import BenchmarkReport, assert_not_worse


@pytest.mark.parametrize("variant", ["a/b"])
def test_p(variant):
    report = BenchmarkReport.from_arrays([[[0.80, 0.82, 0.79]]], tasks=["karate"],
                                         models=["GCN"], seeds=range(3), metric="accuracy")
    assert_not_worse(report, report, first_look=3)
""")
    result = pytester.runpytest()
    result.assert_outcomes(passed=1)
    result.stdout.fnmatch_lines(["test_ids.py::test_p[[]a/b[]]*karate/GCN*IDENTICAL*"])


# -- planted output paths: nothing hangs, nothing is written through a link ----------------------

@pytest.mark.parametrize("dangling", [False, True], ids=["link", "dangling-link"])
@pytest.mark.parametrize("option", OUTPUTS)
def test_a_symlink_at_an_output_path_is_refused_and_its_target_untouched(
        pytester: pytest.Pytester, option: str, dangling: bool) -> None:
    """Refused rather than replaced: a link there is either a user's wish to write elsewhere
    (then the target is the path to name) or planted (then writing through it overwrites any
    file the user may write), and silently replacing it would break the first and hide the
    second."""
    pytester.makepyfile(PASSING.format(blocked=[]))
    target = pytester.path / ("missing/parents/victim" if dangling else "victim")
    if not dangling:
        target.write_text("precious\n")
    (pytester.path / "out").symlink_to(target)
    result = pytester.runpytest(f"--graphnetz-{option}=out")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    assert (f"graphnetz: `--graphnetz-{option}` cannot be written: out is a symbolic link (to "
            f"{target}); graphnetz does not write through links: name the file itself, or "
            "remove the link") in result.stderr.str()
    if dangling:
        assert not (pytester.path / "missing").exists()
    else:
        assert target.read_text() == "precious\n"


@pytest.mark.parametrize(("value", "why"), [
    ("occupied", "occupied is a file, not a directory"),
    ("occupied/cache", "occupied is a file, not a directory"),
    ("/proc/nope", "/proc cannot be written"),
])
def test_a_cache_dir_that_cannot_be_created_is_a_usage_error(
        pytester: pytest.Pytester, value: str, why: str) -> None:
    if value.startswith("/proc") and not Path("/proc/self").is_dir():
        pytest.skip("needs /proc")
    pytester.makepyfile(PASSING.format(blocked=[]))
    (pytester.path / "occupied").write_text("a file")
    result = pytester.runpytest(f"--graphnetz-cache-dir={value}")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines([f"ERROR: graphnetz: `--graphnetz-cache-dir` cannot be written: "
                                 f"{why}*; name a writable directory, or train without the "
                                 "cache (--graphnetz-no-cache)"])


# -- every page within its platform's limits ------------------------------------------------------

HUGE_FAILURE = """
import pytest

@pytest.mark.graphnetz
def test_script():
    # what a command task's message holds when its script printed a 3 MB line to stderr
    raise AssertionError("script failed; its stderr ends:\\n" + "x" * 3_000_000)
"""


def test_a_3mb_stderr_line_keeps_the_step_summary_under_githubs_1mib(
        pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch) -> None:
    pytester.makepyfile(HUGE_FAILURE)
    step = pytester.path / "step-summary.md"
    step.write_text("")
    monkeypatch.setenv("GITHUB_STEP_SUMMARY", str(step))
    result = pytester.runpytest("--graphnetz-summary=gates.md")
    result.assert_outcomes(failed=1)
    for page in (step, pytester.path / "gates.md"):
        text = page.read_text()
        assert len(text.encode()) < 1 << 20, page
        assert "ERROR" in text and "test_script" in text
        assert "2998000 more characters cut" in text   # what was cut, and where the rest is:
        assert "the full message is in pytest's output (the job log, the JUnit XML)" in text


def test_thousands_of_long_rows_keep_the_markdown_under_its_budget() -> None:
    from pytest_graphnetz.plugin.summary import MARKDOWN_BUDGET, GateSummary

    rows = [{"test": f"t.py::test_{i}", "cell": f"task{i}/GCN", "verdict": "INCONCLUSIVE",
             "note": "n" * 5_000} for i in range(3_000)]
    unused = [(f"baselines/m/test_{i}.json", f"task{j}/GAT") for i in range(2_000)
              for j in range(20)]
    text = GateSummary(rows=rows, unused=unused).markdown()
    assert len(text.encode()) <= MARKDOWN_BUDGET < 1 << 20
    assert "more baseline file(s): the JSON verdict file lists every cell" in text
    assert "more row(s) not shown: every row is in the JSON verdict file (--graphnetz-json)" \
        in text
    assert "4500 more characters cut" in text     # each note cut at 500 characters


# -- an all-skipped run: a green, empty page, not a missing one ---------------------------------

ALL_SKIPPED = """
import pytest

@pytest.mark.graphnetz
def test_gate(graphnetz_baseline):
    pytest.skip("no GPU here")
"""


def test_an_all_skipped_run_writes_a_green_empty_summary_comment_and_json(
        pytester: pytest.Pytester) -> None:
    import json

    pytester.makepyfile(ALL_SKIPPED)
    result = pytester.runpytest("--graphnetz-summary=s.md", "--graphnetz-comment=c.md",
                                "--graphnetz-json=v.json")
    result.assert_outcomes(skipped=1)
    assert result.ret == 0
    verdicts = json.loads((pytester.path / "v.json").read_text())
    assert verdicts["build_failed"] is False and verdicts["rows"] == []
    assert verdicts["exit_status"] == 0 and verdicts["counts"]["rows"] == 0
    assert "No gate ran to a verdict" in (pytester.path / "s.md").read_text()
    comment = (pytester.path / "c.md").read_text()
    assert comment.startswith("### graphnetz gates ✓")
    assert "No gate ran to a verdict (every gated test was skipped or deselected)" in comment


# -- costs seconds each (marked slow): fresh interpreters, subprocess sessions or killed
# processes (the slow tier, tests/README.md) ------------------------------------------------


@pytest.mark.slow
@pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="FIFOs are POSIX")
@pytest.mark.parametrize("option", OUTPUTS)
def test_a_fifo_at_an_output_path_is_a_usage_error_not_a_hang(
        pytester: pytest.Pytester, option: str) -> None:
    pytester.makepyfile(PASSING.format(blocked=[]))
    os.mkfifo(pytester.path / "out")
    # (a fresh interpreter with a timeout: the old code blocked in open() for good)
    result = pytester.runpytest_subprocess(f"--graphnetz-{option}=out", timeout=600)
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines([
        f"ERROR: graphnetz: `--graphnetz-{option}` cannot be written: out is not a regular "
        "file (a FIFO, a device or a socket; writing to it could block the session); name a "
        "writable path"])


@pytest.mark.slow
@pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="FIFOs are POSIX")
def test_a_fifo_as_the_step_summary_is_one_warning_not_a_hang(
        pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch) -> None:
    pytester.makepyfile(PASSING.format(blocked=[]))
    os.mkfifo(pytester.path / "step")
    monkeypatch.setenv("GITHUB_STEP_SUMMARY", str(pytester.path / "step"))
    result = pytester.runpytest_subprocess(timeout=600)
    assert result.ret == 0
    result.stdout.fnmatch_lines(["*$GITHUB_STEP_SUMMARY (*step) cannot be written: step is not "
                                 "a regular file*"])
