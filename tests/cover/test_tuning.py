"""Tune, then confirm: the search (validation only, seeds nested in trials), the confirmation on
seeds the search never touched, the gate's refusals (overlap, test-split selection, budgets),
the record in reports and baselines, and the expected-max curves against brute force."""

from __future__ import annotations

import itertools
import json
import re

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from pytest_graphnetz import BenchmarkReport, assert_not_worse
from pytest_graphnetz.cli.main import main
from pytest_graphnetz.gates.tuning import grid, tune
from pytest_graphnetz.gates.verdicts.values import GateRefusal
from pytest_graphnetz.report.epochs import History, MetricSpec
from pytest_graphnetz.report.trials import (
    SEARCH_SEED_BASE,
    Budget,
    TuningError,
    record_of,
    search_seeds,
)
from pytest_graphnetz.stats.expected_max import expected_max
from tests.helpers.reports import gate

ACC = MetricSpec.from_name("accuracy")


def fake_runner(tasks, models, *, seeds, shift=0.0, **_):
    """A runner without training: model ``build(config)`` is the config itself; validation
    rises with ``q`` while test falls with it, plus per-seed noise, so a search that read the
    test split would pick the other end of the space."""
    (name, factory), = models.items()
    cfg = json.loads(factory.config) if hasattr(factory, "config") else factory
    histories = {}
    for s in seeds:
        noise = np.random.default_rng(s).normal(0, 0.01, 2)
        val = 0.5 + 0.1 * cfg["q"] + noise[0]
        test = 0.9 - 0.1 * cfg["q"] + noise[1] + shift
        histories[("toy", name, int(s))] = History(test=(test / 2, test), val=(val / 2, val))
    return BenchmarkReport(tasks=["toy"], models=[name], seeds=list(seeds),
                           metrics={"toy": ACC}, histories=histories)


def tuned(shift=0.0, qs=(0, 1, 2, 3), search=3, seeds=range(10), **kw):
    return tune("toy", {"M": dict}, [{"q": q} for q in qs], search_seeds=search, seeds=seeds,
                runner=lambda t, m, **k: fake_runner(t, m, shift=shift, **k), **kw)


def test_the_winner_is_chosen_on_validation_and_confirmed_on_fresh_canonical_seeds():
    result = tuned()
    record = result.record
    assert result.winner == {"q": 3}          # best validation; the worst test score
    assert record.search_seeds == tuple(range(SEARCH_SEED_BASE, SEARCH_SEED_BASE + 3))
    assert result.report.seeds == tuple(range(10))
    assert all(r.seeds == record.search_seeds for r in result.searches)
    assert record.budget == Budget(4, 3)
    # every trial × seed recorded, each the validation value the fake runner produced
    for trial, report in zip(record.trials, result.searches, strict=True):
        assert trial.validation == tuple(report.histories[("toy", "M", s)].val[-1]
                                         for s in report.seeds)
        assert trial.mean == pytest.approx(np.mean(trial.validation))
    conf = [result.report.histories[("toy", "M", s)].val[-1] for s in range(10)]
    assert record.optimism == pytest.approx(record.trials[3].mean - np.mean(conf))
    assert record_of(result.report.protocol) == record


def test_best_val_rule_scores_trials_at_the_validation_best_epoch():
    result = tuned(epoch_selection="best_val")
    assert result.report.epoch_selection == "best_val"
    assert result.record.epoch_selection == "best_val"
    assert result.winner == {"q": 3}


def test_grid_is_every_combination_last_axis_fastest():
    assert grid(a=[1, 2], b=["x", "y"]) == [{"a": 1, "b": "x"}, {"a": 1, "b": "y"},
                                            {"a": 2, "b": "x"}, {"a": 2, "b": "y"}]
    with pytest.raises(TuningError, match="non-empty list"):
        grid(a=[])


def test_a_task_without_validation_is_refused_it_would_select_on_test():
    def no_val(tasks, models, *, seeds, **_):
        return BenchmarkReport.from_arrays(np.full((1, 1, len(seeds)), 0.5), tasks=["toy"],
                                           models=["M"], seeds=seeds, metric="accuracy")

    with pytest.raises(TuningError, match="not to search"):
        tune("toy", {"M": dict}, [{"q": 0}], runner=no_val, seeds=range(10))


def test_explicit_search_seeds_that_overlap_are_refused_before_confirming():
    calls = []

    def counting(tasks, models, **kw):
        calls.append(kw["seeds"])
        return fake_runner(tasks, models, **kw)

    with pytest.raises(TuningError, match="seed.s. 3,4 that its search trained on"):
        tune("toy", {"M": dict}, [{"q": 0}], search_seeds=[3, 4, 20], seeds=range(10),
             runner=counting)
    assert calls == []


def same_budget(a, b, searched):
    """Give both arms fresh search seeds as many as ``searched`` (the budget counts them)."""
    for report in (a, b):
        report.protocol["tuning"]["search_seeds"] = [SEARCH_SEED_BASE + 100 + i
                                                     for i in range(len(searched))]


