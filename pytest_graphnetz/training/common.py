"""Helpers every built-in trainer shares: device moves, the optimiser, per-epoch recording.

The recorder keeps each per-epoch series on the training device and copies it to the host
once, after the last epoch, so a trainer pays no per-epoch host synchronisation (on CUDA a
``.item()`` per epoch costs more than a small model's whole step). Divergence (a non-finite
loss, metric or model output) is checked every ``check_every`` epochs with one sync.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any

from ..history import History


def to_device(obj: Any, device: Any) -> Any:
    """``obj`` with every tensor / PyG data object moved to ``device``.

    Tensors and objects with a ``.to`` method that are PyG ``Data``/``HeteroData`` move; tuples,
    lists and dicts are walked; anything else (a ``Dataset`` a trainer batches itself, plain
    Python values) is returned unchanged.
    """
    import torch
    from torch_geometric.data.data import BaseData

    if isinstance(obj, (torch.Tensor, BaseData)):
        return obj.to(device)
    if isinstance(obj, tuple):
        return type(obj)(*(to_device(v, device) for v in obj)) if hasattr(obj, "_fields") \
            else tuple(to_device(v, device) for v in obj)
    if isinstance(obj, list):
        return [to_device(v, device) for v in obj]
    if isinstance(obj, Mapping):
        return {k: to_device(v, device) for k, v in obj.items()}
    return obj


def make_optimizer(model: Any, task: Any):
    """Adam over ``model``'s parameters with the task's ``lr`` and ``weight_decay``."""
    import torch

    return torch.optim.Adam(model.parameters(), lr=task.lr, weight_decay=task.weight_decay)


def check_metric(task: Any, supported: tuple[str, ...]) -> str:
    """The task's metric name, or a ``ValueError`` naming the task and what is supported."""
    name = task.metric_name
    if name.lower() not in supported:
        raise ValueError(
            f"task {task.name!r}: the built-in {task.kind!r} trainer computes {list(supported)}, "
            f"not `metric={name!r}`; pick one of those or pass `trainer=` with your own loop"
        )
    return name


class EpochRecorder:
    """Per-epoch scalar series kept on the device; one host copy when the run ends.

    Use::

        rec = EpochRecorder(epochs, device, ["train_loss", "val", "test"])
        for epoch in range(epochs):
            ...
            rec.record(epoch, train_loss=loss, val=val_acc, test=test_acc)
            rec.flag(epoch, logits)            # optional: non-finite outputs also diverge
            if rec.should_stop(epoch):
                break
        history = rec.history()

    A run diverges at the first epoch where any recorded value or flagged tensor is NaN/inf.
    From that epoch on every series reads NaN (also epochs never run because training stopped
    early): a diverged seed is recorded as such, never dropped, and its later epochs are not
    mistaken for real numbers (an argmax accuracy over NaN logits is a finite number).
    """

    def __init__(self, epochs: int, device: Any, names: list[str], *, check_every: int = 25):
        import torch

        self.epochs = epochs
        self.check_every = check_every
        self.series = {n: torch.full((epochs,), math.nan, device=device) for n in names}
        self.finite = torch.ones(epochs, dtype=torch.bool, device=device)
        self.ran = 0

    def record(self, epoch: int, **values: Any) -> None:
        """Store this epoch's values (0-dim tensors or floats) without a host sync."""
        import torch

        for name, value in values.items():
            if isinstance(value, torch.Tensor):
                value = value.detach().to(self.series[name].dtype)
            self.series[name][epoch] = value
        self.ran = epoch + 1

    def flag(self, epoch: int, tensor: Any) -> None:
        """Mark ``epoch`` diverged when ``tensor`` (e.g. model output, on any device) holds
        NaN/inf; only the one-element answer moves to the recorder's device."""
        import torch

        self.finite[epoch] &= torch.isfinite(tensor.detach()).all().to(self.finite.device)

    def should_stop(self, epoch: int) -> bool:
        """True once the run has diverged; syncs with the device only every ``check_every``."""
        if (epoch + 1) % self.check_every and epoch + 1 != self.epochs:
            return False
        return self._first_bad(epoch + 1) is not None

    def _first_bad(self, upto: int) -> int | None:
        import torch

        ok = self.finite[:upto].clone()
        for series in self.series.values():
            ok &= torch.isfinite(series[:upto])
        bad = (~ok).nonzero()
        return int(bad[0]) if len(bad) else None

    def history(self, *, test: str = "test", val: str | None = "val",
                train_loss: str | None = "train_loss") -> History:
        """The recorded run as a :class:`History` (NaN from the divergence epoch on)."""
        first_bad = self._first_bad(self.ran)
        stop = self.ran if first_bad is None else first_bad
        host = {}
        for name, series in self.series.items():
            values = series.cpu().tolist()
            host[name] = values[:stop] + [math.nan] * (self.epochs - stop)
        special = {test, val, train_loss}
        return History(
            test=host[test],
            val=host[val] if val is not None else None,
            train_loss=host[train_loss] if train_loss is not None else (),
            extra={n: v for n, v in host.items() if n not in special},
        )
