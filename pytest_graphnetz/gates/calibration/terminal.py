"""The terminal output of ``--graphnetz-calibrate``: per calibrated cell its seeds, the sd per
seed and of an innocent change, the smallest δ its seeds resolve, the seeds the configured δ
needs and the check of the salted rerun's mean (:func:`summary_rows`); per cell the same per
training budget and the cheapest budget at which the seeds resolve δ; and the lines that print
them (:func:`terminal_lines`). Rows are display strings: they travel through pytest-xdist."""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import TYPE_CHECKING, Any

from pytest_graphnetz.base.text import ceil_significant, fmt_num, fmt_p, fmt_signed, format_table
from pytest_graphnetz.gates.calibration.store import shift_warning
from pytest_graphnetz.report.epochs import in_unit_interval

if TYPE_CHECKING:
    from pytest_graphnetz.gates.calibration.resolution import Calibration

SUMMARY_HEADERS = ("Cell", "Metric", "n", "sd per seed", "paired sd (innocent)",
                   "smallest δ resolved", "δ", "seeds δ needs", "salted − baseline")
EPOCH_HEADERS = ("epochs", "mean", "paired sd (innocent)", "δ the seeds resolve",
                 "δ at the sd's upper bound", "")
# Budgets shown per cell: about this many, evenly spread, plus the cheapest one.
SHOWN_BUDGETS = 8


def summary_rows(calibration: Calibration,
                 min_effect: Mapping[tuple[str, str], float | None]) -> list[dict[str, Any]]:
    """One row per cell for the terminal: seeds, sd per seed, paired sd, resolvable δ, the
    seeds the configured δ needs and the salted rerun's mean shift with its p (``moved`` when
    significant, with its ``warning``); ``epochs``, the rows of :func:`epoch_rows`, and
    ``budget``, :func:`budget_line`."""
    rows = []
    for key, c in calibration.cells.items():
        ok = c.plannable
        delta = min_effect.get(key)
        shifted = calibration.shifted(key)
        rows.append({
            "cell": f"{c.task}/{c.model}", "metric": c.metric, "n": str(c.n),
            "sd_seed": fmt_num(c.sd_seed), "sd_paired": fmt_num(c.sd_paired),
            "resolvable": fmt_num(ceil_significant(calibration.resolvable(key))) if ok else "—",
            "delta": "—" if delta is None else fmt_num(delta),
            "needed": str(calibration.seeds_needed(key, delta)) if ok and delta else "—",
            "shift": f"{fmt_signed(c.mean_paired)} (p {fmt_p(c.shift_p)})"
                     + (": moved" if shifted else ""),
            "warning": shift_warning(calibration, key) if shifted else "",
            "epochs": epoch_rows(calibration, key, delta) if ok else [],
            "budget": budget_line(calibration, key, delta) if ok else "",
        })
    return rows


def shown_budgets(budgets: Sequence[int], extra: int | None = None) -> list[int]:
    """About :data:`SHOWN_BUDGETS` of ``budgets`` (rising), evenly spread and ending at the
    longest, with ``extra`` (the cheapest budget) among them: all of them when few."""
    if len(budgets) <= SHOWN_BUDGETS + 2:
        return list(budgets)
    longest = budgets[-1]
    picked = {min(budgets, key=lambda b: abs(b - longest * k / SHOWN_BUDGETS))
              for k in range(1, SHOWN_BUDGETS + 1)}
    if extra is not None:
        picked.add(extra)
    return sorted(picked)


def epoch_rows(calibration: Calibration, key: tuple[str, str],
               delta: float | None) -> list[list[str]]:
    """A cell's rows of :data:`EPOCH_HEADERS` at :func:`shown_budgets`: the baseline's mean, the
    paired sd and the δ the calibrated seeds resolve after that many epochs, at the estimate
    and at the sd's :data:`~.resolution.BUDGET_LEVEL` upper bound, and the mark of the budget
    from which on ``delta`` is resolved (no yes/no per budget: near the threshold the estimate
    flips between neighbouring budgets by chance); empty without a per-epoch record."""
    cell = calibration.cells[key]
    curve = cell.curve
    if curve is None:
        return []
    cheapest = calibration.cheapest_budget(key, delta, cell.n) if delta else None
    rows = []
    for budget in shown_budgets(curve.budgets, cheapest):
        i = curve.budgets.index(budget)
        resolved = calibration.resolvable_at(key, i, cell.n)
        bound = calibration.resolvable_at(key, i, cell.n, bound=True)
        mark = "← δ resolved from here on" if budget == cheapest else ""
        rows.append([str(budget), fmt_num(curve.mean[i]), fmt_num(curve.sd_paired[i]),
                     fmt_num(ceil_significant(resolved)), fmt_num(ceil_significant(bound)),
                     mark])
    return rows


