"""The per-epoch record of one (task, model, seed) triple, and metric directions.

Pure Python + numpy: trainers (torch), the report, the cache and JSON all share these types.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from pytest_graphnetz.base.outcomes import TestOutcomes

# Metric names are matched case-insensitively after stripping a ``val_``/``test_`` prefix;
# ``hits@k`` for any k is higher-is-better.
_HIGHER_IS_BETTER = {"accuracy", "acc", "auc", "roc_auc", "ap", "f1", "macro_f1", "mrr", "r2"}
_LOWER_IS_BETTER = {"mae", "rmse", "mse", "loss", "nll", "cross_entropy", "error"}
# Metrics that are proportions or rank statistics, so every value lies in [0, 1].
_UNIT_INTERVAL = {"accuracy", "acc", "auc", "roc_auc", "ap", "f1", "macro_f1", "mrr"}


def in_unit_interval(name: str) -> bool:
    """Whether metric ``name`` (``val_``/``test_`` prefix ignored) always lies in [0, 1]."""
    key = name.lower().removeprefix("val_").removeprefix("test_")
    return key in _UNIT_INTERVAL or key.startswith("hits@")


def unit_interval_problem(name: str, values: Sequence[float]) -> str | None:
    """Why ``values`` (a ``test`` series of metric ``name``) cannot be a metric bounded in
    [0, 1]: the first value outside it, with a hint when it looks like a percent; None when
    they fit (or the metric is not bounded). NaN (a diverged seed) fits."""
    if not in_unit_interval(name) or not values:
        return None
    # Fast path at C speed (reports are built often): min/max skip a NaN unless it comes
    # first, and then the comparison fails and the loop below decides.
    if min(values) >= 0.0 and max(values) <= 1.0:
        return None
    for epoch, v in enumerate(values):
        if not (0.0 <= v <= 1.0 or math.isnan(v)):
            hint = (f"it looks like a percent; give fractions ({v / 100:.4g}), not percents"
                    if 1.0 < v <= 100.0 else "give the metric as a fraction in [0, 1]")
            return (f"{name} {v!r} at epoch {epoch} lies outside [0, 1]: {hint} (a metric "
                    "that is not a proportion needs another name, e.g. Task(metric=...))")
    return None


CLIPPED = "clipped to [0, 1]"


def clip_to_metric(name: str, low: float, high: float) -> tuple[float, float] | None:
    """An interval ``[low, high]`` of metric ``name`` clipped to [0, 1] when the metric cannot
    leave it but the (finite) interval does (t intervals are symmetric and can); ``None`` when
    there is nothing to clip. Callers label a clipped interval with :data:`CLIPPED`."""
    if not (in_unit_interval(name) and math.isfinite(low) and math.isfinite(high)) \
            or (low >= 0.0 and high <= 1.0):
        return None
    return max(low, 0.0), min(high, 1.0)


@dataclass(frozen=True)
class MetricSpec:
    """A metric's name and its direction (``higher_is_better``)."""

    name: str
    higher_is_better: bool

    @classmethod
    def from_name(cls, name: str, higher_is_better: bool | None = None) -> MetricSpec:
        """Detect the direction of a known metric; an unknown one needs ``higher_is_better``."""
        if higher_is_better is not None:
            return cls(name, bool(higher_is_better))
        key = name.lower()
        for prefix in ("val_", "test_"):
            key = key.removeprefix(prefix)
        if key in _HIGHER_IS_BETTER or key.startswith("hits@"):
            return cls(name, True)
        if key in _LOWER_IS_BETTER:
            return cls(name, False)
        raise ValueError(
            f"unknown metric `{name}`: its direction cannot be detected; pass "
            f"`higher_is_better=True` or `False` (known: {sorted(_HIGHER_IS_BETTER)} and hits@K "
            f"are higher-is-better, {sorted(_LOWER_IS_BETTER)} lower-is-better)"
        )

    @property
    def direction(self) -> str:
        return "higher is better" if self.higher_is_better else "lower is better"


def _floats(values: Sequence[float] | None) -> tuple[float, ...] | None:
    return None if values is None else tuple(float(v) for v in values)


