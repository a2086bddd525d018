"""The one decision path of ``assert_not_worse``: a cell while its looks run (:class:`_Cell`;
a fixed seed count is a single look) and :func:`decide_cells`, which compares each open cell at
each look, stops it at NOT WORSE / BETTER, and takes REGRESSED from the call's family."""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, replace
from typing import Any

import numpy as np

from .. import stats
from ..history import MetricSpec
from ..pairing import changed_model_notes, collapse_notes
from ..report import BenchmarkReport
from ..stats.decisions import holm_member, plan_seeds
from ..stats.suite import DEFAULT_SUITE_WEIGHT
from ..verdicts import (
    CHANGED_MODEL_NOTE,
    NO_MIN_EFFECT_NOTE,
    CellVerdict,
    Stop,
    default_min_effect,
    describe_values,
    failed_verdict,
    verdict_name,
)
from .chain import chain_notes


@dataclass
class _Cell:
    """One not-worse cell while its looks run (a fixed seed count is a single look)."""

    task: str
    model: str
    spec: MetricSpec
    seeds: list[int]            # the seeds it pairs, in the order they are trained
    design: Any                 # its stats.sequential.SequentialDesign (over len(seeds))
    candidate: dict[int, float]
    baseline: dict[int, float]
    min_effect: float | None    # δ
    folds: int | None
    notes: tuple[str, ...] = ()
    capped: str = ""            # the table's note when the baseline cut the schedule short
    look: int = 0               # index into design.looks
    comparisons: list[Any] = field(default_factory=list)   # one per look, on that look's seeds
    verdict: Any = None         # stats.Verdict once stopped (REGRESSED: the family's)
    tested: bool = True         # in the Holm family (not IDENTICAL, not diverged)
    sources: dict[int, BenchmarkReport] = field(default_factory=dict)
    family: Any = None          # (FamilyDecision, index) once the family is decided
    chain: Any = None           # its .chain.ChainLook under rerun-safe seeds (design: the chain's)

    @property
    def look_seeds(self) -> list[int]:
        return self.seeds[:self.design.looks[self.look]]

    def compare(self, *, test: str, margin: float, alpha: float, rng: Any) -> Any:
        """The comparison at exactly this look's seeds; a rerun chain's look at the level it
        tests (its nominal: ρα at a first run), so p, interval, MDE and plan read at it."""
        if self.chain is not None:
            alpha = self.design.nominal[self.look]
        seeds = self.look_seeds
        cell: dict[str, Any] = {"candidate": np.array([self.candidate[s] for s in seeds]),
                "baseline": np.array([self.baseline[s] for s in seeds]),
                "higher_is_better": self.spec.higher_is_better,
                "label": f"{self.task}/{self.model}", "seeds": seeds}
        cell = _fold_cell(cell, self.folds, test)
        return stats.compare(**{"test": test, **cell}, kind="not_worse", margin=margin,
                             min_effect=self.min_effect, alpha=alpha, rng=rng, plan=False)

    def verdict_of(self, report: BenchmarkReport, baseline: BenchmarkReport, *, strict: bool,
                   notes: tuple[str, ...], refresh_command: str | None,
                   schedule: Any = None) -> CellVerdict:
        """The cell's :class:`CellVerdict`, every number from the look it is reported at (the
        look whose statistic rejected it, for REGRESSED; else its last)."""
        fam, i = self.family if self.family is not None else (None, None)
        rejected_at = None if fam is None else fam.at_look[i]
        k = self.look if rejected_at is None else rejected_at
        comp = self.comparisons[k]
        n_seeds = self.design.looks[k]
        seeds = self.seeds[:n_seeds]
        one_look = len(self.design.looks) == 1
        extra: list[str] = []
        stop = None
        if self.tested and fam is not None:
            low = self.design.nominal[k]
            high = self.design.at_level(fam.level if fam.levels is None
                                        else fam.levels[i]).nominal[k]
            comp = replace(comp, verdict=self.verdict)
            if fam.levels is not None:   # weighted with suite rows (one look): own level
                comp = replace(comp, p_adjusted=fam.p_adjusted[i],
                               seeds_needed=plan_seeds(comp, fam.levels[i]))
                extra.append("p adjusted by weighted Holm across the tested cells and the "
                             f"suite row(s) (suite weight {DEFAULT_SUITE_WEIGHT:g})")
            elif one_look and fam.p_adjusted is not None and len(fam.rejected) > 1:
                comp = holm_member(comp, fam.p_adjusted[i], len(fam.rejected))
            else:
                comp = replace(comp, seeds_needed=plan_seeds(comp, comp.alpha))
            if not one_look:
                extra.append(f"p is the fixed-n p at {n_seeds} seeds; the verdict is the "
                             "sequential boundary's")
            comp = replace(comp, seeds_needed=self._plan(
                comp, comp.alpha / max(len(fam.rejected), 1),
                None if schedule is None else schedule.min_seeds))
            if (low, high) != (comp.alpha, comp.alpha):   # else ``ci`` is that interval
                comp = replace(comp, ci=comp.interval(low, high), ci_alphas=(low, high))
            comp = replace(comp, verdict=self.verdict, notes=(*comp.notes, *extra))
        elif self.tested:
            comp = replace(comp, verdict=self.verdict)
        if schedule is not None:
            trained = len([s for s in self.seeds if s in self.candidate])
            stop = Stop(n=n_seeds, trained=trained, min_seeds=schedule.min_seeds,
                        max_seeds=self.design.looks[-1], planned_max=schedule.max_seeds,
                        look=k + 1, n_looks=len(self.design.looks),
                        critical=self.design.critical[k] if self.tested else None,
                        critical_regressed=(self.design.at_level(fam.level).critical[k]
                                            if self.tested and fam is not None else None),
                        regressed_alpha=fam.level if fam is not None else comp.alpha)
        name = verdict_name(comp.verdict)
        changed = (changed_model_notes(report, baseline, self.model, seeds) if name == "IDENTICAL"
                   else ())
        if self.folds is not None:
            from ..stats.heldout import FOLD_NOTE

            comp = replace(comp, notes=(*comp.notes, FOLD_NOTE.format(
                task=self.task, k=self.folds, test=comp.test)))
        collapsed: tuple[tuple[str, ...], str] = ((), "")
        # Only a tested cell has a t test to warn about; on folds the seeds' differences are
        # not independent, which the Grubbs test assumes.
        if self.tested and self.folds is None:
            collapsed = collapse_notes([self.baseline[s] for s in seeds],
                                       [self.candidate[s] for s in seeds], seeds,
                                       higher_is_better=self.spec.higher_is_better)
        chain_note = ""
        if self.chain is not None and name != "IDENTICAL":
            spent = self.design.spent[k]
            comp = replace(comp, notes=(*comp.notes, *chain_notes(
                self.chain, spent, self.design.alpha, self.design.rho)))
            chain_note = self.chain.describe(spent, self.design.alpha)
        table_note = "; ".join(x for x in (
            chain_note,
            CHANGED_MODEL_NOTE if changed else "",
            collapsed[1],
            # NOT WORSE at −margin must never be silent: the row says so, not only a message
            NO_MIN_EFFECT_NOTE if self.min_effect is None and name != "IDENTICAL" else "",
            self.capped if name != "IDENTICAL" else "") if x)
        return CellVerdict(
            self.task, self.model, self.spec.name, self.spec.higher_is_better, "not_worse",
            comp, describe_values(np.array([self.baseline[s] for s in seeds]), baseline,
                            metric=self.spec.name),
            describe_values(np.array([self.candidate[s] for s in seeds]), report,
                      metric=self.spec.name),
            tuple(seeds), failed_verdict("not_worse", name, strict),
            (*notes, *self.notes, *changed, *collapsed[0]), tuple(baseline.seeds),
            refresh_command, stop=stop, table_note=table_note, folds=self.folds,
            call_alpha=self.design.alpha)

    def _plan(self, comp: Any, level: float, min_seeds: int | None) -> int | None:
        """The seeds that would decide an INCONCLUSIVE cell, for the design the advice
        recommends (issue 21): on a k-fold task the corrected resampled t test's own plan (None
        when no seed count resolves δ); under adaptive seeds the MAX of ``min_seeds..MAX`` whose
        sequential boundaries deliver the power; else the fixed-n plan already in ``comp``.
        ``level``: REGRESSED's level (Holm's ``alpha / m``)."""
        if (comp.verdict is not stats.Verdict.INCONCLUSIVE or self.min_effect is None
                or not math.isfinite(comp.sd_diff)):
            return comp.seeds_needed
        if self.chain is not None and self.folds is None:
            # the next run of the chain, planned for its own boundary (stats.rerun)
            from ..stats.rerun import rerun_seeds_needed

            m = max(round(comp.alpha / level), 1) if level > 0 else 1   # Holm's m
            needed = rerun_seeds_needed(
                self.design.looks, comp.sd_diff, self.min_effect, margin=comp.margin,
                alpha=self.design.alpha, alpha_regressed=self.design.alpha / m,
                rho=self.design.rho, power=comp.power)
            return None if needed is None else max(needed, self.design.looks[-1] + 1)
        if self.folds is not None:
            from ..stats.heldout import fold_ratio
            from ..stats.planning import fold_seeds_for_min_effect

            # the per-fold sd: comp's is inflated by the correction (fold_corrected)
            sd = comp.sd_diff / math.sqrt(1 + comp.n * fold_ratio(self.folds))
            needed = fold_seeds_for_min_effect(
                sd, self.min_effect, folds=self.folds, margin=comp.margin, alpha=comp.alpha,
                alpha_regressed=comp.mde_alpha or comp.alpha, power=comp.power)
            return None if needed is None else max(needed, comp.n + 1)
        if min_seeds is None or comp.seeds_needed is None:
            return comp.seeds_needed
        from ..stats.sequential import sequential_seeds_for_min_effect

        return sequential_seeds_for_min_effect(
            comp.sd_diff, self.min_effect, min_seeds=min_seeds, start=comp.seeds_needed,
            margin=comp.margin, alpha=comp.alpha, regressed_alpha=level, power=comp.power,
            gamma=self.design.gamma, lean=self.design.lean)


