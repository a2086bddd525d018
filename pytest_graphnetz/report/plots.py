"""Figures: the forest plot of a report, the paired-difference plot of a comparison and the
expected-max tuning curves of tuned arms.

matplotlib is an optional extra (``pip install 'pytest-graphnetz[plot]'``), imported where it is
used. Figures are built with ``matplotlib.figure.Figure`` directly, never through ``pyplot``, so
drawing one never switches or opens a user's interactive backend and leaves nothing registered
in pyplot's figure list; saving renders through Agg.
"""

from __future__ import annotations

import math
import os
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol

import numpy as np

from pytest_graphnetz.base.text import fmt_level, fmt_signed
from pytest_graphnetz.report.views import cell_stats, method_phrase, seeds_phrase
from pytest_graphnetz.stats import Comparison, Verdict

if TYPE_CHECKING:
    from matplotlib.axes import Axes
    from matplotlib.figure import Figure

    from pytest_graphnetz.report.record import ReportRecord
    from pytest_graphnetz.report.trials import TuningRecord



class CellVerdict(Protocol):
    """What a figure reads of a gate's cell verdict (``gates.verdicts.values.CellVerdict``,
    which this layer may not name): its cell, its paired seeds and its comparison."""

    @property
    def task(self) -> str: ...
    @property
    def model(self) -> str: ...
    @property
    def seeds(self) -> tuple[int, ...]: ...
    @property
    def comparison(self) -> Comparison: ...


INSTALL_HINT = "pip install 'pytest-graphnetz[plot]'"

# Inches: one model row, and the fixed cost of a panel (title, ticks, x label).
_ROW_IN, _PANEL_IN, _WIDTH_IN = 0.32, 1.05, 6.4

# Verdict colours: failures red, passes green/blue, undecided orange, no change grey.
VERDICT_COLOURS = {
    Verdict.REGRESSED: "#c62828",
    Verdict.NOT_EQUIVALENT: "#c62828",
    Verdict.NOT_WORSE: "#2e7d32",
    Verdict.EQUIVALENT: "#2e7d32",
    Verdict.BETTER: "#1565c0",
    Verdict.INCONCLUSIVE: "#ef6c00",
    Verdict.IDENTICAL: "#757575",
}
# The bound lines: the gate's margin (dashed) and −δ (dotted).
_MARGIN_COLOUR, _DELTA_COLOUR, _BOUND_LW = "#c62828", "#6a1b9a", 0.9


def _require_matplotlib() -> None:
    try:
        import matplotlib  # noqa: F401
    except ImportError as exc:
        raise ImportError(f"plotting needs matplotlib, an optional extra: {INSTALL_HINT}") from exc


def _new_figure(height: float, n_rows: int,
                height_ratios: Sequence[float]) -> tuple[Figure, list[Axes]]:
    from matplotlib.figure import Figure

    fig = Figure(figsize=(_WIDTH_IN, height), layout="constrained")
    axes = fig.subplots(n_rows, 1, squeeze=False, gridspec_kw={"height_ratios": height_ratios})
    return fig, list(axes[:, 0])


def _axes_list(ax: Axes | Sequence[Axes] | np.ndarray, n: int, what: str) -> list[Axes]:
    # One Axes, a list of them, or fig.subplots' array (any shape): flattened in order.
    axes: list[Axes] = list(np.ravel(np.asarray(ax, dtype=object)))
    if len(axes) != n:
        raise ValueError(
            f"`ax`: {what} needs {n} Axes (one per task) but got {len(axes)}; pass "
            f"`fig.subplots({n}, 1)`, leave `ax=None`, or plot `report.subset(tasks=[...])`"
        )
    return axes


def _save(fig: Figure, path: str | os.PathLike | None) -> None:
    if path is not None:
        Path(path).parent.mkdir(parents=True, exist_ok=True)
        fig.savefig(path, dpi=150)


def axis_label(metric: str, higher_is_better: bool) -> str:
    """An x-axis label carrying the metric's direction, e.g. ``accuracy (higher is better →)``."""
    return f"{metric} (higher is better →)" if higher_is_better else f"{metric} (← lower is better)"


