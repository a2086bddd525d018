"""Adaptive seeds through the gate, without training: reports from arrays and a runner that
counts the triples it is asked for (run_adaptive's ``runner``), so what trains is asserted
exactly."""

from __future__ import annotations

import re

import numpy as np
import pytest

from pytest_graphnetz import BenchmarkReport, assert_better, assert_not_worse
from pytest_graphnetz.gates.comparing.adaptive import AdaptiveReport, run_adaptive

SEEDS = range(20)
BASE = {s: 0.80 + 0.03 * np.sin(7.0 * s) for s in range(40)}  # per-seed baseline accuracy
SHIFT = {  # candidate = baseline + shift + noise, per model
    "same": lambda s: 0.0,
    "broken": lambda s: -0.10 + 0.002 * np.cos(3.0 * s),
    "border": lambda s: -0.004 + 0.02 * np.sin(11.0 * s + 1.0),
}


class CountingRunner:
    """Stands in for run_benchmark: values from BASE/SHIFT, and a log of the triples asked."""

    def __init__(self, shift=SHIFT) -> None:
        self.shift = shift
        self.triples: list[tuple[str, str, int]] = []

    def __call__(self, tasks, models, *, seeds, **kwargs):
        seeds = list(seeds)
        self.triples += [(t, m, s) for t in tasks for m in models for s in seeds]
        X = [[[BASE[s] + self.shift[m](s) for s in seeds] for m in models] for _ in tasks]
        return BenchmarkReport.from_arrays(X, tasks=list(tasks), models=list(models),
                                           seeds=seeds, metric="accuracy")

    def count(self, model: str) -> int:
        return sum(1 for _, m, _ in self.triples if m == model)


def _baseline(seeds=SEEDS, models=tuple(SHIFT)) -> BenchmarkReport:
    X = [[[BASE[s] for s in seeds] for _ in models]]
    return BenchmarkReport.from_arrays(X, tasks=["toy"], models=list(models), seeds=list(seeds),
                                       metric="accuracy")


def _adaptive(runner, **kw) -> AdaptiveReport:
    return run_adaptive({"toy": lambda root: None}, {m: object for m in SHIFT}, seeds=SEEDS,
                        min_seeds=5, runner=runner, **kw)


def test_only_open_cells_train_their_next_seeds():
    runner = CountingRunner()
    report = _adaptive(runner)
    assert report.seeds == (0, 1, 2, 3, 4) and report.schedule.max_seeds == 20
    with pytest.raises(AssertionError, match="toy/broken") as failure:
        assert_not_worse(report, _baseline())
    # the broken and the unchanged cell stop at the first look; only the borderline one goes on
    assert runner.count("same") == 5 and runner.count("broken") == 5
    assert runner.count("border") > 5
    assert len(runner.triples) == len(set(runner.triples)), "no triple is asked for twice"
    message = str(failure.value)
    assert "adaptive seeds: stopped at look 1 of 3 (5/20 seeds), 15 seed-trainings saved" \
        in message
    assert (f"{15 + 15 + 20 - runner.count('border')} saved against the 60 the baseline could "
            "pair") in message


def test_a_short_baseline_cuts_the_schedule_and_says_how_to_complete_it():
    runner = CountingRunner()
    report = run_adaptive({"toy": lambda root: None}, {"same": object, "border": object},
                          seeds=SEEDS, min_seeds=5, runner=runner)
    verdicts = assert_not_worse(report, _baseline(seeds=range(10), models=("same", "border")))
    border = next(v for v in verdicts if v.model == "border")
    assert border.stop.max_seeds == 10 and border.stop.planned_max == 20
    assert border.comparison.evidence.n == runner.count("border") == 10
    assert border.row()["n"] == "10/20"
    # the capped cell says so in its Note, its Baseline column names its seeds, and
    # what it saved is counted against the 10 seeds that could pair, not the planned 20
    assert border.row()["note"].endswith(
        "capped at 10 seeds: the baseline pairs 10 of the 20 planned")
    assert border.row()["baseline"].endswith("(seeds 0-9)")
    assert border.stop.saved == 10 - border.stop.trained
    assert any("pairs 10 of the 20 planned seeds, so this cell's looks are (5, 10)" in n
               and "--graphnetz-seeds=5..20" in n for n in border.notes)


def test_other_gates_complete_the_report_to_max():
    runner = CountingRunner({"better": lambda s: 0.05})
    report = run_adaptive({"toy": lambda root: None}, {"better": object}, seeds=SEEDS,
                          min_seeds=5, runner=runner)
    verdicts = assert_better(report, _baseline(models=("better",)))
    assert verdicts[0].comparison.evidence.n == 20 and runner.count("better") == 20


def test_the_width_gate_measures_max_seeds_too():
    """assert_ci_width measured an adaptive report at its first look (MIN seeds) and advised a
    fixed seed count, although the README says every gate but the sequential one uses MAX."""
    from pytest_graphnetz import assert_ci_width

    runner = CountingRunner({"m": lambda s: 0.01 * np.sin(5.0 * s)})
    report = run_adaptive({"toy": lambda root: None}, {"m": object}, seeds=SEEDS, min_seeds=5,
                          runner=runner)
    (verdict,) = assert_ci_width(report, 1.0)
    assert verdict.stats.n == 20 and runner.count("m") == 20
    assert len(runner.triples) == len(set(runner.triples)), "no triple is asked for twice"


