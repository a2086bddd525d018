"""A calibration run: the baseline models trained again under salted seeds (:func:`calibrate`),
the measurement from the two reports (:func:`calibrate_reports`, refused when the salt reached
the data), and one test's calibrations written beside its baselines
(:func:`write_calibrations`)."""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from pytest_graphnetz.gates.calibration.resolution import (
    DEFAULT_POWER,
    DEFAULT_SALT,
    Calibration,
    CalibrationError,
    CellCalibration,
    EpochCurve,
    value_at_budget,
)
from pytest_graphnetz.gates.calibration.salting import salted_models, salted_seed_map
from pytest_graphnetz.gates.calibration.store import calibration_path, write_calibration
from pytest_graphnetz.gates.calibration.terminal import summary_rows

if TYPE_CHECKING:
    from pytest_graphnetz.report import BenchmarkReport


def calibrate_reports(baseline: BenchmarkReport, salted: BenchmarkReport, *,
                      salt: int = DEFAULT_SALT, alpha: float = 0.05,
                      power: float = DEFAULT_POWER) -> Calibration:
    """The calibration from a report and its salted rerun (same tasks, models and seeds).

    Refuses (:class:`~.resolution.CalibrationError`) when, for some task and seed, the data
    fingerprints of the two runs differ: then the salt reached the data or the split, and the
    differences would measure a data change, not an innocent one.
    """
    if list(baseline.tasks) != list(salted.tasks) or list(baseline.models) != list(
            salted.models) or list(baseline.seeds) != list(salted.seeds):
        raise CalibrationError("the salted rerun must have the baseline's tasks, models and "
                               "seeds, in the same order")
    data_base, data_salted = baseline.fingerprints["data"], salted.fingerprints["data"]
    for task in baseline.tasks:
        for seed in baseline.seeds:
            if data_base[task][seed] != data_salted[task][seed]:
                raise CalibrationError(
                    f"task {task!r}, seed {seed}: the salted rerun loaded other data or splits "
                    "than the baseline run; the loader draws from a source the runner does not "
                    "reseed, so an innocent change cannot be isolated. Make the loader "
                    "deterministic given `seed`")
    cells = {}
    for task in baseline.tasks:
        metric = baseline.metric(task).name
        for model in baseline.models:
            cells[(task, model)] = CellCalibration(
                task, model, metric, tuple(int(s) for s in baseline.seeds),
                tuple(float(v) for v in baseline.values(task, model)),
                tuple(float(v) for v in salted.values(task, model)),
                curve=epoch_curve(baseline, salted, task, model))
    return Calibration(cells, salt=int(salt), alpha=alpha, power=power,
                       epoch_selection=baseline.epoch_selection)


def epoch_curve(baseline: BenchmarkReport, salted: BenchmarkReport, task: str,
                model: str) -> EpochCurve | None:
    """The cell's :class:`~.resolution.EpochCurve` over every budget from 1 epoch to the
    longest run of either report, each run read at that budget by
    :func:`~.resolution.value_at_budget` under the report's epoch rule; None when a history
    keeps only selected values (a committed baseline: no per-epoch record)."""
    import numpy as np

    rule = baseline.epoch_selection if baseline.epoch_selection_support()[task] else "final"
    runs = []
    for report in (baseline, salted):
        histories = [report.histories[(task, model, s)] for s in report.seeds]
        if any(h.selected is not None for h in histories):
            return None
        chosen = report.selected_epochs(rule, strict=False)
        runs.append([(h, chosen[(task, model, s)]) for h, s in zip(histories, report.seeds,
                                                                    strict=True)])
    longest = max(h.n_epochs for run in runs for h, _ in run)
    budgets = tuple(range(1, longest + 1))
    metric = baseline.metric(task)
    base, salt = (np.array([[value_at_budget(h, b, rule, metric, at) for h, at in run]
                            for b in budgets]) for run in runs)
    return EpochCurve.from_values(budgets, base, salt)


def calibrate(tasks: Any, models: Mapping[str, Callable[[int, int], Any]], *,
              salt: int = DEFAULT_SALT, alpha: float = 0.05, power: float = DEFAULT_POWER,
              runner: Callable[..., Any] | None = None,
              baseline: BenchmarkReport | None = None,
              **run_kwargs: Any) -> Calibration:
    """Train ``models`` on ``tasks`` (unless ``baseline``, that run's report, is given) and
    again with salted seeds; their :func:`calibrate_reports`.

    ``runner``: what trains (default :func:`~pytest_graphnetz.run_benchmark`; the plugin passes
    its session's); ``run_kwargs`` go to it (seeds, device, cache_dir, epochs...).
    """
    if runner is None:
        from pytest_graphnetz.runner import run_benchmark

        runner = run_benchmark
    if baseline is None:
        baseline = runner(tasks, models, **run_kwargs)
    run_kwargs.setdefault("seeds", list(baseline.seeds))
    salted = runner(tasks, salted_models(models, salt), seed_map=salted_seed_map(salt),
                    **run_kwargs)
    salted.epoch_selection = baseline.epoch_selection
    return calibrate_reports(baseline, salted, salt=salt, alpha=alpha, power=power)


def write_calibrations(calibrations: Sequence[Calibration], baselines: Iterable[str | Path], *,
                       min_effect: float | None = None) -> list[dict[str, Any]]:
    """One test's calibrations (its ``graphnetz_run`` calls), merged, written beside each of
    its ``baselines`` (:func:`~.store.calibration_path`); the terminal rows
    (:func:`~.terminal.summary_rows`) at the session's δ (``min_effect``; None: each metric's
    default), each with the ``files`` written."""
    merged = calibrations[0]
    for more in calibrations[1:]:
        merged = merged.merged(more)
    deltas = default_min_effects(merged, min_effect)
    files = [str(write_calibration(merged, calibration_path(p), deltas))
             for p in dict.fromkeys(baselines)]
    return [{**row, "files": files} for row in summary_rows(merged, deltas)]


def default_min_effects(calibration: Calibration,
                        min_effect: float | None) -> dict[tuple[str, str], float | None]:
    """Per cell the δ its gate uses: ``min_effect`` when set, else the metric's default."""
    from pytest_graphnetz.gates.verdicts.rules import default_min_effect
    from pytest_graphnetz.report.epochs import MetricSpec

    return {key: min_effect if min_effect is not None
            else default_min_effect(MetricSpec.from_name(c.metric))
            for key, c in calibration.cells.items()}


__all__ = ["calibrate", "calibrate_reports", "default_min_effects", "write_calibrations"]
