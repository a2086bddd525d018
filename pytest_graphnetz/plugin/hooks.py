"""The plugin's hooks: a few lines each, handing the work to the objects ``pytest_configure``
creates: the :class:`~.session.GraphnetzSession` (``config.stash[STASH_KEY]``) and the
:class:`~.usage.BaselineUsage` (``config.stash[USAGE_KEY]``).

Every hook that runs once per session is a function of this module, which finds its session
in the stash. The hooks that run for every test (its setup, its body, its reports) are the
methods of :class:`TestHooks`: one small plugin object, bound to one session's parts (a
report carries no config, and pytester runs several sessions in one process), and registered
only in a session that has graphnetz tests. On the xdist controller, whose workers' tests it
never sees, that is before it starts them; elsewhere, once collection shows a test that uses
our fixtures or marker, or a test module that imported the gates. ``-k`` blind to our marker's
name (:mod:`.selection`) is registered only for a run given ``-k``. A project's plain tests
pay nothing per test (``benchmarks/plugin_overhead.py`` measures what a run of them pays).

Standard library and pytest only at import: pytest loads the plugin on every run.
"""

from __future__ import annotations

import sys
from collections.abc import Generator, Iterator
from typing import Any

import pytest

from pytest_graphnetz.plugin.keys import MARKER, is_graphnetz_test, uses_fixtures
from pytest_graphnetz.plugin.options import add_options
from pytest_graphnetz.plugin.session import STASH_KEY, GraphnetzSession
from pytest_graphnetz.plugin.settings import Settings, check_device, check_outputs, header_line
from pytest_graphnetz.plugin.usage import USAGE_KEY, BaselineUsage

# What the session's end shows in the terminal summary (closing.finish): sections, each a title
# written as a separator line (None: none) and its lines.
SECTIONS_KEY = pytest.StashKey[list[tuple[str | None, list[str]]]]()


def pytest_addoption(parser: pytest.Parser) -> None:
    add_options(parser)


def pytest_report_header(config: pytest.Config) -> list[str]:
    settings = config.stash[STASH_KEY].settings
    lines = [header_line(settings, config.rootpath)]
    # Rerun-chain records of earlier versions: verdicts no longer read them (they rest on the
    # seeds a run holds), so they are ignored; said once, in the header.
    old = None if settings.cache_dir is None else settings.cache_dir / "rerun-chains"
    if old is not None and old.is_dir():
        lines.append(f"graphnetz: {old} holds rerun-chain records of an earlier version; they "
                     "are ignored (each verdict rests on the seeds the run holds), delete it")
    return lines


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line(
        "markers", f"{MARKER}: a multi-seed GNN benchmark gate (select with -m {MARKER})"
    )
    # PyG calls torch.jit.script while importing, which torch >= 2.10 deprecates: noise in every
    # session that imports PyG (a user's model module does, before our runner can silence it),
    # and a failure under -W error. The warning is raised inside torch, whoever called.
    config.addinivalue_line(
        "filterwarnings", r"ignore:`torch\.jit\.script` is deprecated:DeprecationWarning")
    settings = Settings.from_config(config)
    check_device(settings.device)
    usage = BaselineUsage(config, settings)
    session = GraphnetzSession(config, settings, usage)
    if not session.is_xdist_worker:  # the controller checks for everyone
        session.step_summary = check_outputs(config, settings, session.step_summary)
        if not config.option.help:
            session.remove_previous_outputs()
    config.stash[USAGE_KEY] = usage
    config.stash[STASH_KEY] = session
    if config.option.keyword:  # -k blind to our marker's name; without -k the name plays no part
        from pytest_graphnetz.plugin import selection

        config.pluginmanager.register(selection, "graphnetz-keyword")


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


@pytest.hookimpl(optionalhook=True)
def pytest_xdist_setupnodes(config: pytest.Config, specs: Any) -> None:
    # The xdist controller, before it starts its workers: it collects nothing, and receives
    # every worker's reports, of tests it never sees.
    register_test_hooks(config)


def pytest_collection_finish(session: pytest.Session) -> None:
    if gates_imported() or any(map(is_graphnetz_test, session.items)):
        register_test_hooks(session.config)


def gates_imported() -> bool:
    """Whether a module of this process imported the gates (a test module, at collection)."""
    return "pytest_graphnetz.gates" in sys.modules


def register_test_hooks(config: pytest.Config) -> None:
    """:class:`TestHooks` for this session, once."""
    if not config.pluginmanager.has_plugin(TestHooks.NAME):
        config.pluginmanager.register(
            TestHooks(config.stash[STASH_KEY], config.stash[USAGE_KEY]), TestHooks.NAME)


@pytest.hookimpl(wrapper=True)
def pytest_make_collect_report(collector: pytest.Collector
                               ) -> Generator[None, pytest.CollectReport, pytest.CollectReport]:
    report = yield
    collector.config.stash[USAGE_KEY].collected(collector, report)
    return report


@pytest.hookimpl(trylast=True)
def pytest_sessionfinish(session: pytest.Session, exitstatus: int) -> None:
    # The unused baseline cells first, which the summary reports; all before the terminal
    # summary, which pytest calls after every pytest_sessionfinish and which prints the paths
    # written here.
    graphnetz = session.config.stash[STASH_KEY]
    graphnetz.close()
    if graphnetz.settings.plan is not None:
        from pytest_graphnetz.plugin.sharding import write_plan

        write_plan(graphnetz.settings.plan, graphnetz.planned)
    session.config.stash[USAGE_KEY].finish(session, int(exitstatus))
    # The controller writes, from every worker's reports; a session with nothing to write or
    # show (plain tests) need not load the module that would.
    if not graphnetz.is_xdist_worker and graphnetz.has_closing:
        from pytest_graphnetz.plugin.closing import finish

        session.config.stash[SECTIONS_KEY] = finish(graphnetz, int(exitstatus))


def pytest_terminal_summary(terminalreporter: Any, exitstatus: int,
                            config: pytest.Config) -> None:
    for title, lines in config.stash.get(SECTIONS_KEY, []):
        if title is not None:
            terminalreporter.write_sep("=", title)
        for line in lines:
            terminalreporter.write_line(line)


__all__ = ["TestHooks", "pytest_addoption", "pytest_collection_finish", "pytest_configure",
           "pytest_make_collect_report", "pytest_report_header", "pytest_sessionfinish",
           "pytest_terminal_summary", "pytest_xdist_setupnodes", "gates_imported",
           "register_test_hooks"]
