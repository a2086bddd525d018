"""The figure of ``graphnetz calibrate -o FILE``: per calibrated cell, against the training
budget, the innocent paired sd and the δ the calibrated seeds resolve, with the δ each cell's
gate uses (from the calibration files; matplotlib, an optional extra, imported here only)."""

from __future__ import annotations

import os
from collections.abc import Sequence
from typing import TYPE_CHECKING

from pytest_graphnetz.report.plots import INSTALL_HINT

if TYPE_CHECKING:
    from matplotlib.figure import Figure

    from pytest_graphnetz.gates.calibration.resolution import Calibration


def plot_budgets(calibrations: Sequence[Calibration], path: str | os.PathLike | None = None,
                 *, min_effect: dict[tuple[str, str], float | None] | None = None) -> Figure:
    """Two panels over every cell with a per-epoch record in ``calibrations``: the paired sd of
    an innocent change (left) and the δ the calibrated seeds resolve (right) per training
    budget, at the estimate and (dashed) at the paired sd's upper bound the cheapest budget is
    planned from, ``min_effect[cell]`` (the gate's δ) drawn dotted on the right. Writes
    ``path`` (the format from its suffix) when given; returns the figure. Raises
    ``ImportError`` naming the extra when matplotlib is missing, ``ValueError`` when no cell has
    a per-epoch record."""
    try:
        from matplotlib.figure import Figure
    except ImportError as exc:
        raise ImportError(f"plotting needs matplotlib, an optional extra: {INSTALL_HINT}") \
            from exc
    cells = [(cal, key) for cal in calibrations for key, c in cal.cells.items()
             if c.curve is not None and c.plannable]
    if not cells:
        raise ValueError("no calibrated cell has a per-epoch record to plot")
    fig = Figure(figsize=(9.0, 3.6), layout="constrained")
    sd_ax, delta_ax = fig.subplots(1, 2)
    for k, (cal, key) in enumerate(cells):
        cell = cal.cells[key]
        assert cell.curve is not None
        colour = f"C{k % 10}"
        budgets = cell.curve.budgets
        label = f"{cell.task}/{cell.model}"
        sd_ax.plot(budgets, cell.curve.sd_paired, color=colour, label=label)
        delta_ax.plot(budgets, [cal.resolvable_at(key, i, cell.n) for i in range(len(budgets))],
                      color=colour, label=f"{label} ({cell.n} seeds)")
        # what the cheapest budget is planned from: the sd's upper bound
        delta_ax.plot(budgets, [cal.resolvable_at(key, i, cell.n, bound=True)
                                for i in range(len(budgets))],
                      color=colour, linestyle="--", linewidth=0.9)
        delta = (min_effect or {}).get(key)
        if delta:
            delta_ax.axhline(delta, color=colour, linestyle=":", linewidth=0.9)
    sd_ax.set(xlabel="training budget (epochs)", ylabel="paired sd of an innocent change",
              title="innocent noise")
    delta_ax.set(xlabel="training budget (epochs)", ylabel="smallest δ resolved",
                 title="δ the seeds resolve (dashed: at the sd's upper bound; dotted: δ)")
    for ax in (sd_ax, delta_ax):
        ax.set_ylim(bottom=0)
        ax.grid(alpha=0.3)
    delta_ax.legend(fontsize="small")
    if path is not None:
        fig.savefig(os.fspath(path))
    return fig


__all__ = ["plot_budgets"]
