"""Reading a command task's metrics file: its size bounded, its JSON checked, into a History.

The format (docs/command-tasks.md) is what :mod:`pytest_graphnetz.script` writes: the task's
metric per epoch (``test``, optionally ``val``, ``train_loss`` and ``extra`` series) and the
epoch fields. Anything else is refused with what is wrong, never gated under the wrong name.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from pytest_graphnetz import script as script_side
from pytest_graphnetz.report.epochs import History
from pytest_graphnetz.runner.command.task import CommandError

# The metrics file is read whole, parsed into floats: past MAX_METRICS_BYTES it is refused (a
# 2-million-epoch file peaked at 840 MB).
MAX_METRICS_BYTES = 8 * 2**20


def read_metrics_file(path: Path, *, where: str, limit: int = MAX_METRICS_BYTES) -> str:
    """The text of a run's metrics file, refused past ``limit`` bytes."""
    from pytest_graphnetz.report.files import read_regular_file

    size = path.stat().st_size
    if size > limit:
        raise CommandError(
            f"{where}: its metrics file {path} holds {size / 2**20:.1f} MiB, more than the "
            f"{limit / 2**20:g} MiB a command task reads (the bound: "
            "CommandExecutor(max_metrics_bytes=...), by default "
            "pytest_graphnetz.runner.command.output.MAX_METRICS_BYTES); record once per epoch, "
            "not per step or batch")
    try:
        return read_regular_file(path, limit=limit).decode("utf-8")
    except OSError as exc:  # a FIFO or a device left at the path, a file that grew past it
        raise CommandError(f"{where}: its metrics file {path} cannot be read ({exc})") from exc


def read_output(text: str, *, metric: str) -> History:
    """The History in a metrics file's text; ``ValueError`` naming the problem otherwise.

    ``metric`` must be the task's metric (case aside): a script reporting another one is
    refused rather than gated under the wrong name.
    """
    from pytest_graphnetz.report.codec import parse_json

    data = parse_json(text, "the metrics file", constants=True)  # bare NaN: a diverged run
    if not isinstance(data, Mapping):
        raise ValueError(f"expected a JSON object, got {type(data).__name__}")
    if data.get("format", script_side.FORMAT) != script_side.FORMAT or \
            data.get("version", 1) != script_side.FORMAT_VERSION:
        raise ValueError(f"`format`/`version` {data.get('format')!r}/{data.get('version')!r}: "
                         f"this pytest-graphnetz reads {script_side.FORMAT!r} version "
                         f"{script_side.FORMAT_VERSION}")
    name = data.get("metric")
    if not isinstance(name, str) or name.lower() != metric.lower():
        raise ValueError(f"`metric` is {name!r} but the task reports {metric!r}; write that "
                         "metric, or set the task's `metric=`")
    if "test" not in data:
        raise ValueError("no `test` series (the task's metric per epoch)")

    def series(key: str, values: Any) -> list[float] | None:
        if values is None:
            return None
        if not isinstance(values, list) or not all(
                v is None or (type(v) in (int, float)) for v in values):
            raise ValueError(f"`{key}` must be a list of numbers (null or NaN: diverged)")
        try:
            return [math.nan if v is None else float(v) for v in values]
        except OverflowError:  # an integer of 400 digits
            raise ValueError(f"`{key}` holds a number too large for a float") from None

    extra = data.get("extra") or {}
    if not isinstance(extra, Mapping):
        raise ValueError("`extra` must be an object of named series")
    val = series("val", data.get("val"))
    return History(test=tuple(series("test", data["test"]) or ()),
                   val=None if val is None else tuple(val),
                   train_loss=tuple(series("train_loss", data.get("train_loss")) or ()),
                   extra={k: tuple(series(f"extra.{k}", v) or ()) for k, v in extra.items()},
                   val_metric=data.get("val_metric"), restored_epoch=data.get("restored_epoch"))

