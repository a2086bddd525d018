"""The plugin end to end: real pytest sessions (pytester) that train, gate and refresh baselines.

The project under test is tiny: a seeded 120-node, 3-class block-model task, a two-layer GCN
whose hidden width is a module constant, 40 epochs, 4 seeds. Its trainer wraps the built-in one
and appends a line to ``trained.log`` per call, so "trains nothing" and "trains each triple
once" are counted in the training loop itself, across processes.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

# Pytester's in-process runs drop modules first imported inside them; a C extension like torch
# cannot be imported twice in one process, so everything heavy is imported here, once.
torch = pytest.importorskip("torch")
pytest.importorskip("torch_geometric.nn")
import pytest_graphnetz.gates  # noqa: E402,F401
import pytest_graphnetz.runner  # noqa: E402,F401
import pytest_graphnetz.runner.training.node  # noqa: E402,F401
from tests.helpers.sessions import (  # noqa: E402
    GATE_TEST,  # noqa: E402
    SEEDS,
    TOY,
    gates_table,  # noqa: E402
    trained,
    verdicts,
)


@pytest.fixture
def project(pytester: pytest.Pytester) -> pytest.Pytester:
    pytester.makepyfile(toy=TOY.format(hidden=16, lr=0.05), test_model=GATE_TEST)
    # the project declares its schedule: first look at its 4 seeds (look 1 spends ρα)
    pytester.makeini("[pytest]\ngraphnetz_seeds = 4\n")
    return pytester


@pytest.fixture(scope="module")
def shared_cache(tmp_path_factory: pytest.TempPathFactory) -> str:
    """A triple cache shared by the tests that do not count trainings (saves CPU)."""
    return f"--graphnetz-cache-dir={tmp_path_factory.mktemp('graphnetz-cache')}"


def test_update_then_rerun_is_identical_and_trains_nothing(project: pytest.Pytester) -> None:
    first = project.runpytest(SEEDS, "--graphnetz-update-baselines", "-v")
    first.assert_outcomes(passed=1)
    baseline = project.path / "baselines" / "test_model" / "test_gcn.json"
    assert baseline.is_file()
    assert trained(project) == 4
    # verbose mode: a progress line at the start and one per finished triple
    assert re.findall(r"graphnetz: \d/4 triples \((\d) trained", first.stdout.str()) == \
        ["0", "1", "2", "3", "4"]
    assert verdicts(first.stdout.str()) == ["WRITTEN"]

    rerun = project.runpytest(SEEDS, "-v")
    rerun.assert_outcomes(passed=1)
    assert trained(project) == 4, "the unchanged model must come from the cache"
    assert "graphnetz: 4/4 triples (0 trained, 4 from cache)" in rerun.stdout.str()
    assert verdicts(rerun.stdout.str()) == ["IDENTICAL"]
    rerun.stdout.fnmatch_lines(["*triples: 0 trained, 4 from cache*"])


def test_worse_model_fails_as_regressed_with_paired_evidence(project: pytest.Pytester) -> None:
    project.runpytest(SEEDS, "--graphnetz-update-baselines").assert_outcomes(passed=1)
    project.makepyfile(toy=TOY.format(hidden=16, lr=0.0025))  # lr ÷ 20: genuinely worse

    result = project.runpytest(SEEDS)
    result.assert_outcomes(failed=1)
    out = result.stdout.str()
    assert trained(project) == 8, "a changed model must be retrained, never served stale"
    assert verdicts(out) == ["REGRESSED"]
    for evidence in (r"toy/GCN — accuracy \(higher is better\): REGRESSED",
                     r"baseline  0\.\d+ \[0\.\d+, [01]\.\d+\] \(t 95% CI of the mean, n=4\)",
                     r"candidate 0\.\d+ \[0\.\d+, [01]\.\d+\] \(t 95% CI of the mean, n=4\)",
                     # the interval matches the one-sided decision (look 1 of the schedule:
                     # ρα = 0.85 × 0.05, so 91.5%): it excludes 0
                     r"paired Δ -0\.\d+ \(91\.5%, look 1 of 4→… CI \[-0\.\d+, -0\.\d+\]\) "
                     r"over 4 seeds 0-3; "
                     r"p = 0\.0\d+; test paired-t, margin 0, min_effect 0\.01, alpha 0\.05 "
                     r"\(this look: one-sided level 0\.0425\)",
                     r"minimum detectable effect at n=4: 0\.\d+"):
        assert re.search(evidence, out), evidence


def test_ratchet_refuses_a_regressed_refresh_unless_forced(project: pytest.Pytester) -> None:
    project.runpytest(SEEDS, "--graphnetz-update-baselines").assert_outcomes(passed=1)
    baseline = project.path / "baselines" / "test_model" / "test_gcn.json"
    good = baseline.read_bytes()
    project.makepyfile(toy=TOY.format(hidden=16, lr=0.0025))

    refused = project.runpytest(SEEDS, "--graphnetz-update-baselines")
    refused.assert_outcomes(failed=1)
    refused.stdout.fnmatch_lines([
        "*refusing to update baseline*test_gcn.json",
        "*The ratchet refuses*",
        "*against the baseline it replaces:*",
        "*toy/GCN — accuracy (higher is better): REGRESSED*",
        "*pytest test_model.py::test_gcn --graphnetz-update-baselines --graphnetz-force*",
    ])
    assert baseline.read_bytes() == good

    forced = project.runpytest(SEEDS, "--graphnetz-update-baselines", "--graphnetz-force")
    forced.assert_outcomes(passed=1)
    assert baseline.read_bytes() != good
    # the forced baseline is now the reference: the worse model reads as IDENTICAL against it
    project.runpytest(SEEDS).assert_outcomes(passed=1)


def test_more_seeds_train_only_the_new_ones(project: pytest.Pytester) -> None:
    # the baseline holds the first look (the project's 4 seeds); a rerun with 6 pairs 0-3
    project.runpytest("--graphnetz-seeds=4", "--graphnetz-update-baselines")
    assert trained(project) == 4
    result = project.runpytest("--graphnetz-seeds=6")
    result.assert_outcomes(passed=1)
    assert trained(project) == 6
    result.stdout.fnmatch_lines(["*triples: 2 trained, 4 from cache*"])
    # below the first look: refused, and the line names the seeds, the first look and the fix
    short = project.runpytest("--graphnetz-seeds=3")
    short.assert_outcomes(failed=1)
    short.stdout.fnmatch_lines(["*the paired 3 seeds (0-2) hold no look: the schedule's first "
                                "look is 4 seeds (0-3)*--graphnetz-single-run*"])


def test_no_cache_and_cache_dir(project: pytest.Pytester) -> None:
    cache = project.path / "ci-cache"
    project.runpytest(SEEDS, "--graphnetz-update-baselines", f"--graphnetz-cache-dir={cache}")
    assert trained(project) == 4
    assert len(list(cache.glob("*.json"))) == 4, "one cache entry per triple in the given dir"
    records = [json.loads(path.read_text())["record"] for path in cache.glob("loads/*.json")]
    models = [r for r in records if set(r) >= {"fingerprint", "info"}]   # runner/model_record
    assert (len(records) - len(models), len(models)) == (4, 4), \
        "one load record and one model record per seed"
    assert not (project.path / ".pytest_cache" / "d" / "graphnetz").exists() or not list(
        (project.path / ".pytest_cache" / "d" / "graphnetz").rglob("*.json"))

    project.runpytest(SEEDS, f"--graphnetz-cache-dir={cache}").assert_outcomes(passed=1)
    assert trained(project) == 4
    project.runpytest(SEEDS, "--graphnetz-no-cache").assert_outcomes(passed=1)
    assert trained(project) == 8, "--graphnetz-no-cache trains every triple"


def test_summary_markdown_and_junit_properties(project: pytest.Pytester, shared_cache: str,
                                              monkeypatch: pytest.MonkeyPatch) -> None:
    step_summary = project.path / "step_summary.md"
    step_summary.write_text("earlier step\n")
    monkeypatch.setenv("GITHUB_STEP_SUMMARY", str(step_summary))
    project.runpytest(SEEDS, shared_cache, "--graphnetz-update-baselines").assert_outcomes(passed=1)
    result = project.runpytest(SEEDS, shared_cache, "--graphnetz-summary=gates.md",
                               "--junitxml=junit.xml", "--graphnetz-report-dir=reports")
    result.assert_outcomes(passed=1)

    # --graphnetz-report-dir: the gated test's candidate, whole (every epoch of every history)
    from pytest_graphnetz import BenchmarkReport
    from pytest_graphnetz.gates.refreshing.baselines import load_baseline

    saved = BenchmarkReport.from_json(project.path / "reports" / "test_model" / "test_gcn.json")
    baseline = load_baseline(project.path / "baselines" / "test_model" / "test_gcn.json")
    assert saved.seeds == (0, 1, 2, 3) and saved.models == ("GCN",)
    assert all(len(h.test) == 40 for h in saved.histories.values())
    assert (saved.X == baseline.X).all()   # the unchanged model: the same numbers
    result.stdout.fnmatch_lines(["graphnetz: 1 candidate report(s) saved under *reports"])

    markdown = (project.path / "gates.md").read_text()
    assert markdown.startswith("### graphnetz gates")
    assert "| test_model.py::test_gcn | toy/GCN | accuracy ↑ |" in markdown
    assert "| IDENTICAL |" in markdown
    text = step_summary.read_text()
    assert text.startswith("earlier step\n"), "the step summary is appended to, never replaced"
    assert text.count("### graphnetz gates") == 2   # both sessions appended

    junit = (project.path / "junit.xml").read_text()
    prop = re.search(r'<property name="graphnetz_gate" value="([^"]*)"', junit)
    assert prop is not None
    row = json.loads(prop.group(1).replace("&quot;", '"'))
    assert row["cell"] == "toy/GCN" and row["verdict"] == "IDENTICAL" and row["n"] == "4"


def test_graphnetz_run_keywords_override_the_session(project: pytest.Pytester) -> None:
    project.makepyfile(test_model="""
        import toy

        def test_seeds(graphnetz_run):
            report = graphnetz_run(toy.TASKS, toy.MODELS, seeds=[7, 9])
            assert report.seeds == (7, 9)
            assert report.protocol["device"]["kind"] == "cpu"
    """)
    project.runpytest(SEEDS, "--graphnetz-device=cpu").assert_outcomes(passed=1)
    assert trained(project) == 2


def test_baseline_name_and_dir(project: pytest.Pytester, shared_cache: str,
                               tmp_path: Path) -> None:
    project.makepyfile(test_model="""
        from pytest_graphnetz import assert_not_worse
        import toy

        def test_named(graphnetz_run, graphnetz_baseline):
            assert_not_worse(graphnetz_run(toy.TASKS, toy.MODELS), graphnetz_baseline("shared"))
    """)
    project.runpytest(SEEDS, shared_cache, "--graphnetz-update-baselines",
                      f"--graphnetz-baseline-dir={tmp_path}").assert_outcomes(passed=1)
    assert (tmp_path / "test_model" / "shared.json").is_file()


# -- verdict semantics in a session: δ from the option or ini, BETTER, the interval printed -------
# These gate per-seed numbers given with `from_arrays`: nothing trains.

SEMANTICS = """
import numpy as np

