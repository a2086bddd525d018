"""How this suite is split (tests/conftest.py): the slow tier's lists name real files and tests
and `-m "not slow"` leaves out exactly those, and ``-n`` hands out whole files, so a file's
module-scoped fixture is built once."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest
from conftest import SLOW_FILES, SLOW_TESTS

TESTS = Path(__file__).resolve().parent

# A scratch session with this suite's own hooks (and none of its fixtures).
CONFTEST = f"""
import importlib.util

spec = importlib.util.spec_from_file_location("suite_conftest", {str(TESTS / "conftest.py")!r})
suite = importlib.util.module_from_spec(spec)
spec.loader.exec_module(suite)
pytest_collection_modifyitems = suite.pytest_collection_modifyitems
pytest_xdist_make_scheduler = suite.pytest_xdist_make_scheduler


def pytest_configure(config):
    config.addinivalue_line("markers", "slow: the suite's slow tier")
"""


def test_each_slow_entry_names_a_test_file_or_test_function_that_exists():
    # A renamed file or test would silently move back into the fast tier.
    for name in sorted(SLOW_FILES):
        assert (TESTS / name).is_file(), f"SLOW_FILES names {name}, which does not exist"
    for entry in sorted(SLOW_TESTS):
        name, function = entry.split("::")
        assert name not in SLOW_FILES, f"SLOW_TESTS names {entry}, whose file is all slow"
        tree = ast.parse((TESTS / name).read_text(encoding="utf-8"))
        functions = {node.name for node in ast.walk(tree) if isinstance(node, ast.FunctionDef)}
        assert function in functions, f"SLOW_TESTS names {entry}, which does not exist"


def test_not_slow_leaves_out_the_listed_files_and_tests_and_keeps_the_rest(
        pytester: pytest.Pytester):
    slow_file = sorted(SLOW_FILES)[0].removesuffix(".py")
    name, function = sorted(SLOW_TESTS)[0].split("::")
    pytester.makeconftest(CONFTEST)
    pytester.makepyfile(**{
        slow_file: "def test_a():\n    pass\n\ndef test_b():\n    pass\n",
        name.removesuffix(".py"): "import pytest\n\n"
        f"@pytest.mark.parametrize('i', [1, 2])\ndef {function}(i):\n    pass\n\n"
        "def test_kept_in_the_fast_tier():\n    pass\n",
    })
    # In a subprocess: the scratch files carry the suite's own module names (test_baselines),
    # which this worker may have imported already.
    fast = pytester.runpytest_subprocess("-m", "not slow", "-p", "no:cacheprovider", "-v")
    fast.assert_outcomes(passed=1, deselected=4)
    fast.stdout.fnmatch_lines(["*::test_kept_in_the_fast_tier PASSED*"])
    pytester.runpytest_subprocess("-m", "slow", "-p", "no:cacheprovider").assert_outcomes(
        passed=4, deselected=1)


def test_dash_n_hands_out_whole_files_so_a_module_fixture_is_built_once(
        pytester: pytest.Pytester):
    pytest.importorskip("xdist")
    built = pytester.path / "built"
    built.mkdir()
    shared = f"""
import os
import pytest


@pytest.fixture(scope="module")
def fixture_of_the_file():
    with open(os.path.join({str(built)!r}, __name__), "a") as f:
        f.write(os.environ["PYTEST_XDIST_WORKER"] + "\\n")


@pytest.mark.parametrize("i", range(6))
def test_uses_it(fixture_of_the_file, i):
    pass
"""
    pytester.makeconftest(CONFTEST)
    pytester.makepyfile(test_one=shared, test_two=shared)
    result = pytester.runpytest_inprocess("-n", "2", "-p", "no:cacheprovider")
    result.assert_outcomes(passed=12)
    for module in ("test_one", "test_two"):
        # One line: one worker built it (xdist's default, one test at a time, builds it twice).
        assert len((built / module).read_text().split()) == 1, module
