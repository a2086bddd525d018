"""The statistical views of a report: the summary table, the pairwise tables (seeds paired by
seed value, or models paired on test examples), the fold correction, and the cell statistics and
phrases that the tables (``export``) and figures (``plots``) share, so a figure and a table made
from one report cannot disagree about an interval or the words that name it.

Each function takes the report first; :class:`~pytest_graphnetz.report.BenchmarkReport`'s
methods of the same names call them.
"""

from __future__ import annotations

import math
from dataclasses import replace
from typing import TYPE_CHECKING, Any

import numpy as np

from pytest_graphnetz.base.text import fmt_level
from pytest_graphnetz.report.epochs import CLIPPED, clip_to_metric

if TYPE_CHECKING:
    from pytest_graphnetz.report.record import ReportRecord
    from pytest_graphnetz.stats import Pairwise, Summary, SummaryRow
    from pytest_graphnetz.stats.heldout import ExamplePairwise

_CI_NAMES = {"t": "Student-t", "bootstrap": "percentile bootstrap"}


def summary(report: ReportRecord, method: str | None = None, *, source: str = "seeds",
            confidence_level: float | None = None, epoch_selection: str | None = None,
            strict: bool = True, rng: Any = None) -> Summary:
    """Per (task, model): n_seeds, mean, std, sem, ci_low, ci_high (prints as a table).

    ``source`` picks the uncertainty the interval covers:

    - ``"seeds"`` (default): training randomness, the spread over seeds; ``method``
      (``"t"``/``"bootstrap"``) defaults to :attr:`ci_method`.
    - ``"test_set"``: the finite test set's sampling error with the trained models held
      fixed: Wilson for a proportion (accuracy), else a percentile bootstrap over test
      examples (``method="bootstrap"`` forces it for accuracy too).
    - ``"total"``: both, a two-level bootstrap (seeds, then test examples).

    The last two need per-example outcomes (:meth:`outcomes`; built-in trainers record
    them). A :class:`~pytest_graphnetz.stats.Summary` of frozen rows whose ``source`` and
    notes say what the intervals cover; ``mean``/``std``/``sem`` stay the seed statistics.
    ``n_seeds`` counts the finite seeds; diverged seeds are counted in ``n_diverged``.
    A t interval (``source="seeds"``) reaching beyond the range of a metric bounded in
    [0, 1] (accuracy, AUC...) is clipped to it, and the row's ``method`` says so
    (``"t, clipped to [0, 1]"``).
    """
    from pytest_graphnetz.stats.tables import summarize

    level = report.confidence_level if confidence_level is None else confidence_level
    X = report.to_array(epoch_selection, strict=strict)
    if source != "seeds":
        return _example_summary(report, X, source, method, level, epoch_selection, strict, rng)
    summary = summarize(
        X, tasks=report.tasks, models=report.models,
        metrics=[report.metrics[t].name for t in report.tasks],
        method=report.ci_method if method is None else method, confidence_level=level,
    )
    rows = [_clip_to_metric(row) for row in summary.rows]
    fold_tasks = [t for t in report.tasks if report.folds(t) is not None]
    if not fold_tasks:
        return replace(summary, rows=tuple(rows))
    # Fold scores share training data: no valid CI from their spread (Bengio & Grangier).
    rows = [replace(r, ci_low=r.mean - r.std, ci_high=r.mean + r.std,
                    method="fold spread: mean ± std, not a CI")
            if r.task in fold_tasks else r for r in rows]
    notes = tuple(f"task {t!r} is {report.folds(t)}-fold cross-validation: its row shows "
                  "mean ± std over folds, a description of fold variability, not a "
                  "confidence interval" for t in fold_tasks)
    return replace(summary, rows=tuple(rows), notes=notes)


