"""The end of a session: the files the user asked for written, then what the terminal shows.

``pytest_sessionfinish`` (the controller's: xdist workers send it their reports, and run
after :class:`~.usage.BaselineUsage` has found the unused baseline cells) calls :func:`finish`,
which builds the session's :class:`~pytest_graphnetz.plugin.summary.GateSummary` once, writes the
Markdown summary (``--graphnetz-summary``, ``$GITHUB_STEP_SUMMARY``), the pull-request comment
(``--graphnetz-comment``) and the JSON verdict file (``--graphnetz-json``), and returns the
terminal's sections: the gate table, a line per file written, the unused baselines, the
calibration. ``pytest_terminal_summary`` (called after every ``pytest_sessionfinish``) only
writes them, as syrupy's report yields lines that its hook writes.

A session no graphnetz test, gate or triple took part in, with no file named, builds no
summary: a run of plain tests never loads it (nor numpy), nor this module
(:attr:`~.session.GraphnetzSession.has_closing`).

Standard library and pytest only at import: pytest loads the plugin on every run.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from pytest_graphnetz.plugin.session import GraphnetzSession
    from pytest_graphnetz.plugin.summary import GateSummary

# A terminal section: a title written as a separator line (None: none), and its lines.
Section = tuple[str | None, list[str]]


def finish(session: GraphnetzSession, exitstatus: int) -> list[Section]:
    """Write the session's output files and return the sections the terminal summary shows."""
    s = session.settings
    sections: list[Section] = []
    if session.builds_summary:
        summary = session.summary(exitstatus)
        lines = list(summary.lines())
        if lines:
            sections.append(("graphnetz gates", lines))
        written = write_outputs(session, summary)
        if s.mlflow is not None:
            written.append(export_mlflow(session, summary))
    else:
        written = []
    if session.usage.unused_cells and s.fail_unused:
        written.insert(0, "graphnetz: --graphnetz-fail-unused: the run fails on the unused "
                          "baseline cells above")
    sections.append((None, written + session.usage.unused_lines))
    calibration = calibration_lines(session)
    if calibration:
        sections.append(("graphnetz calibration", calibration))
    if session.reports and not s.report_dir_temporary:
        sections.append((None, [
            f"graphnetz: {len(session.reports)} candidate report(s) saved under "
            f"{session.shown(s.report_dir)}"]))
    return [(title, lines) for title, lines in sections if lines]


def write_outputs(session: GraphnetzSession, summary: GateSummary) -> list[str]:
    """Write the Markdown summary (``--graphnetz-summary`` and ``$GITHUB_STEP_SUMMARY``),
    the pull-request comment (``--graphnetz-comment``) and the JSON verdict file
    (``--graphnetz-json``); a line for each. A file that cannot be written is a line too:
    it must not turn the verdicts into a traceback or change the exit status.

    A file the user named is written whatever the run held (every gated test skipped: a
    green, empty page, not the absence
    :meth:`~.session.GraphnetzSession.remove_previous_outputs` left); the step summary only
    gets a table when a gate or a triple ran, or the user named a file."""
    s = session.settings
    if not (summary.rows or session.trained or session.cached or s.summary or s.comment
            or s.json):
        return []
    # Imported only now: report imports numpy (~0.3 s), which a session without gates or
    # triples must not pay for.
    from pytest_graphnetz.report.files import write_text_atomic
    from pytest_graphnetz.report.session_files import write_summaries

    lines: list[str] = []
    text = summary.markdown()

    def verdicts_json() -> str:
        return json.dumps(summary.to_json(), indent=1) + "\n"

    outputs: tuple[tuple[Path | None, str, Callable[[], str]], ...] = (
        (s.comment, "comment", summary.comment), (s.json, "json", verdicts_json))
    for path, option, content in outputs:
        if not path:
            continue
        try:
            write_text_atomic(path, content())
        except OSError as exc:
            lines.append(f"graphnetz: the {option} file was not written to "
                         f"{session.shown(path)} ({type(exc).__name__}: {exc.strerror or exc})")
        else:
            lines.append(f"graphnetz: {option} written to {session.shown(path)}")
    written, failed = write_summaries(text, s.summary, session.step_summary, show=session.shown)
    lines += [f"graphnetz: Markdown summary written to {session.shown(path)}" for path in written]
    return lines + failed


def export_mlflow(session: GraphnetzSession, summary: GateSummary) -> str:
    """``--graphnetz-mlflow``: the session's gate calls sent to MLflow; one line, a warning when
    the store is down or refuses (the verdicts and the exit status stay as they are)."""
    from pytest_graphnetz.plugin.tracker import export_session

    s = session.settings
    try:
        from pytest_graphnetz.plugin.mlflow_export import MlflowTracker

        tracker = MlflowTracker(None if s.mlflow == "default" else s.mlflow,
                                option="--graphnetz-mlflow")
    except Exception as exc:   # the package missing, a URI MLflow does not accept
        return f"graphnetz: warning: nothing exported to MLflow ({exc})"
    try:
        return export_session(summary.to_json(), session.reports, tracker,
                              root=session.config.rootpath, series=s.mlflow_series)
    finally:
        if s.report_dir_temporary and s.report_dir is not None:
            import shutil

            # this process's folder, and under xdist each worker's (its reports' paths name it)
            prefix = s.report_dir.name.rsplit("-", 1)[0]
            folders = {s.report_dir} | {parent for p in session.reports
                                        for parent in Path(p).parents
                                        if parent.name.startswith(prefix)}
            for folder in folders:
                shutil.rmtree(folder, ignore_errors=True)


def calibration_lines(session: GraphnetzSession) -> list[str]:
    """``--graphnetz-calibrate``: the table of what δ each cell's seeds resolve, per training
    budget, and the files written (empty: nothing was calibrated)."""
    rows = session.calibration_rows
    if not rows:
        return []
    from pytest_graphnetz.gates.calibration.terminal import terminal_lines

    return terminal_lines(rows)


__all__ = ["Section", "calibration_lines", "finish", "write_outputs"]
