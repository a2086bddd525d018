"""``-n`` hands out whole files (tests/conftest.py), so a file's module-scoped fixture is
built once: checked in a real ``-n 2`` session."""

from __future__ import annotations

from pathlib import Path

import pytest

TESTS = Path(__file__).resolve().parents[1]

# A scratch session with this suite's scheduler hook (and none of its fixtures).
CONFTEST = f"""
import importlib.util

spec = importlib.util.spec_from_file_location("suite_conftest", {str(TESTS / "conftest.py")!r})
suite = importlib.util.module_from_spec(spec)
spec.loader.exec_module(suite)
pytest_xdist_make_scheduler = suite.pytest_xdist_make_scheduler
"""


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
