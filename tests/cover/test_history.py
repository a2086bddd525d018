"""`graphnetz history`: reading a folder per commit, the drift check (against scipy and
statsmodels, and by simulation: a slow decline is flagged, a flat history rarely), the figure
(the paired Δ against the anchor the check tests), the self-contained page and the exit
codes."""

from __future__ import annotations

import json
import re
import sys

import numpy as np
import pytest
from scipy import stats as sps

from pytest_graphnetz import BenchmarkReport
from pytest_graphnetz.cli.history.svg import cell_svg
from pytest_graphnetz.cli.history.trend import (
    HistoryError,
    Point,
    cell_values_of,
    drift_check,
    load_history,
)
from pytest_graphnetz.cli.main import main
from pytest_graphnetz.report.codec import dumps, read_json
from pytest_graphnetz.report.values_form import plain_cell_values

CELL = ("test_m/test_a", "t", "GCN")


def simulate(rng: np.random.Generator, *, commits: int = 20, seeds: int = 10,
             decline: float = 0.0, unchanged: float = 0.0, noise: float = 0.01) -> list[Point]:
    """One cell's history: value = 0.8 − decline · c/(commits−1) + seed effect + run noise. A
    commit is, with probability ``unchanged``, its parent bit for bit (nothing changed)."""
    seed_effect = rng.normal(0, 0.01, seeds)
    points, values = [], None
    for c in range(commits):
        if values is None or rng.random() >= unchanged or decline:
            values = 0.8 - decline * c / (commits - 1) + seed_effect + rng.normal(0, noise, seeds)
        points.append(Point(c, dict(enumerate(values.tolist())), None))
    return points


def test_drift_numbers_match_scipy_and_statsmodels() -> None:
    import statsmodels.api as sm
    from statsmodels.stats.multitest import multipletests

    rng = np.random.default_rng(3)
    series = {CELL: simulate(rng, decline=0.004, commits=8),
              ("other", "t", "GAT"): simulate(rng, commits=8)}
    out = drift_check(series, alpha=0.05)
    raw = []
    for cell, points in series.items():
        first, last = (np.array(list(p.values.values())) for p in (points[0], points[-1]))
        d = out[cell]
        assert d.p_latest == pytest.approx(sps.ttest_rel(last, first, alternative="less").pvalue)
        # every commit's paired Δ and interval (what the figure draws): scipy's at 1 − 2α
        for p, delta in zip(points, d.deltas, strict=True):
            values = np.array(list(p.values.values()))
            ci = sps.ttest_rel(values, first).confidence_interval(0.9) if p.index else None
            assert delta.mean == pytest.approx(np.mean(values - first), abs=1e-15)
            if ci is not None:
                assert (delta.ci_low, delta.ci_high) == pytest.approx((ci.low, ci.high))
        assert d.latest_ci == (d.deltas[-1].ci_low, d.deltas[-1].ci_high)
        means = [np.mean(np.array(list(p.values.values())) - first) for p in points]
        assert d.slope == pytest.approx(np.polyfit(range(8), means, 1)[0])
        ols = sm.OLS(means, sm.add_constant(np.arange(8.0))).fit()   # statsmodels' one-sided p
        assert d.p_trend == pytest.approx(ols.pvalues[1] / 2 if ols.params[1] < 0
                                          else 1 - ols.pvalues[1] / 2)
        assert d.intercept == pytest.approx(ols.params[0])
        raw += [d.p_latest, d.p_trend]
    holm = multipletests(raw, method="holm")[1]
    got = [v for d in out.values() for v in (d.p_latest_holm, d.p_trend_holm)]
    assert got == pytest.approx(list(holm))


def test_drift_flags_a_slow_decline_of_delta_over_20_commits() -> None:
    rng = np.random.default_rng(11)
    runs = 200
    flagged = sum(drift_check({CELL: simulate(rng, decline=0.01)})[CELL].flagged
                  for _ in range(runs))
    assert flagged / runs >= 0.95


