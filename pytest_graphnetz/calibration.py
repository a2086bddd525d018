"""Calibration: what δ a cell's seeds can resolve, measured from an innocent change.

A gate's NOT WORSE needs the one-sided lower bound of the paired Δ above −δ, and its REGRESSED
needs a drop of δ to stand out of the paired noise: whether the configured seeds can do both
depends on the spread of paired differences *when nothing changed*, which only training tells.
:func:`calibrate_reports` measures it: the baseline models trained a second time under
*salted* seeds (:class:`SaltedFactory`: every random draw of initialisation and training moves,
the data and splits do not) give per seed an innocent paired difference; their sd is the noise
any change of the model must stand out of.

From that sd the planning functions of :mod:`pytest_graphnetz.stats.planning` give per cell the
smallest δ the seeds resolve (NOT WORSE on no change and REGRESSED on a drop of δ, each with
probability ≥ ``power``) and the seeds a chosen δ needs. The result is stored beside the
baseline (``baselines/<module>/<test>.calibration.json``), and :func:`resolution_note` lets a
gate say when its δ is finer than its seeds resolve.
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field, fields, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

from .tasks.command import Command
from .text import ceil_significant, fmt_num

if TYPE_CHECKING:
    import numpy as np

    from .report import BenchmarkReport
    from .verdicts import CellVerdict

SCHEMA = "graphnetz-calibration/1"
SUFFIX = ".calibration.json"
DEFAULT_SALT = 1
DEFAULT_POWER = 0.8
SALT_LABEL = "graphnetz-calibrate"
# A plain attribute set on every salted model: the model fingerprint (and so the triple cache
# key) covers it, so two salts never share a cached run, even for a model whose initial weights
# do not depend on the seed.
SALT_ATTRIBUTE = "graphnetz_calibration_salt"


class CalibrationError(ValueError):
    """A calibration that cannot stand for its cells (the salt changed the data, a bad file)."""


# -- the innocent change --------------------------------------------------------------------------


def salted_seed(seed: int, salt: int) -> int:
    """The seed every RNG is reseeded with before a salted model is built, derived from the
    benchmark ``seed`` and ``salt`` (another stream for every salt); in ``[0, 2**32)``, the
    range every seed the runner uses lies in (NumPy's)."""
    from .tasks.splits import derive_seed

    return derive_seed(seed, SALT_LABEL, str(int(salt))) % 2**32


def reseed_all(seed: int) -> None:
    """Reseed Python's ``random``, NumPy, torch on the CPU and every CUDA device with ``seed``."""
    import random

    import numpy as np
    import torch

    random.seed(seed)
    np.random.seed(seed)
    torch.manual_seed(seed)
    torch.cuda.manual_seed_all(seed)


@dataclass(frozen=True)
class SaltedFactory:
    """``factory`` built under salted randomness: the runner has just reseeded every RNG with the
    benchmark seed (after loading the data, so data and splits are already fixed); this reseeds
    them all with :func:`salted_seed` before building. Initialisation, dropout, shuffling and
    negative sampling (the built-in trainers derive their generators from ``torch.initial_seed``)
    draw other numbers; the model and the data are the same. Picklable, for worker processes.
    """

    factory: Callable[[int, int], Any]
    salt: int = DEFAULT_SALT

    def __call__(self, in_channels: int, out_channels: int) -> Any:
        import torch

        # torch.initial_seed() is the benchmark seed the runner reseeded with just before.
        reseed_all(salted_seed(torch.initial_seed(), self.salt))
        model = self.factory(in_channels, out_channels)
        setattr(model, SALT_ATTRIBUTE, int(self.salt))
        return model


@dataclass(frozen=True)
class SaltedCommand(Command):
    """A command task's model (:class:`~pytest_graphnetz.tasks.command.Command`) under salted
    randomness: the script receives :func:`salted_seed` as its seed (``{seed}``,
    ``GRAPHNETZ_SEED``, so ``graphnetz.seed()`` reseeds every RNG with it) and the benchmark
    seed in ``GRAPHNETZ_DATA_SEED`` (``graphnetz.data_seed()``), for a split drawn from the
    seed. The runner loads and fingerprints the data at the benchmark seed, so the pairing
    checks of :func:`calibrate_reports` hold. The salt is part of :meth:`identity`, hence of
    the cache key: a salted run never reuses an unsalted one."""

    salt: int = DEFAULT_SALT

    @classmethod
    def of(cls, command: Command, salt: int) -> SaltedCommand:
        return cls(**{f.name: getattr(command, f.name) for f in fields(Command)}, salt=salt)

    def script_seed(self, seed: int) -> int:
        return salted_seed(seed, self.salt)

    def identity(self) -> dict[str, Any]:
        return {**super().identity(), "salt": int(self.salt)}


def salted_models(models: Mapping[str, Callable[[int, int], Any] | Command],
                  salt: int = DEFAULT_SALT) -> dict[str, SaltedFactory | SaltedCommand]:
    """Every model of a ``run_benchmark`` call under salted randomness: a factory as
    ``SaltedFactory(factory, salt)``, a command task's script as ``SaltedCommand``."""
    if isinstance(salt, bool) or int(salt) != salt or int(salt) < 1:
        raise ValueError(f"`salt` must be a positive integer (0 is the unsalted run), got {salt!r}")
    return {name: SaltedCommand.of(model, int(salt)) if isinstance(model, Command)
            else SaltedFactory(model, int(salt)) for name, model in models.items()}


# -- resolution: planning, through stats.planning -------------------------------------------------


def resolvable_min_effect(sd_diff: float, n_seeds: int, *, alpha: float = 0.05,
                          alpha_regressed: float | None = None,
                          power: float = DEFAULT_POWER) -> float:
    """The smallest δ that ``n_seeds`` paired seeds resolve when paired differences have sd
    ``sd_diff``: the least δ with :func:`~pytest_graphnetz.stats.planning.seeds_for_min_effect`
    ``(sd_diff, δ) <= n_seeds`` (no change reads NOT WORSE and a drop of δ REGRESSED, each with
    probability ≥ ``power``), found by bisection (the seeds needed fall as δ grows). In the units
    of ``sd_diff``, to a relative precision of 1e-4.
    """
    from .stats.planning import seeds_for_min_effect

    if int(n_seeds) < 2:
        raise ValueError(f"`n_seeds` must be at least 2 paired seeds, got {n_seeds!r}")
    if not (math.isfinite(sd_diff) and sd_diff >= 0):
        raise ValueError(f"`sd_diff` must be a finite number >= 0, got {sd_diff!r}")
    if sd_diff == 0:
        return 0.0

    # With margin 0 the seeds needed depend on δ / sd only: bisect the ratio on sd 1.
    def resolves(ratio: float) -> bool:
        return seeds_for_min_effect(1.0, ratio, alpha=alpha, alpha_regressed=alpha_regressed,
                                    power=power) <= n_seeds

    low, high = 0.0, 1.0
    while not resolves(high):
        low, high = high, high * 2
    while high - low > 1e-4 * high:
        mid = (low + high) / 2
        low, high = (low, mid) if resolves(mid) else (mid, high)
    return high * sd_diff


# -- the measurement ------------------------------------------------------------------------------


@dataclass(frozen=True)
class CellCalibration:
    """One (task, model) cell: the per-seed values of the baseline run and of its salted rerun
    (``seeds`` order, under the report's epoch selection), and what they imply.

    ``sd_seed``: sd of the baseline's per-seed values; ``sd_paired``: sd of the paired
    differences salted − baseline (the noise of an innocent change); ``n``: seeds paired (a
    seed diverged on either side is left out).
    """

    task: str
    model: str
    metric: str
    seeds: tuple[int, ...]
    baseline: tuple[float, ...]
    salted: tuple[float, ...]

    def _pairs(self) -> tuple[np.ndarray, np.ndarray]:
        import numpy as np

        base, salted = np.asarray(self.baseline, float), np.asarray(self.salted, float)
        keep = np.isfinite(base) & np.isfinite(salted)
        return base[keep], salted[keep]

    @property
    def n(self) -> int:
        return int(self._pairs()[0].size)

    @property
    def sd_seed(self) -> float:
        base = self._pairs()[0]
        return float(base.std(ddof=1)) if base.size > 1 else math.nan

    @property
    def sd_paired(self) -> float:
        base, salted = self._pairs()
        return float((salted - base).std(ddof=1)) if base.size > 1 else math.nan

    @property
    def mean_paired(self) -> float:
        base, salted = self._pairs()
        return float((salted - base).mean()) if base.size else math.nan


@dataclass(frozen=True)
class Calibration:
    """Every calibrated cell of one test (its gate's family), and how it was planned.

    ``family``: the cells gated together, so REGRESSED is planned at the Holm level
    ``alpha / family`` (the first step, the strictest); ``epoch_selection``: which epoch the
    values are taken at; ``path``: where it was read from (None when not from a file).
    """

    cells: dict[tuple[str, str], CellCalibration]
    salt: int = DEFAULT_SALT
    alpha: float = 0.05
    power: float = DEFAULT_POWER
    epoch_selection: str = "final"
    path: Path | None = field(default=None, compare=False)

    @property
    def family(self) -> int:
        return max(1, len(self.cells))

    def resolvable(self, cell_key: tuple[str, str], n_seeds: int | None = None, *,
                   alpha: float | None = None) -> float:
        """The smallest δ that ``n_seeds`` (default: the calibrated seeds) resolve in a cell."""
        cell = self.cells[cell_key]
        a = self.alpha if alpha is None else alpha
        return resolvable_min_effect(cell.sd_paired, cell.n if n_seeds is None else n_seeds,
                                     alpha=a, alpha_regressed=a / self.family, power=self.power)

    def seeds_needed(self, cell_key: tuple[str, str], min_effect: float, *,
                     alpha: float | None = None) -> int:
        """Paired seeds at which a cell resolves ``min_effect`` (``seeds_for_min_effect``)."""
        from .stats.planning import seeds_for_min_effect

        a = self.alpha if alpha is None else alpha
        return seeds_for_min_effect(self.cells[cell_key].sd_paired, min_effect, alpha=a,
                                    alpha_regressed=a / self.family, power=self.power)

    def merged(self, other: Calibration) -> Calibration:
        """Both calibrations' cells (``other``'s win), e.g. the runs of one test."""
        return replace(self, cells={**self.cells, **other.cells})

    # -- the file: small and reviewable; the per-seed values are kept, so every figure recomputes

    def to_dict(self, min_effect: Mapping[tuple[str, str], float | None] | None = None) -> dict:
        cells = []
        for key, c in self.cells.items():
            entry: dict[str, Any] = {
                "task": c.task, "model": c.model, "metric": c.metric, "n": c.n,
                "sd_seed": _round(c.sd_seed), "sd_paired": _round(c.sd_paired),
                "mean_paired": _round(c.mean_paired),
            }
            if c.n >= 2 and math.isfinite(c.sd_paired):
                entry["resolvable_min_effect"] = _round(self.resolvable(key))
                delta = (min_effect or {}).get(key)
                if delta:
                    entry["min_effect"] = delta
                    entry["seeds_for_min_effect"] = self.seeds_needed(key, delta)
            entry.update(seeds=list(c.seeds), baseline=list(c.baseline), salted=list(c.salted))
            cells.append(entry)
        return {"schema": SCHEMA, "salt": self.salt, "alpha": self.alpha, "power": self.power,
                "epoch_selection": self.epoch_selection, "family": self.family, "cells": cells}

    @classmethod
    def from_dict(cls, data: Any, *, path: Path | None = None) -> Calibration:
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
            return cls(cells, salt=int(data["salt"]), alpha=float(data["alpha"]),
                       power=float(data["power"]), epoch_selection=str(data["epoch_selection"]),
                       path=path)
        except (KeyError, TypeError, ValueError, OverflowError) as exc:  # 400 digits: Overflow
            raise CalibrationError(f"{where}: malformed calibration ({type(exc).__name__}: "
                                   f"{exc}); rewrite it with `graphnetz calibrate`") from None

    def write(self, path: str | Path,
              min_effect: Mapping[tuple[str, str], float | None] | None = None) -> Path:
        from .report.files import write_text_atomic

        path = Path(path)
        path.parent.mkdir(parents=True, exist_ok=True)
        text = json.dumps(self.to_dict(min_effect), indent=1)
        # One line per list of numbers (seeds, per-seed values): a diff shows the cell changed.
        text = re.sub(r"\[\s*([^\[\]{}]*?)\s*\]",
                      lambda m: "[" + ", ".join(x.strip() for x in m.group(1).split(",")) + "]",
                      text)
        write_text_atomic(path, text + "\n")
        return path

    @classmethod
    def read(cls, path: str | Path) -> Calibration:
        from .report.files import read_regular_file

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
        return cls.from_dict(data, path=path)


def _round(x: float) -> float | None:
    return None if not math.isfinite(x) else float(f"{x:.6g}")


def calibration_path(baseline_path: str | Path) -> Path:
    """Where a baseline's calibration lives: ``<test>.json`` → ``<test>.calibration.json``."""
    path = Path(baseline_path)
    return path.with_name(path.name.removesuffix(".json") + SUFFIX)


def calibrate_reports(baseline: BenchmarkReport, salted: BenchmarkReport, *,
                      salt: int = DEFAULT_SALT, alpha: float = 0.05,
                      power: float = DEFAULT_POWER) -> Calibration:
    """The calibration from a report and its salted rerun (same tasks, models and seeds).

    Refuses (:class:`CalibrationError`) when, for some task and seed, the data fingerprints of
    the two runs differ: then the salt reached the data or the split, and the differences would
    measure a data change, not an innocent one.
    """
    if list(baseline.tasks) != list(salted.tasks) or list(baseline.models) != list(
            salted.models) or list(baseline.seeds) != list(salted.seeds):
        raise CalibrationError("the salted rerun must have the baseline's tasks, models and "
                               "seeds, in the same order")
    data_base, data_salted = baseline.fingerprints["data"], salted.fingerprints["data"]
    for task in baseline.tasks:
        for seed in baseline.seeds:
            if data_base[task][seed] != data_salted[task][seed]:
                raise CalibrationError(
                    f"task {task!r}, seed {seed}: the salted rerun loaded other data or splits "
                    "than the baseline run; the loader draws from a source the runner does not "
                    "reseed, so an innocent change cannot be isolated. Make the loader "
                    "deterministic given `seed`")
    cells = {}
    for task in baseline.tasks:
        metric = baseline.metric(task).name
        for model in baseline.models:
            cells[(task, model)] = CellCalibration(
                task, model, metric, tuple(int(s) for s in baseline.seeds),
                tuple(float(v) for v in baseline.values(task, model)),
                tuple(float(v) for v in salted.values(task, model)))
    return Calibration(cells, salt=int(salt), alpha=alpha, power=power,
                       epoch_selection=baseline.epoch_selection)


def calibrate(tasks: Any, models: Mapping[str, Callable[[int, int], Any]], *,
              salt: int = DEFAULT_SALT, alpha: float = 0.05, power: float = DEFAULT_POWER,
              runner: Callable[..., Any] | None = None,
              baseline: BenchmarkReport | None = None,
              **run_kwargs: Any) -> Calibration:
    """Train ``models`` on ``tasks`` (unless ``baseline``, that run's report, is given) and
    again with salted seeds; their :func:`calibrate_reports`.

    ``runner``: what trains (default :func:`~pytest_graphnetz.run_benchmark`; the plugin passes
    its session's); ``run_kwargs`` go to it (seeds, device, cache_dir, epochs...).
    """
    if runner is None:
        from .runner import run_benchmark

        runner = run_benchmark
    if baseline is None:
        baseline = runner(tasks, models, **run_kwargs)
    run_kwargs.setdefault("seeds", list(baseline.seeds))
    salted_ones: Mapping[str, Any] = salted_models(models, salt)
    salted = runner(tasks, salted_ones, **run_kwargs)
    salted.epoch_selection = baseline.epoch_selection
    return calibrate_reports(baseline, salted, salt=salt, alpha=alpha, power=power)


# -- what the gate and the terminal say -----------------------------------------------------------


def resolution_note(cell_key: tuple[str, str], delta: float | None, n_seeds: int,
                    calibration: Calibration | None, *, alpha: float | None = None) -> str | None:
    """A warning when ``delta`` is finer than ``n_seeds`` resolve in this cell (None otherwise,
    or when the cell was not calibrated or its paired sd is 0).

    E.g. "δ 0.01 needs about 500 seeds here (...): raise δ to 0.05 or accept INCONCLUSIVE".
    """
    if calibration is None or delta is None or cell_key not in calibration.cells \
            or n_seeds < 2:
        return None
    cell = calibration.cells[cell_key]
    if cell.n < 2 or not cell.sd_paired > 0 or not math.isfinite(cell.sd_paired):
        return None
    resolvable = calibration.resolvable(cell_key, n_seeds, alpha=alpha)
    if delta >= resolvable:
        return None
    needed = calibration.seeds_needed(cell_key, delta, alpha=alpha)
    where = f" in {calibration.path}" if calibration.path is not None else ""
    return (f"δ {fmt_num(delta)} needs about {needed} seeds here (paired sd of an innocent "
            f"change {fmt_num(cell.sd_paired)}, calibrated{where} on {cell.n} seeds): raise δ "
            f"to {fmt_num(ceil_significant(resolvable))} (what {n_seeds} seeds resolve) or accept "
            "INCONCLUSIVE")


RESOLUTION_TABLE_NOTE = "δ below what the seeds resolve (calibration)"
# The row of a gate whose δ is what its seeds resolve (--graphnetz-min-effect=resolvable).
RESOLVABLE = "resolvable"
GATED_AT_RESOLVABLE_NOTE = "δ = what the seeds resolve (--graphnetz-min-effect=resolvable)"


def _read_beside(baseline: object) -> Calibration | None:
    """The calibration beside a baseline handle's file (None: none, not a handle, a refresh);
    an unreadable one warns and is None: it must never decide or break a gate."""
    import warnings

    from .baselines import BaselineHandle

    if not isinstance(baseline, BaselineHandle) or baseline.update:
        return None
    path = calibration_path(baseline.path)
    if not path.is_file():
        return None
    try:
        return Calibration.read(path)
    except (OSError, CalibrationError) as exc:
        warnings.warn(f"graphnetz: calibration ignored: {exc}", stacklevel=4)
        return None


def resolvable_gate_min_effect(baseline: object, cells: Sequence[tuple[str, str]],
                               n_seeds: int, *, margin: float = 0.0) -> float:
    """The δ of a gate asked to judge at what its seeds resolve (``min_effect="resolvable"``,
    ``--graphnetz-min-effect=resolvable``): ``margin`` + the largest over the call's ``cells``
    of :meth:`Calibration.resolvable` at ``n_seeds`` paired seeds (one δ for the call, which
    every cell's seeds resolve), read from the calibration beside the ``baseline`` handle.
    Raises :class:`CalibrationError` naming the file and the command when there is none or it
    lacks a cell: never a silent fallback to the default δ."""
    from .baselines import BaselineHandle

    if not isinstance(baseline, BaselineHandle):
        raise CalibrationError(
            "min_effect='resolvable' reads the calibration beside a baseline file: give the "
            "gate a baseline handle (graphnetz_baseline()), or a number for min_effect")
    path = calibration_path(baseline.path)
    calibration = _read_beside(baseline)
    command = baseline.update_command.replace("--graphnetz-update-baselines",
                                              "--graphnetz-calibrate") \
        if baseline.update_command else "graphnetz calibrate <the test>"
    missing = [f"{t}/{m}" for t, m in cells if calibration is None
               or (t, m) not in calibration.cells or calibration.cells[(t, m)].n < 2
               or not math.isfinite(calibration.cells[(t, m)].sd_paired)]
    if calibration is None or missing:
        what = "there is no readable calibration" if calibration is None else \
            f"it does not calibrate {', '.join(missing)}"
        raise CalibrationError(
            f"--graphnetz-min-effect=resolvable gates at the δ the seeds resolve, read from "
            f"{path}, but {what}; calibrate first (`{command}`), or set a number for δ")
    assert calibration is not None
    return margin + max(calibration.resolvable(c, max(int(n_seeds), 2)) for c in cells)


def annotate_verdicts(verdicts: Sequence[CellVerdict], baseline: object, *,
                      resolvable: bool = False) -> list[CellVerdict]:
    """The gate's hook: ``verdicts`` of a not-worse gate against a baseline handle whose
    calibration file exists, each row saying what its seeds resolve ("seeds resolve δ ≥ 3.1
    points"), with :func:`resolution_note` added (and warned about) where the cell's δ is
    finer than that; ``resolvable``: the gate's δ was set to it
    (:func:`resolvable_gate_min_effect`), and the row says so. An unreadable calibration warns
    and changes nothing.
    """
    import warnings

    from .baselines import BaselineHandle

    calibration = _read_beside(baseline)
    if calibration is None or not isinstance(baseline, BaselineHandle):
        return list(verdicts)
    path = calibration_path(baseline.path)
    out = []
    for v in verdicts:
        c = v.comparison
        key = (v.task, v.model)
        if v.gate != "not_worse" or key not in calibration.cells or calibration.cells[key].n < 2 \
                or not math.isfinite(calibration.cells[key].sd_paired):
            out.append(v)
            continue
        # Adaptive seeds: what the schedule can reach (the baseline's MAX seeds), not where
        # a cell happened to stop.
        n = c.n if v.stop is None else max(c.n, len(v.baseline_seeds))
        try:
            resolved = calibration.resolvable(key, max(n, 2), alpha=c.alpha)
            words = [f"seeds resolve δ ≥ {v.guidance.amount(resolved, up=True)}"]
            note = resolution_note(key, c.min_effect, n, calibration, alpha=c.alpha)
        except (ArithmeticError, ValueError, TypeError, RuntimeWarning) as exc:
            # Absurd numbers that read (1e300 sds, power 2): advice, so never the verdict's
            # business (a RuntimeWarning is an exception under -W error).
            warnings.warn(f"graphnetz: calibration ignored: {path}: its numbers give no plan "
                          f"({type(exc).__name__}: {exc}); rewrite it with `graphnetz "
                          "calibrate`", stacklevel=3)
            return list(verdicts)
        if resolvable:
            words.append(GATED_AT_RESOLVABLE_NOTE)
        notes = v.notes
        if note is not None:
            warnings.warn(f"graphnetz: {v.cell}: {note}", stacklevel=3)
            notes = (*notes, note)
            words.append(RESOLUTION_TABLE_NOTE)
        out.append(replace(v, notes=notes, table_note="; ".join(
            x for x in (v.table_note, *words) if x)))
    return out


def summary_rows(calibration: Calibration,
                 min_effect: Mapping[tuple[str, str], float | None]) -> list[dict[str, str]]:
    """One row per cell for the terminal: seeds, sd per seed, paired sd, resolvable δ, and the
    seeds the configured δ needs."""
    rows = []
    for key, c in calibration.cells.items():
        ok = c.n >= 2 and math.isfinite(c.sd_paired)
        delta = min_effect.get(key)
        rows.append({
            "cell": f"{c.task}/{c.model}", "metric": c.metric, "n": str(c.n),
            "sd_seed": fmt_num(c.sd_seed), "sd_paired": fmt_num(c.sd_paired),
            "resolvable": fmt_num(ceil_significant(calibration.resolvable(key))) if ok else "—",
            "delta": "—" if delta is None else fmt_num(delta),
            "needed": str(calibration.seeds_needed(key, delta)) if ok and delta else "—",
        })
    return rows


SUMMARY_HEADERS = ("Cell", "Metric", "n", "sd per seed", "paired sd (innocent)",
                   "smallest δ resolved", "δ", "seeds δ needs")


def summary_table(rows: Iterable[Mapping[str, str]]) -> tuple[Sequence[str], list[list[str]]]:
    keys = ("cell", "metric", "n", "sd_seed", "sd_paired", "resolvable", "delta", "needed")
    return SUMMARY_HEADERS, [[row.get(k, "") for k in keys] for row in rows]


def write_calibrations(calibrations: Sequence[Calibration], baselines: Iterable[str | Path], *,
                       min_effect: float | None = None) -> list[dict[str, Any]]:
    """One test's calibrations (its ``graphnetz_run`` calls), merged, written beside each of
    its ``baselines`` (:func:`calibration_path`); the terminal rows (:func:`summary_rows`) at
    the session's δ (``min_effect``; None: each metric's default), each with the ``files``
    written."""
    merged = calibrations[0]
    for more in calibrations[1:]:
        merged = merged.merged(more)
    deltas = default_min_effects(merged, min_effect)
    files = [str(merged.write(calibration_path(p), deltas)) for p in dict.fromkeys(baselines)]
    return [{**row, "files": files} for row in summary_rows(merged, deltas)]


def default_min_effects(calibration: Calibration,
                        min_effect: float | None) -> dict[tuple[str, str], float | None]:
    """Per cell the δ its gate uses: ``min_effect`` when set, else the metric's default."""
    from .history import MetricSpec
    from .verdicts import default_min_effect

    return {key: min_effect if min_effect is not None
            else default_min_effect(MetricSpec.from_name(c.metric))
            for key, c in calibration.cells.items()}


__all__ = ["Calibration", "CellCalibration", "CalibrationError", "SaltedCommand", "SaltedFactory",
           "annotate_verdicts", "calibrate", "calibrate_reports", "calibration_path",
           "resolution_note", "resolvable_min_effect", "salted_models", "salted_seed"]
