"""Layer 6 of 7: the pytest plugin. May import every layer below (gates, runner, report,
stats, base), but at import time only pytest and the standard library: the rest lazily, inside
the hook or fixture that needs it (what pytest loads on every run stays cheap; a test enforces it).

The pytest plugin: options, ini keys, the ``graphnetz`` marker, fixtures and the gate summary.

This module is the ``pytest11`` entry point: pytest registers it on every run, in every project
of an environment where the package is installed, and rewrites the asserts of every module of
ours that a run imports. So it holds the hooks and fixtures pytest must find, a few lines each,
and loads the rest of the plugin only in a session with graphnetz work:

- it declares the options and the marker (:mod:`.declared`, data) on every run;
- the session's parts (its settings read and checked, the :class:`~.session.GraphnetzSession`,
  the :class:`~.usage.BaselineUsage`, the hooks of :mod:`.hooks`) load at the first of, at
  ``pytest_configure``: an option of ours given on the command line or set as an ini key (so
  a bad value is a usage error before any test runs), the session header to show (it says the
  settings in effect), the xdist controller (whose workers' tests it never sees); while
  collecting: a test that uses our fixtures or marker, or a test module that imported the
  gates; or a fixture's first use. The collection reports made before are handed to the
  baseline usage then;
- a session without any of these (a project's plain tests under ``-q``) loads
  :mod:`.declared` besides this module, and pays nothing per test
  (``benchmarks/plugin_overhead.py`` counts what it pays).

The parts, by concept:

- :mod:`.declared`: the ``--graphnetz-*`` options and ini keys, declared and registered, and
  what makes a test a graphnetz test;
  :mod:`.options`: each value read with a message naming the option or the ini key it came
  from; :mod:`.settings`: those values validated into :class:`~.settings.Settings`;
- :mod:`.hooks`: the session's start and end, and the hooks that run for every graphnetz test;
  :mod:`.fixtures`: the body of ``graphnetz_run``;
- :mod:`.session`: :class:`~.session.GraphnetzSession` runs benchmarks (with live progress),
  hands out baselines, gathers every gate row and feeds
  :class:`~pytest_graphnetz.plugin.summary.GateSummary`, which renders the terminal table, the
  Markdown and the JSON;
- :mod:`.closing`: at the session's end, the files the user asked for written, then the
  terminal's lines;
- :mod:`.usage`: :class:`~.usage.BaselineUsage` tracks which baselines and cells a run used
  (xdist included) and prunes or reports the rest;
- :mod:`.selection`: ``-k`` blind to our marker's name (registered only for a run given ``-k``);
- :mod:`.keys`: the ``user_properties`` names the parts share.

Under pytest-xdist every worker trains through the same on-disk triple cache (file locks make
one worker wait for another's triple instead of training it twice), and gate results travel to
the controller in the test reports' ``user_properties``, which xdist serialises.
"""

from __future__ import annotations

from collections.abc import Callable, Generator, Iterator
from typing import TYPE_CHECKING

import pytest

from pytest_graphnetz.plugin.declared import (
    MARKER,
    add_options,
    any_given,
    gates_imported,
    is_graphnetz_test,
)

if TYPE_CHECKING:
    from pytest_graphnetz.gates.refreshing.baselines import BaselineHandle
    from pytest_graphnetz.plugin.session import GraphnetzSession
    from pytest_graphnetz.report import BenchmarkReport


class Loading:
    """What this module keeps of one session: the collection reports made before its parts
    loaded (the baseline usage reads them), then the session."""

    __slots__ = ("collected", "session")

    def __init__(self) -> None:
        self.collected: list[tuple[pytest.Collector, pytest.CollectReport]] = []
        self.session: GraphnetzSession | None = None


STATE = pytest.StashKey[Loading]()


def session_of(config: pytest.Config) -> GraphnetzSession:
    """The session's :class:`~.session.GraphnetzSession`, loaded (its settings read and
    checked, its hooks registered) at the first need."""
    state = config.stash[STATE]
    if state.session is None:
        from pytest_graphnetz.plugin.hooks import start

        state.session = start(config, state.collected)
        state.collected = []
    return state.session


