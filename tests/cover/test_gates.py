"""Gates outside pytest, on ``BenchmarkReport.from_arrays`` reports; references from scipy."""

from __future__ import annotations

import re

import numpy as np
import pytest
from scipy import stats as sps

import pytest_graphnetz as gates
from pytest_graphnetz import BenchmarkReport, assert_ci_width
from pytest_graphnetz.gates.recorder import GateRecorder, recording
from pytest_graphnetz.gates.refreshing.baselines import BaselineMissingError
from pytest_graphnetz.gates.verdicts.formatting import gate_table
from pytest_graphnetz.gates.verdicts.values import GateRefusal
from pytest_graphnetz.stats.boundaries import LookSchedule
from tests.helpers.reports import bind

BASE = np.array([0.80, 0.82, 0.78, 0.81, 0.79, 0.83, 0.80, 0.84])




# These gates run as in a project whose first look is 8 seeds (`graphnetz_seeds = 8`), so
# BASE's 8 seeds are a canonical run; a call that names its first look keeps it.
def assert_not_worse(*args, **kwargs):
    __tracebackhide__ = True
    return gates.assert_not_worse(*args, **{"first_look": 8, **kwargs})


def assert_better(*args, **kwargs):
    __tracebackhide__ = True
    return gates.assert_better(*args, **{"first_look": 8, **kwargs})


def assert_equivalent(*args, **kwargs):
    __tracebackhide__ = True
    return gates.assert_equivalent(*args, **{"first_look": 8, **kwargs})


def make(values, *, seeds=None, models=("GCN",), metric="accuracy", tasks=("karate",)):
    """A report from per-seed values shaped (models, seeds) or (seeds,), one task."""
    X = np.asarray(values, dtype=float).reshape(len(tasks), len(models), -1)
    seeds = range(X.shape[-1]) if seeds is None else seeds
    return BenchmarkReport.from_arrays(X, tasks=list(tasks), models=list(models), seeds=seeds,
                                       metric=metric)


@pytest.mark.parametrize(("rerun_safe", "level", "label"),
                         [(True, 0.85 * 0.05, "91.5%"), (False, 0.05, "90%")],
                         ids=["first-run-of-a-chain", "single-run"])
def test_regressed_matches_scipy_paired_t(rerun_safe: bool, level: float, label: str) -> None:
    # On the schedule (the default; its first look here at the run's 8 seeds) look 1 spends
    # ρα = 0.85 × 0.05 (docs/guarantees.md); rerun_safe=False: the run alone, at α.
    cand = BASE - [0.03, 0.01, 0.02, 0.04, 0.0, 0.02, 0.03, 0.01]
    with pytest.raises(AssertionError) as info:
        assert_not_worse(make(cand), make(BASE), rerun_safe=rerun_safe, first_look=8)
    ref = sps.ttest_rel(cand, BASE, alternative="less")
    # the two-sided (1 − 2·level) interval: its ends are the one-sided bounds the decision uses
    ci = sps.ttest_rel(cand, BASE).confidence_interval(1 - 2 * level)
    msg = str(info.value)
    assert "karate/GCN — accuracy (higher is better): REGRESSED" in msg
    delta = cand.mean() - BASE.mean()
    look = ", look 1 of 8→…" if rerun_safe else ""
    assert f"paired Δ {delta:+.4g} ({label}{look} CI [{ci.low:.4g}, {ci.high:.4g}])" in msg
    assert f"p = {ref.pvalue:.2g}" in msg
    # one α, the call's; the level the look decides at named as a level, not a second α
    decides = " (this look: one-sided level 0.0425)" if rerun_safe else ""
    assert f"test paired-t, margin 0, min_effect 0.01, alpha 0.05{decides}\n" in msg
    assert "over 8 seeds 0-7" in msg and "minimum detectable effect at n=8" in msg
    assert ("look 1 of the schedule 8→…" in msg) is rerun_safe
    assert ("judged alone at alpha (not rerun-safe (--graphnetz-single-run)" in msg) \
        is not rerun_safe
    assert ("; judged alone at α: not rerun-safe (--graphnetz-single-run)" in msg) \
        is not rerun_safe


