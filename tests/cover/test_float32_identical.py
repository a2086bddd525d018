"""Rounding is not evidence: an unchanged model whose per-seed values went through
float32 reads IDENTICAL through the real gate in every trial, and a real difference far above
float32's resolution is still tested."""

from __future__ import annotations

import numpy as np
import pytest

from pytest_graphnetz import BenchmarkReport
from pytest_graphnetz.gates import compare_reports

SEEDS = list(range(10))
CELLS = 100   # cells (trials) per gate call


def _reports(base: np.ndarray, cand: np.ndarray, metric: str,
             ) -> tuple[BenchmarkReport, BenchmarkReport]:
    models = [f"m{i}" for i in range(base.shape[0])]
    return tuple(BenchmarkReport.from_arrays(x[None], tasks=["t"], models=models, seeds=SEEDS,
                                             metric=metric) for x in (cand, base))


def _baselines(kind: str, rng: np.random.Generator) -> np.ndarray:
    """Random float64 per-seed values, (cells, seeds): accuracy-like in (0.5, 0.95) or
    loss-like (log-normal over about three orders of magnitude)."""
    if kind == "accuracy":
        return rng.uniform(0.5, 0.95, size=(CELLS, len(SEEDS)))
    return np.exp(rng.normal(-1.0, 1.5, size=(CELLS, len(SEEDS))))


@pytest.mark.parametrize("metric", ["accuracy", "loss"])
def test_an_unchanged_model_through_float32_reads_identical(metric: str) -> None:
    rng = np.random.default_rng(32)
    verdicts = []
    for _ in range(5):   # 5 calls of 100 cells: 500 trials per metric, 1,000 in all
        base = _baselines(metric, rng)
        cand = base.astype(np.float32).astype(np.float64)
        assert np.any(cand != base)          # the values did change, by rounding
        verdicts += [v.verdict for v in compare_reports(*_reports(base, cand, metric),
                                                         min_effect=0.01)]
    assert len(verdicts) == 500
    assert verdicts == ["IDENTICAL"] * 500


@pytest.mark.parametrize("sign, expected", [(+1, "BETTER"), (-1, "REGRESSED")])
def test_a_real_difference_of_1e5_is_tested(sign: int, expected: str) -> None:
    """1e-5 on accuracies near 0.8 is about 26 times float32's resolution there (2^-21
    relative): it is evidence, decided by the test (no spread: t = ±inf), never IDENTICAL."""
    rng = np.random.default_rng(5)
    base = rng.uniform(0.5, 0.95, size=(3, len(SEEDS)))
    cand = base + sign * 1e-5
    verdicts = compare_reports(*_reports(base, cand, "accuracy"), min_effect=0.01)
    assert [v.verdict for v in verdicts] == [expected] * 3
    for v in verdicts:
        assert v.comparison.evidence.n == len(SEEDS)
        assert v.comparison.evidence.mean_diff == pytest.approx(sign * 1e-5, rel=1e-6)


def test_noisy_differences_of_1e5_are_tested_not_identical() -> None:
    """Per-seed differences of about 1e-5 with spread: a t test, whatever it reads."""
    rng = np.random.default_rng(6)
    base = rng.uniform(0.5, 0.95, size=(20, len(SEEDS)))
    cand = base + 1e-5 * rng.standard_normal(base.shape)
    verdicts = compare_reports(*_reports(base, cand, "accuracy"), min_effect=0.01)
    assert all(v.verdict != "IDENTICAL" for v in verdicts)
    from scipy import stats

    for i, v in enumerate(verdicts):
        d = cand[i] - base[i]
        # a pair within 2^-21 of the larger magnitude (float32's resolution) counts as 0
        d = np.where(np.abs(d) <= 2.0 ** -21 * np.maximum(cand[i], base[i]), 0.0, d)
        assert np.count_nonzero(d) >= 8
        assert np.isfinite(v.comparison.evidence.p_value)
        assert v.comparison.evidence.mean_diff == pytest.approx(d.mean(), rel=1e-6)
        assert v.comparison.evidence.sd_diff == pytest.approx(np.std(d, ddof=1), rel=1e-6)
        assert stats.ttest_1samp(d, 0.0).statistic == pytest.approx(
            d.mean() / (np.std(d, ddof=1) / np.sqrt(d.size)))
