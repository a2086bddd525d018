"""The session's start and end, and the hooks that run for every graphnetz test, for the entry
module (``pytest_graphnetz.plugin``), which loads this module only in a session with graphnetz
work.

:func:`start` reads the settings, builds the :class:`~.session.GraphnetzSession` and its
:class:`~.usage.BaselineUsage`, and registers :class:`SessionHooks`: the header
(:func:`header`) and the end (:func:`finish`: unused baselines, the files asked for, the
terminal's lines).
The hooks that run for every test (its setup, its body, its reports) are the methods of
:class:`TestHooks`: one small plugin object, bound to one session's parts (a report carries no
config, and pytester runs several sessions in one process), and registered only in a session
that has graphnetz tests (:func:`register_test_hooks`). On the xdist controller, whose workers'
tests it never sees, that is before it starts them; elsewhere, once collection shows a test that
uses our fixtures or marker, or a test module that imported the gates. A project's plain tests
pay nothing per test (``benchmarks/plugin_overhead.py`` measures what a run of them pays).

Standard library and pytest only at import: the runner, the gates and the statistics load in
the functions that use them.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from pytest_graphnetz.plugin.declared import gates_imported, uses_fixtures
from pytest_graphnetz.plugin.session import GraphnetzSession
from pytest_graphnetz.plugin.settings import Settings, check_device, check_outputs, header_line
from pytest_graphnetz.plugin.usage import BaselineUsage


def start(config: pytest.Config,
          collected: list[tuple[pytest.Collector, pytest.CollectReport]]) -> GraphnetzSession:
    """The session's parts: the settings read and checked (a bad value is a usage error), the
    baseline usage told of the ``collected`` reports made so far, the session."""
    settings = Settings.from_config(config)
    check_device(settings.device)
    usage = BaselineUsage(config, settings)
    for collector, report in collected:
        usage.collected(collector, report)
    session = GraphnetzSession(config, settings, usage)
    if not session.is_xdist_worker:  # the controller checks for everyone
        session.step_summary = check_outputs(config, settings, session.step_summary)
        if not config.option.help:
            session.remove_previous_outputs()
    config.pluginmanager.register(SessionHooks(session), SessionHooks.NAME)
    return session


class SessionHooks:
    """The hooks that run once in a session with graphnetz work: its header, its end."""

    NAME = "graphnetz-session"
    __slots__ = ("session", "sections")

    def __init__(self, session: GraphnetzSession) -> None:
        self.session = session
        # What the end shows: sections, each a separator title (None: none) and its lines.
        self.sections: list[tuple[str | None, list[str]]] = []

    def pytest_report_header(self, config: pytest.Config) -> list[str]:
        return header(self.session)

    @pytest.hookimpl(trylast=True)
    def pytest_sessionfinish(self, session: pytest.Session, exitstatus: int) -> None:
        # All before the terminal summary, which pytest calls after every
        # pytest_sessionfinish and which prints the paths written here.
        self.sections = finish(self.session, session, int(exitstatus))

    def pytest_terminal_summary(self, terminalreporter: Any, exitstatus: int,
                                config: pytest.Config) -> None:
        for title, lines in self.sections:
            if title is not None:
                terminalreporter.write_sep("=", title)
            for line in lines:
                terminalreporter.write_line(line)


def header(session: GraphnetzSession) -> list[str]:
    """The session header's lines: the settings in effect, and what an earlier version left."""
    settings = session.settings
    lines = [header_line(settings, session.config.rootpath)]
    # Rerun-chain records of earlier versions: verdicts no longer read them (they rest on the
    # seeds a run holds), so they are ignored; said once, in the header.
    old = None if settings.cache_dir is None else settings.cache_dir / "rerun-chains"
    if old is not None and old.is_dir():
        lines.append(f"graphnetz: {old} holds rerun-chain records of an earlier version; they "
                     "are ignored (each verdict rests on the seeds the run holds), delete it")
    return lines


class TestHooks:
    """The hooks that run for every test of a session with graphnetz tests (module docstring)."""

    NAME = "graphnetz-tests"
    __slots__ = ("session", "usage")

    def __init__(self, session: GraphnetzSession, usage: BaselineUsage) -> None:
        self.session = session
        self.usage = usage

    @pytest.hookimpl(tryfirst=True)
    def pytest_runtest_setup(self, item: pytest.Item) -> None:
        self.session.mark_test(item)

    @pytest.hookimpl(wrapper=True)
    def pytest_runtest_call(self, item: pytest.Item) -> Iterator[None]:
        # Gates report to a recorder set for the test body, when the gates module is loaded
        # (the test imported it) or the test uses our fixtures: otherwise importing it here
        # would make an unrelated test pay for numpy and scipy.
        if not gates_imported() and not uses_fixtures(item):
            return (yield)
        from pytest_graphnetz.gates.recorder import recording

        try:
            with recording(self.session.recorder(item)):
                return (yield)
        finally:
            self.session.record_gate_settings(item)

    def pytest_runtest_logreport(self, report: pytest.TestReport) -> None:
        self.usage.take_report(report)
        self.session.take_report(report)

    @pytest.hookimpl(optionalhook=True)
    def pytest_testnodedown(self, node: Any, error: Any) -> None:
        self.usage.worker_done(node)  # the xdist controller: a worker's collection lists


def register_test_hooks(session: GraphnetzSession) -> None:
    """:class:`TestHooks` for this session, once."""
    plugins = session.config.pluginmanager
    if not plugins.has_plugin(TestHooks.NAME):
        plugins.register(TestHooks(session, session.usage), TestHooks.NAME)


def finish(graphnetz: GraphnetzSession, session: pytest.Session, exitstatus: int
           ) -> list[tuple[str | None, list[str]]]:
    """At the session's end: what the runs left running ended, the plan written, the unused
    baselines found (which the summary reports), then the files asked for; returns what the
    terminal summary shows (sections: a separator title, None for none, and lines)."""
    graphnetz.close()
    if graphnetz.settings.plan is not None:
        from pytest_graphnetz.plugin.sharding import write_plan

        write_plan(graphnetz.settings.plan, graphnetz.planned)
    graphnetz.usage.finish(session, exitstatus)
    # The controller writes, from every worker's reports; a session with nothing to write or
    # show need not load the module that would.
    if graphnetz.is_xdist_worker or not graphnetz.has_closing:
        return []
    from pytest_graphnetz.plugin.closing import finish as closing

    return closing(graphnetz, exitstatus)


__all__ = ["SessionHooks", "TestHooks", "finish", "header", "register_test_hooks", "start"]