def test_a_first_look_decides_at_the_t_quantile_of_the_level_it_spends() -> None:
    # One-sided p between ρα = 0.0425 and α = 0.05 (scipy): REGRESSED alone, not at look 1.
    cand = BASE - [0.0, 0.0, 0.0, 0.0, 0.0, 0.01, 0.02, 0.02]
    p = sps.ttest_rel(cand, BASE, alternative="less").pvalue
    assert 0.85 * 0.05 < p < 0.05, p
    (first,) = assert_not_worse(make(cand), make(BASE), first_look=8)
    assert first.verdict == "INCONCLUSIVE"
    with pytest.raises(AssertionError, match="REGRESSED"):
        assert_not_worse(make(cand), make(BASE), rerun_safe=False)
    # 8 seeds below the first look (10) hold no look: refused, not judged alone at α
    with pytest.raises(GateRefusal, match=r"the paired 8 seeds \(0-7\) hold no look: the "
                                          r"schedule's first look is 10 seeds"):
        assert_not_worse(make(cand), make(BASE), first_look=10)


def test_pairs_by_seed_value_not_position() -> None:
    rng = np.random.default_rng(1)
    cand = BASE + rng.normal(0, 0.01, BASE.size)
    aligned = assert_not_worse(make(cand), make(BASE))[0].comparison
    order = list(range(BASE.size))[::-1]
    shuffled = assert_not_worse(make(cand), make(BASE[order], seeds=order))[0].comparison
    assert shuffled == aligned


def test_only_shared_seeds_are_paired() -> None:
    # seeds 3-5 are not the canonical prefix: refused, unless the run is judged alone
    with pytest.raises(GateRefusal, match=r"the paired seeds 3-5 are not the prefix 0-2"):
        assert_not_worse(make(BASE[:6]), make(BASE[3:], seeds=range(3, 8)))
    verdict = assert_not_worse(make(BASE[:6]), make(BASE[3:], seeds=range(3, 8)),
                               rerun_safe=False)[0]
    assert verdict.seeds == (3, 4, 5) and verdict.comparison.evidence.n == 3
    assert verdict.verdict == "IDENTICAL"


def test_fewer_than_two_shared_seeds_is_refused() -> None:
    with pytest.raises(GateRefusal, match=r"they share 1 seed\(s\) \[5\].*needs at least 2"):
        assert_not_worse(make(BASE[:6]), make(BASE[5:], seeds=range(5, 8)))


def test_changed_data_fingerprint_is_refused() -> None:
    cand, base = make(BASE), make(BASE)
    base.fingerprints = {"data": {"karate": {s: f"split-{s}" for s in range(8)}}}
    cand.fingerprints = {"data": {"karate": {s: f"split-{s}" for s in range(8)}}}
    cand.fingerprints["data"]["karate"][2] = "another split"
    with pytest.raises(GateRefusal, match=r"'karate'.*differs .* same seed\(s\) \[2\].*fictional"):
        assert_not_worse(cand, base)


@pytest.mark.parametrize("metric", ["auc", "mae"])
def test_metric_mismatch_is_refused(metric: str) -> None:
    with pytest.raises(GateRefusal, match=f"reports {metric} .* has accuracy"):
        assert_not_worse(make(BASE, metric=metric), make(BASE))


def test_device_difference_is_noted_not_refused() -> None:
    cand, base = make(BASE), make(BASE)
    cand.protocol["device"] = {"kind": "cuda", "name": "H200"}
    base.protocol["device"] = {"kind": "cpu", "name": "Xeon"}
    (verdict,) = assert_not_worse(cand, base)
    assert verdict.verdict == "IDENTICAL"
    assert any(n.startswith("device differs") for n in verdict.notes)


def test_holm_across_cells() -> None:
    # One cell alone is REGRESSED (raw p < 0.05); with two unchanged-ish cells, Holm lifts it.
    drop = BASE - [0.02, 0.0, 0.01, 0.02, 0.0, 0.01, 0.0, 0.0]
    noise = BASE + [0.01, -0.01, 0.0, 0.01, -0.01, 0.0, 0.01, -0.01]
    raw = sps.ttest_rel(drop, BASE, alternative="less").pvalue
    assert 0.05 / 3 < raw < 0.05
    with pytest.raises(AssertionError):
        assert_not_worse(make(drop), make(BASE))
    verdicts = assert_not_worse(make([drop, noise, noise], models="ABC"),
                                make([BASE, BASE, BASE], models="ABC"))
    p = [sps.ttest_rel(c, BASE, alternative="less").pvalue for c in (drop, noise, noise)]
    order = np.argsort(p)
    holm = np.maximum.accumulate([min(1.0, (3 - i) * p[j]) for i, j in enumerate(order)])
    expected = np.empty(3)
    expected[order] = holm
    np.testing.assert_allclose([v.comparison.decision.p_adjusted for v in verdicts], expected)
    assert verdicts[0].verdict == "INCONCLUSIVE"