from pytest_graphnetz import BenchmarkReport, assert_not_worse

BASE = np.array([0.80, 0.82, 0.78, 0.81, 0.79, 0.83, 0.80, 0.84, 0.81, 0.82])
WOBBLE = np.array([0.004, -0.003, 0.002, -0.002, 0.003, -0.001, 0.0, -0.001, 0.002, -0.003])


def report(values):
    return BenchmarkReport.from_arrays(np.asarray(values)[None, None, :], tasks=["karate"],
                                       models=["GCN"], seeds=range(10), metric="accuracy")


def test_wobble():        # an innocent change: no seed moves by more than 0.4 points
    assert_not_worse(report(BASE + WOBBLE), report(BASE))


def test_gain():          # +3 points on every seed
    assert_not_worse(report(BASE + 0.03 + WOBBLE), report(BASE))


def test_small_drop():    # a steady 0.3-point drop: significant, but below one point
    assert_not_worse(report(BASE - 0.003 + WOBBLE / 10), report(BASE))
"""


def _row(output: str, test: str) -> str:
    return next(line for line in gates_table(output).splitlines() if f"::{test} " in line)


def test_verdicts_in_a_session_default_min_effect(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(test_semantics=SEMANTICS)
    result = pytester.runpytest("--graphnetz-summary=gates.md")
    result.assert_outcomes(passed=2, failed=1)
    out = result.stdout.str()
    assert "NOT WORSE" in _row(out, "test_wobble")
    assert "BETTER: refresh baseline" in _row(out, "test_gain")
    assert "REGRESSED" in _row(out, "test_small_drop")
    # look 1 of the schedule decides at ρα = 0.85 × 0.05: its interval is 91.5%
    assert all("(91.5%, look 1 of 10→…)" in _row(out, t)
               for t in ("test_wobble", "test_gain", "test_small_drop"))
    result.stdout.fnmatch_lines([
        "*karate/GCN — accuracy (higher is better): REGRESSED",
        "*paired Δ -0.0029* (91.5%, look 1 of 10→… CI [[]*]) over 10 seeds 0-9; p = *; test "
        "paired-t, margin 0, min_effect 0.01, alpha 0.05 (this look: one-sided level 0.0425)",
        "*the drop is significant but smaller than min_effect 0.01 *accept it with margin=0.00*",
    ])
    markdown = (pytester.path / "gates.md").read_text()
    assert "| BETTER: refresh baseline |" in markdown and "(91.5%, look 1 of 10→…)" in markdown


@pytest.mark.parametrize("how", ["option", "ini"])
def test_min_effect_from_the_option_or_the_ini(pytester: pytest.Pytester, how: str) -> None:
    pytester.makepyfile(test_semantics=SEMANTICS)
    if how == "ini":
        pytester.makeini("[pytest]\ngraphnetz_min_effect = 0.001\n")
        result = pytester.runpytest()
    else:
        result = pytester.runpytest("--graphnetz-min-effect=0.001")
    # δ = 0.1 point: the wobble's interval reaches below it, and a 0.3-point drop matters now
    result.assert_outcomes(passed=2, failed=1)
    out = result.stdout.str()
    assert "INCONCLUSIVE" in _row(out, "test_wobble")
    assert "REGRESSED" in _row(out, "test_small_drop")
    assert "smaller than min_effect" not in out
    assert "min_effect 0.001" in out


def test_min_effect_option_is_validated(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(test_semantics=SEMANTICS)
    result = pytester.runpytest("--graphnetz-min-effect=0")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(["*`--graphnetz-min-effect` must be a number > 0*got 0.0*"])
    # the same check on the ini key, which the message then names instead
    pytester.makeini("[pytest]\ngraphnetz_min_effect = -0.01\n")
    result = pytester.runpytest()
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(["*the ini key `graphnetz_min_effect` in tox.ini must be a "
                                 "number > 0 (*got -0.01*"])
    result = pytester.runpytest("--graphnetz-min-effect=one point")
    assert result.ret == pytest.ExitCode.USAGE_ERROR


def test_the_ratchet_refusals_first_line_fits_a_terminal(project: pytest.Pytester) -> None:
    from pytest_graphnetz.base.text import FIRST_LINE_WIDTH

    project.runpytest(SEEDS, "--graphnetz-update-baselines").assert_outcomes(passed=1)
    project.makepyfile(toy=TOY.format(hidden=16, lr=0.0025))
    refused = project.runpytest(SEEDS, "--graphnetz-update-baselines")
    refused.assert_outcomes(failed=1)
    (first,) = [line for line in refused.stdout.lines
                if line.startswith("E       AssertionError: refusing to update baseline")]
    assert len(first.removeprefix("E       AssertionError: ")) <= FIRST_LINE_WIDTH, first


# -- costs seconds each (marked slow): fresh interpreters, subprocess sessions or killed
# processes (the slow tier, tests/README.md) ------------------------------------------------


XDIST_TESTS = """
from pytest_graphnetz import assert_not_worse

