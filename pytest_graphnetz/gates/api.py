"""The gates a test calls: ``assert_not_worse``, ``assert_better``, ``assert_equivalent`` and
``assert_ci_width``. Each builds its call's :class:`~.comparing.spec.GateSpec` (the session's
defaults from its recorder, :mod:`.recorder`), splits an adaptive report from its schedule
(:mod:`.comparing.schedule`), then chooses: refresh the baseline under
``--graphnetz-update-baselines`` (:mod:`.refreshing.update`, the ratchet), or load it and
compare (:func:`~.comparing.compare.compare_gate`, the one entry point of comparing); and hands
the verdicts to the recorder, which fails with one message."""

from __future__ import annotations

import math
import os
from collections.abc import Sequence
from dataclasses import dataclass, replace
from pathlib import Path

from pytest_graphnetz import stats
from pytest_graphnetz.base.text import fmt_num
from pytest_graphnetz.gates.comparing.compare import (
    NOT_RERUN_SAFE,
    Against,
    compare_gate,
    paired_test,
)
from pytest_graphnetz.gates.comparing.pairing import (
    check_cells,
    missing_cells,
    refuse_other_hardware,
)
from pytest_graphnetz.gates.comparing.schedule import Schedule, split_schedule
from pytest_graphnetz.gates.comparing.spec import GateSpec
from pytest_graphnetz.gates.comparing.suite_row import SUITE
from pytest_graphnetz.gates.recorder import GateRecorder, current_recorder, saved_note
from pytest_graphnetz.gates.refreshing.baselines import BaselineHandle, read_baseline
from pytest_graphnetz.gates.refreshing.update import (
    add_missing_cells,
    refreshes,
    update_baseline,
)
from pytest_graphnetz.gates.verdicts.formatting import describe_values
from pytest_graphnetz.gates.verdicts.values import (
    BaselineError,
    CellVerdict,
    GateRefusal,
    WidthVerdict,
)
from pytest_graphnetz.report import BenchmarkReport
from pytest_graphnetz.stats.boundaries import LookSchedule
from pytest_graphnetz.stats.planning import seeds_for_width
from pytest_graphnetz.stats.suite import DEFAULT_SUITE_WEIGHT

BaselineLike = BenchmarkReport | BaselineHandle | str | os.PathLike

