"""The task catalogue: categories of offline-capable tasks, and resolution of user task specs.

Each category is a module of this package exposing ``TASKS: dict[str, Callable[[], Task]]``
(a factory per task, so listing the catalogue imports no torch).
"""

from __future__ import annotations

import importlib
from collections.abc import Callable, Mapping

from pytest_graphnetz.runner.tasks.base import Task

# category -> module (relative to this package)
CATEGORIES = {
    "social": ".social",          # Zachary's karate club
    "synthetic": ".synthetic",    # contextual stochastic block models
    "structure": ".structure",    # motif graph classification, graph regression, BA-Shapes
    "link": ".link",              # link prediction on a seeded block model
    "citation": ".citation",      # Cora, CiteSeer, PubMed through Planetoid
}


def category_tasks(category: str) -> dict[str, Callable[[], Task]]:
    """``{task name: factory}`` of one catalogue category."""
    if category not in CATEGORIES:
        raise KeyError(f"no task category {category!r}; the catalogue has {sorted(CATEGORIES)}")
    return dict(importlib.import_module(CATEGORIES[category], __name__).TASKS)


def catalogue() -> dict[str, Callable[[], Task]]:
    """Every catalogue task by name."""
    out: dict[str, Callable[[], Task]] = {}
    for category in CATEGORIES:
        try:
            out.update(category_tasks(category))
        except ModuleNotFoundError as exc:
            if exc.name and exc.name.startswith(__name__):
                continue  # a category whose module is not written yet
            raise
    return out


def get_task(name: str) -> Task:
    """The catalogue task ``name`` (a frozen ``Task``: derive a variant with
    ``dataclasses.replace(get_task("karate"), epochs=50)``)."""
    known = catalogue()
    if name not in known:
        raise KeyError(f"no catalogue task {name!r}; catalogue tasks: {sorted(known)}")
    return known[name]()


def tasks_of_kind(tasks: str | list[str] | tuple[str, ...] | Mapping[str, object],
                  *kinds: str) -> dict[str, Task]:
    """The tasks of ``tasks`` (anything ``run_benchmark`` takes) whose kind is one of ``kinds``.

    Pairs models with the tasks they fit: node-level models on ``"node"`` (and ``"link"``)
    tasks, graph-level models on ``"graph"`` and ``"graph_reg"`` tasks, one run per group.
    """
    from pytest_graphnetz.runner.tasks.base import KINDS

    unknown = [k for k in kinds if k not in KINDS]
    if unknown or not kinds:
        raise ValueError(f"`kinds` must be some of {KINDS}, got {kinds!r}")
    return {name: task for name, task in resolve_tasks(tasks).items() if task.kind in kinds}


def resolve_tasks(
    tasks: str | list[str] | tuple[str, ...] | Mapping[str, object],
) -> dict[str, Task]:
    """Turn the ``tasks`` argument of ``run_benchmark`` into ``{name: Task}``.

    A category name, a list of catalogue task names, or a ``{name: Task | loader}`` dict of
    custom tasks (category ``custom``, so dataset cache directories never collide).
    """
    if isinstance(tasks, str):
        if tasks in CATEGORIES:
            return {name: make() for name, make in category_tasks(tasks).items()}
        tasks = [tasks]
    if isinstance(tasks, Mapping):
        out: dict[str, Task] = {}
        for name, spec in tasks.items():
            if isinstance(spec, Task):
                out[name] = spec if spec.name == name else _renamed(spec, name)
            elif callable(spec):
                out[name] = Task(name, spec)
            else:
                raise TypeError(
                    f"task {name!r}: expected a Task or a loader callable, got {spec!r}"
                )
        return out
    known = catalogue()
    unknown = [t for t in tasks if t not in known]
    if unknown:
        raise KeyError(f"unknown task(s) {unknown}; catalogue tasks: {sorted(known)}; "
                       f"categories: {sorted(CATEGORIES)}")
    return {t: known[t]() for t in tasks}


def _renamed(task: Task, name: str) -> Task:
    from dataclasses import replace

    return replace(task, name=name)
