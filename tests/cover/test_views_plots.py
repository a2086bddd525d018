"""Forest and comparison plots: the drawn data (error-bar segments, dots, lines), not pixels."""

from __future__ import annotations

import sys

import numpy as np
import pytest

pytest.importorskip("matplotlib")

from matplotlib.collections import PathCollection  # noqa: E402
from matplotlib.container import ErrorbarContainer  # noqa: E402

from pytest_graphnetz import BenchmarkReport  # noqa: E402
from pytest_graphnetz.report.plots import plot_comparison, plot_forest  # noqa: E402

CEILING = [1.0] * 9 + [0.9]  # bootstrap interval [0.97, 1.00] around a mean of 0.99


def _report(ci_method: str = "t") -> BenchmarkReport:
    X = np.array([
        [CEILING, [0.80, 0.82, 0.78, 0.84, 0.81, 0.79, 0.83, 0.80, 0.82, 0.81]],
        [[0.50, 0.56, 0.45, 0.60, 0.52, 0.51, 0.49, 0.55, 0.53, 0.50],
         [0.40, 0.44, 0.43, 0.41, 0.42, 0.45, 0.39, 0.40, 0.43, 0.42]],
    ])
    return BenchmarkReport.from_arrays(X, tasks=["karate", "zinc"], models=["GIN", "GCN"],
                                       seeds=range(10), metric={"karate": "accuracy",
                                                                "zinc": "mae"},
                                       ci_method=ci_method)


def _bars(axis) -> list[np.ndarray]:
    """Per error bar on ``axis``: the (2, 2) segment [[x_low, y], [x_high, y]], top row first."""
    bars = [c for c in axis.containers if isinstance(c, ErrorbarContainer)]
    segments = [np.asarray(c.lines[2][0].get_segments()[0]) for c in bars]
    return sorted(segments, key=lambda s: -s[0, 1])


def _means(axis) -> list[float]:
    bars = [c for c in axis.containers if isinstance(c, ErrorbarContainer)]
    lines = sorted((c.lines[0] for c in bars), key=lambda ln: -ln.get_ydata()[0])
    return [float(ln.get_xdata()[0]) for ln in lines]


def test_writes_a_png_and_returns_the_figure(tmp_path):
    from matplotlib.figure import Figure

    path = tmp_path / "out" / "forest.png"
    fig = plot_forest(_report(), path=path)
    assert isinstance(fig, Figure)
    assert path.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    # one panel per task, titled, each x axis carrying the metric and its direction
    assert [a.get_title(loc="left") for a in fig.axes] == ["karate", "zinc"]
    assert [a.get_xlabel() for a in fig.axes] == ["accuracy (higher is better →)",
                                                  "mae (← lower is better)"]
    assert [t.get_text() for t in fig.axes[0].get_yticklabels()] == ["GIN", "GCN"]


def test_bootstrap_error_bars_are_the_asymmetric_endpoints():
    report = _report("bootstrap")
    fig = plot_forest(report)
    top, _ = _bars(fig.axes[0])  # karate / GIN: nine 1.00 and one 0.90
    assert top[:, 0] == pytest.approx([0.97, 1.00])
    assert _means(fig.axes[0])[0] == pytest.approx(0.99)
    # upper arm 0.01, lower arm 0.02: drawn from the endpoints, never mean ± half (1.005)
    assert top[1, 0] - 0.99 == pytest.approx(0.01) and 0.99 - top[0, 0] == pytest.approx(0.02)
    rows = {(r.task, r.model): r for r in report.summary()}
    for axis, task in zip(fig.axes, report.tasks, strict=True):
        for seg, model in zip(_bars(axis), report.models, strict=True):
            assert seg[:, 0] == pytest.approx([rows[(task, model)].ci_low,
                                               rows[(task, model)].ci_high], abs=1e-12)


def test_t_error_bars_are_scipys_t_interval():
    from scipy import stats

    report = _report("t")
    fig = plot_forest(report)
    x = np.asarray(CEILING)
    low, high = stats.t.interval(0.95, x.size - 1, loc=x.mean(), scale=stats.sem(x))
    top, _ = _bars(fig.axes[0])
    # the symmetric t interval overshoots the ceiling: the bar stops at 1, like the summary
    assert high > 1.0
    assert top[:, 0] == pytest.approx([low, 1.0], abs=1e-12)