def test_refusals():
    with pytest.raises(ValueError, match="3 <= MIN <= MAX"):
        run_adaptive({"toy": lambda root: None}, {"m": object}, seeds=range(4), min_seeds=5,
                      runner=CountingRunner())
    report = _adaptive(CountingRunner())
    with pytest.raises(ValueError, match="paired t test's sequential boundaries"):
        assert_not_worse(report, _baseline(), test="wilcoxon")


def test_not_worse_is_decided_at_min_effect():
    # an innocent change (noise of a fifth of a point) is NOT WORSE at the first look with the
    # default δ of one point for accuracy; without δ (NOT WORSE at -margin = 0) it would need
    # significant improvement and run on to MAX
    runner = CountingRunner({"innocent": lambda s: 0.002 * np.sin(5.0 * s)})
    report = run_adaptive({"toy": lambda root: None}, {"innocent": object}, seeds=SEEDS,
                          min_seeds=5, runner=runner)
    verdict, = assert_not_worse(report, _baseline(models=("innocent",)))
    assert verdict.verdict == "NOT WORSE" and verdict.comparison.evidence.n == 5
    assert runner.count("innocent") == 5
    # an explicit min_effect is the boundary: at 0.1 points the same cell is not yet decided
    runner = CountingRunner({"innocent": lambda s: 0.002 * np.sin(5.0 * s)})
    report = run_adaptive({"toy": lambda root: None}, {"innocent": object}, seeds=SEEDS,
                          min_seeds=5, runner=runner)
    verdict, = assert_not_worse(report, _baseline(models=("innocent",)), min_effect=0.001)
    assert runner.count("innocent") > 5


def test_the_mde_line_says_it_is_a_fixed_n_tests():
    """The MDE of an adaptive cell is a one-look t test's at the seeds used, not the sequential
    design's; the message says so (a fixed-seed message keeps its line)."""
    with pytest.raises(AssertionError) as adaptive:
        assert_not_worse(_adaptive(CountingRunner()), _baseline())
    fixed = CountingRunner()({"toy": None}, dict.fromkeys(SHIFT, object), seeds=range(5))
    with pytest.raises(AssertionError) as fixed_seeds:
        assert_not_worse(fixed, _baseline(), first_look=5)
    assert re.search(r"^  minimum detectable effect of a fixed-n test at n=5: 0\.\d+",
                     str(adaptive.value), re.M)
    assert "minimum detectable effect at" not in str(adaptive.value)
    assert re.search(r"^  minimum detectable effect at n=5: 0\.\d+", str(fixed_seeds.value), re.M)
    assert "fixed-n test" not in str(fixed_seeds.value)


def test_the_seed_trainings_saved_are_counted_in_words():
    from pytest_graphnetz.base.text import seed_trainings

    report = run_adaptive({"toy": lambda root: None}, {"broken": object}, seeds=range(10),
                          min_seeds=5, runner=CountingRunner())
    with pytest.raises(AssertionError) as failure:
        assert_not_worse(report, _baseline(seeds=range(10), models=("broken",)))
    assert "(5/10 seeds), 5 seed-trainings saved against fixed 10" in str(failure.value)
    assert "adaptive seeds 5..10: 5 seed-trainings, 5 saved" in str(failure.value)
    assert seed_trainings(1) == "1 seed-training"


def test_completing_keeps_the_reports_settings_and_every_task():
    """complete() merged the second task's new seeds into a grid that lacked the first's (an
    error with two tasks), and read the new seeds with the runner's default settings."""
    from pytest_graphnetz import assert_ci_width

    runner = CountingRunner({"m": lambda s: 0.01 * np.sin(5.0 * s)})
    report = run_adaptive({"a": lambda root: None, "b": lambda root: None}, {"m": object},
                          seeds=range(10), min_seeds=5, runner=runner)
    report.ci_method = "bootstrap"
    completed = report.schedule.complete(report)
    assert completed.tasks == ("a", "b") and completed.seeds == tuple(range(10))
    assert completed.ci_method == "bootstrap"
    assert all(v.stats.method.startswith("bootstrap") for v in assert_ci_width(report, 1.0))


def test_decided_holds_each_cell_at_the_seeds_its_gate_trained():
    runner = CountingRunner()
    report = _adaptive(runner)
    assert report.schedule.decided(report) == [report]   # nothing extended: the first look
    with pytest.raises(AssertionError):
        assert_not_worse(report, _baseline())
    first, *further = report.schedule.decided(report)
    assert first is report
    (border,) = further
    n = runner.count("border")
    assert border.models == ("border",) and border.seeds == tuple(range(n))
    assert border.values("toy", "border").tolist() == [BASE[s] + SHIFT["border"](s)
                                                       for s in range(n)]
    # a second gate starts from the first look: what it trains is its own
    assert report.schedule.decided(report, since=len(report.schedule.extensions)) == [report]


def test_the_other_gates_save_the_max_seeds_they_judge():
    """--graphnetz-report-dir saved the first look of a report that assert_better (and a
    refresh) judged at all MAX seeds."""
    from pytest_graphnetz.gates.recorder import GateRecorder, recording

    saved = []
    recorder = GateRecorder(keep=lambda row: None,
                            save=lambda report, further: saved.append(report) or ["x"])
    report = run_adaptive({"toy": lambda root: None}, {"better": object}, seeds=SEEDS,
                          min_seeds=5, runner=CountingRunner({"better": lambda s: 0.05}))
    with recording(recorder):
        assert_better(report, _baseline(models=("better",)))
    assert [r.seeds for r in saved] == [tuple(SEEDS)]
