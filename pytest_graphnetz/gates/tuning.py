"""Tune, then confirm: :func:`tune` runs a search over a declared space (:func:`grid`, or a list
of configurations) with every trial trained under the same search seeds, selects the winner on
validation only, and trains the winner again on the canonical seeds a gate decides on, which the
search never touched (:func:`~.trials.search_seeds`). The confirmed report carries the whole
search (:class:`~.trials.TuningRecord`), so ``assert_not_worse(candidate, baseline)`` can refuse
what would make the comparison dishonest and state the budget and the winner's optimism.
"""

from __future__ import annotations

import itertools
import json
import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from pytest_graphnetz.report.trials import (
    PROTOCOL_KEY,
    Budget,
    Incumbent,
    Trial,
    TuningError,
    TuningRecord,
    overlap_problem,
    record_of,
)
from pytest_graphnetz.report.trials import search_seeds as derive_search_seeds

if TYPE_CHECKING:
    from pytest_graphnetz.report import BenchmarkReport

# Keys of a configuration that are settings of the run (run_benchmark's keywords), not of the
# model: a trial passes them to the runner; the model builder sees the whole configuration.
RUN_KEYS = ("epochs", "lr", "weight_decay", "batch_size")

# The incumbent rule's family-wise level: at most this share of searches displace an incumbent
# that no challenger truly beats on validation, the error rate the gate itself runs at.
SELECTION_ALPHA = 0.05


def grid(**axes: Sequence[Any]) -> list[dict[str, Any]]:
    """Every combination of the ``axes`` (``grid(hidden=[16, 64], lr=[0.01, 0.005])``: 4
    configurations), the last axis varying fastest."""
    if not axes:
        raise TuningError("`grid` needs at least one axis, e.g. grid(hidden=[16, 64])")
    for name, values in axes.items():
        if isinstance(values, (str, bytes)) or not len(values):
            raise TuningError(f"grid axis `{name}` must be a non-empty list of values, "
                              f"got {values!r}")
    names = list(axes)
    return [dict(zip(names, combo, strict=True))
            for combo in itertools.product(*(list(axes[n]) for n in names))]


# A plain attribute set on every model a trial builds: the model fingerprint (and so the triple
# cache key) covers it, so two configurations never share a cached run, even where a setting
# reaches only training (a closure the fingerprint cannot see).
CONFIG_ATTRIBUTE = "graphnetz_tuning_config"


@dataclass(frozen=True)
class ConfiguredFactory:
    """``build(config)``'s factory, its models marked with ``config`` (JSON text); picklable
    when ``build`` is, for worker processes."""

    build: Callable[[Mapping[str, Any]], Any]
    config: str

    def __call__(self, in_channels: int, out_channels: int) -> Any:
        model = self.build(json.loads(self.config))(in_channels, out_channels)
        if hasattr(model, "__dict__"):
            setattr(model, CONFIG_ATTRIBUTE, self.config)
        return model


def trial_model(build: Callable[[Mapping[str, Any]], Any], config: Mapping[str, Any]) -> Any:
    """What a trial of ``config`` runs: on a command task, the
    :class:`~pytest_graphnetz.runner.command.Command` that ``build(config)`` returns (its
    arguments or ``env`` carry the configuration to the script, and key the cache); else a
    :class:`ConfiguredFactory`, whose models are marked with the configuration."""
    from pytest_graphnetz.runner.command import Command

    made = build(config)
    if isinstance(made, Command):
        return made
    return ConfiguredFactory(build, json.dumps(config, sort_keys=True))


@dataclass(frozen=True)
class TuneResult:
    """A search and its confirmation: ``report``, the winner trained on the confirmation seeds
    (what a gate compares; ``report.protocol["tuning"]`` holds ``record``), ``record`` (every
    trial × seed), and ``searches``, each trial's report on the search seeds (same order)."""

    report: BenchmarkReport
    record: TuningRecord
    searches: tuple[BenchmarkReport, ...]

    @property
    def winner(self) -> Mapping[str, Any]:
        return self.record.winner_config


def validation_scores(report: BenchmarkReport, task: str, model: str) -> tuple[tuple[float, ...],
                                                                              bool, str]:
    """Per seed (``report.seeds`` order) the validation value at the epoch the report's rule
    selects, the validation series' direction and the metric it measures; refuses a task with
    no validation series (selection would read the test split)."""
    chosen = report.selected_epochs(strict=False)
    spec = report.metric(task)
    out, higher, metric = [], spec.higher_is_better, spec.name
    for seed in report.seeds:
        history = report.histories[(task, model, seed)]
        if history.val is None:
            raise TuningError(
                f"task {task!r}, model {model!r}, seed {seed}: no validation series, so a "
                "search could only select on the test split, which is there to confirm, not "
                "to search; use a task whose trainer records validation values")
        higher = history.val_higher_is_better(spec)
        metric = history.val_metric or spec.name
        value = history.val[chosen[(task, model, seed)]]
        out.append(float(value) if math.isfinite(value) else math.nan)
    return tuple(out), higher, metric


