"""Where a gate call's rows go: the :class:`GateRecorder` of the test body it runs in (the
session's defaults, and the plugin's sinks for rows, saved candidate reports and baseline files
read), found with :func:`current_recorder`; outside pytest, a recorder with the library's
defaults and no sinks. A call ends here once: its refresh (:meth:`GateRecorder.refreshed`) or
its comparison (:class:`Compared`, :meth:`GateRecorder.compared`: the rows, then one failure
message headed by the gate, its baseline and settings)."""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass
from typing import Any

from pytest_graphnetz.base.text import FIRST_LINE_WIDTH, fmt_num
from pytest_graphnetz.gates.comparing.compare import NOT_RERUN_SAFE
from pytest_graphnetz.gates.comparing.pairing import unpaired_cell
from pytest_graphnetz.gates.comparing.schedule import Schedule
from pytest_graphnetz.gates.comparing.spec import GateSpec
from pytest_graphnetz.gates.comparing.suite_row import SUITE
from pytest_graphnetz.gates.refreshing.baselines import BaselineHandle
from pytest_graphnetz.gates.refreshing.ratchet import RefreshOutcome
from pytest_graphnetz.gates.verdicts.formatting import (
    describe_values,
    fmt_mean_ci,
    metric_label,
    seed_list,
)
from pytest_graphnetz.gates.verdicts.values import (
    BaselineMissingError,
    CellVerdict,
    GateRefusal,
    WidthVerdict,
)
from pytest_graphnetz.report import BenchmarkReport
from pytest_graphnetz.stats.suite import DEFAULT_SUITE_WEIGHT

Verdict = CellVerdict | WidthVerdict


@dataclass(frozen=True)
class Compared:
    """What a compared gate call hands to the recorder: its verdicts, the call's spec (its δ
    read), the baseline report paired with and how it is named, the cells it lacks, and the
    schedule of an adaptive run (None: fixed seeds)."""

    verdicts: list[CellVerdict]
    spec: GateSpec
    base: BenchmarkReport
    source: str
    lacking: list[tuple[str, str]]
    schedule: Schedule | None


