"""What passes was read, and only the canonical seeds decide: every seed a run holds is read
(a non-finite value anywhere fails the row, naming the seed and side; a drop in the seeds past
the first look reads REGRESSED), and a seed set that is not the prefix 0..n-1 of at least the
first look is refused by every comparison gate unless the run is judged alone, which every
output then says. Through the library, a real pytest session over a tiny task, and
``graphnetz compare``."""

from __future__ import annotations

import json
import re

import numpy as np
import pytest

pytest.importorskip("scipy.stats")
# Pytester's in-process runs drop modules first imported inside them (torch cannot be imported
# twice in one process, and a Task must be the class the runner checks): imported here, once.
pytest.importorskip("torch")
pytest.importorskip("torch_geometric.nn")
import pytest_graphnetz.gates  # noqa: E402,F401
import pytest_graphnetz.runner  # noqa: E402,F401
from pytest_graphnetz import (  # noqa: E402
    BenchmarkReport,
    assert_better,
    assert_equivalent,
    assert_not_worse,
)
from pytest_graphnetz.gates.verdicts.values import GateRefusal  # noqa: E402

BASE = 0.8 + 0.02 * np.random.default_rng(42).standard_normal(25)
JITTER = 0.001 * np.random.default_rng(7).standard_normal(25)


def report(values, seeds=None) -> BenchmarkReport:
    values = np.asarray(values, dtype=float)
    seeds = range(len(values)) if seeds is None else seeds
    return BenchmarkReport.from_arrays(values.reshape(1, 1, -1), tasks=["karate"],
                                       models=["GCN"], seeds=seeds, metric="accuracy")


def with_nan(values, seed: int) -> np.ndarray:
    out = np.array(values, dtype=float)
    out[seed] = np.nan
    return out


# -- every held seed is read ------------------------------------------------------------------


def test_a_nan_at_seed_15_of_20_fails_the_row_naming_seed_15() -> None:
    cand = with_nan(BASE[:20] + JITTER[:20], 15)
    with pytest.raises(AssertionError) as failed:
        assert_not_worse(report(cand), report(BASE[:20]), first_look=10)
    message = str(failed.value)
    assert "karate/GCN — accuracy (higher is better): REGRESSED" in message
    assert "candidate diverged (non-finite metric) at seed(s) [15]" in message
    # seeds 0-9 alone (look 1) are fine: the same candidate without seed 15 passes
    (verdict,) = assert_not_worse(report(cand[:10]), report(BASE[:10]), first_look=10)
    assert verdict.verdict in ("NOT WORSE", "BETTER")


def test_a_nan_past_the_last_complete_look_fails_naming_it() -> None:
    # 25 seeds: looks at 10 and 20; seeds 20-24 are held but no look tests them
    cand = with_nan(BASE + JITTER, 23)
    with pytest.raises(AssertionError) as failed:
        assert_not_worse(report(cand), report(BASE), first_look=10)
    message = str(failed.value)
    assert ": REGRESSED" in message and "at seed(s) [23]" in message
    assert "seeds 20-24 are past the last complete look" in message


def test_a_drop_only_in_the_seeds_past_the_first_look_reads_regressed() -> None:
    cand = BASE[:20].copy()
    cand[10:] -= 0.05   # seeds 0-9 bit-identical, 10-19 all 5 points lower
    assert np.array_equal(cand[:10], BASE[:10])
    with pytest.raises(AssertionError) as failed:
        assert_not_worse(report(cand), report(BASE[:20]), first_look=10)
    message = str(failed.value)
    assert ": REGRESSED" in message and "over 20 seeds 0-19" in message
    assert "look 2 of the schedule 10→20→…" in message
    # look 1 alone is IDENTICAL: the verdict came from reading the seeds past it
    (first,) = assert_not_worse(report(cand[:10]), report(BASE[:10]), first_look=10)
    assert first.verdict == "IDENTICAL"


@pytest.mark.parametrize("seed", [3, 15, 23])
def test_a_nan_in_the_baseline_at_a_held_seed_is_refused_naming_seed_and_side(seed: int
                                                                               ) -> None:
    base = with_nan(BASE, seed)
    for gate, kw in ((assert_not_worse, {}), (assert_better, {}),
                     (assert_equivalent, {"margin": 0.01})):
        with pytest.raises(GateRefusal) as refused:
            gate(report(BASE + JITTER), report(base), first_look=10, **kw)
        line = refused.value.reason
        assert line.startswith("karate/GCN: the baseline report (the baseline side) is "
                               f"non-finite (diverged) at seed(s) {seed} of the paired seeds "
                               "0-24"), line
        assert "--graphnetz-update-baselines" in line
    # judged alone, the seed is still unread: refused all the same
    with pytest.raises(GateRefusal, match=f"diverged\\) at seed\\(s\\) {seed} "):
        assert_not_worse(report(BASE + JITTER), report(base), rerun_safe=False)


