"""Gates: compare a candidate report with a baseline on paired per-seed evidence.

Each gate works on every (task, model) cell of the candidate: the seeds both reports ran are
paired **by seed value** (seed 3 with seed 3, whatever their order), the differences
``d_s = candidate − baseline`` (sign flipped for lower-is-better metrics) go to
:func:`pytest_graphnetz.stats.compare`, and the p-values of one call are Holm-corrected across
its tested cells (``assert_not_worse`` only: ``assert_better``/``assert_equivalent`` pass only
when every cell passes, an intersection-union test that needs no correction). A gate returns its
verdicts and raises ``AssertionError`` when one fails; the message carries what a reviewer needs
(cell, metric and direction, both means with intervals, paired Δ with the (1 − 2α) interval that
matches the one-sided decisions, p, test, margin, δ, n, MDE, and for an INCONCLUSIVE cell the
seeds that would decide it, planned for δ).

Pairing that would be fictional is refused (:class:`GateRefusal`): fewer than two shared
seeds, a task whose data or split fingerprint differs for the same seed, a metric mismatch
(:mod:`pytest_graphnetz.pairing`, at every look). Every not-worse cell, fixed or adaptive
seeds, is decided on one path (:func:`decide_cells`: a fixed seed count is a one-look
schedule); what a verdict holds and how it reads is :mod:`pytest_graphnetz.verdicts`.

Inside pytest, the plugin sets a :class:`GateObserver` for each test body: it supplies the
session's ``--graphnetz-alpha`` / ``--graphnetz-strict`` / ``--graphnetz-min-effect`` defaults
and collects every verdict for the terminal summary. Outside pytest the defaults are
``alpha=0.05``, ``strict=False`` and δ from the metric (:func:`default_min_effect`).
"""

from __future__ import annotations

import math
import os
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any, Protocol, runtime_checkable

import numpy as np

from . import stats
from .baselines import BaselineError, BaselineHandle, BaselineMissingError, load_baseline
from .history import MetricSpec
from .pairing import (
    changed_model_notes,
    check_cells,
    check_metrics,
    collapse_notes,
    environment_notes,
    refuse_changed_data,
    shared_seeds,
    unpaired_cell,
    unpaired_notes,
)
from .report import BenchmarkReport
from .stats.decisions import holm_member, plan_seeds
from .stats.sequential import sequential_design
from .stats.suite import DEFAULT_SUITE_WEIGHT
from .verdicts import (  # noqa: F401 - TABLE_*, UnpairedCell, gate_table: public here too
    CHANGED_MODEL_NOTE,
    DEFAULT_MIN_EFFECT,
    NO_MIN_EFFECT_NOTE,
    TABLE_COLUMNS,
    TABLE_HEADERS,
    CellVerdict,
    GateRefusal,
    Stop,
    UnpairedCell,
    WidthVerdict,
    default_min_effect,
    describe_values,
    failed_verdict,
    fmt_mean_ci,
    fmt_num,
    gate_table,
    metric_label,
    seed_list,
    verdict_name,
)

BaselineLike = BenchmarkReport | BaselineHandle | str | os.PathLike

# "paired" is the default spelling of the paired t-test; every test here pairs by seed.
TESTS = {"paired": "paired-t", "paired-t": "paired-t", "wilcoxon": "wilcoxon",
          "permutation": "permutation", "bootstrap": "bootstrap"}
@runtime_checkable
class Schedule(Protocol):
    """A report that can train more seeds, look by look: adaptive seeds
    (:class:`~pytest_graphnetz.adaptive.AdaptiveReport` is the one implementation). Only the
    not-worse gate is sequential; the other gates, and refreshes, ``complete`` it to MAX."""

    planned_seeds: tuple[int, ...]
    min_seeds: int
    gamma: float
    extensions: list[BenchmarkReport]

    @property
    def max_seeds(self) -> int: ...

    @property
    def seeds_option(self) -> str: ...

    def extend(self, task: str, models: Sequence[str],
               seeds: Sequence[int]) -> BenchmarkReport: ...

    def complete(self) -> BenchmarkReport: ...

    def decided(self, since: int = 0) -> list[BenchmarkReport]: ...


# -- the observer: how the pytest plugin hears about gates ------------------------------------


@dataclass(frozen=True)
class GateObserver:
    """Session defaults for gates run inside a test, and where their summary rows go."""

    alpha: float
    strict: bool
    record: Callable[[dict[str, str]], None]
    min_effect: float | None = None
    uses: Callable[[str], None] | None = None   # told each baseline file a gate reads
    # --graphnetz-report-dir: called with each gate's candidate report (fixed seeds: before it
    # is compared; adaptive: after, with the cells that took more seeds as ``further``
    # reports, see AdaptiveReport.decided); returns the paths it wrote.
    candidate: Callable[[BenchmarkReport, Sequence[BenchmarkReport]], Sequence[str]] | None = None
    # verdict(row, v) -> the row to record for verdict v (the plugin adds v's numbers).
    verdict: Callable[[dict[str, str], Any], dict[str, Any]] | None = None


