"""The tests of tests/fast/test_plugin_outputs.py's unit that cost seconds each: fresh
interpreters, subprocess sessions or killed processes (the slow tier, tests/README.md)."""

from __future__ import annotations

import os

import pytest

# In-process pytester runs drop modules first imported inside them, and scipy's extensions do
# not survive a second import: load the gates (and the scipy they use) here, once.
pytest.importorskip("scipy.stats")
pytest.importorskip("scipy.optimize")
import pytest_graphnetz.gates  # noqa: E402,F401
from tests.helpers.sessions import OUTPUTS, PASSING


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
