"""The tests of tests/fast/test_plugin_summary.py's unit that cost seconds each: fresh
interpreters, subprocess sessions or killed processes (the slow tier, tests/README.md)."""

from __future__ import annotations

import json
import xml.etree.ElementTree as ET

import pytest

# In-process pytester runs drop modules first imported inside them; scipy's extensions do not
# survive a second import: load the gates (and the scipy they use) here, once.
sps = pytest.importorskip("scipy.stats")
pytest.importorskip("scipy.optimize")
import pytest_graphnetz.gates  # noqa: E402,F401
from tests.helpers.summaries import SCENARIOS, table  # noqa: E402

# test -> (verdict, does the row fail the build)
EXPECTED = {
    "test_unchanged": ("IDENTICAL", False),
    "test_regressed": ("REGRESSED", True),
    "test_data_changed": ("REFUSED", True),
    "test_missing": ("MISSING BASELINE", True),
    "test_error": ("ERROR", True),
    "test_ci_width_bad_bound": ("ERROR", True),
    "test_refusal_expected": ("REFUSED", False),   # the test expected it: the build passes
}


def run_scenarios(pytester: pytest.Pytester, mode: str) -> pytest.RunResult:
    pytester.makepyfile(test_scen=SCENARIOS)
    pytester.makeini("[pytest]\ngraphnetz_seeds = 6\n")  # the project's first look
    args = ("--graphnetz-summary=gates.md", "--junitxml=junit.xml", "-p", "no:cacheprovider")
    if mode == "xdist":
        pytest.importorskip("xdist")
        return pytester.runpytest_subprocess("-n", "2", *args)
    return pytester.runpytest("-p", "no:xdist", *args)


@pytest.mark.parametrize("mode", ["serial", "xdist"])
def test_every_gate_call_has_a_row(pytester: pytest.Pytester, mode: str) -> None:
    result = run_scenarios(pytester, mode)
    result.assert_outcomes(passed=2, failed=5)
    lines = table(result.stdout.str())
    header = lines[0].split()
    assert header[:2] == ["Test", "Cell"] and "Build" in header and header[-1] == "Note"

    # the terminal table: one row per gate call, its verdict, and whether it failed the build
    for test, (verdict, fails) in EXPECTED.items():
        (row,) = [line for line in lines if line.startswith(f"test_scen.py::{test} ")]
        assert f"  {verdict}  " in row, row
        assert ("✗ FAIL" in row) is fails, row
    assert "5 of 7 gate row(s) failed the build (✗ FAIL), in 5 test(s): 3 failed, 2 refused, " \
           "2 passed" in lines
    notes = {test: line for line in lines for test in EXPECTED
             if line.startswith(f"test_scen.py::{test} ")}
    assert "no baseline file; create it: `pytest test_scen.py::test_missing " \
           "--graphnetz-update-baselines`" in notes["test_missing"]
    assert "BaselineFormatError: baseline" in notes["test_error"]
    assert "ValueError: `max_width` must be > 0, got 0.0" in notes["test_ci_width_bad_bound"]
    assert "no paired verdict; Δ shown is unpaired (Welch), not a verdict" in \
        notes["test_data_changed"]

    # the Markdown: the same rows, the headline, and each failing test's message
    markdown = (pytester.path / "gates.md").read_text()
    assert "**5 of 7 gate row(s) failed the build" in markdown
    md_rows = {cells[0]: cells for line in markdown.splitlines() if line.startswith("| test_")
               for cells in [[c.strip() for c in line.strip("|").split(" | ")]]}
    headers = [c.strip() for c in markdown.split("\n| Test |")[1].split("\n")[0].split(" | ")]
    headers = ["Test", *[h.strip("| ") for h in headers]]
    for test, (verdict, fails) in EXPECTED.items():
        cells = dict(zip(headers, md_rows[f"test_scen.py::{test}"], strict=True))
        assert cells["Verdict"] == verdict
        assert cells["Build"] == ("✗ FAIL" if fails else "pass")
    for test in ("test_regressed", "test_data_changed", "test_missing", "test_error"):
        assert f"<code>test_scen.py::{test}</code></summary>" in markdown
    assert "karate/GCN — accuracy (higher is better): REGRESSED" in markdown

    # JUnit: every gate call's row is a property of its test case, failed tests included
    cases = {case.get("name"): case for case in ET.parse(pytester.path / "junit.xml").iter(
        "testcase")}
    for test, (verdict, _) in EXPECTED.items():
        props = [json.loads(p.get("value")) for p in cases[test].iter("property")
                 if p.get("name") == "graphnetz_gate"]
        assert [p["verdict"] for p in props] == [verdict], test
    data_row = [json.loads(p.get("value")) for p in cases["test_data_changed"].iter("property")
                if p.get("name") == "graphnetz_gate"][0]
    assert data_row["delta"].startswith("unpaired +0.015 [") and data_row["failed"] == "yes"