_OBSERVER: ContextVar[GateObserver | None] = ContextVar("graphnetz_gate_observer", default=None)


@contextmanager
def observing(observer: GateObserver) -> Iterator[GateObserver]:
    """Within the block, gates default to ``observer``'s alpha/strict and report rows to it."""
    token = _OBSERVER.set(observer)
    try:
        yield observer
    finally:
        _OBSERVER.reset(token)


# -- verdicts ----------------------------------------------------------------------------------


# -- the gates -----------------------------------------------------------------------------------


def assert_not_worse(report: BenchmarkReport, baseline: BaselineLike, *, test: str = "paired",
                     margin: float = 0.0, min_effect: float | None = None,
                     alpha: float | None = None, strict: bool | None = None,
                     rng: Any = None, suite: bool = False,
                     suite_min_effect: float | None = None) -> list[CellVerdict]:
    """Fail on paired evidence that ``report`` is worse than ``baseline`` by more than ``margin``.

    Per cell, d = candidate − baseline (sign flipped for lower-is-better metrics), the first of:

    - REGRESSED (fails): the one-sided test rejects "mean d ≥ −margin" (Holm across the cells
      actually tested; IDENTICAL cells are not in the family). A significant drop smaller than
      δ is REGRESSED too; the message says how to accept it (``margin``);
    - BETTER (passes): the one-sided test rejects "mean d ≤ +margin"; a refresh keeps the gain;
    - NOT WORSE (passes): the one-sided (1 − α) lower bound of mean d lies above −δ;
    - INCONCLUSIVE (passes, fails with ``strict``); IDENTICAL: every d_s exactly 0.

    δ = ``min_effect``, the smallest regression that matters, in metric units, > ``margin``;
    default the session's ``--graphnetz-min-effect``, else :func:`default_min_effect` (margin +
    0.01 for metrics bounded in [0, 1]; none for MAE/RMSE/loss, where NOT WORSE falls back to
    −margin and the row's Note says so).
    ``alpha`` / ``strict`` default to 0.05 / False, or the session's options in pytest.

    ``suite``: per model, one more row, ``suite/<model>``, for the per-seed mean paired
    difference across the call's tasks of one metric (a diffuse drop no single cell shows),
    decided like a cell with δ ``suite_min_effect`` (default: the cells' δ), its REGRESSED in
    one weighted Holm family with the cells (:func:`~pytest_graphnetz.stats.suite.suite_family`,
    suite weight 0.5; docs/guarantees.md). Tasks of another metric, and k-fold tasks, are left
    out of it (a note says so). An adaptive report is then judged at its MAX seeds: the row's
    family has one look.
    Returns one :class:`CellVerdict` per candidate cell, then one per suite row.
    """
    __tracebackhide__ = True
    return _comparison_gate("not_worse", report, baseline, test=test, margin=margin,
                            min_effect=min_effect, alpha=alpha, strict=strict, rng=rng,
                            suite=suite, suite_min_effect=suite_min_effect)


def assert_better(report: BenchmarkReport, baseline: BaselineLike, *, test: str = "paired",
                  margin: float = 0.0, alpha: float | None = None, strict: bool | None = None,
                  rng: Any = None) -> list[CellVerdict]:
    """Pass only on paired evidence that every cell improved on ``baseline`` by over ``margin``.

    Each cell is tested at ``alpha``, without Holm: the gate passes only when every cell passes
    (an intersection-union test, whose level is ``alpha`` as it stands)."""
    __tracebackhide__ = True
    return _comparison_gate("better", report, baseline, test=test, margin=margin,
                            alpha=alpha, strict=strict, rng=rng)


def assert_equivalent(report: BenchmarkReport, baseline: BaselineLike, *, margin: float,
                      test: str = "paired", alpha: float | None = None,
                      strict: bool | None = None, rng: Any = None) -> list[CellVerdict]:
    """Pass only when every cell's paired mean difference lies within ±``margin`` (TOST).

    Like :func:`assert_better`, an intersection-union test: every cell at ``alpha``, no Holm."""
    __tracebackhide__ = True
    if not margin > 0:
        raise ValueError(f"assert_equivalent needs `margin` > 0 (the equivalence bound), "
                         f"got {margin!r}")
    return _comparison_gate("equivalent", report, baseline, test=test, margin=margin,
                            alpha=alpha, strict=strict, rng=rng)


