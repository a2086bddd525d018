"""One `ci_method` drives the plot, the LaTeX and the Markdown; the `graphnetz plot / latex /
markdown` commands."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from pytest_graphnetz import BenchmarkReport
from pytest_graphnetz.cli import main
from pytest_graphnetz.text import fmt_fixed

X = np.array([[[1.0] * 9 + [0.9], [0.80, 0.82, 0.78, 0.84, 0.81, 0.79, 0.83, 0.80, 0.82, 0.81]]])


def _report(ci_method: str = "t") -> BenchmarkReport:
    return BenchmarkReport.from_arrays(X, tasks=["karate"], models=["GIN", "GCN"],
                                       seeds=range(10), metric="accuracy", ci_method=ci_method)


@pytest.fixture
def report_file(tmp_path) -> Path:
    return _report().to_json(tmp_path / "report.json")


def _views(report: BenchmarkReport) -> tuple[str, str, list[np.ndarray]]:
    from matplotlib.container import ErrorbarContainer

    fig = report.plot_forest()
    bars = [c for c in fig.axes[0].containers if isinstance(c, ErrorbarContainer)]
    return report.to_latex(), report.to_markdown(), [
        np.asarray(c.lines[2][0].get_segments()[0])[:, 0] for c in bars]


@pytest.mark.parametrize("method", ["t", "bootstrap"])
def test_ci_method_drives_all_three_views(method):
    pytest.importorskip("matplotlib")
    report = _report("t")
    report.ci_method = method  # set once, after construction
    latex, markdown, bars = _views(report)
    for row, segment in zip(report.summary(), bars, strict=True):
        assert row.method in (method, f"{method}, clipped to [0, 1]")
        assert segment == pytest.approx([row.ci_low, row.ci_high], abs=1e-12)
        mean = fmt_fixed(row.mean, 3)
        if row.method == "t":  # a clipped t interval is shown by its endpoints
            half = fmt_fixed((row.ci_high - row.ci_low) / 2, 3)
            assert f"{mean} \\pm {half}" in latex and f"{mean} ± {half}" in markdown
        else:
            up, down = (fmt_fixed(x, 3, signed=True)
                        for x in (row.ci_high - row.mean, row.ci_low - row.mean))
            assert f"{mean}^{{{up}}}_{{{down}}}" in latex
            assert f"{mean} [{fmt_fixed(row.ci_low, 3)}, {fmt_fixed(row.ci_high, 3)}]" in markdown
    name = {"t": "Student-t", "bootstrap": "percentile bootstrap"}[method]
    assert f"95\\% {name} interval" in latex and f"95% {name} interval" in markdown
    assert name in report.plot_forest().get_suptitle()


def test_the_two_methods_give_different_numbers_near_a_ceiling():
    t_latex, b_latex = _report("t").to_latex(), _report("bootstrap").to_latex()
    # GIN is bold under both: the paired test (not the intervals) tells it apart from GCN
    # t claims [0.967, 1.013], clipped to the accuracy's ceiling
    assert r"GIN & $\mathbf{0.990^{+0.010}_{-0.023}}$" in t_latex
    assert r"GIN & $\mathbf{0.990^{+0.010}_{-0.020}}$" in b_latex  # bootstrap: [0.97, 1.00]


def test_confidence_level_reaches_the_views():
    report = _report()
    report.confidence_level = 0.9
    assert "90\\% Student-t interval" in report.to_latex()
    assert "[90% CI]" in report.to_markdown()


# -- the commands -------------------------------------------------------------------------------

def test_latex_command_prints_the_table(report_file, capsys):
    assert main(["latex", str(report_file)]) == 0
    assert capsys.readouterr().out == _report().to_latex()
    assert main(["latex", str(report_file), "--ci", "bootstrap"]) == 0
    assert capsys.readouterr().out == _report("bootstrap").to_latex()


def test_markdown_command_writes_a_file(report_file, tmp_path, capsys):
    out = tmp_path / "views" / "report.md"
    assert main(["markdown", str(report_file), "-o", str(out)]) == 0
    assert capsys.readouterr().out == ""
    text = out.read_text(encoding="utf-8")
    assert text == _report().to_markdown()
    assert "### Findings" in text and "| karate | GIN vs GCN |" in text


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


def test_console_script_runs(report_file):
    exe = Path(sys.executable).with_name("graphnetz")
    if not exe.exists():
        pytest.skip("the `graphnetz` console script is not installed in this environment")
    done = subprocess.run([str(exe), "latex", str(report_file)], capture_output=True,
                          text=True, check=False, timeout=120)
    assert done.returncode == 0, done.stderr
    assert done.stdout == _report().to_latex()
