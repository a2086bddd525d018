"""The body of the ``graphnetz_run`` fixture (declared in the entry module, which pytest scans
on every run): a thin handle on the session (:class:`~.session.GraphnetzSession`).

Standard library and pytest only at import: the runner and calibration load when called.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator
from typing import TYPE_CHECKING, Any

import pytest

from pytest_graphnetz.plugin.keys import CALIBRATION_PROPERTY
from pytest_graphnetz.plugin.session import CALIBRATION_KEY, Calibrating, GraphnetzSession

if TYPE_CHECKING:
    from pytest_graphnetz.report import BenchmarkReport


def benchmark_runs(request: pytest.FixtureRequest, session: GraphnetzSession
                   ) -> Iterator[Callable[..., BenchmarkReport]]:
    """The body of the ``graphnetz_run`` fixture (its docstring says what it gives) for the
    test of ``request``: the runs, then what a calibrating run writes after the test."""
    settings = session.settings

    def run(tasks: Any, models: Any, **kwargs: Any) -> BenchmarkReport:
        __tracebackhide__ = True
        if settings.update_baselines and settings.baseline_replicates > 1:
            return replicated(tasks, models, **kwargs)
        if not settings.calibrate:
            return session.run(request.node, tasks, models, **kwargs)
        return calibrated(tasks, models, **kwargs)

    def replicated(tasks: Any, models: Any, **kwargs: Any) -> BenchmarkReport:
        """A refresh with replicates: every seed of the baseline (adaptive seeds: MAX, what a
        refresh holds) and R - 1 salted reruns of it, which the refresh writes beside it."""
        __tracebackhide__ = True
        from pytest_graphnetz.gates.calibration.salting import salted_models, salted_seed_map
        from pytest_graphnetz.gates.refreshing.replicates import ReplicatedReport

        kwargs.setdefault("seeds", settings.seeds)
        report = (calibrated(tasks, models, **kwargs) if settings.calibrate
                  else session.run(request.node, tasks, models, **kwargs))
        salted = [session.run(request.node, tasks, salted_models(models, salt),
                              seed_map=salted_seed_map(salt), **kwargs)
                  for salt in range(1, settings.baseline_replicates)]
        return ReplicatedReport(report, salted)

    def calibrated(tasks: Any, models: Any, **kwargs: Any) -> BenchmarkReport:
        __tracebackhide__ = True
        from pytest_graphnetz.gates.calibration.salted_run import calibrate
        from pytest_graphnetz.stats.boundaries import DEFAULT_RHO

        kwargs.setdefault("seeds", settings.seeds)
        report = session.run(request.node, tasks, models, **kwargs)
        # Planned at the level the gate decides at: ρα at the schedule's first look, α for a
        # run judged alone (off the schedule: its seeds do not hold the first look).
        on_schedule = settings.rerun_safe and set(range(settings.first_look)) <= set(
            kwargs["seeds"])
        level = DEFAULT_RHO * settings.alpha if on_schedule else settings.alpha
        calibration = calibrate(
            tasks, models, baseline=report, alpha=level,
            runner=lambda t, m, **more: session.run(request.node, t, m, **more), **kwargs)
        request.node.stash.setdefault(CALIBRATION_KEY, Calibrating()).calibrations.append(
            calibration)
        return report

    yield run
    pending = request.node.stash.get(CALIBRATION_KEY, None)
    if pending is not None and pending.calibrations:
        from pytest_graphnetz.gates.calibration.salted_run import write_calibrations

        # Without a baseline there is nothing to store it beside: the table still shows it.
        delta = settings.min_effect if isinstance(settings.min_effect, float) else None
        rows = write_calibrations(pending.calibrations, pending.baselines, min_effect=delta)
        request.node.user_properties.append((CALIBRATION_PROPERTY, json.dumps(rows)))


__all__ = ["benchmark_runs"]