def test_drift_stays_silent_on_a_flat_history_at_alpha() -> None:
    """False alarms of the whole check (two tests, Holm) under no change, with commits that
    change nothing (bit for bit their parent) mixed in: at most α = 0.05 plus 2.5 Monte-Carlo
    standard errors over 400 histories."""
    rng = np.random.default_rng(5)
    runs = 400
    alarms = sum(drift_check({CELL: simulate(rng, unchanged=0.5)})[CELL].flagged
                 for _ in range(runs))
    assert alarms / runs <= 0.05 + 2.5 * np.sqrt(0.05 * 0.95 / runs)


def test_unchanged_commits_count_once_in_the_trend() -> None:
    """Twenty copies of two distinct commits are two points, not twenty: repeated bits would
    make the least-squares trend look certain."""
    a = Point(0, {0: 0.80, 1: 0.81, 2: 0.79}, None)
    b = {0: 0.805, 1: 0.806, 2: 0.784}
    points = [a] + [Point(c, b, None) for c in range(1, 20)]
    d = drift_check({CELL: points})[CELL]
    assert np.isnan(d.p_trend) and "2 distinct commits" in d.note
    assert not d.flagged


# -- a history folder, the page, the command ---------------------------------------------------

def write_history(root, means, *, subject: str = "change", verdicts: dict | None = None):
    for i, mean in enumerate(means):
        folder = root / f"{i:03d}-c{i}"
        (folder / "reports" / "test_m").mkdir(parents=True)
        rng = np.random.default_rng(i)
        X = (mean + np.linspace(-0.01, 0.01, 6) + rng.normal(0, 0.002, 6))[None, None, :]
        BenchmarkReport.from_arrays(X, tasks=["t"], models=["GCN"], seeds=range(6),
                                    metric="accuracy").to_json(
            folder / "reports" / "test_m" / "test_a.json")
        (folder / "commit.json").write_text(json.dumps(
            {"commit": f"{i:02d}" + "ab" * 19, "date": f"2026-11-{i + 1:02d}T12:00:00Z",
             "subject": f"{subject} {i}"}))
        if verdicts and i in verdicts:
            (folder / "graphnetz-verdicts.json").write_text(json.dumps({"rows": [
                {"test": "tests/test_m.py::test_a", "task": "t", "model": "GCN",
                 "verdict": verdicts[i]}]}))
    return root


def test_history_reads_commits_in_date_order_with_verdicts(tmp_path) -> None:
    root = write_history(tmp_path / "h", [0.8, 0.8, 0.79], verdicts={2: "REGRESSED"})
    (root / "000-c0").rename(root / "zzz-oldest")     # order comes from the date, not the name
    history = load_history(root)
    assert [r.subject for r in history.runs] == ["change 0", "change 1", "change 2"]
    points = history.series[CELL]
    assert [p.verdict for p in points] == [None, None, "REGRESSED"]
    assert points[0].n == 6 and points[0].mean == pytest.approx(0.8, abs=0.005)
    assert load_history(root, anchor="01").anchor == 1


def test_history_page_is_self_contained(tmp_path, capsys) -> None:
    pytest.importorskip("matplotlib")
    root = write_history(tmp_path / "h", [0.8] * 5, subject="<script>alert(1)</script>",
                         verdicts={1: "NOT WORSE", 4: "IDENTICAL"})
    assert main(["history", str(root), "-o", str(tmp_path / "page")]) == 0
    out = capsys.readouterr().out
    assert "drift against the anchor" in out and "ok" in out
    page = (tmp_path / "page" / "index.html").read_text()
    assert "http://" not in page and "https://" not in page
    for attr in re.findall(r'(?:src|href)\s*=\s*"([^"]*)"', page):
        assert attr.startswith("#"), attr
    assert "<link" not in page and "<script" not in page and "<img" not in page
    assert "&lt;script&gt;" in page                       # the subject is escaped
    assert page.count("<svg") == 1
    svgs = list((tmp_path / "page").glob("*.svg"))
    assert len(svgs) == 1 and svgs[0].read_text().startswith("<svg xmlns=")
    assert not list((tmp_path / "page").glob("*.png"))