def decide_cells(cells: Sequence[_Cell], *, test: str, margin: float, alpha: float, rng: Any,
                 train: Callable[[Sequence[_Cell]], None] | None = None,
                 family: Callable[..., Any] | None = None) -> None:
    """The one decision path of ``assert_not_worse``, fixed or adaptive: at each look, the
    open cells' seeds are trained and paired (``train``: adaptive seeds only), each open cell
    is compared on exactly that look's seeds, NOT WORSE / BETTER stop a cell at the look's
    boundaries, and REGRESSED comes from group-sequential Holm over every tested cell's
    per-look p-values (classical Holm when every cell has one look). A cell still open at its
    last look is INCONCLUSIVE, so no cell runs past its schedule. Sets each cell's verdict,
    comparisons and family decision. ``family``: the REGRESSED family in place of
    group-sequential Holm (the suite rows' weighted Holm, :func:`_suite_family`)."""
    from ..stats.sequential import look_verdict, sequential_holm

    family = family or sequential_holm
    while True:
        open_cells = [c for c in cells if c.verdict is None]
        if train is not None:
            train(open_cells)
        for c in open_cells:
            comp = c.compare(test=test, margin=margin, alpha=alpha, rng=rng)
            c.comparisons.append(comp)
            if comp.diverged_seeds or comp.verdict is stats.Verdict.IDENTICAL:
                # A candidate diverged where the baseline did not fails that seed (REGRESSED
                # without a test); every difference 0 is IDENTICAL: neither is in the family.
                c.verdict, c.tested = comp.verdict, False
            else:
                c.verdict = look_verdict(comp, c.design, c.look)
        tested = [c for c in cells if c.tested]
        decision = family([[x.p_value for x in c.comparisons] for c in tested],
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



def _fold_cell(cell: dict[str, Any], k: int | None, test: str) -> dict[str, Any]:
    """``cell`` as compared: on a k-fold CV task, the paired t on candidate values that make it
    the corrected resampled t test (:func:`~pytest_graphnetz.stats.heldout.fold_corrected`),
    whatever ``test`` was asked for (the plain tests are invalid on folds)."""
    if k is None:
        return cell
    from ..stats.heldout import fold_corrected

    return {**cell, "test": "paired-t",
            "candidate": fold_corrected(cell["candidate"], cell["baseline"], k=k)}



def _min_effect(spec: MetricSpec, margin: float, min_effect: float | None) -> float | None:
    return min_effect if min_effect is not None else default_min_effect(spec, margin)


def _min_effect_error(min_effect: float, margin: float) -> str:
    return (f"`min_effect` ({min_effect!r}) must be larger than `margin` ({margin!r}): δ is the "
            "smallest regression that matters, margin the drop that is tolerated; raise "
            "min_effect (--graphnetz-min-effect) or lower the margin")

