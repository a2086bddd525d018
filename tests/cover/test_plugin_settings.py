"""The settings a session starts with: options and ini keys refused by name, the pinned device,
workers, the session header, and which gates a selection runs. Real pytest sessions (pytester).
"""

from __future__ import annotations

import pytest

# In-process pytester runs drop modules first imported inside them; scipy's extensions and torch
# do not survive a second import: load the gates and the runner (and what they use) here, once.
pytest.importorskip("scipy.stats")
pytest.importorskip("scipy.optimize")
pytest.importorskip("torch")
pytest.importorskip("torch_geometric.nn")
import pytest_graphnetz.gates  # noqa: E402,F401
import pytest_graphnetz.runner  # noqa: E402,F401

# -- workers, ini keys and the device --------------------------------------------------------------


SHOW_WORKERS = """
def test_settings(pytestconfig):
    from pytest_graphnetz.plugin import session_of

    print("WORKERS=%d" % session_of(pytestconfig).settings.workers)
"""


def test_workers_beyond_the_cpus_are_clamped_with_a_note(pytester: pytest.Pytester) -> None:
    import os

    pytester.makepyfile(SHOW_WORKERS)
    result = pytester.runpytest("-s", "--graphnetz-workers=100000")
    result.assert_outcomes(passed=1, warnings=1)
    cpus = os.cpu_count() or 1
    result.stdout.fnmatch_lines([
        f"*WORKERS={cpus}",
        f"*graphnetz: `--graphnetz-workers` asks for 100000 processes but this machine has "
        f"{cpus} CPU(s); using {cpus}"])


def test_the_settings_cannot_change_and_default_to_what_the_runner_does(
        pytester: pytest.Pytester) -> None:
    """The defaults the plugin writes out rather than import (a run of plain tests loads
    neither module) are the runner's own; and no part of a session can change a setting."""
    pytester.makepyfile("""
        import pytest

        from pytest_graphnetz.runner import determinism
        from pytest_graphnetz.plugin import session_of

        def test_settings(pytestconfig):
            settings = session_of(pytestconfig).settings
            assert settings.deterministic == determinism.DEFAULT_MODE
            with pytest.raises(AttributeError, match="read once, at session start: alpha"):
                settings.alpha = 0.5
            with pytest.raises(AttributeError, match="cannot be deleted"):
                del settings.seeds
            assert settings.alpha == 0.05
    """)
    pytester.runpytest().assert_outcomes(passed=1)


def test_settings_take_every_field_and_no_other() -> None:
    from pytest_graphnetz.plugin.settings import Settings

    with pytest.raises(TypeError, match=r"missing \['accept', .*unknown \['colour'\]"):
        Settings(seeds=(0,), colour="blue")


@pytest.mark.parametrize(("ini", "message"), [
    ("graphnetz_workers = 0",
     "graphnetz: the ini key `graphnetz_workers` in tox.ini must be >= 1, got 0"),
    ("graphnetz_alpha = 0.7",
     "graphnetz: the ini key `graphnetz_alpha` in tox.ini must lie in (0, 0.5), got 0.7"),
    ("graphnetz_deterministic = maybe",
     "graphnetz: the ini key `graphnetz_deterministic` in tox.ini: expected one of on, warn, "
     "off, got 'maybe'"),
])
def test_bad_ini_values_are_named_by_their_ini_key(pytester: pytest.Pytester, ini: str,
                                                   message: str) -> None:
    pytester.makeini(f"[pytest]\n{ini}\n")
    pytester.makepyfile("def test_x(): pass")
    result = pytester.runpytest()
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    assert message in result.stderr.str()


# -- the settings in effect, in the session header -------------------------------------------------


