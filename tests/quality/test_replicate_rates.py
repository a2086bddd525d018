"""Replicates by simulation: the design's error rates hold with r replicates per seed, and
averaging replicates never costs power against one value per seed."""

from __future__ import annotations

import numpy as np
import pytest
from scipy import stats as st

torch = pytest.importorskip("torch")
pytest.importorskip("torch_geometric.nn")

import pytest_graphnetz.gates  # noqa: E402,F401
import pytest_graphnetz.runner  # noqa: E402,F401
import pytest_graphnetz.runner.training.node  # noqa: E402,F401
from pytest_graphnetz.gates.refreshing.replicates import Replicates  # noqa: E402

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
