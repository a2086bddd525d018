"""Adaptive seeds: a report that a gate extends through the runner, one look at a time.

:func:`run_adaptive` trains the first look (``min_seeds`` seeds) and returns an
:class:`AdaptiveReport`. ``assert_not_worse`` given such a report decides each cell with the
group-sequential design of :mod:`pytest_graphnetz.stats.sequential`: a cell stops at the first
look where REGRESSED, NOT WORSE or BETTER crosses its boundary (IDENTICAL at the first look),
and only the cells still open train their next seeds, up to MAX; what is open at MAX is
INCONCLUSIVE. Extended seeds are ordinary triples: they go through ``run_benchmark`` with the
same device, workers, executor and cache. Other gates, and baseline refreshes, complete the
report to all MAX seeds first (:meth:`AdaptiveReport.complete`).

The statistics stay pure (they say how many more seeds a cell needs); this module trains them.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, replace
from functools import reduce
from typing import Any

import numpy as np

from .report import BenchmarkReport
from .stats.sequential import (
    DEFAULT_GAMMA,
    SequentialDecision,
    schedule,
    sequential_decide,
    sequential_design,
    sequential_holm,
)
from .text import seed_trainings

Runner = Callable[..., BenchmarkReport]


class AdaptiveReport(BenchmarkReport):
    """A :class:`BenchmarkReport` holding the first look's seeds of an adaptive schedule.

    ``planned_seeds``: the MAX seeds in the order they are trained (the first ``min_seeds`` are
    in this report); ``extend(task, models, seeds)`` trains more triples through the runner the
    report came from, and ``extensions`` keeps what each call returned. Every view (summary,
    pairwise, JSON) sees only the first look's seeds; :meth:`decided` assembles what the cells
    hold after a gate's extensions.
    """

    def __init__(self, report: BenchmarkReport, *, planned_seeds: Sequence[int], min_seeds: int,
                 gamma: float, runner: Runner, task_map: Mapping[str, Any],
                 models: Mapping[str, Callable]) -> None:
        super().__init__(tasks=report.tasks, models=report.models, seeds=report.seeds,
                         metrics=report.metrics, histories=report.histories,
                         protocol=report.protocol, fingerprints=report.fingerprints,
                         ci_method=report.ci_method, confidence_level=report.confidence_level,
                         epoch_selection=report.epoch_selection)
        self.planned_seeds = tuple(int(s) for s in planned_seeds)
        self.min_seeds = int(min_seeds)
        self.gamma = float(gamma)
        self._runner = runner
        self._task_map = dict(task_map)
        self._factories = dict(models)
        self.extensions: list[BenchmarkReport] = []

    @property
    def max_seeds(self) -> int:
        return len(self.planned_seeds)

    @property
    def seeds_option(self) -> str:
        """The ``--graphnetz-seeds`` value of this schedule (for the commands we print)."""
        if self.planned_seeds == tuple(range(self.max_seeds)):
            return f"{self.min_seeds}..{self.max_seeds}"
        return f"{self.min_seeds}..{self.max_seeds} (seeds {list(self.planned_seeds)})"

    def extend(self, task: str, models: Sequence[str], seeds: Sequence[int]) -> BenchmarkReport:
        """Train ``models`` on ``task`` at ``seeds`` (cached triples come from the cache)."""
        more = self._runner({task: self._task_map[task]},
                            {m: self._factories[m] for m in models}, seeds=list(seeds))
        # Read the new seeds as this report's are read (a user may have set best_val).
        for name, value in self._settings().items():
            setattr(more, name, value)
        self.extensions.append(more)
        return more

    def decided(self, since: int = 0) -> list[BenchmarkReport]:
        """Dense reports of every seed each cell holds after the :meth:`extend` calls from the
        ``since``-th on (one gate's): ``[shared, *further]``.

        ``shared`` holds every cell at the seeds all cells hold (this report itself when that is
        the first look); each of ``further`` holds, for one task, the cells that hold more
        seeds than that, at their seeds (planned order), one report per distinct seed list. A
        gate whose cells all stopped at the same seeds gives ``[shared]`` alone.
        """
        held: dict[tuple[str, str], list[BenchmarkReport]] = {
            (t, m): [self] for t in self.tasks for m in self.models}
        for more in self.extensions[since:]:
            for t in more.tasks:
                for m in more.models:
                    held[(t, m)].append(more)
        if all(len(parts) == 1 for parts in held.values()):
            return [self]
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

        first = self if shared == self.seeds else grid(self.tasks, self.models, shared)
        return [first, *(grid([t], models, seeds) for (t, seeds), models in groups.items())]

    def complete(self) -> BenchmarkReport:
        """Every cell at all MAX planned seeds (only the missing triples train)."""
        missing = [s for s in self.planned_seeds if s not in self.seeds]
        if not missing:
            return self.subset()
        # merge() needs a full grid at every step: each task's seeds first, then the tasks.
        return reduce(BenchmarkReport.merge, [
            BenchmarkReport.merge(self.subset(tasks=[t]), self.extend(t, self.models, missing))
            for t in self.tasks]).subset(seeds=self.planned_seeds)


def run_adaptive(tasks: Any, models: Mapping[str, Callable], *, seeds: Any = range(20),
                 min_seeds: int = 5, gamma: float = DEFAULT_GAMMA, runner: Runner | None = None,
                 **kwargs: Any) -> AdaptiveReport:
    """The first look of an adaptive schedule: ``models`` on ``tasks`` at the first
    ``min_seeds`` of ``seeds`` (MAX = ``len(seeds)``; looks double from ``min_seeds``).

    ``kwargs`` go to :func:`~pytest_graphnetz.run_benchmark` (device, workers, executor,
    cache_dir, ...) for the first look and for every seed a gate adds later; ``runner``
    replaces ``run_benchmark`` (the pytest plugin passes its session's). ``gamma``: the
    Hwang–Shih–DeCani spending parameter of the design. Pass the result to
    :func:`~pytest_graphnetz.assert_not_worse`, which trains more seeds only where needed.
    """
    from .tasks import resolve_tasks

    if runner is None:
        from .runner import run_benchmark as runner
    planned = [int(s) for s in seeds]
    if len(set(planned)) != len(planned):
        raise ValueError(f"`seeds` has duplicates: {planned}")
    schedule(min_seeds, len(planned))  # validates MIN..MAX
    sequential_design(min_seeds, len(planned), gamma=gamma)  # validates gamma, warms the cache
    def run(task_map: Any, factories: Mapping[str, Callable], *, seeds: list[int]) -> Any:
        return runner(task_map, factories, seeds=seeds, **kwargs)

    task_map = resolve_tasks(tasks)
    first = run(task_map, models, seeds=planned[:min_seeds])
    return AdaptiveReport(first, planned_seeds=planned, min_seeds=min_seeds, gamma=gamma,
                          runner=run, task_map=task_map, models=models)


@dataclass(frozen=True)
class Stop:
    """Where an adaptive cell stopped: its last :class:`SequentialDecision` (look, n, looks,
    boundary) and the schedule's MAX, which a baseline with fewer seeds may have cut short."""

    decision: SequentialDecision | None  # None: decided without a test (diverged)
    n: int
    min_seeds: int
    max_seeds: int        # this cell's last look (below planned_max when the baseline is short)
    planned_max: int
    look: int
    n_looks: int

    @property
    def saved(self) -> int:
        return self.planned_max - self.n

    def describe(self) -> str:
        text = (f"adaptive seeds: stopped at look {self.look} of {self.n_looks} ({self.n}/"
                f"{self.planned_max} seeds), {seed_trainings(self.saved)} saved against fixed "
                f"{self.planned_max}")
        d = self.decision
        if d is not None and (d.verdict is None or d.verdict.value != "IDENTICAL"):
            text += (f"; boundary |t| >= {d.critical:.3f} at this look"
                     + (f" (REGRESSED {d.critical_regressed:.3f} at Holm level "
                        f"{d.regressed_alpha:.3g})" if d.critical_regressed != d.critical else "")
                     + f"; the CI is the repeated {1 - 2 * d.alpha:.0%} interval of this look")
        return text


def sequential_gate(report: AdaptiveReport, baseline: BenchmarkReport, *, margin: float,
                    min_effect: float | None, alpha: float, strict: bool, source: str,
                    refresh_command: str | None) -> list[Any]:
    """``assert_not_worse``'s verdicts for an adaptive ``report``: every cell's schedule run
    against ``baseline``, training the open cells' next seeds between looks.

    Per cell the seeds are the planned seeds the baseline has (finite), in planned order; a
    baseline with fewer than MAX of them cuts the cell's schedule there (a note names the
    refresh that completes it). REGRESSED is Holm-corrected across the cells tested
    (:func:`~pytest_graphnetz.stats.sequential.sequential_holm`); NOT WORSE and BETTER are
    decided at ``alpha``. Returns one :class:`~pytest_graphnetz.gates.CellVerdict` per cell,
    whose ``stop`` says where it stopped.
    """
    from . import gates

    gates._check_cells(report, baseline, source)
    gates._check_metrics(report, baseline, source)
    cells = []
    for task in report.tasks:
        spec = report.metric(task)
        for model in report.models:
            base = {s: float(v) for s, v in zip(baseline.seeds, baseline.values(task, model),
                                                 strict=True)}
            seeds = [s for s in report.planned_seeds if math.isfinite(base.get(s, math.nan))]
            if len(seeds) < 2:
                raise gates.GateRefusal(
                    f"{task}/{model}: {source} pairs {len(seeds)} of the planned seeds "
                    f"{list(report.planned_seeds)} (it has seeds {list(baseline.seeds)}, "
                    "diverged ones excluded); a paired test needs at least 2. Refresh the "
                    f"baseline with --graphnetz-seeds={report.seeds_option}.")
            design = sequential_design(min(report.min_seeds, len(seeds)), len(seeds),
                                       alpha=alpha, gamma=report.gamma)
            note = ()
            if len(seeds) < report.max_seeds:
                command = (f"`{refresh_command} --graphnetz-seeds={report.seeds_option}`"
                           if refresh_command else
                           f"a refresh with --graphnetz-seeds={report.seeds_option}")
                note = (f"{source} pairs {len(seeds)} of the {report.max_seeds} planned seeds, "
                        f"so this cell's looks are {design.looks}; {command} completes it",)
            values = {s: float(v) for s, v in zip(report.seeds, report.values(task, model),
                                                   strict=True)}
            delta = (min_effect if min_effect is not None
                     else gates.default_min_effect(spec, margin))
            cells.append(_Cell(task, model, spec.name, spec.higher_is_better, seeds, design,
                               values, base, delta, note))
    while True:
        _train_missing(report, baseline, [c for c in cells if c.verdict is None], source)
        for c in cells:
            if c.verdict is None:
                _look(c, margin)
        family = [c for c in cells if c.tested]
        if family:
            rejected = sequential_holm([c.history for c in family], [c.design for c in family])
            for c, rej in zip(family, rejected, strict=True):
                if rej:
                    c.verdict = _verdict("REGRESSED")
        open_ = [c for c in cells if c.verdict is None]
        if not open_:
            break
        for c in open_:
            c.look += 1
    env = gates._environment_notes(report, baseline)
    return [_cell_verdict(c, report, baseline, margin, alpha, strict, env) for c in cells]


@dataclass
class _Cell:
    """One cell's state while its schedule runs."""

    task: str
    model: str
    metric: str
    higher_is_better: bool
    seeds: list[int]            # the seeds this cell can pair, in training order
    design: Any                 # its SequentialDesign (over len(seeds))
    values: dict[int, float]    # candidate value per trained seed
    base: dict[int, float]      # baseline value per seed
    min_effect: float | None    # δ: NOT WORSE's boundary (None: -margin, no natural scale)
    notes: tuple[str, ...] = ()
    look: int = 0               # index into design.looks of the current look
    history: tuple[float, ...] = ()
    decision: SequentialDecision | None = None
    verdict: Any = None         # stats.Verdict once stopped
    tested: bool = True         # in the Holm family (not IDENTICAL, not diverged)

    @property
    def n(self) -> int:
        return self.design.looks[self.look]

    def pairs(self) -> tuple[list[int], np.ndarray, np.ndarray]:
        seeds = self.seeds[:self.n]
        return (seeds, np.array([self.values[s] for s in seeds]),
                np.array([self.base[s] for s in seeds]))


def _train_missing(report: AdaptiveReport, baseline: BenchmarkReport, cells: Sequence[_Cell],
                   source: str) -> None:
    """Train each open cell's seeds up to its current look, one runner call per task and seed
    list (with the models that need exactly those seeds), and check their data fingerprints."""
    from . import gates

    groups: dict[tuple[str, tuple[int, ...]], list[_Cell]] = {}
    for c in cells:
        need = tuple(s for s in c.seeds[:c.n] if s not in c.values)
        if need:
            groups.setdefault((c.task, need), []).append(c)
    for (task, seeds), group in groups.items():
        more = report.extend(task, [c.model for c in group], seeds)
        gates._check_fingerprints(more, baseline.subset(tasks=[task]), list(seeds), source)
        for c in group:
            c.values.update(zip(more.seeds, (float(v) for v in more.values(task, c.model)),
                                strict=True))


def _look(c: _Cell, margin: float) -> None:
    _, cand, ref = c.pairs()
    if not np.all(np.isfinite(cand)):
        # A candidate that diverged where the baseline did not fails that seed: REGRESSED
        # without a test, outside the Holm family (as the fixed-seed gate decides it).
        c.verdict, c.tested = _verdict("REGRESSED"), False
        return
    d = (cand - ref) * (1.0 if c.higher_is_better else -1.0)
    c.decision = sequential_decide(d, c.design, margin=margin, min_effect=c.min_effect,
                                   label=f"{c.task}/{c.model}")
    c.history = (*c.history, c.decision.t_regressed)
    stopped = c.decision.verdict
    if stopped is not None and stopped.value == "IDENTICAL":
        c.tested = False
    # REGRESSED comes from Holm across the family; the other stops stand on their own.
    if stopped is not None and stopped.value != "REGRESSED":
        c.verdict = stopped


def _verdict(name: str) -> Any:
    from .stats import Verdict

    return Verdict(name)


def _cell_verdict(c: _Cell, report: AdaptiveReport, baseline: BenchmarkReport, margin: float,
                  alpha: float, strict: bool, env: tuple[str, ...]) -> Any:
    from . import gates, stats

    seeds, cand, ref = c.pairs()
    comp = stats.compare(cand, ref, higher_is_better=c.higher_is_better, kind="not_worse",
                         test="paired-t", margin=margin, min_effect=c.min_effect,
                         alpha=alpha, label=f"{c.task}/{c.model}", seeds=seeds)
    if c.decision is not None and comp.verdict is not stats.Verdict.IDENTICAL \
            and not comp.diverged_seeds:
        comp = replace(comp, verdict=c.verdict, ci=c.decision.ci, notes=(
            *comp.notes, f"p is the fixed-n p at {c.n} seeds; the verdict is the sequential "
            "boundary's"))
    stop = Stop(c.decision, c.n, report.min_seeds, c.design.looks[-1], report.max_seeds,
                c.look + 1, len(c.design.looks))
    name = gates._verdict_name(comp.verdict)
    failed = name not in gates._PASSES["not_worse"] or (strict and name == "INCONCLUSIVE")
    changed = (gates._changed_model(report, baseline, c.model, seeds) if name == "IDENTICAL"
               else ())
    return gates.CellVerdict(
        c.task, c.model, c.metric, c.higher_is_better, "not_worse", comp,
        gates._describe(ref, baseline, metric=c.metric),
        gates._describe(cand, report, metric=c.metric), tuple(seeds), failed,
        (*env, *c.notes, *changed), stop=stop,
        table_note=gates.CHANGED_MODEL_NOTE if changed else "")


def saved(verdicts: Sequence[Any]) -> tuple[int, int]:
    """Over the adaptive cells of ``verdicts``: seed-trainings used, and what fixed MAX would
    have used."""
    stops = [v.stop for v in verdicts if getattr(v, "stop", None) is not None]
    return sum(s.n for s in stops), sum(s.planned_max for s in stops)
