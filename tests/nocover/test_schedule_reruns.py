"""Reruns where a user meets them: a scratch project whose trainer trains nothing (each value is a
formula of the seed), gated at 10 seeds, then rerun with more, fewer or the same seeds, with the
cache kept, deleted or in another checkout, in two processes at once: every verdict is the
schedule's first crossing on the seeds the run holds, recomputed from the values, so nothing a
run leaves behind can change the next one. References: scipy's t quantiles and intervals, the
spending function written out, the calibrated critical values of later looks checked against the
t statistics numpy computes.
"""

from __future__ import annotations

import json
import math
import re
import shutil
import subprocess
import sys

import numpy as np
import pytest
from scipy import stats as sps

# Pytester's in-process runs drop modules first imported inside them; torch cannot be imported
# twice in one process, so everything heavy is imported here, once.
torch = pytest.importorskip("torch")
import pytest_graphnetz.gates  # noqa: E402,F401
import pytest_graphnetz.runner  # noqa: E402,F401
from pytest_graphnetz.stats.boundaries import design  # noqa: E402
from pytest_graphnetz.stats.lookahead import (  # noqa: E402
    PlanSpec,
    advise_next_look,
    plan_next_look,
)
from tests.helpers.sessions import gates_table  # noqa: E402

SHIFT, SD = -0.002, 0.025   # the steady model's per-seed change: SHIFT + SD·sin(2.4 s + 0.7)
BASELINE_SEEDS = 80

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


def _log(name, v):
    c = v.comparison
    with open(name + ".json", "a") as fh:
        fh.write(json.dumps({"verdict": str(v.verdict), "alpha": c.decision.level,
                            "n": c.evidence.n,
                            "ci": [c.decision.ci.low, c.decision.ci.high], "needed": c.plan.needed,
                            "note": v.table_note, "message": v.message()}) + "\\n")


def test_steady(graphnetz_run, graphnetz_baseline):
    report = graphnetz_run(project.task("steady"), project.MODELS)
    verdicts = assert_not_worse(report, graphnetz_baseline())
    if project.CANDIDATE:   # not the refresh that writes the baseline
        _log("steady", verdicts[0])
        # a second gate call on the same cell in the same test reads the same verdict
        again = assert_not_worse(report, graphnetz_baseline())
        _log("steady-again", again[0])


def test_broken(graphnetz_run, graphnetz_baseline):
    assert_not_worse(graphnetz_run(project.task("broken"), project.MODELS),
                     graphnetz_baseline())
