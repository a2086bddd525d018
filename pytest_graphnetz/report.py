"""``BenchmarkReport``: the per-seed, per-epoch record of a benchmark, and its JSON form.

Axis convention, stated once for the whole package: ``X[task, model, seed]``, a float array of
shape ``(len(tasks), len(models), len(seeds))``; ``X[t, m, s]`` is the metric of task ``t``
for model ``m`` trained under seed ``seeds[s]``, taken at the epoch chosen by the report's
epoch selection (``"final"`` or ``"best_val"``). A diverged seed is NaN in X, never dropped.

The report keeps the raw per-epoch histories, so every statistic can be re-derived later
(another CI method, test or epoch rule) without retraining.
"""

from __future__ import annotations

import contextlib
import errno
import functools
import json
import math
import os
import re
import stat
import tempfile
import time
from collections.abc import Iterable, Iterator, Mapping, Sequence
from pathlib import Path
from typing import IO, Any

import numpy as np

from .history import CLIPPED, History, MetricSpec, clip_to_metric, unit_interval_problem
from .text import check_name

SCHEMA = "pytest-graphnetz/report"
# 2: histories whose values are all float32 are written with their shortest float32 repr and
# the marker `"float32": true` (version-1 files, without it, are read as before).
# 3: a history may carry `outcomes`, per-example test outcomes keyed by epoch (base64, see
# pytest_graphnetz.outcomes); version-1 and -2 files have none and are read as before.
# 4: a history may carry `val_metric` and `restored_epoch` (epoch rules, see History); a report
# whose histories use neither is still written as version 3, which earlier readers read.
SCHEMA_VERSION = 4
_EPOCH_RULE_KEYS = ("val_metric", "restored_epoch")
# The values-only form committed baselines use (BenchmarkReport.to_values_dict).
VALUES_SCHEMA = "pytest-graphnetz/baseline"
VALUES_SCHEMA_VERSION = 1
CI_METHODS = ("t", "bootstrap")
EPOCH_SELECTIONS = ("final", "best_val")

Triple = tuple[str, str, int]


class ReportFormatError(ValueError):
    """A report file that cannot be read: malformed, from a newer schema, or inconsistent."""


class ReportSchemaError(ReportFormatError):
    """A report written with a newer schema than this pytest-graphnetz reads (``version``)."""

    def __init__(self, message: str, version: int) -> None:
        super().__init__(message)
        self.version = version


class EpochSelectionError(ValueError):
    """``best_val`` asked of a task that has no held-out validation series."""


