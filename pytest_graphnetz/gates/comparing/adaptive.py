"""Adaptive seeds: the schedule only, which seeds to train next for the open cells. Nothing
here decides.

:func:`run_adaptive` trains the first look (``min_seeds`` seeds) and returns an
:class:`AdaptiveReport`: that first look's report (a plain value: every view sees its seeds)
with its :class:`AdaptiveSchedule`, the planned seeds and the runner that trains more.
``assert_not_worse`` given such a report takes the two apart
(:func:`~pytest_graphnetz.gates.comparing.schedule.split_schedule`), decides each cell on the one
decision path of :mod:`pytest_graphnetz.gates` with the group-sequential design of
:mod:`pytest_graphnetz.stats.sequential`, and asks :meth:`AdaptiveSchedule.extend` for the next
seeds of the cells still open. Extended seeds are ordinary triples: they go through
``run_benchmark`` with the same device, workers, executor and cache. Other gates, and baseline
refreshes, complete the report to all MAX seeds first (:meth:`AdaptiveSchedule.complete`).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from functools import reduce
from typing import TYPE_CHECKING, Any

from pytest_graphnetz.base.seedspec import check_adaptive
from pytest_graphnetz.report import BenchmarkReport

if TYPE_CHECKING:
    from pytest_graphnetz.runner.tasks.base import Task

Runner = Callable[..., BenchmarkReport]


@dataclass
class AdaptiveSchedule:
    """The further looks of one adaptive run.

    ``planned_seeds``: the MAX seeds in the order they are trained (the first ``min_seeds``
    are the first look's); ``runner(tasks, models, seeds=...)`` trains triples of ``tasks``
    and ``models`` (run_benchmark with the run's arguments); ``extensions`` keeps what each
    :meth:`extend` call returned."""

    planned_seeds: tuple[int, ...]
    min_seeds: int
    runner: Runner
    tasks: Mapping[str, Task]
    models: Mapping[str, Callable[..., Any]]
    extensions: list[BenchmarkReport] = field(default_factory=list)

    @property
    def max_seeds(self) -> int:
        return len(self.planned_seeds)

    @property
    def seeds_option(self) -> str:
        """The ``--graphnetz-seeds`` value of this schedule (for the commands we print)."""
        if self.planned_seeds == tuple(range(self.max_seeds)):
            return f"{self.min_seeds}..{self.max_seeds}"
        return f"{self.min_seeds}..{self.max_seeds} (seeds {list(self.planned_seeds)})"

    def extend(self, report: BenchmarkReport, task: str, models: Sequence[str],
               seeds: Sequence[int]) -> BenchmarkReport:
        """Train ``models`` on ``task`` at ``seeds`` (cached triples come from the cache), read
        as ``report`` (the first look) is read: a user may have set ``best_val``."""
        more = self.runner({task: self.tasks[task]}, {m: self.models[m] for m in models},
                           seeds=list(seeds))
        for name, value in report.settings().items():
            setattr(more, name, value)
        self.extensions.append(more)
        return more

    def decided(self, report: BenchmarkReport, since: int = 0) -> list[BenchmarkReport]:
        """Dense reports of every seed each cell of ``report`` (the first look) holds after the
        :meth:`extend` calls from the ``since``-th on (one gate's): ``[shared, *further]``.

        ``shared`` holds every cell at the seeds all cells hold (``report`` itself when that is
        the first look); each of ``further`` holds, for one task, the cells that hold more
        seeds than that, at their seeds (planned order), one report per distinct seed list. A
        gate whose cells all stopped at the same seeds gives ``[shared]`` alone.
        """
        held: dict[tuple[str, str], list[BenchmarkReport]] = {
            (t, m): [report] for t in report.tasks for m in report.models}
        for more in self.extensions[since:]:
            for t in more.tasks:
                for m in more.models:
                    held[(t, m)].append(more)
        if all(len(parts) == 1 for parts in held.values()):
            return [report]
        cells = {}
        for (t, m), parts in held.items():
            cell = reduce(BenchmarkReport.merge, [r.subset(tasks=[t], models=[m]) for r in parts])
            cells[(t, m)] = cell.subset(seeds=[s for s in self.planned_seeds if s in cell.seeds])
        shared = tuple(s for s in self.planned_seeds if all(s in c.seeds for c in cells.values()))
        groups: dict[tuple[str, tuple[int, ...]], list[str]] = {}
        for (t, m), cell in cells.items():
            if cell.seeds != shared:
                groups.setdefault((t, cell.seeds), []).append(m)

        def grid(tasks: Sequence[str], models: Sequence[str],
                 seeds: Sequence[int]) -> BenchmarkReport:
            # merge() needs a full grid at every step: models within a task, then tasks.
            return reduce(BenchmarkReport.merge, [
                reduce(BenchmarkReport.merge, [cells[(t, m)].subset(seeds=seeds) for m in models])
                for t in tasks])

        first = report if shared == report.seeds else grid(report.tasks, report.models, shared)
        return [first, *(grid([t], models, seeds) for (t, seeds), models in groups.items())]

    def complete(self, report: BenchmarkReport) -> BenchmarkReport:
        """Every cell of ``report`` (the first look) at all MAX planned seeds (only the missing
        triples train)."""
        missing = [s for s in self.planned_seeds if s not in report.seeds]
        if not missing:
            return report.subset()
        # merge() needs a full grid at every step: each task's seeds first, then the tasks.
        return reduce(BenchmarkReport.merge, [
            BenchmarkReport.merge(report.subset(tasks=[t]),
                                  self.extend(report, t, report.models, missing))
            for t in report.tasks]).subset(seeds=self.planned_seeds)


class AdaptiveReport(BenchmarkReport):
    """What :func:`run_adaptive` returns (and the ``graphnetz_run`` fixture with adaptive
    seeds): the first look's report, a :class:`BenchmarkReport` like any other, that comes with
    the ``schedule`` of its further looks for the gates to train."""

    def __init__(self, report: BenchmarkReport, schedule: AdaptiveSchedule) -> None:
        super().__init__(tasks=report.tasks, models=report.models, seeds=report.seeds,
                         metrics=report.metrics, histories=report.histories,
                         protocol=report.protocol, fingerprints=report.fingerprints,
                         settings=report.settings())
        self.schedule = schedule


def run_adaptive(tasks: Any, models: Mapping[str, Callable], *, seeds: Any = range(20),
                 min_seeds: int = 5, runner: Runner | None = None,
                 **kwargs: Any) -> AdaptiveReport:
    """The first look of an adaptive schedule: ``models`` on ``tasks`` at the first
    ``min_seeds`` of ``seeds`` (MAX = ``len(seeds)``; looks double from ``min_seeds``).

    ``kwargs`` go to :func:`~pytest_graphnetz.run_benchmark` (device, workers, executor,
    cache_dir, ...) for the first look and for every seed a gate adds later; ``runner``
    replaces ``run_benchmark`` (the pytest plugin passes its session's). The looks are the
    schedule's (:func:`check_adaptive`): MIN and its doublings up to MAX. Pass the result to
    :func:`~pytest_graphnetz.assert_not_worse`, which trains more seeds only where needed.
    """
    from pytest_graphnetz.runner.tasks import resolve_tasks

    if runner is None:
        from pytest_graphnetz.runner import run_benchmark

        runner = run_benchmark
    planned = [int(s) for s in seeds]
    if len(set(planned)) != len(planned):
        raise ValueError(f"`seeds` has duplicates: {planned}")
    check_adaptive(min_seeds, len(planned))

    def run(task_map: Mapping[str, Task], factories: Mapping[str, Callable[..., Any]], *,
            seeds: list[int]) -> BenchmarkReport:
        return runner(task_map, factories, seeds=seeds, **kwargs)

    task_map = resolve_tasks(tasks)
    first = run(task_map, models, seeds=planned[:min_seeds])
    return AdaptiveReport(first, AdaptiveSchedule(tuple(planned), int(min_seeds), run, task_map,
                                                  dict(models)))