def assert_not_worse(report: BenchmarkReport, baseline: BaselineLike, *, test: str = "paired",
                     margin: float = 0.0, min_effect: float | str | None = None,
                     alpha: float | None = None, strict: bool | None = None,
                     rng: stats.RngLike = None, suite: bool = False,
                     suite_min_effect: float | None = None,
                     rerun_safe: bool | None = None,
                     first_look: int | None = None) -> list[CellVerdict]:
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
    −margin and the row's Note says so); ``"resolvable"``: margin + what the paired seeds
    resolve in every cell of the call, read from the calibration beside the baseline handle
    (``graphnetz calibrate``; refused without one), stated in each row's Note.
    ``alpha`` / ``strict`` default to 0.05 / False, or the session's options in pytest.

    ``suite``: per model, one more row, ``suite/<model>``, for the per-seed mean paired
    difference across the call's tasks of one metric (a diffuse drop no single cell shows),
    decided like a cell with δ ``suite_min_effect`` (default: the cells' δ), its REGRESSED in
    one weighted Holm family with the cells (:func:`~pytest_graphnetz.stats.suite.suite_family`,
    suite weight 0.5; docs/guarantees.md). Tasks of another metric, and k-fold tasks, are left
    out of it (a note says so). An adaptive report is then judged at its MAX seeds: the row's
    family has one look.
    ``rerun_safe`` (default: True unless the session has ``--graphnetz-single-run``): each
    cell walks the schedule of looks at the first look's seeds (the session's configured seed
    count; 10 outside pytest) and its doublings, on the prefixes of the seeds it pairs, and
    reports the first crossing, so a rerun with more seeds (the advice after INCONCLUSIVE)
    keeps every error rate however often it is taken (docs/guarantees.md). Paired t cells
    without folds, in calls without a suite row. Every look the seeds hold is read: a
    REGRESSED crossing at any of them fails the cell. Only the canonical seeds decide: paired
    seeds that are not ``0..n−1``, or fewer than the first look, are refused
    (:class:`GateRefusal`). False: each run is judged alone at ``alpha`` on whatever seeds it
    has, and every output says "judged alone at α: not rerun-safe" (for a team that never
    reruns). ``first_look``: the schedule's first look in seeds
    (default: the session's, from the project's configured ``graphnetz_seeds``; 10 outside
    pytest); keep it fixed across runs, or a rerun is not a later look of the same schedule.
    Returns one :class:`CellVerdict` per candidate cell, then one per suite row.
    """
    __tracebackhide__ = True
    recorder = current_recorder()
    spec = GateSpec.asked("not_worse", recorder, test=test, margin=margin,
                          min_effect=min_effect, alpha=alpha, strict=strict, rng=rng,
                          suite=suite, suite_min_effect=suite_min_effect,
                          rerun_safe=rerun_safe, first_look=first_look)
    return _comparison_gate(recorder, report, baseline, spec)


def assert_better(report: BenchmarkReport, baseline: BaselineLike, *, test: str = "paired",
                  margin: float = 0.0, alpha: float | None = None, strict: bool | None = None,
                  rng: stats.RngLike = None, rerun_safe: bool | None = None,
                  first_look: int | None = None) -> list[CellVerdict]:
    """Pass only on paired evidence that every cell improved on ``baseline`` by over ``margin``.

    Each cell is tested at ``alpha``, without Holm: the gate passes only when every cell passes
    (an intersection-union test, whose level is ``alpha`` as it stands). As for
    :func:`assert_not_worse`, only the canonical seeds ``0..n−1`` with ``n`` at least
    ``first_look`` are judged unless ``rerun_safe`` is False."""
    __tracebackhide__ = True
    recorder = current_recorder()
    spec = GateSpec.asked("better", recorder, test=test, margin=margin, alpha=alpha,
                          strict=strict, rng=rng, rerun_safe=rerun_safe, first_look=first_look)
    return _comparison_gate(recorder, report, baseline, spec)


def assert_equivalent(report: BenchmarkReport, baseline: BaselineLike, *, margin: float,
                      test: str = "paired", alpha: float | None = None,
                      strict: bool | None = None, rng: stats.RngLike = None,
                      rerun_safe: bool | None = None,
                      first_look: int | None = None) -> list[CellVerdict]:
    """Pass only when every cell's paired mean difference lies within ±``margin`` (TOST).

    Like :func:`assert_better`, an intersection-union test: every cell at ``alpha``, no Holm,
    on the canonical seeds unless ``rerun_safe`` is False."""
    __tracebackhide__ = True
    if not margin > 0:
        raise ValueError(f"assert_equivalent needs `margin` > 0 (the equivalence bound), "
                         f"got {margin!r}")
    recorder = current_recorder()
    spec = GateSpec.asked("equivalent", recorder, test=test, margin=margin, alpha=alpha,
                          strict=strict, rng=rng, rerun_safe=rerun_safe, first_look=first_look)
    return _comparison_gate(recorder, report, baseline, spec)


def assert_ci_width(report: BenchmarkReport, max_width: float, *,
                    method: str | None = None) -> list[WidthVerdict]:
    """Fail when a cell's interval (``method``, default the report's) is wider than ``max_width``.

    The message says how many seeds would bring each wide interval under ``max_width``.
    Returns one :class:`WidthVerdict` per cell. An adaptive report (``--graphnetz-seeds=MIN..MAX``)
    is measured at all MAX seeds, as the other non-sequential gates are (only missing ones train).
    """
    __tracebackhide__ = True
    recorder = current_recorder()
    report, schedule = split_schedule(report)
    if schedule is not None:
        report = schedule.complete(report)
    recorder.announce(report)
    try:
        if not max_width > 0:
            raise ValueError(f"`max_width` must be > 0, got {max_width!r}")
        verdicts = [_width_verdict(report, task, model, max_width, method)
                    for task in report.tasks for model in report.models]
    except Exception as exc:
        recorder.stopped("ci_width", report, None, exc)
        raise
    recorder.finish("assert_ci_width", verdicts,
                    header=f"interval wider than {fmt_num(max_width)}")
    return verdicts


# -- the work --------------------------------------------------------------------------------------


def _width_verdict(report: BenchmarkReport, task: str, model: str, max_width: float,
                   method: str | None) -> WidthVerdict:
    spec = report.metric(task)
    cell = describe_values(report.values(task, model), report, method=method)
    width = float(cell.ci.high - cell.ci.low)
    failed = not width <= max_width   # a NaN width (n < 2) fails too
    needed = None
    if failed and math.isfinite(cell.std) and cell.std > 0:
        needed = seeds_for_width(cell.std, max_width,
                                       confidence_level=report.confidence_level)
    return WidthVerdict(task, model, spec.name, spec.higher_is_better, cell, width,
                        float(max_width), needed, failed)


def _comparison_gate(recorder: GateRecorder, given: BenchmarkReport, baseline: BaselineLike,
                     spec: GateSpec) -> list[CellVerdict]:
    """One comparison gate call: refresh or compare, then record. What fails, and how, is
    the recorder's (:meth:`~.recorder.GateRecorder.finish`) or the refusal's."""
    # Hidden from pytest's traceback (as are the helpers below): a failing gate shows the test's
    # own line and the verdict message, not the plugin's frames and their locals.
    __tracebackhide__ = True
    # RESOLVABLE: δ = what the seeds resolve, by the calibration beside the baseline
    resolvable = spec.resolvable
    spec = spec.with_delta(spec.delta)
    refreshing = refreshes(baseline)
    report, schedule = split_schedule(given)
    # A schedule's candidate is saved once the seeds it is judged on are trained (below), from
    # this gate's extensions on.
    since = 0 if schedule is None else len(schedule.extensions)
    if schedule is None:
        recorder.announce(report)
    saved: Sequence[str] = ()
    decided: Sequence[BenchmarkReport] = ()
    try:
        spec = spec.replace(test=paired_test(spec.test))
        if schedule is not None and (spec.gate != "not_worse" or spec.suite or refreshing):
            # Only the not-worse gate is sequential; the others, refreshes and a suite row
            # (its weighted family has one look) use MAX seeds.
            report, schedule = schedule.complete(report), None
            recorder.announce(report)
        if refreshing and isinstance(baseline, BaselineHandle):
            return _refresh(recorder, report, baseline, spec)
        compared = _compare(recorder, report, schedule, baseline, spec, resolvable)
        if compared is None:
            return []   # every cell was new: written, and nothing left to compare
    except AssertionError:
        raise  # a refused refresh: its rows are recorded already
    except (GateRefusal, BaselineError) as exc:
        recorder.stopped(spec.gate, report, baseline, exc)
        # The message says all there is; the frames inside the baseline store add nothing.
        raise exc.with_traceback(None) from None
    except Exception as exc:
        recorder.stopped(spec.gate, report, baseline, exc)
        raise
    finally:
        # The sequential gate, decided or stopped: its cells at the seeds they were judged on.
        if schedule is not None and recorder.saves_reports:
            decided = schedule.decided(report, since)
            saved = _save(recorder, decided)
    notes = (saved_note(saved, decided),) if len(saved) > 1 else ()
    looks = [report] if schedule is None else [report, *schedule.extensions]
    return _record(recorder, compared, looks, baseline, resolvable, notes)


@dataclass(frozen=True)
class _Compared:
    """What a compared gate call hands to the recorder: its verdicts and the failure message's
    header, the baseline report paired with and how it is named, the cells it lacks, and the
    call's spec (its δ read)."""

    verdicts: list[CellVerdict]
    header: str
    base: BenchmarkReport
    source: str
    lacking: list[tuple[str, str]]
    spec: GateSpec
    adaptive: bool