def select(trials: Sequence[Trial], higher_is_better: bool) -> int:
    """The index of the best trial by mean validation score (the first on ties); a trial with a
    diverged seed (NaN mean) is never selected."""
    finite = [i for i, t in enumerate(trials) if math.isfinite(t.mean)]
    if not finite:
        raise TuningError("every trial diverged on some search seed: nothing to select")
    sign = 1.0 if higher_is_better else -1.0
    return max(finite, key=lambda i: (sign * trials[i].mean, -i))


def select_incumbent(trials: Sequence[Trial], incumbent: int, higher_is_better: bool, *,
                     alpha: float = SELECTION_ALPHA) -> tuple[int, Incumbent]:
    """The winner under the incumbent rule (Blum & Hardt 2015, "The Ladder": a new best only
    when it beats the current one) and the reading behind it.

    ``trials[incumbent]`` (the configuration the baseline's search picked) is kept unless a
    challenger beats it on validation by paired evidence over the search seeds: per challenger,
    :func:`~pytest_graphnetz.stats.decisions.beats_reference` (one-sided paired t on the
    per-seed validation scores, Holm-adjusted over the challengers tested); of those whose
    adjusted p is ``<= alpha``, the best mean wins. A challenger with a diverged seed is not
    tested (and never wins); an incumbent with one cannot be kept, and the best mean wins.
    Needs every trial's per-seed ``validation``.
    """
    import numpy as np

    from pytest_graphnetz.stats.decisions import beats_reference

    if any(t.validation is None for t in trials):
        raise TuningError("the incumbent rule needs every trial's per-seed validation scores")
    if not 0 <= incumbent < len(trials):
        raise TuningError(f"incumbent trial {incumbent} is not one of the {len(trials)} trials")
    sign = 1.0 if higher_is_better else -1.0
    scores = sign * np.array([t.validation for t in trials], dtype=float)   # [trial, seed]
    diffs, p_adj = beats_reference(scores, incumbent, alpha)
    tested = np.flatnonzero(np.isfinite(p_adj))
    reading = Incumbent(incumbent, alpha,
                        tuple(float(d) if math.isfinite(d) else None for d in diffs),
                        tuple(float(p) if math.isfinite(p) else None for p in p_adj))
    if not np.isfinite(scores[incumbent]).all():
        return select(trials, higher_is_better), reading
    beaten = [int(i) for i in tested if p_adj[i] <= alpha]
    if not beaten:
        return incumbent, reading
    return max(beaten, key=lambda i: (diffs[i], -i)), reading


def incumbent_record(incumbent: Any) -> TuningRecord | None:
    """The baseline's tuning record, from ``incumbent``: a baseline handle
    (``graphnetz_baseline()``; no file yet, or an unreadable one a forced refresh replaces:
    None, a first tuning), a report carrying a tuning record, a :class:`TuneResult` or a
    :class:`TuningRecord`. None for None, or for a baseline that was not tuned (the gate then
    refuses the budgets)."""
    if incumbent is None or isinstance(incumbent, TuningRecord):
        return incumbent
    if isinstance(incumbent, TuneResult):
        return incumbent.record
    if hasattr(incumbent, "exists") and hasattr(incumbent, "load"):
        from pytest_graphnetz.gates.verdicts.values import BaselineError

        if not incumbent.exists():
            return None
        try:
            incumbent = incumbent.load()
        except BaselineError:
            # a forced refresh replaces an unreadable baseline: it has no winner to keep
            if getattr(incumbent, "update", False) and getattr(incumbent, "force", False):
                return None
            raise
    if not hasattr(incumbent, "protocol"):
        raise TuningError(f"`incumbent` must be the baseline (graphnetz_baseline(), a report "
                          f"or a TuningRecord), got {type(incumbent).__name__}")
    return record_of(incumbent.protocol)


def incumbent_trial(record: TuningRecord, configs: Sequence[Mapping[str, Any]],
                    model: str) -> int:
    """The index in ``configs`` of ``record``'s winner; refused for a record of another model
    or a winner that is not in ``configs``."""
    if record.model != model:
        raise TuningError(f"the incumbent's search tuned model {record.model!r}, not {model!r}")
    wanted = json.dumps(dict(record.winner_config), sort_keys=True)
    for i, config in enumerate(configs):
        if json.dumps(dict(config), sort_keys=True) == wanted:
            return i
    raise TuningError(f"the incumbent (the baseline's winner, {dict(record.winner_config)}) is "
                      "not in `space`: add it, or pass incumbent=None to select by the best "
                      "mean alone")