'''


def _last(pytester: pytest.Pytester, name: str = "steady") -> dict:
    return json.loads((pytester.path / f"{name}.json").read_text().splitlines()[-1])


def _row(output: str, cell: str) -> str:
    match = re.search(rf"^.*{re.escape(cell)}\s.*$", gates_table(output), re.M)
    assert match, gates_table(output)
    return match.group(0)


def _diffs(n: int) -> np.ndarray:
    return np.array([SHIFT + SD * math.sin(2.4 * s + 0.7) for s in range(n)])


@pytest.fixture(scope="module")
def gated() -> dict:
    """The reference numbers the tests check against: the advice for the steady cell."""
    d10 = _diffs(10)
    sd = float(np.std(d10, ddof=1))
    return {"advised": advise_next_look(sd, 10, PlanSpec(0.01, first=10), taken=10),
            "expected": plan_next_look(sd, 10, PlanSpec(0.01, first=10), taken=10).expected}


@pytest.fixture(scope="module")
def baselines(tmp_path_factory: pytest.TempPathFactory) -> object:
    """The project's baselines at 80 seeds, refreshed once in a fresh session."""
    root = tmp_path_factory.mktemp("refreshed")
    (root / "project.py").write_text(PROJECT.format(candidate=False, shift=SHIFT, sd=SD))
    (root / "test_gated.py").write_text(GATES)
    run = subprocess.run([sys.executable, "-m", "pytest", f"--graphnetz-seeds={BASELINE_SEEDS}",
                          "--graphnetz-update-baselines", "-q", "-p", "no:cacheprovider"],
                         cwd=root, capture_output=True, text=True, timeout=600)
    assert run.returncode == 0, run.stdout[-2000:] + run.stderr[-2000:]
    return root / "baselines"


@pytest.fixture
def project(pytester: pytest.Pytester, baselines) -> pytest.Pytester:
    pytester.makepyfile(project=PROJECT.format(candidate=True, shift=SHIFT, sd=SD),
                        test_gated=GATES)
    shutil.copytree(baselines, pytester.path / "baselines")
    return pytester


def test_a_rerun_on_the_advice_walks_the_same_looks_and_decides(project, gated) -> None:
    # Run 1, 10 seeds: look 1 of the schedule 10→20→…, at ρα = 0.85 × 0.05.
    first = project.runpytest("--graphnetz-seeds=10")
    first.assert_outcomes(passed=1, failed=1)
    assert "looks 10→20→40→… (look 1 decides at 0.0425)" in first.stdout.str()
    one = _last(project)
    d = _diffs(10)
    assert one["verdict"] == "INCONCLUSIVE" and one["n"] == 10
    assert one["alpha"] == pytest.approx(0.85 * 0.05)
    ci = sps.ttest_1samp(d, 0.0).confidence_interval(1 - 2 * 0.85 * 0.05)
    assert one["ci"] == pytest.approx([ci.low, ci.high], abs=1e-9)
    # the advice: the next look (what the CI loop runs), and the seeds the cell is expected to
    # need, planned given look 1 was INCONCLUSIVE; the rerun below takes the look at which it
    # decides with probability 0.8 (advise_next_look), which the loop reaches look by look
    advised = gated["advised"]
    assert one["needed"] == 20 and advised in (20, 40, 80)
    assert "next look: 20 seeds (rerun with --graphnetz-seeds=20;" in one["message"]
    assert f"expected to decide by about {gated['expected']} seeds" in one["message"]
    assert "91.5%, look 1 of 10→…" in _row(first.stdout.str(), "steady/m")

    # Run 2, the advised seeds, same project and cache: the looks 10, 20, ... up to it.
    second = project.runpytest(f"--graphnetz-seeds={advised}")
    second.assert_outcomes(passed=1, failed=1)
    two = _last(project)
    full = design(10, advised)
    assert full.spent[-1] == pytest.approx(0.05 * (1 - 0.15 * 10 / advised))
    assert full.nominal[-1] == pytest.approx(sps.t.sf(full.critical[-1], advised - 1))
    k = len(full.looks) - 1
    crossed = [n for n in full.looks
               if (_diffs(n).mean() + 0.01) / (_diffs(n).std(ddof=1) / math.sqrt(n))
               >= full.critical[full.looks.index(n)]]
    assert crossed, "the advised rerun decides nothing here: the case is not exercised"
    at = crossed[0]
    assert two["verdict"] == "NOT WORSE" and two["n"] == at
    assert two["alpha"] == pytest.approx(full.nominal[full.looks.index(at)])
    row = _row(second.stdout.str(), "steady/m")
    assert f"look {full.looks.index(at) + 1} of {'→'.join(map(str, full.looks[:k + 1]))}→…" in row
    # the broken cell reads REGRESSED at look 1 again, on its first 10 seeds
    assert "REGRESSED" in _row(second.stdout.str(), "broken/m")
    assert _last(project, "steady-again") == two   # the second call: the same verdict

    # Run 3, the advised seeds again with the cache deleted: the same verdict, bit for bit.
    shutil.rmtree(project.path / ".pytest_cache")
    project.runpytest(f"--graphnetz-seeds={advised}").assert_outcomes(passed=1, failed=1)
    assert _last(project) == two

    # Opted out (the ini key of --graphnetz-single-run): the run alone, at α, on all its seeds.
    alone = project.runpytest(f"--graphnetz-seeds={advised}", "-o",
                              "graphnetz_single_run=true")
    alone.assert_outcomes(passed=1, failed=1)
    four = _last(project)
    assert four["alpha"] == 0.05 and four["n"] == advised
    assert "judged alone at α: not rerun-safe (--graphnetz-single-run)" in four["note"]


def test_a_regressed_cell_stays_regressed_whatever_ran_in_between(project) -> None:
    """REGRESSED at 10 seeds; then a run on 3 seeds (below the first look: refused, naming the
    seeds and the fix); then 10 seeds again: REGRESSED, exit 1. An earlier
    version's rerun-chain records in the cache are ignored, with one notice."""
    project.runpytest("--graphnetz-seeds=10").assert_outcomes(passed=1, failed=1)
    few = project.runpytest("--graphnetz-seeds=3")
    row = _row(few.stdout.str(), "broken/m")
    assert "REFUSED" in row and "the paired 3 seeds (0-2) hold no look" in row
    assert few.ret == 1
    planted = project.path / ".pytest_cache" / "d" / "graphnetz" / "rerun-chains"
    planted.mkdir(parents=True)
    (planted / "forged.json").write_text('{"looks": [2, 3, 10], "verdicts": ["NOT WORSE"]}')
    again = project.runpytest("--graphnetz-seeds=10")
    again.assert_outcomes(passed=1, failed=1)
    assert again.ret == 1
    assert "REGRESSED" in _row(again.stdout.str(), "broken/m")
    assert "rerun-chain records of an earlier version; they are ignored" in again.stdout.str()


def test_another_checkout_and_cache_judge_a_rerun_the_same(project, tmp_path) -> None:
    """A 20-seed run after a 10-seed INCONCLUSIVE reads the same in the same checkout and
    cache, and in a copy of the project elsewhere with a fresh cache."""
    project.runpytest("--graphnetz-seeds=10").assert_outcomes(passed=1, failed=1)
    here = project.runpytest("--graphnetz-seeds=20")
    mine = _last(project)
    other = tmp_path / "other-checkout"
    shutil.copytree(project.path, other, ignore=shutil.ignore_patterns(".pytest_cache",
                                                                        "*.json"))
    shutil.copytree(project.path / "baselines", other / "baselines", dirs_exist_ok=True)
    run = subprocess.run([sys.executable, "-m", "pytest", "--graphnetz-seeds=20", "-p",
                          "no:cacheprovider", "--graphnetz-cache-dir", str(tmp_path / "cache"),
                          "-q"], cwd=other, capture_output=True, text=True, timeout=300)
    assert run.returncode == 1, run.stdout[-2000:] + run.stderr[-2000:]
    theirs = json.loads((other / "steady.json").read_text().splitlines()[-1])
    assert theirs == mine
    assert _row(here.stdout.str(), "steady/m").split()[1:] == \
        _row(run.stdout, "steady/m").split()[1:]


def test_two_processes_at_once_cannot_change_a_verdict(project) -> None:
    """A 3-seed and a 10-seed session on one cache at the same time, then 10 seeds again: each
    reads what it reads alone, and the last reads REGRESSED."""
    alone10 = project.runpytest("--graphnetz-seeds=10")
    ref = _row(alone10.stdout.str(), "broken/m")
    procs = [subprocess.Popen([sys.executable, "-m", "pytest", f"--graphnetz-seeds={n}", "-q"],
                              cwd=project.path, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                              text=True) for n in (3, 10)]
    outs = [p.communicate(timeout=300)[0] for p in procs]
    assert procs[1].returncode == 1
    assert _row(outs[1], "broken/m").split()[1:] == ref.split()[1:]
    last = project.runpytest("--graphnetz-seeds=10")
    last.assert_outcomes(passed=1, failed=1)
    assert _row(last.stdout.str(), "broken/m").split()[1:] == ref.split()[1:]