@dataclass(frozen=True)
class GateRecorder:
    """The defaults of the gates run inside one test, and where their summary rows go.

    The fields are what the plugin sets from the session's options (outside pytest: these
    defaults, and no sinks); the methods are what a gate calls."""

    alpha: float = 0.05
    strict: bool = False
    # The session's δ as spelled: a number, None, or "resolvable" (each gate call parses it into
    # its GateSpec: gates/comparing/spec.py).
    min_effect: float | str | None = None
    # The schedule every not-worse cell walks: False with --graphnetz-single-run (each run
    # judged alone at α); its first look, from the project's configured seeds.
    rerun_safe: bool = True
    first_look: int | None = None
    # --graphnetz-accept-hardware: pair runs made on different kinds of hardware (noted).
    accept_hardware: bool = False
    # keep(row): a summary row (test, cell, verdict, ...); describe(row, v): the row to keep
    # for verdict v (the plugin adds v's numbers).
    keep: Callable[[dict[str, Any]], None] | None = None
    describe: Callable[[dict[str, str], Verdict], dict[str, Any]] | None = None
    # --graphnetz-report-dir: save(report, further) writes a gate's candidate report (fixed
    # seeds: before it is compared; adaptive: after, with the cells that took more seeds as
    # ``further`` reports, see AdaptiveSchedule.decided) and returns the paths it wrote.
    save: Callable[[BenchmarkReport, Sequence[BenchmarkReport]], Sequence[str]] | None = None
    use: Callable[[str], None] | None = None   # told each baseline file a gate reads by path

    @property
    def saves_reports(self) -> bool:
        return self.save is not None

    def announce(self, report: BenchmarkReport, *further: BenchmarkReport) -> Sequence[str]:
        """Hand the candidate to the plugin (kept for --graphnetz-report-dir); ``further``: an
        adaptive gate's cells that took more seeds than ``report`` holds. Returns the paths
        written (none outside pytest)."""
        if self.save is None or not isinstance(report, BenchmarkReport):
            return ()   # a gate given something else stops on it, with its own row
        return self.save(report, further)

    def used(self, path: str) -> None:
        """A gate read the baseline file ``path`` (the plugin's baseline-usage list)."""
        if self.use is not None:
            self.use(path)

    def record(self, verdicts: Sequence[Verdict], *, status: str | None = None,
               failing: Sequence[Verdict] = ()) -> None:
        """A row per verdict; ``status``: a refresh's (UPDATED / REFUSED), shown before the
        verdict; ``failing``: verdicts that fail the call although their own cell passes (a
        refresh the ratchet refuses on an INCONCLUSIVE loss)."""
        if self.keep is None:
            return
        for v in verdicts:
            row = v.row()
            if status:
                row["verdict"] = f"{status} ({v.verdict})"
            if any(v is f for f in failing):
                row["failed"] = "yes"
            self.keep(row if self.describe is None else self.describe(row, v))

    def written(self, report: BenchmarkReport, gate: str, cells: Sequence[tuple[str, str]],
                old: BenchmarkReport | None = None) -> None:
        """Rows for cells a refresh wrote without a paired ratchet verdict: new cells, or cells
        forced over a baseline ``old`` that could not be paired (shown against new, unpaired)."""
        if self.keep is None:
            return
        for task, model in cells:
            spec = report.metric(task)
            cell = describe_values(report.values(task, model), report, metric=spec.name)
            row = {"cell": f"{task}/{model}",
                   "metric": metric_label(spec.name, spec.higher_is_better),
                   "candidate": fmt_mean_ci(cell, short=True), "verdict": "WRITTEN",
                   "n": str(cell.n), "gate": gate, "baseline": "(new)"}
            if old is not None and task in old.tasks and model in old.models:
                before = unpaired_cell(report, old, task, model)
                row.update(baseline=fmt_mean_ci(before.baseline, short=True),
                           delta=before.delta(), verdict="WRITTEN (forced)",
                           note="replaced a baseline it could not be paired with; "
                                "Δ is unpaired (Welch), not a verdict")
            self.keep(row)

    def stopped(self, gate: str, report: object, baseline: object, exc: Exception) -> None:
        """Rows for a gate call that ended without verdicts: REFUSED, MISSING BASELINE or
        ERROR, each with its one-line reason, so that no gate call is missing from the
        summary. ``report``: what the gate was given (not a report when that was the error)."""
        if self.keep is None:
            return
        status, reason = _stop_reason(baseline, exc)
        if not isinstance(report, BenchmarkReport):
            self.keep({"cell": "?", "verdict": status, "gate": gate, "failed": "yes",
                       "note": reason})
            return
        concerned = getattr(exc, "cells", None)
        unpaired = {(u.task, u.model): u for u in getattr(exc, "unpaired", ())}
        for task in report.tasks:
            for model in report.models:
                mine = concerned is None or (task, model) in concerned
                row = _candidate_row(report, task, model, gate,
                                     verdict=status if mine else "NOT COMPARED",
                                     failed="yes" if mine else "",
                                     note=reason if mine
                                     else f"the gate stopped on another cell ({status})")
                if (task, model) in unpaired:
                    u = unpaired[(task, model)]
                    row.update(baseline=fmt_mean_ci(u.baseline, short=True), delta=u.delta(),
                               note=f"{reason}; {u.sides()}")
                self.keep(row)

    def lacking(self, gate: str, report: BenchmarkReport, cells: Sequence[tuple[str, str]],
                baseline: object) -> None:
        """MISSING BASELINE rows for ``cells``, which the baseline lacks while the call's other
        cells were compared: each fails, naming the command that writes only such cells."""
        if self.keep is None:
            return
        reason = _cells_missing_reason(baseline)
        for task, model in cells:
            self.keep(_candidate_row(report, task, model, gate, verdict="MISSING BASELINE",
                                     failed="yes", note=reason))

    def finish(self, name: str, verdicts: Sequence[Verdict], *, header: str,
               notes: Sequence[str] = (), lacking: str = "", mark: str = "") -> None:
        """Record ``verdicts``, then raise one error for the failed ones (its first line
        ``name: k of n cell(s) failed: CELL VERDICT, ...``, short enough for a terminal, the
        ``header`` on the next, then each message and ``notes``). ``lacking``: why cells that
        have no baseline fail the call (their rows are recorded by :meth:`lacking`); the
        compared cells' verdicts stand beside it, and when none of them failed the error is a
        :class:`BaselineMissingError`. ``mark``: what every output of the call must say
        ("judged alone at α: ..."), on the first line too, in place of the cells when both do
        not fit."""
        __tracebackhide__ = True
        self.record(verdicts)
        failed = [v for v in verdicts if v.failed]
        if failed or lacking:
            compared = "compared " if lacking else ""
            first = f"{name}: {len(failed)} of {len(verdicts)} {compared}cell(s) failed"
            which = ", ".join(f"{v.cell} {v.verdict}" for v in failed)
            if which and (len(first) + len(which) + len(mark) + (4 if mark else 2)
                          <= FIRST_LINE_WIDTH):
                first += f": {which}"
            if mark:
                first += f"; {mark}"
            error = AssertionError if failed else BaselineMissingError
            raise error(
                f"{first}\n{header[:1].upper()}{header[1:]}.\n\n"
                + "\n\n".join([*(v.message() for v in failed), *([lacking] if lacking else []),
                                *(f"note: {n}" for n in notes)])
            )


    def refreshed(self, outcome: RefreshOutcome, report: BenchmarkReport,
                  gate: str) -> list[CellVerdict]:
        """A refresh's rows: its not-worse comparisons against the baseline it replaces and the
        anchors (UPDATED, or REFUSED, which raises the ratchet's refusal), then the cells
        written without a paired verdict. Returns the ratchet's verdicts."""
        __tracebackhide__ = True
        status = "UPDATED" if outcome.written else "REFUSED"
        failing = () if outcome.written else outcome.refused
        self.record(outcome.previous, status=status, failing=failing)
        self.record(outcome.anchored, status=f"{status} vs anchor", failing=failing)
        if not outcome.written:
            raise AssertionError(outcome.refusal())
        judged = {(v.task, v.model) for v in outcome.previous}
        self.written(report, gate, [(t, m) for t in report.tasks for m in report.models
                                    if (t, m) not in judged], outcome.replaced)
        return [*outcome.previous, *outcome.anchored]

    def compared(self, compared: Compared, looks: Sequence[BenchmarkReport], baseline: object,
                 notes: Sequence[str]) -> None:
        """A compared call's rows and its failure (:meth:`finish`, headed by the gate, its
        baseline and settings), the rows of the cells without a baseline after them.
        ``looks``: the candidate's reports, the first look first."""
        __tracebackhide__ = True
        spec, verdicts = compared.spec, compared.verdicts
        # every output of a run judged alone says so: pytest's one-line summary too
        alone = ("" if spec.rerun_safe or compared.schedule is not None
                 else f"judged alone at α: {NOT_RERUN_SAFE}")
        try:
            self.finish(f"assert_{spec.gate}", verdicts,
                        header=_header(verdicts, spec, compared.source, compared.schedule),
                        notes=notes, mark=alone,
                        lacking=_lacking_message(compared.lacking, compared.source, baseline))
        finally:   # the rows of the cells without a baseline follow the compared cells' rows
            self.lacking(spec.gate, looks[0], compared.lacking, baseline)