@dataclass(frozen=True)
class History:
    """What one training run recorded, one entry per epoch.

    - ``test``: the task's metric on the reported split (the value that enters X).
    - ``val``: the same metric on a held-out validation split, or ``None`` when the task has
      no held-out series (then ``best_val`` epoch selection is not available for it).
    - ``train_loss``: the training loss (may be empty, e.g. for numbers given by ``from_arrays``).
    - ``extra``: further per-epoch series (``test_rmse``, ``test_hits@50``...), same length.
    - ``outcomes``: per-example test outcomes
    (:class:`~pytest_graphnetz.base.outcomes.TestOutcomes`)
      keyed by 0-based epoch; built-in trainers record them at the final epoch and at the
      ``best_val`` epoch (a mapping of their JSON form is accepted too). May be empty.
    - ``val_metric``: the name of what ``val`` measures when it is not the task's metric, e.g.
      ``"loss"``: its direction (:class:`MetricSpec`) decides which epoch ``best_val`` picks
      (a loss: the minimum). ``None``: ``val`` is the task's metric, in its direction.
    - ``restored_epoch``: the 0-based epoch whose weights training ended with, for a trainer
      whose early stopping restores the best weights: the ``final`` rule reports that epoch's
      test value (the model training produced), not the last epoch run. ``None``: the last.
    - ``selected``: for a history that keeps only the values the epoch rules selected (a
      committed baseline keeps no per-epoch record), the epoch of each rule by name, e.g.
      ``{"final": 0, "best_val": 1}``; a rule named here picks that epoch, whatever the series
      say. ``None``: every rule picks from the series.
    """

    test: tuple[float, ...]
    val: tuple[float, ...] | None = None
    train_loss: tuple[float, ...] = ()
    extra: Mapping[str, tuple[float, ...]] = field(default_factory=dict)
    outcomes: Mapping[int, TestOutcomes] = field(default_factory=dict)
    val_metric: str | None = None
    restored_epoch: int | None = None
    selected: Mapping[str, int] | None = None

    def __post_init__(self) -> None:
        object.__setattr__(self, "test", _floats(self.test))
        object.__setattr__(self, "val", _floats(self.val))
        object.__setattr__(self, "train_loss", _floats(self.train_loss))
        extra = {str(k): _floats(v) for k, v in dict(self.extra).items()}
        object.__setattr__(self, "extra", dict(sorted(extra.items())))
        object.__setattr__(self, "outcomes", _outcomes(self.outcomes))
        n = len(self.test)
        if n == 0:
            raise ValueError("a History needs at least one epoch of `test` values")
        # An empty train_loss means "not recorded", like a None val.
        for name, series in [("val", self.val), *self.extra.items(),
                             ("train_loss", self.train_loss or None)]:
            if series is not None and len(series) != n:
                raise ValueError(
                    f"History series `{name}` has {len(series)} epochs but `test` has {n}"
                )
        outside = [e for e in self.outcomes if not 0 <= e < n]
        if outside:
            raise ValueError(f"History `outcomes` for epoch(s) {outside}, but the run has {n} "
                             "epochs (0-based)")
        if self.val_metric is not None:
            if self.val is None:
                raise ValueError(f"History `val_metric` {self.val_metric!r} names a `val` "
                                 "series, but there is none")
            try:
                MetricSpec.from_name(str(self.val_metric))  # its direction must be known
            except ValueError:
                raise ValueError(
                    f"History `val_metric` {self.val_metric!r}: its direction cannot be detected; "
                    f"name a known metric (lower is better: {sorted(_LOWER_IS_BETTER)}; higher: "
                    f"{sorted(_HIGHER_IS_BETTER)}, hits@K)") from None
            object.__setattr__(self, "val_metric", str(self.val_metric))
        if self.restored_epoch is not None:
            epoch = self.restored_epoch
            if isinstance(epoch, bool) or not isinstance(epoch, int) or not 0 <= epoch < n:
                raise ValueError(f"History `restored_epoch` must be a 0-based epoch of the run "
                                 f"(0..{n - 1}), got {epoch!r}")
        if self.selected is not None:
            if not isinstance(self.selected, Mapping) or not all(
                    isinstance(rule, str) and type(e) is int and 0 <= e < n
                    for rule, e in self.selected.items()):
                raise ValueError(f"History `selected` must map epoch rule names to 0-based "
                                 f"epochs of the run (0..{n - 1}), got {self.selected!r}")
            object.__setattr__(self, "selected", dict(sorted(self.selected.items())))

    @property
    def n_epochs(self) -> int:
        return len(self.test)

    @property
    def final_epoch(self) -> int:
        """The epoch the ``final`` rule reports: the restored one, else the last."""
        return self.n_epochs - 1 if self.restored_epoch is None else self.restored_epoch

    def val_higher_is_better(self, metric: MetricSpec) -> bool:
        """The direction of ``val``: its own ``val_metric``'s, else the task's ``metric``'s."""
        if self.val_metric is None:
            return metric.higher_is_better
        return MetricSpec.from_name(self.val_metric).higher_is_better

    @property
    def diverged(self) -> bool:
        """True when the loss or the metric went NaN/inf at any epoch."""
        series = [self.test, self.train_loss] + ([self.val] if self.val is not None else [])
        return any(not math.isfinite(v) for s in series for v in s)

    def to_dict(self) -> dict:
        out: dict = {"test": list(self.test)}
        if self.val is not None:
            out["val"] = list(self.val)
        if self.train_loss:
            out["train_loss"] = list(self.train_loss)
        if self.extra:
            out["extra"] = {k: list(v) for k, v in self.extra.items()}
        if self.outcomes:
            out["outcomes"] = {str(e): o.to_json() for e, o in self.outcomes.items()}
        # Written only when set: histories without them keep their earlier form (and hashes).
        if self.val_metric is not None:
            out["val_metric"] = self.val_metric
        if self.restored_epoch is not None:
            out["restored_epoch"] = self.restored_epoch
        if self.selected is not None:
            out["selected"] = dict(self.selected)
        return out

    @classmethod
    def from_dict(cls, d: Mapping) -> History:
        return cls(
            test=d["test"],
            val=d.get("val"),
            train_loss=d.get("train_loss", ()),
            extra=d.get("extra", {}),
            outcomes=d.get("outcomes") or {},
            val_metric=d.get("val_metric"),
            restored_epoch=d.get("restored_epoch"),
            selected=d.get("selected"),
        )


