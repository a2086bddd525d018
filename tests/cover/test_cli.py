"""The `graphnetz` command: show, compare (exit codes 0/1/2) and refresh."""

from __future__ import annotations

import subprocess
import sys

import numpy as np
import pytest

from pytest_graphnetz import BenchmarkReport
from pytest_graphnetz.cli.main import main as cli_main
from pytest_graphnetz.stats.boundaries import LookSchedule
from tests.helpers.reports import BASE, FIRST_LOOK, bind, write


def main(argv: list[str]) -> int:
    if argv and argv[0] in ("compare", "plot") and "--first-look" not in argv:
        argv = [*argv, *FIRST_LOOK]
    return cli_main(argv)


def test_show_prints_the_summary(tmp_path, capsys) -> None:
    path = write(tmp_path / "r.json", [BASE, BASE + 0.05], models=("GCN", "GAT"))
    assert main(["show", path]) == 0
    out = capsys.readouterr().out
    assert "1 tasks × 2 models × 6 seeds" in out
    assert "GAT" in out and f"{BASE.mean() + 0.05:.4f}" in out


def test_compare_exit_codes(tmp_path, capsys) -> None:
    base = write(tmp_path / "base.json", BASE)
    same = write(tmp_path / "same.json", BASE)
    worse = write(tmp_path / "worse.json", BASE - [0.03, 0.02, 0.04, 0.03, 0.02, 0.03])
    assert main(["compare", base, same]) == 0
    assert "IDENTICAL" in capsys.readouterr().out
    assert main(["compare", base, worse, "--test", "wilcoxon"]) == 1
    out = capsys.readouterr().out
    assert "REGRESSED" in out and "test wilcoxon" in out
    # a margin wider than the drop: not a regression any more
    assert main(["compare", base, worse, "--margin", "0.1"]) == 0
    assert main(["compare", str(tmp_path / "nope.json"), same]) == 2
    assert "no baseline at" in capsys.readouterr().err
    (tmp_path / "bad.json").write_text("[]")
    assert main(["compare", str(tmp_path / "bad.json"), same]) == 2
    assert "cannot be read" in capsys.readouterr().err


