"""Which baselines, and which cells of them, a run used.

:class:`BaselineUsage` is created with the session (:func:`.hooks.start`), and the hooks hand
it each step: collection (every test that asks for ``graphnetz_baseline``,
every test module collected without a skip), the test reports (the baseline files handed out,
the cells gated, who passed), and the session's end, when it

- after a refresh (``--graphnetz-update-baselines``) deletes the baselines no test used, or
  lists them when the run was partial (:meth:`BaselineUsage.find_unused`);
- otherwise finds baseline cells no gate used (:meth:`BaselineUsage.find_unused_cells`), which
  ``--graphnetz-fail-unused`` turns into a failed run.

Under pytest-xdist the controller collects nothing: each worker sends its collection lists in
``workeroutput`` (:data:`~.keys.USER_PROPERTY`, :data:`~.keys.SEEN_PROPERTY`) and the test
reports carry the rest in ``user_properties``.

Standard library and pytest only at import: the baseline store and the ratchet load lazily.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from pytest_graphnetz.plugin.keys import (
    BASELINE_FILE,
    GATE_PROPERTY,
    SEEN_PROPERTY,
    USER_PROPERTY,
    USES_PROPERTY,
)
from pytest_graphnetz.plugin.settings import Settings

# (nodeid, module stem, default baseline name) of a test that asks for a baseline.
BaselineUser = tuple[str, str, str]


def baseline_name(item: pytest.Item) -> str:
    """The default baseline name of ``item``: its name, ``<Class>.<name>`` in a class (two
    classes of one module may both have a ``test_x``: their files stay apart)."""
    cls = getattr(item, "cls", None)
    return f"{cls.__name__}.{item.name}" if cls is not None else item.name


class BaselineUsage:
    """Tracks baseline use through a session (see the module docstring)."""

    def __init__(self, config: pytest.Config, settings: Settings) -> None:
        self.config = config
        self.settings = settings
        # Each collected test that asks for a baseline (on the xdist controller: a worker's).
        self.baseline_users: list[BaselineUser] = []
        # Test modules collected and not skipped: a refresh prunes only their baselines.
        self.seen_modules: list[str] = []
        self.used_baselines: set[str] = set()
        self.unfinished: set[str] = set()   # baseline users that failed or were skipped
        # baseline file -> the tests handed it, and the cells their gates compared
        self.baseline_tests: dict[str, set[str]] = {}
        self.gated_cells: dict[str, set[str]] = {}   # nodeid -> "task/model" cells gated
        self.passed: set[str] = set()
        self.ran: set[str] = set()       # tests with a report (selected, not deselected)
        self.unused_lines: list[str] = []               # after a refresh: deleted or kept
        self.unused_cells: list[tuple[str, str]] = []   # (shown baseline file, "task/model")
        self.cells_checked = False   # whether this run could tell the unused cells
        if self.is_xdist_worker:  # sent to the controller when the worker finishes
            workeroutput: dict[str, Any] = config.workeroutput  # type: ignore[attr-defined]
            workeroutput[USER_PROPERTY] = self.baseline_users
            workeroutput[SEEN_PROPERTY] = self.seen_modules

    @property
    def is_xdist_worker(self) -> bool:
        return hasattr(self.config, "workerinput")

    def sharing(self, nodeid: str) -> list[str]:
        """Other collected tests whose default baseline is the same file as ``nodeid``'s (a file
        name keeps only the module's name, and some file systems ignore case)."""
        from pytest_graphnetz.gates.refreshing.baselines import default_path

        keys = {n: str(default_path(self.settings.baseline_dir, stem, name)).casefold()
                for n, stem, name in self.baseline_users}
        mine = keys.get(nodeid)
        return [n for n, key in keys.items() if key == mine and n != nodeid]

    # collection (the hooks in :mod:`.hooks` hand each step over)

    def collected(self, collector: pytest.Collector, report: pytest.CollectReport) -> None:
        """Note what one collector made: each test that asks for ``graphnetz_baseline`` (a
        module makes all its tests, also those that ``-k``, ``-m`` or a node id then leave out:
        their baselines are not unused), and each test module collected without a skip (a
        module-level ``pytest.skip``, an ``importorskip`` or an import error leave it out): a
        refresh deletes baselines only in the directories of modules it saw."""
        if not report.passed:
            return
        if isinstance(collector, pytest.Module):
            stem = Path(str(collector.path)).stem
            if stem not in self.seen_modules:
                self.seen_modules.append(stem)
        for item in report.result:
            if isinstance(item, pytest.Item) and \
                    "graphnetz_baseline" in getattr(item, "fixturenames", ()):
                self.baseline_users.append(
                    (item.nodeid, Path(str(item.path)).stem, baseline_name(item)))
                if self.settings.update_baselines:
                    item.user_properties.append((USER_PROPERTY, item.nodeid))

    def worker_done(self, node: Any) -> None:
        """xdist controller: every worker collected the same tests; take one worker's list."""
        output = getattr(node, "workeroutput", {})
        users = output.get(USER_PROPERTY)
        if users and not self.baseline_users:
            self.baseline_users = [(str(n), str(stem), str(name)) for n, stem, name in users]
        for stem in output.get(SEEN_PROPERTY) or ():
            if stem not in self.seen_modules:
                self.seen_modules.append(stem)

    # reports (from this process or, on the xdist controller, from workers)

    def take_report(self, report: pytest.TestReport) -> None:
        """One test report: who ran and passed, the baselines handed out, the cells gated."""
        self.ran.add(report.nodeid)
        if report.when == "call" and report.passed:
            self.passed.add(report.nodeid)
        for name, value in report.user_properties:
            if name == USER_PROPERTY and (report.failed or report.skipped):
                self.unfinished.add(str(value))
        # user_properties accumulate over setup/call/teardown; the teardown report has them all.
        if report.when != "teardown":
            return
        for name, value in report.user_properties:
            if name == USES_PROPERTY:
                self.used_baselines.add(str(value))
            elif name == BASELINE_FILE:
                self.baseline_tests.setdefault(str(value), set()).add(report.nodeid)
            elif name == GATE_PROPERTY:
                cell = str(json.loads(str(value)).get("cell", ""))
                self.gated_cells.setdefault(report.nodeid, set()).add(cell)

    # at the end

    def finish(self, session: pytest.Session, exitstatus: int) -> None:
        """At session end: prune or list the unused baselines after a refresh, else find the
        unused cells (failing the run on them with ``--graphnetz-fail-unused``)."""
        self.find_unused(int(exitstatus))
        self.find_unused_cells(int(exitstatus))
        if self.unused_cells and self.settings.fail_unused and session.exitstatus == 0:
            session.exitstatus = pytest.ExitCode.TESTS_FAILED  # as syrupy does for unused snapshots

    def partial_reasons(self, exitstatus: int) -> list[str]:
        """Why this run cannot tell which baselines are unused (empty: a full, passing run)."""
        config, option = self.config, self.config.option
        reasons = [flag for flag, used in (
            ("-k", getattr(option, "keyword", "")), ("-m", getattr(option, "markexpr", "")),
            ("--deselect", getattr(option, "deselect", None)),
            ("--lf", getattr(option, "lf", False)), ("--sw", getattr(option, "stepwise", False)),
            ("paths or node ids", config.args_source == pytest.Config.ArgsSource.ARGS),
        ) if used]
        if exitstatus != 0:
            reasons.append("the run did not pass")
        elif self.unfinished:
            reasons.append(f"tests that use baselines were skipped: "
                           f"{', '.join(sorted(self.unfinished))}")
        return reasons

    def find_unused(self, exitstatus: int) -> None:
        """After a refresh: delete the baselines no test used, or (a partial run) list them."""
        if not self.settings.update_baselines or self.is_xdist_worker:
            return
        from pytest_graphnetz.gates.refreshing.ratchet import prune_unused

        reasons = self.partial_reasons(exitstatus)
        self.unused_lines = prune_unused(
            self.settings.baseline_dir, used=self.used_baselines, users=self.baseline_users,
            delete=not reasons, why_kept=", ".join(reasons), seen_modules=self.seen_modules,
            show=self.shown)

    def find_unused_cells(self, exitstatus: int) -> None:
        """Baseline cells no gate used: for each baseline file handed to tests, its cells that
        none of those tests gated. Only when the run selected whole modules (no -k, -m, node
        ids, --lf, ...; ``-m`` only when it left out no test that asks for a baseline) and every
        test handed the file passed: a test that stopped at a failing gate, or that did not
        run, would make its later cells look unused."""
        if self.is_xdist_worker or self.settings.update_baselines:
            return
        if [r for r in self.partial_reasons(0) if r not in ("paths or node ids", "-m")] or any(
                "::" in str(a) for a in self.config.args):
            return
        if any(nodeid not in self.ran for nodeid, _, _ in self.baseline_users):
            return
        if not self.baseline_tests:
            self.cells_checked = True
            return  # no baseline handed out: nothing to read (and numpy not to pay for)
        from pytest_graphnetz.gates.refreshing.baselines import BaselineError, read_baseline

        self.cells_checked = True
        unused = []
        for path, tests in sorted(self.baseline_tests.items()):
            if not tests <= self.passed or not Path(path).is_file():
                continue
            gated = set().union(*(self.gated_cells.get(t, set()) for t in tests))
            try:
                stored = read_baseline(Path(path)).report
            except BaselineError:
                continue   # the gates said so already
            file = self.shown(Path(path).resolve())
            unused += [(file, f"{t}/{m}") for t in stored.tasks for m in stored.models
                       if f"{t}/{m}" not in gated]
        self.unused_cells = unused

    def shown(self, path: str | Path) -> str:
        """``path`` as messages print it: relative to the rootdir when inside it."""
        from pytest_graphnetz.report.session_files import shown

        return shown(path, self.config.rootpath)


__all__ = ["BaselineUsage", "BaselineUser", "baseline_name"]
