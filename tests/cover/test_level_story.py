"""One level story: every output of one run prints, per row, the confidence level its decision
used (the terminal table, the Markdown summary, the pull-request comment, the JSON verdict
file and the failing message), and `--graphnetz-single-run` is named only where it was passed
(a refresh is judged alone for its own reason, and says that one). Real pytest sessions over
from_arrays reports."""

from __future__ import annotations

import json
import re

import numpy as np
import pytest

pytest.importorskip("scipy.stats")
import pytest_graphnetz.gates  # noqa: E402,F401

# A call of three cells (Holm: REGRESSED's end of the interval at its own level) and a call of
# one cell, against baselines of 10 seeds.
GATES = """
import numpy as np

from pytest_graphnetz import BenchmarkReport, assert_not_worse

rng = np.random.default_rng(11)
BASE = 0.8 + 0.02 * rng.standard_normal((3, 1, 10))
NOISE = np.array([0.03, 0.001, 0.01])[:, None, None] * rng.standard_normal((3, 1, 10))
CAND = BASE + NOISE
CAND[2] -= 0.2


def reports(base, cand, tasks):
    return [BenchmarkReport.from_arrays(x, tasks=tasks, models=["GCN"], seeds=range(10),
                                        metric="accuracy") for x in (cand, base)]


def test_family():
    assert_not_worse(*reports(BASE, CAND, ["noisy", "tight", "drop"]))


def test_alone():
    assert_not_worse(*reports(BASE[:1], CAND[1:2], ["single"]))
"""

REFRESH = """
import numpy as np

from pytest_graphnetz import BenchmarkReport, assert_not_worse

SHIFT = {shift}


def test_refresh(graphnetz_baseline):
    rng = np.random.default_rng(1)
    X = 0.8 + 0.01 * rng.standard_normal((1, 2, 10))
    X += SHIFT * rng.standard_normal((1, 2, 10))   # 0 on the first run: the baseline
    cand = BenchmarkReport.from_arrays(X, tasks=["t"], models=["A", "B"], seeds=range(10),
                                       metric="accuracy")
    assert_not_worse(cand, graphnetz_baseline())
"""

LABEL = re.compile(r"\((\d+(?:\.\d+)?%)(?:, look \d+ of [\d→]+…)?\)")


def _label(line: str) -> str:
    found = LABEL.findall(line)
    assert len(found) == 1, line
    return found[0]