class BenchmarkReport:
    """Per-seed results ``X[task, model, seed]`` plus the histories they were selected from.

    Build one with :func:`pytest_graphnetz.run_benchmark`, :meth:`from_arrays` (numbers you
    already have) or :meth:`from_json`.
    """

    def __init__(
        self,
        *,
        tasks: Sequence[str],
        models: Sequence[str],
        seeds: Sequence[int],
        metrics: Mapping[str, MetricSpec],
        histories: Mapping[Triple, History],
        protocol: Mapping[str, Any] | None = None,
        fingerprints: Mapping[str, Mapping[str, Mapping[int, str]]] | None = None,
        ci_method: str = "t",
        confidence_level: float = 0.95,
        epoch_selection: str = "final",
    ) -> None:
        self.tasks = tuple(str(t) for t in tasks)
        self.models = tuple(str(m) for m in models)
        self.seeds = tuple(int(s) for s in seeds)
        for kind, names in (("task", self.tasks), ("model", self.models)):
            for name in names:
                check_name(kind, name)
        for axis, labels in (("tasks", self.tasks), ("models", self.models), ("seeds", self.seeds)):
            if len(set(labels)) != len(labels):
                raise ValueError(f"`{axis}` has duplicate labels: {list(labels)}")
        missing_metric = [t for t in self.tasks if t not in metrics]
        if missing_metric:
            raise ValueError(f"no metric given for task(s) {missing_metric}")
        self.metrics = {t: metrics[t] for t in self.tasks}
        missing = [k for k in self.triples() if k not in histories]
        if missing:
            raise ValueError(f"no history for {len(missing)} triple(s), e.g. {missing[0]}")
        self.histories = {k: histories[k] for k in self.triples()}
        for (t, m, s), history in self.histories.items():
            # Where every report is built (runner, from_arrays, from_json, baselines): a
            # percent accuracy (75.3) would otherwise print as "75.33 [74.41, 1]".
            problem = unit_interval_problem(self.metrics[t].name, history.test)
            if problem is not None:
                raise ValueError(f"cell {t}/{m}, seed {s}: {problem}")
        self.protocol = dict(protocol or {})
        # fingerprints[kind][name][seed]: kind "data" is keyed by task, "model" by model.
        self.fingerprints = {
            kind: {name: {int(s): str(fp) for s, fp in per_seed.items()}
                   for name, per_seed in by_name.items()}
            for kind, by_name in (fingerprints or {}).items()
        }
        self.ci_method = ci_method
        self.confidence_level = confidence_level
        self.epoch_selection = epoch_selection

    # -- settings, validated on assignment -------------------------------------------------

    @property
    def ci_method(self) -> str:
        """Report-wide interval method (``"t"`` or ``"bootstrap"``) used by every view."""
        return self._ci_method

    @ci_method.setter
    def ci_method(self, value: str) -> None:
        if value not in CI_METHODS:
            raise ValueError(f"`ci_method` must be one of {CI_METHODS}, got {value!r}")
        self._ci_method = value

    @property
    def confidence_level(self) -> float:
        return self._confidence_level

    @confidence_level.setter
    def confidence_level(self, value: float) -> None:
        if not 0.0 < float(value) < 1.0:
            raise ValueError(f"`confidence_level` must lie in (0, 1), got {value!r}")
        self._confidence_level = float(value)

    @property
    def epoch_selection(self) -> str:
        """``"final"`` (default) or ``"best_val"``; every statistic is re-derived from it."""
        return self._epoch_selection

    @epoch_selection.setter
    def epoch_selection(self, value: str) -> None:
        if value not in EPOCH_SELECTIONS:
            raise ValueError(f"`epoch_selection` must be one of {EPOCH_SELECTIONS}, got {value!r}")
        self._epoch_selection = value

    # -- construction ----------------------------------------------------------------------

    @classmethod
    def from_arrays(
        cls,
        X: Any,
        *,
        tasks: Sequence[str],
        models: Sequence[str],
        seeds: Sequence[int],
        metric: str | MetricSpec | Mapping[str, str | MetricSpec],
        higher_is_better: bool | None = None,
        **settings: Any,
    ) -> BenchmarkReport:
        """A report from per-seed numbers a user already has.

        ``X`` has shape ``(len(tasks), len(models), len(seeds))``; ``metric`` is one metric name
        (or :class:`MetricSpec`) for every task, or a ``{task: metric}`` mapping. The report has
        one-epoch histories and no validation series, so only ``"final"`` selection applies.
        """
        arr = np.asarray(X, dtype=float)
        shape = (len(tasks), len(models), len(seeds))
        if arr.shape != shape:
            raise ValueError(
                f"`X` has shape {arr.shape} but tasks × models × seeds is {shape} "
                "(the axis order is X[task, model, seed])"
            )
        per_task = metric if isinstance(metric, Mapping) else {t: metric for t in tasks}
        metrics = {
            t: m if isinstance(m, MetricSpec) else MetricSpec.from_name(m, higher_is_better)
            for t, m in per_task.items()
        }
        histories = {
            (t, m, int(s)): History(test=[arr[i, j, k]])
            for i, t in enumerate(tasks)
            for j, m in enumerate(models)
            for k, s in enumerate(seeds)
        }
        return cls(tasks=tasks, models=models, seeds=seeds, metrics=metrics,
                   histories=histories, protocol={"source": "from_arrays"}, **settings)

    # -- the data ----------------------------------------------------------------------------

    def triples(self) -> list[Triple]:
        """Every (task, model, seed) in axis order."""
        return [(t, m, s) for t in self.tasks for m in self.models for s in self.seeds]

    def metric_name(self, task: str | None = None) -> str:
        """The metric of ``task`` (or of every task, when they share one)."""
        if task is not None:
            return self.metric(task).name
        names = sorted({spec.name for spec in self.metrics.values()})
        return names[0] if len(names) == 1 else ", ".join(names)

    def metric(self, task: str) -> MetricSpec:
        """The :class:`MetricSpec` (name and direction) of ``task``."""
        self._check_label("task", task, self.tasks)
        return self.metrics[task]

    def epoch_selection_support(self) -> dict[str, bool]:
        """Per task: whether every run recorded a held-out validation series (``best_val``)."""
        return {
            t: all(self.histories[(t, m, s)].val is not None
                   for m in self.models for s in self.seeds)
            for t in self.tasks
        }

    def selected_epochs(
        self, epoch_selection: str | None = None, *, strict: bool = True
    ) -> dict[Triple, int]:
        """The epoch (0-based) whose test value enters X, per (task, model, seed).

        ``final`` picks the last epoch, or the one a trainer restored (``History.restored_epoch``,
        early stopping that restores the best weights). ``best_val`` picks the epoch that
        optimised the validation series in its direction: the task metric's, or that of the
        history's ``val_metric`` (a validation loss: its minimum); the first such epoch on ties.
        A task with no validation series raises :class:`EpochSelectionError`, unless
        ``strict=False``: it then falls back to the final epoch for that task (see
        :meth:`epoch_selection_support`).
        """
        rule = self.epoch_selection if epoch_selection is None else epoch_selection
        if rule not in EPOCH_SELECTIONS:
            raise ValueError(f"`epoch_selection` must be one of {EPOCH_SELECTIONS}, got {rule!r}")
        support = self.epoch_selection_support()
        if rule == "best_val" and strict:
            unsupported = [t for t, ok in support.items() if not ok]
            if unsupported:
                raise EpochSelectionError(
                    f"epoch_selection='best_val' needs a held-out validation series, and task(s) "
                    f"{unsupported} have none (the value reported would be chosen on the split it "
                    "is reported on). Use epoch_selection='final', or pass strict=False to fall "
                    "back to the final epoch for those tasks."
                )
        chosen: dict[Triple, int] = {}
        for key, hist in self.histories.items():
            if rule == "final" or not support[key[0]]:
                chosen[key] = hist.final_epoch
                continue
            val = np.asarray(hist.val, dtype=float)
            if not hist.val_higher_is_better(self.metrics[key[0]]):
                val = -val
            val = np.where(np.isnan(val), -np.inf, val)
            chosen[key] = int(np.argmax(val))
        return chosen

    def to_array(self, epoch_selection: str | None = None, *, strict: bool = True) -> np.ndarray:
        """``X[task, model, seed]`` under ``epoch_selection`` (default: the report's)."""
        epochs = self.selected_epochs(epoch_selection, strict=strict)
        X = np.empty((len(self.tasks), len(self.models), len(self.seeds)))
        for i, t in enumerate(self.tasks):
            for j, m in enumerate(self.models):
                for k, s in enumerate(self.seeds):
                    X[i, j, k] = self.histories[(t, m, s)].test[epochs[(t, m, s)]]
        return X

    @property
    def X(self) -> np.ndarray:
        """``X[task, model, seed]`` under the report's epoch selection."""
        return self.to_array()

    def values(
        self, task: str, model: str, *, epoch_selection: str | None = None, strict: bool = True
    ) -> np.ndarray:
        """The per-seed numbers of one cell, in ``seeds`` order (NaN for a diverged seed).

        Only this cell's task decides whether ``best_val`` is available: another task without
        a validation series does not make this call raise.
        """
        cell = self.subset(tasks=[task], models=[model])  # checks both labels
        return cell.to_array(epoch_selection, strict=strict)[0, 0].copy()

    def diverged(self) -> list[Triple]:
        """Triples whose loss or metric went NaN/inf: reported, never dropped."""
        return [k for k, h in self.histories.items() if h.diverged]

    def data_fingerprint(self, task: str, seed: int) -> str | None:
        """Fingerprint of ``task``'s data and split under ``seed`` (None if not recorded)."""
        return self.fingerprints.get("data", {}).get(task, {}).get(int(seed))

    # -- reshaping ---------------------------------------------------------------------------

    def subset(
        self,
        *,
        tasks: Iterable[str] | None = None,
        models: Iterable[str] | None = None,
        seeds: Iterable[int] | None = None,
    ) -> BenchmarkReport:
        """The report restricted to some labels (in the order given)."""
        tasks = self.tasks if tasks is None else tuple(tasks)
        models = self.models if models is None else tuple(models)
        seeds = self.seeds if seeds is None else tuple(int(s) for s in seeds)
        for axis, labels, have in (("task", tasks, self.tasks), ("model", models, self.models),
                                   ("seed", seeds, self.seeds)):
            for label in labels:
                self._check_label(axis, label, have)
        return BenchmarkReport(
            tasks=tasks, models=models, seeds=seeds, metrics=self.metrics,
            histories=self.histories, protocol=self.protocol,
            fingerprints=self._fingerprints_for(tasks, models, seeds), **self._settings(),
        )

    @classmethod
    def merge(cls, base: BenchmarkReport, update: BenchmarkReport) -> BenchmarkReport:
        """``base`` with every triple of ``update`` added or replaced (cell by cell).

        Labels keep ``base``'s order, new ones are appended. Only a triple present in neither
        is an error (the result must be a full task × model × seed grid).
        """
        tasks = list(dict.fromkeys([*base.tasks, *update.tasks]))
        models = list(dict.fromkeys([*base.models, *update.models]))
        seeds = list(dict.fromkeys([*base.seeds, *update.seeds]))
        histories = {**base.histories, **update.histories}
        fingerprints: dict = {}
        for report in (base, update):
            for kind, by_name in report.fingerprints.items():
                for name, per_seed in by_name.items():
                    fingerprints.setdefault(kind, {}).setdefault(name, {}).update(per_seed)
        # The run's environment is the update's; what the protocol says per task and per
        # (model, task) is kept for the cells the update did not run.
        protocol = {**base.protocol, **update.protocol}
        per_task = {**base.protocol.get("tasks", {}), **update.protocol.get("tasks", {})}
        per_model = {m: {**base.protocol.get("models", {}).get(m, {}),
                         **update.protocol.get("models", {}).get(m, {})} for m in models}
        for key, entries in (("tasks", per_task), ("models", per_model)):
            if any(entries.values()):
                protocol[key] = {k: v for k, v in entries.items() if v}
        return cls(
            tasks=tasks, models=models, seeds=seeds, metrics={**base.metrics, **update.metrics},
            histories=histories, protocol=protocol,
            fingerprints=fingerprints, **update._settings(),
        )

    # -- statistics and views (thin: the work lives in stats / export / plots) ----------------

    def summary(self, method: str | None = None, *, source: str = "seeds",
                confidence_level: float | None = None, epoch_selection: str | None = None,
                strict: bool = True, rng: Any = None):
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
        from dataclasses import replace

        from .stats import summarize

        level = self.confidence_level if confidence_level is None else confidence_level
        X = self.to_array(epoch_selection, strict=strict)
        if source != "seeds":
            return self._example_summary(X, source, method, level, epoch_selection, strict, rng)
        summary = summarize(
            X, tasks=self.tasks, models=self.models,
            metrics=[self.metrics[t].name for t in self.tasks],
            method=self.ci_method if method is None else method, confidence_level=level,
        )
        rows = [_clip_to_metric(row) for row in summary.rows]
        fold_tasks = [t for t in self.tasks if self.folds(t) is not None]
        if not fold_tasks:
            return replace(summary, rows=tuple(rows))
        # Fold scores share training data: no valid CI from their spread (Bengio & Grangier).
        rows = [replace(r, ci_low=r.mean - r.std, ci_high=r.mean + r.std,
                        method="fold spread: mean ± std, not a CI")
                if r.task in fold_tasks else r for r in rows]
        notes = tuple(f"task {t!r} is {self.folds(t)}-fold cross-validation: its row shows "
                      "mean ± std over folds, a description of fold variability, not a "
                      "confidence interval" for t in fold_tasks)
        return replace(summary, rows=tuple(rows), notes=notes)

    def _example_pairwise(self, test: str, confidence_level: float | None,
                          epoch_selection: str | None, strict: bool, rng: Any):
        from .stats import resolve_rng
        from .stats.heldout import EXAMPLE_NOTES, ExamplePairwise, example_pair_rows

        level = self.confidence_level if confidence_level is None else confidence_level
        gen = resolve_rng(rng)
        rows, notes = [], list(EXAMPLE_NOTES)
        for t in self.tasks:
            found = {m: self.outcomes(t, m, epoch_selection=epoch_selection, strict=strict)
                     for m in self.models}
            for i, a in enumerate(self.models):
                for b in self.models[i + 1:]:
                    pairs = [(s, oa, ob) for s, oa, ob in zip(self.seeds, found[a], found[b],
                                                               strict=True)
                             if oa is not None and ob is not None]
                    lacking = [s for s, oa, ob in zip(self.seeds, found[a], found[b],
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
                                              higher_is_better=self.metrics[t].higher_is_better,
                                              confidence_level=level, rng=gen)
        if all(r.seed is not None for r in rows):
            notes[1] = ("one seed per pair: no combined test across seeds, so nothing here "
                        "speaks to seed variance")
        return ExamplePairwise(rows=tuple(rows), test=test, confidence_level=level,
                               notes=tuple(notes))

    def outcomes(self, task: str, model: str, *, epoch_selection: str | None = None,
                 strict: bool = True) -> list:
        """Per seed (``seeds`` order), the per-example test outcomes at the selected epoch:
        a :class:`~pytest_graphnetz.outcomes.TestOutcomes`, or None where none were recorded
        (a diverged seed, a custom trainer that returns none, a report read from a baseline)."""
        self._check_label("task", task, self.tasks)
        self._check_label("model", model, self.models)
        epochs = self.subset(tasks=[task], models=[model]).selected_epochs(
            epoch_selection, strict=strict)
        return [self.histories[(task, model, s)].outcomes.get(epochs[(task, model, s)])
                for s in self.seeds]

    def shares_test_set(self, task: str) -> bool:
        """Whether every seed of ``task`` evaluated on the same test examples: its recorded
        data fingerprints (data and split) are equal; without fingerprints, assumed so."""
        fps = {self.data_fingerprint(task, s) for s in self.seeds} - {None}
        return len(fps) <= 1

    def _example_summary(self, X: np.ndarray, source: str, method: str | None, level: float,
                         epoch_selection: str | None, strict: bool, rng: Any):
        from .stats import SummaryRow, describe_many, resolve_rng
        from .stats.heldout import COVERS, SOURCES, example_interval
        from .stats.tables import Summary

        if source not in SOURCES:
            raise ValueError(f"`source` must be one of {list(SOURCES)}, got {source!r}")
        gen = resolve_rng(rng)
        t_n, m_n, s_n = X.shape
        cells = describe_many(X.reshape(t_n * m_n, s_n), method="t", confidence_level=level)
        rows, methods = [], set()
        for (i, j), cell in zip(np.ndindex(t_n, m_n), cells, strict=True):
            t, m = self.tasks[i], self.models[j]
            found = self.outcomes(t, m, epoch_selection=epoch_selection, strict=strict)
            usable = [o for o, x in zip(found, X[i, j], strict=True)
                      if o is not None and math.isfinite(x)]
            missing = [s for s, o, x in zip(self.seeds, found, X[i, j], strict=True)
                       if o is None and math.isfinite(x)]
            if missing or not usable:
                raise ValueError(
                    f"task {t!r} × model {m!r}: seed(s) {missing or list(self.seeds)} have no "
                    f"per-example test outcomes, which source={source!r} needs. Built-in "
                    "trainers record them; rerun without the cache "
                    "(--graphnetz-no-cache) if the runs predate that, or return `outcomes` "
                    "from a custom trainer (see pytest_graphnetz.training). A baseline file "
                    "keeps no outcomes: compare on a fresh run."
                )
            est = example_interval(usable, source=source, method=method,
                                   shared_test_set=self.shares_test_set(t),
                                   confidence_level=level, rng=gen)
            methods.add(est.method)
            rows.append(SummaryRow(
                task=t, model=m, metric=self.metrics[t].name, n_seeds=cell.n,
                n_diverged=cell.n_diverged, mean=cell.mean, std=cell.std, sem=cell.sem,
                ci_low=est.ci.low, ci_high=est.ci.high,
                method=f"{est.method}, n={est.n_examples}", source=source))
        notes = (f"intervals cover {COVERS[source]}",)
        rows = [_clip_to_metric(r) for r in rows]
        return Summary(rows=tuple(rows), method=" / ".join(sorted(methods)),
                       confidence_level=level, source=source, notes=notes)

    def pairwise(self, test: str = "paired-t", *, confidence_level: float | None = None,
                 epoch_selection: str | None = None, strict: bool = True, rng: Any = None,
                 untestable: str = "raise"):
        """Per task, every model pair on seeds paired by seed value.

        A :class:`~pytest_graphnetz.stats.Pairwise` of frozen rows (mean paired difference, its
        CI, p, Holm-adjusted p within the task, effect size, n, whether the cells' intervals
        overlap). Oriented so that a positive difference means ``model_a`` is better, whatever
        the metric's direction. A pair with fewer than 2 seeds finite in both models raises;
        ``untestable="skip"`` gives it a row of NaN statistics and a note instead.

        ``test="mcnemar"`` (accuracy) and ``test="bootstrap-examples"`` (any metric with
        per-example outcomes) pair the two models on the same test examples instead, and work
        at one seed: an :class:`~pytest_graphnetz.stats.heldout.ExamplePairwise` with one row
        per seed (exact McNemar, or a paired bootstrap over examples) and, with 2+ seeds, a
        combined row that keeps the seed as the unit (sign-flip test over seeds). Its notes say
        that the per-seed rows do not cover seed variance.
        """
        from .stats import pairwise_table
        from .stats.heldout import EXAMPLE_TESTS

        if test in EXAMPLE_TESTS:
            return self._example_pairwise(test, confidence_level, epoch_selection, strict, rng)

        X = self.to_array(epoch_selection, strict=strict)
        table = pairwise_table(
            X, tasks=self.tasks, models=self.models,
            higher_is_better=[self.metrics[t].higher_is_better for t in self.tasks], test=test,
            confidence_level=(self.confidence_level if confidence_level is None
                              else confidence_level),
            ci_method=self.ci_method, rng=rng, seeds=self.seeds, untestable=untestable,
        )
        return self._fold_corrected_pairwise(table, X) if any(map(self.folds, self.tasks)) \
            else table

    def folds(self, task: str) -> int | None:
        """k when ``task`` was run as k-fold cross-validation (``Task(folds=k)``): its seeds
        are folds (seed s = fold s mod k of repeat s // k), else None."""
        self._check_label("task", task, self.tasks)
        config = self.protocol.get("tasks", {}).get(task) or {}
        k = (config.get("config") or {}).get("folds")
        return int(k) if isinstance(k, int) and not isinstance(k, bool) else None

    def _fold_corrected_pairwise(self, table: Any, X: np.ndarray):
        """``table`` with every row of a fold task redone as the corrected resampled t test
        (on the pairs finite in both models), Holm re-adjusted within the task."""
        from dataclasses import replace

        from .stats import holm
        from .stats.heldout import FOLD_NOTE, corrected_resampled_ttest

        rows = list(table.rows)
        notes = list(table.notes)
        for t_i, task in enumerate(self.tasks):
            k = self.folds(task)
            if k is None:
                continue
            sign = 1.0 if self.metrics[task].higher_is_better else -1.0
            mine = [i for i, r in enumerate(rows) if r.task == task and math.isfinite(r.p_value)]
            for i in mine:
                r = rows[i]
                a = sign * X[t_i, self.models.index(r.model_a)]
                b = sign * X[t_i, self.models.index(r.model_b)]
                keep = np.isfinite(a) & np.isfinite(b)
                # n_test / n_train of one fold: 1 / (k - 2) (stats.heldout.fold_ratio)
                res = corrected_resampled_ttest(a[keep], b[keep], n_train=k - 2, n_test=1,
                                                confidence_level=table.confidence_level)
                rows[i] = replace(r, n=res.n, mean_diff=res.mean_diff, ci_low=res.ci.low,
                                  ci_high=res.ci.high, p_value=res.p_value,
                                  effect_size=res.effect_size, test="corrected-t (folds)")
            if mine:
                adjusted = holm([rows[i].p_value for i in mine]).p_adjusted
                for i, p in zip(mine, adjusted, strict=True):
                    rows[i] = replace(rows[i], p_holm=float(p))
            notes.append(FOLD_NOTE.format(task=task, k=k, test=table.test))
        return replace(table, rows=tuple(rows), notes=tuple(notes))

    def to_latex(self, **kwargs: Any) -> str:
        from .export import to_latex

        return to_latex(self, **kwargs)

    def to_markdown(self, **kwargs: Any) -> str:
        from .export import to_markdown

        return to_markdown(self, **kwargs)

    def plot_forest(self, path: str | os.PathLike | None = None, ax: Any = None, **kwargs: Any):
        from .plots import plot_forest

        return plot_forest(self, path=path, ax=ax, **kwargs)

    # -- JSON ----------------------------------------------------------------------------------

    def to_dict(self) -> dict:
        """The JSON-ready form: labels, metrics, protocol, fingerprints and every history."""
        cells: dict = {}
        for (t, m, s), hist in self.histories.items():
            cells.setdefault(t, {}).setdefault(m, {})[str(s)] = history_to_json(hist)
        uses_rules = any(key in h for by_model in cells.values() for by_seed in by_model.values()
                         for h in by_seed.values() for key in _EPOCH_RULE_KEYS)
        return {
            "schema": SCHEMA,
            "schema_version": SCHEMA_VERSION if uses_rules else 3,
            "tasks": list(self.tasks),
            "models": list(self.models),
            "seeds": list(self.seeds),
            "metrics": {t: {"name": spec.name, "higher_is_better": spec.higher_is_better}
                        for t, spec in self.metrics.items()},
            "settings": self._settings(),
            "protocol": self.protocol,
            "fingerprints": {
                kind: {name: {str(s): fp for s, fp in per_seed.items()}
                       for name, per_seed in by_name.items()}
                for kind, by_name in self.fingerprints.items()
            },
            "histories": cells,
        }

    @classmethod
    def from_dict(cls, data: Mapping, *, source: str = "<dict>") -> BenchmarkReport:
        """Inverse of :meth:`to_dict`; a problem raises :class:`ReportFormatError` naming
        ``source``."""
        schema = data.get("schema") if isinstance(data, Mapping) else None
        if schema not in (SCHEMA, VALUES_SCHEMA):
            raise ReportFormatError(
                f"{source}: not a pytest-graphnetz report (no `schema: {SCHEMA}` or "
                f"`schema: {VALUES_SCHEMA}`)"
            )
        newest = SCHEMA_VERSION if schema == SCHEMA else VALUES_SCHEMA_VERSION
        version = data.get("schema_version")
        if type(version) is not int or version < 1:
            raise ReportFormatError(f"{source}: missing or invalid `schema_version` ({version!r}); "
                                    "it must be a positive integer")
        if version > newest:
            raise ReportSchemaError(
                f"{source}: written with {schema} schema version {version}, newer than the "
                f"{newest} this pytest-graphnetz reads; upgrade pytest-graphnetz",
                version,
            )
        if schema == VALUES_SCHEMA:
            return _from_values_dict(cls, data, source)
        _check_report_dict(data, source)
        try:
            metrics = {t: MetricSpec(d["name"], d["higher_is_better"])
                       for t, d in data["metrics"].items()}
            histories = {
                (t, m, int(s)): _cell_history(t, m, s, h)
                for t, by_model in data["histories"].items()
                for m, by_seed in by_model.items()
                for s, h in by_seed.items()
            }
            fingerprints = {
                kind: {name: {int(s): fp for s, fp in per_seed.items()}
                       for name, per_seed in by_name.items()}
                for kind, by_name in data.get("fingerprints", {}).items()
            }
            return cls(tasks=data["tasks"], models=data["models"], seeds=data["seeds"],
                       metrics=metrics, histories=histories, protocol=data.get("protocol", {}),
                       fingerprints=fingerprints, **data.get("settings", {}))
        except (KeyError, TypeError, ValueError, AttributeError) as exc:
            detail = f"missing key {exc}" if isinstance(exc, KeyError) else str(exc)
            raise ReportFormatError(f"{source}: malformed report: {detail}") from exc

    def to_values_dict(self) -> dict:
        """The values-only JSON form that committed baselines use (no per-epoch histories).

        Per (model, task) cell: the per-seed values under both epoch rules (``best_val`` is
        null where the task has no validation series), mean and interval (``summary``, under
        the report's settings), the model's repr and parameter count when the runner recorded
        them; per model its per-seed fingerprints; per task its metric, protocol and per-seed
        data fingerprints. Per-seed lists follow ``seeds``. Everything of one model sits in
        that model's block, so a change to one model changes only its lines. Read back by
        :meth:`from_dict`, it is a report whose history per triple is just the two selected
        values (see :func:`_from_values_dict`).
        """
        support = self.epoch_selection_support()
        X = {rule: self.to_array(rule, strict=False) for rule in EPOCH_SELECTIONS}
        rows = {(r.task, r.model): r for r in self.summary()}
        info = self.protocol.get("models", {})
        models: dict = {}
        for j, m in enumerate(self.models):
            block: dict = {"tasks": {}}
            fps = [self.fingerprints.get("model", {}).get(m, {}).get(s) for s in self.seeds]
            if any(fp is not None for fp in fps):
                block["fingerprints"] = fps
            for i, t in enumerate(self.tasks):
                cell = values_to_json({"final": X["final"][i, j],
                                       "best_val": X["best_val"][i, j] if support[t] else None})
                described = info.get(m, {}).get(t, {})
                row = rows[(t, m)]
                cell.update({
                    "model": described.get("repr"), "parameters": described.get("parameters"),
                    # For the reader only (never read back): six digits are plenty.
                    "summary": {"mean": _round(row.mean), "n": row.n_seeds,
                                "ci": [_round(row.ci_low), _round(row.ci_high)],
                                "n_diverged": row.n_diverged},
                })
                block["tasks"][t] = cell
            models[m] = block
        tasks = {}
        for t in self.tasks:
            spec = self.metrics[t]
            tasks[t] = {"metric": {"name": spec.name, "higher_is_better": spec.higher_is_better},
                        "protocol": self.protocol.get("tasks", {}).get(t)}
            fps = [self.data_fingerprint(t, s) for s in self.seeds]
            if any(fp is not None for fp in fps):
                tasks[t]["data_fingerprints"] = fps
        environment = {k: v for k, v in self.protocol.items() if k not in _PER_CELL_PROTOCOL}
        return {"schema": VALUES_SCHEMA, "schema_version": VALUES_SCHEMA_VERSION,
                "seeds": list(self.seeds), "settings": self._settings(),
                "environment": environment, "tasks": tasks, "models": models}

    def to_json(self, path: str | os.PathLike) -> Path:
        """Write the report as JSON (atomically: a temp file renamed over ``path``)."""
        path = Path(path)
        write_text_atomic(path, dumps(self.to_dict()))
        return path

    @classmethod
    def from_json(cls, path: str | os.PathLike) -> BenchmarkReport:
        """Load a report written by :meth:`to_json`; errors name the file and the problem."""
        path = Path(path)
        return cls.from_dict(read_json(path), source=str(path))

    # -- helpers -------------------------------------------------------------------------------

    def _settings(self) -> dict:
        return {"ci_method": self.ci_method, "confidence_level": self.confidence_level,
                "epoch_selection": self.epoch_selection}

    def _fingerprints_for(self, tasks, models, seeds) -> dict:
        keep = {"data": set(tasks), "model": set(models)}
        return {
            kind: {name: {s: fp for s, fp in per_seed.items() if s in seeds}
                   for name, per_seed in by_name.items() if name in keep.get(kind, {name})}
            for kind, by_name in self.fingerprints.items()
        }

    @staticmethod
    def _check_label(axis: str, label: Any, labels: Sequence) -> int:
        try:
            return labels.index(label)
        except ValueError:
            raise KeyError(f"no {axis} {label!r} in this report (it has {list(labels)})") from None

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, BenchmarkReport):
            return NotImplemented
        # Compare the canonical JSON text: a dict comparison would call a report with a NaN
        # (diverged seed) unequal to its own round trip, and a tuple unequal to its list form.
        return dumps(self.to_dict()) == dumps(other.to_dict())

    def __repr__(self) -> str:
        return (f"BenchmarkReport({len(self.tasks)} tasks × {len(self.models)} models × "
                f"{len(self.seeds)} seeds, metric={self.metric_name()!r})")


