"""Rerun-safe seeds where a user meets them: a scratch project whose trainer trains nothing (each
value is a formula of the seed), gated at 10 seeds, then rerun with the seeds the message
advises, in the same project and cache: the rerun is judged as look 2 of the cell's chain; a
rerun after a decided verdict re-decides nothing; the opt-out judges a run alone at α.
References: scipy's t quantiles and intervals, and the chain's spending function written out;
the calibrated critical value of look 2 comes from ``stats.rerun`` (tested against simulation
in ``test_stats_rerun.py``) and is checked here against the t statistic numpy computes.
"""

from __future__ import annotations

import json
import math
import re

import numpy as np
import pytest
from scipy import stats as sps

# Pytester's in-process runs drop modules first imported inside them; torch cannot be imported
# twice in one process, so everything heavy is imported here, once.
torch = pytest.importorskip("torch")
import pytest_graphnetz.gates  # noqa: E402,F401
import pytest_graphnetz.runner  # noqa: E402,F401
from tests.test_plugin_gates import _table  # noqa: E402

SHIFT, SD = -0.002, 0.025   # the steady model's per-seed change: SHIFT + SD·sin(2.4 s + 0.7)

PROJECT = '''
import math

import torch

from pytest_graphnetz import Task

CANDIDATE = {candidate}


def loader(kind):
    def load(root, *, seed):   # the task's kind is in its data, so no triple is shared
        return {{"seed": torch.tensor([seed]), "kind": torch.tensor([kind])}}
    return load


def scripted(model, data, *, task, device):
    seed, task = int(data["seed"]), ("steady", "broken")[int(data["kind"])]
    value = 0.8 + 0.03 * math.sin(7 * seed)
    if CANDIDATE and task == "steady":   # a small change, noisy per seed: undecided at 10
        value += {shift} + {sd} * math.sin(2.4 * seed + 0.7)
    if CANDIDATE and task == "broken":   # a clear drop: REGRESSED at 10
        value += -0.03 + 0.005 * math.sin(3 * seed)
    return {{"test": [value], "val": [value]}}


def model(in_channels, out_channels):
    return torch.nn.Linear(in_channels, out_channels)


def task(name):
    return {{name: Task(name, loader(("steady", "broken").index(name)), trainer=scripted,
                        epochs=1, in_channels=2, out_channels=2)}}


MODELS = {{"m": model}}
'''

GATES = '''
import json

from pytest_graphnetz import assert_not_worse

import project


def test_steady(graphnetz_run, graphnetz_baseline):
    verdicts = assert_not_worse(graphnetz_run(project.task("steady"), project.MODELS),
                                graphnetz_baseline())
    if not project.CANDIDATE:   # the refresh that writes the baseline
        return
    (v,) = verdicts
    c = v.comparison
    with open("steady.json", "a") as fh:
        fh.write(json.dumps({"verdict": v.verdict, "alpha": c.alpha, "n": c.n,
                            "ci": [c.ci.low, c.ci.high], "needed": c.seeds_needed,
                            "note": v.table_note, "message": v.message()}) + "\\n")


def test_broken(graphnetz_run, graphnetz_baseline):
    assert_not_worse(graphnetz_run(project.task("broken"), project.MODELS),
                     graphnetz_baseline())
'''


def _steady(pytester: pytest.Pytester) -> dict:
    return json.loads((pytester.path / "steady.json").read_text().splitlines()[-1])


def _row(output: str, cell: str) -> str:
    match = re.search(rf"^.*{re.escape(cell)}\s.*$", _table(output), re.M)
    assert match, _table(output)
    return match.group(0)


def _diffs(n: int) -> np.ndarray:
    return np.array([SHIFT + SD * math.sin(2.4 * s + 0.7) for s in range(n)])