@pytest.mark.parametrize(("args", "line"), [
    ([], "graphnetz: seeds 0-9 (10), α 0.05, looks 10→20→40→… (look 1 decides at 0.0425), "
         "δ 0.01 for [[]0, 1[]] metrics, device auto, workers 1, cache .pytest_cache/d/graphnetz"),
    (["--graphnetz-seeds=5..20", "--graphnetz-alpha=0.01", "--graphnetz-min-effect=0.02",
      "--graphnetz-device=cpu", "--graphnetz-no-cache", "--graphnetz-update-baselines"],
     "graphnetz: seeds 5..20 adaptive, α 0.01 (refresh: each baseline judged alone at α), "
     "δ 0.02, device cpu, workers 1, cache off, updating baselines"),
    # the first look is the project's: the ini key, whatever the command line runs
    (["--graphnetz-seeds=40", "-o", "graphnetz_seeds=20"],
     "graphnetz: seeds 0-39 (40), α 0.05, looks 20→40→80→… (look 1 decides at 0.0425), *"),
    (["--graphnetz-seeds=1,4,7", "--graphnetz-cache-dir=ci-cache", "--graphnetz-single-run"],
     "graphnetz: seeds 1,4,7, α 0.05 (single run: judged alone at α: not rerun-safe), δ 0.01 "
     "for [[]0, 1[]] metrics, device auto, workers 1, cache ci-cache"),
])
def test_the_session_header_shows_the_settings_in_effect(pytester: pytest.Pytester,
                                                         args: list[str], line: str) -> None:
    from pytest_graphnetz.gates.verdicts.rules import DEFAULT_MIN_EFFECT
    from pytest_graphnetz.stats.boundaries import DEFAULT_FIRST_LOOK, DEFAULT_RHO

    assert DEFAULT_MIN_EFFECT == 0.01  # the header's defaults, written out there
    assert DEFAULT_RHO == 0.85 and DEFAULT_FIRST_LOOK == 10
    pytester.makepyfile("def test_x(): pass")
    result = pytester.runpytest(*args)
    result.assert_outcomes(passed=1)
    result.stdout.fnmatch_lines([line])


# -- the pinned device -----------------------------------------------------------------------------


TWO_GATES = """
import pytest

pytestmark = pytest.mark.graphnetz


def test_one(graphnetz_run):
    graphnetz_run("social", {})


def test_two(graphnetz_run):
    graphnetz_run("social", {})
"""


@pytest.mark.parametrize("device", ["cuda:99", "tpu"])
def test_absent_pinned_device_is_one_usage_error_at_session_start(pytester, device):
    pytester.makepyfile(test_gates=TWO_GATES)
    result = pytester.runpytest(f"--graphnetz-device={device}")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    errors = result.stderr.str()
    assert errors.count("--graphnetz-device") == 1 and device in errors, errors
    assert "collected" not in result.stdout.str()  # no test ran, none failed one by one


# -- values Python's int() and float() read but a user did not mean -------------------------------


@pytest.mark.parametrize(("args", "message"), [
    (["--graphnetz-seeds=1_000"],
     "ERROR: graphnetz: `--graphnetz-seeds` / `graphnetz_seeds`: write seeds with the ASCII "
     "digits 0-9 (no `_` separators), got '1_000'"),
    (["--graphnetz-seeds=\u0663"],        # ARABIC-INDIC DIGIT THREE: int() reads 3
     "ERROR: graphnetz: `--graphnetz-seeds` / `graphnetz_seeds`: write seeds with the ASCII "
     "digits 0-9 (no `_` separators), got '\u0663'"),
    (["--graphnetz-seeds=2..2_0"], "*write seeds with the ASCII digits 0-9*"),
    (["--graphnetz-workers=\u0663"],
     "ERROR: graphnetz: `--graphnetz-workers` must be a whole number of processes written with "
     "the ASCII digits 0-9 (no `_` separators), got '\u0663'"),
    (["--graphnetz-alpha=0.0_5"], "*`--graphnetz-alpha` must be a number written with the ASCII*"),
    (["--graphnetz-device="],
     "ERROR: graphnetz: `--graphnetz-device=` is empty: give auto, cpu, cuda, cuda:i or mps (or "
     "leave the option out for auto)"),
    (["--graphnetz-alpha=1e-320"],       # subnormal: > 0, so (0, 0.5) alone let it through
     "ERROR: graphnetz: `--graphnetz-alpha` 1e-320 is below 1e-06, the smallest α a gate takes "
     "(*); use e.g. 0.001"),
], ids=["seeds-underscore", "seeds-arabic-indic", "adaptive-underscore", "workers-arabic-indic",
        "alpha-underscore", "empty-device", "subnormal-alpha"])
def test_values_int_and_float_would_read_are_usage_errors(
        pytester: pytest.Pytester, args: list[str], message: str) -> None:
    pytester.makepyfile("def test_x(): pass")
    result = pytester.runpytest(*args)
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines([message])