def test_strict_fails_inconclusive() -> None:
    wobble = BASE + [0.02, -0.03, 0.01, -0.02, 0.03, -0.02, 0.0, -0.01]
    (verdict,) = assert_not_worse(make(wobble), make(BASE))
    assert verdict.verdict == "INCONCLUSIVE" and not verdict.failed
    with pytest.raises(AssertionError, match=r"INCONCLUSIVE[\s\S]*next look: \d+ seeds"):
        assert_not_worse(make(wobble), make(BASE), strict=True)


def test_lower_is_better_flips_the_sign() -> None:
    mae = np.array([1.0, 1.2, 0.9, 1.1, 1.05, 0.95])
    with pytest.raises(AssertionError, match=r"mae \(lower is better\): REGRESSED"):
        assert_not_worse(make(mae + 0.1, metric="mae"), make(mae, metric="mae"), first_look=6)
    (verdict,) = assert_better(make(mae - 0.1, metric="mae"), make(mae, metric="mae"),
                               first_look=6)
    assert verdict.verdict == "BETTER"
    assert verdict.comparison.evidence.mean_diff == pytest.approx(0.1)


def test_better_needs_evidence_and_equivalent_needs_a_margin() -> None:
    with pytest.raises(AssertionError, match="IDENTICAL"):
        assert_better(make(BASE), make(BASE))
    near = BASE + [0.001, -0.001, 0.002, 0.0, -0.002, 0.001, 0.0, -0.001]
    (verdict,) = assert_equivalent(make(near), make(BASE), margin=0.01)
    assert verdict.verdict == "EQUIVALENT"
    with pytest.raises(AssertionError, match="NOT EQUIVALENT"):
        assert_equivalent(make(BASE - 0.05), make(BASE), margin=0.01)
    with pytest.raises(ValueError, match="margin"):
        assert_equivalent(make(near), make(BASE), margin=0)


def test_diverged_candidate_seed_fails() -> None:
    cand = BASE.copy()
    cand[3] = np.nan
    with pytest.raises(AssertionError, match=r"REGRESSED[\s\S]*diverged .* seed\(s\) \[3\]"):
        assert_not_worse(make(cand), make(BASE))


def test_ci_width_against_scipy() -> None:
    report = make(BASE)
    ci = sps.t.interval(0.95, BASE.size - 1, loc=BASE.mean(), scale=sps.sem(BASE))
    (ok,) = assert_ci_width(report, 0.05)
    assert ok.width == pytest.approx(ci[1] - ci[0]) and not ok.failed
    with pytest.raises(AssertionError, match=r"karate/GCN — accuracy: t 95% interval") as info:
        assert_ci_width(report, 0.01)
    needed = int(str(info.value).split("about ")[1].split()[0])
    sd = BASE.std(ddof=1)

    def width(n: int) -> float:
        return 2 * sps.t.ppf(0.975, n - 1) * sd / np.sqrt(n)

    assert width(needed) <= 0.01 < width(needed - 1)


def test_baseline_as_path_and_missing_path(tmp_path) -> None:
    bind(make(BASE).to_json(tmp_path / "base.json"), LookSchedule(8))   # the first look here
    (verdict,) = assert_not_worse(make(BASE), tmp_path / "base.json")
    assert verdict.verdict == "IDENTICAL"
    with pytest.raises(BaselineMissingError, match=r"no baseline at .*nope.json"):
        assert_not_worse(make(BASE), str(tmp_path / "nope.json"))


def test_missing_cell_names_it() -> None:
    with pytest.raises(BaselineMissingError, match=r"no baseline for karate/GAT \("):
        assert_not_worse(make([BASE, BASE], models=("GCN", "GAT")), make(BASE))
    with pytest.raises(BaselineMissingError, match=r"cell\(s\) \['karate/GAT'\]"):
        assert_not_worse(make([BASE], models=("GAT",)), make(BASE))   # nothing to compare