def test_history_exit_1_on_drift(tmp_path, capsys) -> None:
    pytest.importorskip("matplotlib")
    root = write_history(tmp_path / "h", np.linspace(0.8, 0.77, 8))
    assert main(["history", str(root), "-o", str(tmp_path / "page")]) == 1
    assert "DRIFT" in capsys.readouterr().out
    assert "DRIFT" in (tmp_path / "page" / "index.html").read_text()


@pytest.mark.parametrize(("damage", "message"), [
    (lambda root: (root / "001-c1" / "commit.json").unlink(), "commit.json: missing"),
    (lambda root: (root / "001-c1" / "commit.json").write_text('{"commit": "x", '
                                                               '"date": "yesterday"}'),
     "is not ISO 8601"),
    (lambda root: (root / "001-c1" / "commit.json").write_text('{"commit": "x", '
                                                               '"date": "2026-11-02"}'),
     "has no time zone"),
    (lambda root: (root / "001-c1" / "commit.json").write_text(
        json.dumps({"commit": "00" + "ab" * 19, "date": "2026-11-05T00:00:00Z"})),
     "both say commit"),
])
def test_history_input_errors_exit_2(tmp_path, capsys, damage, message) -> None:
    root = write_history(tmp_path / "h", [0.8, 0.8, 0.8])
    damage(root)
    assert main(["history", str(root), "-o", str(tmp_path / "page")]) == 2
    err = capsys.readouterr().err
    assert message in err and "001-c1" in err


def test_history_usage_errors_exit_2(tmp_path, capsys) -> None:
    assert main(["history", str(tmp_path / "nope"), "-o", str(tmp_path / "p")]) == 2
    assert "no such directory" in capsys.readouterr().err
    root = write_history(tmp_path / "h", [0.8, 0.8])
    assert main(["history", str(root), "-o", str(tmp_path / "p"), "--anchor", "zz"]) == 2
    assert "--anchor zz" in capsys.readouterr().err
    (tmp_path / "empty").mkdir()
    with pytest.raises(HistoryError, match="no commit folders"):
        load_history(tmp_path / "empty")


def test_the_figure_draws_each_commits_paired_delta_against_the_anchor(tmp_path) -> None:
    """The figure plots what the drift check tests: per commit, the paired Δ against the
    anchor and its interval, with the trend line; no matplotlib needed (it is blocked here)."""
    import xml.etree.ElementTree as ET

    sys.modules.setdefault("matplotlib", None)   # drawn by hand: works without the extra
    history = load_history(write_history(tmp_path / "h", np.linspace(0.8, 0.77, 8),
                                         verdicts={7: "REGRESSED"}))
    svg = cell_svg(history, CELL, standalone=True)
    root = ET.fromstring(svg)                            # well-formed XML
    drift = history.drift[CELL]
    assert [d.index for d in drift.deltas] == list(range(8))
    assert drift.deltas[0].mean == 0 and drift.deltas[-1].mean == pytest.approx(-0.03, abs=3e-3)
    paths = [el.get("d") for el in root.iter("{http://www.w3.org/2000/svg}path")]
    bars = next(d for d in paths if d.count("V") == 8)   # one interval bar per commit
    tops = [float(seg.split("V")[1]) for seg in bars.split("M")[1:]]
    # the newest commit's interval lies lowest (SVG y grows downwards): below the anchor
    assert tops[-1] == max(tops)
    legend = [t.text for t in root.iter("{http://www.w3.org/2000/svg}text")]
    assert "paired Δ, 90% CI" in legend and "trend (least squares)" in legend
    assert "REGRESSED" in legend and "no verdict recorded" in legend
    assert "DRIFT" in root.find("{http://www.w3.org/2000/svg}title").text