def winner_stability(trials: Sequence[Trial], higher_is_better: bool, *,
                     resamples: int = 1000) -> float | None:
    """The share of bootstrap resamples of the search seeds (the same resample for every
    trial: the seeds are shared) whose selection picks the winner of the full search; how
    steady the choice is. None without per-seed scores or with fewer than 2 seeds."""
    import numpy as np

    if any(t.validation is None for t in trials):
        return None
    scores = np.array([t.validation for t in trials], dtype=float)   # [trial, seed]
    if scores.shape[1] < 2:
        return None
    winner = select(trials, higher_is_better)
    rng = np.random.default_rng(0)
    picks = rng.integers(0, scores.shape[1], size=(resamples, scores.shape[1]))
    means = scores[:, picks].mean(axis=2)                             # [trial, resample]
    means = np.where(np.isnan(means), -np.inf, means if higher_is_better else -means)
    return float(np.mean(np.argmax(means, axis=0) == winner))


def tune(tasks: Any, models: Mapping[str, Callable[[Mapping[str, Any]], Any]],
         space: Sequence[Mapping[str, Any]], *, search_seeds: int | Sequence[int] = 5,
         seeds: Sequence[int] | None = None, epoch_selection: str = "final",
         accept_budget: Budget | str | Sequence[int] | None = None,
         incumbent: Any = None,
         runner: Callable[..., BenchmarkReport] | None = None,
         **run_kwargs: Any) -> TuneResult:
    """Search ``space`` for one model on one task, select on validation, confirm on fresh seeds.

    - ``tasks``: what ``run_benchmark`` takes, naming exactly one task;
      ``models``: ``{name: build}``, one model, ``build(config)`` returning its factory
      (``factory(in_channels, out_channels) -> nn.Module``), or on a command task its
      ``Command`` (the script's arguments carry the configuration: :func:`trial_model`).
    - ``space``: the configurations (:func:`grid`, or a list of dicts of JSON values); the keys
      ``epochs``, ``lr``, ``weight_decay``, ``batch_size`` also set the run.
    - ``search_seeds``: the seeds per trial, a count ``S`` (seeds ``2**31 + 0..S−1``,
      :func:`~.trials.search_seeds`) or explicit seeds; ``seeds``: the confirmation seeds
      (default: the runner's, e.g. the session's ``--graphnetz-seeds`` with ``graphnetz_run``).
      A confirmation seed that is a search seed is refused, before it trains when known.
    - ``epoch_selection``: the epoch rule of every run (``"final"`` or ``"best_val"``); the
      score of a trial is the mean over search seeds of the validation metric at that epoch.
    - ``accept_budget``: the baseline's budget (``"16x5"``), when a gate should accept
      comparing across budgets (the verdict then states both).
    - ``incumbent``: the baseline (``graphnetz_baseline()`` in a test, a report, or its
      :class:`~.trials.TuningRecord`) whose search's winner the search keeps unless a
      challenger beats it on validation (:func:`select_incumbent`); None, or a baseline not
      written yet: the best mean wins. The record says which.
    - ``runner``: what trains (default ``run_benchmark``; in a test, ``graphnetz_run``);
      ``run_kwargs`` go to every run (device, cache_dir, epochs...).
    """
    return tune_with(tasks, models, space, TuneSpec(search_seeds, seeds, epoch_selection,
                                                    accept_budget, incumbent, runner,
                                                    run_kwargs))


@dataclass(frozen=True)
class TuneSpec:
    """How a search runs, beside what it tunes (the task, the model, the space): the keywords
    of :func:`tune`, its public form, which says what each means."""

    search_seeds: int | Sequence[int] = 5
    seeds: Sequence[int] | None = None
    epoch_selection: str = "final"
    accept_budget: Budget | str | Sequence[int] | None = None
    incumbent: Any = None
    runner: Callable[..., BenchmarkReport] | None = None
    run_kwargs: Mapping[str, Any] = field(default_factory=dict)