def _compare(recorder: GateRecorder, report: BenchmarkReport, schedule: Schedule | None,
             baseline: BaselineLike, spec: GateSpec, resolvable: bool) -> _Compared | None:
    """Load the baseline, refuse other hardware, write or set aside the cells it lacks, read
    δ from the calibration when asked, and compare (:func:`compare_gate`). None: every cell
    was new and was written under ``--graphnetz-add-missing``."""
    __tracebackhide__ = True
    source, base, bound = _load(recorder, baseline, report)
    refuse_other_hardware(report, base, source, accept=recorder.accept_hardware)
    # Cells the baseline lacks (a new model or task) fail alone, or are written under
    # --graphnetz-add-missing; every cell the baseline has is gated all the same.
    lacking = missing_cells(report, base)
    if lacking and isinstance(baseline, BaselineHandle) and baseline.add_missing:
        # the cells added keep the schedule the file binds
        for part in add_missing_cells(replace(baseline, schedule=bound), report, base, spec,
                                      schedule):
            recorder.written(part, spec.gate, [(t, m) for t in part.tasks for m in part.models])
        if len(lacking) == len(report.tasks) * len(report.models):
            return None
        gated, lacking = _present(report, base), []
    else:
        gated = _present(report, base) if lacking else report
    command = baseline.update_command if isinstance(baseline, BaselineHandle) else None
    if resolvable:
        seeds = report.seeds if schedule is None else schedule.planned_seeds
        spec = spec.with_delta(_resolvable_min_effect(gated, seeds, base, baseline,
                                                      spec.margin))
    verdicts = compare_gate(gated, base, spec, Against(source, command, bound, canonical=True),
                            schedule)
    return _Compared(verdicts, _header(verdicts, spec, source, schedule), base, source, lacking,
                     spec, schedule is not None)


