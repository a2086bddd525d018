"""The one decision path of ``assert_not_worse``: a cell while its looks run (:class:`GateCell`;
a run judged alone is a single look) and :func:`decide_cells`, which compares each open cell at
each look, stops it at NOT WORSE / BETTER, and takes REGRESSED from the call's family.

Every look decides through :func:`~pytest_graphnetz.stats.decisions.decide_look`, the kernel
the planner and the power simulation walk too; the family is group-sequential Holm
(:func:`~pytest_graphnetz.stats.sequential.sequential_holm`) or, with suite rows, weighted Holm.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, replace

import numpy as np

from .. import stats
from ..history import MetricSpec
from ..pairing import changed_model_notes, changed_model_table_note, collapse_notes
from ..report import BenchmarkReport
from ..stats.boundaries import Design
from ..stats.decisions import (
    LOOK_VERDICTS,
    Comparison,
    compare,
    decide_look,
    holm_member,
    plan_seeds,
)
from ..stats.sequential import FamilyDecision
from ..stats.suite import DEFAULT_SUITE_WEIGHT
from ..verdicts.formatting import describe_values, verdict_name
from ..verdicts.guidance import LookNote, Stop
from ..verdicts.rules import NO_MIN_EFFECT_NOTE, default_min_effect, failed_verdict
from ..verdicts.values import CellVerdict
from .schedule import Schedule

Family = Callable[[Sequence[Sequence[float]], Sequence[Design]], FamilyDecision]


@dataclass
class GateCell:
    """One not-worse cell while its looks run.

    ``seeds``: the seeds it pairs, in the order looks take them (a look at n seeds uses the
    first n); ``design``: its looks and boundaries; ``alone``: why it is judged alone at α
    ("" on the schedule); ``unused``: paired seeds past its last complete look."""

    task: str
    model: str
    spec: MetricSpec
    seeds: list[int]
    design: Design
    candidate: dict[int, float]
    baseline: dict[int, float]
    min_effect: float | None    # δ
    folds: int | None
    notes: tuple[str, ...] = ()
    capped: str = ""            # the table's note when the baseline cut the schedule short
    alone: str = ""
    unused: tuple[int, ...] = ()
    look: int = 0               # index into design.looks
    comparisons: list[Comparison] = field(default_factory=list)   # one per look
    verdict: stats.Verdict | None = None   # once stopped (REGRESSED: the family's)
    tested: bool = True         # in the Holm family (not IDENTICAL, not diverged)
    sources: dict[int, BenchmarkReport] = field(default_factory=dict)
    family: tuple[FamilyDecision, int] | None = None
    first_look: int | None = None   # the schedule's first look (None: no schedule to advise)

    @property
    def look_seeds(self) -> list[int]:
        return self.seeds[:self.design.looks[self.look]]

    @property
    def last_look(self) -> bool:
        return self.look == len(self.design.looks) - 1

    def compare(self, *, test: str, margin: float, rng: stats.RngLike) -> Comparison:
        """The comparison at exactly this look's seeds, at the level this look decides at (its
        nominal level), so p, interval, MDE and plan read at it."""
        seeds = self.look_seeds
        baseline = np.array([self.baseline[s] for s in seeds])
        test, candidate = folded(np.array([self.candidate[s] for s in seeds]), baseline,
                                 self.folds, test)
        return compare(candidate, baseline, higher_is_better=self.spec.higher_is_better,
                       kind="not_worse", test=test, margin=margin,
                       min_effect=self.min_effect, alpha=self.design.nominal[self.look],
                       rng=rng, label=f"{self.task}/{self.model}", seeds=seeds, plan=False)

    def look_code(self, comp: Comparison) -> stats.Verdict | None:
        """NOT WORSE's and BETTER's boundaries at this look (REGRESSED is the family's)."""
        code = decide_look(comp.p_value, comp.p_reverse, comp.p_better,
                           level=self.design.nominal[self.look], regressed_level=None,
                           last=self.last_look)
        return LOOK_VERDICTS[int(code)]

    def verdict_of(self, report: BenchmarkReport, baseline: BenchmarkReport, *, strict: bool,
                   notes: tuple[str, ...], refresh_command: str | None,
                   schedule: Schedule | None = None) -> CellVerdict:
        """The cell's :class:`CellVerdict`, every number from the look it is reported at (the
        look whose statistic rejected it, for REGRESSED; else its last). ``schedule``: an
        adaptive run's (the verdict then says where the cell stopped)."""
        fam, i = self.family if self.family is not None else (None, 0)
        rejected_at = None if fam is None else fam.at_look[i]
        k = self.look if rejected_at is None else rejected_at
        seeds = self.seeds[:self.design.looks[k]]
        comp = self._reported(k, fam, i)
        name = verdict_name(comp.verdict)
        changed = (changed_model_notes(report, baseline, self.model, seeds, task=self.task)
                   if name == "IDENTICAL" else ())
        collapsed, collapse_note = self._collapse(seeds)
        look = LookNote(self.design.looks, k + 1, self.design.on_schedule,
                        self.design.nominal[k], self.alone, self.unused)
        return CellVerdict(
            self.task, self.model, self.spec.name, self.spec.higher_is_better, "not_worse",
            comp, self._described(self.baseline, seeds, baseline),
            self._described(self.candidate, seeds, report),
            tuple(seeds), failed_verdict("not_worse", name, strict),
            (*notes, *self.notes, *changed, *collapsed), tuple(baseline.seeds),
            refresh_command, stop=None if schedule is None else self._stop(schedule, k, fam),
            table_note=self._table_note(name, look, changed=changed_model_table_note(changed),
                                        collapsed=collapse_note),
            folds=self.folds, call_alpha=self.design.alpha, look=look)

    def _reported(self, k: int, fam: FamilyDecision | None, i: int) -> Comparison:
        """The comparison of look ``k`` as reported: the cell's verdict, and as the ``i``-th
        member of the call's family ``fam`` (adjusted p, interval, plan), with its notes."""
        comp = self.comparisons[k]
        if self.verdict is not None:
            comp = replace(comp, verdict=self.verdict)
        extra: tuple[str, ...] = ()
        if self.tested and fam is not None:
            comp, extra = self._in_family(comp, fam, i, k)
        if self.folds is not None:
            from ..stats.heldout import FOLD_NOTE

            extra = (*extra, FOLD_NOTE.format(task=self.task, k=self.folds, test=comp.test))
        return replace(comp, notes=(*comp.notes, *extra))

    def _collapse(self, seeds: Sequence[int]) -> tuple[tuple[str, ...], str]:
        """The notes (message, table) on seeds that collapsed. Only a tested cell has a t test
        to warn about; on folds the seeds' differences are not independent, which the Grubbs
        test assumes."""
        if not self.tested or self.folds is not None:
            return (), ""
        return collapse_notes([self.baseline[s] for s in seeds],
                              [self.candidate[s] for s in seeds], seeds,
                              higher_is_better=self.spec.higher_is_better)

    def _described(self, values: dict[int, float], seeds: Sequence[int],
                   source: BenchmarkReport) -> stats.CellStats:
        return describe_values(np.array([values[s] for s in seeds]), source,
                               metric=self.spec.name)

    def _table_note(self, name: str, look: LookNote, *, changed: str, collapsed: str) -> str:
        """The verdict table's Note: the look, a changed model, collapsed seeds, a missing δ
        (NOT WORSE at −margin must never be silent) and a cut schedule."""
        shown = name != "IDENTICAL"
        return "; ".join(x for x in (
            look.describe() if shown else "",
            changed,
            collapsed,
            NO_MIN_EFFECT_NOTE if self.min_effect is None and shown else "",
            self.capped if shown else "") if x)

    def _in_family(self, comp: Comparison, fam: FamilyDecision, i: int,
                   k: int) -> tuple[Comparison, tuple[str, ...]]:
        """The comparison of look ``k`` as a member of the call's REGRESSED family: Holm's
        adjusted p (one look), the interval whose upper end sits at REGRESSED's level and the
        seeds that would decide it."""
        extra: list[str] = []
        level = fam.level if fam.levels is None else fam.levels[i]
        low, high = self.design.nominal[k], self.design.at_level(level).nominal[k]
        if fam.levels is not None:   # weighted with suite rows (one look): own level
            if fam.p_adjusted:
                comp = replace(comp, p_adjusted=fam.p_adjusted[i])
            extra.append("p adjusted by weighted Holm across the tested cells and the suite "
                         f"row(s) (suite weight {DEFAULT_SUITE_WEIGHT:g})")
        elif len(self.design.looks) == 1 and fam.p_adjusted is not None and len(fam.rejected) > 1:
            comp = holm_member(comp, fam.p_adjusted[i], len(fam.rejected))
        if len(self.design.looks) > 1:
            extra.append(f"p is the fixed-n p at {self.design.looks[k]} seeds; the verdict is "
                         "the sequential boundary's")
        m = max(len(fam.rejected), 1)
        comp = replace(comp, seeds_needed=self._plan(comp, self.design.alpha / m))
        if (low, high) != (comp.alpha, comp.alpha):   # else ``ci`` is that interval
            comp = replace(comp, ci=comp.interval(low, high), ci_alphas=(low, high))
        return comp, tuple(extra)

    def _stop(self, schedule: Schedule, k: int, fam: FamilyDecision | None) -> Stop:
        """Where an adaptive cell stopped."""
        trained = len([s for s in self.seeds if s in self.candidate])
        return Stop(n=self.design.looks[k], trained=trained, min_seeds=schedule.min_seeds,
                    max_seeds=self.design.looks[-1], planned_max=schedule.max_seeds,
                    look=k + 1, n_looks=len(self.design.looks),
                    critical=self.design.critical[k] if self.tested else None,
                    critical_regressed=(self.design.at_level(fam.level).critical[k]
                                        if self.tested and fam is not None else None),
                    regressed_alpha=fam.level if fam is not None else self.design.alpha)

    def _plan(self, comp: Comparison, level: float) -> int | None:
        """The seeds that would decide an INCONCLUSIVE cell, for the design the advice
        recommends: on the schedule, its next look that delivers the power given that this
        look was INCONCLUSIVE (:func:`~pytest_graphnetz.stats.sequential.advise_next_look`);
        a k-fold task, the corrected resampled t test's own plan (None when no seed count
        resolves δ); a run judged alone for another reason, the fixed-n plan. ``level``:
        REGRESSED's level (Holm's ``alpha / m``)."""
        if (comp.verdict is not stats.Verdict.INCONCLUSIVE or self.min_effect is None
                or not math.isfinite(comp.sd_diff)):
            return None
        if self.folds is not None:
            from ..stats.heldout import fold_ratio
            from ..stats.planning import fold_seeds_for_min_effect

            # the per-fold sd: comp's is inflated by the correction (fold_corrected)
            sd = comp.sd_diff / math.sqrt(1 + comp.n * fold_ratio(self.folds))
            needed = fold_seeds_for_min_effect(
                sd, self.min_effect, folds=self.folds, margin=comp.margin, alpha=comp.alpha,
                alpha_regressed=comp.mde_alpha or comp.alpha, power=comp.power)
            return None if needed is None else max(needed, comp.n + 1)
        if self.first_look is None or comp.sd_diff == 0:
            return plan_seeds(replace(comp, alpha=self.design.alpha), level)
        from ..stats.sequential import advise_next_look

        taken = self.design.max_seeds if self.design.on_schedule else 0
        return advise_next_look(comp.sd_diff, comp.n, self.min_effect, first=self.first_look,
                                taken=taken, alpha=self.design.alpha, margin=comp.margin,
                                regressed_alpha=level, power=comp.power)


def decide_cells(cells: Sequence[GateCell], *, test: str, margin: float, rng: stats.RngLike,
                 train: Callable[[Sequence[GateCell]], None] | None = None,
                 family: Family | None = None) -> None:
    """The one decision path of ``assert_not_worse``, whatever the run holds: at each look, the
    open cells' seeds are trained and paired (``train``: adaptive seeds only), each open cell
    is compared on exactly that look's seeds, NOT WORSE / BETTER stop a cell at the look's
    boundaries, and REGRESSED comes from group-sequential Holm over every tested cell's
    per-look p-values (classical Holm when every cell has one look). A cell still open at its
    last look is INCONCLUSIVE. Sets each cell's verdict, comparisons and family decision.
    ``family``: the REGRESSED family in place of group-sequential Holm (suite rows)."""
    from ..stats.sequential import sequential_holm

    decide = family or sequential_holm
    while True:
        open_cells = [c for c in cells if c.verdict is None]
        if train is not None:
            train(open_cells)
        for c in open_cells:
            comp = c.compare(test=test, margin=margin, rng=rng)
            c.comparisons.append(comp)
            if comp.diverged_seeds or comp.verdict is stats.Verdict.IDENTICAL:
                # A candidate diverged where the baseline did not fails that seed (REGRESSED
                # without a test); every difference 0 is IDENTICAL: neither is in the family.
                c.verdict, c.tested = comp.verdict, False
            else:
                c.verdict = c.look_code(comp)
        tested = [c for c in cells if c.tested]
        decision = decide([[x.p_value for x in c.comparisons] for c in tested],
                          [c.design for c in tested])
        for i, c in enumerate(tested):
            c.family = (decision, i)
            if decision.rejected[i]:
                c.verdict = stats.Verdict.REGRESSED
        open_cells = [c for c in cells if c.verdict is None]
        if not open_cells:
            return
        for c in open_cells:
            c.look += 1


def folded(candidate: np.ndarray, baseline: np.ndarray, k: int | None,
           test: str) -> tuple[str, np.ndarray]:
    """The test and the candidate values (seed,) a cell is compared with: on a k-fold CV task,
    the paired t on candidate values that make it the corrected resampled t test
    (:func:`~pytest_graphnetz.stats.heldout.fold_corrected`), whatever ``test`` was asked for
    (the plain tests are invalid on folds); else ``test`` and ``candidate`` as they are."""
    if k is None:
        return test, candidate
    from ..stats.heldout import fold_corrected

    return "paired-t", fold_corrected(candidate, baseline, k=k)


def cell_min_effect(spec: MetricSpec, margin: float, min_effect: float | None) -> float | None:
    """δ of a cell: the call's, else the metric's default (:func:`default_min_effect`)."""
    return min_effect if min_effect is not None else default_min_effect(spec, margin)


def min_effect_error(min_effect: float, margin: float) -> str:
    return (f"`min_effect` ({min_effect!r}) must be larger than `margin` ({margin!r}): δ is the "
            "smallest regression that matters, margin the drop that is tolerated; raise "
            "min_effect (--graphnetz-min-effect) or lower the margin")


__all__ = ["GateCell", "cell_min_effect", "decide_cells", "folded", "min_effect_error"]
