"""The tests of tests/fast/test_cli_views.py's unit that cost seconds each: fresh
interpreters, subprocess sessions or killed processes (the slow tier, tests/README.md)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from tests.helpers.reports import LATEX


def test_console_script_runs(report_file):
    exe = Path(sys.executable).with_name("graphnetz")
    if not exe.exists():
        pytest.skip("the `graphnetz` console script is not installed in this environment")
    done = subprocess.run([str(exe), "latex", str(report_file)], capture_output=True,
                          text=True, check=False, timeout=600)
    assert done.returncode == 0, done.stderr
    assert done.stdout == LATEX["t"]
