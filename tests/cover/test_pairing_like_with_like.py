"""The gate pairs numbers that mean the same thing on both sides, or refuses.

- Epoch rule: a candidate read at ``best_val`` against a baseline written under ``final`` is
  paired at ``best_val`` (the baseline holds both rules; a note says so); unchanged code reads
  IDENTICAL in a real pytest session (before, the candidate's best-val epoch was paired with the
  baseline's last epoch, silently). A baseline that cannot be read at the candidate's rule
  (no validation series) is refused naming both rules.
- Fold scheme: a candidate run as k-fold cross-validation against a baseline of plain seeds (or
  another k) is refused; metric and direction were refused already (checked here too).
- Seeds: a baseline of 20,000 seeds gated by 10 pairs the right values (the pairing is linear in
  the baseline's seeds: benchmarks/seed_scale.py measures the time).
"""

from __future__ import annotations

import re

import numpy as np
import pytest

from pytest_graphnetz import BenchmarkReport, History, MetricSpec, assert_not_worse
from pytest_graphnetz.gates import compare_reports
from pytest_graphnetz.gates.verdicts.values import GateRefusal

pytest.importorskip("torch_geometric")

# One copy of the plugin's classes for every session (pytester drops what a session imports).
import pytest_graphnetz.runner.command  # noqa: E402, F401
from pytest_graphnetz.runner import TripleError  # noqa: E402, F401
from tests.helpers.command_projects import COMMAND_PROJECT as PROJECT  # noqa: E402

# Validation peaks at the first epoch, test falls after it: best_val and final differ by ~10
# points on every seed.
TRAIN = '''
import json, os, random, sys
random.seed(int(os.environ["GRAPHNETZ_SEED"]))
noise = 0.01 * random.random()
json.dump({"metric": "accuracy", "test": [0.8 + noise, 0.75 + noise, 0.7 + noise],
           "val": [0.9, 0.8, 0.7]}, open(sys.argv[1], "w"))
'''

GATES = """
import os

from pytest_graphnetz import assert_not_worse

import project


def test_scripts(graphnetz_run, graphnetz_baseline):
    run = graphnetz_run(project.TASKS, project.MODELS)
    run.epoch_selection = os.environ["EPOCH_RULE"]
    verdicts = assert_not_worse(run, graphnetz_baseline())
    with open("notes.txt", "w") as fh:
        fh.write("\\n".join(n for v in verdicts for n in v.notes))
"""


def test_a_best_val_run_against_a_final_baseline_is_paired_at_best_val(
        pytester: pytest.Pytester, tmp_path_factory, monkeypatch) -> None:
    pytester.makepyfile(project=PROJECT, test_scripts=GATES, train=TRAIN)
    args = ["-o", "graphnetz_seeds=3", "-p", "no:cacheprovider", "-rA",
            f"--graphnetz-cache-dir={tmp_path_factory.mktemp('cache')}"]
    monkeypatch.setenv("EPOCH_RULE", "final")
    pytester.runpytest(*args, "--graphnetz-update-baselines").assert_outcomes(passed=1)
    monkeypatch.setenv("EPOCH_RULE", "best_val")
    again = pytester.runpytest(*args)
    again.assert_outcomes(passed=1)
    out = again.stdout.str()
    assert re.search(r"t/A\s.*IDENTICAL", out), out
    assert "written under epoch rule 'final'; it is read at the candidate's rule 'best_val'" \
        in (pytester.path / "notes.txt").read_text()


def _report(values: np.ndarray, *, val: bool, rule: str = "final",
            folds: int | None = None) -> BenchmarkReport:
    """One cell, a 2-epoch history per seed whose last test value is ``values[s]`` (the first
    0.1 higher, where validation peaks when ``val``)."""
    histories = {("t", "m", s): History(test=[v + 0.1, v], val=[0.9, 0.8] if val else None)
                 for s, v in enumerate(values)}
    protocol = {} if folds is None else {"tasks": {"t": {"config": {"folds": folds}}}}
    report = BenchmarkReport(tasks=["t"], models=["m"], seeds=range(len(values)),
                             metrics={"t": MetricSpec("accuracy", True)},
                             histories=histories, protocol=protocol)
    report.epoch_selection = rule
    return report


VALUES = 0.7 + 0.01 * np.random.default_rng(0).standard_normal(6)


def assert_first_line_fits(refusal: GateRefusal) -> None:
    """A refusal opens with a short line saying what cannot be paired; the detail follows."""
    from pytest_graphnetz.base.text import FIRST_LINE_WIDTH

    first, rest = str(refusal).split("\n", 1)
    assert len(first) <= FIRST_LINE_WIDTH and first.startswith("cannot pair"), first
    assert rest


def test_a_baseline_without_validation_series_is_refused_naming_both_rules() -> None:
    candidate = _report(VALUES, val=True, rule="best_val")
    baseline = _report(VALUES, val=False)
    with pytest.raises(GateRefusal, match=r"by 'best_val' but the baseline was written under "
                                          r"'final' and has no validation series") as refused:
        compare_reports(candidate, baseline)
    assert_first_line_fits(refused.value)
    # read at one rule, the same values are IDENTICAL, and the caller's baseline is untouched
    both = _report(VALUES, val=True)
    verdicts = compare_reports(candidate, both)
    assert verdicts[0].verdict.value == "IDENTICAL" and both.epoch_selection == "final"
    # the rule only: final on both sides never needs a validation series
    assert compare_reports(_report(VALUES, val=True), baseline)[0].verdict.value == "IDENTICAL"


@pytest.mark.parametrize("ours, theirs", [(5, None), (None, 5), (5, 10)])
def test_another_fold_scheme_is_refused(ours, theirs) -> None:
    def scheme(k):
        return {} if k is None else {"folds": k}

    candidate, baseline = _report(VALUES, val=False), _report(VALUES, val=False)
    candidate.protocol = {"tasks": {"t": {"config": scheme(ours)}}}
    baseline.protocol = {"tasks": {"t": {"config": scheme(theirs)}}}
    with pytest.raises(GateRefusal, match="per-seed pairing would be fictional") as refused:
        compare_reports(candidate, baseline)
    assert_first_line_fits(refused.value)


def test_another_metric_direction_is_refused() -> None:
    candidate, baseline = _report(VALUES, val=False), _report(VALUES, val=False)
    baseline.metrics = {"t": MetricSpec("accuracy", False)}
    with pytest.raises(GateRefusal, match="two different metrics cannot be paired"):
        compare_reports(candidate, baseline)


def test_a_20000_seed_baseline_gated_by_10_pairs_the_right_seeds() -> None:
    n = 20_000
    X = 0.8 + 0.01 * np.random.default_rng(1).standard_normal((1, 1, n))
    baseline = BenchmarkReport.from_arrays(X, tasks=["t"], models=["m"], seeds=range(n),
                                           metric="accuracy")
    run = BenchmarkReport.from_arrays(X[:, :, :10].copy(), tasks=["t"], models=["m"],
                                      seeds=range(10), metric="accuracy")
    assert assert_not_worse(run, baseline)[0].verdict.value == "IDENTICAL"
    assert baseline.seed_positions([9, 0, 19_999]) == [9, 0, 19_999]
    with pytest.raises(KeyError, match="no seed 20000 in this report"):
        baseline.seed_positions([3, 20_000])
