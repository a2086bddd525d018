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

from pytest_graphnetz.report.epochs import History


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
        # On the CPU a float32 tensor's value is written through numpy views of the series'
        # memory: a tenth of a tensor's indexed assignment, which the built-in trainers paid
        # three times an epoch (benchmarks/harness_overhead.py measures it).
        self.host = ({n: s.numpy() for n, s in self.series.items()}
                     if self.finite.device.type == "cpu" else None)

    def record(self, epoch: int, **values: Any) -> None:
        """Store this epoch's values (0-dim tensors or floats) without a host sync."""
        import torch

        host = self.host
        for name, value in values.items():
            if isinstance(value, torch.Tensor):
                if host is not None and value.dtype == torch.float32 \
                        and value.device.type == "cpu":
                    host[name][epoch] = value.item()  # a float32's value: stored exactly
                    continue
                value = value.detach().to(self.series[name].dtype)
            self.series[name][epoch] = value
        self.ran = epoch + 1

    def flag(self, epoch: int, tensor: Any) -> None:
        """Mark ``epoch`` diverged when ``tensor`` (e.g. model output, on any device) holds
        NaN/inf; only the one-element answer moves to the recorder's device."""
        import torch

        tensor = tensor.detach()
        if tensor.device.type == "cpu" and tensor.layout == torch.strided \
                and tensor.dtype in (torch.float32, torch.float64):
            import numpy as np

            # numpy reads the same memory at no device sync, at a third of torch's cost
            if not np.isfinite(tensor.numpy()).all():
                self.finite[epoch] = False
            return
        finite = torch.isfinite(tensor).all()
        if finite.device.type == "cpu":  # read at no device sync: half the operations
            if not finite:
                self.finite[epoch] = False
            return
        self.finite[epoch] &= finite.to(self.finite.device)

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
            test=tuple(host[test]),
            val=tuple(host[val]) if val is not None else None,
            train_loss=tuple(host[train_loss]) if train_loss is not None else (),
            extra={n: tuple(v) for n, v in host.items() if n not in special},
        )


class OutcomeTracker:
    """Per-example test outcomes at the final epoch and at the ``best_val`` epoch.

    Use::

        outcomes = OutcomeTracker(task.metric_name, has_val=val_split is not None)
        for epoch in range(epochs):
            ...
            outcomes.update(epoch, val_value, correct)      # tensors, kept on their device
        history = outcomes.attach(rec.history())

    ``update`` keeps the latest payload and, without a host sync, the payload of the epoch
    that has optimised the validation value so far (the first on ties, NaN never chosen), as
    :meth:`BenchmarkReport.selected_epochs` picks it. ``payload`` is the outcome values [n]
    (and labels [n] for score metrics). :meth:`attach` copies the two payloads to the host
    once and adds them to the History for epochs whose test value is finite and that the
    report selects.
    """

    def __init__(self, metric: str, *, has_val: bool) -> None:
        from pytest_graphnetz.report.epochs import MetricSpec

        self.metric = metric
        self.higher = MetricSpec.from_name(metric).higher_is_better
        self.has_val = has_val
        self.last: tuple[int, tuple] | None = None
        self.best: tuple[Any, Any, tuple] | None = None  # (val, epoch, payload), on the device

    def update(self, epoch: int, val: Any, *payload: Any) -> None:
        import torch

        payload = tuple(p.detach() for p in payload)
        self.last = (epoch, payload)
        if not self.has_val:
            return
        device = payload[0].device
        if device.type == "cpu":
            # Reading a CPU value costs no device sync: compare on the host, a third of the
            # tensor operations below per epoch (the harness against a plain loop measures it).
            self._update_on_host(epoch, val, payload)
            return
        # The recorder stores float32: compare at float32, so ties are the report's ties.
        v = torch.as_tensor(val, dtype=torch.float32).detach().to(device)
        v = torch.nan_to_num(v if self.higher else -v, nan=-math.inf)
        step = torch.tensor(epoch, device=device)
        if self.best is None:
            self.best = (v, step, payload)
            return
        best_v, best_epoch, best_payload = self.best
        better = v > best_v
        self.best = (torch.where(better, v, best_v), torch.where(better, step, best_epoch),
                     tuple(torch.where(better, p, b) for p, b in zip(payload, best_payload,
                                                                       strict=True)))

    def _update_on_host(self, epoch: int, val: Any, payload: tuple) -> None:
        """:meth:`update`'s choice for payloads in host memory, the same one: float32
        values, NaN never chosen, the first epoch on ties, infinities as ``nan_to_num``
        makes them (the largest finite float32, so they still rank above NaN)."""
        import torch

        v = float(torch.as_tensor(val, dtype=torch.float32))
        v = v if self.higher else -v
        if math.isnan(v):
            v = -math.inf
        elif math.isinf(v):
            v = math.copysign(float(torch.finfo(torch.float32).max), v)
        if self.best is None or v > self.best[0]:
            self.best = (v, epoch, payload)

    def attach(self, history: History) -> History:
        """``history`` with the recorded outcomes of its final and ``best_val`` epochs."""
        import dataclasses

        import numpy as np

        from pytest_graphnetz.base.outcomes import TestOutcomes

        def outcome(payload: tuple) -> TestOutcomes:
            host = [p.cpu().numpy() for p in payload]
            return TestOutcomes(self.metric, host[0], host[1] if len(host) > 1 else None)

        found = {}
        final = history.n_epochs - 1
        if self.last is not None and self.last[0] == final and math.isfinite(history.test[final]):
            found[final] = outcome(self.last[1])
        if self.best is not None and history.val is not None:
            val = np.asarray(history.val, dtype=float)
            val = np.where(np.isnan(val), -np.inf, val if self.higher else -val)
            chosen, epoch = int(np.argmax(val)), int(self.best[1])
            if chosen == epoch and math.isfinite(history.test[epoch]) and epoch not in found:
                found[epoch] = outcome(self.best[2])
        return dataclasses.replace(history, outcomes=found) if found else history
