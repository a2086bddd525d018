"""What a gate says with the calibration beside its baseline: each not-worse row states what its
seeds resolve, a δ finer than that is warned about (:func:`resolution_note`), and
``min_effect="resolvable"`` gates at the δ the seeds resolve
(:func:`resolvable_gate_min_effect`; :func:`resolvable_delta` refuses the gate without one).
Advice only: an unreadable calibration warns and never decides or breaks a gate."""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import replace
from typing import TYPE_CHECKING

from pytest_graphnetz.base.text import ceil_significant, fmt_num
from pytest_graphnetz.gates.calibration.resolution import Calibration, CalibrationError
from pytest_graphnetz.gates.calibration.store import calibration_path, read_calibration

if TYPE_CHECKING:
    from pytest_graphnetz.gates.verdicts.values import CellVerdict
    from pytest_graphnetz.report import BenchmarkReport

RESOLUTION_TABLE_NOTE = "δ below what the seeds resolve (calibration)"
# The row of a gate whose δ is what its seeds resolve (--graphnetz-min-effect=resolvable).
RESOLVABLE = "resolvable"
GATED_AT_RESOLVABLE_NOTE = "δ = what the seeds resolve (--graphnetz-min-effect=resolvable)"


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


def resolvable_delta(baseline: object, report: BenchmarkReport, seeds: Sequence[int],
                     base: BenchmarkReport, margin: float) -> float:
    """The gate's δ for ``min_effect="resolvable"``: what the paired seeds (of ``seeds``, those
    the candidate ``report`` runs, that ``base`` holds) resolve in every cell
    (:func:`resolvable_gate_min_effect`); no calibration is a refusal naming the file."""
    from pytest_graphnetz.gates.verdicts.values import GateRefusal

    cells = [(t, m) for t in report.tasks for m in report.models]
    try:
        return resolvable_gate_min_effect(baseline, cells, len(set(seeds) & set(base.seeds)),
                                          margin=margin)
    except CalibrationError as exc:
        raise GateRefusal(str(exc), reason=str(exc)) from None


def _read_beside(baseline: object) -> Calibration | None:
    """The calibration beside a baseline handle's file (None: none, not a handle, a refresh);
    an unreadable one warns and is None: it must never decide or break a gate."""
    import warnings

    from pytest_graphnetz.gates.refreshing.baselines import BaselineHandle

    if not isinstance(baseline, BaselineHandle) or baseline.update:
        return None
    path = calibration_path(baseline.path)
    if not path.is_file():
        return None
    try:
        return read_calibration(path)
    except (OSError, CalibrationError) as exc:
        warnings.warn(f"graphnetz: calibration ignored: {exc}", stacklevel=4)
        return None


def resolvable_gate_min_effect(baseline: object, cells: Sequence[tuple[str, str]],
                               n_seeds: int, *, margin: float = 0.0) -> float:
    """The δ of a gate asked to judge at what its seeds resolve (``min_effect="resolvable"``,
    ``--graphnetz-min-effect=resolvable``): ``margin`` + the largest over the call's ``cells``
    of :meth:`Calibration.resolvable` at ``n_seeds`` paired seeds (one δ for the call, which
    every cell's seeds resolve), rounded up to 2 significant digits (the figure the rows print,
    and still resolved), read from the calibration beside the ``baseline`` handle.
    Raises :class:`CalibrationError` naming the file and the command when there is none or it
    lacks a cell: never a silent fallback to the default δ."""
    from pytest_graphnetz.gates.refreshing.baselines import BaselineHandle

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
               or (t, m) not in calibration.cells or not calibration.cells[(t, m)].plannable]
    if calibration is None or missing:
        what = "there is no readable calibration" if calibration is None else \
            f"it does not calibrate {', '.join(missing)}"
        raise CalibrationError(
            f"--graphnetz-min-effect=resolvable gates at the δ the seeds resolve, read from "
            f"{path}, but {what}; calibrate first (`{command}`), or set a number for δ")
    assert calibration is not None
    return margin + ceil_significant(max(calibration.resolvable(c, max(int(n_seeds), 2))
                                         for c in cells))


def annotate_verdicts(verdicts: Sequence[CellVerdict], baseline: object, *,
                      resolvable: bool = False) -> list[CellVerdict]:
    """The gate's hook: ``verdicts`` of a not-worse gate against a baseline handle whose
    calibration file exists, each row saying what its seeds resolve ("seeds resolve δ ≥ 3.1
    points"), with :func:`resolution_note` added (and warned about) where the cell's δ is
    finer than that; ``resolvable``: the gate's δ was set to it
    (:func:`resolvable_gate_min_effect`), and the row says only that, next to the one δ it
    shows: never a second resolvable figure, nor a warning that δ is finer (at a later look
    the level is stricter, but the δ was planned for the schedule). An unreadable calibration
    warns and changes nothing.
    """
    import warnings

    from pytest_graphnetz.gates.refreshing.baselines import BaselineHandle

    calibration = _read_beside(baseline)
    if calibration is None or not isinstance(baseline, BaselineHandle):
        return list(verdicts)
    path = calibration_path(baseline.path)
    out = []
    for v in verdicts:
        ev = v.comparison.evidence
        key = (v.task, v.model)
        if v.gate != "not_worse" or key not in calibration.cells \
                or not calibration.cells[key].plannable:
            out.append(v)
            continue
        if resolvable:
            out.append(replace(v, table_note="; ".join(
                x for x in (v.table_note, GATED_AT_RESOLVABLE_NOTE) if x)))
            continue
        # Adaptive seeds: what the schedule can reach (the baseline's MAX seeds), not where
        # a cell happened to stop.
        n = ev.n if v.stop is None else max(ev.n, len(v.baseline_seeds))
        try:
            level = v.comparison.decision.level
            resolved = calibration.resolvable(key, max(n, 2), alpha=level)
            words = [f"seeds resolve δ ≥ {v.guidance.amount(resolved, up=True)}"]
            note = resolution_note(key, v.comparison.settings.min_effect, n, calibration,
                                   alpha=level)
        except (ArithmeticError, ValueError, TypeError, RuntimeWarning) as exc:
            # Absurd numbers that read (1e300 sds, power 2): advice, so never the verdict's
            # business (a RuntimeWarning is an exception under -W error).
            warnings.warn(f"graphnetz: calibration ignored: {path}: its numbers give no plan "
                          f"({type(exc).__name__}: {exc}); rewrite it with `graphnetz "
                          "calibrate`", stacklevel=3)
            return list(verdicts)
        notes = v.notes
        if note is not None:
            warnings.warn(f"graphnetz: {v.cell}: {note}", stacklevel=3)
            notes = (*notes, note)
            words.append(RESOLUTION_TABLE_NOTE)
        out.append(replace(v, notes=notes, table_note="; ".join(
            x for x in (v.table_note, *words) if x)))
    return out


__all__ = ["GATED_AT_RESOLVABLE_NOTE", "RESOLUTION_TABLE_NOTE", "RESOLVABLE", "annotate_verdicts",
           "resolution_note", "resolvable_delta", "resolvable_gate_min_effect"]