def tune_with(tasks: Any, models: Mapping[str, Callable[[Mapping[str, Any]], Any]],
              space: Sequence[Mapping[str, Any]], spec: TuneSpec) -> TuneResult:
    """:func:`tune` with its keywords in ``spec``: check the request, search every
    configuration (:func:`_search`), select the winner on validation, confirm it on the
    canonical seeds (:func:`_confirm`)."""
    if len(models) != 1:
        raise TuningError(f"`models` must name one model to tune, got {list(models)}")
    (name, build), = models.items()
    configs = _configs(space)
    searched = (derive_search_seeds(spec.search_seeds) if isinstance(spec.search_seeds, int)
                else tuple(int(s) for s in spec.search_seeds))
    accepted = None if spec.accept_budget is None else Budget.parse(spec.accept_budget)
    if spec.seeds is not None:
        _refuse_overlap(searched, tuple(int(s) for s in spec.seeds))
    base = incumbent_record(spec.incumbent)
    position = None if base is None else incumbent_trial(base, configs, name)
    search = _search(tasks, name, build, configs, searched, spec)
    if base is not None and base.task != search.task:
        raise TuningError(f"the incumbent's search tuned task {base.task!r}, not "
                          f"{search.task!r}")
    if position is None:
        winner, reading = select(search.trials, search.higher), None
    else:
        winner, reading = select_incumbent(search.trials, position, search.higher)
    confirmed = _confirm(tasks, name, trial_model(build, configs[winner]), configs[winner],
                         searched, spec)
    values, _, _ = validation_scores(confirmed, search.task, name)
    finite = [v for v in values if math.isfinite(v)]
    record = TuningRecord(
        search.task, name, search.metric, search.higher, spec.epoch_selection, searched,
        tuple(search.trials), winner, tuple(confirmed.seeds),
        math.fsum(finite) / len(finite) if finite else math.nan, values,
        accepted_budget=accepted, stability=winner_stability(search.trials, search.higher),
        incumbent=reading)
    confirmed.protocol[PROTOCOL_KEY] = record.to_dict()
    return TuneResult(confirmed, record, tuple(search.reports))


def _configs(space: Sequence[Mapping[str, Any]]) -> list[dict[str, Any]]:
    """The configurations of ``space``, refused when there are none or one is not JSON."""
    configs = [dict(c) for c in space]
    if not configs:
        raise TuningError("`space` is empty: give at least one configuration")
    for config in configs:
        try:
            json.dumps(config)
        except (TypeError, ValueError) as exc:
            raise TuningError(f"configuration {config!r} is not JSON ({exc}): the record keeps "
                              "it; use numbers, strings and lists") from None
    return configs


@dataclass(frozen=True)
class _Search:
    """Every trial of a search on the search seeds: their reports and scores, the task, and
    the validation series' direction and metric."""

    reports: list[BenchmarkReport]
    trials: list[Trial]
    task: str
    higher: bool
    metric: str


def _search(tasks: Any, name: str, build: Callable[[Mapping[str, Any]], Any],
            configs: Sequence[dict[str, Any]], searched: Sequence[int],
            spec: TuneSpec) -> _Search:
    """Train every configuration on the search seeds and score it on validation."""
    runner = _runner(spec)
    reports, trials, direction, task, metric = [], [], None, "", ""
    for config in configs:
        settings = {k: config[k] for k in RUN_KEYS if k in config}
        report = runner(tasks, {name: trial_model(build, config)},
                        **{**spec.run_kwargs, **settings, "seeds": list(searched)})
        report.epoch_selection = spec.epoch_selection
        task = _one_task(report)
        values, direction, metric = validation_scores(report, task, name)
        mean = math.fsum(values) / len(values)
        trials.append(Trial(config, mean, values))
        reports.append(report)
    return _Search(reports, trials, task, bool(direction), metric)


def _confirm(tasks: Any, name: str, model: Any, config: Mapping[str, Any],
             searched: Sequence[int], spec: TuneSpec) -> BenchmarkReport:
    """Train the winner (``model``, built from ``config``) on the confirmation seeds and
    refuse any that is a search seed."""
    confirm_kwargs = {**spec.run_kwargs, **{k: config[k] for k in RUN_KEYS if k in config}}
    if spec.seeds is not None:
        confirm_kwargs["seeds"] = list(spec.seeds)
    confirmed = _runner(spec)(tasks, {name: model}, **confirm_kwargs)
    confirmed.epoch_selection = spec.epoch_selection
    _refuse_overlap(searched, confirmed.seeds)
    return confirmed


def _runner(spec: TuneSpec) -> Callable[..., BenchmarkReport]:
    """What trains: the spec's runner, else ``run_benchmark``."""
    if spec.runner is not None:
        return spec.runner
    from pytest_graphnetz.runner import run_benchmark

    return run_benchmark


def _one_task(report: BenchmarkReport) -> str:
    if len(report.tasks) != 1:
        raise TuningError(f"`tasks` must name one task to tune on, got {list(report.tasks)}: "
                          "tune each task on its own (each selects its own winner)")
    return report.tasks[0]


def _refuse_overlap(searched: Sequence[int], seeds: Sequence[int]) -> None:
    problem = overlap_problem(searched, seeds, "candidate")
    if problem is not None:
        raise TuningError(problem)


__all__ = ["CONFIG_ATTRIBUTE", "RUN_KEYS", "SELECTION_ALPHA", "ConfiguredFactory", "TuneResult",
           "TuneSpec", "grid", "incumbent_record", "incumbent_trial", "select", "select_incumbent",
           "trial_model", "tune", "tune_with", "validation_scores", "winner_stability"]
