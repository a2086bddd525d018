"""Per-example test outcomes: what one trained model did on each test example at one epoch.

Enough to recompute the task's metric on any resample of the test examples, so a report can
give the finite test set's sampling error (Wilson, bootstrap over examples), a two-level
bootstrap (seeds, then examples) and paired tests on the same examples (McNemar), beside the
spread over training seeds. Pure numpy, like :mod:`pytest_graphnetz.report.epochs`.

Three kinds, by metric:

- ``correct`` (accuracy): one bit per test example, 1 = predicted class right.
- ``errors`` (``mae``, ``rmse``): prediction − target per example, float32.
- ``scores`` (``auc``, ``mrr``, ``hits@K``): the model's score per example (a graph, or a node
  pair for link prediction) and its binary label (1 = positive), float32 and bits.

In JSON (reports and the triple cache) bits are packed 8 to a byte and floats stored as
little-endian float32 bytes, both base64: a 1,000-example accuracy outcome is 168 characters.
"""

from __future__ import annotations

import base64
import math
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import numpy as np

KINDS = {"accuracy": "correct", "acc": "correct", "mae": "errors", "rmse": "errors",
         "auc": "scores", "roc_auc": "scores", "mrr": "scores"}


def outcome_kind(metric: str) -> str | None:
    """The outcome kind that recomputes ``metric`` (``None``: not supported)."""
    key = metric.lower().removeprefix("val_").removeprefix("test_")
    if key.startswith("hits@"):
        return "scores"
    return KINDS.get(key)


@dataclass(frozen=True, eq=False)
class TestOutcomes:
    """Per-example outcomes on the test split at one epoch (see the module docstring).

    ``metric``: the metric they recompute; ``values``: bool [n] (``correct``) or float32 [n]
    (``errors``, ``scores``); ``labels``: bool [n] for ``scores``, else None.
    """

    __test__ = False  # not a pytest test class, despite the name

    metric: str
    values: np.ndarray
    labels: np.ndarray | None = None

    def __post_init__(self) -> None:
        kind = outcome_kind(self.metric)
        if kind is None:
            raise ValueError(f"per-example outcomes for metric {self.metric!r} are not "
                             f"supported (supported: {sorted(KINDS)} and hits@K)")
        values = np.asarray(self.values).reshape(-1)
        if values.size == 0:
            raise ValueError("per-example outcomes need at least one test example")
        if kind == "correct":
            if values.dtype != bool and not np.isin(values, (0, 1)).all():
                raise ValueError(f"{self.metric} outcomes must be 0/1 per example")
            values = values.astype(bool)
        else:
            values = values.astype(np.float32)
            if not np.isfinite(values).all():
                raise ValueError(f"{self.metric} outcomes must be finite (a diverged epoch "
                                 "has no outcomes)")
        labels = None
        if kind == "scores":
            if self.labels is None:
                raise ValueError(f"{self.metric} outcomes need `labels` (1 = positive)")
            labels = np.asarray(self.labels).reshape(-1)
            if labels.shape != values.shape or not np.isin(labels, (0, 1)).all():
                raise ValueError(f"{self.metric} outcomes: `labels` must be 0/1, one per "
                                 f"score ({values.size}), got {labels.size}")
            labels = labels.astype(bool)
        elif self.labels is not None:
            raise ValueError(f"{self.metric} outcomes take no `labels`")
        object.__setattr__(self, "values", values)
        object.__setattr__(self, "labels", labels)

    @property
    def kind(self) -> str:
        return outcome_kind(self.metric)  # type: ignore[return-value]

    @property
    def n(self) -> int:
        """Number of test examples."""
        return int(self.values.size)

    @property
    def proportion(self) -> bool:
        """Whether the metric is a proportion of examples (Wilson applies)."""
        return self.kind == "correct"

    def value(self) -> float:
        """The metric on all the examples."""
        return float(self.resampled(np.ones((1, self.n)))[0])

    def resampled(self, weights: np.ndarray) -> np.ndarray:
        """The metric under example weights ``weights`` (B, n) (bootstrap counts); (B,).

        A weight of 2 counts the example twice, as if drawn twice with replacement.
        """
        w = np.asarray(weights, dtype=float)
        total = w.sum(axis=1)
        if self.kind == "correct":
            return (w @ self.values.astype(float)) / total
        if self.kind == "errors":
            e = self.values.astype(float)
            if self.key == "mae":
                return (w @ np.abs(e)) / total
            return np.sqrt((w @ (e * e)) / total)
        return np.array([self._score_metric(row) for row in w])

    @property
    def key(self) -> str:
        return self.metric.lower().removeprefix("val_").removeprefix("test_")

    def _score_metric(self, w: np.ndarray) -> float:
        from pytest_graphnetz.base import metrics

        idx = np.repeat(np.arange(self.n), w.astype(int))
        s, y = self.values[idx].astype(float), self.labels[idx]  # type: ignore[index]
        if self.key in ("auc", "roc_auc"):
            if y.all() or not y.any():
                return math.nan  # a resample with one class has no AUC
            return metrics.roc_auc(s, y)
        if not y.any() or y.all():
            return math.nan
        if self.key == "mrr":
            return metrics.mrr(s[y], s[~y])
        return metrics.hits_at_k(s[y], s[~y], int(self.key.removeprefix("hits@")))

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, TestOutcomes):
            return NotImplemented
        if self.metric != other.metric or not np.array_equal(self.values, other.values):
            return False
        if self.labels is None or other.labels is None:
            return self.labels is None and other.labels is None
        return bool(np.array_equal(self.labels, other.labels))

    __hash__ = None  # type: ignore[assignment]

    def __repr__(self) -> str:
        return f"TestOutcomes(metric={self.metric!r}, n={self.n}, value={self.value():.4g})"

    # -- JSON --------------------------------------------------------------------------------

    def to_json(self) -> dict:
        out: dict = {"metric": self.metric, "n": self.n}
        if self.kind == "correct":
            out["correct"] = _bits(self.values)
        else:
            out[self.kind] = base64.b64encode(self.values.astype("<f4").tobytes()).decode()
        if self.labels is not None:
            out["labels"] = _bits(self.labels)
        return out

    @classmethod
    def from_json(cls, d: Any) -> TestOutcomes:
        """Inverse of :meth:`to_json`; also accepts plain lists (a custom trainer's mapping)."""
        if not isinstance(d, Mapping) or not isinstance(d.get("metric"), str):
            raise ValueError(f"per-example outcomes must be an object with a `metric`, got {d!r}"
                             [:200])
        kind = outcome_kind(d["metric"])
        if kind is None:
            raise ValueError(f"per-example outcomes: unsupported metric {d['metric']!r}")
        n = d.get("n")
        if n is not None and (type(n) is not int or n < 1):
            raise ValueError(f"per-example outcomes: `n` must be a positive integer, got {n!r}")
        if kind not in d:
            raise ValueError(f"{d['metric']} outcomes need `{kind}`")
        values = _read(d[kind], n, bits=kind == "correct", what=kind)
        labels = _read(d["labels"], values.size, bits=True, what="labels") \
            if d.get("labels") is not None else None
        return cls(d["metric"], values, labels)


