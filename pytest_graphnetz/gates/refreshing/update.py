"""What a gate does when it writes its baseline instead of failing on it: under
``--graphnetz-update-baselines`` (:func:`update_baseline`: the whole candidate, through the
ratchet) and under ``--graphnetz-add-missing`` (:func:`add_missing_cells`: only the cells the
file lacks). The ratchet judges a refresh through comparing (:func:`ratchet_judge`: the call's
not-worse comparison, judged alone); the gate (:mod:`pytest_graphnetz.gates.api`) records
what was written."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import replace

from pytest_graphnetz.gates.comparing.compare import Against, compare_gate
from pytest_graphnetz.gates.comparing.schedule import Schedule
from pytest_graphnetz.gates.comparing.spec import GateSpec
from pytest_graphnetz.gates.refreshing.baselines import BaselineHandle
from pytest_graphnetz.gates.refreshing.ratchet import (
    REFRESH_ALONE,
    Judge,
    RefreshOutcome,
    refresh,
)
from pytest_graphnetz.gates.verdicts.leak import mark_suspects
from pytest_graphnetz.gates.verdicts.values import CellVerdict
from pytest_graphnetz.report import BenchmarkReport
from pytest_graphnetz.stats.boundaries import LookSchedule


def refreshes(baseline: object) -> bool:
    """Whether a gate given ``baseline`` writes it rather than compares against it: a handle
    under ``--graphnetz-update-baselines``, or under ``--graphnetz-add-missing`` with no file
    yet (the file is written as a refresh writes it)."""
    return isinstance(baseline, BaselineHandle) and (
        baseline.update or (baseline.add_missing and not baseline.exists()))


def update_baseline(handle: BaselineHandle, report: BenchmarkReport,
                    spec: GateSpec) -> RefreshOutcome:
    """``--graphnetz-update-baselines``: :func:`~.ratchet.refresh` writes ``report`` unless
    the ratchet refuses, judging it by the call's not-worse comparison (test, margin, δ,
    alpha), and binds the schedule this gate walks (its first look, alpha) to the file."""
    first = spec.first_look if spec.first_look is not None else LookSchedule().first_look
    return refresh(replace(handle, schedule=LookSchedule(first, spec.alpha)), report,
                   ratchet_judge(spec))


def add_missing_cells(handle: BaselineHandle, report: BenchmarkReport, base: BenchmarkReport,
                      spec: GateSpec, schedule: Schedule | None) -> Iterator[BenchmarkReport]:
    """``--graphnetz-add-missing``: write the cells of ``report`` that ``base`` (the file's
    report) lacks, as a refresh writes new cells (at MAX seeds under adaptive seeds, with their
    own anchors), leaving every cell the file has untouched; yields each part once it is
    written. The file stays a task × model grid: first the new models on the file's tasks,
    then the new tasks for every model. ``handle`` keeps the schedule the file binds."""
    old_tasks = [t for t in report.tasks if t in base.tasks]
    new_tasks = [t for t in report.tasks if t not in base.tasks]
    new_models = [m for m in report.models if m not in base.models]
    parts = []
    if old_tasks and new_models:
        parts.append(report.subset(tasks=old_tasks, models=new_models))
    if new_tasks:
        parts.append(report.subset(tasks=new_tasks))
    for part in parts:
        if schedule is not None:
            part = schedule.complete(part)
        # only cells new to the file: the ratchet has nothing to judge, so nothing refuses
        refresh(handle, part, ratchet_judge(spec))
        yield part


def ratchet_judge(spec: GateSpec) -> Judge:
    """How a refresh judges the candidate against the baseline it replaces and the anchors:
    not-worse at the call's test, margin, δ and alpha, judged alone (the ratchet is not a
    rerun of a gate), a suspect gain marked."""

    def judge(candidate: BenchmarkReport, reference: BenchmarkReport,
              source: str) -> list[CellVerdict]:
        judged = GateSpec(gate="not_worse", test=spec.test, margin=spec.margin,
                          min_effect=spec.delta, alpha=spec.alpha, rng=spec.rng, rerun_safe=False)
        verdicts = compare_gate(candidate, reference, judged,
                                Against(source, alone_reason=REFRESH_ALONE))
        return mark_suspects(verdicts, [candidate], reference)

    return judge


__all__ = ["add_missing_cells", "ratchet_judge", "refreshes", "update_baseline"]
