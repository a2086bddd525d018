"""The plugin's hooks: a few lines each, handing the work to the objects ``pytest_configure``
creates: the :class:`~.session.GraphnetzSession` (``config.stash[STASH_KEY]``) and the
:class:`~.usage.BaselineUsage` plugin (``config.stash[USAGE_KEY]``).

Standard library and pytest only at import: pytest loads the plugin on every run.
"""

from __future__ import annotations

import sys
from collections.abc import Iterator
from typing import Any

import pytest

from .closing import SECTIONS_KEY, finish
from .keys import FIXTURES, MARKER
from .options import add_options
from .session import STASH_KEY, GraphnetzSession
from .settings import Settings, check_device, check_outputs, header_line
from .usage import USAGE_KEY, BaselineUsage


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
    # Both are plugins so they receive every test report, on the controller those that xdist
    # workers send over too; usage tracking is its own (as cacheprovider's LFPlugin is).
    config.pluginmanager.register(usage, "graphnetz-baseline-usage")
    config.pluginmanager.register(session, "graphnetz-session")


@pytest.hookimpl(wrapper=True)
def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]
                                  ) -> Iterator[None]:
    """``-k`` blind to the ``graphnetz`` marker's name (:mod:`.selection`): ``-k graph`` no
    longer selects every gate; ``-m graphnetz`` and ``-k graphnetz`` keep pytest's meaning."""
    if not config.option.keyword:  # without -k our marker's name changes nothing
        return (yield)
    from . import selection  # only now: a run without -k need not load its parser

    with selection.keyword_applied(config, items):
        return (yield)


@pytest.hookimpl(wrapper=True)
def pytest_runtest_call(item: pytest.Item) -> Iterator[None]:
    # Gates report to a recorder set for the test body. Only when the gates module is already
    # loaded (the test imported it) or the test uses our fixtures: otherwise importing it here
    # would make every unrelated test pay for numpy and scipy.
    uses_us = FIXTURES & set(getattr(item, "fixturenames", ()))
    if "pytest_graphnetz.gates" not in sys.modules and not uses_us:
        return (yield)
    from ..gates.recorder import recording

    session = item.config.stash[STASH_KEY]
    try:
        with recording(session.recorder(item)):
            return (yield)
    finally:
        session.record_gate_settings(item)


@pytest.hookimpl(trylast=True)
def pytest_sessionfinish(session: pytest.Session, exitstatus: int) -> None:
    # Last: after BaselineUsage's (the unused cells); before the terminal summary, which pytest
    # calls after every pytest_sessionfinish and which prints the paths written here.
    graphnetz = session.config.stash[STASH_KEY]
    if not graphnetz.is_xdist_worker:  # the controller writes, from every worker's reports
        session.config.stash[SECTIONS_KEY] = finish(graphnetz, int(exitstatus))


def pytest_terminal_summary(terminalreporter: Any, exitstatus: int,
                            config: pytest.Config) -> None:
    for title, lines in config.stash.get(SECTIONS_KEY, []):
        if title is not None:
            terminalreporter.write_sep("=", title)
        for line in lines:
            terminalreporter.write_line(line)


__all__ = ["pytest_addoption", "pytest_collection_modifyitems", "pytest_configure",
           "pytest_report_header", "pytest_runtest_call", "pytest_sessionfinish",
           "pytest_terminal_summary"]
