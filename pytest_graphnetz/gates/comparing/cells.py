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
from dataclasses import dataclass, field

import numpy as np

from pytest_graphnetz import stats
from pytest_graphnetz.gates.comparing.pairing import (
    cache_notes,
    changed_model_notes,
    changed_model_table_note,
    collapse_notes,
    tuning_table_note,
    unpaired_table_note,
)
from pytest_graphnetz.gates.comparing.schedule import Schedule
from pytest_graphnetz.gates.comparing.spec import GateSpec
from pytest_graphnetz.gates.verdicts.formatting import describe_values, verdict_name
from pytest_graphnetz.gates.verdicts.guidance import LookNote, Stop
from pytest_graphnetz.gates.verdicts.rules import NO_MIN_EFFECT_NOTE, failed_verdict
from pytest_graphnetz.gates.verdicts.values import CellVerdict
from pytest_graphnetz.report import BenchmarkReport
from pytest_graphnetz.report.epochs import MetricSpec
from pytest_graphnetz.stats.boundaries import Design
from pytest_graphnetz.stats.comparison import (
    DEFAULT_SETTINGS,
    Comparison,
    DecisionSettings,
    Evidence,
    Plan,
    evidence_notes,
    measure,
)
from pytest_graphnetz.stats.decisions import decision_of, plan_seeds, verdict_at
from pytest_graphnetz.stats.sequential import FamilyDecision
from pytest_graphnetz.stats.skew import SkewCheck, chain_rate
from pytest_graphnetz.stats.suite import DEFAULT_SUITE_WEIGHT

Family = Callable[[Sequence[Sequence[float]], Sequence[Design]], FamilyDecision]