def test_observer_supplies_defaults_and_collects_rows() -> None:
    rows: list[dict] = []
    drop = BASE - [0.02, 0.0, 0.01, 0.02, 0.0, 0.01, 0.0, 0.0]   # one-sided p = 0.024
    with recording(GateRecorder(alpha=0.01, strict=False, keep=rows.append, first_look=8)):
        (verdict,) = assert_not_worse(make(drop), make(BASE))
    # the session's alpha and first look, of which look 1 spends ρ = 0.85
    assert verdict.comparison.decision.level == pytest.approx(0.85 * 0.01)
    assert verdict.verdict == "INCONCLUSIVE"
    assert rows == [verdict.row()] and rows[0]["verdict"] == "INCONCLUSIVE"
    with pytest.raises(AssertionError):   # outside the block: alpha 0.05 again
        assert_not_worse(make(drop), make(BASE))


def test_unknown_test_is_an_error() -> None:
    with pytest.raises(ValueError, match="`test` must be one of"):
        assert_not_worse(make(BASE), make(BASE), test="welch")


def test_gate_table_lists_every_cell() -> None:
    verdicts = assert_not_worse(make([BASE, BASE + 0.01], models="AB"),
                                make([BASE, BASE], models="AB"))
    table = gate_table(verdicts)
    assert "karate/A" in table and "karate/B" in table and "IDENTICAL" in table
    assert gate_table(verdicts, markdown=True).startswith("| Cell | Metric |")


# -- verdicts a PR can act on: δ, BETTER, the interval printed, seeds that can pair ----------------


def test_default_min_effect_is_one_point_for_unit_metrics_and_none_for_mae() -> None:
    wobble = BASE + [0.004, -0.003, 0.002, -0.002, 0.003, -0.001, 0.0, -0.001]
    (acc,) = assert_not_worse(make(wobble), make(BASE))
    assert acc.comparison.settings.min_effect == 0.01 and acc.verdict == "NOT WORSE"
    (mae,) = assert_not_worse(make(wobble, metric="mae"), make(BASE, metric="mae"))
    assert mae.comparison.settings.min_effect is None and mae.verdict == "INCONCLUSIVE"
    with pytest.raises(AssertionError) as info:
        assert_not_worse(make(wobble, metric="mae"), make(BASE, metric="mae"), strict=True)
    msg = str(info.value)
    assert "no min_effect for mae" in msg and "set `min_effect`" in msg
    # lower-is-better: the printed Δ is sign-flipped, and the message says so
    delta = -(wobble - BASE).mean()
    assert f"paired Δ {delta:+.4g} (+ = better: the sign is flipped, mae candidate − " \
           f"baseline is {-delta:+.4g})" in msg
    (given,) = assert_not_worse(make(wobble, metric="mae"), make(BASE, metric="mae"),
                                min_effect=0.01)
    assert given.verdict == "NOT WORSE"


def test_min_effect_not_above_margin_is_a_clear_error() -> None:
    with pytest.raises(ValueError, match=r"`min_effect` \(0\.01\) must be larger than `margin` "
                                         r"\(0\.02\)"):
        assert_not_worse(make(BASE), make(BASE), margin=0.02, min_effect=0.01)


def test_better_passes_and_suggests_a_refresh() -> None:
    gain = BASE + 0.037 + np.array([0.01, -0.01, 0.005, 0.0, -0.005, 0.01, 0.0, -0.01])
    rows = []
    with recording(GateRecorder(alpha=0.05, strict=False, keep=rows.append, first_look=8)):
        (verdict,) = assert_not_worse(make(gain), make(BASE))
    assert verdict.verdict == "BETTER" and not verdict.failed
    assert rows[0]["verdict"] == "BETTER: refresh baseline"
    assert "refresh the baseline to keep the gain" in verdict.message()