def plot_forest(
    report: ReportRecord, path: str | os.PathLike | None = None,
    ax: Axes | Sequence[Axes] | np.ndarray | None = None,
    source: str = "seeds",
) -> Figure:
    """Forest plot: one row per (task, model), a panel per task.

    Each row shows the mean as a point with the error bar of ``report.ci_method`` at
    ``report.confidence_level`` (the bootstrap's own endpoints, so asymmetric), and every
    seed's value as a light dot; a diverged seed is counted in the row label. Each panel has
    its own x axis labelled with the task's metric and direction (tasks may differ in scale
    and metric). ``ax``: None (a new figure, height growing with the rows), or one Axes per
    task. Writes a PNG (or any format matplotlib infers from the suffix) when ``path`` is given.
    ``source``: the error bars (``"seeds"``, ``"test_set"``, ``"total"``; see
    :meth:`BenchmarkReport.summary`), named in the title. Returns the
    :class:`matplotlib.figure.Figure`.
    """
    _require_matplotlib()
    from matplotlib import colormaps

    n_models = len(report.models)
    if ax is None:
        heights = [_ROW_IN * n_models + _PANEL_IN] * len(report.tasks)
        fig, axes = _new_figure(sum(heights) + 0.45, len(report.tasks), heights)
        fig.suptitle(_forest_caption(report, source), fontsize=9)
    else:
        axes = _axes_list(ax, len(report.tasks), "a forest plot of this report")
        fig = _root_figure(axes[0])

    cells = cell_stats(report, source)
    X = report.X  # [task, model, seed]
    palette = colormaps["tab10"]
    # Rows top to bottom in report order; seeds spread over a fixed band around their row.
    ys = np.arange(n_models)[::-1].astype(float)
    jitter = np.linspace(-0.18, 0.18, len(report.seeds)) if len(report.seeds) > 1 else np.zeros(1)
    for i, (task, axis) in enumerate(zip(report.tasks, axes, strict=True)):
        labels = []
        for j, model in enumerate(report.models):
            c, colour = cells[(task, model)], palette(j % 10)
            seeds = X[i, j]
            axis.scatter(seeds, ys[j] + jitter, s=14, color=colour, alpha=0.35,
                         linewidths=0, zorder=1)
            if math.isfinite(c.mean):
                # Asymmetric by construction: the interval's own endpoints, never mean ± half.
                xerr: list[list[float]] | None = [[c.mean - c.ci_low], [c.ci_high - c.mean]]
                if not (math.isfinite(c.ci_low) and math.isfinite(c.ci_high)):
                    xerr = None  # a single finite seed has no interval
                axis.errorbar([c.mean], [ys[j]], xerr=xerr, fmt="o", color=colour, ms=5,
                              capsize=3, elinewidth=1.6, zorder=3)
            labels.append(f"{model} ({c.n_diverged} diverged)" if c.n_diverged else model)
        axis.set_yticks(ys, labels)
        axis.set_ylim(-0.6, n_models - 0.4)
        axis.set_title(task, loc="left", fontsize=10, fontweight="bold")
        spec = report.metric(task)
        axis.set_xlabel(axis_label(spec.name, spec.higher_is_better), fontsize=9)
        axis.grid(axis="x", alpha=0.3)
        axis.tick_params(labelsize=9)
    _save(fig, path)
    return fig


def _forest_caption(report: ReportRecord, source: str = "seeds") -> str:
    if source != "seeds":
        return (f"Mean over {seeds_phrase(report)}, {source.replace('_', ' ')} interval "
                f"(epoch: {report.epoch_selection}); dots: single seeds")
    return (f"Mean and {method_phrase(report)} over {seeds_phrase(report)} "
            f"(epoch: {report.epoch_selection}); dots: single seeds")


