"""The tests of tests/fast/test_cli.py's unit that cost seconds each: fresh
interpreters, subprocess sessions or killed processes (the slow tier, tests/README.md)."""

from __future__ import annotations

import subprocess
import sys

from tests.helpers.reports import BASE, FIRST_LOOK, write


def test_only_a_failed_gate_exits_1(tmp_path) -> None:
    base = write(tmp_path / "base.json", BASE)
    worse = write(tmp_path / "worse.json", BASE - 0.03)
    # as a separate process: the real exit status, as CI sees it
    codes = [subprocess.run([sys.executable, "-m", "pytest_graphnetz.cli", *argv],
                            capture_output=True).returncode
             for argv in (["compare", base, base, *FIRST_LOOK],
                          ["compare", base, worse, *FIRST_LOOK],
                          ["compare", base, base, "--alpha", "0.7"], ["show", str(tmp_path)])]
    assert codes == [0, 1, 2, 2]


def test_version_prints_the_version_and_exits_0() -> None:
    import pytest_graphnetz

    done = subprocess.run([sys.executable, "-m", "pytest_graphnetz.cli", "--version"],
                          capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == f"graphnetz (pytest-graphnetz) {pytest_graphnetz.__version__}"