def test_reports_are_read_as_the_report_reads_them(tmp_path) -> None:
    """The history reads each report's per-seed values without building its histories when
    the rule is the final epoch; every other form goes through the report: both give what
    `BenchmarkReport.values` gives, bit for bit (float32 series, diverged seeds, best_val,
    a restored epoch, the values-only baseline form)."""
    from pytest_graphnetz.report.epochs import History, MetricSpec

    rng = np.random.default_rng(0)

    def report(**settings):
        histories = {}
        for m in ("GCN", "GAT"):
            for s in range(4):
                test = rng.uniform(0.5, 0.9, 5).astype(np.float32).tolist()
                if (m, s) == ("GAT", 2):
                    test[-1] = float("nan")
                histories[("t", m, s)] = History(
                    test=test, val=rng.uniform(0.5, 0.9, 5).tolist(),
                    restored_epoch=2 if (m, s) == ("GCN", 1) and settings.pop("restore", 0)
                    else None)
        return BenchmarkReport(tasks=["t"], models=["GCN", "GAT"], seeds=range(4),
                               metrics={"t": MetricSpec("accuracy", True)},
                               histories=histories, settings=settings)

    cases = {"final": report(), "best_val": report(epoch_selection="best_val"),
             "restored": report(restore=1)}
    for name, rep in cases.items():
        path = rep.to_json(tmp_path / f"{name}.json")
        values_path = tmp_path / f"{name}-values.json"
        values_path.write_text(dumps(rep.to_values_dict()))
        for p in (path, values_path):
            fast = plain_cell_values(read_json(p), str(p)) is not None
            assert fast == (p == values_path or name == "final")   # which reader was used
            metrics, cells = cell_values_of(read_json(p), p)
            assert metrics == {"t": MetricSpec("accuracy", True)}
            for m in rep.models:
                expect = rep.values("t", m)
                got = np.array(list(cells[("t", m)].values()))
                assert list(cells[("t", m)]) == [0, 1, 2, 3]
                np.testing.assert_array_equal(got, expect)
    bad = json.loads((tmp_path / "final.json").read_text())
    bad["histories"]["t"]["GCN"]["1"]["test"][-1] = "0.9"
    (tmp_path / "bad.json").write_text(json.dumps(bad))
    with pytest.raises(ValueError, match=r"bad.json.*'GCN' × seed 1"):
        cell_values_of(read_json(tmp_path / "bad.json"), tmp_path / "bad.json")


def test_the_command_exits_2_on_a_folder_without_commits(pytester: pytest.Pytester) -> None:
    """The installed command's exit status and message, from a fresh interpreter."""
    (pytester.path / "history" / "c1").mkdir(parents=True)
    result = pytester.run(sys.executable, "-m", "pytest_graphnetz.cli", "history", "history",
                          "-o", "page")
    assert result.ret == 2
    assert "commit.json: missing" in result.stderr.str()
    assert not (pytester.path / "page").exists()


def test_the_page_needs_neither_matplotlib_nor_torch(tmp_path) -> None:
    """The history command draws its figures itself: a fresh interpreter that writes the page
    never imports matplotlib, torch or PyG (a CI job installs no plot extra for it)."""
    import subprocess

    root = write_history(tmp_path / "h", [0.8, 0.8, 0.79])
    code = ("import sys; from pytest_graphnetz.cli.main import main; "
            f"status = main(['history', {str(root)!r}, '-o', {str(tmp_path / 'page')!r}]); "
            "print(status, sorted(m for m in ('matplotlib', 'torch', 'torch_geometric') "
            "if m in sys.modules))")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          check=True)
    assert done.stdout.splitlines()[-1] in ("0 []", "1 []")
    assert (tmp_path / "page" / "index.html").is_file()


def test_the_slope_test_against_statsmodels_and_at_its_edges() -> None:
    import statsmodels.api as sm

    from pytest_graphnetz.stats.slope import slope_test

    x, y = np.arange(6.0), np.array([0.0, -0.1, 0.05, -0.2, -0.15, -0.3])
    fit, ols = slope_test(x, y), sm.OLS(y, sm.add_constant(x)).fit()
    assert (fit.slope, fit.intercept) == pytest.approx((ols.params[1], ols.params[0]))
    assert fit.p_falling == pytest.approx(ols.pvalues[1] / 2) and fit.n == 6
    assert slope_test(x, np.full(6, 0.3)) == type(fit)(0.0, 0.3, 1.0, 6)   # constant: no trend
    with pytest.raises(ValueError, match="at least 3 points"):
        slope_test([0, 1], [0.1, 0.2])
