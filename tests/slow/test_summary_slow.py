"""The tests of tests/fast/test_summary.py's unit that cost seconds each: fresh
interpreters, subprocess sessions or killed processes (the slow tier, tests/README.md)."""

from __future__ import annotations

import json

import pytest

sps = pytest.importorskip("scipy.stats")
pytest.importorskip("scipy.optimize")
import pytest_graphnetz.gates  # noqa: E402,F401
from tests.helpers.summaries import OUTCOMES, declare_six_seeds  # noqa: E402


@pytest.mark.parametrize("mode", ["serial", "xdist"])
def test_every_failed_graphnetz_test_has_a_row(pytester: pytest.Pytester, mode: str) -> None:
    declare_six_seeds(pytester)
    pytester.makepyfile(test_out=OUTCOMES)
    args = ("-p", "no:cacheprovider", "--graphnetz-summary=gates.md",
            "--graphnetz-json=verdicts.json", "--graphnetz-comment=c.md", "-k", "not unrelated")
    if mode == "xdist":
        pytest.importorskip("xdist")
        result = pytester.runpytest_subprocess("-n", "2", *args)
    else:
        result = pytester.runpytest("-p", "no:xdist", *args)
    result.assert_outcomes(passed=1, failed=3, errors=1)
    out = result.stdout.str()
    for test, reason in (("test_raises_before_gate", "RuntimeError: the model exploded"),
                         ("test_fails_after_gate", "AssertionError: checked something else"),
                         ("test_marked", "ValueError: bad hyperparameter"),
                         ("test_setup_error", "RuntimeError: fixture refused: no GPU")):
        (line,) = [x for x in out.splitlines() if x.startswith(f"test_out.py::{test} ")
                   and "ERROR" in x]
        assert "✗ FAIL" in line and reason in line, line
    assert "4 of 6 gate row(s) failed the build (✗ FAIL), in 4 test(s): 4 failed" in out
    assert "none failed" not in (pytester.path / "gates.md").read_text()
    assert "none failed" not in (pytester.path / "c.md").read_text()
    data = json.loads((pytester.path / "verdicts.json").read_text())
    assert data["build_failed"] and data["exit_status"] == 1
    assert data["counts"] == {"rows": 6, "failed": 4, "refused": 0, "passed": 2,
                              "identical": 2, "tests": 5}
