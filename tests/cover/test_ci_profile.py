"""CI is red only for a reason: where ``CI`` is set, tests/conftest.py loads a derandomised
Hypothesis profile, so two CI runs of a property test draw the same examples, keep no example
database between them (a saved failure would otherwise replay on every later run) and print
the blob that reproduces a failure."""

from __future__ import annotations

import pytest

from tests.helpers.sessions import suite_conftest


def test_ci_runs_draw_the_same_examples_and_keep_no_database(pytester: pytest.Pytester,
                                                             monkeypatch: pytest.MonkeyPatch
                                                             ) -> None:
    pytester.makeconftest(suite_conftest())
    pytester.makepyfile(test_drawn="""
        from hypothesis import given, settings, strategies as st

        @settings(max_examples=20)
        @given(st.integers(0, 2**62))
        def test_draw(x):
            print("drawn", x)
            assert x < 1000
    """)
    monkeypatch.setenv("CI", "1")
    runs = []
    for _ in range(2):
        result = pytester.runpytest_subprocess("-s", "-p", "no:cacheprovider")
        result.assert_outcomes(failed=1)
        result.stdout.fnmatch_lines(["*@reproduce_failure*"])
        runs.append([line for line in result.outlines if "drawn" in line])
    assert runs[0] == runs[1] and len(runs[0]) >= 2
    # hypothesis still caches the constants of the code under test there; no example is saved
    assert not (pytester.path / ".hypothesis" / "examples").exists()
