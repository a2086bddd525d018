"""The script side of a command task: three added lines make a training script gateable.

::

    import pytest_graphnetz.script as graphnetz
    graphnetz.seed()                      # after argparse, before data, model and optimizer
    ...
    for epoch in range(1, args.epochs + 1):
        ...
        graphnetz.record(test=test_acc, val=val_acc, train_loss=loss)   # once per epoch

Reseeding is the script's job (the runner cannot reach into another process): :func:`seed`
reads the seed the runner passes in ``GRAPHNETZ_SEED`` and seeds ``random``, NumPy and torch
(CPU and CUDA); it also applies the thread count and, on CUDA, the deterministic-algorithms
mode the run was given. :func:`record` appends one epoch; the file named by
``GRAPHNETZ_OUTPUT`` is written when the script exits (docs/command-tasks.md gives its format).
Run by hand (no ``GRAPHNETZ_*`` variables) both do nothing: the script behaves as before.

Only the standard library is imported here; NumPy and torch only when the script has them.
"""

from __future__ import annotations

import atexit
import json
import math
import os
import random
import sys
from typing import Any

SEED_ENV = "GRAPHNETZ_SEED"
# Set only when the script's seed is not the benchmark seed (a calibration's salted rerun):
# the benchmark seed, for what must not move with the salt (a split drawn from the seed).
DATA_SEED_ENV = "GRAPHNETZ_DATA_SEED"
DEVICE_ENV = "GRAPHNETZ_DEVICE"
OUTPUT_ENV = "GRAPHNETZ_OUTPUT"
METRIC_ENV = "GRAPHNETZ_METRIC"
THREADS_ENV = "GRAPHNETZ_THREADS"
DETERMINISTIC_ENV = "GRAPHNETZ_DETERMINISTIC"
# "0": the runner starts every script run in a fresh interpreter (see warm_mode).
WARM_ENV = "GRAPHNETZ_WARM_SCRIPTS"
# The output file's format marker; the runner reads version 1.
FORMAT = "pytest-graphnetz/command-output"
FORMAT_VERSION = 1
SERIES = ("test", "val", "train_loss")


def seed() -> int | None:
    """Seed ``random``, NumPy and torch from ``GRAPHNETZ_SEED``; the seed, or None outside a
    graphnetz run (then nothing is touched).

    Call it after the script's imports: NumPy and torch are seeded when the script has
    imported them (a script that never uses torch does not pay seconds to import it here).
    """
    value = os.environ.get(SEED_ENV)
    if value is None:
        return None
    chosen = int(value)
    random.seed(chosen)
    if "numpy" in sys.modules:
        import numpy as np

        np.random.seed(chosen)
    if "torch" in sys.modules:
        import torch

        torch.manual_seed(chosen)  # CPU and every CUDA device
        threads = os.environ.get(THREADS_ENV)
        if threads:
            torch.set_num_threads(int(threads))
        mode = os.environ.get(DETERMINISTIC_ENV, "off")
        if os.environ.get(DEVICE_ENV, "").startswith("cuda") and mode in ("on", "warn"):
            torch.use_deterministic_algorithms(True, warn_only=mode == "warn")
    return chosen


def data_seed() -> int | None:
    """The benchmark seed, for the draws that must stay fixed when the runner salts the seed
    the script receives (``graphnetz calibrate``: only initialisation and training should
    move, not a split the script draws from the seed); :func:`seed`'s value otherwise, None
    outside a graphnetz run. Seed a split generator with it, e.g.
    ``np.random.default_rng(graphnetz.data_seed())``."""
    value = os.environ.get(DATA_SEED_ENV, os.environ.get(SEED_ENV))
    return None if value is None else int(value)


def warm_mode(device: str = "cpu") -> str | None:
    """Why the runner starts a command task's script runs cold here, on ``device`` (None: it
    may fork them from a warm interpreter, :mod:`pytest_graphnetz.runner.command.warm`).
    Here, standard library only, so the session header can say it without importing more."""
    if os.environ.get(WARM_ENV, "1") == "0":
        return f"{WARM_ENV}=0"
    if not sys.platform.startswith("linux") or not hasattr(os, "fork"):
        return f"fork is unsafe or absent on {sys.platform}"
    if device.partition(":")[0] != "cpu":
        return f"device {device}: CUDA runs start cold"
    return None


class _Recorder:
    """The epochs recorded so far; written to ``GRAPHNETZ_OUTPUT`` once, at exit."""

    def __init__(self, path: str) -> None:
        self.path = path
        self.record: dict[str, Any] = {"format": FORMAT, "version": FORMAT_VERSION,
                                       "metric": os.environ.get(METRIC_ENV, "accuracy")}
        atexit.register(self.write)

    def add(self, values: dict[str, Any], fixed: dict[str, Any]) -> None:
        for key, value in fixed.items():
            if value is not None:
                self.record[key] = value
        epochs = len(self.record.get("test", ()))
        for name, value in values.items():
            if value is None:
                continue
            target = self.record if name in SERIES else self.record.setdefault("extra", {})
            series = target.setdefault(name, [])
            if len(series) != epochs:  # an epoch without it: the runner names the gap
                raise ValueError(f"graphnetz.record: `{name}` was recorded at {len(series)} of "
                                 f"the {epochs} earlier epochs; record it at every epoch")
            series.append(_number(value))

    def write(self) -> None:
        tmp = f"{self.path}.tmp{os.getpid()}"
        with open(tmp, "w", encoding="utf-8") as fh:
            json.dump(self.record, fh)
        os.replace(tmp, self.path)  # the runner never reads a half-written file


def _number(value: Any) -> float:
    """A float from a Python number, a 0-dim tensor or a NumPy scalar (``.item()``)."""
    number = float(value.item() if hasattr(value, "item") else value)
    return number if math.isfinite(number) else math.nan


_RECORDER: list[_Recorder] = []  # one per process, created by the first record()


def record(*, test: Any, val: Any = None, train_loss: Any = None, val_metric: str | None = None,
           metric: str | None = None, **extra: Any) -> None:
    """Append one epoch: ``test`` (the task's metric on the reported split), optionally ``val``
    (held-out series; ``val_metric="loss"`` when it is a loss: ``best_val`` then takes its
    minimum), ``train_loss`` and further named series. ``metric`` overrides the metric name
    the runner passed (``GRAPHNETZ_METRIC``). Does nothing outside a graphnetz run."""
    path = os.environ.get(OUTPUT_ENV)
    if path is None:
        return
    if not _RECORDER:
        _RECORDER.append(_Recorder(path))
    _RECORDER[0].add({"test": test, "val": val, "train_loss": train_loss, **extra},
                     {"val_metric": val_metric, "metric": metric})


def restored(epoch: int) -> None:
    """Early stopping restored the weights of ``epoch`` (0-based, as recorded): the ``final``
    rule reports that epoch's test value. Call after the last :func:`record`."""
    if _RECORDER:
        _RECORDER[0].record["restored_epoch"] = int(epoch)


__all__ = ["seed", "data_seed", "record", "restored", "FORMAT", "FORMAT_VERSION"]