def amount(metric: str, x: float) -> str:
    """``x`` of ``metric`` as printed in a budget line: points for a metric in [0, 1]
    (0.0093 → "0.93 pt"), else the number; rounded up to 2 significant digits."""
    if in_unit_interval(metric):
        return f"{ceil_significant(100 * x):.2g} pt"
    return fmt_num(ceil_significant(x))


def budget_line(calibration: Calibration, key: tuple[str, str], delta: float | None) -> str:
    """E.g. "200 epochs: 10 seeds resolve 0.93 pt; 50 epochs: 2.6 pt; δ = 1 pt resolved from
    150 epochs on, planned from each budget's 90% upper bound of the paired sd (mean 0.8112;
    0.8135 at 200)": the longest budget, a quarter of it, and the fewest epochs from which on
    the calibrated seeds resolve ``delta`` (:meth:`~.resolution.Calibration.cheapest_budget`,
    which allows for the error of a few seeds' sd); "" without a per-epoch record."""
    from pytest_graphnetz.gates.calibration.resolution import BUDGET_LEVEL

    cell = calibration.cells[key]
    curve = cell.curve
    if curve is None:
        return ""
    n, last = cell.n, len(curve.budgets) - 1
    words = [f"{_epochs(curve.budgets[last])}: {n} seeds resolve "
             f"{amount(cell.metric, calibration.resolvable_at(key, last, n))}"]
    quarter = min(range(last + 1), key=lambda i: abs(curve.budgets[i] - curve.budgets[last] / 4))
    if quarter != last:
        words.append(f"{_epochs(curve.budgets[quarter])}: "
                     f"{amount(cell.metric, calibration.resolvable_at(key, quarter, n))}")
    if delta:
        cheapest = calibration.cheapest_budget(key, delta, n)
        if cheapest is None:
            words.append(f"no budget up to {_epochs(curve.budgets[last])} resolves δ = "
                         f"{amount(cell.metric, delta)} at {n} seeds at the "
                         f"{BUDGET_LEVEL:.0%} upper bound of its paired sd "
                         f"({calibration.seeds_needed(key, delta)} seeds would at the estimate)")
        else:
            i = curve.budgets.index(cheapest)
            words.append(f"δ = {amount(cell.metric, delta)} resolved from {_epochs(cheapest)} "
                         f"on, planned from each budget's {BUDGET_LEVEL:.0%} upper bound of the "
                         f"paired sd (mean {fmt_num(curve.mean[i])}; "
                         f"{fmt_num(curve.mean[last])} at {curve.budgets[last]})")
    return "; ".join(words)


def _epochs(n: int) -> str:
    return f"{n} epoch{'' if n == 1 else 's'}"


def summary_table(rows: Iterable[Mapping[str, Any]]) -> tuple[Sequence[str], list[list[str]]]:
    """Headers and cells of the table of :func:`summary_rows`' rows."""
    keys = ("cell", "metric", "n", "sd_seed", "sd_paired", "resolvable", "delta", "needed",
            "shift")
    return SUMMARY_HEADERS, [[row.get(k, "") for k in keys] for row in rows]


def terminal_lines(rows: Sequence[Mapping[str, Any]]) -> list[str]:
    """What ``--graphnetz-calibrate`` prints: the table of :func:`summary_rows`' rows, then per
    cell its budgets (:func:`epoch_rows`, the budget line), every moved salted mean's warning,
    and the files written (or that none was)."""
    lines = format_table(*summary_table(rows)).splitlines()
    for row in rows:
        if row.get("epochs"):
            lines += ["", f"{row['cell']} per training budget (the values at epoch e of the "
                          "runs, as if trained for e epochs):"]
            lines += format_table(EPOCH_HEADERS, row["epochs"]).splitlines()
        if row.get("budget"):
            lines.append(f"{row['cell']}: {row['budget']}")
    for row in rows:
        if row.get("warning"):
            lines.append(f"graphnetz: WARNING {row['cell']}: {row['warning']}")
    files = dict.fromkeys(f for row in rows for f in row["files"])
    lines += [f"graphnetz: calibration written to {file}" for file in files]
    if not files:
        lines.append("graphnetz: no test used a baseline, so no calibration file was written")
    return lines


__all__ = ["EPOCH_HEADERS", "SHOWN_BUDGETS", "SUMMARY_HEADERS", "amount", "budget_line",
           "epoch_rows", "shown_budgets", "summary_rows", "summary_table", "terminal_lines"]