def _outcomes(raw: Any) -> dict[int, TestOutcomes]:
    """``{epoch: TestOutcomes}`` from TestOutcomes or their JSON form, keyed by int epochs."""
    if not raw:
        return {}
    from pytest_graphnetz.base.outcomes import TestOutcomes

    if not isinstance(raw, Mapping):
        raise ValueError(f"History `outcomes` must map epochs to outcomes, got "
                         f"{type(raw).__name__}")
    out = {}
    for epoch, value in raw.items():
        if isinstance(epoch, bool) or not str(epoch).lstrip("-").isdigit():
            raise ValueError(f"History `outcomes` keys are epochs (integers), got {epoch!r}")
        out[int(epoch)] = value if isinstance(value, TestOutcomes) \
            else TestOutcomes.from_json(value)
    return dict(sorted(out.items()))


def outcomes_problem(hist: History, metric: str) -> str | None:
    """Why ``hist``'s outcomes do not match its recorded test values (None: they do).

    The metric recomputed from each epoch's outcomes must equal the ``test`` value of that
    epoch (to float32 precision): outcomes from another run, epoch or metric are refused.
    """
    for epoch, out in hist.outcomes.items():
        if not 0 <= epoch < hist.n_epochs:
            return f"outcomes for epoch {epoch}, but the run has {hist.n_epochs} epochs"
        if out.key != metric.lower():
            return f"outcomes of epoch {epoch} recompute {out.metric!r}, the task's metric " \
                   f"is {metric!r}"
        recorded, again = hist.test[epoch], out.value()
        if not math.isclose(recorded, again, rel_tol=1e-5, abs_tol=1e-6):
            return (f"outcomes of epoch {epoch} give {out.metric} {again:.6g}, the recorded "
                    f"test value is {recorded:.6g}")
    return None
