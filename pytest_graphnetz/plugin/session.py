"""The session object: where the hooks' work lives.

:class:`GraphnetzSession` (one per pytest session: ``pytest_graphnetz.plugin.session_of``) runs the
benchmarks the fixtures ask for, with their live progress; hands out baseline handles; gives
each test the recorder its gates report to (rows, saved candidate reports); gathers every row,
failure and triple count from the test reports (on the xdist controller: the workers'); and
gives them as a :class:`~pytest_graphnetz.plugin.summary.GateSummary`, which renders them (written
to
the files the user asked for and the terminal by :mod:`.closing`). Which baselines a run used
is :mod:`.usage`'s job.

Standard library and pytest only at import: the runner, the gates and the statistics (torch,
PyG, scipy) are imported inside the methods that use them.
"""

from __future__ import annotations

import functools
import json
import os
import shlex
import threading
import time
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest

from pytest_graphnetz.plugin.declared import is_graphnetz_test
from pytest_graphnetz.plugin.keys import (
    BASELINE_FILE,
    CALIBRATION_PROPERTY,
    GATE_PROPERTY,
    GRAPHNETZ_TEST,
    REPORT_PROPERTY,
    STEP_SUMMARY_ENV,
    TRIPLES_PROPERTY,
    USES_PROPERTY,
)
from pytest_graphnetz.plugin.settings import Settings
from pytest_graphnetz.plugin.usage import BaselineUsage, baseline_name

if TYPE_CHECKING:
    from pytest_graphnetz.gates.recorder import GateRecorder
    from pytest_graphnetz.gates.refreshing.baselines import BaselineHandle
    from pytest_graphnetz.gates.verdicts.values import CellVerdict, WidthVerdict
    from pytest_graphnetz.plugin.summary import GateSummary
    from pytest_graphnetz.report import BenchmarkReport
    from pytest_graphnetz.runner.command.run import CommandExecutor


class Calibrating:
    """One test's calibrations (``--graphnetz-calibrate``) and the baselines it asked for (a
    plain class: a dataclass's generated methods would cost every pytest run to build)."""

    def __init__(self) -> None:
        self.calibrations: list[Any] = []
        self.baselines: list[Path] = []


CALIBRATION_KEY = pytest.StashKey[Calibrating]()