@pytest.mark.parametrize("n", [10, 12])
def test_every_overlap_of_search_and_confirmation_seeds_is_refused(n):
    """Every subset of a universe that straddles the confirmation seeds 0..n-1 as the search
    seeds of either arm: the gate refuses exactly when the subset meets 0..n-1."""
    base = tuned().report
    universe = [n - 3, n - 2, n - 1, n, n + 1, SEARCH_SEED_BASE]
    for size in range(1, len(universe) + 1):
        for subset in itertools.combinations(universe, size):
            for side in ("candidate", "baseline"):
                cand, other = tuned(seeds=range(n)).report, tuned(seeds=range(n)).report
                target = cand if side == "candidate" else other
                same_budget(cand, other, subset)
                target.protocol["tuning"]["search_seeds"] = list(subset)
                overlap = any(s < n for s in subset)
                if overlap:
                    with pytest.raises(GateRefusal, match=f"the {side} is confirmed on seed"):
                        gate(cand, other)
                else:
                    gate(cand, other)
    assert base.seeds == tuple(range(10))


@settings(max_examples=60, deadline=None)
@given(st.sets(st.integers(0, 40), min_size=1, max_size=8), st.integers(10, 20))
def test_overlap_refusal_fires_whenever_the_sets_meet(searched, n):
    cand, base = tuned(seeds=range(n)).report, tuned(seeds=range(n)).report
    same_budget(cand, base, searched)
    cand.protocol["tuning"]["search_seeds"] = sorted(searched)
    if searched & set(range(n)):
        with pytest.raises(GateRefusal, match="that its search trained on"):
            gate(cand, base)
    else:
        gate(cand, base)


def test_derived_search_seeds_never_meet_a_canonical_seed_set():
    assert min(search_seeds(10_000)) > 10_000
    with pytest.raises(TuningError):
        search_seeds(1)


def test_a_selection_that_read_the_test_split_is_refused_in_one_line():
    cand, base = tuned().report, tuned().report
    cand.protocol["tuning"]["split"] = "test"
    with pytest.raises(GateRefusal) as info:
        gate(cand, base)
    assert "\n" not in str(info.value) and "selected its winner on the test split" in str(
        info.value)


def test_different_budgets_are_refused_unless_accepted_and_then_both_are_stated():
    base = tuned(qs=(0, 1)).report
    with pytest.raises(GateRefusal, match=r"budgets differ \(candidate 4 trials × 3 seeds, "
                                          r"baseline 2 trials × 3 seeds\)"):
        gate(tuned().report, base)
    with pytest.raises(GateRefusal, match="budgets differ"):   # accepted another budget
        gate(tuned(accept_budget="2x5").report, base)
    verdicts = gate(tuned(accept_budget="2x3").report, base)
    notes = " ".join(verdicts[0].notes)
    assert "accepted explicitly: candidate 4 trials × 3 seeds, baseline 2 trials × 3 seeds" in notes
    assert "optimism" in verdicts[0].message()


def test_a_tuned_candidate_against_a_fixed_recipe_is_refused():
    fixed = fake_runner("toy", {"M": {"q": 3}}, seeds=range(10))
    with pytest.raises(GateRefusal, match="baseline not tuned"):
        gate(tuned().report, fixed)
    with pytest.raises(GateRefusal, match="candidate not tuned"):
        gate(fixed, tuned().report)
    gate(fixed, fake_runner("toy", {"M": {"q": 3}}, seeds=range(10)))   # two recipes: as ever


def test_the_verdict_states_budget_and_optimism_and_gates_as_ever():
    base = tuned().report
    worse = tuned(shift=-0.05).report
    with pytest.raises(AssertionError, match="REGRESSED") as info:
        assert_not_worse(worse, base, first_look=10)
    message = str(info.value)
    assert "tuned: candidate 4 trials × 3 seeds, baseline 4 trials × 3 seeds" in message
    row = gate(worse, base)[0]
    assert re.search(r"tuned 4×3 \(optimism [+-]\d.*\) vs 4×3 \(optimism [+-]", row.table_note)
    assert gate(*(fake_runner("toy", {"M": {"q": 1}}, seeds=range(10)),) * 2)[0].table_note \
        .find("tuned") == -1
    assert re.search(r"winner trial 3 \(q=3, chosen in \d+% of resamples of the search seeds\); "
                     r"optimism", message)


def test_the_baseline_keeps_a_summary_and_the_report_every_trial_and_seed(tmp_path):
    result = tuned()
    values = result.report.to_values_dict()
    kept = values["environment"]["tuning"]
    assert kept["record"] == "summary"
    assert all("validation" not in t for t in kept["trials"])
    assert [t["mean"] for t in kept["trials"]] == pytest.approx(result.record.trial_means())
    assert kept["budget"] == {"trials": 4, "seeds": 3}
    summary = record_of(BenchmarkReport.from_dict(json.loads(json.dumps(values))).protocol)
    assert summary.optimism == pytest.approx(result.record.optimism)
    full = tmp_path / "report.json"
    result.report.to_json(full)
    record = record_of(BenchmarkReport.from_json(full).protocol)
    assert record.full and record == result.record
    # a committed baseline still refuses a budget mismatch and overlap
    base = BenchmarkReport.from_dict(values)
    with pytest.raises(GateRefusal, match="budgets differ"):
        gate(tuned(qs=(0, 1)).report, base)