def _example_summary(report: ReportRecord, X: np.ndarray, source: str, method: str | None,
                     level: float, epoch_selection: str | None, strict: bool,
                     rng: Any) -> Summary:
    from pytest_graphnetz.stats import SummaryRow, resolve_rng
    from pytest_graphnetz.stats.heldout import COVERS, SOURCES, example_interval
    from pytest_graphnetz.stats.intervals import describe_many
    from pytest_graphnetz.stats.tables import Summary

    if source not in SOURCES:
        raise ValueError(f"`source` must be one of {list(SOURCES)}, got {source!r}")
    gen = resolve_rng(rng)
    t_n, m_n, s_n = X.shape
    cells = describe_many(X.reshape(t_n * m_n, s_n), method="t", confidence_level=level)
    rows, methods = [], set()
    for (i, j), cell in zip(np.ndindex(t_n, m_n), cells, strict=True):
        t, m = report.tasks[i], report.models[j]
        found = report.outcomes(t, m, epoch_selection=epoch_selection, strict=strict)
        usable = [o for o, x in zip(found, X[i, j], strict=True)
                  if o is not None and math.isfinite(x)]
        missing = [s for s, o, x in zip(report.seeds, found, X[i, j], strict=True)
                   if o is None and math.isfinite(x)]
        if missing or not usable:
            raise ValueError(
                f"task {t!r} × model {m!r}: seed(s) {missing or list(report.seeds)} have no "
                f"per-example test outcomes, which source={source!r} needs. Built-in "
                "trainers record them; rerun without the cache "
                "(--graphnetz-no-cache) if the runs predate that, or return `outcomes` "
                "from a custom trainer (see pytest_graphnetz.runner.training). A baseline file "
                "keeps no outcomes: compare on a fresh run."
            )
        est = example_interval(usable, source=source, method=method,
                               shared_test_set=report.shares_test_set(t),
                               confidence_level=level, rng=gen)
        methods.add(est.method)
        rows.append(SummaryRow(
            task=t, model=m, metric=report.metrics[t].name, n_seeds=cell.n,
            n_diverged=cell.n_diverged, mean=cell.mean, std=cell.std, sem=cell.sem,
            ci_low=est.ci.low, ci_high=est.ci.high,
            method=f"{est.method}, n={est.n_examples}", source=source))
    notes = (f"intervals cover {COVERS[source]}",)
    rows = [_clip_to_metric(r) for r in rows]
    return Summary(rows=tuple(rows), method=" / ".join(sorted(methods)),
                   confidence_level=level, source=source, notes=notes)


def pairwise(report: ReportRecord, test: str = "paired-t", *,
             confidence_level: float | None = None, epoch_selection: str | None = None,
             strict: bool = True, rng: Any = None, untestable: str = "raise") -> Pairwise:
    """Per task, every model pair on seeds paired by seed value.

    A :class:`~pytest_graphnetz.stats.Pairwise` of frozen rows (mean paired difference, its
    CI, p, Holm-adjusted p within the task, effect size, n, whether the cells' intervals
    overlap). Oriented so that a positive difference means ``model_a`` is better, whatever
    the metric's direction. A pair with fewer than 2 seeds finite in both models raises;
    ``untestable="skip"`` gives it a row of NaN statistics and a note instead. Pairs on test
    examples instead of seeds are :func:`pairwise_examples`' job.
    """
    from pytest_graphnetz.stats.heldout import EXAMPLE_TESTS, fold_corrected_pairwise
    from pytest_graphnetz.stats.tables import PairwiseSpec, pairwise_table

    if test in EXAMPLE_TESTS:
        raise ValueError(f"test={test!r} pairs the models on test examples, not on seeds: use "
                         f"report.pairwise_examples(test={test!r})")
    X = report.to_array(epoch_selection, strict=strict)
    hib = [report.metrics[t].higher_is_better for t in report.tasks]
    spec = PairwiseSpec(test=test, confidence_level=(report.confidence_level
                                                     if confidence_level is None
                                                     else confidence_level),
                        ci_method=report.ci_method, untestable=untestable)
    table = pairwise_table(X, spec, tasks=report.tasks, models=report.models,
                           higher_is_better=hib, rng=rng, seeds=report.seeds)
    folds = [report.folds(t) for t in report.tasks]
    if not any(folds):
        return table
    return fold_corrected_pairwise(table, X, tasks=report.tasks, models=report.models,
                                   folds=folds, higher_is_better=hib)


