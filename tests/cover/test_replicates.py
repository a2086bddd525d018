"""Baseline replicates: a refresh with ``--graphnetz-baseline-replicates=R`` trains each seed R
times (its run and R - 1 salted reruns), the file keeps them reviewable, and the gate pairs each
candidate seed with their mean. The design's rates at every R, by simulation:
tests/quality/test_replicate_rates.py."""

from __future__ import annotations

import json

import numpy as np
import pytest

torch = pytest.importorskip("torch")
pytest.importorskip("torch_geometric.nn")
import pytest_graphnetz.gates  # noqa: E402,F401
import pytest_graphnetz.runner  # noqa: E402,F401
import pytest_graphnetz.runner.training.node  # noqa: E402,F401
from pytest_graphnetz import BenchmarkReport, assert_not_worse  # noqa: E402
from pytest_graphnetz.base.text import fmt_num  # noqa: E402
from pytest_graphnetz.gates.refreshing.baselines import (  # noqa: E402
    BaselineHandle,
    read_baseline,
    write_baseline,
)
from pytest_graphnetz.gates.refreshing.replicates import ReplicatedReport  # noqa: E402
from tests.helpers.sessions import LEAKY_PROJECT  # noqa: E402


def _report(values, seeds=range(4), val=None) -> BenchmarkReport:
    X = np.array(values, dtype=float).reshape(1, 1, -1)
    return BenchmarkReport.from_arrays(X, tasks=["karate"], models=["GCN"], seeds=seeds,
                                       metric="accuracy")


def test_the_file_keeps_r_values_per_seed_and_the_gate_pairs_with_their_mean(tmp_path) -> None:
    own = [0.80, 0.82, 0.79, 0.81]
    salted = [_report([0.81, 0.80, 0.80, 0.83]), _report([0.79, 0.84, 0.78, 0.80])]
    path = tmp_path / "b.json"
    candidate = ReplicatedReport(_report(own), salted)
    write_baseline(path, candidate, {}, replicates=candidate.replicates)
    cell = json.loads(path.read_text())["models"]["GCN"]["tasks"]["karate"]["replicates"]
    assert cell["salts"] == [1, 2]
    assert cell["runs"]["final"] == [[0.81, 0.79], [0.8, 0.84], [0.8, 0.78], [0.83, 0.8]]
    # the own run weighted (1 + 0.8 × 2)/3, the salted reruns' mean the rest
    mean = (2.6 * np.array(own) + 0.4 * np.mean([[0.81, 0.80, 0.80, 0.83],
                                                  [0.79, 0.84, 0.78, 0.80]], axis=0)) / 3
    assert np.allclose(cell["mean"]["final"], mean)
    assert cell["weight"] == pytest.approx(2.6 / 3, abs=1e-6)
    stored = read_baseline(path)
    # an unchanged model pairs with its own run: IDENTICAL stays IDENTICAL
    assert str(assert_not_worse(_report(own), path, rerun_safe=False)[0].verdict) == "IDENTICAL"
    # a changed one pairs with the weighted mean of the 3 runs
    changed = _report([0.81, 0.82, 0.80, 0.82])
    paired, note = stored.paired_with(changed)
    assert np.allclose(paired.values("karate", "GCN"), mean)
    assert note == (" (each baseline seed: 0.87 × its own run + 0.13 × the mean of its 2 "
                    "salted reruns)")
    [verdict] = assert_not_worse(changed, path, rerun_safe=False)
    assert verdict.baseline.mean == pytest.approx(mean.mean())
    assert np.allclose(verdict.comparison.evidence.mean_diff,
                       np.mean(changed.values("karate", "GCN") - mean))
    # a refresh without replicates drops them
    from pytest_graphnetz.gates.api import assert_not_worse as gate

    gate(_report([0.82, 0.83, 0.80, 0.82]), BaselineHandle(path, update=True), rerun_safe=False)
    assert not read_baseline(path).replicates


def test_a_refresh_with_replicates_through_pytest(pytester: pytest.Pytester,
                                                  monkeypatch: pytest.MonkeyPatch) -> None:
    pytester.makepyfile(test_leak=LEAKY_PROJECT)
    monkeypatch.setenv("PLANT_LEAK", "0")
    common = ["-o", "graphnetz_seeds=4", "--graphnetz-no-cache", "--graphnetz-device=cpu"]
    result = pytester.runpytest(*common, "--graphnetz-update-baselines",
                                "-o", "graphnetz_baseline_replicates=3")   # the ini key
    result.assert_outcomes(passed=1)
    assert "12 trained" in result.stdout.str()    # 4 seeds × 3 runs
    path = pytester.path / "baselines" / "test_leak" / "test_mlp.json"
    cell = json.loads(path.read_text())["models"]["MLP"]["tasks"]["noisy"]
    reps = cell["replicates"]
    assert reps["salts"] == [1, 2] and reps["seeds"] == [0, 1, 2, 3]
    assert [len(row) for row in reps["runs"]["final"]] == [2, 2, 2, 2]
    assert len(reps["validation"]["best_val"]) == 4
    own = np.array(cell["values"]["final"])
    w = 2.6 / 3
    assert np.allclose(reps["mean"]["final"],
                       w * own + (1 - w) * np.mean(reps["runs"]["final"], axis=1))
    # the unchanged model: IDENTICAL against its own run
    verdicts = pytester.path / "v.json"
    same = pytester.runpytest(*common, f"--graphnetz-json={verdicts}")
    same.assert_outcomes(passed=1)
    assert json.loads(verdicts.read_text())["rows"][0]["verdict"] == "IDENTICAL"
    # a changed model (a wider hidden layer): paired with each seed's weighted mean
    pytester.makepyfile(test_leak=LEAKY_PROJECT.replace("Linear(i, 64)", "Linear(i, 65)")
                        .replace("Linear(64, o)", "Linear(65, o)"))
    changed = pytester.runpytest(*common, f"--graphnetz-json={verdicts}")
    changed.assert_outcomes(passed=1)
    row = json.loads(verdicts.read_text())["rows"][0]
    assert row["verdict"] != "IDENTICAL"
    assert row["display"]["baseline"].startswith(fmt_num(float(np.mean(reps["mean"]["final"]))))


def test_replicates_must_be_a_positive_count(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(test_x="def test_x(): pass")
    result = pytester.runpytest("--graphnetz-baseline-replicates=0")
    assert result.ret != 0
    result.stderr.fnmatch_lines(["*`--graphnetz-baseline-replicates` must be >= 1*"])