def assert_ci_width(report: BenchmarkReport, max_width: float, *,
                    method: str | None = None) -> list[WidthVerdict]:
    """Fail when a cell's interval (``method``, default the report's) is wider than ``max_width``.

    The message says how many seeds would bring each wide interval under ``max_width``.
    Returns one :class:`WidthVerdict` per cell. An adaptive report (``--graphnetz-seeds=MIN..MAX``)
    is measured at all MAX seeds, as the other non-sequential gates are (only missing ones train).
    """
    __tracebackhide__ = True
    if isinstance(report, Schedule):
        report = report.complete()
    _announce(report)
    try:
        if not max_width > 0:
            raise ValueError(f"`max_width` must be > 0, got {max_width!r}")
        verdicts = []
        for task in report.tasks:
            spec = report.metric(task)
            for model in report.models:
                cell = describe_values(report.values(task, model), report, method=method)
                width = float(cell.ci.high - cell.ci.low)
                failed = not width <= max_width   # a NaN width (n < 2) fails too
                needed = None
                if failed and math.isfinite(cell.std) and cell.std > 0:
                    needed = stats.seeds_for_width(cell.std, max_width,
                                                   confidence_level=report.confidence_level)
                verdicts.append(WidthVerdict(task, model, spec.name, spec.higher_is_better, cell,
                                             width, float(max_width), needed, failed))
    except Exception as exc:
        _record_stopped("ci_width", report, None, exc)
        raise
    _finish("assert_ci_width", verdicts, header=f"interval wider than {fmt_num(max_width)}")
    return verdicts


# -- the work --------------------------------------------------------------------------------------


def _comparison_gate(gate: str, report: BenchmarkReport, baseline: BaselineLike, *, test: str,
                     margin: float, alpha: float | None, strict: bool | None,
                     rng: Any, min_effect: float | None = None, suite: bool = False,
                     suite_min_effect: float | None = None) -> list[CellVerdict]:
    # Hidden from pytest's traceback (as are the helpers below): a failing gate shows the test's
    # own line and the verdict message, not the plugin's frames and their locals.
    __tracebackhide__ = True
    observer = _OBSERVER.get()
    alpha = alpha if alpha is not None else (observer.alpha if observer else 0.05)
    strict = strict if strict is not None else (observer.strict if observer else False)
    if min_effect is None and observer is not None:
        min_effect = observer.min_effect
    if isinstance(report, Schedule):
        # Saved once the seeds it is judged on are trained (below); from this gate's extensions.
        since = len(report.extensions)
    else:
        _announce(report)
    saved: Sequence[str] = ()
    decided: Sequence[BenchmarkReport] = ()
    try:
        if test not in TESTS:
            raise ValueError(f"`test` must be one of {sorted(TESTS)} (every gate test is paired "
                             f"by seed), got {test!r}")
        test = TESTS[test]
        if isinstance(report, Schedule) and (
                gate != "not_worse" or suite
                or (isinstance(baseline, BaselineHandle) and baseline.update)):
            # Only the not-worse gate is sequential; the others, refreshes and a suite row
            # (its weighted family has one look) use MAX seeds.
            report = report.complete()
            _announce(report)
        if isinstance(baseline, BaselineHandle) and baseline.update:
            return _refresh(gate, report, baseline, test=test, margin=margin, alpha=alpha,
                            rng=rng, min_effect=min_effect)
        source, base = _load(baseline)
        command = baseline.update_command if isinstance(baseline, BaselineHandle) else None
        if isinstance(report, Schedule):
            verdicts, header = _adaptive_gate(report, base, test=test, margin=margin,
                                              alpha=alpha, strict=strict, source=source,
                                              baseline=baseline, min_effect=min_effect, rng=rng)
        else:
            verdicts = compare_reports(report, base, gate=gate, test=test, margin=margin,
                                       min_effect=min_effect, alpha=alpha, strict=strict,
                                       source=source, rng=rng, refresh_command=command,
                                       suite=suite, suite_min_effect=suite_min_effect)
            header = f"{_TITLE[gate]} against {source} ({_config(verdicts)})"
    except AssertionError:
        raise  # a refused refresh: its rows are recorded already
    except (GateRefusal, BaselineError) as exc:
        _record_stopped(gate, report, baseline, exc)
        # The message says all there is; the frames inside the baseline store add nothing.
        raise exc.with_traceback(None) from None
    except Exception as exc:
        _record_stopped(gate, report, baseline, exc)
        raise
    finally:
        # The sequential gate, decided or stopped: its cells at the seeds they were judged on.
        # A failed write warns: it must not hide the verdicts (or the error) of the gate itself.
        if isinstance(report, Schedule) and observer and observer.candidate:
            decided = report.decided(since)
            try:
                saved = _announce(*decided)
            except OSError as exc:
                import warnings

                warnings.warn(f"graphnetz: the candidate report was not saved: {exc}",
                              stacklevel=2)
    notes = (_saved_note(saved, decided),) if len(saved) > 1 else ()
    from .calibration import annotate_verdicts  # δ finer than the seeds resolve: a note

    verdicts = annotate_verdicts(verdicts, baseline)
    _finish(f"assert_{gate}", verdicts, header=header, notes=notes)
    return verdicts


