"""Adaptive seeds end to end: real pytest sessions with ``--graphnetz-seeds=5..10``.

The toy project is the one of ``test_plugin_gates.py`` (a 120-node block model, a two-layer GCN,
40 epochs), whose trainer appends a line to ``trained.log`` per call: how many triples each
session trains is counted in the training loop itself.
"""

from __future__ import annotations

import re

import pytest

torch = pytest.importorskip("torch")
pytest.importorskip("torch_geometric.nn")
import pytest_graphnetz.gates  # noqa: E402,F401
import pytest_graphnetz.runner  # noqa: E402,F401
import pytest_graphnetz.runner.training.node  # noqa: E402,F401
from tests.helpers.sessions import (  # noqa: E402
    GATE_TEST,  # noqa: E402
    TOY,
    gates_table,  # noqa: E402
    trained,
)

ADAPTIVE = "--graphnetz-seeds=5..10"  # looks at 5 and 10 seeds (5..20 costs 2x the CPU)


@pytest.fixture
def project(pytester: pytest.Pytester) -> pytest.Pytester:
    pytester.makepyfile(toy=TOY.format(hidden=16, lr=0.05), test_model=GATE_TEST)
    refresh = pytester.runpytest(ADAPTIVE, "--graphnetz-update-baselines")
    refresh.assert_outcomes(passed=1)
    assert trained(pytester) == 10, "a refresh in adaptive mode trains the baseline's MAX seeds"
    return pytester


def _cell(output: str) -> tuple[str, str]:
    """The verdict and the n column (``used/MAX``) of the single gate row."""
    match = re.search(r"(IDENTICAL|NOT WORSE|INCONCLUSIVE|REGRESSED|BETTER)\s.*?(\d+/10)",
                      gates_table(output))
    assert match, gates_table(output)
    return match.group(1), match.group(2)


def test_adaptive_session_stops_each_cell_at_its_look(project: pytest.Pytester) -> None:
    # unchanged model: IDENTICAL at the first look, nothing trained (the cache holds seeds 0-4)
    same = project.runpytest(ADAPTIVE)
    same.assert_outcomes(passed=1)
    assert trained(project) == 10
    assert _cell(same.stdout.str()) == ("IDENTICAL", "5/10")
    same.stdout.fnmatch_lines(["*adaptive seeds: 5 seed-trainings saved against fixed MAX*"])

    # clearly broken (learning rate ÷ 20): REGRESSED at the first look, 5 triples trained
    project.makepyfile(toy=TOY.format(hidden=16, lr=0.0025))
    broken = project.runpytest(ADAPTIVE)
    broken.assert_outcomes(failed=1)
    assert trained(project) == 15
    out = broken.stdout.str()
    assert _cell(out) == ("REGRESSED", "5/10")
    assert re.search(r"adaptive seeds: stopped at look 1 of 2 \(5/10 seeds\), 5 "
                     r"seed-trainings saved against fixed 10", out)
    # under xdist the same verdict, every triple from the shared cache (one test: one worker
    # is all it can use)
    parallel = project.runpytest(ADAPTIVE, "-n", "1")
    parallel.assert_outcomes(failed=1)
    assert trained(project) == 15
    assert _cell(parallel.stdout.str()) == ("REGRESSED", "5/10")

    # borderline (learning rate ÷ 5: one of the first five seeds collapses, the other four
    # barely move): neither boundary at 5 seeds, so the cell trains the next look's 5
    project.makepyfile(toy=TOY.format(hidden=16, lr=0.01))
    border = project.runpytest(ADAPTIVE)
    border.assert_outcomes(passed=1)
    assert _cell(border.stdout.str())[1] == "10/10", border.stdout.str()
    assert trained(project) == 25, "the open cell trains its next look's seeds, once each"


def test_parse_adaptive_seeds() -> None:
    from pytest_graphnetz.plugin.options import parse_adaptive, parse_seeds

    assert parse_adaptive("5..20") == (5, 20)
    assert parse_seeds("5..20") == tuple(range(20))
    assert parse_adaptive("10") is None and parse_adaptive("3-7") is None
    # one reader with run_adaptive: one look (5..5) is a schedule, MIN 2 and a MAX off the
    # doublings are refused at session start, not in every adaptive gate
    assert parse_adaptive("5..5") == (5, 5)
    for bad in ("20..5", "1..8", "2..20", "a..b", "5.."):
        with pytest.raises(ValueError, match=r"adaptive seeds are MIN\.\.MAX"):
            parse_adaptive(bad)
    with pytest.raises(ValueError, match=r"5\.\.30: MAX must be a look of the schedule "
                                         r"5→10→20→40 .* use 5\.\.20 or 5\.\.40"):
        parse_adaptive("5..30")


def test_a_bad_adaptive_spec_is_a_usage_error(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(test_x="def test_x():\n    pass\n")
    result = pytester.runpytest("--graphnetz-seeds=20..5")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(["*adaptive seeds are MIN..MAX with 3 <= MIN <= MAX*20..5*"])
    for spec in ("2..20", "5..30"):   # run_adaptive refuses them: so does the session start
        result = pytester.runpytest(f"--graphnetz-seeds={spec}")
        assert result.ret == pytest.ExitCode.USAGE_ERROR, spec
        assert "graphnetz: `--graphnetz-seeds` / `graphnetz_seeds`: adaptive seeds" in \
            result.stderr.str()