def plot_comparison(
    verdicts: Iterable[CellVerdict],
    path: str | os.PathLike | None = None,
    ax: Axes | None = None,
    margin: float | None = None,
    reports: tuple[ReportRecord, ReportRecord] | None = None,
) -> Figure:
    """Paired differences of a gate, one row per (task, model) cell, coloured by verdict.

    ``verdicts``: what a gate (or ``gates.compare_reports``) returns, each with ``.task``,
    ``.model`` and ``.comparison`` (a :class:`~pytest_graphnetz.stats.Comparison`: its
    evidence's ``mean_diff``, ``margin``, ``kind``, its decision's two-sided ``ci`` and
    ``verdict``). Δ is candidate −
    baseline with the sign flipped for lower-is-better metrics, so right is always better.
    Lines mark 0 and the gate's bound: −margin (``not_worse``), +margin (``better``), ±margin
    (``equivalent``); ``margin`` overrides the comparisons' own; a dotted line marks −δ, the
    ``min_effect`` of a not-worse comparison (NOT WORSE needs the lower bound above it). Tasks
    are separated by rules. ``reports``: the ``(baseline, candidate)`` the verdicts came
    from; each seed's own paired difference is then drawn as a light dot on its row. Each row's
    label names its verdict.
    Writes the figure to ``path`` when given; returns the Figure.
    """
    _require_matplotlib()
    verdicts = list(verdicts)
    if not verdicts:
        raise ValueError("`verdicts` is empty: nothing to plot")
    n = len(verdicts)
    if ax is None:
        fig, (ax,) = _new_figure(_ROW_IN * n + _PANEL_IN, 1, [1.0])
    fig = _root_figure(ax)

    ys = np.arange(n)[::-1].astype(float)
    seen, bounds, deltas = _comparison_rows(ax, verdicts, ys, margin, reports)
    for k in range(1, n):
        if verdicts[k].task != verdicts[k - 1].task:
            ax.axhline(ys[k] + 0.5, color="0.6", lw=0.6, zorder=1)
    ax.axvline(0.0, color="black", lw=0.9, zorder=2)
    handles = _bound_lines(ax, seen, bounds - {0.0}, deltas)
    ax.set_yticks(ys, [f"{v.task} · {v.model}\n{v.comparison.decision.verdict}" for v in verdicts])
    ax.set_ylim(-0.6, n - 0.4)
    # Each comparison's interval at its own level (1 - 2 alpha, or its ends' levels after Holm
    # or at a sequential look), labelled as the gate's message labels it.
    levels = sorted({fmt_level(v.comparison.confidence_level) for v in verdicts})
    dots = "; dots: single seeds" if reports is not None else ""
    ax.set_xlabel(f"mean paired Δ with its {'/'.join(levels)} CI: candidate − baseline "
                  f"(positive = better){dots}", fontsize=9)
    ax.grid(axis="x", alpha=0.3)
    ax.tick_params(labelsize=9)
    # Outside the axes, so it never hides a row.
    ax.legend(handles=handles, fontsize=8, loc="upper left", bbox_to_anchor=(1.01, 1.0),
              frameon=False)
    _save(fig, path)
    return fig


def _comparison_rows(ax: Axes, verdicts: Sequence[CellVerdict], ys: np.ndarray,
                     margin: float | None,
                     reports: tuple[ReportRecord, ReportRecord] | None,
                     ) -> tuple[dict[Verdict, str], set[float], set[float]]:
    """Draw each verdict's mean paired Δ and interval at its row ``ys[i]`` (with each seed's
    own difference as a light dot when ``reports`` are given); the colour of each verdict
    drawn, the gate's bounds (±margin by kind) and the −δ lines, for the legend."""
    seen: dict[Verdict, str] = {}
    bounds: set[float] = set()
    deltas: set[float] = set()
    for y, v in zip(ys, verdicts, strict=True):
        c = v.comparison
        ev, dec = c.evidence, c.decision
        colour = VERDICT_COLOURS.get(dec.verdict, "#000000")
        seen.setdefault(dec.verdict, colour)
        m = float(c.settings.margin if margin is None else margin)
        bounds.update({"not_worse": [-m], "better": [m]}.get(ev.kind, [-m, m]))
        if ev.kind == "not_worse" and c.settings.min_effect is not None:
            deltas.add(-float(c.settings.min_effect))
        if reports is not None:
            d = _paired_differences(v, *reports)
            jitter = np.linspace(-0.18, 0.18, d.size) if d.size > 1 else np.zeros(d.size)
            ax.scatter(d, y + jitter, s=14, color=colour, alpha=0.35, linewidths=0, zorder=1)
        xerr = [[ev.mean_diff - dec.ci.low], [dec.ci.high - ev.mean_diff]]
        ax.errorbar([ev.mean_diff], [y], xerr=xerr, fmt="o", color=colour, ms=5, capsize=3,
                    elinewidth=1.6, zorder=3)
    return seen, bounds, deltas


