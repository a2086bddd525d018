"""The calibration file beside a baseline (``<test>.calibration.json``, schema
:data:`SCHEMA`): small and reviewable, one line per list of numbers, and the per-seed values
kept so every figure recomputes. Written atomically; a file that is not a calibration raises
:class:`~.resolution.CalibrationError` naming it and the command that rewrites it."""

from __future__ import annotations

import json
import math
import re
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from .resolution import Calibration, CalibrationError, CellCalibration

SCHEMA = "graphnetz-calibration/1"
SUFFIX = ".calibration.json"


def calibration_path(baseline_path: str | Path) -> Path:
    """Where a baseline's calibration lives: ``<test>.json`` → ``<test>.calibration.json``."""
    path = Path(baseline_path)
    return path.with_name(path.name.removesuffix(".json") + SUFFIX)


def calibration_to_dict(calibration: Calibration,
                        min_effect: Mapping[tuple[str, str], float | None] | None = None
                        ) -> dict:
    """The file's content: per cell its sds and resolvable δ, the seeds ``min_effect[cell]``
    (the δ its gate uses, when given) needs, and the per-seed values."""
    cells = []
    for key, c in calibration.cells.items():
        entry: dict[str, Any] = {
            "task": c.task, "model": c.model, "metric": c.metric, "n": c.n,
            "sd_seed": _round(c.sd_seed), "sd_paired": _round(c.sd_paired),
            "mean_paired": _round(c.mean_paired),
        }
        if c.plannable:
            entry["resolvable_min_effect"] = _round(calibration.resolvable(key))
            delta = (min_effect or {}).get(key)
            if delta:
                entry["min_effect"] = delta
                entry["seeds_for_min_effect"] = calibration.seeds_needed(key, delta)
        entry.update(seeds=list(c.seeds), baseline=list(c.baseline), salted=list(c.salted))
        cells.append(entry)
    return {"schema": SCHEMA, "salt": calibration.salt, "alpha": calibration.alpha,
            "power": calibration.power, "epoch_selection": calibration.epoch_selection,
            "family": calibration.family, "cells": cells}


def calibration_from_dict(data: Any, *, path: Path | None = None) -> Calibration:
    """Inverse of :func:`calibration_to_dict` (the derived figures are recomputed, not read);
    ``path``: the file it came from, named by every error and kept as ``Calibration.path``."""
    where = str(path) if path is not None else "calibration"
    if not isinstance(data, dict) or data.get("schema") != SCHEMA:
        found = data.get("schema") if isinstance(data, dict) else type(data).__name__
        raise CalibrationError(
            f"{where}: not a calibration file of schema {SCHEMA!r} (found {found!r}); "
            "rewrite it with `graphnetz calibrate`")
    try:
        cells = {}
        for entry in data["cells"]:
            cell = CellCalibration(
                str(entry["task"]), str(entry["model"]), str(entry["metric"]),
                tuple(int(s) for s in entry["seeds"]),
                tuple(float(v) for v in entry["baseline"]),
                tuple(float(v) for v in entry["salted"]))
            if not len(cell.seeds) == len(cell.baseline) == len(cell.salted):
                raise ValueError("seeds, baseline and salted differ in length")
            cells[(cell.task, cell.model)] = cell
        return Calibration(cells, salt=int(data["salt"]), alpha=float(data["alpha"]),
                           power=float(data["power"]),
                           epoch_selection=str(data["epoch_selection"]), path=path)
    except (KeyError, TypeError, ValueError, OverflowError) as exc:  # 400 digits: Overflow
        raise CalibrationError(f"{where}: malformed calibration ({type(exc).__name__}: "
                               f"{exc}); rewrite it with `graphnetz calibrate`") from None


def write_calibration(calibration: Calibration, path: str | Path,
                      min_effect: Mapping[tuple[str, str], float | None] | None = None) -> Path:
    """Write :func:`calibration_to_dict` to ``path`` (atomically; its directory made)."""
    from ..report.files import write_text_atomic

    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    text = json.dumps(calibration_to_dict(calibration, min_effect), indent=1)
    # One line per list of numbers (seeds, per-seed values): a diff shows the cell changed.
    text = re.sub(r"\[\s*([^\[\]{}]*?)\s*\]",
                  lambda m: "[" + ", ".join(x.strip() for x in m.group(1).split(",")) + "]",
                  text)
    write_text_atomic(path, text + "\n")
    return path


def read_calibration(path: str | Path) -> Calibration:
    """The calibration in ``path``; anything that is not one raises ``CalibrationError``."""
    from ..report.files import read_regular_file

    path = Path(path)
    try:
        data = json.loads(read_regular_file(path).decode("utf-8"))
    except UnicodeDecodeError as exc:
        raise CalibrationError(f"{path}: not UTF-8 text ({exc.reason} at byte {exc.start}); "
                               "rewrite it with `graphnetz calibrate`") from None
    except json.JSONDecodeError as exc:
        raise CalibrationError(f"{path}: not JSON ({exc}); rewrite it with "
                               "`graphnetz calibrate`") from None
    except RecursionError:
        raise CalibrationError(f"{path}: JSON nested too deeply to be a calibration; "
                               "rewrite it with `graphnetz calibrate`") from None
    return calibration_from_dict(data, path=path)


def _round(x: float) -> float | None:
    return None if not math.isfinite(x) else float(f"{x:.6g}")


__all__ = ["SCHEMA", "SUFFIX", "calibration_from_dict", "calibration_path",
           "calibration_to_dict", "read_calibration", "write_calibration"]
