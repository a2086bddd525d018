"""Where a session's gate calls go besides the terminal: one small interface for a tracker.

A :class:`GateCall` is one gate call of one test as the JSON verdict file holds it (its rows,
their numbers), with the candidate report that holds its seeds when the session saved it
(``--graphnetz-report-dir``, whose reports record the test's node id and the call's settings). A
:class:`Tracker` takes the calls and sends them somewhere (:mod:`.mlflow_export`: MLflow); it
never changes a verdict, and a tracker that is down or refuses costs one line
(:func:`export_session`). The plugin (``--graphnetz-mlflow``, at the session's end) and the
command (``graphnetz export mlflow``) build the calls the same way: :func:`gate_calls`.

Imported only when an export is asked for: neither the plugin nor the command loads it before.
"""

from __future__ import annotations

import hashlib
import json
import subprocess
import warnings
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol

if TYPE_CHECKING:
    from pytest_graphnetz.report import BenchmarkReport

# Which verdict heads a call: the first of these its rows hold (a failing row first of all).
VERDICT_ORDER = ("ERROR", "REFUSED", "MISSING BASELINE", "REGRESSED", "NOT EQUIVALENT",
                 "TOO WIDE", "INCONCLUSIVE", "NOT COMPARED", "NOT WORSE", "EQUIVALENT", "OK",
                 "BETTER", "IDENTICAL")
# The settings of a call that, when they change between two rows of a test, start a new call.
CALL_SETTINGS = ("kind", "test", "alpha", "margin", "min_effect")


@dataclass(frozen=True)
class GateCall:
    """One gate call of one test: ``rows`` as the JSON verdict file holds them (one per cell),
    ``index`` the call's place among the test's calls (1, 2, ...), ``reports`` the candidate
    reports that hold its cells' seeds (empty: none saved), ``commit`` the git commit (the
    session's, as its saved reports record it; else the exporting checkout's)."""

    test: str
    index: int
    rows: tuple[Mapping[str, Any], ...]
    reports: tuple[BenchmarkReport, ...] = ()
    commit: str | None = None

    @property
    def key(self) -> str:
        """What makes the call the same call when it is exported again: the test, its place,
        the commit and every row's numbers."""
        text = json.dumps([self.test, self.index, self.commit,
                           [[r.get("cell"), r.get("verdict"), r.get("stats")] for r in self.rows]],
                          sort_keys=True, default=str)
        return hashlib.sha256(text.encode()).hexdigest()[:32]

    @property
    def headline(self) -> str:
        """The call's verdict in one word: a failing row's, else the first of
        :data:`VERDICT_ORDER` among its rows."""
        verdicts = [str(r.get("verdict", "")).split(":")[0] for r in self.rows]
        failing = [v for r, v in zip(self.rows, verdicts, strict=True) if r.get("failed")]
        pool = failing or verdicts
        return min(pool, key=lambda v: next((k for k, name in enumerate(VERDICT_ORDER)
                                             if v.startswith(name)), len(VERDICT_ORDER)))

    def setting(self, name: str) -> Any:
        """A setting of the call (``alpha``, ``min_effect``, ``first_look``, ``single_run``):
        the saved report's record of the call, else its rows' numbers."""
        for report in self.reports:
            for call in report.protocol.get("gates") or []:
                if isinstance(call, Mapping) and call.get("node") == self.test \
                        and name in call:
                    return call[name]
        for row in self.rows:
            stats = row.get("stats") or {}
            if name in stats:
                return stats[name]
        return None

    @property
    def schedule(self) -> str:
        """The schedule the call was judged on, in words."""
        looks = [int(n) for r in self.rows
                 if isinstance(n := (r.get("stats") or {}).get("n_looks"), (int, float))]
        if self.setting("single_run"):
            return "judged alone at α (single run, not rerun-safe)"
        first = self.setting("first_look")
        text = f"rerun-safe looks, first look {first} seeds" if first else "rerun-safe looks"
        return text + (f", adaptive ({max(looks)} looks)" if looks else "")

    def markdown(self) -> str:
        """The call's rows as the session's Markdown table."""
        from pytest_graphnetz.plugin.summary import GateSummary

        rows = [{**r, **(r.get("display") or {}), "failed": "yes" if r.get("failed") else ""}
                for r in self.rows]
        return GateSummary(rows=rows).markdown()

    def report_of(self, cell: str, seeds: Sequence[int] = ()) -> BenchmarkReport | None:
        """The saved candidate report that holds ``cell`` (``task/model``) and most of
        ``seeds`` (an adaptive gate saves the cells that took more seeds apart), if any."""
        task, _, model = cell.partition("/")
        holding = [r for r in self.reports if task in r.tasks and model in r.models]
        return max(holding, key=lambda r: len(set(seeds) & set(r.seeds)), default=None)