@dataclass
class GateCell:
    """One not-worse cell while its looks run.

    ``seeds``: the seeds it pairs, in the order looks take them (a look at n seeds uses the
    first n); ``design``: its looks and boundaries; ``alone``: why it is judged alone at α
    ("" on the schedule); ``unused``: paired seeds past its last complete look (read: a
    diverged or differing seed there counts, but no look tests them)."""

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
    evidence: list[Evidence] = field(default_factory=list)   # one per look
    verdict: stats.Verdict | None = None   # once stopped (REGRESSED: the family's)
    tested: bool = True         # in the Holm family (not IDENTICAL, not diverged)
    sources: dict[int, BenchmarkReport] = field(default_factory=dict)
    family: tuple[FamilyDecision, int] | None = None
    first_look: int | None = None   # the schedule's first look (None: no schedule to advise)
    passed: int | None = None   # the look index of the first NOT WORSE / BETTER crossing
    passed_verdict: stats.Verdict | None = None   # and which of the two
    # The evidence of every held seed, when that decides the cell without a look (a diverged
    # candidate, or every held seed identical: fixed runs)
    whole: Evidence | None = None
    # what it is judged under: the call's test, margin and α, the cell's δ (set by decide_cells)
    settings: DecisionSettings = DEFAULT_SETTINGS

    @property
    def held(self) -> list[int]:
        """Every paired seed the run holds for this cell: its looks' and those past them."""
        return [*self.seeds[:self.design.max_seeds], *self.unused]

    @property
    def look_seeds(self) -> list[int]:
        return self.seeds[:self.design.looks[self.look]]

    @property
    def last_look(self) -> bool:
        return self.look == len(self.design.looks) - 1

    def measure(self, *, rng: stats.RngLike, seeds: Sequence[int] | None = None) -> Evidence:
        """The evidence of exactly this look's seeds (``seeds``: those instead), under the
        cell's settings (on k-fold CV, the corrected resampled t)."""
        seeds = self.look_seeds if seeds is None else list(seeds)
        return measure(np.array([self.candidate[s] for s in seeds]),
                       np.array([self.baseline[s] for s in seeds]), self.settings,
                       higher_is_better=self.spec.higher_is_better, folds=self.folds, rng=rng,
                       label=f"{self.task}/{self.model}", seeds=seeds)

    def look_verdict(self, evidence: Evidence) -> stats.Verdict | None:
        """The kernel at this look: NOT WORSE's and BETTER's boundaries (REGRESSED is the
        family's), a diverged candidate, identical seeds; None while the cell stays open."""
        return verdict_at(evidence, level=self.design.nominal[self.look], regressed_level=None,
                          last=self.last_look)

    def verdict_of(self, report: BenchmarkReport, baseline: BenchmarkReport, *, strict: bool,
                   notes: tuple[str, ...], refresh_command: str | None,
                   schedule: Schedule | None = None) -> CellVerdict:
        """The cell's :class:`CellVerdict`, every number from the look it is reported at (the
        look whose statistic rejected it, for REGRESSED; else its last). ``schedule``: an
        adaptive run's (the verdict then says where the cell stopped)."""
        fam, i = self.family if self.family is not None else (None, 0)
        rejected_at = None if fam is None or not self.tested else fam.at_look[i]
        k = (rejected_at if rejected_at is not None
             else self.passed if self.passed is not None else self.look)
        seeds = self.held if self.whole is not None else self.seeds[:self.design.looks[k]]
        comp = self._reported(k, fam, i)
        name = verdict_name(comp.decision.verdict)
        skew = comp.evidence.skew if self.tested else None   # the reported look's own
        changed = (changed_model_notes(report, baseline, self.model, seeds, task=self.task)
                   if name == "IDENTICAL" else ())
        collapsed, collapse_note = self._collapse(seeds)
        # the seeds read past the reported look: later looks (no REGRESSED crossing there)
        read = (self.design.looks[self.look]
                if self.whole is None and self.look > k and name != "REGRESSED" else 0)
        cache, cache_note = cache_notes(report, self.task, self.model)
        look = LookNote(self.design.looks, k + 1, self.design.on_schedule,
                        self.design.nominal[k], self.alone, self.unused, read)
        return CellVerdict(
            self.task, self.model, self.spec.name, self.spec.higher_is_better, "not_worse",
            comp, self._described(self.baseline, seeds, baseline),
            self._described(self.candidate, seeds, report),
            tuple(seeds), failed_verdict("not_worse", name, strict),
            (*notes, *self.notes, *changed, *collapsed, *cache), tuple(baseline.seeds),
            refresh_command, stop=None if schedule is None else self._stop(schedule, k, fam, i),
            table_note="; ".join(x for x in (self._table_note(
                name, look, changed=changed_model_table_note(changed), collapsed=collapse_note),
                diverged_note(comp.evidence.diverged_seeds),
                skew_table_note(skew), unpaired_table_note(report, baseline), cache_note,
                tuning_table_note(report, baseline)) if x),
            folds=self.folds, look=look,
            skew=skew)

    def _reported(self, k: int, fam: FamilyDecision | None, i: int) -> Comparison:
        """The comparison of look ``k`` as reported, built once from its evidence: the cell's
        verdict (:func:`decide_cells`), and as the ``i``-th member of the call's family ``fam``
        its adjusted p, REGRESSED's level (the MDE at it), interval and plan, with its notes."""
        evidence = self.evidence[k] if self.whole is None else self.whole
        if self.verdict is None:
            raise RuntimeError(f"{self.task}/{self.model}: reported before decide_cells decided it")
        p_adjusted, regressed, ci_alphas, plan = None, None, None, Plan()
        notes: list[str] = []
        if self.tested and fam is not None:
            m = len(fam.rejected)
            # REGRESSED's level for this cell: the step of Holm's step-down that rejected it,
            # or the last step for a cell not rejected; the MDE and the interval's upper end
            # are both read at it, the lower end at the look's (NOT WORSE's and BETTER's)
            low = self.design.nominal[k]
            high = self.design.at_level(fam.level_of(i)).nominal[k]
            if high != low:
                regressed = high
            # the plan reads REGRESSED at Holm's first step α/m, the level a drop must pass
            planned = self.design.at_level(self.design.alpha / m).nominal[k] if m > 1 else None
            if fam.levels is not None:   # weighted with suite rows (one look): own level
                p_adjusted, planned = (fam.p_adjusted[i] if fam.p_adjusted else None), None
                notes.append("p adjusted by weighted Holm across the tested cells and the suite "
                             f"row(s) (suite weight {DEFAULT_SUITE_WEIGHT:g})")
            elif len(self.design.looks) == 1 and fam.p_adjusted is not None and m > 1:
                p_adjusted = fam.p_adjusted[i]
                notes.append(f"p Holm-adjusted across the {m} tested cells")
            elif m > 1:
                notes.append(f"MDE at the Holm level across the {m} tested cells")
            if len(self.design.looks) > 1:
                notes.append(f"p is the fixed-n p at {self.design.looks[k]} seeds; the verdict "
                             "is the sequential boundary's")
            plan = self._plan(evidence, planned, self.design.alpha / max(m, 1), look=low)
            if high != low:   # else both ends at the look's level
                ci_alphas = (low, high)
        if self.folds is not None:
            from pytest_graphnetz.stats.heldout import FOLD_NOTE

            notes.append(FOLD_NOTE.format(task=self.task, k=self.folds, test=evidence.test))
        level = self.design.nominal[k]
        decision = decision_of(evidence, self.settings, self.verdict, level=level,
                               p_adjusted=p_adjusted, regressed_level=regressed,
                               ci_alphas=ci_alphas)
        return Comparison(evidence, self.settings, decision, plan,
                          (*evidence_notes(evidence, level), *notes))

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
            NO_MIN_EFFECT_NOTE if self.min_effect is None and name in (
                "NOT WORSE", "INCONCLUSIVE") else "",
            self.capped if shown else "") if x)

    def _stop(self, schedule: Schedule, k: int, fam: FamilyDecision | None, i: int) -> Stop:
        """Where an adaptive cell stopped."""
        trained = len([s for s in self.seeds if s in self.candidate])
        return Stop(n=self.design.looks[k], trained=trained, min_seeds=schedule.min_seeds,
                    max_seeds=self.design.looks[-1], planned_max=schedule.max_seeds,
                    look=k + 1, n_looks=len(self.design.looks),
                    critical=self.design.critical[k] if self.tested else None,
                    critical_regressed=(self.design.at_level(fam.level_of(i)).critical[k]
                                        if self.tested and fam is not None else None),
                    regressed_alpha=fam.level_of(i) if fam is not None else self.design.alpha)

    def _plan(self, evidence: Evidence, regressed: float | None, level: float, *,
              look: float) -> Plan:
        """What an INCONCLUSIVE cell does next: the seeds of its next run and those it is
        expected to need. On the schedule, the next look (what the CI loop runs) and the
        expected need (:func:`~pytest_graphnetz.stats.lookahead.plan_next_look`); a k-fold
        task, the corrected resampled t test's own plan at the per-fold sd (None when no seed
        count resolves δ); a run judged alone for another reason, the fixed-n plan; no expected
        need off the schedule. ``regressed``: the level REGRESSED's MDE is read at (None: the
        look's); ``level``: REGRESSED's level (Holm's ``alpha / m``); ``look``: the look's
        one-sided level."""
        if (self.verdict is not stats.Verdict.INCONCLUSIVE or self.min_effect is None
                or not math.isfinite(evidence.sd_diff)):
            return Plan()
        if self.folds is not None:
            from pytest_graphnetz.stats.planning import fold_seeds_for_min_effect

            needed = fold_seeds_for_min_effect(
                evidence.sd_per_fold, self.min_effect, folds=self.folds,
                margin=self.settings.margin, alpha=look, alpha_regressed=regressed or look,
                power=self.settings.power)
            return Plan(None if needed is None else max(needed, evidence.n + 1))
        if self.first_look is None or evidence.sd_diff == 0:
            return Plan(plan_seeds(evidence, self.settings, self.verdict, level,
                                   alpha=self.design.alpha))
        from pytest_graphnetz.stats.lookahead import PlanSpec, plan_next_look

        taken = self.design.max_seeds if self.design.on_schedule else 0
        spec = PlanSpec(self.min_effect, self.first_look, alpha=self.design.alpha,
                        margin=self.settings.margin, regressed_alpha=level,
                        power=self.settings.power)
        plan = plan_next_look(evidence.sd_diff, evidence.n, spec, taken=taken)
        return Plan(plan.next_look, plan.expected)