def test_every_seed_is_drawn_lightly_and_a_diverged_seed_is_counted():
    X = np.array([[[0.70, 0.72, np.nan, 0.71], [0.60, 0.61, 0.62, 0.59]]])
    report = BenchmarkReport.from_arrays(X, tasks=["cora"], models=["GCN", "MLP"],
                                         seeds=range(4), metric="accuracy")
    fig = plot_forest(report)
    (axis,) = fig.axes
    dots = [c for c in axis.collections if isinstance(c, PathCollection)]
    assert len(dots) == 2
    xs = sorted(np.concatenate([d.get_offsets()[:, 0].compressed() for d in dots]).tolist())
    assert xs == pytest.approx(sorted([0.70, 0.72, 0.71, 0.60, 0.61, 0.62, 0.59]))
    assert all(d.get_alpha() < 0.5 for d in dots)
    assert [t.get_text() for t in axis.get_yticklabels()] == ["GCN (1 diverged)", "MLP"]


def test_figure_height_grows_with_rows_and_caption_names_the_method():
    small = plot_forest(_report().subset(tasks=["zinc"]))
    big = plot_forest(_report())
    assert big.get_figheight() > small.get_figheight()
    assert "95% Student-t interval over 10 seeds" in small.get_suptitle()


def test_given_axes_are_drawn_into_and_a_wrong_count_is_refused():
    from matplotlib.figure import Figure

    fig = Figure()
    axes = fig.subplots(2, 1)
    assert plot_forest(_report(), ax=axes) is fig
    assert len(_bars(axes[1])) == 2
    with pytest.raises(ValueError, match=r"needs 2 Axes \(one per task\) but got 1"):
        plot_forest(_report(), ax=axes[0])


def test_no_pyplot_figures_and_backend_untouched():
    import matplotlib
    import matplotlib.pyplot as plt

    backend, open_figs = matplotlib.get_backend(), plt.get_fignums()
    plot_forest(_report())
    assert matplotlib.get_backend() == backend
    assert plt.get_fignums() == open_figs


def test_missing_matplotlib_names_the_extra(monkeypatch):
    monkeypatch.setitem(sys.modules, "matplotlib", None)
    with pytest.raises(ImportError, match=r"pip install 'pytest-graphnetz\[plot\]'"):
        plot_forest(_report())


def test_comparison_plot_colours_by_verdict_and_marks_the_margin(tmp_path):
    from pytest_graphnetz.gates import compare_reports
    from pytest_graphnetz.report.plots import VERDICT_COLOURS

    base = _report()
    X = base.X.copy()
    X[0, 1] -= 0.05  # karate/GCN clearly worse on every seed: REGRESSED
    X[1, 1] -= 0.02  # zinc/GCN lower MAE on every seed, beyond the margin: BETTER
    cand = BenchmarkReport.from_arrays(X, tasks=base.tasks, models=base.models, seeds=base.seeds,
                                       metric={"karate": "accuracy", "zinc": "mae"})
    verdicts = compare_reports(cand, base, margin=0.01)
    names = [str(v.comparison.decision.verdict) for v in verdicts]
    assert names == ["IDENTICAL", "REGRESSED", "IDENTICAL", "BETTER"]

    path = tmp_path / "cmp.png"
    fig = plot_comparison(verdicts, path=path)
    assert path.read_bytes()[:4] == b"\x89PNG"
    (axis,) = [a for a in fig.axes]
    bars = [c for c in axis.containers if isinstance(c, ErrorbarContainer)]
    colours = [c.lines[0].get_color() for c in bars]
    assert colours == [VERDICT_COLOURS[n] for n in names]
    # candidate − baseline, sign-flipped for MAE: −0.05 on karate/GCN, +0.02 on zinc/GCN
    assert [float(c.lines[0].get_xdata()[0]) for c in bars] == pytest.approx(
        [0.0, -0.05, 0.0, 0.02])
    # axvline: x = [b, b] spanning the axes' height, y = [0, 1]
    vlines = sorted(float(ln.get_xdata()[0]) for ln in axis.lines
                    if list(ln.get_ydata()) == [0, 1])
    # and the dotted −δ: with margin 0.01 accuracy's default δ is one point beyond it (0.02)
    assert vlines == pytest.approx([-0.02, -0.01, 0.0])
    legend = [t.get_text() for t in axis.get_legend().get_texts()]
    assert legend[:4] == ["IDENTICAL", "REGRESSED", "BETTER", "margin (-0.01)"]
    assert legend[4].startswith("−δ, min_effect")
