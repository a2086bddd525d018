"""CPU seconds per test: a pytest plugin for finding what makes the suite slow on a busy machine.

``--durations`` reports wall seconds, which on a shared machine measure the other users as much
as the test. This plugin adds, per test (setup, call and teardown), the CPU seconds of the test
process and of the child processes it waited for (pytester subprocesses, process pools, a Dask
cluster once it is closed): the estimate of the test's wall time on idle cores, since training
runs one torch thread per triple. Pool workers kept alive past the test are not counted there.

    PYTHONPATH=.:benchmarks .venv/bin/python -m pytest -p cpu_per_test -n 0 tests/cover/test_cli.py

The slowest 15 tests are printed at the end of the session (``--cpu-per-test=N`` for more).
"""

from __future__ import annotations

import resource
import time
from collections.abc import Generator

import pytest

_KEY = pytest.StashKey[list[tuple[float, float, str]]]()


def pytest_addoption(parser: pytest.Parser) -> None:
    parser.addoption("--cpu-per-test", type=int, default=15, metavar="N",
                     help="how many of the most CPU-hungry tests to list (default 15)")


def pytest_configure(config: pytest.Config) -> None:
    config.stash[_KEY] = []


def _cpu_seconds() -> float:
    own = resource.getrusage(resource.RUSAGE_SELF)
    children = resource.getrusage(resource.RUSAGE_CHILDREN)
    return own.ru_utime + own.ru_stime + children.ru_utime + children.ru_stime


@pytest.hookimpl(wrapper=True)
def pytest_runtest_protocol(item: pytest.Item, nextitem: pytest.Item | None
                            ) -> Generator[None, object, object]:
    cpu, wall = _cpu_seconds(), time.perf_counter()
    try:
        return (yield)
    finally:
        item.config.stash[_KEY].append(
            (_cpu_seconds() - cpu, time.perf_counter() - wall, item.nodeid))


def pytest_terminal_summary(terminalreporter: pytest.TerminalReporter,
                            config: pytest.Config) -> None:
    rows = sorted(config.stash[_KEY], reverse=True)[:config.getoption("cpu_per_test")]
    if not rows:  # an xdist controller runs no test itself: use -n 0
        return
    terminalreporter.write_sep("=", "CPU seconds per test (process + waited-for children)")
    for cpu, wall, nodeid in rows:
        terminalreporter.write_line(f"{cpu:8.1f} cpu {wall:8.1f} wall  {nodeid}")