_RECORDER: ContextVar[GateRecorder | None] = ContextVar("graphnetz_gate_recorder",
                                                        default=None)


def current_recorder() -> GateRecorder:
    """The recorder of the test body running now (:func:`recording`), else the library's
    defaults with no sinks (outside pytest)."""
    return _RECORDER.get() or GateRecorder()


@contextmanager
def recording(recorder: GateRecorder) -> Iterator[GateRecorder]:
    """Within the block, gates take ``recorder``'s defaults and report their rows to it."""
    token = _RECORDER.set(recorder)
    try:
        yield recorder
    finally:
        _RECORDER.reset(token)


def saved_note(paths: Sequence[str], reports: Sequence[BenchmarkReport]) -> str:
    """Which saved candidate report holds which cells, at which seeds (an adaptive gate whose
    cells stopped at different seeds is saved as several dense reports)."""
    first, *further = zip(paths, reports, strict=True)
    parts = [f"{first[0]} holds every cell at seeds {seed_list(first[1].seeds)}"]
    parts += [f"{path} holds {', '.join(f'{t}/{m}' for t in r.tasks for m in r.models)} at "
              f"seeds {seed_list(r.seeds)}" for path, r in further]
    return ("the candidate reports saved (--graphnetz-report-dir) hold each cell at the seeds "
            "it was decided on: " + "; ".join(parts))


def _lacking_message(cells: Sequence[tuple[str, str]], source: str, baseline: object) -> str:
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


def _header(verdicts: Sequence[CellVerdict], spec: GateSpec, source: str,
            schedule: Schedule | None) -> str:
    """The failure message's header: the gate, its baseline and settings; for an adaptive
    report, what the schedule saved."""
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


def _stop_reason(baseline: object, exc: Exception) -> tuple[str, str]:
    """The status and one-line reason of a gate call stopped by ``exc``."""
    if isinstance(exc, BaselineMissingError):
        if exc.cells is not None:
            return "MISSING BASELINE", _cells_missing_reason(baseline)
        command = baseline.update_command if isinstance(baseline, BaselineHandle) else None
        reason = "no baseline file" if command else _first_line(exc, 100)
        if command:
            reason += f"; create it: `{command}`"
        return "MISSING BASELINE", reason
    if isinstance(exc, GateRefusal):
        return "REFUSED", exc.reason
    return "ERROR", f"{type(exc).__name__}: {_first_line(exc)}"


def _cells_missing_reason(baseline: object) -> str:
    """Why a cell the baseline file lacks fails, and the command that writes only such cells
    (a refresh of the whole test would rewrite the others too)."""
    command = baseline.add_command if isinstance(baseline, BaselineHandle) else None
    return "no baseline for this cell" + (
        f"; create only the missing cells: `{command}`" if command else "")


def _candidate_row(report: BenchmarkReport, task: str, model: str, gate: str,
                   **fields: str) -> dict[str, Any]:
    """A row for a cell judged against nothing: its metric and the candidate's numbers."""
    spec = report.metric(task)
    values = describe_values(report.values(task, model), report, metric=spec.name)
    return {"cell": f"{task}/{model}", "metric": metric_label(spec.name, spec.higher_is_better),
            "candidate": fmt_mean_ci(values, short=True), "gate": gate, **fields}


def _first_line(exc: BaseException, limit: int = 160) -> str:
    line = str(exc).strip().split("\n", 1)[0]
    return line if len(line) <= limit else line[:limit - 1] + "…"
