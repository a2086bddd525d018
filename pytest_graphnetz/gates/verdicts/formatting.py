"""The spellings every verdict, message and table row shares: intervals (:func:`fmt_ci`,
:func:`fmt_mean_ci`, :func:`ci_level`), seed lists, metric labels, the refresh command, the gate
table (:func:`gate_table`), and the described values a row shows (:func:`describe_values`)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace
from typing import TYPE_CHECKING, Protocol

import numpy as np

from pytest_graphnetz import stats
from pytest_graphnetz.base.text import fmt_interval, fmt_level, fmt_num, seed_list
from pytest_graphnetz.report.epochs import CLIPPED, clip_to_metric
from pytest_graphnetz.stats.intervals import describe

if TYPE_CHECKING:
    from pytest_graphnetz.report.record import ReportRecord

# Row keys and headers of the gate table (the plugin's session summary adds the test).
TABLE_COLUMNS = ("cell", "metric", "baseline", "candidate", "delta", "p", "verdict", "mde", "n")


TABLE_HEADERS = ("Cell", "Metric", "Baseline", "Candidate", "Paired Δ (+ = better) [CI]", "p",
                 "Verdict", "MDE", "n")


class TableRow(Protocol):
    """A verdict as the gate table shows it (``CellVerdict``, ``WidthVerdict``)."""

    def row(self) -> dict[str, str]: ...


def gate_table(verdicts: Sequence[TableRow], *, markdown: bool = False) -> str:
    """The verdicts as the summary table (plain text, or GitHub Markdown)."""
    from pytest_graphnetz.base.text import format_table, markdown_table

    rows = [v.row() for v in verdicts]
    body = [[r.get(c, "") for c in TABLE_COLUMNS] for r in rows]
    return (markdown_table if markdown else format_table)(TABLE_HEADERS, body)


def describe_values(x: np.ndarray, report: ReportRecord, *, method: str | None = None,
                    metric: str | None = None) -> stats.CellStats:
    """``x`` described by ``method`` (default the report's) at the report's level, bootstrap
    draws from a fixed seed: the same interval every time the cell is shown.

    Given the ``metric`` (cells that are shown, not judged), an interval that leaves [0, 1] for a
    metric bounded there is clipped to it, and its method says so, as ``summary()`` does;
    ``assert_ci_width`` judges the unclipped width, so it passes no metric."""
    cell = describe(x, method=method or report.ci_method,
                    confidence_level=report.confidence_level,
                    rng=np.random.default_rng(0))
    clipped = None if metric is None else clip_to_metric(metric, cell.ci.low, cell.ci.high)
    if clipped is None:
        return cell
    return replace(cell, ci=stats.ConfidenceInterval(*clipped), method=f"{cell.method}, {CLIPPED}")


def verdict_name(verdict: stats.Verdict | str) -> str:
    return str(getattr(verdict, "value", verdict))


def metric_label(name: str, higher_is_better: bool) -> str:
    return f"{name} {'↑' if higher_is_better else '↓'}"


def ci_level(c: stats.Comparison) -> str:
    """The label of a comparison's interval: "90%" at alpha 0.05; its coverage when its ends
    are at the levels its decisions use (Holm on REGRESSED's side, a sequential look's)."""
    return fmt_level(c.confidence_level)


def refresh_hint(command: str | None, n_seeds: int | None = None) -> str:
    seeds = f" --graphnetz-seeds={n_seeds}" if n_seeds else ""
    if command:
        return f"`{command}{seeds}`"
    return f"`pytest --graphnetz-update-baselines{seeds}` on the gate's test"


def fmt_ci(ci: stats.ConfidenceInterval) -> str:
    return fmt_interval(ci.low, ci.high)


def fmt_mean_ci(cell: stats.CellStats, *, short: bool = False) -> str:
    """One side's mean and interval: "0.8 [0.78, 0.82] (t 95% CI of the mean, n=10)"; ``short``
    (a table's cell) "0.8 [0.78, 0.82]". An interval clipped to [0, 1] says so in both."""
    method, clipped = cell.method.removesuffix(f", {CLIPPED}"), CLIPPED in cell.method
    text = f"{fmt_num(cell.mean)} {fmt_ci(cell.ci)}"
    if short:
        return text + (" (clipped)" if clipped else "")
    extra = f", {cell.n_diverged} diverged" if getattr(cell, "n_diverged", 0) else ""
    extra = f", {CLIPPED}" * clipped + extra
    return (f"{text} ({method} {fmt_level(cell.confidence_level)} CI of the mean{extra}, "
            f"n={cell.n})")


__all__ = ["TABLE_COLUMNS", "TABLE_HEADERS", "ci_level", "describe_values", "fmt_ci",
           "fmt_mean_ci", "gate_table", "metric_label", "refresh_hint", "seed_list",
           "verdict_name"]