def test_one_run_prints_one_level_per_row_in_every_output(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(test_models=GATES)
    result = pytester.runpytest("--graphnetz-summary=out/summary.md",
                                "--graphnetz-comment=out/comment.md",
                                "--graphnetz-json=out/verdicts.json", "-p", "no:cacheprovider")
    out = pytester.path / "out"
    rows = json.loads((out / "verdicts.json").read_text())["rows"]
    assert {r["cell"]: r["verdict"] for r in rows}["drop/GCN"] == "REGRESSED"
    terminal = result.stdout.str()
    summary, comment = ((out / name).read_text() for name in ("summary.md", "comment.md"))
    levels = {}
    for row in rows:
        level = f"{100 * row['stats']['level']:.3g}%"
        levels[row["cell"]] = level
        table = next(x for x in terminal.splitlines()
                     if x.startswith(row["test"]) and f" {row['cell']} " in x)
        assert _label(table) == level, (table, level)
        for text in (summary, comment):
            line = next(x for x in text.splitlines() if f"| {row['cell']} |" in x)
            assert _label(line) == level, (line, level)
        assert "single-run" not in row.get("note", "")
    # the family's intervals hold Holm's end at the step that tested each row last: drop/GCN
    # rejected at the first step α/3, noisy/GCN at the last step α/2 after that rejection; the
    # lone cell the look's two ends: each the level its decision used
    assert levels["single/GCN"] == "91.5%"
    assert levels["drop/GCN"] == "94.3%" and levels["noisy/GCN"] == "93.6%"
    # the failing message prints the same interval level
    assert re.search(r"paired Δ -0\.\d+ \(94\.3%, look 1 of 10→… CI", terminal)
    assert "single-run" not in terminal


@pytest.mark.parametrize("flag", [False, True])
def test_a_refresh_names_single_run_only_when_it_was_passed(pytester: pytest.Pytester,
                                                            flag: bool) -> None:
    pytester.makepyfile(test_models=REFRESH.format(shift=0.0))
    pytester.runpytest("--graphnetz-update-baselines", "-p", "no:cacheprovider"
                       ).assert_outcomes(passed=1)
    pytester.makepyfile(test_models=REFRESH.format(shift=0.001))
    args = ["--graphnetz-update-baselines", "--graphnetz-json=out/r.json", "-p",
            "no:cacheprovider", *(["--graphnetz-single-run"] if flag else [])]
    result = pytester.runpytest(*args)
    result.assert_outcomes(passed=1)
    rows = json.loads((pytester.path / "out" / "r.json").read_text())["rows"]
    assert rows and all("judged alone at α: a baseline refresh" in r["note"] for r in rows)
    for r in rows:   # two cells in one call: Holm's end at α/2, NOT WORSE's at α
        assert r["stats"]["level"] == pytest.approx(1 - 0.05 - 0.025)
    text = result.stdout.str()
    assert "92.5%" in text
    # the header says so when the option is passed; no row or message ever claims it
    assert ("single run: judged alone" in text) is flag
    assert "single-run" not in text
    # a gate run with the option names it on its rows
    if flag:
        pytester.makepyfile(test_models=REFRESH.format(shift=0.002))
        gate = pytester.runpytest("--graphnetz-single-run", "-p", "no:cacheprovider",
                                  "--graphnetz-json=out/g.json")
        gate.assert_outcomes(passed=1)
        rows = json.loads((pytester.path / "out" / "g.json").read_text())["rows"]
        assert all("--graphnetz-single-run" in r["note"] for r in rows)


def _gate_arrays() -> tuple[np.ndarray, np.ndarray]:
    """GATES' baseline and candidate, rebuilt here from the same draws."""
    namespace: dict = {}
    exec(GATES.split("\n\ndef reports")[0], namespace)
    return namespace["BASE"], namespace["CAND"]


def test_history_and_bisect_print_the_level_they_decide_at(tmp_path, capsys) -> None:
    """`graphnetz history` flags on Holm p at α and labels its interval with the unadjusted
    level it is computed at; `graphnetz bisect` judges each probe alone at its Bonferroni share
    and labels each interval with that share's level. Neither names --graphnetz-single-run."""
    from scipy import stats as sps

    from pytest_graphnetz import BenchmarkReport
    from pytest_graphnetz.base.text import fmt_interval, fmt_level
    from pytest_graphnetz.cli.bisection.search import bisect_commits
    from pytest_graphnetz.cli.main import main

    base, cand = _gate_arrays()
    tasks = ["noisy", "tight", "drop"]
    root = tmp_path / "history"
    for i, X in enumerate((base, cand)):
        folder = root / f"{i:03d}"
        (folder / "reports" / "test_models").mkdir(parents=True)
        BenchmarkReport.from_arrays(X, tasks=tasks, models=["GCN"], seeds=range(10),
                                    metric="accuracy").to_json(
            folder / "reports" / "test_models" / "test_family.json")
        (folder / "commit.json").write_text(json.dumps(
            {"commit": f"{i:02d}" + "ab" * 19, "date": f"2026-11-{i + 1:02d}T12:00:00Z"}))
    assert main(["history", str(root), "-o", str(tmp_path / "page"), "--alpha", "0.05"]) == 1
    out = capsys.readouterr().out
    assert "each CI is the unadjusted 90% one" in out and "90% CI" in out
    for k, task in enumerate(tasks):
        d = cand[k, 0] - base[k, 0]
        ci = sps.ttest_1samp(d, 0.0).confidence_interval(0.90)
        line = next(x for x in out.splitlines() if f"::{task}/GCN " in x)
        assert fmt_interval(ci.low, ci.high) in line, (line, ci)
    assert "single-run" not in out

    def probe(commit: str, n: int) -> dict[str, BenchmarkReport]:
        X = (base if commit == "good" else cand)[2:, :, :n]   # the dropped cell alone
        return {"test_models/test_family": BenchmarkReport.from_arrays(
            X, tasks=["drop"], models=["GCN"], seeds=range(n), metric="accuracy")}

    result = bisect_commits(["good", "bad"], probe, seeds=10, max_seeds=10)
    text = "\n".join(result.lines())
    (alpha_of_the_look,) = result.look_alphas   # one look: 10 seeds
    level = 1 - 2 * alpha_of_the_look
    d = cand[2, 0] - base[2, 0]
    ci = sps.ttest_1samp(d, 0.0).confidence_interval(level)
    assert (f"({fmt_level(level)} CI {fmt_interval(ci.low, ci.high)})" in text), text
    assert "single-run" not in text
