"""Comparing a candidate report with a baseline report, cell by cell, without failing:
:func:`compare_reports` (fixed seeds, every gate) and :func:`compare_schedule` (adaptive seeds,
the not-worse gate), both pairing through :mod:`pytest_graphnetz.pairing` and deciding
not-worse cells on the one decision path (:func:`~.cells.decide_cells`)."""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import replace
from typing import Any, Protocol, runtime_checkable

from .. import stats
from ..pairing import (
    changed_model_notes,
    check_cells,
    check_metrics,
    environment_notes,
    refuse_changed_data,
    shared_seeds,
    unpaired_notes,
)
from ..report import BenchmarkReport
from ..stats.sequential import sequential_design
from ..verdicts import (
    CHANGED_MODEL_NOTE,
    CellVerdict,
    GateRefusal,
    describe_values,
    failed_verdict,
    verdict_name,
)
from .cells import _Cell, _fold_cell, _min_effect, _min_effect_error, decide_cells
from .chain import ChainLook, ChainRecord, ChainStore, chain_key, plan_chain, side_digest
from .suite import _suite_family, _SuiteRow, suite_rows

# "paired" is the default spelling of the paired t-test; every test here pairs by seed.
TESTS = {"paired": "paired-t", "paired-t": "paired-t", "wilcoxon": "wilcoxon",
          "permutation": "permutation", "bootstrap": "bootstrap"}
@runtime_checkable
class Schedule(Protocol):
    """A report that can train more seeds, look by look: adaptive seeds
    (:class:`~pytest_graphnetz.adaptive.AdaptiveReport` is the one implementation). Only the
    not-worse gate is sequential; the other gates, and refreshes, ``complete`` it to MAX."""

    planned_seeds: tuple[int, ...]
    min_seeds: int
    gamma: float
    extensions: list[BenchmarkReport]

    @property
    def max_seeds(self) -> int: ...

    @property
    def seeds_option(self) -> str: ...

    def extend(self, task: str, models: Sequence[str],
               seeds: Sequence[int]) -> BenchmarkReport: ...

    def complete(self) -> BenchmarkReport: ...

    def decided(self, since: int = 0) -> list[BenchmarkReport]: ...



def compare_reports(report: BenchmarkReport, baseline: BenchmarkReport, *, gate: str = "not_worse",
                    test: str = "paired-t", margin: float = 0.0, min_effect: float | None = None,
                    alpha: float = 0.05, strict: bool = False, source: str = "the baseline",
                    rng: Any = None, refresh_command: str | None = None, suite: bool = False,
                    suite_min_effect: float | None = None, rerun_safe: bool = True,
                    chains: ChainStore | None = None) -> list[CellVerdict]:
    """Every candidate cell of ``report`` against ``baseline`` (``not_worse``: Holm across the
    tested cells, on the one decision path as a single look, :func:`decide_cells`; ``suite``:
    the suite rows after the cells, see :func:`assert_not_worse`); raises
    nothing but :class:`GateRefusal` / :class:`BaselineMissingError` (the gates decide what
    fails), and ``ValueError`` for a ``min_effect`` not above ``margin``.
    ``min_effect`` None: each task's :func:`default_min_effect`.

    ``rerun_safe`` (not-worse, paired t, cells without folds, no suite row): each cell is a look
    of its rerun chain (:mod:`.chain`): a first run at ρα, or, with ``chains`` (the test's
    record store) holding an INCONCLUSIVE earlier run of the same cell on seeds these contain,
    the chain's next look. False: one look at ``alpha``, as before rerun-safe seeds.
    """
    __tracebackhide__ = True
    if gate == "not_worse" and min_effect is not None and not min_effect > margin:
        raise ValueError(_min_effect_error(min_effect, margin))
    if suite and suite_min_effect is not None and not suite_min_effect > margin:
        raise ValueError(_min_effect_error(suite_min_effect, margin).replace(
            "`min_effect`", "`suite_min_effect`"))
    check_cells(report, baseline, source)
    seeds = shared_seeds(report, baseline, source)
    check_metrics(report, baseline, source)
    refuse_changed_data(report, baseline, seeds, source)
    notes = environment_notes(report, baseline) + unpaired_notes(report, baseline, seeds,
                                                                    refresh_command)
    cand_idx = [report.seeds.index(s) for s in seeds]
    base_idx = [baseline.seeds.index(s) for s in seeds]
    if gate == "not_worse":
        from ..stats.sequential import sequential_design

        design = sequential_design(len(seeds), len(seeds), alpha=alpha)   # one look
        cells = []
        for task in report.tasks:
            spec = report.metric(task)
            for model in report.models:
                one = _Cell(
                    task, model, spec, list(seeds), design,
                    dict(zip(seeds, report.values(task, model)[cand_idx].tolist(), strict=True)),
                    dict(zip(seeds, baseline.values(task, model)[base_idx].tolist(),
                             strict=True)),
                    _min_effect(spec, margin, min_effect), report.folds(task))
                if rerun_safe and not suite and test == "paired-t" and one.folds is None:
                    _join_chain(one, report, baseline, chains, margin=margin, alpha=alpha)
                cells.append(one)
        rows: list[_SuiteRow] = []
        family = None
        if suite:
            rows, suite_notes = suite_rows(report, baseline, seeds, margin=margin,
                                           min_effect=(suite_min_effect if suite_min_effect
                                                       is not None else min_effect),
                                           alpha=alpha)
            notes = (*notes, *suite_notes)
            if rows:
                family = _suite_family(rows, alpha)
        decide_cells(cells, test=test, margin=margin, alpha=alpha, rng=rng, family=family)
        if chains is not None:
            for c in cells:
                _record_chain(c, report, baseline, chains)
        return [*(c.verdict_of(report, baseline, strict=strict, notes=notes,
                               refresh_command=refresh_command) for c in cells),
                *(r.verdict_of(report, baseline, strict=strict, notes=notes,
                               refresh_command=refresh_command) for r in rows)]
    specs, tested, described = [], [], []
    for task in report.tasks:
        spec = report.metric(task)
        for model in report.models:
            specs.append((task, model, spec))
            cell: dict[str, Any] = {"candidate": report.values(task, model)[cand_idx],
                    "baseline": baseline.values(task, model)[base_idx],
                    "higher_is_better": spec.higher_is_better,
                    "label": f"{task}/{model}", "seeds": seeds}
            described.append(cell)
            tested.append(_fold_cell(cell, report.folds(task), test))
    # better / equivalent: intersection-union tests, every cell at alpha (no family)
    comparisons = [stats.compare(**{"test": test, **cell}, kind=gate, margin=margin,
                                 alpha=alpha, rng=rng) for cell in tested]
    verdicts = []
    for (task, model, spec), cell, comp in zip(specs, described, comparisons, strict=True):
        if report.folds(task) is not None:
            from ..stats.heldout import FOLD_NOTE

            comp = replace(comp, notes=(*comp.notes, FOLD_NOTE.format(
                task=task, k=report.folds(task), test=test)))
        name = verdict_name(comp.verdict)
        changed = changed_model_notes(report, baseline, model, seeds) if name == "IDENTICAL" else ()
        verdicts.append(CellVerdict(
            task, model, spec.name, spec.higher_is_better, gate, comp,
            describe_values(cell["baseline"], baseline, metric=spec.name),
            describe_values(cell["candidate"], report, metric=spec.name),
            tuple(seeds), failed_verdict(gate, name, strict), (*notes, *changed),
            tuple(baseline.seeds), refresh_command,
            table_note=CHANGED_MODEL_NOTE if changed else ""))
    return verdicts



