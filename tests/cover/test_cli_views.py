"""One `ci_method` drives the plot, the LaTeX and the Markdown; the `graphnetz plot / latex /
markdown` commands."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from pytest_graphnetz.cli.main import main
from tests.helpers.reports import LATEX, X, small_report

MARKDOWN_ROWS = {
    "t": ("| GIN | **0.990 [0.967, 1.000]** |", "| GCN | 0.810 ± 0.013 |",
          "_Mean ± half-width of the 95% Student-t interval over 10 seeds (epoch selection: "
          "final). **Bold**: best in its task by a paired t-test against every other model "
          "(Holm-corrected, alpha = 0.05). 1 interval(s) reaching beyond [0, 1] clipped to it "
          "(shown by their endpoints)._"),
    "bootstrap": ("| GIN | **0.990 [0.970, 1.000]** |", "| GCN | 0.810 [0.799, 0.821] |",
                  "_Mean [low, high] of the 95% percentile bootstrap interval over 10 seeds "
                  "(epoch selection: final). **Bold**: best in its task by a paired t-test "
                  "against every other model (Holm-corrected, alpha = 0.05)._"),
}
NAME = {"t": "Student-t", "bootstrap": "percentile bootstrap"}
MARKDOWN = {method: "\n".join([
    "| model | karate (accuracy ↑) |", "|---|---|", *MARKDOWN_ROWS[method][:2], "",
    MARKDOWN_ROWS[method][2], "",
    "### Findings", "",
    "| task | pair (a vs b) | Δ (+: a better) [95% CI] | p (Holm) | n | finding |",
    "|---|---|---|---|---|---|",
    "| karate | GIN vs GCN | +0.180 [+0.154, +0.206] | 8.1e-08 | 10 | GIN better |", "",
    "_Paired t-test on per-seed differences, Holm-corrected over the pairs of each task, "
    f"alpha = 0.05. *Italics*: the two models' 95% {NAME[method]} intervals overlap — a "
    "caution only; overlapping intervals can still differ under the paired test._", ""])
    for method in ("t", "bootstrap")}

# The plotted error bars: (low, high) per model, GIN first.
BARS = {"t": [(0.96738, 1.0), (0.79694, 0.82306)],
        "bootstrap": [(0.97, 1.0), (0.799, 0.821)]}


@pytest.mark.parametrize("method", ["t", "bootstrap"])
def test_ci_method_drives_all_three_views(method):
    pytest.importorskip("matplotlib")
    from matplotlib.container import ErrorbarContainer

    report = small_report("t")
    report.ci_method = method  # set once, after construction
    assert report.to_latex() == LATEX[method]
    assert report.to_markdown() == MARKDOWN[method]
    fig = report.plot_forest()
    bars = [c for c in fig.axes[0].containers if isinstance(c, ErrorbarContainer)]
    drawn = [tuple(np.asarray(c.lines[2][0].get_segments()[0])[:, 0]) for c in bars]
    assert drawn == [pytest.approx(bar, abs=1e-5) for bar in BARS[method]]
    assert NAME[method] in fig.get_suptitle()


def test_the_t_bars_are_scipys_t_interval():
    from scipy import stats

    for values, (low, high) in zip(X[0], BARS["t"], strict=True):
        ref = stats.t.interval(0.95, len(values) - 1, loc=values.mean(), scale=stats.sem(values))
        assert (low, high) == pytest.approx((ref[0], min(ref[1], 1.0)), abs=1e-5)


def test_the_two_methods_give_different_numbers_near_a_ceiling():
    t_latex, b_latex = small_report("t").to_latex(), small_report("bootstrap").to_latex()
    # GIN is bold under both: the paired test (not the intervals) tells it apart from GCN
    # t claims [0.967, 1.013], clipped to the accuracy's ceiling
    assert r"GIN & $\mathbf{0.990^{+0.010}_{-0.023}}$" in t_latex
    assert r"GIN & $\mathbf{0.990^{+0.010}_{-0.020}}$" in b_latex  # bootstrap: [0.97, 1.00]


def test_confidence_level_reaches_the_views():
    report = small_report()
    report.confidence_level = 0.9
    assert "90\\% Student-t interval" in report.to_latex()
    assert "[90% CI]" in report.to_markdown()


# -- the commands -------------------------------------------------------------------------------

def test_latex_command_prints_the_table(report_file, capsys):
    assert main(["latex", str(report_file)]) == 0
    assert capsys.readouterr().out == LATEX["t"]
    assert main(["latex", str(report_file), "--ci", "bootstrap"]) == 0
    assert capsys.readouterr().out == LATEX["bootstrap"]


def test_markdown_command_writes_a_file(report_file, tmp_path, capsys):
    out = tmp_path / "views" / "report.md"
    assert main(["markdown", str(report_file), "-o", str(out)]) == 0
    assert capsys.readouterr().out == ""
    text = out.read_text(encoding="utf-8")
    assert text == MARKDOWN["t"]


def test_plot_command_writes_a_png(report_file, tmp_path):
    pytest.importorskip("matplotlib")
    out = tmp_path / "forest.png"
    assert main(["plot", str(report_file), "-o", str(out)]) == 0
    assert out.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def test_plot_command_needs_an_output(report_file, capsys):
    with pytest.raises(SystemExit) as exc:
        main(["plot", str(report_file)])
    assert exc.value.code == 2
    assert "-o/--output" in capsys.readouterr().err


def test_plot_command_without_matplotlib_says_what_to_install(report_file, tmp_path,
                                                              monkeypatch, capsys):
    monkeypatch.setitem(sys.modules, "matplotlib", None)
    assert main(["plot", str(report_file), "-o", str(tmp_path / "f.png")]) == 2
    assert "pip install 'pytest-graphnetz[plot]'" in capsys.readouterr().err


def test_missing_report_is_exit_2_naming_the_file(tmp_path, capsys):
    missing = tmp_path / "nope.json"
    assert main(["latex", str(missing)]) == 2
    assert f"no report at {missing}" in capsys.readouterr().err


def test_t_intervals_are_clipped_to_the_metric_range_and_say_so():
    import numpy as np
    from scipy import stats as sps

    from pytest_graphnetz import BenchmarkReport

    values = np.array([1.0] * 9 + [0.9])
    low, high = sps.t.interval(0.95, df=9, loc=values.mean(), scale=sps.sem(values))
    assert high > 1.0  # what t gives: beyond what an accuracy can be
    X = np.stack([values, values])[:, None, :]
    for metric, clipped in (("accuracy", True), ("mae", False)):
        report = BenchmarkReport.from_arrays(X[:1], tasks=["motifs"], models=["GIN"],
                                             seeds=list(range(10)), metric=metric)
        row = report.summary().rows[0]
        assert row.ci_low == pytest.approx(low)
        assert row.ci_high == (1.0 if clipped else pytest.approx(high))
        assert (row.method == "t, clipped to [0, 1]") is clipped
        assert ("clipped to it" in report.to_markdown()) is clipped
        assert ("0.990 [0.967, 1.000]" in report.to_markdown()) is clipped  # not a false ±


# -- costs seconds each (marked slow): fresh interpreters, subprocess sessions or killed
# processes (the slow tier, tests/README.md) ------------------------------------------------


@pytest.mark.slow
def test_console_script_runs(report_file):
    exe = Path(sys.executable).with_name("graphnetz")
    if not exe.exists():
        pytest.skip("the `graphnetz` console script is not installed in this environment")
    done = subprocess.run([str(exe), "latex", str(report_file)], capture_output=True,
                          text=True, check=False, timeout=600)
    assert done.returncode == 0, done.stderr
    assert done.stdout == LATEX["t"]