def skew_table_note(check: SkewCheck | None) -> str:
    """The table's Note on a cell where the skew guard fired ("" otherwise), with the rate the
    harness measures on the skew's side."""
    if check is None or not check.fires:
        return ""
    return (f"skewed (skew {check.skewness:+.1f}): skew-guarded t, "
            f"{chain_rate(check.side)} in the chain")


def decide_cells(cells: Sequence[GateCell], spec: GateSpec, *,
                 train: Callable[[Sequence[GateCell]], None] | None = None,
                 family: Family | None = None) -> None:
    """The one decision path of ``assert_not_worse``, whatever the run holds: at each look, the
    cells still walking are trained and paired (``train``: adaptive seeds only), compared on
    exactly that look's seeds, NOT WORSE / BETTER are read at the look's boundaries, and
    REGRESSED comes from group-sequential Holm over every tested cell's per-look p-values
    (classical Holm when every cell has one look). Sets each cell's verdict, evidence per look and
    family decision. ``family``: the REGRESSED family in place of group-sequential Holm (suite
    rows). ``spec``: the call's test, margin and rng.

    A run that holds its seeds (no ``train``) reads every look they contain (futility
    non-binding): a REGRESSED crossing at any look wins over an earlier NOT WORSE or BETTER,
    which otherwise stands at the look it crossed. Before the looks, every held seed is read:
    a candidate diverged where the baseline did not fails the cell (REGRESSED, naming the
    seeds) and a cell whose every held seed is identical is IDENTICAL; neither is tested. An
    adaptive cell stops training at its first crossing (its held seeds end there). A cell that
    crosses nothing by its last look is INCONCLUSIVE."""
    from pytest_graphnetz.stats.sequential import sequential_holm

    rng = spec.rng
    for c in cells:
        c.settings = DecisionSettings(kind="not_worse", test=spec.test, margin=spec.margin,
                                      min_effect=c.min_effect, alpha=c.design.alpha)
    decide = family or sequential_holm
    walking = list(cells)
    if train is None:
        for c in cells:
            c.look = len(c.design.looks) - 1   # reported at the last look the run holds
            whole = c.measure(rng=rng, seeds=c.held)
            c.look = 0
            if whole.diverged_seeds or whole.identical:
                c.look = len(c.design.looks) - 1
                c.whole, c.verdict, c.tested = whole, c.look_verdict(whole), False
        walking = [c for c in cells if c.whole is None]
    while walking:
        if train is not None:
            train(walking)
        for c in walking:
            evidence = c.measure(rng=rng)
            c.evidence.append(evidence)
            if train is not None and (evidence.diverged_seeds or evidence.identical):
                # A candidate diverged where the baseline did not fails that seed (REGRESSED
                # without a test); every difference 0 is IDENTICAL: neither is in the family.
                c.verdict, c.tested = c.look_verdict(evidence), False
            elif not evidence.identical and c.passed is None:
                # an all-zero look of a cell that differs later crosses nothing
                code = c.look_verdict(evidence)
                if code in (stats.Verdict.NOT_WORSE, stats.Verdict.BETTER):
                    c.passed, c.passed_verdict = c.look, code
        tested = [c for c in cells if c.tested]
        decision = decide([[x.p_value for x in c.evidence] for c in tested],
                          [c.design for c in tested])
        for i, c in enumerate(tested):
            c.family = (decision, i)
            if decision.rejected[i]:
                c.verdict = stats.Verdict.REGRESSED
        # adaptive: a crossing ends the cell's training; else every held look is read
        walking = [c for c in walking if c.verdict is None and not c.last_look
                   and (train is None or c.passed is None)]
        for c in walking:
            c.look += 1
    for c in cells:
        if c.verdict is None:
            c.verdict = stats.Verdict.INCONCLUSIVE if c.passed is None else c.passed_verdict


def diverged_note(seeds: Sequence[int]) -> str:
    """The table's Note on candidate seeds that diverged where the baseline did not ("" for
    none): the row fails on them, and names them as the message does."""
    if not seeds:
        return ""
    return (f"candidate diverged (non-finite) at seed(s) {', '.join(map(str, seeds))}: "
            "counted as failures")


__all__ = ["GateCell", "decide_cells"]
