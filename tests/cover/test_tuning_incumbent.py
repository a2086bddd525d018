"""The incumbent rule of a search: given the baseline's winner, a search keeps it unless a
challenger beats it on validation (one-sided paired t per challenger, Holm over them), checked
against scipy and statsmodels; the record and the verdict say which; refusals still fire."""

from __future__ import annotations

import json

import numpy as np
import pytest
from scipy import stats
from statsmodels.stats.multitest import multipletests

from pytest_graphnetz import BenchmarkReport
from pytest_graphnetz.gates.refreshing.baselines import BaselineHandle
from pytest_graphnetz.gates.tuning import SELECTION_ALPHA, select_incumbent, tune
from pytest_graphnetz.gates.verdicts.values import GateRefusal
from pytest_graphnetz.report.epochs import History, MetricSpec
from pytest_graphnetz.report.trials import Trial, TuningError, TuningRecord, record_of
from tests.helpers.reports import gate

ACC = MetricSpec.from_name("accuracy")


def noisy_runner(tasks, models, *, seeds, lift=None, salt=0, **_):
    """A runner without training whose configurations are all equally good (validation 0.8)
    except ``lift = (key, amount)``; each (configuration, seed, ``salt``: the arm) draws its own
    noise, sd 0.01, so trials differ by selection noise alone."""
    (name, factory), = models.items()
    cfg = json.loads(factory.config) if hasattr(factory, "config") else factory
    histories = {}
    for s in seeds:
        noise = np.random.default_rng([int(s), cfg["k"], salt]).normal(0, 0.01, 2)
        up = lift[1] if lift is not None and cfg["k"] == lift[0] else 0.0
        val, test = 0.8 + up + noise[0], 0.8 + up + noise[1]
        histories[("toy", name, int(s))] = History(test=(test / 2, test), val=(val / 2, val))
    return BenchmarkReport(tasks=["toy"], models=[name], seeds=list(seeds),
                           metrics={"toy": ACC}, histories=histories)


SPACE = [{"k": k} for k in range(6)]


def search(lift=None, incumbent=None, salt=0, search=5, **kw):
    return tune("toy", {"M": dict}, SPACE, search_seeds=search, seeds=range(10),
                incumbent=incumbent,
                runner=lambda t, m, **k: noisy_runner(t, m, lift=lift, salt=salt, **k), **kw)


def reference(trials, incumbent, higher=True):
    """scipy's one-sided paired t per challenger, statsmodels' Holm over them."""
    sign = 1 if higher else -1
    scores = sign * np.array([t.validation for t in trials])
    challengers = [i for i in range(len(trials)) if i != incumbent]
    raw = [stats.ttest_rel(scores[i], scores[incumbent], alternative="greater").pvalue
           for i in challengers]
    reject, adjusted, _, _ = multipletests(raw, alpha=SELECTION_ALPHA, method="holm")
    return dict(zip(challengers, adjusted, strict=True)), dict(zip(challengers, reject,
                                                                   strict=True))


@pytest.mark.parametrize("higher", [True, False])
def test_the_incumbent_is_kept_under_noise_and_displaced_by_a_clear_winner(higher):
    rng = np.random.default_rng(3)
    noise = [Trial({"k": k}, 0.0, tuple(0.8 + rng.normal(0, 0.01, 6))) for k in range(5)]
    sign = 1 if higher else -1
    for trials, expect in ((noise, 2), (
            # trial 4 beats the incumbent clearly on every seed; trial 1 is ahead on the mean,
            # but only by noise, so it does not displace it
            [*noise[:1], Trial({"k": 1}, 0.0, tuple(np.array(noise[2].validation)
                                                    + sign * np.array([0.05, -0.04, 0.05,
                                                                       -0.03, 0.04, 0.0]))),
             *noise[2:4], Trial({"k": 4}, 0.0, tuple(np.array(noise[2].validation) + sign
                                                      * rng.normal(0.03, 0.005, 6)))], 4)):
        trials = [Trial(t.config, float(np.mean(t.validation)), t.validation) for t in trials]
        winner, reading = select_incumbent(trials, 2, higher)
        adjusted, reject = reference(trials, 2, higher)
        assert reading.p_adjusted[2] is None                              # the incumbent
        assert [reading.p_adjusted[i] for i in adjusted] == pytest.approx(list(
            adjusted.values()), rel=1e-9)
        assert winner == expect == (max((i for i in reject if reject[i]),
                                        key=lambda i: reading.diffs[i], default=2))
        scores = sign * np.array([t.validation for t in trials])
        assert reading.diffs == pytest.approx(tuple((scores - scores[2]).mean(axis=1)))
    assert sum(reject.values()) == 1 and reading.diffs[1] > 0          # trial 1 not enough