def compare_schedule(report: BenchmarkReport, baseline: BenchmarkReport, *, margin: float = 0.0,
                     min_effect: float | None = None, alpha: float = 0.05,
                     strict: bool = False, source: str = "the baseline", rng: Any = None,
                     refresh_command: str | None = None) -> list[CellVerdict]:
    """The not-worse verdicts of an adaptive ``report`` against ``baseline`` (the paired t
    test), each cell decided look by look on the one decision path (:func:`decide_cells`),
    training its next seeds only while open; what :func:`compare_reports` is for fixed seeds.

    Per cell the seeds are the planned seeds the baseline has (finite), in planned order; a
    baseline with fewer than MAX of them cuts the cell's schedule there (a note names the
    refresh that completes it, and the table's Note says the cell was capped).
    ``report`` is a :class:`Schedule` (an adaptive report).
    """
    __tracebackhide__ = True
    if not isinstance(report, Schedule):
        raise TypeError(f"compare_schedule needs an adaptive report (--graphnetz-seeds=MIN..MAX),"
                        f" got {type(report).__name__}; use compare_reports for fixed seeds")
    if min_effect is not None and not min_effect > margin:
        raise ValueError(_min_effect_error(min_effect, margin))
    check_cells(report, baseline, source)
    check_metrics(report, baseline, source)
    cells = []
    for task in report.tasks:
        spec = report.metric(task)
        for model in report.models:
            held = {s: float(v) for s, v in zip(baseline.seeds, baseline.values(task, model),
                                                strict=True)}
            seeds = [s for s in report.planned_seeds if math.isfinite(held.get(s, math.nan))]
            if len(seeds) < 2:
                raise GateRefusal(
                    f"{task}/{model}: {source} pairs {len(seeds)} of the planned seeds "
                    f"{list(report.planned_seeds)} (it has seeds {list(baseline.seeds)}, "
                    "diverged ones excluded); a paired test needs at least 2. Refresh the "
                    f"baseline with --graphnetz-seeds={report.seeds_option}.")
            design = sequential_design(min(report.min_seeds, len(seeds)), len(seeds),
                                       alpha=alpha, gamma=report.gamma)
            notes: tuple[str, ...] = ()
            capped = ""
            if len(seeds) < report.max_seeds:
                how = (f"`{refresh_command} --graphnetz-seeds={report.seeds_option}`"
                       if refresh_command else
                       f"a refresh with --graphnetz-seeds={report.seeds_option}")
                notes = (f"{source} pairs {len(seeds)} of the {report.max_seeds} planned seeds, "
                         f"so this cell's looks are {design.looks}; {how} completes it",)
                capped = (f"capped at {len(seeds)} seeds: the baseline pairs {len(seeds)} of "
                          f"the {report.max_seeds} planned")
            values = {s: float(v) for s, v in zip(report.seeds, report.values(task, model),
                                                   strict=True)}
            cells.append(_Cell(task, model, spec, seeds, design, values, held,
                               _min_effect(spec, margin, min_effect), report.folds(task), notes,
                               capped))

    def train(open_cells: Sequence[_Cell]) -> None:
        _train_look(report, baseline, open_cells, source)

    decide_cells(cells, test="paired-t", margin=margin, alpha=alpha, rng=rng, train=train)
    env = environment_notes(report, baseline)
    return [c.verdict_of(report, baseline, strict=strict, notes=env,
                         refresh_command=refresh_command, schedule=report) for c in cells]