def _save(recorder: GateRecorder, decided: Sequence[BenchmarkReport]) -> Sequence[str]:
    """Save the sequential gate's candidate reports (:meth:`~.recorder.GateRecorder.announce`).
    A failed write warns: it must not hide the verdicts (or the error) of the gate itself."""
    try:
        return recorder.announce(*decided)
    except OSError as exc:
        import warnings

        warnings.warn(f"graphnetz: the candidate report was not saved: {exc}", stacklevel=3)
        return ()


def _record(recorder: GateRecorder, compared: _Compared, looks: Sequence[BenchmarkReport],
            baseline: BaselineLike, resolvable: bool, notes: Sequence[str]) -> list[CellVerdict]:
    """Mark suspect gains and δ finer than the seeds resolve, then hand the verdicts to the
    recorder (which raises when the call fails), the rows of the cells without a baseline
    after them. ``looks``: the candidate's reports, the first look first."""
    __tracebackhide__ = True
    from pytest_graphnetz.gates.verdicts.leak import (
        mark_suspects,  # a BETTER not matched on validation: suspect
    )

    verdicts = mark_suspects(compared.verdicts, looks, compared.base)
    from pytest_graphnetz.gates.calibration.annotation import (
        annotate_verdicts,  # δ finer than the seeds resolve: a note
    )

    verdicts = annotate_verdicts(verdicts, baseline, resolvable=resolvable)
    gate = compared.spec.gate
    # every output of a run judged alone says so: pytest's one-line summary too
    alone = ("" if compared.spec.rerun_safe or compared.adaptive
             else f"judged alone at α: {NOT_RERUN_SAFE}")
    try:
        recorder.finish(f"assert_{gate}", verdicts, header=compared.header, notes=notes,
                        mark=alone,
                        lacking=_lacking_message(compared.lacking, compared.source, baseline))
    finally:   # the rows of the cells without a baseline follow the compared cells' rows
        recorder.lacking(gate, looks[0], compared.lacking, baseline)
    return verdicts


def _present(report: BenchmarkReport, base: BenchmarkReport) -> BenchmarkReport:
    """The cells of ``report`` that ``base`` has (a task × model grid, as ``base`` is one);
    none at all: the refusal that names the missing cells."""
    tasks = [t for t in report.tasks if t in base.tasks]
    models = [m for m in report.models if m in base.models]
    if not (tasks and models):
        check_cells(report, base, "the baseline")   # raises BaselineMissingError
    return report.subset(tasks=tasks, models=models)


def _lacking_message(cells: Sequence[tuple[str, str]], source: str,
                     baseline: BaselineLike) -> str:
    """Why the call fails on cells its baseline lacks, and how to write only those."""
    if not cells:
        return ""
    command = baseline.add_command if isinstance(baseline, BaselineHandle) else None
    how = (f"`{command}` writes only those cells" if command else
           "a gate's test run with `pytest NODEID --graphnetz-add-missing` writes only those "
           "cells")
    return (f"MISSING BASELINE: {source} has no baseline for "
            f"{', '.join(f'{t}/{m}' for t, m in cells)} (a new model or task); every other "
            f"cell was compared above. {how}, leaving every other cell's baseline as it is")


def _resolvable_min_effect(report: BenchmarkReport, seeds: Sequence[int], base: BenchmarkReport,
                           baseline: BaselineLike, margin: float) -> float:
    """δ for ``min_effect="resolvable"``: what the paired seeds (of ``seeds``, those the
    candidate runs) resolve in every cell, by the calibration beside the baseline (a refusal
    naming the file when there is none)."""
    from pytest_graphnetz.gates.calibration.annotation import resolvable_gate_min_effect
    from pytest_graphnetz.gates.calibration.resolution import CalibrationError

    cells = [(t, m) for t in report.tasks for m in report.models]
    try:
        return resolvable_gate_min_effect(baseline, cells, len(set(seeds) & set(base.seeds)),
                                          margin=margin)
    except CalibrationError as exc:
        raise GateRefusal(str(exc), reason=str(exc)) from None


