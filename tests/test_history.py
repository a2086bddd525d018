"""`graphnetz history`: reading a folder per commit, the drift check (against scipy and
statsmodels, and by simulation: a slow decline is flagged, a flat history rarely), the
self-contained page and the exit codes."""

from __future__ import annotations

import json
import re
import sys

import numpy as np
import pytest
from scipy import stats as sps

from pytest_graphnetz import BenchmarkReport
from pytest_graphnetz.cli import main
from pytest_graphnetz.trend import HistoryError, Point, drift_check, load_history
from pytest_graphnetz.trendpage import plot_cell

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
        points.append(Point(c, float(values.mean()), 0.0, 0.0, seeds,
                            dict(enumerate(values.tolist())), None))
    return points


def test_drift_numbers_match_scipy_and_statsmodels() -> None:
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
        means = [np.mean(np.array(list(p.values.values())) - first) for p in points]
        assert d.slope == pytest.approx(np.polyfit(range(8), means, 1)[0])
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
    a = Point(0, 0.8, 0, 0, 3, {0: 0.80, 1: 0.81, 2: 0.79}, None)
    b = {0: 0.805, 1: 0.806, 2: 0.784}
    points = [a] + [Point(c, 0.798, 0, 0, 3, b, None) for c in range(1, 20)]
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
    assert points[0].ci_low < points[0].mean < points[0].ci_high
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
        assert attr.startswith(("data:image/png;base64,", "#")), attr
    assert "<link" not in page and "<script" not in page   # the subject is escaped
    assert "&lt;script&gt;" in page
    pngs = list((tmp_path / "page").glob("*.png"))
    assert len(pngs) == 1 and pngs[0].read_bytes().startswith(b"\x89PNG")
    assert b"matplotlib.org" not in pngs[0].read_bytes()


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


def test_figures_name_the_plot_extra_when_matplotlib_is_missing(tmp_path, monkeypatch) -> None:
    history = load_history(write_history(tmp_path / "h", [0.8, 0.8]))
    monkeypatch.setitem(sys.modules, "matplotlib", None)
    monkeypatch.setitem(sys.modules, "matplotlib.figure", None)
    with pytest.raises(ImportError, match=r"pytest-graphnetz\[plot\]"):
        plot_cell(history, CELL)


def test_the_command_exits_2_on_a_folder_without_commits(pytester: pytest.Pytester) -> None:
    """The installed command's exit status and message, from a fresh interpreter."""
    (pytester.path / "history" / "c1").mkdir(parents=True)
    result = pytester.run(sys.executable, "-m", "pytest_graphnetz.cli", "history", "history",
                          "-o", "page")
    assert result.ret == 2
    assert "commit.json: missing" in result.stderr.str()
    assert not (pytester.path / "page").exists()
