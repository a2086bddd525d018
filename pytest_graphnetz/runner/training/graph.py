"""Built-in trainers for graph classification (``kind="graph"``) and regression (``"graph_reg"``).

Loader contract (both kinds): the loader returns a ``(train, val, test)`` tuple of PyG datasets
or lists of ``Data`` (one graph each, ``y`` its label or target). A ``(train, val)`` pair means
the task has NO held-out series: the model is still trained on ``train``, the ``val`` split is
recorded as the reported ``test`` series and the History gets ``val=None``, so
``epoch_selection="best_val"`` refuses the task (it would select and report on one split).

Forward contract: ``model(x, edge_index, batch)`` with ``x`` [num_nodes, in_channels],
``edge_index`` [2, num_edges] and ``batch`` [num_nodes] (the graph id of each node, as built
by ``torch_geometric.loader.DataLoader``); it returns
- ``graph``: logits [num_graphs, num_classes] (trained with cross-entropy);
- ``graph_reg``: predictions [num_graphs] or [num_graphs, 1] (trained with MSE on targets
  standardised by the training split's mean and std; metrics are in the target's own units).

Metrics per epoch: ``graph`` records accuracy (or ``auc`` for a binary task, from the softmax
probability of class 1) on val and test; ``graph_reg`` records MAE as the metric and RMSE as
the ``extra`` series ``val_rmse`` / ``test_rmse``. Per-example test outcomes (right or wrong,
score and label, or prediction − target) are kept for the final and the best-validation epoch
(``History.outcomes``).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from pytest_graphnetz.base.metrics import accuracy, mae, rmse, roc_auc
from pytest_graphnetz.report.epochs import History
from pytest_graphnetz.runner.training.common import (
    EpochRecorder,
    OutcomeTracker,
    check_metric,
    make_optimizer,
)

if TYPE_CHECKING:
    import torch

_GRAPH_METRICS = ("accuracy", "auc")
_REG_METRICS = ("mae", "rmse")


def splits(data: Any, *, task: Any) -> tuple[Sequence, Sequence | None, Sequence]:
    """``(train, val, test)`` of a graph loader's return value; ``val`` is None for a pair."""
    if not isinstance(data, (tuple, list)) or len(data) not in (2, 3):
        raise TypeError(
            f"task {task.name!r} (kind {task.kind!r}): the loader must return a "
            f"(train, val, test) tuple of datasets or lists of Data, or a (train, val) pair "
            f"when there is no held-out split; got {type(data).__name__}"
        )
    if len(data) == 2:
        train, reported = data
        return train, None, reported
    train, val, test = data
    return train, val, test


def channels(task: Any, data: Any) -> tuple[int, int]:
    """``(in_channels, out_channels)``: node feature width and classes (``graph``) or 1.

    (The runner applies ``Task.in_channels``/``out_channels`` overrides on top of this.)
    """
    train, val, test = splits(data, task=task)
    graphs = [*train, *(val or []), *test]
    in_channels = int(graphs[0].num_node_features)
    if task.kind == "graph_reg":
        return in_channels, 1
    return in_channels, int(max(int(g.y.max()) for g in graphs)) + 1


def train(model: Any, data: Any, *, task: Any, device: Any) -> History:
    """Train ``model`` for ``task.epochs`` epochs with Adam; one History entry per epoch.

    The training split is shuffled by a generator seeded with ``torch.initial_seed()`` (the
    seed the runner set for this triple): every model under one seed sees the same batch
    order, whatever its own draws from the global RNG (initialisation, dropout). A NaN/inf
    loss or output ends the run; that epoch and the rest read NaN (see ``EpochRecorder``).
    """
    import torch
    import torch.nn.functional as F
    from torch_geometric.loader import DataLoader

    regression = task.kind == "graph_reg"
    metric = check_metric(task, _REG_METRICS if regression else _GRAPH_METRICS).lower()
    train_set, val_set, test_set = splits(data, task=task)
    shuffle = torch.Generator().manual_seed(torch.initial_seed())
    train_loader = DataLoader(train_set, batch_size=task.batch_size, shuffle=True,
                              generator=shuffle)
    # Evaluation batches never change: collate them once, not every epoch.
    eval_loaders = {"test": list(DataLoader(test_set, batch_size=task.batch_size))}
    if val_set is not None:
        eval_loaders["val"] = list(DataLoader(val_set, batch_size=task.batch_size))
    if regression:
        targets = torch.cat([g.y.reshape(-1).float().cpu() for g in train_set])
        # Standardised targets keep one learning rate sensible for counts and for fractions.
        mean, std = float(targets.mean()), float(targets.std().clamp_min(1e-12))
        other = "rmse" if metric == "mae" else "mae"
        names = [*eval_loaders, *(f"{split}_{other}" for split in eval_loaders)]
    else:
        names = list(eval_loaders)

    optimizer = make_optimizer(model, task)
    rec = EpochRecorder(task.epochs, "cpu", ["train_loss", *names])
    outcomes = OutcomeTracker(task.metric_name, has_val=val_set is not None)
    for epoch in range(task.epochs):
        model.train()
        total = torch.zeros((), device=device)
        for batch in train_loader:
            batch = batch.to(device)
            optimizer.zero_grad(set_to_none=True)
            out = model(batch.x, batch.edge_index, batch.batch)
            if regression:
                loss = F.mse_loss(out.reshape(-1), (batch.y.reshape(-1).float() - mean) / std)
            else:
                loss = F.cross_entropy(out, batch.y.reshape(-1))
            loss.backward()
            optimizer.step()
            total += loss.detach() * batch.num_graphs
        values = {"train_loss": float(total) / len(train_set)}

        model.eval()
        per_example: tuple[torch.Tensor, ...] = ()
        for split, batches in eval_loaders.items():
            out, target = _predict(model, batches, device)
            rec.flag(epoch, out)
            if regression:
                pred = out.reshape(-1) * std + mean
                scores = {"mae": mae(pred, target), "rmse": rmse(pred, target)}
                values[split], values[f"{split}_{other}"] = scores[metric], scores[other]
                example: tuple[torch.Tensor, ...] = (pred.double() - target.double(),)
            elif metric == "auc":
                if out.shape[-1] != 2:
                    raise ValueError(f"task {task.name!r}: metric 'auc' needs a binary task (2 "
                                     f"logits per graph), the model returned {out.shape[-1]}")
                score = out.softmax(-1)[:, 1]
                values[split] = roc_auc(score, target)
                example = (score, target == 1)
            else:
                values[split] = accuracy(out.argmax(-1), target)
                example = (out.argmax(-1) == target,)
            if split == "test":
                per_example = example
        rec.record(epoch, **values)
        if torch.isfinite(per_example[0]).all():
            outcomes.update(epoch, values.get("val", 0.0), *per_example)
        if rec.should_stop(epoch):
            break
    return outcomes.attach(rec.history(val="val" if val_set is not None else None))


def _predict(model: Any, batches: list, device: Any) -> tuple[Any, Any]:
    """Model outputs [num_graphs, ...] and targets [num_graphs] over ``batches``, on the CPU."""
    import torch

    outs, targets = [], []
    with torch.no_grad():
        for batch in batches:
            batch = batch.to(device)
            outs.append(model(batch.x, batch.edge_index, batch.batch).float().cpu())
            targets.append(batch.y.reshape(-1).cpu())
    return torch.cat(outs), torch.cat(targets)
