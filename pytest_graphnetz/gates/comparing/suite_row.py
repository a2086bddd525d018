"""The suite row of ``assert_not_worse(..., suite=True)``: per model, the per-seed mean paired
difference across the call's tasks of one metric, and its REGRESSED family with the cells
(weighted Holm, docs/guarantees.md)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from pytest_graphnetz import stats
from pytest_graphnetz.gates.comparing.cells import Family
from pytest_graphnetz.gates.verdicts.formatting import describe_values, seed_list, verdict_name
from pytest_graphnetz.gates.verdicts.rules import default_min_effect, failed_verdict
from pytest_graphnetz.gates.verdicts.values import CellVerdict
from pytest_graphnetz.report import BenchmarkReport
from pytest_graphnetz.report.epochs import MetricSpec
from pytest_graphnetz.stats.boundaries import Design
from pytest_graphnetz.stats.comparison import (
    Comparison,
    DecisionSettings,
    Plan,
    evidence_notes,
    measure,
)
from pytest_graphnetz.stats.decisions import decide_look, decision_of, final_verdict, plan_seeds
from pytest_graphnetz.stats.suite import DEFAULT_SUITE_WEIGHT, SuiteResult

SUITE = "suite"   # the task label of a suite row: ``suite/<model>``


@dataclass
class SuiteRow:
    """One model's suite row: ``candidate`` / ``baseline`` (seed,), the per-seed means over
    ``tasks``, paired by seed; ``result``: :func:`~pytest_graphnetz.stats.suite.suite_test` on
    their differences; ``rejected`` / ``level`` / ``p_adjusted``: its REGRESSED decision in the
    call's family (weighted Holm)."""

    model: str
    spec: MetricSpec
    tasks: list[str]
    seeds: list[int]
    candidate: np.ndarray
    baseline: np.ndarray
    min_effect: float | None
    result: SuiteResult
    rejected: bool = False
    level: float = 0.0
    p_adjusted: float | None = None

    def verdict_of(self, report: BenchmarkReport, baseline: BenchmarkReport, *, strict: bool,
                   notes: tuple[str, ...], refresh_command: str | None) -> CellVerdict:
        res = self.result
        # REGRESSED is the family's (weighted Holm); the rest is the row's look, at alpha.
        code = decide_look(res.p_value, res.p_not_worse, res.p_better, level=res.alpha,
                           regressed_level=None, last=True,
                           identical=res.verdict is stats.Verdict.IDENTICAL)
        verdict = stats.Verdict.REGRESSED if self.rejected else final_verdict(code)
        # The paired t on the per-seed task means is suite_test's test (their difference is
        # suite_differences); measure() adds what a cell's message shows (interval, MDE, plan),
        # on the plain t that decided the row (suite_test has no skew guard).
        settings = DecisionSettings(kind="not_worse", test="paired-t", margin=res.margin,
                                    min_effect=self.min_effect, alpha=res.alpha,
                                    skew_guard=False)
        evidence = measure(self.candidate, self.baseline, settings,
                           higher_is_better=self.spec.higher_is_better,
                           label=f"{SUITE}/{self.model}", seeds=self.seeds)
        shown = (self.level and self.level != res.alpha
                 and verdict is not stats.Verdict.IDENTICAL)
        comp = Comparison(
            evidence, settings,
            decision_of(evidence, settings, verdict, p_adjusted=self.p_adjusted,
                        ci_alphas=(res.alpha, self.level) if shown else None),
            Plan(plan_seeds(evidence, settings, verdict, self.level or res.alpha)),
            (*evidence_notes(evidence, res.alpha),
             f"suite row: per seed, the mean over {len(self.tasks)} tasks {self.tasks} of "
             f"{self.spec.name} candidate − baseline, paired by seed; REGRESSED is decided in "
             f"one weighted Holm family with the call's cells (suite weight "
             f"{DEFAULT_SUITE_WEIGHT:g}), here at level {self.level:.3g}; docs/guarantees.md"))
        name = verdict_name(verdict)
        return CellVerdict(
            SUITE, self.model, self.spec.name, self.spec.higher_is_better, "not_worse", comp,
            describe_values(self.baseline, baseline, metric=self.spec.name),
            describe_values(self.candidate, report, metric=self.spec.name),
            tuple(self.seeds), failed_verdict("not_worse", name, strict), notes,
            tuple(baseline.seeds), refresh_command,
            table_note=f"mean over {len(self.tasks)} tasks, paired by seed")


