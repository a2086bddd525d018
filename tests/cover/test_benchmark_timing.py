"""The interval the timing benchmarks print for the median of their per-round ratios
(``benchmarks/_timing.py``), against scipy's binomial distribution and by simulation."""

from __future__ import annotations

import importlib.util
import math
from pathlib import Path

import numpy as np
import pytest
from scipy.stats import binom

SCRIPT = Path(__file__).resolve().parents[2] / "benchmarks" / "_timing.py"


@pytest.fixture(scope="module")
def timing():
    spec = importlib.util.spec_from_file_location("graphnetz_bench_timing", SCRIPT)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.mark.parametrize("n", [6, 9, 11, 15, 20, 31, 50])
def test_the_widest_order_statistics_whose_binomial_coverage_holds(timing, n):
    """Round i's ratio is i + 1, so the interval's ends name the order statistics chosen: k is
    the largest with 1 - 2 P(Binomial(n, 1/2) <= k - 1) >= 0.95 (scipy's cdf)."""
    times = {"a": [float(i + 1) for i in range(n)], "b": [1.0] * n}
    low, high = timing.ratio_interval(times, "a", "b")
    k = int(low)
    assert high == n + 1 - k
    assert 1 - 2 * binom.cdf(k - 1, n, 0.5) >= 0.95
    assert 1 - 2 * binom.cdf(k, n, 0.5) < 0.95


def test_too_few_rounds_give_no_interval(timing):
    low, high = timing.ratio_interval({"a": [1.0] * 5, "b": [1.0] * 5}, "a", "b")
    assert (low, high) == (-math.inf, math.inf)


def test_the_interval_covers_the_median_in_95_percent_of_runs(timing):
    """Skewed ratios (lognormal, true median 1.0), 11 rounds, 4,000 simulated runs."""
    rng = np.random.default_rng(59)
    covered = 0
    for _ in range(4000):
        ratios = np.exp(rng.normal(0.0, 0.1, 11))
        low, high = timing.ratio_interval({"a": list(ratios), "b": [1.0] * 11}, "a", "b")
        covered += low <= 1.0 <= high
    # exact coverage at n = 11 is 0.9883; 4,000 runs put 0.95 far below any plausible count
    assert covered / 4000 > 0.97
