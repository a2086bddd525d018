"""The calibration file beside a baseline (``<test>.calibration.json``, schema
:data:`SCHEMA`): small and reviewable, one line per list of numbers, and the per-seed values
kept so every figure at the selected epoch recomputes; per training budget (``epochs``) only the
summary (mean, paired sd, seeds), and the salted rerun's check (``shift_p``, a ``warning``
when its mean moved). Written atomically; a file that is not a calibration raises
:class:`~.resolution.CalibrationError` naming it and the command that rewrites it."""

from __future__ import annotations

import json
import math
import re
from collections.abc import Mapping
from dataclasses import replace
from pathlib import Path
from typing import Any

from pytest_graphnetz.gates.calibration.resolution import (
    Calibration,
    CalibrationError,
    CellCalibration,
    EpochCurve,
)

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
        entry["shift_p"] = _round(c.shift_p)
        if calibration.shifted(key):
            entry["warning"] = shift_warning(calibration, key)
        if c.curve is not None:
            entry["epochs"] = {"budgets": list(c.curve.budgets),
                               "mean": [_round(x) for x in c.curve.mean],
                               "sd_paired": [_round(x) for x in c.curve.sd_paired],
                               "n": list(c.curve.n)}
            delta = (min_effect or {}).get(key)
            if delta and c.plannable:
                entry["cheapest_budget"] = calibration.cheapest_budget(key, delta)
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
            if entry.get("epochs") is not None:
                cell = replace(cell, curve=_curve(entry["epochs"]))
            cells[(cell.task, cell.model)] = cell
        return Calibration(cells, salt=int(data["salt"]), alpha=float(data["alpha"]),
                           power=float(data["power"]),
                           epoch_selection=str(data["epoch_selection"]), path=path)
    except (KeyError, TypeError, ValueError, OverflowError) as exc:  # 400 digits: Overflow
        raise CalibrationError(f"{where}: malformed calibration ({type(exc).__name__}: "
                               f"{exc}); rewrite it with `graphnetz calibrate`") from None


def shift_warning(calibration: Calibration, key: tuple[str, str]) -> str:
    """What a moved salted mean says (:meth:`~.resolution.Calibration.shifted`): the shift, its
    p, and the likely causes."""
    from pytest_graphnetz.base.text import fmt_p, fmt_signed

    c = calibration.cells[key]
    cells = sum(1 for x in calibration.cells.values() if math.isfinite(x.shift_p))
    return (f"the salted rerun's mean moved by {fmt_signed(c.mean_paired)} (paired t, two-sided "
            f"p = {fmt_p(c.shift_p)} over {c.n} seeds; Holm over the calibration's {cells} "
            f"cell{'' if cells == 1 else 's'}: {fmt_p(calibration.shift_p_adjusted(key))} < "
            f"{calibration.alpha:g}): an innocent change must not move it. Chance alone warns "
            f"in at most {100 * calibration.alpha:.3g}% of innocent calibrations; otherwise the "
            "salt moved the split or the data (draw them from graphnetz.data_seed() or in the "
            "loader), or the script is not deterministic given its seed; the paired sd then "
            "measures more than seed noise")


def _curve(data: Any) -> EpochCurve:
    def floats(xs: Any) -> tuple[float, ...]:
        return tuple(math.nan if x is None else float(x) for x in xs)

    curve = EpochCurve(tuple(int(b) for b in data["budgets"]), floats(data["mean"]),
                       floats(data["sd_paired"]), tuple(int(n) for n in data["n"]))
    if not len(curve.budgets) == len(curve.mean) == len(curve.sd_paired) == len(curve.n):
        raise ValueError("epochs: budgets, mean, sd_paired and n differ in length")
    return curve


def write_calibration(calibration: Calibration, path: str | Path,
                      min_effect: Mapping[tuple[str, str], float | None] | None = None) -> Path:
    """Write :func:`calibration_to_dict` to ``path`` (atomically; its directory made)."""
    from pytest_graphnetz.report.files import write_text_atomic

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
    return calibration_from_dict(_read(path), path=Path(path))


def _read(path: str | Path) -> Any:
    """The JSON in calibration file ``path`` (a regular file, UTF-8, no duplicated name)."""
    from pytest_graphnetz.report.codec import read_json

    try:
        return read_json(Path(path), what="calibration")
    except ValueError as exc:   # ReportFormatError: not a regular file, UTF-8 or JSON
        raise CalibrationError(f"{exc}; rewrite it with `graphnetz calibrate`") from None


def read_min_effects(path: str | Path) -> dict[tuple[str, str], float]:
    """Per cell of the calibration in ``path`` the δ its gate used when it was written (cells
    written without one are left out); read errors as :func:`read_calibration`'s."""
    data = _read(path)
    calibration_from_dict(data, path=Path(path))   # a calibration, or this raises naming it
    return {(str(e["task"]), str(e["model"])): float(e["min_effect"]) for e in data["cells"]
            if e.get("min_effect")}


def _round(x: float) -> float | None:
    return None if not math.isfinite(x) else float(f"{x:.6g}")


__all__ = ["SCHEMA", "SUFFIX", "calibration_from_dict", "calibration_path",
           "calibration_to_dict", "read_calibration", "read_min_effects", "shift_warning",
           "write_calibration"]