def test_drop_below_min_effect_fails_and_says_how_to_accept_it() -> None:
    small = BASE - 0.003 + np.array([0.001, -0.001, 0.0, 0.001, -0.001, 0.0, 0.001, -0.001])
    with pytest.raises(AssertionError) as info:
        assert_not_worse(make(small), make(BASE))
    msg = str(info.value)
    hint = re.search(r"significant but smaller than min_effect 0\.01 .* accept it with "
                     r"margin=([0-9.]+)", msg)
    assert hint, msg
    margin = float(hint.group(1))
    assert 0 < margin < 0.01
    (verdict,) = assert_not_worse(make(small), make(BASE), margin=margin)
    assert verdict.verdict == "NOT WORSE"


def test_interval_in_the_table_matches_the_decision() -> None:
    cand = BASE - [0.03, 0.01, 0.02, 0.04, 0.0, 0.02, 0.03, 0.01]
    rows = []
    with recording(GateRecorder(alpha=0.10, strict=False, keep=rows.append, first_look=8)), \
            pytest.raises(AssertionError, match=r"83%, look 1 of 8→… CI"):
        assert_not_worse(make(cand), make(BASE))
    # look 1 of the schedule spends ρα = 0.85 × 0.10: its interval is 1 − 2 × 0.085
    ci = sps.ttest_rel(cand, BASE).confidence_interval(1 - 2 * 0.085)
    assert rows[0]["delta"].endswith(f"[{ci.low:.4g}, {ci.high:.4g}] (83%, look 1 of 8→…)")


def test_seeds_the_baseline_lacks_are_named_with_the_refresh_command(tmp_path) -> None:
    from pytest_graphnetz.gates.refreshing.baselines import BaselineHandle

    rng = np.random.default_rng(3)
    base = rng.normal(0.8, 0.02, 8)
    cand = np.concatenate([base + rng.normal(-0.002, 0.012, 8), rng.normal(0.8, 0.02, 4)])
    path = tmp_path / "base.json"
    bind(make(base).to_json(path), LookSchedule(8))
    handle = BaselineHandle(path, update_command="pytest t.py::test_x --graphnetz-update-baselines")
    with pytest.raises(AssertionError) as info:
        assert_not_worse(make(cand), handle, strict=True)
    msg = str(info.value)
    (verdict,) = assert_not_worse(make(cand), handle)
    n = verdict.comparison.plan.needed
    assert verdict.verdict == "INCONCLUSIVE" and n > 12
    assert "candidate seed(s) 8-11 have no baseline counterpart" in msg
    assert f"next look: {n} seeds (rerun with --graphnetz-seeds={n}" in msg
    # the refresh covers the seeds the cell is expected to need: the first look past them
    need = verdict.comparison.plan.expected
    refresh = next(k for k in (8 * 2 ** i for i in range(12)) if k >= need)
    assert (f"the baseline has only seeds 0-7: candidate seeds beyond them cannot pair. Refresh "
            f"the baseline with {refresh} seeds first") in msg
    assert (f"`pytest t.py::test_x --graphnetz-update-baselines --graphnetz-seeds={refresh}`"
            in msg)


def test_gate_intervals_of_a_bounded_metric_are_clipped_and_say_so() -> None:
    # nine seeds at 1.0 and one at 0.9: the t interval's upper end is 1.013, past what an
    # accuracy can be; the gate shows it clipped, as summary() does, and says so
    base = make([[[1.0] * 9 + [0.9]]])
    cand = make([[[1.0] * 9 + [0.8]]])
    raw = sps.t.interval(0.95, 9, loc=0.99, scale=sps.sem([1.0] * 9 + [0.9]))
    assert raw[1] > 1.0
    rows: list = []
    with recording(GateRecorder(alpha=0.05, strict=False, keep=rows.append)):
        verdicts = assert_not_worse(cand, base, min_effect=0.05, first_look=10)
    message = verdicts[0].message()
    assert "0.99 [0.9674, 1] (t 95% CI of the mean, clipped to [0, 1], n=10)" in message, message
    # the table's cell (terminal, Markdown, comment) says so too
    assert rows[0]["baseline"] == "0.99 [0.9674, 1] (clipped)", rows
    table = gate_table(verdicts)
    assert "0.99 [0.9674, 1] (clipped)" in table and "1.013" not in table
    # the unclipped width is what assert_ci_width judges
    with pytest.raises(AssertionError, match=re.escape(f"is {raw[1] - raw[0]:.4g} wide")):
        assert_ci_width(base, max_width=0.04)
