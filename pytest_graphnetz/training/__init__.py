"""Built-in trainers, one module per task kind, and the custom-trainer contract.

Every trainer has the signature ``train(model, data, *, task, device) -> History`` and records
per epoch: train loss, the metric on the validation split and on the test split (val and test
evaluated in one forward pass where the kind allows). ``channels(task, data) -> (in, out)``
gives the arguments of the model factory ``factory(in_channels, out_channels)``.

A custom trainer (``Task(..., trainer=fn)``) follows the same signature and may return a
``History`` or a mapping with keys ``test`` (required), ``val``, ``train_loss``, ``extra`` and
``outcomes``. ``outcomes`` (optional) maps a 0-based epoch to what the model did on each test
example at that epoch — a :class:`~pytest_graphnetz.outcomes.TestOutcomes`, or a mapping
``{"metric": "accuracy", "correct": [1, 0, ...]}`` / ``{"metric": "mae", "errors": [...]}`` /
``{"metric": "auc", "scores": [...], "labels": [1, 0, ...]}`` — for the epochs the report may
select (the last one, and the best-validation one). They enable
``summary(source="test_set" | "total")`` and ``pairwise(test="mcnemar")``; the metric they
recompute must equal the ``test`` value of their epoch, else the run is refused.
"""

from __future__ import annotations

import importlib
import inspect
from collections.abc import Mapping
from typing import Any

from ..history import History, unit_interval_problem

# kind -> module (relative to this package) exposing `train` and `channels`
_MODULES = {"node": ".node", "graph": ".graph", "graph_reg": ".graph", "link": ".link"}


def builtin(kind: str):
    """The module implementing the built-in trainer of ``kind``."""
    return importlib.import_module(_MODULES[kind], __name__)


# What each built-in trainer passes to the model, and what it expects back.
CALLS = {
    "node": (("x", "edge_index"), "logits [num_nodes, num_classes]"),
    "link": (("x", "edge_index"), "node embeddings [num_nodes, dim] (an encoder)"),
    "graph": (("x", "edge_index", "batch"),
              "one row of logits per graph [num_graphs, num_classes], pooled over `batch`"),
    "graph_reg": (("x", "edge_index", "batch"),
                  "one prediction per graph [num_graphs, 1], pooled over `batch`"),
}


class KindMismatchError(TypeError):
    """A model whose ``forward`` cannot take what the built-in trainer of a task's kind passes."""


def check_fits(model: Any, *, kind: str, task: str, model_name: str) -> None:
    """Refuse, before any training, a model whose ``forward`` does not fit the call the built-in
    trainer of ``kind`` makes (a graph-level model on a node task, PyG's node-level ``GCN`` on
    a graph task, where ``batch`` would land in ``edge_weight``).

    Only the signature is checked: a forward that takes ``*args`` or whose signature cannot be
    read passes (and fails, if it must, inside training as before).
    """
    args, returns = CALLS[kind]
    try:
        signature = inspect.signature(model.forward)
    except (AttributeError, TypeError, ValueError):
        return
    try:
        bound = signature.bind(*args)
    except TypeError as exc:
        problem = f"cannot be called that way ({exc})"
    else:
        if "batch" not in args or "batch" not in signature.parameters:
            return
        receiver = next(name for name, value in bound.arguments.items()
                        if value == "batch" or (isinstance(value, tuple) and "batch" in value))
        if receiver == "batch":
            return
        problem = (f"would receive the batch vector in `{receiver}` (its `batch` is not the "
                   "third parameter): it is a node-level model")
    other = "graph or graph_reg" if kind in ("node", "link") else "node or link"
    params = ", ".join(("*" if p.kind is p.VAR_POSITIONAL else "**" if p.kind is p.VAR_KEYWORD
                        else "") + name for name, p in signature.parameters.items())
    raise KindMismatchError(
        f"model {model_name!r} does not fit task {task!r} (kind {kind!r}): the {kind} trainer "
        f"calls model({', '.join(args)}) and expects {returns}, but "
        f"{type(model).__name__}.forward({params}) {problem}. Run it on {other} tasks only: "
        "group models with the tasks they fit, one graphnetz_run per group (README: 'Models "
        "for node and graph tasks'), or give the task your own `trainer`"
    )


def as_history(result: Any, *, where: str, metric: str | None = None) -> History:
    """Accept a trainer's ``History`` or mapping; anything else is an error naming ``where``.

    With ``metric``, per-example outcomes must recompute the test value of their epoch.
    """
    if isinstance(result, Mapping) and "test" in result:
        result = History.from_dict(result)
    if isinstance(result, History):
        if metric is not None:
            problem = unit_interval_problem(metric, result.test)
            if problem is not None:
                raise ValueError(f"{where}: {problem}")
        if metric is not None and result.outcomes:
            from ..outcomes import outcomes_problem

            problem = outcomes_problem(result, metric)
            if problem is not None:
                raise ValueError(f"{where}: {problem}; return outcomes of the epoch whose "
                                 "test value they give")
        return result
    raise TypeError(
        f"{where}: a trainer must return a History or a mapping with a `test` series "
        f"(and optionally `val`, `train_loss`, `extra`), got {type(result).__name__}"
    )