class GraphnetzSession:
    """Runs benchmarks for fixtures, hands baselines out, and gathers every gate's row."""

    def __init__(self, config: pytest.Config, settings: Settings, usage: BaselineUsage) -> None:
        self.config = config
        self.settings = settings
        self.usage = usage
        self.rows: list[dict[str, Any]] = []
        self.failures: dict[str, str] = {}   # nodeid -> what failed it (the crash message)
        self.reports: list[str] = []         # candidate reports saved (--graphnetz-report-dir)
        self.trained = 0
        self.cached = 0
        self.checked = 0         # cache hits retrained to check them (--graphnetz-verify-cache)
        self.not_reproduced = 0  # cells whose checked hit differed (retrained)
        self.saved = 0  # adaptive seeds: seed-trainings not needed against fixed MAX
        self.graphnetz_tests: set[str] = set()  # tests that use our fixtures, marker or gates
        # nodeid -> saved report path -> the gate calls that judged it (--graphnetz-report-dir)
        self.gate_calls: dict[str, dict[str, list[dict[str, Any]]]] = {}
        # Checked at session start (pytest_configure): None when unset or unwritable.
        self.step_summary: str | None = os.environ.get(STEP_SUMMARY_ENV) or None
        self.calibration_rows: list[dict[str, Any]] = []
        # --graphnetz-executor: opened at the first run that trains, closed at session end.
        self._executor: Any = None
        self._close_executor: Any = None
        self._terminal = threading.RLock()   # a run's heartbeat thread writes progress too
        # The executor of command tasks' scripts (warm servers, process groups), made by the
        # first run that needs one and closed at the session's end (close).
        self.commands: CommandExecutor | None = None
        self.planned: list[dict[str, Any]] = []   # --graphnetz-plan: the missing triples

    @functools.cached_property
    def commit(self) -> str | None:
        """The git commit checked out at the root (None: not a checkout), read once."""
        from pytest_graphnetz.plugin.tracker import git_commit

        return git_commit(self.config.rootpath)

    @property
    def is_xdist_worker(self) -> bool:
        return hasattr(self.config, "workerinput")

    @property
    def is_xdist_controller(self) -> bool:
        return self.config.pluginmanager.has_plugin("dsession")

    # fixtures

    def run(self, item: pytest.Item, tasks: Any, models: Any, *,
            epoch_selection: str | None = None, **kwargs: Any) -> BenchmarkReport:
        """``run_benchmark`` with the session's seeds, device, workers, cache; ``kwargs`` win.
        With adaptive seeds (and no ``seeds`` given), the first look of the schedule, as a
        report the gates extend through this same method; every look has ``epoch_selection``."""
        __tracebackhide__ = True
        from pytest_graphnetz.runner import run_benchmark

        s = self.settings
        if s.min_seeds is not None and "seeds" not in kwargs:
            from pytest_graphnetz.gates.comparing.adaptive import run_adaptive

            def runner(tasks: Any, models: Any, **more: Any) -> BenchmarkReport:
                return self.run(item, tasks, models, epoch_selection=epoch_selection,
                                **{**kwargs, **more})

            return run_adaptive(tasks, models, seeds=s.seeds, min_seeds=s.min_seeds,
                                runner=runner)
        kwargs = {**s.run_arguments(), **kwargs}
        if s.executor is not None and "executor" not in kwargs:
            kwargs["executor"] = self.executor()
        if "commands" not in kwargs:
            if self.commands is None:
                from pytest_graphnetz.runner.command.run import CommandExecutor

                self.commands = CommandExecutor()
            kwargs["commands"] = self.commands
        counts: dict[str, float] = {"trained": 0, "cached": 0}
        user_progress = kwargs.pop("progress", None)
        from pytest_graphnetz.runner.progress import heartbeat, live_progress

        with self._uncaptured():  # its first line (0/N) is written at once
            live = live_progress(self.config, tasks, models, kwargs["seeds"],
                                 worker=self.is_xdist_worker)
        def progress(task: str, model: str, seed: int, status: str, seconds: float) -> None:
            counts[status] = counts.get(status, 0) + 1
            if live is not None:
                with self._uncaptured():
                    live.update(task, model, seed, status)
            if user_progress is not None:
                user_progress(task, model, seed, status, seconds)

        user_started = kwargs.pop("started", None)

        def started(task: str, model: str, seed: int) -> None:
            if live is not None:
                with self._uncaptured():
                    live.start(task, model, seed)
            if user_started is not None:
                user_started(task, model, seed)

        def beat() -> None:   # on the heartbeat's thread
            if live is not None and live.beat_due():
                with self._uncaptured():
                    live.beat()

        from pytest_graphnetz.plugin.sharding import shard_outcomes

        start = time.monotonic()
        try:
            with shard_outcomes(self.planned, item.nodeid), heartbeat(beat):
                report = run_benchmark(tasks, models, progress=progress, started=started,
                                       **kwargs)
            checked = report.protocol.get("cache") or {}
            counts["checked"] = checked.get("checked", 0)
            counts["not_reproduced"] = len(checked.get("not_reproduced", ()))
            if epoch_selection is not None:
                report.epoch_selection = epoch_selection
            return report
        finally:
            if live is not None:
                with self._uncaptured():
                    live.finish()
            counts["seconds"] = round(time.monotonic() - start, 3)
            item.user_properties.append((TRIPLES_PROPERTY, json.dumps(counts, sort_keys=True)))

    def executor(self) -> Any:
        """The executor of ``--graphnetz-executor``: its factory called once, at the first
        run that asks (a session without graphnetz tests starts no cluster)."""
        if self._executor is None:
            from pytest_graphnetz.plugin.options import named
            from pytest_graphnetz.runner.engines import load_factory, open_executor

            option = named(self.config, "executor")
            assert self.settings.executor is not None
            self._executor, self._close_executor = open_executor(
                load_factory(self.settings.executor, option=option), option=option)
        return self._executor

    def close(self) -> None:
        """End, once, what the session's runs left running: the ``--graphnetz-executor`` (the
        rest of a generator factory run) and the command executor's fork servers."""
        close, self._close_executor, self._executor = self._close_executor, None, None
        commands, self.commands = self.commands, None
        try:
            if close is not None:
                close()
        finally:
            if commands is not None:
                commands.close()

    def baseline(self, item: pytest.Item, name: str | None = None) -> BaselineHandle:
        """The baseline handle of ``item``: ``<baseline dir>/<module>/<name or test>.json``
        (``<Class>.<test>`` for a test in a class)."""
        from pytest_graphnetz.gates.refreshing.baselines import BaselineHandle, default_path
        from pytest_graphnetz.gates.verdicts.values import BaselineError

        s = self.settings
        path = default_path(s.baseline_dir, Path(str(item.path)).stem,
                            baseline_name(item) if name is None else name)
        if name is None:
            others = self.usage.sharing(item.nodeid)
            if others:
                raise BaselineError(
                    f"tests {item.nodeid} and {', '.join(others)} would share the baseline file "
                    f"{self.shown(path)} (a file name keeps only the module's name, and some "
                    "file systems ignore case), so one would be compared with the other's "
                    "numbers. Give each its own baseline: graphnetz_baseline(\"<unique name>\")"
                )
        if s.update_baselines:
            item.user_properties.append((USES_PROPERTY, str(path)))
        item.user_properties.append((BASELINE_FILE, str(path)))
        if s.calibrate:
            item.stash.setdefault(CALIBRATION_KEY, Calibrating()).baselines.append(path)
        command = ["pytest", item.nodeid, "--graphnetz-update-baselines"]
        if s.cli_baseline_dir is not None:
            command.append(f"--graphnetz-baseline-dir={s.cli_baseline_dir}")
        return BaselineHandle(path, update=s.update_baselines, force=s.force,
                              update_command=shlex.join(command), accept=s.accept,
                              add_missing=s.add_missing,
                              root=self.config.rootpath)

    def mark_test(self, item: pytest.Item) -> None:
        """Mark a test that uses our fixtures or marker, before its setup: if it fails before
        any gate, the summary still gives it a row."""
        if is_graphnetz_test(item):
            item.user_properties.append((GRAPHNETZ_TEST, "1"))

    def recorder(self, item: pytest.Item) -> GateRecorder:
        """What the gates called inside ``item`` report to (session defaults, the rows)."""
        from pytest_graphnetz.gates.recorder import GateRecorder

        s = self.settings
        gates = GatesInTest(self, item)
        return GateRecorder(alpha=s.alpha, strict=s.strict, min_effect=s.min_effect,
                            rerun_safe=s.rerun_safe, first_look=s.first_look,
                            accept_hardware=s.accept_hardware, keep=gates.keep,
                            describe=gates.describe, save=gates.save if s.report_dir else None,
                            use=gates.use if s.update_baselines else None)

    def record_gate_settings(self, item: pytest.Item) -> None:
        """After a test: write into each candidate report it saved the settings of the gates
        that judged it (gate, test, margin, δ, α, strict, the cells of the call: its Holm
        family), so ``graphnetz compare BASE CAND`` reproduces the verdicts without flags."""
        calls = self.gate_calls.pop(item.nodeid, {})
        if not calls:
            return
        from pytest_graphnetz.report import BenchmarkReport

        for path, gates in calls.items():
            try:
                report = BenchmarkReport.from_json(path)
                report.protocol["gates"] = gates
                report.to_json(path)
            except (OSError, ValueError) as exc:   # the verdicts stand; the file lacks them
                import warnings

                warnings.warn(f"graphnetz: could not record the gate settings in {path}: {exc}",
                              stacklevel=2)

    def _report_path(self, item: pytest.Item, k: int, label: str | None = None) -> Path:
        """``<report dir>/<module>/<test>.json`` (laid out as the baselines are, so a CI job can
        run ``graphnetz compare`` on the pair); a test's k-th distinct report adds ``-k``, and
        the part of it an adaptive gate trained further adds ``.<label>`` (``.10-seeds``)."""
        from pytest_graphnetz.gates.refreshing.baselines import default_path

        assert self.settings.report_dir is not None
        name = baseline_name(item) + (f"-{k}" if k > 1 else "") + (f".{label}" if label else "")
        return default_path(self.settings.report_dir, Path(str(item.path)).stem, name)

    # collection (reports come from this process or, on the xdist controller, from workers)

    def take_report(self, report: pytest.TestReport) -> None:
        """One test report: gather its gate rows, failure and triple counts."""
        if report.failed and report.nodeid not in self.failures:
            self.failures[report.nodeid] = _crash_message(report)
        # user_properties accumulate over setup/call/teardown; the teardown report has them all.
        if report.when != "teardown":
            return
        runs = []
        for name, value in report.user_properties:
            if name == GRAPHNETZ_TEST:
                self.graphnetz_tests.add(report.nodeid)
            elif name == GATE_PROPERTY:
                self.rows.append(json.loads(str(value)))
                self.saved += int(self.rows[-1].get("saved", 0))
                self.graphnetz_tests.add(report.nodeid)
            elif name == REPORT_PROPERTY:
                self.reports.append(str(value))
            elif name == CALIBRATION_PROPERTY:
                self.calibration_rows += json.loads(str(value))
            elif name == TRIPLES_PROPERTY:
                runs.append(json.loads(str(value)))
                self.trained += runs[-1].get("trained", 0)
                self.cached += runs[-1].get("cached", 0)
                self.checked += runs[-1].get("checked", 0)
                self.not_reproduced += runs[-1].get("not_reproduced", 0)
        if runs and self.is_xdist_controller and self.config.get_verbosity() >= 0:
            # Workers' output is not shown: their live progress becomes one line per test.
            from pytest_graphnetz.runner.progress import triple_counts

            self._write_line(triple_counts(_short_test(report.nodeid), runs))

    # the summary

    @property
    def idle(self) -> bool:
        """Whether no graphnetz test, gate, triple or unused baseline cell took part in this
        session: its summary would say nothing (and a run of plain tests need not load it)."""
        return not (self.rows or self.graphnetz_tests or self.trained or self.cached
                    or self.usage.unused_cells)

    @property
    def builds_summary(self) -> bool:
        """Whether the session's end builds its summary: something took part, or the user named
        a file to write it to."""
        s = self.settings
        return not self.idle or bool(s.summary or s.comment or s.json)

    @property
    def has_closing(self) -> bool:
        """Whether the session's end writes a file or shows a line (:func:`.closing.finish`):
        it builds the summary, or a refresh listed unused baselines."""
        return self.builds_summary or bool(self.usage.unused_lines)

    def summary(self, exitstatus: int | None = None) -> GateSummary:
        """The session's rows as a :class:`~pytest_graphnetz.plugin.summary.GateSummary` value."""
        from pytest_graphnetz.plugin.summary import GateSummary

        return GateSummary(rows=self.rows, failures=self.failures,
                           graphnetz_tests=sorted(self.graphnetz_tests), exitstatus=exitstatus,
                           trained=self.trained, cached=self.cached, saved=self.saved,
                           checked=self.checked, not_reproduced=self.not_reproduced,
                           unused=self.usage.unused_cells)

    def remove_previous_outputs(self) -> None:
        """At session start (the xdist controller's), delete the previous run's summary,
        comment and JSON verdict file: a run stopped before its end (SIGTERM, a CI timeout,
        ``kill -9``) must leave none that reads as its verdict (``"build_failed": false``).
        :func:`~.settings.check_outputs` has refused links and non-regular files already."""
        for path in (self.settings.summary, self.settings.comment, self.settings.json):
            if path is not None:
                try:
                    path.unlink(missing_ok=True)
                except OSError as exc:  # a read-only directory: the write will fail too
                    self.config.issue_config_time_warning(pytest.PytestConfigWarning(
                        f"graphnetz: the previous run's {self.shown(path)} could not be removed "
                        f"({type(exc).__name__}: {exc.strerror or exc}); it is not this run's"),
                        stacklevel=2)

    def shown(self, path: str | os.PathLike[str] | None) -> str:
        """``path`` as messages print it: relative to the rootdir when inside it."""
        from pytest_graphnetz.report.session_files import shown

        return shown(path, self.config.rootpath) if path is not None else ""

    def _write_line(self, line: str) -> None:
        reporter = self.config.pluginmanager.get_plugin("terminalreporter")
        if reporter is not None:
            with self._uncaptured():
                reporter.write_line(line)

    @contextmanager
    def _uncaptured(self) -> Iterator[None]:
        """Inside a test, output is captured; progress is for the person watching. One
        writer at a time: capture is suspended process-wide."""
        capture = self.config.pluginmanager.get_plugin("capturemanager")
        with self._terminal:
            if capture is None:
                yield
                return
            with capture.global_and_fixture_disabled():
                yield


