"""``ReportRecord``: what a benchmark report holds, the per-seed, per-epoch record.

Axis convention, stated once for the whole package: ``X[task, model, seed]``, a float array of
shape ``(len(tasks), len(models), len(seeds))``; ``X[t, m, s]`` is the metric of task ``t``
for model ``m`` trained under seed ``seeds[s]``, taken at the epoch chosen by the report's
epoch selection (``"final"`` or ``"best_val"``). A diverged seed is NaN in X, never dropped.

The record keeps the raw per-epoch histories, so every statistic can be re-derived later
(another CI method, test or epoch rule) without retraining. It is the data only: the views, the
JSON forms, the tables and the figures are functions that take one (``views``, ``codec``,
``values_form``, ``export``, ``plots``), and :class:`~pytest_graphnetz.report.BenchmarkReport`
(``model``) adds the methods that call them, so nothing a view imports imports the view back.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import TYPE_CHECKING, Any

import numpy as np

from pytest_graphnetz.base.text import check_name
from pytest_graphnetz.report.epochs import History, MetricSpec, unit_interval_problem
from pytest_graphnetz.report.schema import CI_METHODS, EPOCH_SELECTIONS

if TYPE_CHECKING:
    from typing import Self

Triple = tuple[str, str, int]
# The report-wide settings and their defaults (ReportRecord.settings()).
SETTINGS: dict[str, Any] = {"ci_method": "t", "confidence_level": 0.95, "epoch_selection": "final"}


class EpochSelectionError(ValueError):
    """``best_val`` asked of a task that has no held-out validation series."""


class ReportRecord:
    """Per-seed results ``X[task, model, seed]`` plus the histories they were selected from:
    the data of a :class:`~pytest_graphnetz.report.BenchmarkReport`, which is what the package
    builds and returns (the views take a record, so a report does). ``settings``: how it is
    read, a mapping as :meth:`settings` returns (``ci_method``, ``confidence_level``,
    ``epoch_selection``; :data:`SETTINGS` gives the defaults)."""

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
        settings: Mapping[str, Any] | None = None,
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
        # How the record is read (what settings() returns, and a report file keeps), each
        # validated by its property; unset ones take their defaults.
        given = dict(settings or {})
        if unknown := sorted(set(given) - set(SETTINGS)):
            raise TypeError(f"unknown report setting(s) {unknown}; the settings are "
                            f"{list(SETTINGS)}")
        for name, default in SETTINGS.items():
            setattr(self, name, given.get(name, default))

    # -- settings, validated on assignment -------------------------------------------------

    @property
    def ci_method(self) -> str:
        """Report-wide interval method (``"t"`` or ``"bootstrap"``) used by every view."""
        return self._ci_method

    @ci_method.setter
    def ci_method(self, value: str) -> None:
        self._ci_method = _choice("ci_method", value, CI_METHODS)

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
        self._epoch_selection = _choice("epoch_selection", value, EPOCH_SELECTIONS)

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
        fingerprints: Mapping[str, Mapping[str, Mapping[int, str]]] | None = None,
        **settings: Any,
    ) -> Self:
        """A report from per-seed numbers a user already has.

        ``X`` has shape ``(len(tasks), len(models), len(seeds))``; ``metric`` is one metric name
        (or :class:`MetricSpec`) for every task, or a ``{task: metric}`` mapping. The report has
        one-epoch histories and no validation series, so only ``"final"`` selection applies.
        ``fingerprints``: as the constructor's; ``settings``: ``ci_method``,
        ``confidence_level``, ``epoch_selection`` (:data:`SETTINGS`).
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
            (t, m, int(s)): History(test=(float(arr[i, j, k]),))
            for i, t in enumerate(tasks)
            for j, m in enumerate(models)
            for k, s in enumerate(seeds)
        }
        return cls(tasks=tasks, models=models, seeds=seeds, metrics=metrics,
                   histories=histories, protocol={"source": "from_arrays"},
                   fingerprints=fingerprints, settings=settings)

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
                   or "best_val" in (self.histories[(t, m, s)].selected or {})
                   for m in self.models for s in self.seeds)
            for t in self.tasks
        }

    def selected_epochs(
        self, epoch_selection: str | None = None, *, strict: bool = True
    ) -> dict[Triple, int]:
        """The epoch (0-based) whose test value enters X, per (task, model, seed).

        ``final`` picks the last epoch, or the one a trainer restored (``History.restored_epoch``,
        early stopping that restores the best weights), or the one a baseline's history names
        (``History.selected``, as for every rule). ``best_val`` picks the epoch that
        optimised the validation series in its direction: the task metric's, or that of the
        history's ``val_metric`` (a validation loss: its minimum); the first such epoch on ties.
        A task with no validation series raises :class:`EpochSelectionError`, unless
        ``strict=False``: it then falls back to the final epoch for that task (see
        :meth:`epoch_selection_support`).
        """
        rule = _choice("epoch_selection", self.epoch_selection if epoch_selection is None
                       else epoch_selection, EPOCH_SELECTIONS)
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
            use = rule if support[key[0]] else "final"
            if hist.selected is not None and use in hist.selected:
                chosen[key] = hist.selected[use]  # a baseline's values, one per rule
                continue
            if use == "final":
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
        cell = ReportRecord(**self.subset_arguments(tasks=[task], models=[model]))
        return cell.to_array(epoch_selection, strict=strict)[0, 0].copy()

    def seed_positions(self, seeds: Iterable[int]) -> list[int]:
        """Where each of ``seeds`` lies on the seed axis (``X[..., position]``), in the order
        given; ``KeyError`` naming a seed the report does not hold. Linear in the seeds (a
        baseline may hold 100,000)."""
        at = {s: i for i, s in enumerate(self.seeds)}
        out = []
        for s in seeds:
            if int(s) not in at:
                self._check_label("seed", s, self.seeds)
            out.append(at[int(s)])
        return out

    def diverged(self) -> list[Triple]:
        """Triples whose loss or metric went NaN/inf: reported, never dropped."""
        return [k for k, h in self.histories.items() if h.diverged]

    def data_fingerprint(self, task: str, seed: int) -> str | None:
        """Fingerprint of ``task``'s data and split under ``seed`` (None if not recorded)."""
        return self.fingerprints.get("data", {}).get(task, {}).get(int(seed))

    # -- reshaping ---------------------------------------------------------------------------

    def subset_arguments(
        self,
        *,
        tasks: Iterable[str] | None = None,
        models: Iterable[str] | None = None,
        seeds: Iterable[int] | None = None,
    ) -> dict[str, Any]:
        """The constructor's arguments of the record restricted to some labels (in the order
        given), each label checked."""
        tasks = self.tasks if tasks is None else tuple(tasks)
        models = self.models if models is None else tuple(models)
        seeds = self.seeds if seeds is None else tuple(int(s) for s in seeds)
        for axis, labels, have in (("task", tasks, self.tasks), ("model", models, self.models),
                                   ("seed", seeds, self.seeds)):
            known = set(have)   # a set: 100,000 seeds checked in linear time
            for label in labels:
                if label not in known:
                    self._check_label(axis, label, have)
        return dict(
            tasks=tasks, models=models, seeds=seeds, metrics=self.metrics,
            histories=self.histories, protocol=self.protocol,
            fingerprints=self._fingerprints_for(tasks, models, seeds), settings=self.settings(),
        )

    @classmethod
    def merge(cls, base: ReportRecord, update: ReportRecord) -> Self:
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
            fingerprints=fingerprints, settings=update.settings(),
        )

    # -- statistics and views (thin: the work lives in views, stats, export and plots) --------
    def outcomes(self, task: str, model: str, *, epoch_selection: str | None = None,
                 strict: bool = True) -> list:
        """Per seed (``seeds`` order), the per-example test outcomes at the selected epoch:
        a :class:`~pytest_graphnetz.base.outcomes.TestOutcomes`, or None where none were recorded
        (a diverged seed, a custom trainer that returns none, a report read from a baseline)."""
        self._check_label("task", task, self.tasks)
        self._check_label("model", model, self.models)
        epochs = ReportRecord(**self.subset_arguments(tasks=[task], models=[model])
                              ).selected_epochs(epoch_selection, strict=strict)
        return [self.histories[(task, model, s)].outcomes.get(epochs[(task, model, s)])
                for s in self.seeds]

    def shares_test_set(self, task: str) -> bool:
        """Whether every seed of ``task`` evaluated on the same test examples: its recorded
        data fingerprints (data and split) are equal; without fingerprints, assumed so."""
        fps = {self.data_fingerprint(task, s) for s in self.seeds} - {None}
        return len(fps) <= 1

    def folds(self, task: str) -> int | None:
        """k when ``task`` was run as k-fold cross-validation (``Task(folds=k)``): its seeds
        are folds (seed s = fold s mod k of repeat s // k), else None."""
        self._check_label("task", task, self.tasks)
        config = self.protocol.get("tasks", {}).get(task) or {}
        k = (config.get("config") or {}).get("folds")
        return int(k) if isinstance(k, int) and not isinstance(k, bool) else None

    # -- helpers -------------------------------------------------------------------------------

    def settings(self) -> dict:
        """The report-wide settings (``ci_method``, ``confidence_level``, ``epoch_selection``)."""
        return {"ci_method": self.ci_method, "confidence_level": self.confidence_level,
                "epoch_selection": self.epoch_selection}

    def _fingerprints_for(self, tasks, models, seeds) -> dict:
        keep = {"data": set(tasks), "model": set(models)}
        seeds = set(seeds)
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

    def __repr__(self) -> str:
        return (f"BenchmarkReport({len(self.tasks)} tasks × {len(self.models)} models × "
                f"{len(self.seeds)} seeds, metric={self.metric_name()!r})")


def _choice(name: str, value: str, choices: Sequence[str]) -> str:
    if value not in choices:
        raise ValueError(f"`{name}` must be one of {choices}, got {value!r}")
    return value
