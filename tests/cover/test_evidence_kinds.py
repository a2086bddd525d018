"""Evidence holds what was measured, and its corrections are kinds of evidence built in stats/:
the skew guard (Hall's corrected t on the tail it tightens) and k-fold CV's corrected
resampled t (Nadeau–Bengio). The gate reads the evidence as stats built it: it never rewrites a
p-value and never undoes a correction. Checked against the formulas written out on scipy."""

from __future__ import annotations

import dataclasses
import math

import numpy as np
import pytest
from scipy import stats as sps

from pytest_graphnetz import BenchmarkReport
from pytest_graphnetz.gates.comparing.compare import compare_reports
from pytest_graphnetz.plugin.summary import verdict_stats
from pytest_graphnetz.stats.comparison import DecisionSettings, Evidence, measure

SEEDS = list(range(10))
# right-skewed paired differences (a seed that sometimes jumps): the guard fires on them
SKEWED = np.array([-0.006, -0.005, -0.005, -0.004, -0.004, -0.003, -0.003, -0.002, -0.001,
                   0.035])


def _report(values: np.ndarray, folds: int | None = None) -> BenchmarkReport:
    r = BenchmarkReport.from_arrays(values.reshape(1, 1, -1), tasks=["toy"], models=["m"],
                                    seeds=SEEDS, metric="accuracy")
    if folds is not None:
        r.protocol = {"source": "from_arrays", "tasks": {"toy": {"config": {"folds": folds}}}}
    return r


def test_evidence_holds_no_setting_and_no_prose() -> None:
    names = {f.name for f in dataclasses.fields(Evidence)}
    assert not names & {"alpha", "margin", "power", "min_effect", "label", "notes", "ci",
                        "higher_is_better"}
    assert {"n", "mean_diff", "sd_diff", "se", "df", "p_value", "kind", "test",
            "correction"} <= names
    rng = np.random.default_rng(1)
    base = 0.8 + 0.01 * rng.standard_normal(10)
    cand = base - 0.005 + 0.01 * rng.standard_normal(10)
    ev = measure(cand, base, DecisionSettings(min_effect=0.02))
    for value, name in ((ev, "p_value"), (DecisionSettings(), "alpha")):
        with pytest.raises(dataclasses.FrozenInstanceError):
            setattr(value, name, 0.5)
    # the interval is read at the levels a caller passes, from the test's own bounds
    d = cand - base
    low, high = sps.t.interval(0.90, 9, loc=d.mean(), scale=sps.sem(d))
    assert tuple(ev.interval(0.05, 0.05)) == pytest.approx((low, high), rel=1e-9)
    assert ev.interval(0.05, 0.01).high == pytest.approx(
        sps.t.interval(0.98, 9, loc=d.mean(), scale=sps.sem(d))[1], rel=1e-9)
    assert ev.se == pytest.approx(sps.sem(d), rel=1e-12) and ev.df == 9


def test_a_skewed_cell_is_guarded_in_stats_and_the_gate_reports_that_p() -> None:
    base = np.linspace(0.78, 0.82, 10)
    cand = base + SKEWED
    (v,) = compare_reports(_report(cand), _report(base), canonical=True)
    ev = v.comparison.evidence
    assert ev.correction == "skew-guarded" and ev.skew is not None and ev.skew.side == "right"
    # the evidence stats builds on these seeds is the gate's, field for field
    settings = DecisionSettings(min_effect=0.01, alpha=v.comparison.decision.level)
    again = measure(cand, base, settings, label="toy/m", seeds=SEEDS)
    assert again == ev and again.p_value == ev.p_value and again.p_reverse == ev.p_reverse
    # Hall's statistic where it is stricter than the plain t (REGRESSED: the larger one)
    d = cand - base
    t = sps.ttest_1samp(d, 0.0).statistic
    a = sps.skew(d, bias=False) / math.sqrt(d.size)
    hall = t + a * (t * t / 3 + 1 / 6) + a * a * t ** 3 / 27
    assert ev.p_value == pytest.approx(sps.t.cdf(max(t, hall), 9), rel=1e-7)
    assert ev.p_value != pytest.approx(sps.t.cdf(t, 9), rel=1e-3)   # not the plain t's
    # what the row reports is that p, unchanged: the raw p, and (one cell) the verdict's
    row = verdict_stats(v)
    assert row["p_raw"] == ev.p_value and v.comparison.decision.p_adjusted == ev.p_value


def test_a_fold_cell_is_the_corrected_t_in_stats_and_the_gate_never_undoes_it() -> None:
    k, margin = 5, 0.0
    rng = np.random.default_rng(5)
    base = 0.8 + 0.01 * rng.standard_normal(10)
    cand = base - 0.004 + 0.006 * rng.standard_normal(10)
    for gate in ("not_worse", "better"):
        (v,) = compare_reports(_report(cand, k), _report(base, k), gate=gate, margin=margin)
        ev = v.comparison.evidence
        assert ev.correction == "fold-corrected" and ev.test == "paired-t" and ev.skew is None
        d = cand - base
        J, sd = d.size, float(np.std(d, ddof=1))
        se = math.sqrt(1 / J + 1 / (k - 2)) * sd   # Nadeau–Bengio, n_test / n_train = 1/(k-2)
        assert ev.sd_per_fold == pytest.approx(sd, rel=1e-12)
        assert ev.se == pytest.approx(se, rel=1e-12)
        assert ev.sd_diff == pytest.approx(se * math.sqrt(J), rel=1e-12)
        lower = sps.t.cdf(d.mean() / se, J - 1)          # H1 mean d < 0
        upper = sps.t.sf((d.mean() - margin) / se, J - 1)  # H1 mean d > margin
        assert ev.p_value == pytest.approx(lower if gate == "not_worse" else upper, rel=1e-9)
        again = measure(cand, base, DecisionSettings(kind=gate, margin=margin,
                                                     min_effect=v.comparison.settings.min_effect),
                        folds=k, label="toy/m", seeds=SEEDS)
        assert again == ev
        assert verdict_stats(v)["p_raw"] == ev.p_value
