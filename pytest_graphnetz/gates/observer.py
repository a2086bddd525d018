"""How the pytest plugin hears about gates: the :class:`GateObserver` a test body runs under
(session defaults, where summary rows go), and the helpers that record a gate call's rows,
announce its candidate report and fail it with one message."""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass
from typing import Any

from ..baselines import BaselineMissingError
from ..pairing import unpaired_cell
from ..report import BenchmarkReport
from ..verdicts.formatting import describe_values, fmt_mean_ci, metric_label, seed_list
from ..verdicts.values import CellVerdict, GateRefusal, WidthVerdict


@dataclass(frozen=True)
class GateObserver:
    """Session defaults for gates run inside a test, and where their summary rows go."""

    alpha: float
    strict: bool
    record: Callable[[dict[str, str]], None]
    min_effect: float | str | None = None   # "resolvable": from the calibration (issue 33)
    uses: Callable[[str], None] | None = None   # told each baseline file a gate reads
    # --graphnetz-report-dir: called with each gate's candidate report (fixed seeds: before it
    # is compared; adaptive: after, with the cells that took more seeds as ``further``
    # reports, see AdaptiveReport.decided); returns the paths it wrote.
    candidate: Callable[[BenchmarkReport, Sequence[BenchmarkReport]], Sequence[str]] | None = None
    # verdict(row, v) -> the row to record for verdict v (the plugin adds v's numbers).
    verdict: Callable[[dict[str, str], Any], dict[str, Any]] | None = None
    # The schedule every not-worse cell walks: False with --graphnetz-single-run (each run
    # judged alone at α); its first look, from the project's configured seeds.
    rerun_safe: bool = True
    first_look: int | None = None


_OBSERVER: ContextVar[GateObserver | None] = ContextVar("graphnetz_gate_observer", default=None)


@contextmanager
def observing(observer: GateObserver) -> Iterator[GateObserver]:
    """Within the block, gates default to ``observer``'s alpha/strict and report rows to it."""
    token = _OBSERVER.set(observer)
    try:
        yield observer
    finally:
        _OBSERVER.reset(token)


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

