"""Baseline replicates: a refresh with ``--graphnetz-baseline-replicates=R`` trains each seed R
times (its run and R - 1 salted reruns), the file keeps them reviewable, and the gate pairs each
candidate seed with their mean; the design's rates hold at every R (simulation)."""

from __future__ import annotations

import json

import numpy as np
import pytest
from scipy import stats as st

torch = pytest.importorskip("torch")
pytest.importorskip("torch_geometric.nn")
from test_leak_guard import LEAKY_PROJECT  # noqa: E402

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
from pytest_graphnetz.gates.refreshing.replicates import ReplicatedReport, Replicates  # noqa: E402

ALPHA, DELTA = 0.05, 0.01


def one_look(d: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """REGRESSED and NOT WORSE of the one-sided paired t at ALPHA, δ DELTA, per row of d."""
    n = d.shape[1]
    mean, se = d.mean(axis=1), d.std(axis=1, ddof=1) / np.sqrt(n)
    t = st.t.ppf(1 - ALPHA, n - 1)
    regressed = mean + t * se < 0
    return regressed, ~regressed & (mean - t * se > -DELTA)


@pytest.mark.parametrize("r", [1, 2, 4])
def test_the_design_rates_hold_with_r_replicates(r: int) -> None:
    """20,000 pull requests of 10 seeds, each seed's runs sharing its data and split (a seed
    component of sd 2 points, run noise 1 point): d_s = cand_s − mean of the R baseline runs
    are iid, so the t test keeps false REGRESSED and wrong NOT WORSE (a true drop of δ) at α;
    and the paired sd is √(1 + 1/R) run sds."""
    rng = np.random.default_rng(r)
    trials, n = 20_000, 10
    tolerance = 3 * np.sqrt(ALPHA * (1 - ALPHA) / trials)
    seed = rng.normal(0, 0.02, (trials, n, 1))
    base = (0.8 + seed + rng.normal(0, 0.01, (trials, n, r))).mean(axis=2)
    cand = 0.8 + seed[..., 0] + rng.normal(0, 0.01, (trials, n))
    d = cand - base
    assert np.std(d) == pytest.approx(0.01 * np.sqrt(1 + 1 / r), rel=0.02)
    regressed, _ = one_look(d)
    assert regressed.mean() <= ALPHA + tolerance
    assert regressed.mean() >= ALPHA - tolerance   # exact, not conservative: iid normal d_s
    _, not_worse = one_look(d - DELTA)
    assert not_worse.mean() <= ALPHA + tolerance


def _pull_requests(correlation: float, drop: float) -> tuple[np.ndarray, np.ndarray,
                                                              np.ndarray]:
    """10,000 pull requests of 10 seeds as flat per-seed arrays (candidate, the baseline's own
    run, its two salted reruns): a seed component of sd 2 points, run noise 1 point, the
    candidate's noise correlated ``correlation`` with the own run's. The same draws always."""
    rng = np.random.default_rng(5)
    m = 10_000 * 10
    seed = rng.normal(0.8, 0.02, m)
    noise = rng.normal(0, 0.01, (m, 4))
    cand = seed - drop + correlation * noise[:, 0] + np.sqrt(1 - correlation**2) * noise[:, 3]
    return cand, seed + noise[:, 0], seed[:, None] + noise[:, 1:3]


def _detected(d: np.ndarray) -> float:
    """Share of the pull requests (rows of 10 seeds) scipy's one-sided t test finds worse."""
    d = d.reshape(-1, 10)
    return float(np.mean(st.ttest_1samp(d, 0.0, axis=1, alternative="less").pvalue < ALPHA))


@pytest.mark.parametrize("correlation, drop", [(0.8, 0.006), (0.0, 0.012)])
def test_replicates_never_cost_power(correlation: float, drop: float) -> None:
    """Whether the candidate keeps the baseline run's random stream (correlation 0.8: a
    learning-rate tweak under the same seed) or not (0), pairing through the gate's
    ``Replicates.means`` at R = 2 and 3 detects a drop at least as often as R = 1 (a drop
    R = 1 detects 60-90% of the time) and keeps false REGRESSED at α. A plain mean of the R
    runs would lose power in the first case."""
    tolerance = 3 * np.sqrt(ALPHA * (1 - ALPHA) / 10_000)
    for shift in (drop, 0.0):
        cand, own, salted = _pull_requests(correlation, shift)
        rates = {1: _detected(cand - own)}
        for r in (2, 3):
            reps = Replicates(tuple(range(len(own))), {"final": salted[:, :r - 1]})
            rates[r] = _detected(cand - reps.means({"final": own})["final"])
        if shift:
            assert 0.6 < rates[1] < 0.9
            assert rates[2] >= rates[1] and rates[3] >= rates[1]
            if correlation:
                assert _detected(cand - (own + salted[:, 0]) / 2) < rates[1] - 0.1
        else:
            assert max(rates.values()) <= ALPHA + tolerance


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
