"""The terminal table of ``--graphnetz-calibrate``: per calibrated cell its seeds, the sd per
seed and of an innocent change, the smallest δ its seeds resolve and the seeds the configured δ
needs (rows of display strings: they travel through pytest-xdist)."""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import TYPE_CHECKING

from ..text import ceil_significant, fmt_num

if TYPE_CHECKING:
    from .resolution import Calibration

SUMMARY_HEADERS = ("Cell", "Metric", "n", "sd per seed", "paired sd (innocent)",
                   "smallest δ resolved", "δ", "seeds δ needs")


def summary_rows(calibration: Calibration,
                 min_effect: Mapping[tuple[str, str], float | None]) -> list[dict[str, str]]:
    """One row per cell for the terminal: seeds, sd per seed, paired sd, resolvable δ, and the
    seeds the configured δ needs."""
    rows = []
    for key, c in calibration.cells.items():
        ok = c.plannable
        delta = min_effect.get(key)
        rows.append({
            "cell": f"{c.task}/{c.model}", "metric": c.metric, "n": str(c.n),
            "sd_seed": fmt_num(c.sd_seed), "sd_paired": fmt_num(c.sd_paired),
            "resolvable": fmt_num(ceil_significant(calibration.resolvable(key))) if ok else "—",
            "delta": "—" if delta is None else fmt_num(delta),
            "needed": str(calibration.seeds_needed(key, delta)) if ok and delta else "—",
        })
    return rows


def summary_table(rows: Iterable[Mapping[str, str]]) -> tuple[Sequence[str], list[list[str]]]:
    """Headers and cells of the table of :func:`summary_rows`' rows."""
    keys = ("cell", "metric", "n", "sd_seed", "sd_paired", "resolvable", "delta", "needed")
    return SUMMARY_HEADERS, [[row.get(k, "") for k in keys] for row in rows]


__all__ = ["SUMMARY_HEADERS", "summary_rows", "summary_table"]