@dataclass(frozen=True)
class Exported:
    """What an export did: runs created, and runs found there already (a re-export)."""

    created: int
    existing: int


class Tracker(Protocol):
    """Anything that takes a session's gate calls (``export``) and says where (``where``)."""

    where: str

    def export(self, calls: Sequence[GateCall], *, series: bool = True) -> Exported: ...


def gate_calls(verdicts: Mapping[str, Any], reports: Iterable[BenchmarkReport],
               commit: str | None = None) -> list[GateCall]:
    """The gate calls of a JSON verdict file's rows (in order; a new call starts at a new test,
    a change of the call's settings, or a cell the call has already), each with the saved
    reports of its test (matched by the test their recorded gate calls name)."""
    by_test: dict[str, list[BenchmarkReport]] = {}
    for report in reports:
        for call in report.protocol.get("gates") or []:
            if isinstance(call, Mapping) and isinstance(call.get("node"), str):
                tests = by_test.setdefault(call["node"], [])
                if not any(r is report for r in tests):
                    tests.append(report)
    calls: list[GateCall] = []
    current: list[Mapping[str, Any]] = []
    counts: dict[str, int] = {}

    def close() -> None:
        if current:
            test = str(current[0].get("test", ""))
            counts[test] = counts.get(test, 0) + 1
            saved = tuple(by_test.get(test, ()))
            # the commit the session recorded in its reports, else the one given
            recorded = [c.get("commit") for r in saved for c in r.protocol.get("gates") or []
                        if isinstance(c, Mapping) and c.get("node") == test and c.get("commit")]
            calls.append(GateCall(test=test, index=counts[test], rows=tuple(current),
                                  reports=saved, commit=recorded[0] if recorded else commit))
            current.clear()

    for row in verdicts.get("rows") or []:
        if current and (row.get("test") != current[0].get("test")
                        or _settings(row) != _settings(current[0])
                        or any(r.get("cell") == row.get("cell") for r in current)):
            close()
        current.append(row)
    close()
    return calls


def _settings(row: Mapping[str, Any]) -> tuple[Any, ...]:
    stats = row.get("stats") or {}
    return (row.get("gate"), *(stats.get(k) for k in CALL_SETTINGS))


def git_commit(where: Path) -> str | None:
    """The commit checked out at ``where`` (None: not a git checkout, or no git)."""
    try:
        out = subprocess.run(["git", "rev-parse", "HEAD"], cwd=where, capture_output=True,
                             text=True, timeout=10, check=False)
    except (OSError, subprocess.SubprocessError):
        return None
    return out.stdout.strip() or None if out.returncode == 0 else None


def export_session(verdicts: Mapping[str, Any], report_paths: Iterable[str | Path],
                   tracker: Tracker, *, root: Path, series: bool = True) -> str:
    """Export a session's gate calls (the plugin's ``--graphnetz-mlflow``): one line that says
    what was sent, or, when the tracker is down or refuses, what went wrong. It never raises:
    the verdicts stand whatever the tracker does."""
    from pytest_graphnetz.report import BenchmarkReport

    try:
        reports = [BenchmarkReport.from_json(p) for p in dict.fromkeys(map(str, report_paths))]
        calls = gate_calls(verdicts, reports, git_commit(root))
        with warnings.catch_warnings():
            # the tracker's own deprecations (SQLAlchemy's, under MLflow) are not the user's
            warnings.simplefilter("ignore", DeprecationWarning)
            done = tracker.export(calls, series=series)
    except Exception as exc:   # a tracker that is down, refuses, or is misconfigured
        from pytest_graphnetz.base.text import exception_line

        return (f"graphnetz: warning: the gates were not exported to {tracker.where} "
                f"({type(exc).__name__}: {exception_line(exc, 300)}); the verdicts stand")
    return (f"graphnetz: {len(calls)} gate call(s) exported to {tracker.where}: {done.created} "
            f"run(s) created, {done.existing} already there")


__all__ = ["Exported", "GateCall", "Tracker", "export_session", "gate_calls", "git_commit"]