# -- only the canonical seeds decide -----------------------------------------------------------

OFF_SCHEDULE = {
    "fresh seeds 10-19": (list(range(10, 20)), "the paired seeds 10-19 are not the prefix 0-9"),
    "0-9 minus seed 4": ([s for s in range(10) if s != 4],
                         "the paired seeds 0-3,5-9 are not the prefix 0-8"),
    "3 seeds": (list(range(3)), "the paired 3 seeds (0-2) hold no look"),
    "5 seeds": (list(range(5)), "the paired 5 seeds (0-4) hold no look"),
    "6 seeds": (list(range(6)), "the paired 6 seeds (0-5) hold no look"),
}
GATES = {"not-worse": (assert_not_worse, {}), "better": (assert_better, {}),
         "equivalent": (assert_equivalent, {"margin": 0.01})}


@pytest.mark.parametrize("gate", GATES)
@pytest.mark.parametrize("case", OFF_SCHEDULE)
def test_a_seed_set_off_the_schedule_is_refused_by_every_gate(case: str, gate: str) -> None:
    seeds, why = OFF_SCHEDULE[case]
    function, kw = GATES[gate]
    baseline = report(BASE[:20])
    cand = report(BASE[seeds] + JITTER[seeds], seeds=seeds)
    with pytest.raises(GateRefusal) as refused:
        function(cand, baseline, first_look=10, **kw)
    line = refused.value.reason
    assert "\n" not in line and why in line, line
    assert "the canonical seeds 0..n-1 with n >= 10" in line      # the first look
    assert "--graphnetz-seeds=N" in line and "--graphnetz-single-run" in line   # the fix
    # judged alone it is accepted (a verdict, not a refusal), and every row says what it is
    alone = "judged alone at α: not rerun-safe (--graphnetz-single-run)"
    if gate == "better":   # an unchanged model is not BETTER: the gate fails, saying so
        with pytest.raises(AssertionError) as failed:
            function(cand, baseline, first_look=10, rerun_safe=False, **kw)
        assert alone in str(failed.value).splitlines()[0]
    else:
        verdicts = function(cand, baseline, first_look=10, rerun_safe=False, **kw)
        assert verdicts and all(alone in v.table_note for v in verdicts)


def test_the_canonical_prefix_is_judged_on_the_schedule() -> None:
    # the prefix 0-9 of a baseline holding 0-19 is look 1: no refusal, no "judged alone"
    (verdict,) = assert_not_worse(report(BASE[:10] + JITTER[:10]), report(BASE[:20]),
                                  first_look=10)
    assert verdict.verdict == "NOT WORSE" and "judged alone" not in verdict.table_note


# -- a real pytest session over a tiny task ---------------------------------------------------

PROJECT = '''
import math

import torch

from pytest_graphnetz import Task

CHANGE = {change!r}


def load(root, *, seed):
    return {{"seed": torch.tensor([seed])}}


def scripted(model, data, *, task, device):
    """No training: a seed's accuracy is a formula of the seed and the change in effect."""
    seed = int(data["seed"])
    value = 0.8 + 0.02 * math.sin(7 * seed)   # the baseline ("none")
    if CHANGE in ("jitter", "nan15"):
        value += 0.001 * math.cos(3 * seed)
    if CHANGE == "nan15" and seed == 15:
        value = math.nan
    if CHANGE == "drop" and seed >= 10:   # seeds 0-9 bit-identical, 10-19 five points lower
        value -= 0.05
    return {{"test": [value], "val": [value]}}


TASKS = {{"toy": Task("toy", load, trainer=scripted, epochs=1, in_channels=2, out_channels=2)}}


class GCN(torch.nn.Linear):
    pass
'''

GATE_TESTS = """
import project
from pytest_graphnetz import assert_not_worse


def test_model(graphnetz_run, graphnetz_baseline):
    assert_not_worse(graphnetz_run(project.TASKS, {"GCN": project.GCN}), graphnetz_baseline())
"""


@pytest.fixture
def tiny(pytester: pytest.Pytester) -> pytest.Pytester:
    """A project whose first look is 10 seeds and whose baseline holds seeds 0-19."""
    pytester.makeini("[pytest]\ngraphnetz_seeds = 10\n")
    pytester.makepyfile(project=PROJECT.format(change="none"), test_model=GATE_TESTS)
    pytester.runpytest("--graphnetz-seeds=20", "--graphnetz-update-baselines",
                       "--graphnetz-verify-cache=0", "-p", "no:cacheprovider"
                       ).assert_outcomes(passed=1)
    return pytester