def brute_force_max(scores, k, draws, rng, higher=True):
    picks = rng.choice(np.asarray(scores), size=(draws, k), replace=True)
    best = picks.max(axis=1) if higher else picks.min(axis=1)
    return best.mean(), best.std(ddof=1)


@pytest.mark.parametrize("higher", [True, False])
def test_expected_max_matches_monte_carlo(higher):
    rng = np.random.default_rng(7)
    scores = np.round(rng.normal(0.8, 0.03, 12), 3)
    scores[3] = scores[5]                   # a tie
    curve = expected_max(scores, higher_is_better=higher)
    assert curve.budgets == tuple(range(1, 13))
    assert curve.mean[0] == pytest.approx(scores.mean())
    for k in (1, 2, 5, 12, 40):
        mc_mean, mc_sd = brute_force_max(scores, k, 200_000, rng, higher)
        exact = expected_max(scores, [k], higher_is_better=higher)
        assert abs(exact.mean[0] - mc_mean) < 5 * mc_sd / np.sqrt(200_000) + 1e-12
        assert exact.sd[0] == pytest.approx(mc_sd, rel=0.02, abs=1e-4)
    best = scores.max() if higher else scores.min()
    assert expected_max(scores, [10_000], higher_is_better=higher).mean[0] == pytest.approx(best)
    assert all((np.diff(curve.mean) >= -1e-15) if higher else (np.diff(curve.mean) <= 1e-15))


def test_graphnetz_plot_tuning_draws_both_arms(tmp_path):
    pytest.importorskip("matplotlib")
    base, cand = tmp_path / "base.json", tmp_path / "cand.json"
    tuned().report.to_json(cand)
    base.write_text(json.dumps(tuned(shift=0.01).report.to_values_dict()))
    out = tmp_path / "curves.png"
    assert main(["plot", str(base), str(cand), "--tuning", "-o", str(out)]) == 0
    assert out.stat().st_size > 1000
    fixed = tmp_path / "fixed.json"
    fake_runner("toy", {"M": {"q": 0}}, seeds=range(3)).to_json(fixed)
    assert main(["plot", str(fixed), "--tuning", "-o", str(out)]) == 2


def test_winner_stability_matches_exact_enumeration_of_resamples():
    from pytest_graphnetz.gates.tuning import winner_stability
    from pytest_graphnetz.report.trials import Trial

    per_seed = {"a": (0.80, 0.82, 0.70), "b": (0.78, 0.79, 0.81)}
    trials = [Trial({"t": k}, float(np.mean(v)), v) for k, v in per_seed.items()]
    # the exact share over all 27 equally likely resamples of 3 seeds
    a, b = (np.array(v) for v in per_seed.values())
    exact = np.mean([a[list(idx)].mean() > b[list(idx)].mean()
                     for idx in itertools.product(range(3), repeat=3)])
    winner = 0 if a.mean() > b.mean() else 1
    expected = exact if winner == 0 else 1 - exact
    got = winner_stability(trials, True, resamples=20_000)
    assert abs(got - expected) < 4 * np.sqrt(expected * (1 - expected) / 20_000)
    assert winner_stability([Trial({}, 0.5, (0.5, 0.5)), Trial({}, 0.4, (0.4, 0.4))],
                            True) == 1.0
    assert winner_stability([Trial({}, 0.5)], True) is None


def test_a_tuned_candidate_against_a_fixed_recipe_is_told_a_way_through_that_works():
    """The refusal is one sentence that parses and names a way through: the winner, gated as
    a fixed recipe (its confirmation seeds never served the search), which then is judged."""
    result = tuned()
    fixed = fake_runner("toy", {"M": {"q": 0}}, seeds=range(10))
    with pytest.raises(GateRefusal) as info:
        gate(result.report, fixed)
    text = str(info.value)
    assert ("tuning budgets differ (candidate 4 trials × 3 seeds, baseline not tuned (a fixed "
            "recipe)): a larger search expects a better winner whatever the change; to ask "
            "whether the tuned model beats the fixed recipe, gate its winner {\"q\": 3} as a "
            "fixed recipe") in text
    assert "with tune both" not in text
    # the way through: the winner's configuration as a fixed recipe, on the same seeds
    winner = fake_runner("toy", {"M": dict(result.winner)}, seeds=range(10))
    (verdict,) = gate(winner, fixed)
    assert verdict.verdict in ("REGRESSED", "NOT WORSE", "BETTER", "INCONCLUSIVE")
    # the other way round: a fixed candidate against a tuned baseline
    with pytest.raises(GateRefusal, match=r"to ask whether the fixed recipe beats the tuned "
                                          r"baseline, gate it against the baseline's winner"):
        gate(fixed, result.report)
