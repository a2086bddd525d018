"""Plugin wiring through real pytest sessions: options, ini keys, marker, summary plumbing.

Nothing here trains: the gates run on ``BenchmarkReport.from_arrays`` numbers, so these runs
take well under a second each. Training sessions live in ``test_plugin_gates.py``.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

import numpy as np
import pytest

from pytest_graphnetz.plugin.options import parse_seeds

# In-process pytester runs drop modules first imported inside them, and scipy's extensions do
# not survive a second import: load the gates (and the scipy they use) here, once.
pytest.importorskip("scipy.stats")
pytest.importorskip("scipy.optimize")
import pytest_graphnetz.gates  # noqa: E402,F401

SHOW_SETTINGS = """
import json

from pytest_graphnetz.plugin import session_of


def test_settings(pytestconfig):
    s = session_of(pytestconfig).settings
    print("SETTINGS=" + json.dumps({
        "seeds": list(s.seeds), "device": s.device, "workers": s.workers,
        "cache_dir": s.cache_dir and str(s.cache_dir), "baseline_dir": str(s.baseline_dir),
        "update_baselines": s.update_baselines, "force": s.force, "alpha": s.alpha,
        "strict": s.strict, "summary": s.summary and str(s.summary),
        "comment": s.comment and str(s.comment), "json": s.json and str(s.json),
        "fail_unused": s.fail_unused}))
"""


def settings(pytester: pytest.Pytester, *args: str) -> dict:
    result = pytester.runpytest("-s", *args)
    result.assert_outcomes(passed=1)
    found = re.search(r"SETTINGS=(\{.*\})", result.stdout.str())
    assert found is not None, result.stdout.str()
    return json.loads(found.group(1))


# (command-line option, ini line, the setting, its expected value; "{root}" = the rootdir)
CASES = [
    ("--graphnetz-seeds=3", "graphnetz_seeds = 3", "seeds", [0, 1, 2]),
    ("--graphnetz-seeds=4-6", "graphnetz_seeds = 4-6", "seeds", [4, 5, 6]),
    ("--graphnetz-seeds=1,4,7", "graphnetz_seeds = 1,4,7", "seeds", [1, 4, 7]),
    ("--graphnetz-device=cpu", "graphnetz_device = cpu", "device", "cpu"),
    ("--graphnetz-workers=2", "graphnetz_workers = 2", "workers", 2),
    ("--graphnetz-cache-dir=ci-cache", "graphnetz_cache_dir = ci-cache", "cache_dir",
     "{root}/ci-cache"),
    ("--graphnetz-no-cache", "graphnetz_no_cache = true", "cache_dir", None),
    ("--graphnetz-baseline-dir=refs", "graphnetz_baseline_dir = refs", "baseline_dir",
     "{root}/refs"),
    ("--graphnetz-update-baselines", None, "update_baselines", True),  # command line only
    ("--graphnetz-force", None, "force", True),
    ("--graphnetz-alpha=0.01", "graphnetz_alpha = 0.01", "alpha", 0.01),
    ("--graphnetz-strict", "graphnetz_strict = true", "strict", True),
    ("--graphnetz-summary=gates.md", "graphnetz_summary = gates.md", "summary",
     "{root}/gates.md"),
    ("--graphnetz-comment=c.md", "graphnetz_comment = c.md", "comment", "{root}/c.md"),
    ("--graphnetz-json=v.json", "graphnetz_json = v.json", "json", "{root}/v.json"),
    ("--graphnetz-fail-unused", "graphnetz_fail_unused = true", "fail_unused", True),
]


def expected(value: object, root: Path) -> object:
    return value.format(root=root) if isinstance(value, str) else value


def test_defaults(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(SHOW_SETTINGS)
    got = settings(pytester)
    root = pytester.path
    assert got == {
        "seeds": list(range(10)), "device": "auto", "workers": 1,
        "cache_dir": str(root / ".pytest_cache" / "d" / "graphnetz"),
        "baseline_dir": str(root / "baselines"), "update_baselines": False, "force": False,
        "alpha": 0.05, "strict": False, "summary": None, "comment": None, "json": None,
        "fail_unused": False,
    }


@pytest.mark.parametrize(("option", "ini", "key", "value"), CASES, ids=[c[0] for c in CASES])
def test_each_option_and_its_ini_key(pytester: pytest.Pytester, option: str, ini: str | None,
                                     key: str, value: object) -> None:
    pytester.makepyfile(SHOW_SETTINGS)
    assert settings(pytester, option)[key] == expected(value, pytester.path)
    if ini is None:
        return
    pytester.makeini(f"[pytest]\n{ini}\n")
    assert settings(pytester)[key] == expected(value, pytester.path)


def test_no_cacheprovider_means_no_cache(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(SHOW_SETTINGS)
    assert settings(pytester, "-p", "no:cacheprovider")["cache_dir"] is None


def test_command_line_wins_over_ini(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(SHOW_SETTINGS)
    pytester.makeini("[pytest]\ngraphnetz_seeds = 7\ngraphnetz_alpha = 0.2\n")
    got = settings(pytester, "--graphnetz-seeds=2", "--graphnetz-alpha=0.01")
    assert (got["seeds"], got["alpha"]) == ([0, 1], 0.01)


@pytest.mark.parametrize(("option", "message"), [
    ("--graphnetz-seeds=ten", "expected N (seeds 0..N-1), A-B or a list like 1,4,7"),
    ("--graphnetz-seeds=1,1", "distinct non-negative seeds, got '1,1'"),
    ("--graphnetz-workers=0", "`--graphnetz-workers` must be >= 1, got 0"),
    ("--graphnetz-alpha=0.7", "`--graphnetz-alpha` must lie in (0, 0.5), got 0.7"),
])
def test_bad_values_are_usage_errors(pytester: pytest.Pytester, option: str,
                                     message: str) -> None:
    pytester.makepyfile(SHOW_SETTINGS)
    result = pytester.runpytest(option)
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    assert message in result.stderr.str()


def test_a_report_dir_that_is_a_file_is_a_usage_error(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(SHOW_SETTINGS)
    (pytester.path / "reports").write_text("not a directory")
    result = pytester.runpytest("--graphnetz-report-dir=reports")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    assert "graphnetz: `--graphnetz-report-dir` cannot be written: reports is a file, not a " \
        "directory; name a writable path" in result.stderr.str()


def test_parse_seeds() -> None:
    assert parse_seeds("10") == tuple(range(10))
    assert parse_seeds("3-7") == (3, 4, 5, 6, 7)
    assert parse_seeds(" 1, 4,7 ") == (1, 4, 7)
    for bad in ("0", "-3", "5-2", "a-b", ""):
        with pytest.raises(ValueError, match="graphnetz-seeds"):
            parse_seeds(bad)


def test_marker_registered(pytester: pytest.Pytester) -> None:
    pytester.makepyfile("""
        import pytest

        @pytest.mark.graphnetz
        def test_marked():
            pass

        def test_plain():
            pass
    """)
    pytester.runpytest("--markers").stdout.fnmatch_lines(["@pytest.mark.graphnetz:*"])
    result = pytester.runpytest("--strict-markers", "-m", "graphnetz")
    result.assert_outcomes(passed=1, deselected=1)


# -- gates in a session: the observer, session alpha/strict, the summary ------------------------

GATES = """
import numpy as np