def test_accept_is_command_line_only(pytester: pytest.Pytester) -> None:
    """A committed `graphnetz_accept` would pre-accept that cell's loss on every refresh: the
    key is refused, naming the file and the command-line option to use instead."""
    pytester.makepyprojecttoml('[tool.pytest.ini_options]\ngraphnetz_accept = "karate/GCN"\n')
    pytester.makepyfile("def test_x(): pass")
    result = pytester.runpytest()
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines([
        "ERROR: graphnetz: the ini key `graphnetz_accept` in pyproject.toml is refused: "
        "--graphnetz-accept is command line only: as a committed line it would accept that "
        "cell's loss on every refresh, *; remove the key and pass `--graphnetz-accept "
        "TASK/MODEL` with --graphnetz-update-baselines (or run `graphnetz refresh NODEID "
        "--accept TASK/MODEL`) for the refresh that accepts it"])
    # the option itself still works
    pytester.makepyprojecttoml("[tool.pytest.ini_options]\n")
    assert pytester.runpytest("--graphnetz-update-baselines",
                              "--graphnetz-accept=karate/GCN").ret == 0


@pytest.mark.parametrize("key", ["graphnetz_update_baselines", "graphnetz_force"])
def test_refresh_and_force_are_command_line_only(pytester: pytest.Pytester, key: str) -> None:
    pytester.makepyprojecttoml(f"[tool.pytest.ini_options]\n{key} = true\n")
    pytester.makepyfile("def test_x(): pass")
    result = pytester.runpytest()
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    option = "--graphnetz-" + key.removeprefix("graphnetz_").replace("_", "-")
    result.stderr.fnmatch_lines([
        f"ERROR: graphnetz: the ini key `{key}` in pyproject.toml is refused: {option} is "
        "command line only, so no committed configuration can make CI refresh the baselines "
        f"that gate it; remove the key and pass `{option}` (or run `graphnetz refresh`) when "
        "you mean to"])
    # the option itself still works
    pytester.makepyprojecttoml("[tool.pytest.ini_options]\n")
    assert pytester.runpytest(option).ret == 0


# -- costs seconds each (marked slow): fresh interpreters, subprocess sessions or killed
# processes (the slow tier, tests/README.md) ------------------------------------------------


@pytest.mark.slow
def test_a_device_index_in_superscript_is_a_usage_error(pytester: pytest.Pytester) -> None:
    pytest.importorskip("torch")
    pytester.makepyfile("def test_x(): pass")
    result = pytester.runpytest_subprocess("--graphnetz-device=cuda:²")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(["ERROR: graphnetz: `--graphnetz-device` / `graphnetz_device`: "
                                 "device='cuda:²' is not a device; use 'cuda' or 'cuda:<index>'"])
    assert "INTERNALERROR" not in result.stdout.str() + result.stderr.str()


@pytest.mark.slow
@pytest.mark.parametrize(("value", "message"), [
    ("4294967296", "*'4294967296' asks for 4294967296 seeds; at most 10000 are allowed*"),
    ("0-99999999", "*'0-99999999' asks for 100000000 seeds; at most 10000 are allowed*"),
    ("4294967296,1", "*'4294967296,1' has seed 4294967296; seeds must be below 2**32*"),
    ("4294967290-4294967296", "*has seed 4294967296; seeds must be below 2**32*"),
])
def test_huge_seed_counts_are_usage_errors_at_parse_time(pytester: pytest.Pytester, value: str,
                                                          message: str) -> None:
    pytester.makepyfile("def test_x(): pass")
    result = pytester.runpytest_subprocess(f"--graphnetz-seeds={value}")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines([f"ERROR: graphnetz: `--graphnetz-seeds`*{message}"])
    assert "INTERNALERROR" not in result.stderr.str() + result.stdout.str()


@pytest.mark.slow
@pytest.mark.parametrize(("args", "ini", "message"), [
    (["--graphnetz-workers=abc"], "",
     "ERROR: graphnetz: `--graphnetz-workers` must be a whole number of processes, got 'abc'"),
    (["--graphnetz-alpha=five"], "",
     "ERROR: graphnetz: `--graphnetz-alpha` must be a number, got 'five'"),
    ([], "graphnetz_strict = maybe",
     "ERROR: graphnetz: the ini key `graphnetz_strict` must be true or false*maybe*"),
    ([], "graphnetz_workers = many",
     "ERROR: graphnetz: the ini key `graphnetz_workers` in tox.ini must be a whole number*"),
])
def test_bad_option_values_name_the_option(pytester: pytest.Pytester, args: list[str], ini: str,
                                           message: str) -> None:
    pytester.makeini(f"[pytest]\n{ini}\n")
    pytester.makepyfile("def test_x(): pass")
    result = pytester.runpytest_subprocess(*args)
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines([message])
