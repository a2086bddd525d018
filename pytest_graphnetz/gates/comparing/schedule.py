"""What the gates ask of adaptive seeds (``--graphnetz-seeds=MIN..MAX``): the :class:`Schedule`
that trains a report's further looks, and :func:`split_schedule`, the one place where what a
gate was given is taken apart into the report it judges and that schedule (None: fixed seeds).

:class:`~.adaptive.AdaptiveSchedule` is the one implementation; the gates sit
below :mod:`.adaptive`, hence a protocol. Only the not-worse gate is
sequential; the other gates, and refreshes, ``complete`` the report to MAX seeds.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Protocol, runtime_checkable

from pytest_graphnetz.report import BenchmarkReport


class Schedule(Protocol):
    """The further seeds of one adaptive run: ``planned_seeds`` (MAX of them, in the order
    they train; the report given to the gate holds the first ``min_seeds``), and the runner
    behind :meth:`extend`, whose every call is kept in ``extensions``."""

    planned_seeds: tuple[int, ...]
    min_seeds: int
    extensions: list[BenchmarkReport]

    @property
    def max_seeds(self) -> int: ...

    @property
    def seeds_option(self) -> str: ...

    def extend(self, report: BenchmarkReport, task: str, models: Sequence[str],
               seeds: Sequence[int]) -> BenchmarkReport: ...

    def complete(self, report: BenchmarkReport) -> BenchmarkReport: ...

    def decided(self, report: BenchmarkReport, since: int = 0) -> list[BenchmarkReport]: ...


@runtime_checkable
class Scheduled(Protocol):
    """A report that comes with the schedule of its further looks
    (:class:`~.adaptive.AdaptiveReport`, what ``run_adaptive`` and the
    ``graphnetz_run`` fixture return with adaptive seeds)."""

    schedule: Schedule


def split_schedule(given: BenchmarkReport) -> tuple[BenchmarkReport, Schedule | None]:
    """The report a gate judges (the one it was given: every view of it sees the first look)
    and the schedule that trains its further looks (None: a report of fixed seeds)."""
    if isinstance(given, Scheduled):
        return given, given.schedule
    return given, None
