"""Every gate call visible: the session table, the Markdown summary and the JUnit properties list
each call (REFUSED, MISSING BASELINE and ERROR included, with their reason), mark the rows that
failed the build, and a failing test shows the verdict first, without the plugin's frames.

Nothing here trains: the gates run on ``BenchmarkReport.from_arrays`` numbers.
"""

from __future__ import annotations

import json
import xml.etree.ElementTree as ET

import pytest

# In-process pytester runs drop modules first imported inside them; scipy's extensions do not
# survive a second import: load the gates (and the scipy they use) here, once.
sps = pytest.importorskip("scipy.stats")
pytest.importorskip("scipy.optimize")

import pytest_graphnetz.gates  # noqa: E402,F401
from tests.helpers.summaries import BASE, COMMON, SCENARIOS, SHIFT, table  # noqa: E402


def test_failure_first_without_plugin_frames(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(test_scen=SCENARIOS)
    pytester.makeini("[pytest]\ngraphnetz_seeds = 6\n")  # the project's first look
    result = pytester.runpytest("-p", "no:cacheprovider", "-k",
                                "regressed or missing or data_changed or error")
    result.assert_outcomes(failed=4)
    out = result.stdout.str()
    # the test's own line, then straight away the verdict message
    result.stdout.fnmatch_lines([
        ">       assert_not_worse(report(BASE + DROPS), report(BASE))",
        "E       AssertionError: assert_not_worse: 1 of 1 cell(s) failed*",
        "E       ",
        "E       karate/GCN — accuracy (higher is better): REGRESSED",
    ])
    result.stdout.fnmatch_lines([
        ">       assert_not_worse(report(BASE), graphnetz_baseline())",
        "E       pytest_graphnetz.gates.verdicts.values.BaselineMissingError: no baseline at *",
    ])
    for internal in ("gates.py", "pytest_graphnetz/gates", "baselines.py", "plugin/",
                     "CellVerdict(", "_comparison_gate",
                     "verdicts = [", "def _finish"):
        assert internal not in out, internal


def test_data_change_refusal_shows_the_unpaired_comparison(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(test_scen=SCENARIOS)
    pytester.makeini("[pytest]\ngraphnetz_seeds = 6\n")  # the project's first look
    result = pytester.runpytest("-p", "no:cacheprovider", "-k", "data_changed")
    result.assert_outcomes(failed=1)
    cand = BASE + SHIFT
    ref = sps.ttest_ind(cand, BASE, equal_var=False)   # the independent reference
    ci = ref.confidence_interval(0.95)
    base_ci = sps.t.interval(0.95, 5, loc=BASE.mean(), scale=sps.sem(BASE))
    cand_ci = sps.t.interval(0.95, 5, loc=cand.mean(), scale=sps.sem(cand))
    result.stdout.fnmatch_lines([
        "E       *GateRefusal: no paired verdict: the data or split of task 'karate' changed",
        "E       task 'karate': its data or split differs from the baseline "
        "report for the same seed(s) [[]0, 1, 2, 3, 4, 5[]], so a per-seed pairing would be "
        "fictional: no verdict.*",
        "E       What the change did, UNPAIRED (Welch's t; seeds 0-5 of each side; not a "
        "verdict*",
        f"E         karate/GCN: baseline {BASE.mean():.4g} [[]{base_ci[0]:.4g}, "
        f"{base_ci[1]:.4g}[]] (t 95% CI of the mean, n=6); candidate {cand.mean():.4g} "
        f"[[]{cand_ci[0]:.4g}, {cand_ci[1]:.4g}[]] (t 95% CI of the mean, n=6); Welch Δ "
        f"{cand.mean() - BASE.mean():+.4g} "
        f"(95% CI [[]{ci.low:.4g}, {ci.high:.4g}[]], p = {ref.pvalue:.3f})",
    ])
    (row,) = [line for line in table(result.stdout.str()) if "test_data_changed" in line]
    assert f"unpaired {cand.mean() - BASE.mean():+.4g} [{ci.low:.4g}, {ci.high:.4g}]" in row


def test_a_refused_row_states_each_sides_seeds(pytester: pytest.Pytester) -> None:
    """A baseline of 12 seeds against a candidate of 6 whose data changed: the refusal and
    its row say which seeds each side's mean is over and which the Welch Δ used, never
    "seeds 0-5 of each side"."""
    pytester.makepyfile(test_sides=COMMON + """

def test_sides():
    base = BenchmarkReport.from_arrays(
        np.concatenate([BASE, BASE])[None, None, :], tasks=["karate"], models=["GCN"],
        seeds=range(12), metric="accuracy",
        fingerprints={"data": {"karate": {s: "a" for s in range(12)}}})
    assert_not_worse(report(BASE + SHIFT, data="b"), base)
""")
    pytester.makeini("[pytest]\ngraphnetz_seeds = 6\n")
    result = pytester.runpytest("-p", "no:cacheprovider", "--graphnetz-comment=c.md")
    result.assert_outcomes(failed=1)
    sides = "baseline seeds 0-11, candidate seeds 0-5; Welch Δ on the 6 both ran (0-5)"
    result.stdout.fnmatch_lines([f"E       What the change did, UNPAIRED (Welch's t; {sides}; *",
                                 "E         karate/GCN: baseline * (t 95% CI of the mean, n=12); "
                                 "candidate * (t 95% CI of the mean, n=6); Welch Δ *"])
    assert "of each side" not in result.stdout.str()
    (row,) = [line for line in table(result.stdout.str()) if "test_sides" in line]
    assert "REFUSED" in row and sides in row
    assert sides in (pytester.path / "c.md").read_text()


REFRESH = COMMON + """

def test_gcn(graphnetz_baseline):
    data = os.environ["GNZ_DATA"]
    shift = np.array([float(x) for x in os.environ["GNZ_SHIFT"].split(",")])
    assert_not_worse(report(BASE + shift, data=data), graphnetz_baseline())
"""


def test_forced_refresh_shows_old_against_new(pytester: pytest.Pytester,
                                              monkeypatch: pytest.MonkeyPatch) -> None:
    pytester.makepyfile(test_refresh=REFRESH)
    pytester.makeini("[pytest]\ngraphnetz_seeds = 6\n")  # the project's first look
    update = ("-p", "no:cacheprovider", "--graphnetz-update-baselines")
    monkeypatch.setenv("GNZ_DATA", "a")
    monkeypatch.setenv("GNZ_SHIFT", "0")
    first = pytester.runpytest(*update)
    first.assert_outcomes(passed=1)
    (row,) = table(first.stdout.str())[2:3]
    assert "(new)" in row and "WRITTEN" in row

    # the data pipeline changed: a refresh cannot pair, so it is refused, with the numbers
    monkeypatch.setenv("GNZ_DATA", "b")
    monkeypatch.setenv("GNZ_SHIFT", "0.02")
    refused = pytester.runpytest(*update)
    refused.assert_outcomes(failed=1)
    (row,) = table(refused.stdout.str())[2:3]
    assert "REFUSED" in row and "unpaired +0.02 [" in row and "✗ FAIL" in row

    forced = pytester.runpytest(*update, "--graphnetz-force")
    forced.assert_outcomes(passed=1)
    (row,) = table(forced.stdout.str())[2:3]
    ci = sps.ttest_ind(BASE + 0.02, BASE, equal_var=False).confidence_interval(0.95)
    base_ci = sps.t.interval(0.95, 5, loc=BASE.mean(), scale=sps.sem(BASE))
    assert "WRITTEN (forced)" in row and "(new)" not in row
    assert f"{BASE.mean():.4g} [{base_ci[0]:.4g}, {base_ci[1]:.4g}]" in row   # the old baseline
    assert f"{BASE.mean() + 0.02:.4g} [" in row                                # the new one
    assert f"unpaired +0.02 [{ci.low:.4g}, {ci.high:.4g}]" in row
    assert "Δ is unpaired (Welch), not a verdict" in row

    plain = pytester.runpytest("-p", "no:cacheprovider")
    plain.assert_outcomes(passed=1)
    assert "IDENTICAL" in table(plain.stdout.str())[2]


def test_markdown_survives_odd_names(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(test_odd=COMMON + """

@pytest.mark.parametrize("name", ["<b>"])
def test_odd(name):
    weird = BenchmarkReport.from_arrays(
        np.array([[BASE + DROPS]]), tasks=["a```b"], models=["GCN"], seeds=range(6),
        metric="accuracy")
    assert_not_worse(weird, BenchmarkReport.from_arrays(
        np.array([[BASE]]), tasks=["a```b"], models=["GCN"], seeds=range(6), metric="accuracy"))
""")
    pytester.makeini("[pytest]\ngraphnetz_seeds = 6\n")  # the project's first look
    pytester.runpytest("-p", "no:cacheprovider", "--graphnetz-summary=gates.md").assert_outcomes(
        failed=1)
    markdown = (pytester.path / "gates.md").read_text()
    assert "<code>test_odd.py::test_odd[&lt;b&gt;]</code>" in markdown
    # the message's own ``` cannot close the block early
    block = markdown.split("````text\n", 1)[1].split("\n````\n", 1)[0]
    assert "a```b/GCN — accuracy (higher is better): REGRESSED" in block


def test_a_refused_refresh_marks_the_cells_that_refused_it(
        pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch) -> None:
    pytester.makepyfile(test_refresh=REFRESH)
    update = ("-p", "no:cacheprovider", "--graphnetz-update-baselines")
    monkeypatch.setenv("GNZ_DATA", "a")
    monkeypatch.setenv("GNZ_SHIFT", "0")
    pytester.runpytest(*update).assert_outcomes(passed=1)
    # a loss the paired test cannot call (one-sided p = 0.074): INCONCLUSIVE, negative mean Δ.
    # The cell passes as a gate, but the ratchet refuses the refresh on it: the row fails.
    monkeypatch.setenv("GNZ_SHIFT", "-0.002,-0.025,0.003,-0.019,0.004,-0.0114")
    refused = pytester.runpytest(*update)
    refused.assert_outcomes(failed=1)
    (row,) = table(refused.stdout.str())[2:3]
    assert "REFUSED (INCONCLUSIVE)" in row and "✗ FAIL" in row


# -- costs seconds each (marked slow): fresh interpreters, subprocess sessions or killed
# processes (the slow tier, tests/README.md) ------------------------------------------------


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


@pytest.mark.slow
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
