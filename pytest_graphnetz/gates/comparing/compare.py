"""Comparing a candidate report with a baseline report, cell by cell, without failing:
:func:`compare_gate`, the one entry point (a call's :class:`~.spec.GateSpec`, what it is
:class:`Against`, and the schedule of an adaptive run), over :func:`compare_spec` (fixed seeds,
every gate) and :func:`compare_schedule` (adaptive seeds, the not-worse gate), both pairing
through :mod:`.pairing` and deciding not-worse cells on the one decision path
(:func:`~.cells.decide_cells`). :func:`compare_reports` is the public keyword form."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import NoReturn

import numpy as np

from pytest_graphnetz import stats
from pytest_graphnetz.base.seedspec import off_prefix
from pytest_graphnetz.gates.comparing.cells import GateCell, decide_cells
from pytest_graphnetz.gates.comparing.pairing import (
    cache_notes,
    changed_model_notes,
    changed_model_table_note,
    check_cells,
    comparable_baseline,
    environment_notes,
    refuse_changed_data,
    refuse_diverged_baseline,
    shared_seeds,
    tuning_notes,
    unpaired_notes,
)
from pytest_graphnetz.gates.comparing.schedule import Schedule
from pytest_graphnetz.gates.comparing.spec import GateSpec, Resolvable
from pytest_graphnetz.gates.comparing.suite_row import SuiteRow, suite_rows, suite_rows_family
from pytest_graphnetz.gates.verdicts.formatting import describe_values, seed_list, verdict_name
from pytest_graphnetz.gates.verdicts.guidance import LookNote
from pytest_graphnetz.gates.verdicts.rules import (
    cell_min_effect,
    failed_verdict,
    min_effect_error,
)
from pytest_graphnetz.gates.verdicts.values import CellVerdict, GateRefusal
from pytest_graphnetz.report import BenchmarkReport
from pytest_graphnetz.stats import boundaries
from pytest_graphnetz.stats.boundaries import (
    DEFAULT_FIRST_LOOK,
    DEFAULT_RHO,
    Design,
    LookSchedule,
    design,
    single_look,
)
from pytest_graphnetz.stats.comparison import DecisionSettings, measure
from pytest_graphnetz.stats.decisions import judge

# "paired" is the default spelling of the paired t-test; every test here pairs by seed.
TESTS = {"paired": "paired-t", "paired-t": "paired-t", "wilcoxon": "wilcoxon",
          "permutation": "permutation", "bootstrap": "bootstrap"}


def paired_test(name: str) -> str:
    """The test a gate's ``test=name`` runs (``"paired"`` is the paired t); any other name is
    refused."""
    if name not in TESTS:
        raise ValueError(f"`test` must be one of {sorted(TESTS)} (every gate test is paired "
                         f"by seed), got {name!r}")
    return TESTS[name]


@dataclass(frozen=True)
class Against:
    """What a comparison is against, beside the baseline's report: ``source`` (how the rows
    name it), ``refresh_command`` (the command that refreshes it, for the advice), ``bound``
    (the schedule stored with it; None: it binds none), ``canonical`` (a gate's run: only
    the canonical seeds decide) and ``alone_reason`` (what rows judged alone say; see
    :func:`compare_reports`)."""

    source: str = "the baseline"
    refresh_command: str | None = None
    bound: LookSchedule | None = None
    canonical: bool = False
    alone_reason: str | None = None


def compare_gate(report: BenchmarkReport, baseline: BenchmarkReport, call: GateSpec,
                 against: Against = Against(),
                 schedule: Schedule | None = None) -> list[CellVerdict]:
    """The one entry point of comparing: every candidate cell of ``report`` against
    ``baseline`` under ``call``; raises nothing but refusals (the gates decide what fails).
    ``schedule`` (an adaptive run's further looks, not-worse only): each cell walks it,
    training the next look only while open (:func:`compare_schedule`), after the refusals of
    a run that is no later look of the baseline's schedule; None: :func:`compare_spec`."""
    __tracebackhide__ = True
    if schedule is None:
        return compare_spec(report, baseline, call, against)
    if call.rerun_safe:
        if against.bound is not None:   # adaptive seeds: the first look is MIN
            refuse_other_schedule(against.bound, LookSchedule(schedule.min_seeds, call.alpha),
                                  against.source, against.refresh_command)
        refuse_off_schedule(schedule.planned_seeds, schedule.min_seeds, against.source)
    if call.test != "paired-t":
        raise ValueError(f"adaptive seeds (--graphnetz-seeds={schedule.seeds_option}) decide "
                         f"with the paired t test's sequential boundaries; got test={call.test!r}: "
                         "use test='paired', or fixed seeds (e.g. --graphnetz-seeds=20)")
    return compare_schedule(report, schedule, baseline, call, source=against.source,
                            refresh_command=against.refresh_command)


def compare_reports(report: BenchmarkReport, baseline: BenchmarkReport, *, gate: str = "not_worse",
                    test: str = "paired-t", margin: float = 0.0, min_effect: float | None = None,
                    alpha: float = 0.05, strict: bool = False, source: str = "the baseline",
                    rng: stats.RngLike = None, refresh_command: str | None = None,
                    suite: bool = False, suite_min_effect: float | None = None,
                    rerun_safe: bool = True, first_look: int | None = None,
                    canonical: bool = False, alone_reason: str | None = None,
                    bound: LookSchedule | None = None) -> list[CellVerdict]:
    """Every candidate cell of ``report`` against ``baseline`` (``not_worse``: Holm across the
    tested cells, on the one decision path, :func:`decide_cells`; ``suite``: the suite rows
    after the cells, see :func:`assert_not_worse`); raises nothing but :class:`GateRefusal` /
    :class:`BaselineMissingError` (the gates decide what fails), and ``ValueError`` for a
    ``min_effect`` not above ``margin``. ``min_effect`` None: each task's
    :func:`default_min_effect`.

    Not-worse cells walk the schedule (:mod:`pytest_graphnetz.stats.boundaries`) whose first
    look is ``first_look`` seeds (default :data:`DEFAULT_FIRST_LOOK`): the looks that the
    paired seeds ``0, 1, ..., n − 1`` contain, each on its prefix, reporting the first
    crossing; nothing is read from an earlier run. A cell is judged alone at ``alpha`` on all
    its paired seeds instead (and its row says why) when ``rerun_safe`` is False, the test is
    not the paired t, the task is k-fold, the call has suite rows, or the paired seeds do not
    hold the first look. ``canonical`` (what the gates ask): with ``rerun_safe``, paired seeds
    that are not the prefix ``0..n−1`` of at least the first look are refused
    (:func:`refuse_off_schedule`), not judged alone; and, judged alone or not, a baseline
    non-finite at a paired seed is refused (:func:`refuse_diverged_baseline`: a refresh,
    which is not canonical, excludes such a seed). ``alone_reason``: what the rows say when
    ``rerun_safe`` is False (a refresh, a bisect probe; default: the
    ``--graphnetz-single-run`` option, :data:`NOT_RERUN_SAFE`). ``bound``: the schedule stored
    with the baseline (:class:`~.schedule.LookSchedule`); with ``rerun_safe``, a call whose
    first look or α differs from it is refused (:func:`refuse_other_schedule`). None: a
    baseline that binds none (a report held in memory).
    """
    __tracebackhide__ = True
    call = GateSpec(gate=gate, test=test, margin=margin, min_effect=min_effect, alpha=alpha,
                    strict=strict, rng=rng, suite=suite, suite_min_effect=suite_min_effect,
                    rerun_safe=rerun_safe, first_look=first_look)
    return compare_gate(report, baseline, call,
                        Against(source, refresh_command, bound, canonical, alone_reason))


def compare_spec(report: BenchmarkReport, baseline: BenchmarkReport, call: GateSpec,
                 against: Against = Against()) -> list[CellVerdict]:
    """:func:`compare_reports` with the call's settings in ``call`` (its δ a number or None)
    and what it is ``against``: pair the run (:func:`_pair`, every refusal), then decide the
    not-worse cells as one family (:func:`_not_worse`) or every cell of the other gates at
    α (:func:`_every_cell`)."""
    __tracebackhide__ = True
    paired = _pair(report, baseline, call, against)
    if call.gate == "not_worse":
        return _not_worse(report, paired, call, against)
    # better / equivalent: intersection-union tests, every cell at alpha (no family)
    return [_every_cell(report, paired, call, against, task, model)
            for task in report.tasks for model in report.models]


@dataclass(frozen=True)
class _Paired:
    """A run that holds its seeds, paired with its baseline: the baseline as compared, the
    paired ``seeds``, the schedule's ``first`` look, the ``notes`` every row carries, the
    call's δ as a number (None: each metric's default), and where the paired seeds sit in the
    candidate's and the baseline's seeds (found once for every cell)."""

    baseline: BenchmarkReport
    seeds: list[int]
    first: int
    notes: tuple[str, ...]
    min_effect: float | None
    cand_idx: list[int]
    base_idx: list[int]

    def values(self, report: BenchmarkReport, task: str, model: str
               ) -> tuple[np.ndarray, np.ndarray]:
        """The cell's candidate and baseline values (seed,) on the paired seeds, in order."""
        return (report.values(task, model)[self.cand_idx],
                self.baseline.values(task, model)[self.base_idx])


def _pair(report: BenchmarkReport, baseline: BenchmarkReport, call: GateSpec,
          against: Against) -> _Paired:
    """Check the call's δ, pair the seeds and refuse what cannot be compared: cells, seeds,
    another schedule, off-schedule seeds (a gate's run), changed data, a diverged baseline."""
    min_effect, margin, source = _number(call), call.margin, against.source
    if call.gate == "not_worse" and min_effect is not None and not min_effect > margin:
        raise ValueError(min_effect_error(min_effect, margin))
    if call.suite and call.suite_min_effect is not None and not call.suite_min_effect > margin:
        raise ValueError(min_effect_error(call.suite_min_effect, margin).replace(
            "`min_effect`", "`suite_min_effect`"))
    check_cells(report, baseline, source)
    seeds = shared_seeds(report, baseline, source)
    baseline, ruled = comparable_baseline(report, baseline, source)
    first = DEFAULT_FIRST_LOOK if call.first_look is None else int(call.first_look)
    if against.bound is not None and call.rerun_safe:
        refuse_other_schedule(against.bound, LookSchedule(first, call.alpha), source,
                              against.refresh_command)
    if against.canonical and call.rerun_safe:
        refuse_off_schedule(seeds, first, source)
    refuse_changed_data(report, baseline, seeds, source)
    if against.canonical:
        refuse_diverged_baseline(report, baseline, seeds, source, against.refresh_command)
    notes = (ruled + environment_notes(report, baseline) + tuning_notes(report, baseline, seeds)
             + unpaired_notes(report, baseline, seeds, against.refresh_command))
    return _Paired(baseline, seeds, first, notes, min_effect,
                   [report.seeds.index(s) for s in seeds], [baseline.seeds.index(s) for s in seeds])


def _not_worse(report: BenchmarkReport, paired: _Paired, call: GateSpec,
               against: Against) -> list[CellVerdict]:
    """The not-worse verdicts of a run that holds its seeds: every cell on the one decision
    path (:func:`decide_cells`), Holm across the tested cells, or with the suite rows after
    them in one weighted family."""
    __tracebackhide__ = True
    cells = [cell for task in report.tasks for cell in _cells(report, paired, call, against,
                                                               task)]
    notes, family = paired.notes, None
    rows: list[SuiteRow] = []
    if call.suite:
        min_effect = (call.suite_min_effect if call.suite_min_effect is not None
                      else paired.min_effect)
        rows, suite_notes = suite_rows(report, paired.baseline, paired.seeds,
                                       margin=call.margin, min_effect=min_effect,
                                       alpha=call.alpha)
        notes = (*notes, *suite_notes)
        if rows:
            family = suite_rows_family(rows, call.alpha)
    decide_cells(cells, call, family=family)
    judged: list[GateCell | SuiteRow] = [*cells, *rows]
    return [c.verdict_of(report, paired.baseline, strict=call.strict, notes=notes,
                         refresh_command=against.refresh_command) for c in judged]


def _cells(report: BenchmarkReport, paired: _Paired, call: GateSpec, against: Against,
           task: str) -> list[GateCell]:
    """One task's not-worse cells: on the schedule's looks that the paired seeds hold, or
    judged alone at α on all of them (and why)."""
    seeds, first, rerun_safe = paired.seeds, paired.first, call.rerun_safe
    spec = report.metric(task)
    folds = report.folds(task)
    alone = _judged_alone(rerun_safe=rerun_safe, test=call.test, folds=folds, suite=call.suite,
                          reason=against.alone_reason)
    looked, on, unused = _on_schedule(seeds, first, call.alpha) if not alone else (
        list(seeds), None, ())
    if on is None and not alone:
        alone = (f"its {len(seeds)} paired seeds {seed_list(seeds)} do not hold the "
                 f"schedule's first look (seeds 0-{first - 1})")
    cells = []
    for model in report.models:
        cand, base = paired.values(report, task, model)
        cells.append(GateCell(
            task, model, spec, looked, on or single_look(len(seeds), alpha=call.alpha),
            dict(zip(seeds, cand.tolist(), strict=True)),
            dict(zip(seeds, base.tolist(), strict=True)),
            cell_min_effect(spec, call.margin, paired.min_effect), folds, alone=alone,
            unused=unused,
            first_look=first if rerun_safe and call.test == "paired-t" else None))
    return cells


def _every_cell(report: BenchmarkReport, paired: _Paired, call: GateSpec, against: Against,
                task: str, model: str) -> CellVerdict:
    """One cell of the better or equivalent gate, decided alone at α on all its paired seeds
    by the one kernel (:func:`~pytest_graphnetz.stats.decisions.judge`)."""
    seeds, baseline, gate, test = paired.seeds, paired.baseline, call.gate, call.test
    spec = report.metric(task)
    folds = report.folds(task)
    cand, base = paired.values(report, task, model)
    fold_notes: tuple[str, ...] = ()
    if folds is not None:
        from pytest_graphnetz.stats.heldout import FOLD_NOTE

        fold_notes = (FOLD_NOTE.format(task=task, k=folds, test=test),)
    # the one kernel (decide_look), as the not-worse cells' looks decide
    settings = DecisionSettings(kind=gate, test=test, margin=call.margin, alpha=call.alpha)
    comp = judge(measure(cand, base, settings, higher_is_better=spec.higher_is_better,
                         folds=folds, rng=call.rng, label=f"{task}/{model}", seeds=seeds),
                 settings, notes=fold_notes)
    name = verdict_name(comp.decision.verdict)
    changed = (changed_model_notes(report, baseline, model, seeds, task=task)
               if name == "IDENTICAL" else ())
    # a run judged alone says so in every output; a canonical run of these gates is one look
    # at α on all its seeds (no LookNote)
    look = (None if call.rerun_safe else
            LookNote((len(seeds),), 1, False, call.alpha,
                     alone=against.alone_reason or NOT_RERUN_SAFE))
    cache, cache_note = cache_notes(report, task, model)
    return CellVerdict(
        task, model, spec.name, spec.higher_is_better, gate, comp,
        describe_values(base, baseline, metric=spec.name),
        describe_values(cand, report, metric=spec.name),
        tuple(seeds), failed_verdict(gate, name, call.strict),
        (*paired.notes, *changed, *cache), tuple(baseline.seeds), against.refresh_command,
        table_note="; ".join(x for x in (changed_model_table_note(changed),
                                         "" if look is None else look.describe(),
                                         cache_note) if x),
        look=look)


# What a run judged alone is, in every output that shows it (the Note reads "judged alone at
# α: not rerun-safe (--graphnetz-single-run)").
NOT_RERUN_SAFE = "not rerun-safe (--graphnetz-single-run)"


def refuse_off_schedule(seeds: Sequence[int], first: int, source: str) -> None:
    """Refuse a gate's paired ``seeds`` unless they are the canonical ones, the prefix
    ``0..n−1`` with ``n`` at least the schedule's first look ``first``: any other seed set
    (fresh seeds, a dropped seed) or a run below the first look would be judged alone at α, a
    fresh chance at a pass that a rerun could fish for. One line: the seeds, the first look,
    the fix."""
    why = off_prefix(seeds, first)
    if why:
        _refuse_not_rerun_safe(
            f"against {source}, the paired {why}; a gate decides only on the canonical seeds "
            f"0..n-1 with n >= {first}: run --graphnetz-seeds=N (N >= {first}, or adaptive "
            "MIN..MAX)")


def refuse_other_schedule(bound: LookSchedule, asked: LookSchedule, source: str,
                          refresh_command: str | None = None) -> None:
    """Refuse a run whose schedule (``asked``: its first look, α, ρ) is not the one stored with
    the baseline (``bound``): a run under another first look or α is not a later look of the
    schedule the baseline's earlier verdicts were read on, but a fresh chance at a pass. One
    line: both schedules and the fix."""
    if asked == bound:
        return
    refresh = f"`{refresh_command}`" if refresh_command else "--graphnetz-update-baselines"
    _refuse_not_rerun_safe(
        f"{source} binds the schedule {bound.describe()}; this run asks {asked.describe()}: "
        f"run under the baseline's schedule, or refresh the baseline under the new one "
        f"({refresh})")


def _refuse_not_rerun_safe(why: str) -> NoReturn:
    """Raise the refusal of a run that is no later look of the baseline's schedule: ``why``
    and its fix, then the way out of judging this run alone."""
    reason = (f"{why}, or pass --graphnetz-single-run (rerun_safe=False) to judge this run "
              "alone at α (not rerun-safe)")
    raise GateRefusal(f"graphnetz: {reason}", reason=reason)


def compare_schedule(report: BenchmarkReport, schedule: Schedule, baseline: BenchmarkReport,
                     call: GateSpec | None = None, *, source: str = "the baseline",
                     refresh_command: str | None = None) -> list[CellVerdict]:
    """The not-worse verdicts of an adaptive ``report`` against ``baseline`` (the paired t
    test), each cell decided look by look on the one decision path (:func:`decide_cells`),
    training its next look's seeds only while open; what :func:`compare_reports` is for a run
    that holds its seeds. The schedule is the one every run walks, its first look at MIN.
    ``call``: the call's margin, δ, alpha, strict and rng (the test is the paired t; None: the
    defaults of :class:`~.spec.GateSpec`).

    Per cell the seeds are the planned seeds the baseline has, in planned order, up to the
    first one it lacks (a baseline non-finite at any of them is refused, as in a fixed run); a
    baseline with fewer than MAX of them cuts the cell's looks there (a note names the refresh
    that completes it, and the table's Note says the cell was capped). ``report``: the first
    look; ``schedule``: the run's further looks (:func:`~.schedule.split_schedule`).
    """
    __tracebackhide__ = True
    call = GateSpec() if call is None else call
    margin, min_effect, alpha = call.margin, _number(call), call.alpha
    if min_effect is not None and not min_effect > margin:
        raise ValueError(min_effect_error(min_effect, margin))
    check_cells(report, baseline, source)
    baseline, ruled = comparable_baseline(report, baseline, source)
    tuned = ruled + tuning_notes(report, baseline, schedule.planned_seeds)
    # a baseline non-finite at a planned seed is refused before any look, as in a fixed run:
    # a look that reached that seed would have nothing to read the candidate's value against
    refuse_diverged_baseline(report, baseline,
                             [s for s in schedule.planned_seeds if s in baseline.seeds],
                             source, refresh_command)
    planned = boundaries.schedule(schedule.min_seeds, schedule.max_seeds)
    cells = []
    for task in report.tasks:
        spec = report.metric(task)
        for model in report.models:
            held = {s: float(v) for s, v in zip(baseline.seeds, baseline.values(task, model),
                                                strict=True)}
            seeds = list(schedule.planned_seeds)
            # the planned seeds the baseline holds, up to the first it lacks
            pairs = next((i for i, s in enumerate(seeds) if s not in held), len(seeds))
            if pairs < schedule.min_seeds:
                raise GateRefusal(
                    f"{task}/{model}: {source} holds the first {pairs} of the planned seeds "
                    f"{list(schedule.planned_seeds)} (it has seeds {list(baseline.seeds)}); the "
                    f"first look needs {schedule.min_seeds}. Refresh "
                    f"the baseline with --graphnetz-seeds={schedule.seeds_option}.")
            cell_design = design(schedule.min_seeds, min(pairs, schedule.max_seeds), alpha=alpha)
            seeds = seeds[:cell_design.max_seeds]
            notes: tuple[str, ...] = ()
            capped = ""
            if cell_design.looks != planned:
                how = (f"`{refresh_command} --graphnetz-seeds={schedule.seeds_option}`"
                       if refresh_command else
                       f"a refresh with --graphnetz-seeds={schedule.seeds_option}")
                notes = (f"{source} pairs {pairs} of the {schedule.max_seeds} planned seeds, so "
                         f"this cell's looks are {cell_design.looks}; {how} completes it",)
                capped = (f"capped at {cell_design.max_seeds} seeds: the baseline pairs "
                          f"{pairs} of the {schedule.max_seeds} planned")
            values = {s: float(v) for s, v in zip(report.seeds, report.values(task, model),
                                                   strict=True)}
            cells.append(GateCell(task, model, spec, seeds, cell_design, values, held,
                                  cell_min_effect(spec, margin, min_effect), report.folds(task),
                                  notes, capped, first_look=schedule.min_seeds))

    def train(open_cells: Sequence[GateCell]) -> None:
        _train_look(report, schedule, baseline, open_cells, source)

    decide_cells(cells, call.replace(test="paired-t"), train=train)
    env = environment_notes(report, baseline) + tuned
    return [c.verdict_of(report, baseline, strict=call.strict, notes=env,
                         refresh_command=refresh_command, schedule=schedule) for c in cells]


def _train_look(report: BenchmarkReport, schedule: Schedule, base: BenchmarkReport,
                cells: Sequence[GateCell], source: str) -> None:
    """The pairing of one look of an adaptive schedule: train each open cell's seeds up to its
    current look (one runner call per task and seed list), then refuse a task whose data or
    split differs from the baseline's at any seed of this look, the first look included."""
    groups: dict[tuple[str, tuple[int, ...]], list[GateCell]] = {}
    for c in cells:
        need = tuple(s for s in c.look_seeds if s not in c.candidate)
        if need:
            groups.setdefault((c.task, need), []).append(c)
    for (task, seeds), group in groups.items():
        more = schedule.extend(report, task, [c.model for c in group], seeds)
        for c in group:
            c.candidate.update(zip(more.seeds, (float(v) for v in more.values(task, c.model)),
                                   strict=True))
            c.sources.update(dict.fromkeys(more.seeds, more))
    checked: dict[tuple[int, str], set[int]] = {}
    for c in cells:
        for s in c.look_seeds:
            checked.setdefault((id(c.sources.get(s, report)), c.task), set()).add(s)
    for c in cells:   # one refusal per (report, task), on every seed of the look
        for s in c.look_seeds:
            src = c.sources.get(s, report)
            key = (id(src), c.task)
            if key in checked:
                refuse_changed_data(src.subset(tasks=[c.task]), base.subset(tasks=[c.task]),
                                    sorted(checked.pop(key)), source)


def _number(call: GateSpec) -> float | None:
    """The call's δ as a number (None: each metric's default); RESOLVABLE is read from the
    calibration by the gate before it compares."""
    if isinstance(call.min_effect, Resolvable):
        raise ValueError("min_effect='resolvable' is read from the calibration beside a "
                         "baseline: call assert_not_worse, or give δ as a number")
    return call.min_effect


def _judged_alone(*, rerun_safe: bool, test: str, folds: int | None, suite: bool,
                  reason: str | None = None) -> str:
    """Why a task's cells are judged alone at α rather than on the schedule ("" if not)."""
    if not rerun_safe:
        return reason or NOT_RERUN_SAFE
    if test != "paired-t":
        return f"the {test} test has no sequential boundaries (the paired t has)"
    if folds is not None:
        return f"{folds}-fold cross-validation (the corrected resampled t test)"
    if suite:
        return "a call with suite rows decides in one weighted Holm family"
    return ""


def _on_schedule(seeds: Sequence[int], first: int, alpha: float
                 ) -> tuple[list[int], Design | None, tuple[int, ...]]:
    """The seeds a run walks the schedule on, its design and the paired seeds no look uses:
    the looks ``first, 2·first, ...`` that the prefix ``0, 1, ..., n − 1`` of the paired
    ``seeds`` holds. No design (None) when the prefix is shorter than the first look."""
    have = set(seeds)
    n = 0
    while n in have:
        n += 1
    if n < first:
        return list(seeds), None, ()
    cell_design = design(first, n, alpha=alpha, rho=DEFAULT_RHO)
    looked = list(range(cell_design.max_seeds))
    return looked, cell_design, tuple(s for s in seeds if s >= cell_design.max_seeds)