def _adaptive_gate(report: Any, base: BenchmarkReport, *, test: str, margin: float,
                   alpha: float, strict: bool, source: str, baseline: BaselineLike,
                   min_effect: float | None = None, rng: Any = None
                   ) -> tuple[list[CellVerdict], str]:
    """``assert_not_worse`` on an adaptive report: :func:`compare_schedule`, and the header of
    the failure message, which says what the schedule saved."""
    from .text import seed_trainings

    if test != "paired-t":
        raise ValueError(f"adaptive seeds (--graphnetz-seeds={report.seeds_option}) decide with "
                         f"the paired t test's sequential boundaries; got test={test!r}: use "
                         "test='paired', or fixed seeds (e.g. --graphnetz-seeds=20)")
    command = baseline.update_command if isinstance(baseline, BaselineHandle) else None
    verdicts = compare_schedule(report, base, margin=margin, min_effect=min_effect, alpha=alpha,
                                strict=strict, source=source, rng=rng, refresh_command=command)
    used = sum(v.stop.trained for v in verdicts)
    pairable = sum(v.stop.max_seeds for v in verdicts)
    return verdicts, (
        f"{_TITLE['not_worse']} against {source} ({_config(verdicts)}; adaptive seeds "
        f"{report.seeds_option}: {seed_trainings(used)}, {pairable - used} saved against the "
        f"{pairable} the baseline could pair)")


def compare_schedule(report: Schedule, baseline: BenchmarkReport, *, margin: float = 0.0,
                     min_effect: float | None = None, alpha: float = 0.05,
                     strict: bool = False, source: str = "the baseline", rng: Any = None,
                     refresh_command: str | None = None) -> list[CellVerdict]:
    """The not-worse verdicts of an adaptive ``report`` against ``baseline`` (the paired t
    test), each cell decided look by look on the one decision path (:func:`decide_cells`),
    training its next seeds only while open; what :func:`compare_reports` is for fixed seeds.

    Per cell the seeds are the planned seeds the baseline has (finite), in planned order; a
    baseline with fewer than MAX of them cuts the cell's schedule there (a note names the
    refresh that completes it, and the table's Note says the cell was capped).
    """
    __tracebackhide__ = True
    if min_effect is not None and not min_effect > margin:
        raise ValueError(_min_effect_error(min_effect, margin))
    check_cells(report, baseline, source)
    check_metrics(report, baseline, source)
    cells = []
    for task in report.tasks:
        spec = report.metric(task)
        for model in report.models:
            held = {s: float(v) for s, v in zip(baseline.seeds, baseline.values(task, model),
                                                strict=True)}
            seeds = [s for s in report.planned_seeds if math.isfinite(held.get(s, math.nan))]
            if len(seeds) < 2:
                raise GateRefusal(
                    f"{task}/{model}: {source} pairs {len(seeds)} of the planned seeds "
                    f"{list(report.planned_seeds)} (it has seeds {list(baseline.seeds)}, "
                    "diverged ones excluded); a paired test needs at least 2. Refresh the "
                    f"baseline with --graphnetz-seeds={report.seeds_option}.")
            design = sequential_design(min(report.min_seeds, len(seeds)), len(seeds),
                                       alpha=alpha, gamma=report.gamma)
            notes: tuple[str, ...] = ()
            capped = ""
            if len(seeds) < report.max_seeds:
                how = (f"`{refresh_command} --graphnetz-seeds={report.seeds_option}`"
                       if refresh_command else
                       f"a refresh with --graphnetz-seeds={report.seeds_option}")
                notes = (f"{source} pairs {len(seeds)} of the {report.max_seeds} planned seeds, "
                         f"so this cell's looks are {design.looks}; {how} completes it",)
                capped = (f"capped at {len(seeds)} seeds: the baseline pairs {len(seeds)} of "
                          f"the {report.max_seeds} planned")
            values = {s: float(v) for s, v in zip(report.seeds, report.values(task, model),
                                                   strict=True)}
            cells.append(_Cell(task, model, spec, seeds, design, values, held,
                               _min_effect(spec, margin, min_effect), report.folds(task), notes,
                               capped))

    def train(open_cells: Sequence[_Cell]) -> None:
        _train_look(report, baseline, open_cells, source)

    decide_cells(cells, test="paired-t", margin=margin, alpha=alpha, rng=rng, train=train)
    env = environment_notes(report, baseline)
    return [c.verdict_of(report, baseline, strict=strict, notes=env,
                         refresh_command=refresh_command, schedule=report) for c in cells]