class GatesInTest:
    """One test's gate calls, as its :class:`~pytest_graphnetz.gates.recorder.GateRecorder`
    delivers them: rows into the test's properties, candidate reports saved once each
    (--graphnetz-report-dir), and per saved path the settings of the gates that judged it
    (``session.gate_calls``, written into the reports after the test). A plain class, not a
    dataclass: the plugin module defines it on every pytest start (plugin_overhead.py)."""

    def __init__(self, session: GraphnetzSession, item: pytest.Item) -> None:
        self.session, self.item = session, item
        self.saved: list[BenchmarkReport] = []   # each written once
        self.current: list[str] = []   # the paths the running gate judges

    def keep(self, row: dict[str, Any]) -> None:
        self.item.user_properties.append(
            (GATE_PROPERTY, json.dumps({"test": self.item.nodeid, **row})))

    def describe(self, row: dict[str, str], v: CellVerdict | WidthVerdict) -> dict[str, Any]:
        """A verdict's row with its numbers; its gate's settings noted for the reports."""
        from pytest_graphnetz.plugin.summary import gate_call, verdict_stats

        settings = self.session.settings
        call = gate_call(v, strict=settings.strict)
        if call is not None and not settings.update_baselines:
            # the schedule the session judged on, so `graphnetz compare` refuses or judges
            # alone the same seed sets
            call = {**call, "first_look": settings.first_look,
                    "single_run": not settings.rerun_safe, "node": self.item.nodeid}
            if settings.report_dir is not None:   # what a later export tags the call with
                call["commit"] = self.session.commit
            calls = self.session.gate_calls.setdefault(self.item.nodeid, {})
            for path in self.current:
                _add_cell(calls.setdefault(path, []), call, v.cell)
        return {**row, "stats": verdict_stats(v, test=self.item.nodeid)}

    def save(self, report: BenchmarkReport,
             further: Sequence[BenchmarkReport] = ()) -> list[str]:
        """Write ``report`` (and an adaptive gate's ``further`` parts) unless this test saved
        it already; the paths written."""
        if not further and any(r is report for r in self.saved):
            k = next(i for i, r in enumerate(self.saved) if r is report)
            self.current[:] = [str(self.session._report_path(self.item, k + 1))]
            return []
        self.saved.append(report)
        try:
            return self._write(report, further)
        except OSError as exc:
            # Checked writable at session start; a disk that fills up since must not replace
            # the gate's verdicts with an OSError.
            import warnings

            warnings.warn(f"graphnetz: the candidate report of {self.item.nodeid} was not saved "
                          f"under {self.session.shown(self.session.settings.report_dir)}: "
                          f"{type(exc).__name__}: {exc.strerror or exc}", stacklevel=2)
            return []

    def use(self, path: str) -> None:
        self.item.user_properties.append((USES_PROPERTY, path))

    def _write(self, report: BenchmarkReport, further: Sequence[BenchmarkReport]) -> list[str]:
        k, where = len(self.saved), self.session._report_path
        paths = [report.to_json(where(self.item, k))]
        for part in further:  # an adaptive gate's cells that took more seeds
            label = f"{len(part.seeds)}-seeds"
            if len(report.tasks) > 1:
                label = f"{part.tasks[0]}.{label}"
            path = where(self.item, k, label)
            # Two cells of a task can hold as many seeds but different ones (a baseline seed
            # diverged): keep their files apart.
            n = 1
            while path in paths:
                n += 1
                path = where(self.item, k, f"{label}-{n}")
            paths.append(part.to_json(path))
        self.item.user_properties += [(REPORT_PROPERTY, str(p)) for p in paths]
        self.current[:] = [str(p) for p in paths]
        return [str(p) for p in paths]


def _crash_message(report: pytest.TestReport) -> str:
    """What failed the test: the exception's message (the gate's verdict text), else the
    whole failure text."""
    crash = getattr(report.longrepr, "reprcrash", None)
    message = getattr(crash, "message", None)
    return str(message) if message else report.longreprtext


def _short_test(nodeid: str) -> str:
    from pytest_graphnetz.plugin.summary import short_test  # stdlib only

    return short_test(nodeid)


def _add_cell(calls: list[dict[str, Any]], call: dict[str, Any], cell: str) -> None:
    """Add ``cell`` to the call with ``call``'s settings (a new call when none has them)."""
    for known in calls:
        if all(known.get(k) == v for k, v in call.items()):
            if cell not in known["cells"]:
                known["cells"].append(cell)
            return
    calls.append({**call, "cells": [cell]})

