"""The leak guard's false flags by simulation: on genuine improvements (test and validation
gain alike) the validation rule flags at most at its level, and the spread rule, for a cell
without validation, allows for the error of the seed sd (against scipy's χ²)."""

from __future__ import annotations

import numpy as np
import pytest

from pytest_graphnetz.gates.verdicts.leak import LEVEL, SPREAD_SDS, leak_suspicion


@pytest.mark.parametrize("n", [5, 10, 20])
def test_the_spread_rule_allows_for_the_error_of_the_seed_sd(n: int) -> None:
    """A genuine gain of 7.5 seed sds (the Cora dropout fix) in a cell without validation:
    the spread rule flags it only when the sample sd falls below 0.75 σ over the 95% bound's
    factor, which χ² on n − 1 degrees of freedom puts at P(χ²_{n−1} < 0.5625·χ²_{0.05, n−1})
    (scipy); 20,000 simulated cells match it and stay under 5%. A plain 10-sd rule on the
    sample sd flags it in 17-31% of cells at 10 and 5 seeds."""
    from scipy import stats as st

    rng = np.random.default_rng(n)
    trials, sigma = 20_000, 0.01
    base = rng.normal(0.8, sigma, (trials, n))
    gain = np.full(n, 7.5 * sigma)
    flags = np.mean([leak_suspicion(gain, None, base_test=b) is not None for b in base])
    expected = st.chi2.cdf(0.5625 * st.chi2.ppf(0.05, n - 1), n - 1)
    assert flags == pytest.approx(expected, abs=4 * np.sqrt(expected / trials) + 1e-4)
    assert flags <= 0.05
    if n < 20:   # the sample sd alone would flag it often
        assert np.mean(7.5 * sigma > SPREAD_SDS * base.std(axis=1, ddof=1)) > 0.1


def test_the_validation_rule_flags_a_genuine_gain_at_most_at_its_level() -> None:
    """20,000 simulated genuine improvements (test and validation gain alike, correlated
    noise): the guard's false-flag rate stays within its level (one-sided t at LEVEL)."""
    rng = np.random.default_rng(1)
    trials, n = 20_000, 10
    cov = [[1e-4, 3e-5], [3e-5, 2e-4]]
    draws = rng.multivariate_normal([0.02, 0.02], cov, size=(trials, n))
    base = rng.normal(0.8, 0.015, (trials, n))
    flags = sum(leak_suspicion(d[:, 0], d[:, 1], base_test=b) is not None
                for d, b in zip(draws, base, strict=True))
    assert flags / trials <= LEVEL + 3 * np.sqrt(LEVEL / trials)