def _bound_lines(ax: Axes, seen: Mapping[Verdict, str], bounds: set[float],
                 deltas: set[float]) -> list[Any]:
    """Draw the margin ``bounds`` (dashed) and the −δ lines (dotted); the legend's handles: a
    dot per verdict in ``seen`` (its colour), then the margin and δ lines drawn."""
    from matplotlib.lines import Line2D

    handles = [Line2D([], [], color=col, marker="o", ls="", label=str(name))
               for name, col in seen.items()]
    for values, colour, style, label in ((bounds, _MARGIN_COLOUR, "--", "margin"),
                                         (deltas, _DELTA_COLOUR, ":", "−δ, min_effect")):
        for b in sorted(values):
            ax.axvline(b, color=colour, lw=_BOUND_LW, ls=style, zorder=2)
        if values:
            text = ", ".join(fmt_signed(b) for b in sorted(values))
            handles.append(Line2D([], [], color=colour, lw=_BOUND_LW, ls=style,
                                  label=f"{label} ({text})"))
    return handles


def _root_figure(ax: Axes) -> Figure:
    """The Figure that holds ``ax``, through any SubFigure (only a Figure saves)."""
    from matplotlib.figure import Figure

    fig = ax.figure
    return fig if isinstance(fig, Figure) else fig.figure


def _paired_differences(verdict: CellVerdict, baseline: ReportRecord,
                        candidate: ReportRecord) -> np.ndarray:
    """The per-seed d_s of one verdict's cell over its paired seeds (+ = better)."""
    task, model = verdict.task, verdict.model
    cand = candidate.values(task, model)[[candidate.seeds.index(s) for s in verdict.seeds]]
    base = baseline.values(task, model)[[baseline.seeds.index(s) for s in verdict.seeds]]
    d = cand - base
    return d if candidate.metric(task).higher_is_better else -d


def plot_tuning(records: Mapping[str, TuningRecord], path: str | os.PathLike | None = None,
                ax: Axes | None = None) -> Figure:
    """Expected-max tuning curves (Dodge et al. 2019): per arm (``{"baseline": record, ...}``)
    the expected best mean validation score of ``k`` random trials of its search, k = 1..N,
    with ±1 sd, and the winner's validation mean on its confirmation seeds as a marker at N
    (the gap is the optimism the confirmation removes)."""
    from pytest_graphnetz.stats.expected_max import expected_max

    _require_matplotlib()
    if not records:
        raise ValueError("`records`: no tuned arm to draw (a report from tune() carries one)")
    if ax is None:
        fig, (ax,) = _new_figure(3.2, 1, [1.0])
    else:
        fig = _root_figure(ax)
    for (arm, record), colour in zip(records.items(), ("#455a64", "#1565c0", "#6a1b9a"),
                                     strict=False):
        scores = [m for m in record.trial_means() if math.isfinite(m)]
        curve = expected_max(scores, higher_is_better=record.higher_is_better)
        mean, sd = np.array(curve.mean), np.array(curve.sd)
        ax.plot(curve.budgets, mean, marker="o", ms=3, color=colour,
                label=f"{arm}: {record.budget} (optimism {fmt_signed(record.optimism)})")
        ax.fill_between(curve.budgets, mean - sd, mean + sd, color=colour, alpha=0.15, lw=0)
        ax.plot([curve.budgets[-1]], [record.confirmation_mean], marker="D", color=colour,
                ls="none")
    first = next(iter(records.values()))
    ax.set_xlabel("trials k (random draws from the search)")
    ax.set_ylabel(f"expected best validation {first.metric}")
    ax.set_title("expected validation performance; ◆ the winner on its confirmation seeds",
                 fontsize=9)
    ax.legend(fontsize=8)
    _save(fig, path)
    return fig