import toy


def test_a(graphnetz_run, graphnetz_baseline):
    assert_not_worse(graphnetz_run(toy.TASKS, toy.MODELS), graphnetz_baseline())


def test_b(graphnetz_run, graphnetz_baseline):
    assert_not_worse(graphnetz_run(toy.TASKS, toy.MODELS), graphnetz_baseline())
"""


@pytest.mark.slow
def test_xdist_same_verdicts_and_each_triple_trained_once(pytester: pytest.Pytester) -> None:
    pytest.importorskip("xdist")
    pytester.makepyfile(toy=TOY.format(hidden=16, lr=0.05), test_model=XDIST_TESTS)
    pytester.makeini("[pytest]\ngraphnetz_seeds = 4\n")  # the project's first look
    # The baselines, from one serial in-process session that caches nothing (both tests train).
    update = pytester.runpytest(SEEDS, "-p", "no:xdist", "--graphnetz-no-cache",
                                "--graphnetz-update-baselines")
    update.assert_outcomes(passed=2)
    assert trained(pytester) == 8
    assert verdicts(update.stdout.str()) == ["WRITTEN", "WRITTEN"]
    # Two tests on two workers run the same 4 triples at once: the file locks make one wait,
    # and both read the serial session's numbers.
    parallel = pytester.runpytest_subprocess(SEEDS, "-n", "2")
    parallel.assert_outcomes(passed=2)
    assert trained(pytester) == 8 + 4
    parallel.stdout.fnmatch_lines(["*triples: 4 trained, 4 from cache*"])
    serial = pytester.runpytest(SEEDS, "-p", "no:xdist")
    serial.assert_outcomes(passed=2)
    assert verdicts(parallel.stdout.str()) == verdicts(serial.stdout.str()) == ["IDENTICAL"] * 2
    assert trained(pytester) == 8 + 4