def test_a_diverged_challenger_is_not_tested_and_a_diverged_incumbent_cannot_be_kept():
    base = [Trial({"k": 0}, 0.80, (0.80, 0.81, 0.79)), Trial({"k": 1}, 0.9, (0.9, 0.92, 0.89)),
            Trial({"k": 2}, float("nan"), (0.99, float("nan"), 0.99))]
    winner, reading = select_incumbent(base, 0, True)
    assert winner == 1 and reading.p_adjusted[2] is None and reading.diffs[2] is None
    # only trial 1 was tested: Holm over a family of one is its raw p
    assert reading.p_adjusted[1] == pytest.approx(stats.ttest_rel(
        base[1].validation, base[0].validation, alternative="greater").pvalue)
    winner, reading = select_incumbent(base, 2, True)
    assert winner == 1 and reading.p_adjusted == (None,) * 3
    # identical scores on every seed: no evidence, kept
    same = [base[0], Trial({"k": 1}, 0.80, base[0].validation)]
    assert select_incumbent(same, 0, True)[0] == 0


def test_a_search_given_its_baseline_keeps_the_winner_and_says_so(tmp_path):
    baseline = search()
    assert baseline.record.incumbent is None                         # first tuning: as today
    plain = search(salt=2)                                            # other draws: other winner
    assert plain.winner != baseline.winner
    kept = search(salt=2, incumbent=baseline.report)
    record = kept.record
    assert kept.winner == baseline.winner and record.incumbent_kept
    assert record.incumbent.trial == record.winner == baseline.record.winner
    assert all(p > SELECTION_ALPHA for p in record.incumbent.p_adjusted if p is not None)
    assert "with the baseline's winner as incumbent (trial " in record.describe()
    assert "kept, no challenger beat it on validation at Holm level 0.05 (closest: trial" \
        in record.describe()
    # the same from a committed baseline (the summary form, read through a handle)
    path = tmp_path / "base.json"
    path.write_text(json.dumps(baseline.report.to_values_dict()))
    handle = BaselineHandle(path)
    assert record_of(handle.load().protocol).full is False
    assert search(salt=2, incumbent=handle).record == record
    # no baseline written yet: the best mean wins, as a first tuning
    assert search(salt=2, incumbent=BaselineHandle(tmp_path / "none.json")).record \
        == plain.record
    notes = " ".join(gate(kept.report, baseline.report)[0].notes)
    assert "candidate search: 6 trials × 5 seeds" in notes and "kept, no challenger" in notes
    assert "picked different configurations" not in notes


def test_a_clear_winner_displaces_the_incumbent_and_the_verdict_says_by_how_much():
    baseline = search()
    challenger = (baseline.winner["k"] + 1) % len(SPACE)
    moved = search(lift=(challenger, 0.05), incumbent=baseline.record, salt=1)
    record = moved.record
    assert moved.winner == {"k": challenger} and record.incumbent_kept is False
    diff = record.incumbent.diffs[record.winner]
    assert diff == pytest.approx(record.trials[record.winner].mean
                                 - record.trials[record.incumbent.trial].mean)
    assert (f"displaced by trial {record.winner}, {diff:+.4g} on validation over the search "
            "seeds (paired t, Holm-adjusted p") in record.describe()
    assert record_of(json.loads(json.dumps({"tuning": record.to_dict()}))) == record
    assert record.summary().incumbent == record.incumbent           # the baseline keeps it
    notes = " ".join(gate(moved.report, baseline.report)[0].notes)
    assert "displaced the baseline's winner on validation evidence" in notes


def test_an_incumbent_outside_the_space_or_of_another_model_is_refused_before_training():
    baseline = search()
    calls = []

    def counting(tasks, models, **kw):
        calls.append(kw)
        return noisy_runner(tasks, models, **kw)

    others = [c for c in SPACE if c != baseline.winner]
    with pytest.raises(TuningError, match=r"the incumbent \(the baseline's winner, \{'k': \d\}\) "
                                          r"is not in `space`: add it, or pass incumbent=None"):
        tune("toy", {"M": dict}, others, seeds=range(10), incumbent=baseline.report,
             runner=counting)
    with pytest.raises(TuningError, match="tuned model 'M', not 'N'"):
        tune("toy", {"N": dict}, SPACE, seeds=range(10), incumbent=baseline.record,
             runner=counting)
    with pytest.raises(TuningError, match="`incumbent` must be the baseline"):
        tune("toy", {"M": dict}, SPACE, seeds=range(10), incumbent={"k": 1}, runner=counting)
    assert calls == []


def test_refusals_still_fire_with_an_incumbent():
    baseline = search()
    cand = search(incumbent=baseline.record, salt=1)
    with pytest.raises(GateRefusal, match="budgets differ"):
        gate(search(search=6, incumbent=baseline.record).report, baseline.report)
    bad = search(incumbent=baseline.record).report
    bad.protocol["tuning"]["confirmation"]["seeds"] = [0, 1]
    bad.protocol["tuning"]["search_seeds"] = [0, 1, 2, 3, 4]
    with pytest.raises(GateRefusal, match=r"confirmed on seed\(s\) 0-4 that its search"):
        gate(bad, baseline.report)
    broken = cand.report
    broken.protocol["tuning"]["incumbent"]["trial"] = 17
    with pytest.raises(GateRefusal, match="names incumbent trial 17 of 6"):
        gate(broken, baseline.report)
    assert TuningRecord.from_dict(cand.record.to_dict()) == cand.record