def _refresh(recorder: GateRecorder, report: BenchmarkReport, handle: BaselineHandle,
             spec: GateSpec) -> list[CellVerdict]:
    """``--graphnetz-update-baselines``: :func:`~.refreshing.update.update_baseline` writes
    the candidate unless the ratchet refuses; here its not-worse comparisons (the call's test,
    margin, δ and alpha) are reported. Returns the ratchet's verdicts."""
    __tracebackhide__ = True
    outcome = update_baseline(handle, report, spec)
    status = "UPDATED" if outcome.written else "REFUSED"
    failing = () if outcome.written else outcome.refused
    recorder.record(outcome.previous, status=status, failing=failing)
    recorder.record(outcome.anchored, status=f"{status} vs anchor", failing=failing)
    if not outcome.written:
        raise AssertionError(outcome.refusal())
    judged = {(v.task, v.model) for v in outcome.previous}
    recorder.written(report, spec.gate, [(t, m) for t in report.tasks for m in report.models
                                    if (t, m) not in judged], outcome.replaced)
    return [*outcome.previous, *outcome.anchored]


def _header(verdicts: Sequence[CellVerdict], spec: GateSpec, source: str,
            schedule: Schedule | None) -> str:
    """The first line of the failure message: the gate, its baseline and settings; for an
    adaptive report, what the schedule saved."""
    if schedule is None:
        header = f"{_TITLE[spec.gate]} against {source} ({_config(verdicts, alpha=spec.alpha)})"
        return header + ("" if spec.rerun_safe else f"; judged alone at α: {NOT_RERUN_SAFE}")
    from pytest_graphnetz.base.text import seed_trainings

    stops = [v.stop for v in verdicts if v.stop is not None]   # every adaptive cell's
    used = sum(stop.trained for stop in stops)
    pairable = sum(stop.max_seeds for stop in stops)
    return (f"{_TITLE['not_worse']} against {source} ({_config(verdicts)}; adaptive seeds "
            f"{schedule.seeds_option}: {seed_trainings(used)}, {pairable - used} saved against "
            f"the {pairable} the baseline could pair)")


def _load(recorder: GateRecorder, baseline: BaselineLike, candidate: BenchmarkReport
          ) -> tuple[str, BenchmarkReport, LookSchedule | None]:
    """What the gate says the baseline is, the report it pairs with, and the schedule the
    baseline binds (a file's; None for a report held in memory, which stores none)."""
    __tracebackhide__ = True
    if isinstance(baseline, BenchmarkReport):
        return "the baseline report", baseline, None
    if isinstance(baseline, BaselineHandle):
        # relative to the rootdir in pytest; a cell's replicate means where it has them
        stored = baseline.read()
        base, note = stored.paired_with(candidate)
        return baseline.shown + note, base, stored.schedule
    if isinstance(baseline, (str, os.PathLike)):
        recorder.used(str(Path(baseline).resolve()))
        stored = read_baseline(Path(baseline))
        base, note = stored.paired_with(candidate)
        return str(baseline) + note, base, stored.schedule
    raise TypeError(f"`baseline` must be a BenchmarkReport, a path or a baseline handle, "
                    f"got {type(baseline).__name__}")


def _config(verdicts: Sequence[CellVerdict], alpha: float | None = None) -> str:
    c = verdicts[0].comparison
    ev = c.evidence
    alpha = c.decision.level if alpha is None else alpha
    text = f"{ev.test}, alpha {fmt_num(alpha)}, margin {fmt_num(c.settings.margin)}"
    if ev.kind != "not_worse":
        return text + (", every cell must pass (no Holm needed)" if len(verdicts) > 1 else "")
    effects = sorted({fmt_num(v.comparison.settings.min_effect) for v in verdicts})
    text += f", min_effect {'/'.join(effects)}"
    rows = sum(v.task == SUITE for v in verdicts)
    tested = sum(v.verdict != "IDENTICAL" for v in verdicts if v.task != SUITE)
    looks = sorted({v.look.looks for v in verdicts if v.look is not None and v.look.on_schedule})
    if looks:
        shown = "/".join("→".join(map(str, x)) + "→…" for x in looks)
        text += f", looks {shown} (docs/guarantees.md)"
    if rows:
        return text + (f", weighted Holm across the {tested} tested cells and {rows} suite "
                       f"row(s) (suite weight {DEFAULT_SUITE_WEIGHT:g})")
    return text + (f", Holm across the {tested} tested cells" if tested > 1 else "")



_TITLE = {"not_worse": "paired regression gate", "better": "paired improvement gate",
          "equivalent": "paired equivalence gate (TOST)"}
