"""When the plugin's parts load (the entry module, pytest_graphnetz/plugin/__init__.py): a
session without graphnetz work loads the entry and its declarations only; an option or ini key
of ours, a test that uses our fixtures or marker, or a fixture asked for at run time load the
rest, and what users see (options, ini keys, fixtures, ``-p no:graphnetz``) is unchanged.
Real pytest sessions in fresh processes (pytester), whose conftest lists what loaded.
"""

from __future__ import annotations

import ast

import pytest

from pytest_graphnetz.plugin.declared import OPTIONS

# Written at the session's end: our modules that loaded, and whether the session was built.
CONFTEST = """
import sys


def pytest_unconfigure(config):
    from pytest_graphnetz.plugin import STATE

    state = config.stash.get(STATE, None)
    loaded = sorted(m for m in sys.modules if m.startswith("pytest_graphnetz."))
    with open("loaded.txt", "w") as fh:
        fh.write(repr((loaded, state is not None and state.session is not None)))
"""
PLAIN = "def test_plain():\n    assert 1 + 1 == 2\n"
# -q: the session header (shown without it) reads the settings, so it loads them.
QUIET = ("-q", "-p", "no:cacheprovider", "-p", "no:xdist", "-p", "no:randomly")


def loaded(pytester: pytest.Pytester, *args: str, passed: int = 1) -> tuple[list[str], bool]:
    result = pytester.runpytest_subprocess(*QUIET, *args)
    result.assert_outcomes(passed=passed)
    modules, built = ast.literal_eval((pytester.path / "loaded.txt").read_text())
    return modules, built


def test_a_plain_session_loads_the_entry_and_its_declarations_only(
        pytester: pytest.Pytester) -> None:
    pytester.makeconftest(CONFTEST)
    pytester.makepyfile(test_only_plain=PLAIN)
    assert loaded(pytester) == (["pytest_graphnetz.plugin", "pytest_graphnetz.plugin.declared"],
                                False)
    # An ini key left at the value a session without it reads is no work either.
    pytester.makeini("[pytest]\ngraphnetz_strict = false\n")
    assert loaded(pytester)[1] is False


@pytest.mark.parametrize("how", ["option", "ini", "override", "marker", "fixture", "late"])
def test_graphnetz_work_loads_the_session(pytester: pytest.Pytester, how: str) -> None:
    pytester.makeconftest(CONFTEST)
    args: tuple[str, ...] = ()
    if how == "option":
        args = ("--graphnetz-seeds=3",)
    elif how == "ini":
        pytester.makeini("[pytest]\ngraphnetz_seeds = 3\n")
    elif how == "override":
        args = ("-o", "graphnetz_alpha=0.01")
    if how == "marker":
        pytester.makepyfile(test_loading_marked="""
            import pytest

            @pytest.mark.graphnetz
            def test_marked():
                pass
        """)
    elif how == "fixture":  # resolves though the session was not built when pytest collected
        pytester.makepyfile(test_loading_fixture="""
            def test_handle(graphnetz_baseline):
                assert graphnetz_baseline().path.name == "test_handle.json"
        """)
    elif how == "late":  # asked for by name at run time: the session is built then
        pytester.makepyfile(test_loading_late="""
            def test_late(request):
                handle = request.getfixturevalue("graphnetz_baseline")("mine")
                assert handle.path.name == "mine.json"
        """)
    else:
        pytester.makepyfile(test_loading_plain=PLAIN)
    modules, built = loaded(pytester, *args)
    assert built and "pytest_graphnetz.plugin.session" in modules


def test_a_bad_ini_value_stops_the_run_before_any_test(pytester: pytest.Pytester) -> None:
    pytester.makeini("[pytest]\ngraphnetz_workers = many\n")
    pytester.makepyfile(test_loading_bad=PLAIN)
    result = pytester.runpytest_subprocess(*QUIET)
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(["*the ini key `graphnetz_workers` in tox.ini must be a whole *"])
    # A command-line-only key is refused whatever it holds, `false` included.
    pytester.makeini("[pytest]\ngraphnetz_update_baselines = false\n")
    result = pytester.runpytest_subprocess(*QUIET)
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(["*`graphnetz_update_baselines`* is refused*"])


def test_help_fixtures_and_no_graphnetz_are_unchanged(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(test_loading_plain=PLAIN)
    shown = pytester.runpytest_subprocess(*QUIET, "--help").stdout.str()
    assert all(f"--graphnetz-{o.name}" in shown for o in OPTIONS)
    assert all(o.dest in shown for o in OPTIONS)  # the ini keys
    fixtures = pytester.runpytest_subprocess(*QUIET, "--fixtures").stdout.str()
    assert "graphnetz_run" in fixtures and "graphnetz_baseline(name=None)" in fixtures
    off = pytester.runpytest_subprocess(*QUIET, "-p", "no:graphnetz", "--help").stdout.str()
    assert "--graphnetz-seeds" not in off
    pytester.runpytest_subprocess(*QUIET, "-p", "no:graphnetz").assert_outcomes(passed=1)
