"""How this suite is split (tests/conftest.py): the tiers are the folders tests/fast and
tests/slow, every test file lies in one of them under a name no other test file has, and
``-m "not slow"`` selects exactly tests/fast. (That ``-n`` hands out whole files is
tests/slow/test_suite_scheduling_slow.py.)"""

from __future__ import annotations

import re
from collections import Counter
from pathlib import Path

import pytest

TESTS = Path(__file__).resolve().parents[1]
TIERS = ("fast", "slow")


def test_every_test_file_lies_in_a_tier_folder_under_a_name_of_its_own():
    files = sorted(p for p in TESTS.rglob("test_*.py") if "__pycache__" not in p.parts)
    outside = [str(p.relative_to(TESTS)) for p in files if p.parent.name not in TIERS
               or p.parent.parent != TESTS]
    assert not outside, f"test files outside tests/fast and tests/slow: {outside}"
    # pytest's default import mode imports a test file by its bare name (no __init__.py here)
    twice = [name for name, n in Counter(p.name for p in files).items() if n > 1]
    assert not twice, f"test files sharing a name across tests/fast and tests/slow: {twice}"
    assert not list(TESTS.glob("*/conftest.py")), (
        "a tier's own conftest.py would replace tests/conftest.py as the module `conftest` "
        "that test files import their helpers from")


def test_not_slow_selects_the_fast_folder_and_slow_the_slow_one(pytester: pytest.Pytester):
    # The suite's conftest without its helper plugins (the scratch session cannot import them).
    conftest = (TESTS / "conftest.py").read_text(encoding="utf-8")
    pytester.makeconftest(re.sub(r"(?ms)^pytest_plugins = \[.*?^\]\n", "", conftest))
    pytester.makeini('[pytest]\nmarkers =\n    slow: the slow tier\n')
    for tier in TIERS:
        (pytester.path / tier).mkdir()
        (pytester.path / tier / f"test_{tier}_one.py").write_text(
            "import pytest\n\n@pytest.mark.parametrize('i', [1, 2])\n"
            "def test_a(i):\n    pass\n")
    # In a subprocess: the scratch conftest is a second module named `conftest`.
    fast = pytester.runpytest_subprocess("-m", "not slow", "-p", "no:cacheprovider", "-v")
    fast.assert_outcomes(passed=2, deselected=2)
    fast.stdout.fnmatch_lines(["fast/test_fast_one.py::test_a?1? PASSED*"])
    slow = pytester.runpytest_subprocess("-m", "slow", "-p", "no:cacheprovider", "-v")
    slow.assert_outcomes(passed=2, deselected=2)
    slow.stdout.fnmatch_lines(["slow/test_slow_one.py::test_a?1? PASSED*"])


# -- costs seconds each (marked slow) ----------------------------------------------------------
# ``-n`` hands out whole files (tests/conftest.py), so a file's module-scoped fixture is
# built once: checked in a real ``-n 2`` session.


# A scratch session with this suite's scheduler hook (and none of its fixtures).
CONFTEST = f"""
import importlib.util

spec = importlib.util.spec_from_file_location("suite_conftest", {str(TESTS / "conftest.py")!r})
suite = importlib.util.module_from_spec(spec)
spec.loader.exec_module(suite)
pytest_xdist_make_scheduler = suite.pytest_xdist_make_scheduler
"""


@pytest.mark.slow
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