def test_a_rerun_on_the_advice_is_look_two_of_the_chain(pytester: pytest.Pytester) -> None:
    from pytest_graphnetz.stats.rerun import rerun_design, rerun_seeds_needed

    pytester.makepyfile(project=PROJECT.format(candidate=False, shift=SHIFT, sd=SD),
                        test_chained=GATES)
    pytester.runpytest("--graphnetz-seeds=50", "--graphnetz-update-baselines").assert_outcomes(
        passed=2)
    pytester.makepyfile(project=PROJECT.format(candidate=True, shift=SHIFT, sd=SD))

    # Run 1, 10 seeds: the first look of each cell's chain, at ρα = 0.85 × 0.05.
    first = pytester.runpytest("--graphnetz-seeds=10")
    first.assert_outcomes(passed=1, failed=1)
    one = _steady(pytester)
    d = _diffs(10)
    assert one["verdict"] == "INCONCLUSIVE" and one["n"] == 10
    assert one["alpha"] == pytest.approx(0.85 * 0.05)
    ci = sps.ttest_1samp(d, 0.0).confidence_interval(1 - 2 * 0.85 * 0.05)
    assert one["ci"] == pytest.approx([ci.low, ci.high], abs=1e-9)
    # The advice: the next run of the chain, planned for its own boundary.
    advised = rerun_seeds_needed([10], float(np.std(d, ddof=1)), 0.01)
    assert one["needed"] == advised and 10 < advised <= 45
    assert f"rerun with --graphnetz-seeds={advised})" in one["message"]

    # Run 2, the advised seeds, same project and cache: look 2 of the chain 10 → N.
    second = pytester.runpytest(f"--graphnetz-seeds={advised}")
    second.assert_outcomes(passed=1, failed=1)
    two = _steady(pytester)
    design = rerun_design([10], advised)
    spent = 0.05 * (1 - 0.15 * 10 / advised)   # α(n) = α·(1 − (1 − ρ)·n₁/n)
    assert design.spent[-1] == pytest.approx(spent)
    assert two["n"] == advised and two["alpha"] == pytest.approx(design.nominal[1])
    assert design.nominal[1] == pytest.approx(sps.t.sf(design.critical[1], advised - 1))
    assert two["note"] == f"rerun 2 of chain 10→{advised}: α spent {spent:.4f} of 0.05"
    d = _diffs(advised)
    t_not_worse = (d.mean() + 0.01) / (d.std(ddof=1) / math.sqrt(advised))
    t_first = (d[:10].mean() + 0.01) / (d[:10].std(ddof=1) / math.sqrt(10))
    # look 1 did not cross (its boundary: scipy's t quantile at ρα), look 2 did
    assert t_first < sps.t.ppf(1 - 0.85 * 0.05, 9)
    assert t_not_worse >= design.critical[1]
    assert two["verdict"] == "NOT WORSE"
    assert f"rerun 2 of chain 10→{advised}" in _row(second.stdout.str(), "steady/m")
    # The broken cell was decided REGRESSED at run 1: it is not rerun, but judged at its 10.
    broken = _row(second.stdout.str(), "broken/m")
    assert "REGRESSED" in broken and "decided REGRESSED at run 1 of chain 10" in broken
    assert re.search(r"\s10\s", broken), broken

    # Run 3, more seeds after NOT WORSE: nothing is re-decided; judged at the chain's seeds.
    third = pytester.runpytest(f"--graphnetz-seeds={advised + 5}")
    third.assert_outcomes(passed=1, failed=1)
    three = _steady(pytester)
    assert three["verdict"] == "NOT WORSE" and three["n"] == advised
    assert three["note"].startswith(f"decided NOT WORSE at run 2 of chain 10→{advised}")

    # Opted out (the ini key of --graphnetz-single-run): the run alone, at α, on all its seeds.
    alone = pytester.runpytest(f"--graphnetz-seeds={advised + 5}", "-o",
                               "graphnetz_single_run=true")
    alone.assert_outcomes(passed=1, failed=1)
    four = _steady(pytester)
    assert four["alpha"] == 0.05 and four["n"] == advised + 5 and "chain" not in four["note"]