def _run(tiny: pytest.Pytester, change: str, *args: str) -> tuple[pytest.RunResult, dict]:
    tiny.makepyfile(project=PROJECT.format(change=change))
    result = tiny.runpytest("--graphnetz-verify-cache=0", "-p", "no:cacheprovider",
                            "--graphnetz-json=out/v.json", "--graphnetz-summary=out/s.md",
                            "--graphnetz-comment=out/c.md", *args)
    return result, json.loads((tiny.path / "out" / "v.json").read_text())


def test_a_session_reads_every_seed_and_refuses_seeds_off_the_schedule(tiny: pytest.Pytester
                                                                        ) -> None:
    # NaN at seed 15 of 20: the row fails, naming seed 15
    result, doc = _run(tiny, "nan15", "--graphnetz-seeds=20")
    result.assert_outcomes(failed=1)
    (row,) = doc["rows"]
    assert row["verdict"] == "REGRESSED" and row["failed_build"]
    assert "candidate diverged (non-finite) at seed(s) 15: counted as failures" in row["note"]
    assert "candidate diverged (non-finite metric) at seed(s) [15]" in result.stdout.str()
    # seeds 0-9 bit-identical, 10-19 five points lower: REGRESSED at look 2
    result, doc = _run(tiny, "drop", "--graphnetz-seeds=20")
    result.assert_outcomes(failed=1)
    (row,) = doc["rows"]
    assert row["verdict"] == "REGRESSED" and row["stats"]["n"] == 20
    result, doc = _run(tiny, "drop", "--graphnetz-seeds=10")   # look 1 alone cannot see it
    result.assert_outcomes(passed=1)
    assert [r["verdict"] for r in doc["rows"]] == ["IDENTICAL"]
    # fresh seeds 10-19, one seed dropped from 0-9, and 3 / 5 / 6 seeds: refused, one line
    for seeds, why in (("10-19", "the paired seeds 10-19 are not the prefix 0-9"),
                       ("0,1,2,3,5,6,7,8,9", "the paired seeds 0-3,5-9 are not the prefix 0-8"),
                       ("3", "the paired 3 seeds (0-2) hold no look"),
                       ("5", "the paired 5 seeds (0-4) hold no look"),
                       ("6", "the paired 6 seeds (0-5) hold no look")):
        result, doc = _run(tiny, "jitter", f"--graphnetz-seeds={seeds}")
        result.assert_outcomes(failed=1)
        (row,) = doc["rows"]
        assert row["verdict"] == "REFUSED" and why in row["note"], (seeds, row)
        assert "n >= 10" in row["note"] and "--graphnetz-single-run" in row["note"]
    # judged alone on request: accepted, and header, row, summary, comment headline and JSON
    # say so
    result, doc = _run(tiny, "jitter", "--graphnetz-seeds=10-19", "--graphnetz-single-run")
    result.assert_outcomes(passed=1)
    alone = "judged alone at α: not rerun-safe (--graphnetz-single-run)"
    (row,) = doc["rows"]
    assert alone in row["note"] and alone in doc["headline"]
    out = result.stdout.str()
    assert "α 0.05 (single run: judged alone at α: not rerun-safe)" in out
    assert re.search(r"gate row\(s\), none failed the build .*" + re.escape(alone), out)
    summary, comment = ((tiny.path / "out" / n).read_text() for n in ("s.md", "c.md"))
    assert alone in summary
    assert alone in comment.split("\n\n")[0] + comment.split("\n\n")[1]


# -- graphnetz compare ------------------------------------------------------------------------


def test_compare_refuses_seeds_off_the_schedule_unless_single_run(
        tmp_path, capsys: pytest.CaptureFixture) -> None:
    from pytest_graphnetz.cli.main import main

    base = tmp_path / "base.json"
    report(BASE[:20]).to_json(base)
    for seeds, why in ((list(range(10, 20)), "the paired seeds 10-19 are not the prefix 0-9"),
                       (list(range(6)), "the paired 6 seeds (0-5) hold no look")):
        cand = tmp_path / "cand.json"
        report(BASE[seeds] + JITTER[seeds], seeds=seeds).to_json(cand)
        capsys.readouterr()
        assert main(["compare", str(base), str(cand)]) == 2
        err = capsys.readouterr().err
        assert why in err and "n >= 10" in err and "--graphnetz-single-run" in err
        assert main(["compare", str(base), str(cand), "--single-run"]) == 0
        assert "judged alone at α: not rerun-safe" in capsys.readouterr().out
        # the failing message of another gate names the flag that was passed, not pytest's
        assert main(["compare", str(base), str(cand), "--single-run", "--gate", "better"]) == 1
        out = capsys.readouterr().out
        assert "not rerun-safe (--single-run)" in out and "--graphnetz-single-run" not in out
    # the first look is the baseline's (a report stored without a schedule binds the default,
    # 10): 6 seeds under a first look of 6 are refused against it (tests/cover/
    # test_schedule_bound.py), judged alone on request
    assert main(["compare", str(base), str(cand), "--first-look", "6"]) == 2
    assert "binds the schedule first look 10 seeds" in capsys.readouterr().err
    assert main(["compare", str(base), str(cand), "--first-look", "6", "--single-run"]) == 0
    # a baseline diverged at a paired seed: refused, naming the seed and side
    broken = tmp_path / "broken.json"
    report(with_nan(BASE[:20], 15)).to_json(broken)
    full = tmp_path / "full.json"
    report(BASE[:20] + JITTER[:20]).to_json(full)
    assert main(["compare", str(broken), str(full)]) == 2
    assert "(the baseline side) is non-finite (diverged) at seed(s) 15" in capsys.readouterr().err