from pytest_graphnetz import BenchmarkReport, assert_not_worse

DROPS = [-0.02, 0.0, -0.01, -0.02, 0.0, -0.01]
SEEDS = range(6)
BASE = np.array([[[0.80, 0.82, 0.78, 0.81, 0.79, 0.83]]])


def report(shift):
    return BenchmarkReport.from_arrays(BASE + np.asarray(shift), tasks=["karate"],
                                       models=["GCN"], seeds=SEEDS, metric="accuracy")


def test_unchanged():
    assert_not_worse(report(0.0), report(0.0))


def test_borderline():
    # drops of 0-2 points: one-sided paired-t p = 0.020 (REGRESSED at 0.05, not at 0.01)
    assert_not_worse(report(DROPS), report(0.0))
"""
DROPS = [-0.02, 0.0, -0.01, -0.02, 0.0, -0.01]


def test_gate_rows_reach_the_summary(pytester: pytest.Pytester) -> None:
    from scipy import stats

    base = np.array([0.80, 0.82, 0.78, 0.81, 0.79, 0.83])
    cand = base + DROPS
    ref = stats.ttest_rel(cand, base, alternative="less")     # the independent reference
    # matches the one-sided test at the level the schedule's first look spends: ρα = 0.0425
    # (the project declares its first look at its 6 seeds)
    ci = stats.ttest_rel(cand, base).confidence_interval(1 - 2 * 0.85 * 0.05)
    pytester.makepyfile(test_session_gates=GATES)
    result = pytester.runpytest("-o", "graphnetz_seeds=6")
    result.assert_outcomes(passed=1, failed=1)
    result.stdout.fnmatch_lines([
        "*= graphnetz gates =*",
        "Test*Cell*Metric*Baseline*Candidate*Paired Δ (+ = better) [[]CI[]]*p*Verdict*Build*MDE*n"
        "*Note",
        "test_session_gates.py::test_unchanged*karate/GCN*accuracy ↑*IDENTICAL*pass*0*6",
        f"test_session_gates.py::test_borderline*karate/GCN*accuracy ↑*{base.mean():.4g} [[]*"
        f"{cand.mean():.4g} [[]*{cand.mean() - base.mean():+.4g} "
        f"[[]{ci.low:.4g}, {ci.high:.4g}[]] (91.5%, look 1 of 6→…)*{ref.pvalue:.3f}*REGRESSED*"
        "✗ FAIL*6  δ 1 point",
    ])


def test_session_alpha_and_strict_are_gate_defaults(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(test_session_gates=GATES)
    lenient = pytester.runpytest("-o", "graphnetz_seeds=6", "--graphnetz-alpha=0.01")
    lenient.assert_outcomes(passed=2)
    lenient.stdout.fnmatch_lines(["test_session_gates.py::test_borderline*INCONCLUSIVE*"])
    strict = pytester.runpytest("-o", "graphnetz_seeds=6", "--graphnetz-alpha=0.01",
                                "--graphnetz-strict")
    strict.assert_outcomes(passed=1, failed=1)
    strict.stdout.fnmatch_lines(["*next look: 12 seeds (rerun with --graphnetz-seeds=12;*"])


def test_no_gates_no_table_and_a_named_summary_says_so(pytester: pytest.Pytester) -> None:
    pytester.makepyfile("def test_plain():\n    assert True\n")
    (pytester.path / "gates.md").write_text("an earlier run's table")
    result = pytester.runpytest("--graphnetz-summary=gates.md")
    result.assert_outcomes(passed=1)
    assert "graphnetz gates" not in result.stdout.str()
    # the file named is this run's (never an earlier run's table left looking current)
    assert "No gate ran to a verdict" in (pytester.path / "gates.md").read_text()