def suite_rows(report: BenchmarkReport, baseline: BenchmarkReport, seeds: Sequence[int], *,
               margin: float, min_effect: float | None, alpha: float
               ) -> tuple[list[SuiteRow], tuple[str, ...]]:
    """Per model, the suite row over the tasks of the call's most common metric (the first
    task's on a tie), paired on ``seeds``, and the notes on what it left out: tasks of another
    metric, k-fold tasks (their seeds index folds), seeds diverged on a task. No row with fewer
    than 2 such tasks (the row would be the cell itself)."""
    from pytest_graphnetz.stats.suite import suite_differences, suite_test

    plain = [t for t in report.tasks if report.folds(t) is None]
    kinds = [(report.metric(t).name, report.metric(t).higher_is_better) for t in plain]
    if not kinds:
        return [], ("suite row: no task without folds, so no suite row",)
    common = max(dict.fromkeys(kinds), key=kinds.count)
    used = [t for t, k in zip(plain, kinds, strict=True) if k == common]
    notes = []
    left = [t for t in report.tasks if t not in used]
    if left:
        notes.append(f"suite row: task(s) {left} left out: the row averages one metric "
                     f"({common[0]}) over tasks, and k-fold tasks index folds, not seeds")
    if len(used) < 2:
        return [], (*notes, f"suite row: {len(used)} task(s) of {common[0]}; a suite row needs "
                            "at least 2, so there is none")
    spec = report.metric(used[0])
    delta = min_effect if min_effect is not None else default_min_effect(spec, margin)
    cand_idx = [report.seeds.index(s) for s in seeds]
    base_idx = [baseline.seeds.index(s) for s in seeds]
    rows = []
    for model in report.models:
        cand = np.array([report.values(t, model)[cand_idx] for t in used])   # (task, seed)
        base = np.array([baseline.values(t, model)[base_idx] for t in used])
        ok = np.all(np.isfinite(cand) & np.isfinite(base), axis=0)
        kept = [s for s, k in zip(seeds, ok, strict=True) if k]
        if not ok.all():
            notes.append(f"suite/{model}: seed(s) {seed_list([s for s in seeds if s not in kept])}"
                         " diverged on a task and are left out of the row (their cells count "
                         "them)")
        if len(kept) < 2:
            notes.append(f"suite/{model}: fewer than 2 seeds finished on every task: no row")
            continue
        diffs = suite_differences(cand[:, ok], base[:, ok],
                                  higher_is_better=spec.higher_is_better, tasks=used)
        rows.append(SuiteRow(model, spec, used, kept, cand[:, ok].mean(axis=0),
                              base[:, ok].mean(axis=0), delta,
                              suite_test(diffs, margin=margin, min_effect=delta, alpha=alpha,
                                         n_tasks=len(used))))
    return rows, tuple(notes)


def suite_rows_family(rows: Sequence[SuiteRow], alpha: float) -> Family:
    """The REGRESSED family of a call with suite rows, for :func:`decide_cells` (one look):
    weighted Holm over the tested cells' p and the rows' (suite weight 0.5). Sets each row's
    decision; returns the cells' as a :class:`FamilyDecision` with per-cell levels."""
    from pytest_graphnetz.stats.sequential import FamilyDecision
    from pytest_graphnetz.stats.suite import suite_family

    def decide(histories: Sequence[Sequence[float]], designs: Sequence[Design]) -> FamilyDecision:
        if any(len(d.looks) != 1 for d in designs):
            raise ValueError("a suite row needs one look per cell (fixed seeds)")
        result = suite_family([h[0] for h in histories], [r.result.p_value for r in rows],
                              alpha=alpha)
        for r, rejected, level, p in zip(rows, result.reject_suite, result.level_suite,
                                         result.p_adjusted_suite, strict=True):
            r.rejected, r.level, r.p_adjusted = rejected, level, p
        return FamilyDecision(result.reject_cells,
                              tuple(0 if x else None for x in result.reject_cells),
                              min(result.level_cells, default=alpha), result.p_adjusted_cells,
                              levels=result.level_cells)

    return decide