def _train_look(report: Any, base: BenchmarkReport, cells: Sequence[_Cell], source: str) -> None:
    """The pairing of one look of an adaptive schedule: train each open cell's seeds up to its
    current look (one runner call per task and seed list), then refuse a task whose data or
    split differs from the baseline's at any seed of this look, the first look included."""
    groups: dict[tuple[str, tuple[int, ...]], list[_Cell]] = {}
    for c in cells:
        need = tuple(s for s in c.look_seeds if s not in c.candidate)
        if need:
            groups.setdefault((c.task, need), []).append(c)
    for (task, seeds), group in groups.items():
        more = report.extend(task, [c.model for c in group], seeds)
        for c in group:
            c.candidate.update(zip(more.seeds, (float(v) for v in more.values(task, c.model)),
                                   strict=True))
            c.sources.update(dict.fromkeys(more.seeds, more))
    checked: dict[tuple[int, str], set[int]] = {}
    for c in cells:
        for s in c.look_seeds:
            checked.setdefault((id(c.sources.get(s, report)), c.task), set()).add(s)
    for c in cells:   # one refusal per (report, task), on every seed of the look
        for s in c.look_seeds:
            src = c.sources.get(s, report)
            key = (id(src), c.task)
            if key in checked:
                refuse_changed_data(src.subset(tasks=[c.task]), base.subset(tasks=[c.task]),
                                    sorted(checked.pop(key)), source)



def _digests(report: BenchmarkReport, baseline: BenchmarkReport, cell: _Cell,
             seeds: Sequence[int]) -> tuple[str, str]:
    """Each side of ``cell`` at ``seeds``, as a chain record keeps it (:func:`side_digest`)."""
    def prints(r: BenchmarkReport) -> dict[int, Any]:
        model = r.fingerprints.get("model", {}).get(cell.model, {})
        return {s: [model.get(s), r.data_fingerprint(cell.task, s)] for s in seeds}

    return (side_digest(cell.candidate, seeds, prints(report)),
            side_digest(cell.baseline, seeds, prints(baseline)))


def _join_chain(cell: _Cell, report: BenchmarkReport, baseline: BenchmarkReport,
                chains: ChainStore | None, *, margin: float, alpha: float) -> None:
    """Give ``cell`` its rerun chain's look and design (a first run without ``chains``)."""
    from ..stats.rerun import DEFAULT_RHO, rerun_design

    if chains is None:
        look = ChainLook("", tuple(cell.seeds), (len(cell.seeds),), ())
    else:
        key = chain_key(chains.test, cell.task, cell.model, cell.spec.name,
                        cell.spec.higher_is_better, stat_test="paired-t", margin=margin,
                        min_effect=cell.min_effect, alpha=alpha, rho=DEFAULT_RHO)
        cand, base = _digests(report, baseline, cell, cell.seeds)
        look = plan_chain(chains, key, cell.seeds, cand, base,
                          lambda seeds: _digests(report, baseline, cell, seeds))
    cell.seeds = list(look.seeds)
    cell.chain = look
    cell.design = rerun_design(look.looks[:-1], look.looks[-1], alpha=alpha, rho=DEFAULT_RHO)


def _record_chain(cell: _Cell, report: BenchmarkReport, baseline: BenchmarkReport,
                  chains: ChainStore) -> None:
    """After the decision: the cell's chain as it now stands (an IDENTICAL or untested cell
    leaves no record: it spent nothing)."""
    look = cell.chain
    if look is None or not look.key or not cell.tested:
        return
    seeds = cell.seeds[:cell.design.looks[-1]]
    cand, base = _digests(report, baseline, cell, seeds)
    chains.write(look.key, ChainRecord(tuple(cell.design.looks),
                                       (*look.prior, verdict_name(cell.verdict)),
                                       tuple(seeds), cand, base))