def _bits(values: np.ndarray) -> str:
    return base64.b64encode(np.packbits(values.astype(bool)).tobytes()).decode()


def _read(raw: Any, n: int | None, *, bits: bool, what: str) -> np.ndarray:
    """A base64 field (needs ``n``) or a plain JSON list, checked against ``n``."""
    if isinstance(raw, list):
        if any(isinstance(v, (list, dict, str)) or v is None for v in raw):
            raise ValueError(f"per-example `{what}` must be numbers")
        arr = np.asarray(raw, dtype=float)
    elif isinstance(raw, str):
        if n is None:
            raise ValueError(f"per-example `{what}` in base64 needs `n`")
        try:
            data = base64.b64decode(raw.encode("ascii"), validate=True)
        except ValueError as exc:
            raise ValueError(f"per-example `{what}` is not valid base64 ({exc})") from None
        if bits:
            if len(data) != (n + 7) // 8:
                raise ValueError(f"per-example `{what}` holds {len(data) * 8} bits, "
                                 f"not the {n} examples `n` declares")
            arr = np.unpackbits(np.frombuffer(data, dtype=np.uint8))[:n].astype(bool)
        else:
            if len(data) != 4 * n:
                raise ValueError(f"per-example `{what}` holds {len(data) // 4} float32 values, "
                                 f"not the {n} examples `n` declares")
            arr = np.frombuffer(data, dtype="<f4").astype(np.float32)
    else:
        raise ValueError(f"per-example `{what}` must be base64 text or a list")
    if n is not None and arr.size != n:
        raise ValueError(f"per-example `{what}` has {arr.size} values, `n` says {n}")
    return arr