def pairwise_examples(report: ReportRecord, test: str = "mcnemar", *,
                      confidence_level: float | None = None, epoch_selection: str | None = None,
                      strict: bool = True, rng: Any = None) -> ExamplePairwise:
    """Per task, every model pair on the same test examples; works at one seed.

    ``test="mcnemar"`` (accuracy: exact McNemar) or ``"bootstrap-examples"`` (any metric with
    per-example outcomes: a paired bootstrap over examples). An
    :class:`~pytest_graphnetz.stats.heldout.ExamplePairwise` with one row per seed and, with
    2+ seeds, a combined row that keeps the seed as the unit (sign-flip test over seeds). Its
    notes say that the per-seed rows do not cover seed variance.
    """
    from pytest_graphnetz.stats import resolve_rng
    from pytest_graphnetz.stats.heldout import (
        EXAMPLE_NOTES,
        EXAMPLE_TESTS,
        ExamplePairwise,
        example_pair_rows,
    )

    if test not in EXAMPLE_TESTS:
        raise ValueError(f"`test` must be one of {list(EXAMPLE_TESTS)}, got {test!r} (tests on "
                         "seeds are report.pairwise's)")
    level = report.confidence_level if confidence_level is None else confidence_level
    gen = resolve_rng(rng)
    rows, notes = [], list(EXAMPLE_NOTES)
    for t in report.tasks:
        found = {m: report.outcomes(t, m, epoch_selection=epoch_selection, strict=strict)
                 for m in report.models}
        for i, a in enumerate(report.models):
            for b in report.models[i + 1:]:
                pairs = [(s, oa, ob) for s, oa, ob in zip(report.seeds, found[a], found[b],
                                                           strict=True)
                         if oa is not None and ob is not None]
                lacking = [s for s, oa, ob in zip(report.seeds, found[a], found[b],
                                                  strict=True) if oa is None or ob is None]
                if not pairs:
                    raise ValueError(
                        f"task {t!r}, {a} vs {b}: no seed has per-example test outcomes "
                        f"for both models, which test={test!r} needs (built-in trainers "
                        "record them; rerun without the cache if the runs predate that, "
                        "or return `outcomes` from a custom trainer)")
                if lacking:
                    notes.append(f"task {t!r}, {a} vs {b}: seed(s) {lacking} left out "
                                 "(no outcomes: diverged or not recorded)")
                rows += example_pair_rows(t, a, b, pairs, test=test,
                                          higher_is_better=report.metrics[t].higher_is_better,
                                          confidence_level=level, rng=gen)
    if all(r.seed is not None for r in rows):
        notes[1] = ("one seed per pair: no combined test across seeds, so nothing here "
                    "speaks to seed variance")
    return ExamplePairwise(rows=tuple(rows), test=test, confidence_level=level,
                           notes=tuple(notes))


def _clip_to_metric(row: Any) -> Any:
    """A summary row whose interval leaves [0, 1] for a metric that cannot, clipped to [0, 1]
    with ``method`` saying so (:func:`~pytest_graphnetz.report.epochs.clip_to_metric`); any other
    row
    as it is."""
    clipped = clip_to_metric(row.metric, row.ci_low, row.ci_high)
    if clipped is None:
        return row
    return replace(row, ci_low=clipped[0], ci_high=clipped[1], method=f"{row.method}, {CLIPPED}")



def cell_stats(report: ReportRecord,
               source: str = "seeds") -> dict[tuple[str, str], SummaryRow]:
    """Per (task, model): the row of ``report.summary(source=source)`` (mean, ci_low, ci_high,
    n_diverged...).

    The summary follows ``report.ci_method``, ``confidence_level`` and ``epoch_selection``,
    and its bootstrap draws from a fixed seed, so every view of one report shows the same
    interval as ``print(report.summary(source=source))``.
    """
    return {(row.task, row.model): row for row in summary(report, source=source)}


def method_phrase(report: ReportRecord) -> str:
    """The report's interval in words, e.g. ``95% Student-t interval``."""
    level = fmt_level(report.confidence_level)
    return f"{level} {_CI_NAMES[report.ci_method]} interval"


def seeds_phrase(report: ReportRecord) -> str:
    """``1 seed`` or ``n seeds``."""
    n = len(report.seeds)
    return f"{n} seed" if n == 1 else f"{n} seeds"
