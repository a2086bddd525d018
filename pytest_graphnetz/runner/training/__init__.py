"""Built-in trainers, one module per task kind, and the custom-trainer contract.

Every trainer has the signature ``train(model, data, *, task, device) -> History`` and records
per epoch: train loss, the metric on the validation split and on the test split (val and test
evaluated in one forward pass where the kind allows). ``channels(task, data) -> (in, out)``
gives the arguments of the model factory ``factory(in_channels, out_channels)``.

A custom trainer (``Task(..., trainer=fn)``) follows the same signature and may return a
``History`` or a mapping with keys ``test`` (required), ``val``, ``train_loss``, ``extra``,
``outcomes``, ``val_metric`` and ``restored_epoch``. ``val_metric`` names what ``val`` measures
when it is not the task's metric (``"loss"``: ``best_val`` takes its minimum); a loop whose early
stopping restores the best weights returns the 0-based ``restored_epoch`` it restored, which
the ``final`` rule then reports (the model training ended with).

``outcomes`` (optional) maps a 0-based epoch to what the model did on each test
example at that epoch — a :class:`~pytest_graphnetz.base.outcomes.TestOutcomes`, or a mapping
``{"metric": "accuracy", "correct": [1, 0, ...]}`` / ``{"metric": "mae", "errors": [...]}`` /
``{"metric": "auc", "scores": [...], "labels": [1, 0, ...]}`` — for the epochs the report may
select (the last one, and the best-validation one). They enable
``summary(source="test_set" | "total")`` and ``pairwise_examples(test="mcnemar")``; the
metric they recompute must equal the ``test`` value of their epoch, else the run is refused.
"""

from __future__ import annotations

import importlib
import inspect
from collections.abc import Mapping
from typing import Any

from pytest_graphnetz.report.epochs import History, unit_interval_problem

# kind -> module (relative to this package) exposing `train` and `channels`
_MODULES = {"node": ".node", "graph": ".graph", "graph_reg": ".graph", "link": ".link_trainer"}


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
    import torch

    args, returns = CALLS[kind]
    if type(model).forward is torch.nn.Module.forward:
        own = sorted(n for n in vars(type(model)) if not n.startswith("_")
                     and callable(getattr(model, n, None)))
        defines = f" (it defines {', '.join(own)})" if own else ""
        raise KindMismatchError(
            f"model {model_name!r} ({type(model).__name__}) has no `forward`{defines}, but the "
            f"built-in {kind} trainer of task {task!r} calls model({', '.join(args)}) and "
            f"expects {returns}. Add a forward, e.g. `def forward(self, "
            f"{', '.join(args)}): return self.encode({', '.join(args)})`, or give the task "
            "your own `trainer` that calls your methods"
        )
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
        "group models with the tasks they fit, one graphnetz_run per group "
        "(docs/custom-training.md: 'Models for node and graph tasks'), or give the task your "
        "own `trainer`"
    )


class ContractError(TypeError):
    """Data or code a task cannot train with, refused before training with the fix."""


def channels(task: Any, data: Any) -> tuple[int, int]:
    """The model factory's ``(in_channels, out_channels)``: the task's own, else what the
    built-in trainer of its kind infers from ``data``.

    Refuses, naming the fix, a ``HeteroData`` (or a dataset of them) that a built-in trainer
    would get (they call the model on one homogeneous ``x`` and ``edge_index``), or whose
    channels would have to be inferred (its feature and class counts are per node type).
    """
    hetero = _hetero_example(data)
    if hetero is not None:
        types = f"node types {hetero.node_types}, edge types {hetero.edge_types}"
        if task.trainer is None:
            raise ContractError(
                f"task {task.name!r}: the loader returned HeteroData ({types}), but the "
                f"built-in {task.kind!r} trainer calls model({', '.join(CALLS[task.kind][0])}) "
                "on one homogeneous graph. Give the task your own `trainer=` (calling e.g. "
                "model(data.x_dict, data.edge_index_dict)) with `in_channels=` and "
                "`out_channels=`, or return data.to_homogeneous() from the loader"
            )
        if task.in_channels is None or task.out_channels is None:
            raise ContractError(
                f"task {task.name!r}: the loader returned HeteroData ({types}), whose feature "
                "and class counts are per node type, so `in_channels` and `out_channels` "
                "cannot be inferred. Pass both to the Task, e.g. Task(..., in_channels=-1, "
                "out_channels=<classes>, trainer=...) (-1 lets PyG's lazy layers size each "
                "node type); they become your model factory's arguments"
            )
    if task.in_channels is not None and task.out_channels is not None:
        return task.in_channels, task.out_channels
    inferred = builtin(task.kind).channels(task, data)
    return (task.in_channels if task.in_channels is not None else inferred[0],
            task.out_channels if task.out_channels is not None else inferred[1])


def _hetero_example(data: Any) -> Any:
    """A ``HeteroData`` that ``data`` is or holds at its top level (a dataset's first graph, a
    tuple of splits), else None."""
    from torch_geometric.data import Dataset, HeteroData

    if isinstance(data, HeteroData):
        return data
    if isinstance(data, (tuple, list)):
        return next((h for h in map(_hetero_example, data) if h is not None), None)
    if isinstance(data, Dataset) and len(data) > 0:
        first = data[0]
        return first if isinstance(first, HeteroData) else None
    return None


# Samplers whose neighbour sampling runs in pyg-lib or torch-sparse (PyG has no fallback).
SAMPLERS = ("NeighborLoader", "LinkNeighborLoader", "NeighborSampler", "HGTLoader")


def check_backends(task: Any, factory: Any, *, model_name: str) -> None:
    """Refuse, before training, a task whose trainer, loader or model factory uses one of
    :data:`SAMPLERS` when neither pyg-lib nor torch-sparse is installed (PyG would fail at
    the first sampled batch, mid-training). The code is read, not run: a sampler reached only
    through another module's helper is not seen here."""
    import torch_geometric.typing as pyg_typing

    if pyg_typing.WITH_PYG_LIB or pyg_typing.WITH_TORCH_SPARSE:
        return
    from pytest_graphnetz.runner.fingerprint import names_in_code

    for role, fn in (("trainer", task.trainer), ("loader", task.loader),
                     (f"factory of model {model_name!r}", factory)):
        used = sorted(names_in_code(fn, SAMPLERS)) if fn is not None else []
        if used:
            import torch

            raise ContractError(
                f"task {task.name!r}: its {role} uses {', '.join(used)}, whose neighbour "
                "sampling needs pyg-lib or torch-sparse, and neither is installed. Install "
                "pyg-lib for this torch (pip install pyg-lib -f "
                f"https://data.pyg.org/whl/torch-{torch.__version__.split('+')[0]}.html, "
                "see PyG's installation guide), or train full-batch"
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
            from pytest_graphnetz.report.epochs import outcomes_problem

            problem = outcomes_problem(result, metric)
            if problem is not None:
                raise ValueError(f"{where}: {problem}; return outcomes of the epoch whose "
                                 "test value they give")
        return result
    raise TypeError(
        f"{where}: a trainer must return a History or a mapping with a `test` series "
        f"(and optionally `val`, `train_loss`, `extra`), got {type(result).__name__}"
    )
