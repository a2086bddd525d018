"""``Task``: what to load, how to train it, and which metric to report.

Importing this module does not import torch; loaders and trainers do, when they run.
"""

from __future__ import annotations

import inspect
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

KINDS = ("node", "graph", "graph_reg", "link", "command")
DEFAULT_METRIC = {"node": "accuracy", "graph": "accuracy", "graph_reg": "mae", "link": "auc",
                  "command": "accuracy"}


@dataclass(frozen=True)
class Task:
    """A benchmark task.

    - ``loader``: ``loader(root)`` or, when it takes a ``seed`` keyword, ``loader(root, seed=s)``
      (then its data may differ per seed; otherwise it is constant across seeds).
    - ``kind``: which built-in trainer runs it (``node``, ``graph``, ``graph_reg``, ``link``),
      or ``command``: each model is a training script (a
      :class:`~pytest_graphnetz.runner.command.Command`) run per seed in a subprocess, and the
      loader only fingerprints the data it reads (see :mod:`pytest_graphnetz.runner.command`,
      docs/command-tasks.md).
    - ``metric``: the reported metric (default per kind: accuracy, accuracy, mae, auc).
    - ``trainer``: a custom training loop replacing the built-in one (see ``training``), or one
      per model, ``{"GCN": train_gcn, "GAT": train_gat}`` (every model of a run named; ``None``
      for the built-in loop), so models trained differently share one report, one gate call
      and one Holm family.
    - ``options``: extra trainer settings (``hidden``, ``hits_k``...), part of the cache key.
    - ``in_channels`` / ``out_channels``: override what is inferred from the data.
    - ``folds``: k-fold cross-validation (node and graph kinds): seed ``s`` trains and tests on
      fold ``s mod k`` of the partition drawn from ``s // k`` (see :mod:`.folds`); paired tests
      and gates on such a task use the corrected resampled t test.
    """

    name: str
    loader: Callable[..., Any]
    kind: str = "node"
    metric: str | None = None
    epochs: int = 200
    lr: float = 0.01
    weight_decay: float = 5e-4
    batch_size: int = 64
    category: str = "custom"
    trainer: Callable[..., Any] | Mapping[str, Callable[..., Any] | None] | None = None
    in_channels: int | None = None
    out_channels: int | None = None
    options: Mapping[str, Any] = field(default_factory=dict)
    folds: int | None = None

    def __post_init__(self) -> None:
        from pytest_graphnetz.base.text import check_name

        check_name("task", self.name)
        for what in ("name", "category"):
            _check_directory_name(self.name, what, getattr(self, what))
        if self.kind not in KINDS:
            raise ValueError(
                f"Task {self.name!r}: `kind` must be one of {KINDS}, got {self.kind!r}"
            )
        if self.epochs < 1:
            raise ValueError(f"Task {self.name!r}: `epochs` must be >= 1, got {self.epochs}")
        if self.folds is not None:
            from pytest_graphnetz.runner.tasks.folds import MIN_FOLDS

            if self.kind == "link" or isinstance(self.folds, bool) or \
                    not isinstance(self.folds, int) or self.folds < MIN_FOLDS:
                raise ValueError(
                    f"Task {self.name!r}: `folds` must be an integer >= {MIN_FOLDS} (test, "
                    f"validation and training folds) on a node or graph task, got "
                    f"folds={self.folds!r} on kind {self.kind!r}")
        if self.kind == "command" and (self.trainer is not None or self.folds is not None):
            raise ValueError(f"Task {self.name!r}: a command task's scripts train and split the "
                             "data themselves; it takes no `trainer` or `folds`")
        if not callable(self.loader):
            raise TypeError(f"Task {self.name!r}: `loader` must be callable, got {self.loader!r}")
        trainers = self.trainer.items() if isinstance(self.trainer, Mapping) \
            else [("", self.trainer)]
        for model, trainer in trainers:
            if trainer is not None and not callable(trainer):
                where = f"`trainer[{model!r}]`" if model else "`trainer`"
                raise TypeError(f"Task {self.name!r}: {where} must be a callable "
                                f"train(model, data, *, task, device), got {trainer!r}")

    @property
    def metric_name(self) -> str:
        return self.metric or DEFAULT_METRIC[self.kind]

    @property
    def seeded(self) -> bool:
        """Whether the loader takes the benchmark seed (detected from its signature)."""
        try:
            params = inspect.signature(self.loader).parameters
        except (TypeError, ValueError):
            return False
        return "seed" in params

    def trainer_for(self, model: str) -> Callable[..., Any] | None:
        """The custom trainer of ``model`` (``None``: the built-in one of the task's kind)."""
        if not isinstance(self.trainer, Mapping):
            return self.trainer
        if model not in self.trainer:
            raise ValueError(
                f"Task {self.name!r}: `trainer` maps models {sorted(self.trainer)} to their "
                f"trainers but not model {model!r}; add `{model!r}: train_fn` (or `{model!r}: "
                "None` for the built-in trainer)")
        return self.trainer[model]

    def load(self, root: str, seed: int) -> Any:
        data = self.loader(root, seed=seed) if self.seeded else self.loader(root)
        if self.folds is None:
            return data
        from pytest_graphnetz.runner.tasks.folds import apply_folds

        return apply_folds(data, kind=self.kind, k=self.folds, seed=seed, task=self.name)

    def config(self) -> dict[str, Any]:
        """The training settings that change results (part of the cache key)."""
        if self.kind == "command":  # the script's arguments hold its settings, not the Task
            return {"kind": self.kind, "metric": self.metric_name,
                    "options": dict(sorted(self.options.items()))}
        config = {
            "kind": self.kind, "metric": self.metric_name, "epochs": self.epochs, "lr": self.lr,
            "weight_decay": self.weight_decay, "batch_size": self.batch_size,
            "options": dict(sorted(self.options.items())),
        }
        if self.folds is not None:  # absent otherwise: cache keys of other tasks unchanged
            config["folds"] = self.folds
        return config


def _check_directory_name(task: Any, what: str, value: Any) -> None:
    """``value`` names a directory under the data root (``<root>/<category>/<name>``): it must
    be one plain path component, so a task can never read or write outside that root."""
    if (not isinstance(value, str) or value.strip() in ("", ".", "..")
            or any(c in value for c in "/\\\0") or (len(value) > 1 and value[1] == ":")):
        raise ValueError(
            f"Task {task!r}: `{what}` {value!r} cannot name a directory under the data root (it "
            "must be one plain file name: no '/', '\\', drive letter, '.' or '..'); rename it, "
            "e.g. to " + repr(_plain(value))
        )


def _plain(value: Any) -> str:
    import re

    return re.sub(r"[^A-Za-z0-9_.+=@-]+", "_", str(value)).strip("._") or "task"
