"""The schedule is part of the baseline: a refresh writes the first look, α and ρ into the file,
and a run under another schedule is refused in one line naming both and the fix, through every
entry point (``first_look=`` and ``alpha=`` of the gates, ``graphnetz compare --first-look``,
adaptive ``--graphnetz-seeds=MIN..MAX`` in a project whose ini declares no seeds), unless the run
is judged alone. A baseline written before schedules were stored binds the default."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from pytest_graphnetz import BenchmarkReport, assert_not_worse
from pytest_graphnetz.gates.refreshing.baselines import BaselineHandle, read_baseline
from pytest_graphnetz.gates.verdicts.values import GateRefusal
from pytest_graphnetz.stats.boundaries import LookSchedule

BASE = 0.8 + 0.02 * np.random.default_rng(42).standard_normal(20)
CAND = BASE + 0.02 + 0.001 * np.random.default_rng(7).standard_normal(20)   # BETTER


def report(values: np.ndarray) -> BenchmarkReport:
    return BenchmarkReport.from_arrays(np.asarray(values).reshape(1, 1, -1), tasks=["toy"],
                                       models=["GCN"], seeds=range(len(values)),
                                       metric="accuracy")


def refreshed(tmp_path, **schedule) -> str:
    path = tmp_path / "base.json"
    assert_not_worse(report(BASE), BaselineHandle(path, update=True), **schedule)
    return str(path)


def test_a_refresh_writes_its_schedule_and_another_is_refused_naming_both(tmp_path) -> None:
    path = refreshed(tmp_path, first_look=10, alpha=0.05)
    assert json.loads(Path(path).read_text())["schedule"] == {"first_look": 10, "alpha": 0.05,
                                                         "rho": 0.85}
    assert read_baseline(path).schedule == LookSchedule(10, 0.05, 0.85)
    assert_not_worse(report(CAND), path)   # the same schedule: judged
    for asked, shown in (({"first_look": 11}, "first look 11 seeds, α 0.05, ρ 0.85"),
                         ({"alpha": 0.1}, "first look 10 seeds, α 0.1, ρ 0.85")):
        with pytest.raises(GateRefusal) as refused:
            assert_not_worse(report(CAND), path, **asked)
        line = str(refused.value)
        assert "\n" not in line
        assert "binds the schedule first look 10 seeds, α 0.05, ρ 0.85" in line
        assert f"this run asks {shown}" in line
        assert "refresh the baseline under the new one" in line
        assert "--graphnetz-single-run" in line
        # judged alone on request: not bound
        (v,) = assert_not_worse(report(CAND), path, rerun_safe=False, **asked)
        assert v.look is not None and v.look.alone
    # refreshed under the new schedule, the new one is the baseline's
    path = refreshed(tmp_path, first_look=5)
    assert read_baseline(path).schedule == LookSchedule(5, 0.05, 0.85)
    assert_not_worse(report(CAND), path, first_look=5)
    with pytest.raises(GateRefusal, match="binds the schedule first look 5 seeds"):
        assert_not_worse(report(CAND), path)


def test_a_baseline_written_before_schedules_binds_the_default(tmp_path) -> None:
    path = refreshed(tmp_path)
    data = json.loads(Path(path).read_text())
    del data["schedule"]
    Path(path).write_text(json.dumps(data))
    assert read_baseline(path).schedule == LookSchedule()
    assert_not_worse(report(CAND), path)
    with pytest.raises(GateRefusal, match="binds the schedule first look 10 seeds, α 0.05"):
        assert_not_worse(report(CAND), path, first_look=5)


@pytest.mark.parametrize("bad", [{"first_look": 1, "alpha": 0.05, "rho": 0.85},
                                 {"first_look": 10, "alpha": 0.05},
                                 {"first_look": 10, "alpha": True, "rho": 0.85},
                                 {"first_look": 10, "alpha": 0.05, "rho": 1.5}])
def test_a_malformed_schedule_is_a_format_error_naming_it(tmp_path, bad) -> None:
    from pytest_graphnetz.gates.refreshing.baselines import BaselineFormatError

    path = refreshed(tmp_path)
    data = json.loads(Path(path).read_text())
    data["schedule"] = bad
    Path(path).write_text(json.dumps(data))
    with pytest.raises(BaselineFormatError, match="schedule"):
        read_baseline(path)


def test_compare_first_look_is_bound_to_the_baseline(tmp_path, capsys) -> None:
    from pytest_graphnetz.cli.main import main

    base = refreshed(tmp_path)
    cand = tmp_path / "cand.json"
    report(CAND).to_json(cand)
    assert main(["compare", base, str(cand)]) == 0
    capsys.readouterr()
    assert main(["compare", base, str(cand), "--first-look", "11"]) == 2
    err = capsys.readouterr().err
    assert "binds the schedule first look 10 seeds" in err and "asks first look 11" in err
    assert main(["compare", base, str(cand), "--first-look", "11", "--single-run"]) == 0
    assert "judged alone at α" in capsys.readouterr().out


GATE = """
import numpy as np
from pytest_graphnetz import BenchmarkReport, assert_not_worse

def test_model(graphnetz_baseline):
    x = 0.8 + 0.02 * np.sin(7 * np.arange(20))
    r = BenchmarkReport.from_arrays(x[None, None], tasks=["toy"], models=["GCN"],
                                    seeds=range(20), metric="accuracy")
    assert_not_worse(r, graphnetz_baseline())
"""


def test_adaptive_min_without_an_ini_is_bound_to_the_baseline(pytester: pytest.Pytester
                                                              ) -> None:
    pytester.makepyfile(test_model=GATE)
    run = ("-p", "no:cacheprovider", "--graphnetz-json=v.json")
    pytester.runpytest(*run, "--graphnetz-update-baselines").assert_outcomes(passed=1)
    pytester.runpytest(*run, "--graphnetz-seeds=20").assert_outcomes(passed=1)
    result = pytester.runpytest(*run, "--graphnetz-seeds=5..20")
    result.assert_outcomes(failed=1)
    (row,) = json.loads((pytester.path / "v.json").read_text())["rows"]
    assert row["verdict"] == "REFUSED"
    assert ("binds the schedule first look 10 seeds, α 0.05, ρ 0.85; this run asks first "
            "look 5 seeds") in row["note"]
    pytester.runpytest(*run, "--graphnetz-seeds=5..20", "--graphnetz-single-run"
                       ).assert_outcomes(passed=1)