# -- the figures docs/guarantees.md quotes are the committed results' ------------------------


def _table(path, header_start: str, *, after: str = "") -> list[list[str]]:
    """The cells of the first Markdown table past the line ``after`` whose header line starts
    with ``header_start``."""
    lines = path.read_text().splitlines()
    at = lines.index(after) if after else 0
    at = next(i for i, x in enumerate(lines) if i >= at and x.startswith(header_start))
    rows = []
    for line in lines[at + 2:]:
        if not line.startswith("|"):
            break
        rows.append([c.strip() for c in line.strip("|").split("|")])
    return rows


def test_the_guarantees_page_quotes_the_committed_benchmark_results() -> None:
    from pathlib import Path

    root = Path(__file__).resolve().parents[2]
    page = " ".join((root / "docs" / "guarantees.md").read_text().split())
    every = _table(root / "benchmarks" / "every_seed_results.md", "| sd (points)")
    false_regressed = [float(r[3].split()[0]) for r in every]
    wrong_not_worse = [float(r[5].split()[0]) for r in every]
    assert len(every) == 12 and max(false_regressed) <= 5 and max(wrong_not_worse) <= 5
    assert (f"false REGRESSED {min(false_regressed):.2f}%-{max(false_regressed):.2f}%"
            in page)
    assert f"wrong NOT WORSE at −δ at most {max(wrong_not_worse):.2f}%" in page
    changed = max(float(r[7]) for r in every)
    assert f"up to {changed:.2f}% of the cells at −δ" in page
    results = root / "benchmarks" / "advice_check_results.md"
    advice = [r for after in ("## Given INCONCLUSIVE at 10 seeds (look 1); next look 20",
                              "## Given INCONCLUSIVE at 20 seeds (look 2); next look 40")
              for r in _table(results, "| paired sd", after=after)]
    measured = [r for r in advice if r[3] != "too few to measure"]
    ratios = [float(r[5]) for r in measured]
    right = [float(r[7].rstrip("%")) for r in measured]
    assert len(advice) == 12 and max(ratios) <= 1.3
    assert f"within {min(ratios):.2f}-{max(ratios):.2f}× of the seeds" in page
    assert f"{min(right):.1f}%-{max(right):.1f}% of those cells decide right" in page
    # the row that was not measured is named as such, and its supplement quoted
    (unmeasured,) = [r for r in advice if r[3] == "too few to measure"]
    assert f"At sd {unmeasured[0]} only {unmeasured[2]} cells were INCONCLUSIVE at look 2" in page
    (extra,) = _table(results, "| paired sd",
                      after="## Supplement: the row too few to measure above")
    assert float(extra[5]) <= 1.3 and extra[0] == unmeasured[0]
    assert (f"give {extra[2]}, expected {extra[4]} against {extra[3]} used ({extra[5]}×)"
            in page)


def test_baselines_diverged_in_two_cells_are_named_in_one_refusal() -> None:
    X = np.stack([BASE[:10], BASE[:10] + 0.01, BASE[:10] - 0.01]).reshape(1, 3, 10)
    base = X.copy()
    base[0, 0, 4] = np.nan
    base[0, 2, 7] = np.nan
    kw = dict(tasks=["karate"], models=["GCN", "GAT", "SAGE"], seeds=range(10),
              metric="accuracy")
    with pytest.raises(GateRefusal) as refused:
        assert_not_worse(BenchmarkReport.from_arrays(X + 0.0001, **kw),
                         BenchmarkReport.from_arrays(base, **kw), first_look=10)
    assert refused.value.cells == [("karate", "GCN"), ("karate", "SAGE")]
    assert "karate/GCN at 4; karate/SAGE at 7" in refused.value.reason