def test_refresh_runs_pytest_with_update(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(test_model="""
        import numpy as np
        from pytest_graphnetz import BenchmarkReport, assert_not_worse

        def test_gcn(graphnetz_baseline):
            X = np.array([[[0.8, 0.82, 0.79]]])
            r = BenchmarkReport.from_arrays(X, tasks=["t"], models=["m"], seeds=range(3),
                                            metric="accuracy")
            assert_not_worse(r, graphnetz_baseline())
    """)
    result = pytester.run(sys.executable, "-m", "pytest_graphnetz.cli", "refresh", "-q",
                          "-k", "gcn", "-p", "no:cacheprovider")
    assert result.ret == 0
    assert (pytester.path / "baselines" / "test_model" / "test_gcn.json").is_file()


# -- compare: the three gates, Markdown, and exit codes that mean one thing each ------------------

def run(argv: list[str]) -> int:
    """``main(argv)``'s exit code, also when argparse exits (usage errors)."""
    try:
        return main(argv)
    except SystemExit as exc:
        return int(exc.code)


def test_compare_gates_better_and_equivalent(tmp_path, capsys) -> None:
    from scipy import stats

    base = write(tmp_path / "base.json", BASE)
    up = BASE + [0.02, 0.03, 0.02, 0.025, 0.03, 0.02]
    better = write(tmp_path / "better.json", up)
    assert run(["compare", base, better, "--gate", "better"]) == 0
    assert "BETTER" in capsys.readouterr().out
    # the same pair as a regression test: not worse, so it passes too
    assert run(["compare", base, better]) == 0
    capsys.readouterr()
    # the reverse is no improvement: the better gate fails, with its message
    assert run(["compare", better, base, "--gate", "better"]) == 1
    out = capsys.readouterr().out
    assert "paired Δ" in out and "karate/GCN" in out

    # equivalence (TOST) within ±margin; the reference: two one-sided paired t-tests
    near = BASE + [0.004, -0.003, 0.002, -0.001, 0.003, -0.002]
    eq = write(tmp_path / "near.json", near)
    d = near - BASE
    p_tost = max(stats.ttest_1samp(d, -0.02, alternative="greater").pvalue,
                 stats.ttest_1samp(d, 0.02, alternative="less").pvalue)
    assert p_tost < 0.05
    assert run(["compare", base, eq, "--gate", "equivalent", "--margin", "0.02"]) == 0
    assert "EQUIVALENT" in capsys.readouterr().out
    assert run(["compare", base, better, "--gate", "equivalent", "--margin", "0.005"]) == 1
    assert "NOT EQUIVALENT" in capsys.readouterr().out


def test_compare_markdown(tmp_path, capsys) -> None:
    base = write(tmp_path / "base.json", BASE, alpha=0.01)   # the schedule it binds: α 0.01
    worse = write(tmp_path / "worse.json", BASE - [0.03, 0.02, 0.04, 0.03, 0.02, 0.03])
    assert run(["compare", base, worse, "--markdown", "--alpha", "0.01"]) == 1
    out = capsys.readouterr().out
    assert out.startswith(f"### graphnetz compare: `{worse}` against `{base}`\n")
    assert "**1 of 1 cell(s) failed the not-worse gate (paired-t, alpha 0.01, margin 0)**" in out
    assert "| Cell | Metric | Baseline | Candidate |" in out and "| REGRESSED |" in out
    assert "<details><summary>Why it failed</summary>" in out
    assert "karate/GCN — accuracy (higher is better): REGRESSED" in out
    assert run(["compare", base, base, "--markdown", "--alpha", "0.01"]) == 0
    assert "All 1 cell(s) pass the not-worse gate" in capsys.readouterr().out
    assert run(["compare", base, base, "--markdown"]) == 2   # α 0.05: not its schedule
    assert "binds the schedule first look 6 seeds, α 0.01" in capsys.readouterr().err


@pytest.mark.parametrize(("args", "message"), [
    (["compare", "{base}", "{same}", "--alpha", "0.7"], "argument --alpha: must lie in (0, 0.5)"),
    (["compare", "{base}", "{same}", "--alpha", "abc"], "argument --alpha: expected a number"),
    (["compare", "{base}", "{same}", "--margin", "-1"], "argument --margin: must be >= 0"),
    (["compare", "{base}", "{same}", "--margin", "nan"], "expected a finite number"),
    (["compare", "{base}", "{same}", "--gate", "equivalent"], "needs the equivalence bound"),
    (["compare", "{base}", "{same}", "--gate", "worse"], "argument --gate: invalid choice"),
    (["compare", "{dir}", "{same}"], "is a directory; give a report JSON file"),
    (["compare", "{base}", "{dir}"], "is a directory; give a report JSON file"),
    (["show", "."], ". is a directory"),
    (["show", "{missing}"], "no report at"),
    (["show", "{bad}"], "not a pytest-graphnetz report"),
    (["compare", "{base}", "{same}", "--nope"], "unrecognized arguments: --nope"),
    (["compare", "{base}", "{same}", "--min-effect", "0.01", "--margin", "0.02"],
     "argument --min-effect: δ (0.01) must be larger than --margin (0.02)"),
    (["compare", "{base}", "{same}", "--min-effect", "-0.1"], "argument --min-effect: must be > 0"),
    (["plot", "{base}", "{same}"], "the following arguments are required: -o/--output"),
])
def test_usage_and_input_errors_exit_2_with_one_line(tmp_path, capsys, args, message) -> None:
    (tmp_path / "bad.json").write_text("[]")
    paths = {"base": write(tmp_path / "base.json", BASE), "same": write(tmp_path / "s.json", BASE),
             "dir": str(tmp_path), "missing": str(tmp_path / "nope.json"),
             "bad": str(tmp_path / "bad.json")}
    assert run([a.format(**paths) for a in args]) == 2
    captured = capsys.readouterr()
    err = captured.err.strip()
    assert message in err
    assert len(err.splitlines()) == 1, err
    assert "Traceback" not in captured.err + captured.out


def test_refused_comparison_exits_2_with_the_unpaired_numbers(tmp_path, capsys) -> None:
    def fingerprinted(path, values, data):
        X = np.asarray(values, dtype=float)[None, None, :]
        BenchmarkReport.from_arrays(
            X, tasks=["karate"], models=["GCN"], seeds=range(6), metric="accuracy",
            fingerprints={"data": {"karate": {s: data for s in range(6)}}}).to_json(path)
        return str(path)

    base = bind(fingerprinted(tmp_path / "a.json", BASE, "a"), LookSchedule(6))
    cand = fingerprinted(tmp_path / "b.json", BASE + 0.01, "b")
    assert run(["compare", base, cand]) == 2
    err = capsys.readouterr().err
    assert "refused: no paired verdict: the data or split of task 'karate' changed\n" in err
    assert "task 'karate': its data or split differs" in err
    assert "UNPAIRED" in err and "Welch Δ +0.01" in err


def test_plot_two_reports_draws_the_paired_comparison(tmp_path) -> None:
    pytest.importorskip("matplotlib")
    from matplotlib.collections import PathCollection
    from matplotlib.container import ErrorbarContainer

    from pytest_graphnetz.gates import compare_reports
    from pytest_graphnetz.report.plots import plot_comparison

    drops = np.array([0.03, 0.02, 0.04, 0.03, 0.02, 0.03])
    base = write(tmp_path / "base.json", [BASE, BASE], models=("GCN", "GAT"))
    cand = write(tmp_path / "cand.json", [BASE - drops, BASE + 0.001], models=("GCN", "GAT"))
    out = tmp_path / "paired.png"
    assert run(["plot", base, cand, "-o", str(out)]) == 0
    assert out.read_bytes()[:4] == b"\x89PNG"

    b, c = BenchmarkReport.from_json(base), BenchmarkReport.from_json(cand)
    verdicts = compare_reports(c, b, first_look=6)
    fig = plot_comparison(verdicts, reports=(b, c))
    (axis,) = fig.axes
    dots = [coll.get_offsets()[:, 0] for coll in axis.collections
            if isinstance(coll, PathCollection)]
    assert [np.asarray(d) for d in dots][0] == pytest.approx(-drops)     # every seed's own d_s
    assert [np.asarray(d) for d in dots][1] == pytest.approx(np.full(6, 0.001))
    bars = [cont for cont in axis.containers if isinstance(cont, ErrorbarContainer)]
    assert float(bars[0].lines[0].get_xdata()[0]) == pytest.approx(-drops.mean())
    labels = [t.get_text() for t in axis.get_yticklabels()]
    # GAT gains 0.1 point on every seed: significant, so BETTER (a refresh would keep it)
    assert labels == ["karate · GCN\nREGRESSED", "karate · GAT\nBETTER"]
    # a single report is still its forest plot
    assert run(["plot", base, "-o", str(tmp_path / "forest.png")]) == 0


def test_compare_min_effect_sets_delta_and_is_validated(tmp_path, capsys) -> None:
    wobble = np.array([0.004, -0.003, 0.002, -0.002, 0.003, -0.001])
    base = write(tmp_path / "base.json", BASE)
    cand = write(tmp_path / "cand.json", BASE + wobble)
    assert run(["compare", base, cand]) == 0            # default δ: one point
    assert "NOT WORSE" in capsys.readouterr().out
    assert run(["compare", base, cand, "--min-effect", "0.001", "--strict"]) == 1
    assert "INCONCLUSIVE" in capsys.readouterr().out     # a tenth of a point is not ruled out
    assert run(["compare", base, cand, "--margin", "0.01", "--min-effect", "0.005"]) == 2
    assert "--min-effect: δ (0.005) must be larger than --margin (0.01)" in capsys.readouterr().err


def test_compare_min_effect_reaches_the_gate(tmp_path, capsys) -> None:
    from scipy import stats

    d = np.array([-0.015, 0.008, -0.012, 0.006, -0.02, 0.003])
    # the reference: no significant drop (one-sided p = 0.18), and a 95% one-sided lower bound
    # of -0.0149: below -0.01 (the default δ for accuracy) but above -0.05
    assert stats.ttest_1samp(d, 0.0, alternative="less").pvalue > 0.05
    lower = d.mean() - stats.t.ppf(0.95, d.size - 1) * stats.sem(d)
    assert -0.05 < lower < -0.01
    base = write(tmp_path / "base.json", BASE)
    cand = write(tmp_path / "cand.json", BASE + d)
    assert run(["compare", base, cand]) == 0
    assert "INCONCLUSIVE" in capsys.readouterr().out
    assert run(["compare", base, cand, "--min-effect", "0.05"]) == 0
    assert "NOT WORSE" in capsys.readouterr().out
    assert run(["compare", base, cand, "--strict"]) == 1     # INCONCLUSIVE fails when strict
    assert run(["compare", base, cand, "--strict", "--min-effect", "0.05"]) == 0

    # the paired plot marks -δ beside the margin
    pytest.importorskip("matplotlib")
    from pytest_graphnetz.gates import compare_reports
    from pytest_graphnetz.report.plots import plot_comparison

    b, c = BenchmarkReport.from_json(base), BenchmarkReport.from_json(cand)
    axis = plot_comparison(compare_reports(c, b, min_effect=0.05, first_look=6),
                           reports=(b, c)).axes[0]
    vlines = sorted(float(ln.get_xdata()[0]) for ln in axis.lines
                    if list(ln.get_ydata()) == [0, 1])
    assert vlines == pytest.approx([-0.05, 0.0])
    legend = [t.get_text() for t in axis.get_legend().get_texts()]
    assert "−δ, min_effect (-0.05)" in legend
    assert run(["plot", base, cand, "--min-effect", "0.05", "-o", str(tmp_path / "p.png")]) == 0


GATED = """
import pytest

from pytest_graphnetz import BenchmarkReport, assert_not_worse

pytestmark = pytest.mark.graphnetz


def report():
    return BenchmarkReport.from_arrays([[[0.8, 0.7, 0.9]]], tasks=["t"], models=["m"],
                                       seeds=[0, 1, 2], metric="accuracy")


def test_graph(graphnetz_baseline):
    assert_not_worse(report(), graphnetz_baseline())


def test_node(graphnetz_baseline):
    assert_not_worse(report(), graphnetz_baseline())
"""


def test_refresh_takes_a_node_id_and_rewrites_that_baseline_only(pytester):
    pytester.makepyfile(test_gated=GATED)
    result = pytester.run(sys.executable, "-m", "pytest_graphnetz.cli", "refresh",
                          "test_gated.py::test_graph", "-p", "no:cacheprovider")
    assert result.ret == 0, result.stdout.str()
    written = sorted(p.name for p in (pytester.path / "baselines" / "test_gated").glob("*.json"))
    assert written == ["test_graph.json"]


# -- costs seconds each (marked slow): fresh interpreters, subprocess sessions or killed
# processes (the slow tier, tests/README.md) ------------------------------------------------


@pytest.mark.slow
def test_only_a_failed_gate_exits_1(tmp_path) -> None:
    base = write(tmp_path / "base.json", BASE)
    worse = write(tmp_path / "worse.json", BASE - 0.03)
    # as a separate process: the real exit status, as CI sees it
    codes = [subprocess.run([sys.executable, "-m", "pytest_graphnetz.cli", *argv],
                            capture_output=True).returncode
             for argv in (["compare", base, base, *FIRST_LOOK],
                          ["compare", base, worse, *FIRST_LOOK],
                          ["compare", base, base, "--alpha", "0.7"], ["show", str(tmp_path)])]
    assert codes == [0, 1, 2, 2]


@pytest.mark.slow
def test_version_prints_the_version_and_exits_0() -> None:
    import pytest_graphnetz

    done = subprocess.run([sys.executable, "-m", "pytest_graphnetz.cli", "--version"],
                          capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == f"graphnetz (pytest-graphnetz) {pytest_graphnetz.__version__}"