def pytest_addoption(parser: pytest.Parser) -> None:
    add_options(parser)


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line(
        "markers", f"{MARKER}: a multi-seed GNN benchmark gate (select with -m {MARKER})"
    )
    # PyG calls torch.jit.script while importing, which torch >= 2.10 deprecates: noise in every
    # session that imports PyG (a user's model module does, before our runner can silence it),
    # and a failure under -W error. The warning is raised inside torch, whoever called.
    config.addinivalue_line(
        "filterwarnings", r"ignore:`torch\.jit\.script` is deprecated:DeprecationWarning")
    config.stash[STATE] = Loading()
    # The xdist controller collects nothing, and receives every worker's reports, of tests it
    # never sees (its workers set `dist` to "no").
    controller = config.getoption("dist", "no") != "no"
    # An option of ours is read and checked now: a bad value stops the run before any test.
    # The session header (shown unless -q or --no-header) says the settings in effect.
    header = config.get_verbosity() >= 0 and not getattr(config.option, "no_header", False)
    if controller or header or any_given(config):
        session = session_of(config)
        if controller:
            from pytest_graphnetz.plugin.hooks import register_test_hooks

            register_test_hooks(session)
    if config.option.keyword:  # -k blind to our marker's name; without -k the name plays no part
        from pytest_graphnetz.plugin import selection

        config.pluginmanager.register(selection, "graphnetz-keyword")


@pytest.hookimpl(wrapper=True)
def pytest_make_collect_report(collector: pytest.Collector
                               ) -> Generator[None, pytest.CollectReport, pytest.CollectReport]:
    report = yield
    state = collector.config.stash[STATE]
    if state.session is not None:
        state.session.usage.collected(collector, report)
    else:
        state.collected.append((collector, report))
    # A test module that imported the gates (now, collecting it) may call them without our
    # fixtures or marker.
    if gates_imported() or any(is_graphnetz_test(item) for item in report.result
                               if isinstance(item, pytest.Item)):
        from pytest_graphnetz.plugin.hooks import register_test_hooks

        register_test_hooks(session_of(collector.config))
    return report


@pytest.fixture
def graphnetz_run(request: pytest.FixtureRequest) -> Iterator[Callable[..., BenchmarkReport]]:
    """``graphnetz_run(tasks, models, **kwargs)`` → a report from ``run_benchmark``.

    Seeds, device, workers and cache come from the session's options; ``kwargs`` (anything
    ``run_benchmark`` takes) override them for this call; ``epoch_selection="best_val"`` sets
    the report's epoch rule (default ``"final"``), which the gates then read. With
    ``--graphnetz-calibrate`` each call also trains its models under salted seeds (every
    configured seed, also under adaptive seeds), and after the test the calibration is
    written beside each baseline it used.
    With ``--graphnetz-update-baselines --graphnetz-baseline-replicates=R`` each call also
    trains its models under R - 1 salts (:mod:`pytest_graphnetz.gates.refreshing.replicates`).
    """
    from pytest_graphnetz.plugin.fixtures import benchmark_runs

    yield from benchmark_runs(request, session_of(request.config))


@pytest.fixture
def graphnetz_baseline(request: pytest.FixtureRequest) -> Callable[..., BaselineHandle]:
    """``graphnetz_baseline(name=None)`` → this test's baseline handle, for the gates.

    The file is ``<baseline dir>/<test module>/<test name>.json``; ``name`` replaces the test
    name (two tests sharing one baseline, or one test with several).
    """
    session = session_of(request.config)

    def baseline(name: str | None = None) -> BaselineHandle:
        return session.baseline(request.node, name)

    return baseline


__all__ = [
    "STATE", "Loading", "graphnetz_baseline", "graphnetz_run", "pytest_addoption",
    "pytest_configure", "pytest_make_collect_report", "session_of",
]