# Larger than any report or cache entry this package writes (a 600-cell report with per-epoch
# histories is a few MB); a file beyond it is not read, so a planted giant cannot exhaust memory.
MAX_READ_BYTES = 1 << 30


class NotARegularFileError(OSError):
    """A path that is not a regular file (a FIFO, a device, a symlink to one) or too large."""


def read_regular_file(path: Path, limit: int = MAX_READ_BYTES) -> bytes:
    """The bytes of ``path`` when it is a regular file of at most ``limit`` bytes, else
    :class:`NotARegularFileError`: a FIFO planted where a file is expected would block a read,
    a symlink to /dev/zero would never end. Opened non-blocking and checked on the open file
    descriptor, so a swap between check and read changes nothing."""
    fd = os.open(path, os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_BINARY", 0))
    try:
        mode = os.fstat(fd)
        if stat.S_ISDIR(mode.st_mode):
            raise IsADirectoryError(errno.EISDIR, "Is a directory", str(path))
        if not stat.S_ISREG(mode.st_mode):
            raise NotARegularFileError(f"{path} is not a regular file (a FIFO, a device or a "
                                       "link to one); not read")
        if mode.st_size > limit:
            raise NotARegularFileError(f"{path} holds {mode.st_size} bytes, more than the "
                                       f"{limit} any file of this package has; not read")
        with os.fdopen(os.dup(fd), "rb") as fh:
            data = fh.read(mode.st_size)  # (read(limit) would allocate all of limit at once)
            while len(data) <= limit:  # a file that grows after the check
                more = fh.read(1 << 20)
                if not more:
                    break
                data += more
    finally:
        os.close(fd)
    if len(data) > limit:
        raise NotARegularFileError(f"{path} grew beyond {limit} bytes while read; not read")
    return data


def read_json(path: Path) -> Any:
    """The JSON document in ``path``; :class:`ReportFormatError` if it is not UTF-8 JSON."""
    try:
        text = read_regular_file(path).decode("utf-8")
    except FileNotFoundError:
        raise FileNotFoundError(f"no report at {path}") from None
    except IsADirectoryError:
        raise ReportFormatError(f"{path}: is a directory, not a report file") from None
    except NotARegularFileError as exc:
        raise ReportFormatError(str(exc)) from None
    except UnicodeDecodeError as exc:
        raise ReportFormatError(f"{path}: not a UTF-8 text file ({exc})") from exc
    try:
        return json.loads(text, parse_constant=_reject_constant)
    except ValueError as exc:  # JSONDecodeError, or a bare NaN/Infinity (_reject_constant)
        raise ReportFormatError(f"{path}: not valid JSON ({exc})") from exc
    except RecursionError:
        raise ReportFormatError(
            f"{path}: JSON nested too deeply to read (a report is a few levels deep)"
        ) from None


# -- the values-only form (committed baselines) -------------------------------------------------
# Protocol entries kept per task or per model in the values form (the rest is "environment").
_PER_CELL_PROTOCOL = ("tasks", "models", "source")
_VALUES_SOURCE = "values only: each history holds the best_val and final selections"


def values_to_json(vectors: Mapping[str, Any]) -> dict:
    """Per-seed vectors (``None`` kept as null) for JSON, float32 ones at float32 length.

    Adds ``"float32": true`` when every value is exactly a float32 (what trainers record):
    they are then written with their shortest float32 repr, as histories are (see below).
    """
    present = {k: np.asarray(v, dtype=np.float64) for k, v in vectors.items() if v is not None}
    out: dict = {k: None for k, v in vectors.items() if v is None}
    flat = np.concatenate(list(present.values())) if present else np.empty(0)
    short = _float32_short(flat)
    if short is None:
        out.update({k: [float(x) for x in v] for k, v in present.items()})
        return out
    it = iter(short)
    out.update({k: [next(it) for _ in v] for k, v in present.items()})
    out[_FLOAT32_MARK] = True
    return out


def values_from_json(d: Mapping, keys: Sequence[str]) -> dict[str, np.ndarray | None]:
    """Inverse of :func:`values_to_json` for ``keys`` (a null or absent vector is None)."""
    out: dict[str, np.ndarray | None] = {}
    for k in keys:
        if d.get(k) is None:
            out[k] = None
            continue
        # As report histories are read: numbers, or the strings of the non-finite ones;
        # "0.9" is refused, never coerced.
        if not isinstance(d[k], list) or not all(_is_number(v) or v in _NON_FINITE
                                                 for v in d[k]):
            raise ValueError(f"`{k}` must be a list of numbers (or \"NaN\", \"Infinity\", "
                             f"\"-Infinity\"), got {d[k]!r}")
        doubles = np.array([float(v) for v in d[k]], dtype=np.float64)
        out[k] = _through_float32(doubles, f"`{k}`") if d.get(_FLOAT32_MARK) else doubles
    return out


def _from_values_dict(cls: type[BenchmarkReport], data: Mapping, source: str) -> BenchmarkReport:
    """A report from :meth:`BenchmarkReport.to_values_dict`.

    With no per-epoch record to keep, each triple's history is the two selected values:
    epoch 0 the ``best_val`` pick, epoch 1 the final epoch, and a two-point validation series
    that makes ``best_val`` choose epoch 0; so ``values()`` under either rule, and every
    statistic, gate and view built on it, gives back exactly the stored numbers. A task
    without a validation series gets a one-epoch history (``best_val`` unsupported, as before).
    ``protocol["source"]`` says the histories are selections, not training curves.
    """
    try:
        seeds = [int(s) for s in data["seeds"]]
        if any(isinstance(s, bool) for s in data["seeds"]) or \
                [float(s) for s in data["seeds"]] != seeds:
            raise ValueError(f"`seeds` must be integers, got {data['seeds']}")
        tasks, models = list(data["tasks"]), list(data["models"])
        metrics, task_protocol, data_fps = {}, {}, {}
        for t, block in data["tasks"].items():
            m = block["metric"]
            if not isinstance(m["higher_is_better"], bool):
                raise ValueError(f"task {t!r}: `higher_is_better` must be true or false")
            metrics[t] = MetricSpec(str(m["name"]), m["higher_is_better"])
            if block.get("protocol") is not None:
                task_protocol[t] = block["protocol"]
            if block.get("data_fingerprints") is not None:
                data_fps[t] = _per_seed(block["data_fingerprints"], seeds, f"task {t!r}")
        histories, model_fps, model_info = {}, {}, {}
        for m, block in data["models"].items():
            if block.get("fingerprints") is not None:
                model_fps[m] = _per_seed(block["fingerprints"], seeds, f"model {m!r}")
            missing = [t for t in tasks if t not in block["tasks"]]
            if missing:
                raise ValueError(f"model {m!r} has no cell for task(s) {missing}")
            for t, cell in block["tasks"].items():
                if t not in metrics:
                    raise ValueError(f"cell {t}/{m}: task {t!r} is not among `tasks`")
                v = values_from_json(cell, ("final", "best_val"))
                for rule, vec in v.items():
                    if vec is not None and len(vec) != len(seeds):
                        raise ValueError(f"cell {t}/{m}: `{rule}` has {len(vec)} values for "
                                         f"{len(seeds)} seeds")
                if v["final"] is None:
                    raise ValueError(f"cell {t}/{m}: no `final` values")
                up = metrics[t].higher_is_better
                for k, s in enumerate(seeds):
                    final = float(v["final"][k])
                    best = v["best_val"]
                    histories[(t, m, s)] = (History(test=[final]) if best is None else History(
                        test=[float(best[k]), final], val=[1.0, 0.0] if up else [0.0, 1.0]))
                if cell.get("model") is not None or cell.get("parameters") is not None:
                    model_info.setdefault(m, {})[t] = {"repr": cell.get("model"),
                                                       "parameters": cell.get("parameters")}
        protocol = {**data.get("environment", {}), "source": _VALUES_SOURCE,
                    "tasks": task_protocol, "models": model_info}
        return cls(tasks=tasks, models=models, seeds=seeds, metrics=metrics,
                   histories=histories, protocol=protocol,
                   fingerprints={"data": data_fps, "model": model_fps},
                   **data.get("settings", {}))
    except (KeyError, TypeError, ValueError, AttributeError) as exc:
        detail = f"missing key {exc}" if isinstance(exc, KeyError) else str(exc)
        raise ReportFormatError(f"{source}: malformed baseline: {detail}") from exc


def _round(x: float) -> float:
    return float(f"{x:.6g}")


def _per_seed(values: Any, seeds: Sequence[int], what: str) -> dict[int, str]:
    if not isinstance(values, list) or len(values) != len(seeds):
        raise ValueError(f"{what}: fingerprints must be a list with one entry per seed")
    return {s: str(fp) for s, fp in zip(seeds, values, strict=True) if fp is not None}


# -- validating a report's JSON before building anything ----------------------------------------
# A hostile or damaged file must fail with a message, not coerce ("false" read as true, 1.5 read
# as seed 1) nor allocate what it declares (a 157 KB file can declare 2000 × 2000 × 2000 cells).


def _clip_to_metric(row: Any) -> Any:
    """A summary row whose interval leaves [0, 1] for a metric that cannot, clipped to [0, 1]
    with ``method`` saying so (:func:`~pytest_graphnetz.history.clip_to_metric`); any other row
    as it is."""
    from dataclasses import replace

    clipped = clip_to_metric(row.metric, row.ci_low, row.ci_high)
    if clipped is None:
        return row
    return replace(row, ci_low=clipped[0], ci_high=clipped[1], method=f"{row.method}, {CLIPPED}")


def _check_report_dict(data: Mapping, source: str) -> None:
    """Refuse wrong types and a declared grid the histories do not fill, naming ``source``."""

    def fail(where: str, problem: str) -> None:
        raise ReportFormatError(f"{source}: malformed report: `{where}` {problem}")

    def mapping(where: str, value: Any) -> Mapping:
        if not isinstance(value, Mapping):
            fail(where, f"must be an object, got {_json_type(value)}")
        return value

    for key in ("tasks", "models", "seeds", "metrics", "histories"):
        if key not in data:
            raise ReportFormatError(f"{source}: malformed report: missing key {key!r}")
    axes: dict[str, list] = {}
    for axis, kind in (("tasks", str), ("models", str), ("seeds", int)):
        labels = data[axis]
        if not isinstance(labels, list):
            fail(axis, f"must be a list, got {_json_type(labels)}")
        for i, label in enumerate(labels):
            if type(label) is not kind:
                fail(f"{axis}[{i}]", f"must be {'a string' if kind is str else 'an integer'}, "
                     f"got {label!r}")
        if len(set(labels)) != len(labels):
            fail(axis, f"has duplicate labels: {labels[:20]}")
        axes[axis] = labels
    known = {axis: {str(v) for v in labels} for axis, labels in axes.items()}

    metrics = mapping("metrics", data.get("metrics"))
    for task in axes["tasks"]:
        spec = mapping(f"metrics.{task}", metrics.get(task, {}))
        if not isinstance(spec.get("name"), str):
            fail(f"metrics.{task}.name", f"must be a string, got {spec.get('name')!r}")
        if type(spec.get("higher_is_better")) is not bool:
            fail(f"metrics.{task}.higher_is_better",
                 f"must be true or false, got {spec.get('higher_is_better')!r}")

    count = 0
    for task, by_model in mapping("histories", data.get("histories")).items():
        if task not in known["tasks"]:
            fail(f"histories.{task}", "is not one of `tasks`")
        for model, by_seed in mapping(f"histories.{task}", by_model).items():
            if model not in known["models"]:
                fail(f"histories.{task}.{model}", "is not one of `models`")
            for seed in mapping(f"histories.{task}.{model}", by_seed):
                if seed not in known["seeds"]:
                    fail(f"histories.{task}.{model}.{seed}", "is not one of `seeds`")
                count += 1
    cells = len(axes["tasks"]) * len(axes["models"]) * len(axes["seeds"])
    if count != cells:  # every history is of a declared cell, so some cells have none
        fail("histories", f"has no history for {cells - count} of the {len(axes['tasks'])} × "
             f"{len(axes['models'])} × {len(axes['seeds'])} = {cells} cells that `tasks`, "
             "`models` and `seeds` declare")

    settings = mapping("settings", data.get("settings", {}))
    for name, value in settings.items():
        kind = {"ci_method": str, "epoch_selection": str, "confidence_level": float}.get(name)
        if kind is None:
            continue  # the constructor refuses a setting it does not take
        if not (isinstance(value, str) if kind is str else _is_number(value)):
            fail(f"settings.{name}", f"must be a {'string' if kind is str else 'number'}, "
                 f"got {value!r}")
    mapping("protocol", data.get("protocol", {}))
    for kind, by_name in mapping("fingerprints", data.get("fingerprints", {})).items():
        for name, per_seed in mapping(f"fingerprints.{kind}", by_name).items():
            for seed, fp in mapping(f"fingerprints.{kind}.{name}", per_seed).items():
                if not _INT_TEXT.fullmatch(seed) or not isinstance(fp, str):
                    fail(f"fingerprints.{kind}.{name}.{seed}",
                         f"must map an integer seed to a string, got {fp!r}")


_INT_TEXT = re.compile(r"-?(0|[1-9][0-9]*)")
_NON_FINITE = ("NaN", "Infinity", "-Infinity")


def _is_number(value: Any) -> bool:
    return type(value) in (int, float)


def _json_type(value: Any) -> str:
    names = {dict: "an object", list: "a list", str: "a string", bool: "a boolean",
             int: "a number", float: "a number", type(None): "null"}
    return names.get(type(value), type(value).__name__)


def _cell_history(task: str, model: str, seed: str, d: Any) -> History:
    try:
        return history_from_json(d)
    except (ValueError, TypeError, KeyError) as exc:
        raise ValueError(f"history of task {task!r} × model {model!r} × seed {seed}: "
                         f"{exc}") from exc


def _check_series(where: str, values: Any) -> None:
    if not isinstance(values, list):
        raise ValueError(f"history series `{where}` must be a list of numbers, got "
                         f"{_json_type(values)}")
    for i, v in enumerate(values):
        if not (_is_number(v) or v in _NON_FINITE):
            raise ValueError(f"history series `{where}`[{i}] must be a number (or \"NaN\", "
                             f"\"Infinity\", \"-Infinity\"), got {v!r}")


# -- histories in JSON: float32 values at float32 length -----------------------------------------
# Trainers record float32 tensors, so a history's values are float32 numbers widened to Python
# floats, whose shortest *double* repr is 17 digits long (0.6931471824645996). A history whose
# values are all float32 is written with their shortest float32 repr (0.6931472, which a JSON
# reader parses to the nearest double) and `"float32": true`; reading rounds each value back to
# float32, recovering it exactly. Encoding checks that round trip value by value and keeps the
# full doubles when it would not hold, so the format is lossless by construction.

_FLOAT32_MARK = "float32"


def _through_float32(doubles: np.ndarray, what: str) -> np.ndarray:
    """``doubles`` rounded to float32 and widened back (a ``"float32": true`` vector); a finite
    value beyond float32's range is a ValueError, not numpy's overflow warning and an inf."""
    with np.errstate(over="ignore"):
        narrow = doubles.astype(np.float32)
    overflow = np.flatnonzero(np.isinf(narrow) & np.isfinite(doubles))
    if overflow.size:
        raise ValueError(
            f"{what} {float(doubles[overflow[0]])!r} does not fit a float32 (the vector is marked "
            f"`\"{_FLOAT32_MARK}\": true`; float32 reaches {float(np.finfo(np.float32).max):.8g})")
    return narrow.astype(np.float64)


def _float32_short(values: np.ndarray) -> list[float] | None:
    """``values`` at their shortest float32 repr, or None when they are not all float32."""
    with np.errstate(over="ignore", invalid="ignore"):  # out of float32 range: not float32
        narrow = values.astype(np.float32)
    if not np.array_equal(narrow.astype(np.float64), values, equal_nan=True):
        return None
    # numpy prints a float32 by its shortest repr that reads back as the same float32.
    short = [float(str(x)) for x in narrow]
    if not np.array_equal(np.array(short, dtype=np.float32), narrow, equal_nan=True):
        return None  # never seen; the guard keeps the format exact if a reader rounded otherwise
    return short


def history_to_json(hist: History) -> dict:
    """``hist.to_dict()``, float32 histories shortened (see above)."""
    d = hist.to_dict()
    series = [d["test"], d.get("val") or [], d.get("train_loss", [])]
    series += list(d.get("extra", {}).values())
    short = _float32_short(np.array([v for s in series for v in s], dtype=np.float64))
    if short is None:
        return d
    it = iter(short)

    def take(s: list) -> list[float]:
        return [next(it) for _ in s]

    out: dict = {_FLOAT32_MARK: True, "test": take(d["test"])}
    if "val" in d:
        out["val"] = take(d["val"])
    if "train_loss" in d:
        out["train_loss"] = take(d["train_loss"])
    if "extra" in d:
        out["extra"] = {k: take(v) for k, v in d["extra"].items()}
    for key in ("outcomes", "val_metric", "restored_epoch"):
        if key in d:
            out[key] = d[key]
    return out


def history_from_json(d: Mapping) -> History:
    """Inverse of :func:`history_to_json` (plain ``History.to_dict()`` forms too).

    Values must be numbers or the strings of the non-finite ones: a boolean or any other
    string is a ValueError, never coerced.
    """
    if not isinstance(d, Mapping):
        raise ValueError(f"a history must be an object, got {_json_type(d)}")
    for name in ("test", "val", "train_loss"):
        if d.get(name) is not None or name == "test":
            _check_series(name, d.get(name))
    extra = d.get("extra", {})
    if not isinstance(extra, Mapping):
        raise ValueError(f"history `extra` must be an object, got {_json_type(extra)}")
    for name, values in extra.items():
        _check_series(f"extra.{name}", values)
    if type(d.get(_FLOAT32_MARK, False)) is not bool:
        raise ValueError(f"history `{_FLOAT32_MARK}` must be true or false, "
                         f"got {d[_FLOAT32_MARK]!r}")
    if not d.get(_FLOAT32_MARK):
        return History.from_dict(d)

    def widen(values: Any) -> list[float]:
        # Strings are the non-finite values ("NaN", "Infinity"); float() reads them.
        doubles = np.array([float(v) for v in values], dtype=np.float64)
        return _through_float32(doubles, "a history value").tolist()

    extra = d.get("extra", {})
    return History(
        test=widen(d["test"]),
        val=widen(d["val"]) if d.get("val") is not None else None,
        train_loss=widen(d.get("train_loss", ())),
        extra={k: widen(v) for k, v in extra.items()},
        outcomes=d.get("outcomes") or {},
        val_metric=d.get("val_metric"),
        restored_epoch=d.get("restored_epoch"),
    )


# -- JSON encoding: non-finite floats as strings, series on one line, sorted keys ----------------
# History series decode the strings back with float("NaN"/"Infinity"/"-Infinity").

def _reject_constant(name: str) -> float:
    raise ValueError(f"bare {name} is not JSON; reports store it as the string {name!r}")


def _encode_float(x: float) -> float | str:
    if math.isnan(x):
        return "NaN"
    if math.isinf(x):
        return "Infinity" if x > 0 else "-Infinity"
    return x


def dumps(obj: Any) -> str:
    """Stable, diffable JSON: sorted keys, two-space indent, lists of scalars on one line.

    Floats use Python's shortest round-trip repr (lossless, fixed for a given value); NaN and
    ±inf become the strings ``"NaN"``, ``"Infinity"``, ``"-Infinity"`` inside number lists.
    """
    return _dump(obj, 0) + "\n"


def _dump(obj: Any, depth: int) -> str:
    pad, inner = "  " * depth, "  " * (depth + 1)
    if isinstance(obj, Mapping):
        if not obj:
            return "{}"
        items = [f"{inner}{json.dumps(str(k))}: {_dump(obj[k], depth + 1)}"
                 for k in sorted(obj, key=str)]
        return "{\n" + ",\n".join(items) + "\n" + pad + "}"
    if isinstance(obj, (list, tuple)):
        if all(type(v) is float for v in obj):  # a history series: skip the checks below
            return "[" + ", ".join(map(_scalar, obj)) + "]"
        if all(not isinstance(v, (Mapping, list, tuple)) for v in obj):
            return "[" + ", ".join(_scalar(v) for v in obj) + "]"
        return "[\n" + ",\n".join(inner + _dump(v, depth + 1) for v in obj) + "\n" + pad + "]"
    return _scalar(obj)


def _scalar(v: Any) -> str:
    if type(v) is float and math.isfinite(v):
        return repr(v)  # what json.dumps writes for a finite float, without its overhead
    if isinstance(v, (float, np.floating)):
        return json.dumps(_encode_float(float(v)))
    if isinstance(v, np.integer):
        return str(int(v))
    return json.dumps(v, allow_nan=False)


@contextlib.contextmanager
def atomic_file(path: Path, *, binary: bool = False, suffix: str = ".tmp",
                temp_dir: Path | None = None) -> Iterator[IO]:
    """A file handle whose content replaces ``path`` only if the ``with`` block succeeds.

    Written to a temp file in the same directory (or in ``temp_dir``, which must be on the
    same file system), flushed to disk, then ``os.replace``d: a reader never sees a
    half-written file; on any error the old file is left untouched and the temp file is
    removed.
    """
    path.parent.mkdir(parents=True, exist_ok=True)
    directory = path.parent if temp_dir is None else temp_dir
    directory.mkdir(parents=True, exist_ok=True)
    remove_stale_temp_files(directory, target=path.name, suffix=suffix)
    fd, tmp = tempfile.mkstemp(dir=directory, prefix=f".{path.name}.", suffix=suffix)
    try:
        with os.fdopen(fd, "wb" if binary else "w", encoding=None if binary else "utf-8") as fh:
            yield fh
            fh.flush()
            os.fsync(fh.fileno())
        # mkstemp creates the file 0600; give it the mode a plain open() would (umask applied),
        # so a cache shared between users or CI jobs stays readable.
        os.chmod(tmp, 0o666 & ~_umask())
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


# A temp file is written in one go and renamed at once, so one this old was left by a process
# killed mid-write (kill -9, a power cut): no live writer can still own it.
STALE_TEMP_SECONDS = 15 * 60


def remove_stale_temp_files(directory: Path, *, target: str | None = None,
                            suffix: str = ".tmp") -> list[Path]:
    """Delete the temp files :func:`atomic_file` left in ``directory`` (of ``target`` only,
    when given) that are older than :data:`STALE_TEMP_SECONDS`; returns those deleted."""
    pattern = f".{target}.*{suffix}" if target is not None else f".*{suffix}"
    cutoff = time.time() - STALE_TEMP_SECONDS
    removed = []
    for leftover in Path(directory).glob(pattern):
        with contextlib.suppress(OSError):  # gone already, or not ours to delete
            if leftover.is_file() and leftover.stat().st_mtime < cutoff:
                leftover.unlink()
                removed.append(leftover)
    return removed


def write_text_atomic(path: Path, text: str, *, temp_dir: Path | None = None) -> None:
    """Write ``text`` to ``path`` through :func:`atomic_file`."""
    with atomic_file(path, temp_dir=temp_dir) as fh:
        fh.write(text)


@functools.cache
def _umask() -> int:
    # os.umask can only be read by setting it: do that once per process, not per write.
    mask = os.umask(0)
    os.umask(mask)
    return mask


def load_report(report_path: str | os.PathLike, ci_method: str | None = None) -> BenchmarkReport:
    """A report read from JSON, with ``ci_method`` overriding the stored one when given."""
    report = BenchmarkReport.from_json(report_path)
    if ci_method is not None:
        report.ci_method = ci_method
    return report
