"""Built-in trainer for node classification: full-batch Adam, per-epoch loss, val and test accuracy.

The model is called as ``model(x, edge_index) -> logits`` of shape ``[num_nodes, num_classes]``.
The data is one PyG ``Data`` with ``x [num_nodes, num_features]``, ``edge_index [2, num_edges]``,
``y [num_nodes]`` (class ids) and boolean masks ``train_mask`` and ``test_mask`` (``[num_nodes]``),
plus ``val_mask`` when there is a validation split (without it the history has no ``val``).
"""

from __future__ import annotations

from typing import Any

from pytest_graphnetz.report.epochs import History
from pytest_graphnetz.runner.training.common import (
    EpochRecorder,
    OutcomeTracker,
    check_metric,
    make_optimizer,
)

METRICS = ("accuracy", "acc")


def channels(task: Any, data: Any) -> tuple[int, int]:
    """``(num_features, num_classes)`` of ``data``: the model factory's arguments."""
    return int(data.num_features), int(data.y.max()) + 1


def _indices(data: Any, name: str, task: Any):
    """The node indices of mask ``name``; gathered by index so no step syncs with the device."""
    mask = getattr(data, name, None)
    if mask is None:
        return None
    if mask.dim() != 1 or mask.numel() != data.num_nodes:
        raise ValueError(
            f"task {task.name!r}: `{name}` must be a boolean vector of length num_nodes="
            f"{data.num_nodes}, got shape {tuple(mask.shape)} (pick one split column in the loader)"
        )
    return mask.nonzero().view(-1)


def train(model: Any, data: Any, *, task: Any, device: Any) -> History:
    """Train ``model`` for ``task.epochs`` full-batch epochs; returns its per-epoch History.

    Per epoch: one training step (cross-entropy on the train nodes), then one no-grad forward
    in eval mode giving validation and test accuracy. A NaN/inf loss or output ends the run;
    that epoch and the rest read NaN (see :class:`EpochRecorder`). Which test nodes were
    right is kept for the final and the best-validation epoch (``History.outcomes``).
    """
    import torch
    import torch.nn.functional as F

    check_metric(task, METRICS)
    train_idx = _indices(data, "train_mask", task)
    test_idx = _indices(data, "test_mask", task)
    val_idx = _indices(data, "val_mask", task)
    if train_idx is None or test_idx is None:
        raise ValueError(f"task {task.name!r}: node data needs `train_mask` and `test_mask`")
    x, edge_index, y = data.x, data.edge_index, data.y
    y_train, y_test = y[train_idx], y[test_idx]
    y_val = y[val_idx] if val_idx is not None else None

    optimizer = make_optimizer(model, task)
    names = ["train_loss", "test"] + (["val"] if val_idx is not None else [])
    rec = EpochRecorder(task.epochs, x.device, names)
    outcomes = OutcomeTracker(task.metric_name, has_val=val_idx is not None)
    for epoch in range(task.epochs):
        model.train()
        optimizer.zero_grad(set_to_none=True)
        out = model(x, edge_index)
        loss = F.cross_entropy(out[train_idx], y_train)
        loss.backward()
        optimizer.step()

        model.eval()
        with torch.no_grad():
            logits = model(x, edge_index)
            pred = logits.argmax(dim=-1)
            correct = pred[test_idx] == y_test
            values = {"train_loss": loss, "test": correct.float().mean()}
            if val_idx is not None:
                values["val"] = (pred[val_idx] == y_val).float().mean()
            rec.record(epoch, **values)
            rec.flag(epoch, logits)
            outcomes.update(epoch, values.get("val", 0.0), correct)
        if rec.should_stop(epoch):
            break
    return outcomes.attach(rec.history(val="val" if val_idx is not None else None))