def _train_look(report: Any, base: BenchmarkReport, cells: Sequence[_Cell], source: str) -> None:
    """The pairing of one look of an adaptive schedule: train each open cell's seeds up to its
    current look (one runner call per task and seed list), then refuse a task whose data or
    split differs from the baseline's at any seed of this look, the first look included."""
    groups: dict[tuple[str, tuple[int, ...]], list[_Cell]] = {}
    for c in cells:
        need = tuple(s for s in c.look_seeds if s not in c.candidate)
        if need:
            groups.setdefault((c.task, need), []).append(c)
    for (task, seeds), group in groups.items():
        more = report.extend(task, [c.model for c in group], seeds)
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

    @property
    def look_seeds(self) -> list[int]:
        return self.seeds[:self.design.looks[self.look]]

    def compare(self, *, test: str, margin: float, alpha: float, rng: Any) -> Any:
        """The comparison at exactly this look's seeds."""
        seeds = self.look_seeds
        cell = {"candidate": np.array([self.candidate[s] for s in seeds]),
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
            from .stats.heldout import FOLD_NOTE

            comp = replace(comp, notes=(*comp.notes, FOLD_NOTE.format(
                task=self.task, k=self.folds, test=comp.test)))
        collapsed: tuple[tuple[str, ...], str] = ((), "")
        # Only a tested cell has a t test to warn about; on folds the seeds' differences are
        # not independent, which the Grubbs test assumes.
        if self.tested and self.folds is None:
            collapsed = collapse_notes([self.baseline[s] for s in seeds],
                                       [self.candidate[s] for s in seeds], seeds,
                                       higher_is_better=self.spec.higher_is_better)
        table_note = "; ".join(x for x in (
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
            refresh_command, stop=stop, table_note=table_note, folds=self.folds)

    def _plan(self, comp: Any, level: float, min_seeds: int | None) -> int | None:
        """The seeds that would decide an INCONCLUSIVE cell, for the design the advice
        recommends (issue 21): on a k-fold task the corrected resampled t test's own plan (None
        when no seed count resolves δ); under adaptive seeds the MAX of ``min_seeds..MAX`` whose
        sequential boundaries deliver the power; else the fixed-n plan already in ``comp``.
        ``level``: REGRESSED's level (Holm's ``alpha / m``)."""
        if (comp.verdict is not stats.Verdict.INCONCLUSIVE or self.min_effect is None
                or not math.isfinite(comp.sd_diff)):
            return comp.seeds_needed
        if self.folds is not None:
            from .stats.heldout import fold_ratio
            from .stats.planning import fold_seeds_for_min_effect

            # the per-fold sd: comp's is inflated by the correction (fold_corrected)
            sd = comp.sd_diff / math.sqrt(1 + comp.n * fold_ratio(self.folds))
            needed = fold_seeds_for_min_effect(
                sd, self.min_effect, folds=self.folds, margin=comp.margin, alpha=comp.alpha,
                alpha_regressed=comp.mde_alpha or comp.alpha, power=comp.power)
            return None if needed is None else max(needed, comp.n + 1)
        if min_seeds is None or comp.seeds_needed is None:
            return comp.seeds_needed
        from .stats.sequential import sequential_seeds_for_min_effect

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
    from .stats.sequential import look_verdict, sequential_holm

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


SUITE = "suite"   # the task label of a suite row: ``suite/<model>``


@dataclass
class _SuiteRow:
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
    result: Any
    rejected: bool = False
    level: float = 0.0
    p_adjusted: float | None = None

    def verdict_of(self, report: BenchmarkReport, baseline: BenchmarkReport, *, strict: bool,
                   notes: tuple[str, ...], refresh_command: str | None) -> CellVerdict:
        res = self.result
        if self.rejected:
            verdict = stats.Verdict.REGRESSED
        elif res.verdict is stats.Verdict.IDENTICAL:
            verdict = stats.Verdict.IDENTICAL
        elif res.p_better <= res.alpha:
            verdict = stats.Verdict.BETTER
        elif res.p_not_worse <= res.alpha:
            verdict = stats.Verdict.NOT_WORSE
        else:
            verdict = stats.Verdict.INCONCLUSIVE
        # The paired t on the per-seed task means is suite_test's test (their difference is
        # suite_differences); compare() adds what a cell's message shows (interval, MDE, plan).
        comp = stats.compare(self.candidate, self.baseline,
                             higher_is_better=self.spec.higher_is_better, kind="not_worse",
                             test="paired-t", margin=res.margin, min_effect=self.min_effect,
                             alpha=res.alpha, label=f"{SUITE}/{self.model}", seeds=self.seeds,
                             plan=False)
        comp = replace(comp, verdict=verdict, notes=(
            *comp.notes,
            f"suite row: per seed, the mean over {len(self.tasks)} tasks {self.tasks} of "
            f"{self.spec.name} candidate − baseline, paired by seed; REGRESSED is decided in "
            f"one weighted Holm family with the call's cells (suite weight "
            f"{DEFAULT_SUITE_WEIGHT:g}), here at level {self.level:.3g}; docs/guarantees.md"))
        if self.level and self.level != res.alpha and verdict is not stats.Verdict.IDENTICAL:
            comp = replace(comp, ci=comp.interval(res.alpha, self.level),
                           ci_alphas=(res.alpha, self.level))
        comp = replace(comp, seeds_needed=plan_seeds(comp, self.level or res.alpha),
                       p_adjusted=self.p_adjusted)
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
               ) -> tuple[list[_SuiteRow], tuple[str, ...]]:
    """Per model, the suite row over the tasks of the call's most common metric (the first
    task's on a tie), paired on ``seeds``, and the notes on what it left out: tasks of another
    metric, k-fold tasks (their seeds index folds), seeds diverged on a task. No row with fewer
    than 2 such tasks (the row would be the cell itself)."""
    from .stats.suite import suite_differences, suite_test

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
        rows.append(_SuiteRow(model, spec, used, kept, cand[:, ok].mean(axis=0),
                              base[:, ok].mean(axis=0), delta,
                              suite_test(diffs, margin=margin, min_effect=delta, alpha=alpha,
                                         n_tasks=len(used))))
    return rows, tuple(notes)


def _suite_family(rows: Sequence[_SuiteRow], alpha: float) -> Callable[..., Any]:
    """The REGRESSED family of a call with suite rows, for :func:`decide_cells` (one look):
    weighted Holm over the tested cells' p and the rows' (suite weight 0.5). Sets each row's
    decision; returns the cells' as a :class:`FamilyDecision` with per-cell levels."""
    from .stats.sequential import FamilyDecision
    from .stats.suite import suite_family

    def decide(histories: Sequence[Sequence[float]], designs: Sequence[Any]) -> Any:
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


def _min_effect(spec: MetricSpec, margin: float, min_effect: float | None) -> float | None:
    return min_effect if min_effect is not None else default_min_effect(spec, margin)


def _min_effect_error(min_effect: float, margin: float) -> str:
    return (f"`min_effect` ({min_effect!r}) must be larger than `margin` ({margin!r}): δ is the "
            "smallest regression that matters, margin the drop that is tolerated; raise "
            "min_effect (--graphnetz-min-effect) or lower the margin")


_TITLE = {"not_worse": "paired regression gate", "better": "paired improvement gate",
          "equivalent": "paired equivalence gate (TOST)"}
def compare_reports(report: BenchmarkReport, baseline: BenchmarkReport, *, gate: str = "not_worse",
                    test: str = "paired-t", margin: float = 0.0, min_effect: float | None = None,
                    alpha: float = 0.05, strict: bool = False, source: str = "the baseline",
                    rng: Any = None, refresh_command: str | None = None, suite: bool = False,
                    suite_min_effect: float | None = None) -> list[CellVerdict]:
    """Every candidate cell of ``report`` against ``baseline`` (``not_worse``: Holm across the
    tested cells, on the one decision path as a single look, :func:`decide_cells`; ``suite``:
    the suite rows after the cells, see :func:`assert_not_worse`); raises
    nothing but :class:`GateRefusal` / :class:`BaselineMissingError` (the gates decide what
    fails), and ``ValueError`` for a ``min_effect`` not above ``margin``.
    ``min_effect`` None: each task's :func:`default_min_effect`.
    """
    __tracebackhide__ = True
    if gate == "not_worse" and min_effect is not None and not min_effect > margin:
        raise ValueError(_min_effect_error(min_effect, margin))
    if suite and suite_min_effect is not None and not suite_min_effect > margin:
        raise ValueError(_min_effect_error(suite_min_effect, margin).replace(
            "`min_effect`", "`suite_min_effect`"))
    check_cells(report, baseline, source)
    seeds = shared_seeds(report, baseline, source)
    check_metrics(report, baseline, source)
    refuse_changed_data(report, baseline, seeds, source)
    notes = environment_notes(report, baseline) + unpaired_notes(report, baseline, seeds,
                                                                    refresh_command)
    cand_idx = [report.seeds.index(s) for s in seeds]
    base_idx = [baseline.seeds.index(s) for s in seeds]
    if gate == "not_worse":
        from .stats.sequential import sequential_design

        design = sequential_design(len(seeds), len(seeds), alpha=alpha)   # one look
        cells = []
        for task in report.tasks:
            spec = report.metric(task)
            for model in report.models:
                cells.append(_Cell(
                    task, model, spec, list(seeds), design,
                    dict(zip(seeds, report.values(task, model)[cand_idx].tolist(), strict=True)),
                    dict(zip(seeds, baseline.values(task, model)[base_idx].tolist(),
                             strict=True)),
                    _min_effect(spec, margin, min_effect), report.folds(task)))
        rows: list[_SuiteRow] = []
        family = None
        if suite:
            rows, suite_notes = suite_rows(report, baseline, seeds, margin=margin,
                                           min_effect=(suite_min_effect if suite_min_effect
                                                       is not None else min_effect),
                                           alpha=alpha)
            notes = (*notes, *suite_notes)
            if rows:
                family = _suite_family(rows, alpha)
        decide_cells(cells, test=test, margin=margin, alpha=alpha, rng=rng, family=family)
        return [*(c.verdict_of(report, baseline, strict=strict, notes=notes,
                               refresh_command=refresh_command) for c in cells),
                *(r.verdict_of(report, baseline, strict=strict, notes=notes,
                               refresh_command=refresh_command) for r in rows)]
    specs, tested, described = [], [], []
    for task in report.tasks:
        spec = report.metric(task)
        for model in report.models:
            specs.append((task, model, spec))
            cell = {"candidate": report.values(task, model)[cand_idx],
                    "baseline": baseline.values(task, model)[base_idx],
                    "higher_is_better": spec.higher_is_better,
                    "label": f"{task}/{model}", "seeds": seeds}
            described.append(cell)
            tested.append(_fold_cell(cell, report.folds(task), test))
    # better / equivalent: intersection-union tests, every cell at alpha (no family)
    comparisons = [stats.compare(**{"test": test, **cell}, kind=gate, margin=margin,
                                 alpha=alpha, rng=rng) for cell in tested]
    verdicts = []
    for (task, model, spec), cell, comp in zip(specs, described, comparisons, strict=True):
        if report.folds(task) is not None:
            from .stats.heldout import FOLD_NOTE

            comp = replace(comp, notes=(*comp.notes, FOLD_NOTE.format(
                task=task, k=report.folds(task), test=test)))
        name = verdict_name(comp.verdict)
        changed = changed_model_notes(report, baseline, model, seeds) if name == "IDENTICAL" else ()
        verdicts.append(CellVerdict(
            task, model, spec.name, spec.higher_is_better, gate, comp,
            describe_values(cell["baseline"], baseline, metric=spec.name),
            describe_values(cell["candidate"], report, metric=spec.name),
            tuple(seeds), failed_verdict(gate, name, strict), (*notes, *changed),
            tuple(baseline.seeds), refresh_command,
            table_note=CHANGED_MODEL_NOTE if changed else ""))
    return verdicts


def _fold_cell(cell: dict, k: int | None, test: str) -> dict:
    """``cell`` as compared: on a k-fold CV task, the paired t on candidate values that make it
    the corrected resampled t test (:func:`~pytest_graphnetz.stats.heldout.fold_corrected`),
    whatever ``test`` was asked for (the plain tests are invalid on folds)."""
    if k is None:
        return cell
    from .stats.heldout import fold_corrected

    return {**cell, "test": "paired-t",
            "candidate": fold_corrected(cell["candidate"], cell["baseline"], k=k)}


def _refresh(gate: str, report: BenchmarkReport, handle: BaselineHandle, *, test: str,
             margin: float, alpha: float, rng: Any,
             min_effect: float | None = None) -> list[CellVerdict]:
    """``--graphnetz-update-baselines``: :func:`pytest_graphnetz.ratchet.refresh` writes the
    candidate unless the ratchet refuses; here its not-worse comparisons (the call's test,
    margin, δ and alpha) are made and reported. Returns the ratchet's verdicts."""
    __tracebackhide__ = True
    from .ratchet import refresh

    def judge(candidate: BenchmarkReport, reference: BenchmarkReport,
              source: str) -> list[CellVerdict]:
        return compare_reports(candidate, reference, gate="not_worse", test=test, margin=margin,
                               min_effect=min_effect, alpha=alpha, source=source, rng=rng)

    outcome = refresh(handle, report, judge)
    status = "UPDATED" if outcome.written else "REFUSED"
    failing = () if outcome.written else outcome.refused
    _record(outcome.previous, status=status, failing=failing)
    _record(outcome.anchored, status=f"{status} vs anchor", failing=failing)
    if not outcome.written:
        raise AssertionError(outcome.refusal())
    judged = {(v.task, v.model) for v in outcome.previous}
    _record_written(report, gate, [(t, m) for t in report.tasks for m in report.models
                                   if (t, m) not in judged], outcome.replaced)
    return [*outcome.previous, *outcome.anchored]


def _record_written(report: BenchmarkReport, gate: str, cells: Sequence[tuple[str, str]],
                    old: BenchmarkReport | None = None) -> None:
    """Rows for cells written without a paired ratchet verdict: new cells, or cells forced over
    a baseline that could not be paired (then old is shown against new, unpaired)."""
    observer = _OBSERVER.get()
    if observer is None:
        return
    for task, model in cells:
        spec = report.metric(task)
        cell = describe_values(report.values(task, model), report, metric=spec.name)
        row = {"cell": f"{task}/{model}", "metric": metric_label(spec.name, spec.higher_is_better),
               "candidate": fmt_mean_ci(cell, short=True), "verdict": "WRITTEN",
               "n": str(cell.n), "gate": gate, "baseline": "(new)"}
        if old is not None and task in old.tasks and model in old.models:
            before = unpaired_cell(report, old, task, model)
            row.update(baseline=fmt_mean_ci(before.baseline, short=True),
                       delta=before.delta(), verdict="WRITTEN (forced)",
                       note="replaced a baseline it could not be paired with; "
                            "Δ is unpaired (Welch), not a verdict")
        observer.record(row)


# -- checks that refuse --------------------------------------------------------------------------


def _load(baseline: BaselineLike) -> tuple[str, BenchmarkReport]:
    __tracebackhide__ = True
    if isinstance(baseline, BenchmarkReport):
        return "the baseline report", baseline
    if isinstance(baseline, BaselineHandle):
        return baseline.shown, baseline.load()  # relative to the rootdir in pytest
    if isinstance(baseline, (str, os.PathLike)):
        observer = _OBSERVER.get()
        if observer is not None and observer.uses is not None:
            observer.uses(str(Path(baseline).resolve()))
        return str(baseline), load_baseline(Path(baseline))
    raise TypeError(f"`baseline` must be a BenchmarkReport, a path or a baseline handle, "
                    f"got {type(baseline).__name__}")


# -- failing, recording, formatting --------------------------------------------------------------


def _finish(name: str, verdicts: Sequence[CellVerdict | WidthVerdict], *, header: str,
            notes: Sequence[str] = ()) -> None:
    __tracebackhide__ = True
    _record(verdicts)
    failed = [v for v in verdicts if v.failed]
    if failed:
        raise AssertionError(
            f"{name}: {len(failed)} of {len(verdicts)} cell(s) failed ({header})\n\n"
            + "\n\n".join([*(v.message() for v in failed), *(f"note: {n}" for n in notes)])
        )


def _announce(report: Any, *further: BenchmarkReport) -> Sequence[str]:
    """Hand the candidate to the observer (the plugin keeps it for --graphnetz-report-dir);
    ``further``: an adaptive gate's cells that took more seeds than ``report`` holds. Returns
    the paths the observer wrote (none outside pytest)."""
    observer = _OBSERVER.get()
    if observer is not None and observer.candidate is not None and isinstance(
            report, BenchmarkReport):
        return observer.candidate(report, further)
    return ()


def _saved_note(paths: Sequence[str], reports: Sequence[BenchmarkReport]) -> str:
    """Which saved candidate report holds which cells, at which seeds (an adaptive gate whose
    cells stopped at different seeds is saved as several dense reports)."""
    first, *further = zip(paths, reports, strict=True)
    parts = [f"{first[0]} holds every cell at seeds {seed_list(first[1].seeds)}"]
    parts += [f"{path} holds {', '.join(f'{t}/{m}' for t in r.tasks for m in r.models)} at "
              f"seeds {seed_list(r.seeds)}" for path, r in further]
    return ("the candidate reports saved (--graphnetz-report-dir) hold each cell at the seeds "
            "it was decided on: " + "; ".join(parts))


def _record_stopped(gate: str, report: Any, baseline: Any, exc: Exception) -> None:
    """Rows for a gate call that ended without verdicts: REFUSED, MISSING BASELINE or ERROR,
    each with its one-line reason, so that no gate call is missing from the summary."""
    observer = _OBSERVER.get()
    if observer is None:
        return
    if isinstance(exc, BaselineMissingError):
        status = "MISSING BASELINE"
        command = getattr(baseline, "update_command", None)
        if getattr(exc, "cells", None) is not None:
            reason = "no baseline for this cell"
        else:
            reason = "no baseline file" if command else _first_line(exc, 100)
        if command:
            reason += f"; create it: `{command}`"
    elif isinstance(exc, GateRefusal):
        status, reason = "REFUSED", exc.reason
    else:
        status, reason = "ERROR", f"{type(exc).__name__}: {_first_line(exc)}"
    if not isinstance(report, BenchmarkReport):
        observer.record({"cell": "?", "verdict": status, "gate": gate, "failed": "yes",
                         "note": reason})
        return
    concerned = getattr(exc, "cells", None)
    unpaired = {(u.task, u.model): u for u in getattr(exc, "unpaired", ())}
    for task in report.tasks:
        spec = report.metric(task)
        for model in report.models:
            mine = concerned is None or (task, model) in concerned
            row = {"cell": f"{task}/{model}",
                   "metric": metric_label(spec.name, spec.higher_is_better),
                   "candidate": fmt_mean_ci(describe_values(report.values(task, model), report,
                                                   metric=spec.name), short=True),
                   "verdict": status if mine else "NOT COMPARED", "gate": gate,
                   "failed": "yes" if mine else "",
                   "note": reason if mine else f"the gate stopped on another cell ({status})"}
            if (task, model) in unpaired:
                u = unpaired[(task, model)]
                row.update(baseline=fmt_mean_ci(u.baseline, short=True), delta=u.delta())
            observer.record(row)


def _first_line(exc: BaseException, limit: int = 160) -> str:
    line = str(exc).strip().split("\n", 1)[0]
    return line if len(line) <= limit else line[:limit - 1] + "…"


def _record(verdicts: Sequence[CellVerdict | WidthVerdict], status: str | None = None,
            failing: Sequence[Any] = ()) -> None:
    """Report rows to the observer; ``failing``: verdicts that fail the call although their
    own cell passes (a refresh the ratchet refuses on an INCONCLUSIVE loss)."""
    observer = _OBSERVER.get()
    if observer is None:
        return
    for v in verdicts:
        row = v.row()
        if status:
            row["verdict"] = f"{status} ({v.verdict})"
        if any(v is f for f in failing):
            row["failed"] = "yes"
        observer.record(row if observer.verdict is None else observer.verdict(row, v))


def _config(verdicts: Sequence[CellVerdict]) -> str:
    c = verdicts[0].comparison
    text = f"{c.test}, alpha {fmt_num(c.alpha)}, margin {fmt_num(c.margin)}"
    if c.kind != "not_worse":
        return text + (", every cell must pass (no Holm needed)" if len(verdicts) > 1 else "")
    effects = sorted({fmt_num(v.comparison.min_effect) for v in verdicts})
    text += f", min_effect {'/'.join(effects)}"
    rows = sum(v.task == SUITE for v in verdicts)
    tested = sum(v.verdict != "IDENTICAL" for v in verdicts if v.task != SUITE)
    if rows:
        return text + (f", weighted Holm across the {tested} tested cells and {rows} suite "
                       f"row(s) (suite weight {DEFAULT_SUITE_WEIGHT:g})")
    return text + (f", Holm across the {tested} tested cells" if tested > 1 else "")

