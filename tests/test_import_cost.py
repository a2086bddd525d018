"""Loading the plugin must not import torch, torch_geometric, scipy or numpy (seconds a run)."""

from __future__ import annotations

import subprocess
import sys

import pytest

HEAVY = ("torch", "torch_geometric", "scipy", "numpy")


def test_importing_the_plugin_imports_nothing_heavy() -> None:
    code = ("import sys, pytest_graphnetz, pytest_graphnetz.plugin; "
            f"print([m for m in {HEAVY!r} if m in sys.modules])")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         check=True).stdout
    assert out.strip() == "[]"


def test_a_pytest_run_without_graphnetz_tests_imports_nothing_heavy(
        pytester: pytest.Pytester) -> None:
    # Checked after the whole session, terminal summary included (pytest_unconfigure runs last).
    pytester.makeconftest(f"""
        import sys

        def pytest_unconfigure(config):
            with open("heavy.txt", "w") as fh:
                fh.write(repr([m for m in {HEAVY!r} if m in sys.modules]))
    """)
    pytester.makepyfile("def test_plain():\n    assert 1 + 1 == 2\n")
    result = pytester.runpytest_subprocess("-v")
    result.assert_outcomes(passed=1)
    result.stdout.fnmatch_lines(["plugins:*graphnetz*"])   # the plugin was loaded
    assert (pytester.path / "heavy.txt").read_text() == "[]"
