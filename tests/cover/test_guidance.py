"""Every NOT WORSE and INCONCLUSIVE row says what it rules out and what comes next, in every
output: the terminal table, the Markdown summary, the pull-request comment, the JSON verdict file
and the JUnit properties. Real pytest sessions (pytester) over from_arrays reports;
the Guidance value itself on hand-made verdicts.
"""

from __future__ import annotations

import json
import math
import re
import xml.etree.ElementTree as ET
from dataclasses import replace

import numpy as np
import pytest

pytest.importorskip("scipy.stats")
pytest.importorskip("scipy.optimize")
import pytest_graphnetz.gates  # noqa: E402,F401
from pytest_graphnetz import BenchmarkReport, assert_not_worse  # noqa: E402

# Three cells against a 200-seed baseline, gated on 10 seeds: `noisy` cannot tell (paired sd
# 0.03: INCONCLUSIVE), `tight` is NOT WORSE, `drop` lost 20 points (REGRESSED); and an MAE cell
# (lower is better) that is INCONCLUSIVE at the δ the test sets.
GATES = """
import numpy as np

from pytest_graphnetz import BenchmarkReport, assert_not_worse

rng = np.random.default_rng(7)
BASE = 0.8 + 0.02 * rng.standard_normal((3, 1, 200))
Z = rng.standard_normal(10)
Z = (Z - Z.mean()) / Z.std(ddof=1)   # paired differences of mean exactly 0, sd 1
NOISE = np.array([0.03, 0.0005, 0.01])[:, None, None] * Z
CAND = BASE[:, :, :10] + NOISE
CAND[2] -= 0.2
TASKS = ["noisy", "tight", "drop"]


def test_accuracy():
    base = BenchmarkReport.from_arrays(BASE, tasks=TASKS, models=["GCN"], seeds=range(200),
                                       metric="accuracy")
    cand = BenchmarkReport.from_arrays(CAND, tasks=TASKS, models=["GCN"], seeds=range(10),
                                       metric="accuracy")
    assert_not_worse(cand, base)


def test_mae():
    base = BenchmarkReport.from_arrays(1 + BASE[:1], tasks=["zinc"], models=["GIN"],
                                       seeds=range(200), metric="mae")
    cand = BenchmarkReport.from_arrays(1 + BASE[:1, :, :10] + NOISE[:1], tasks=["zinc"],
                                       models=["GIN"], seeds=range(10), metric="mae")
    assert_not_worse(cand, base, min_effect=0.01)
"""

SPEAKING = ("NOT WORSE", "INCONCLUSIVE")


@pytest.fixture
def outputs(pytester: pytest.Pytester) -> dict[str, object]:
    pytester.makepyfile(test_models=GATES)
    result = pytester.runpytest("--graphnetz-summary=out/summary.md",
                                "--graphnetz-comment=out/comment.md",
                                "--graphnetz-json=out/verdicts.json", "--junitxml=out/junit.xml",
                                "-p", "no:cacheprovider")
    out = pytester.path / "out"
    return {"result": result, "json": json.loads((out / "verdicts.json").read_text()),
            "summary": (out / "summary.md").read_text(),
            "comment": (out / "comment.md").read_text(),
            "junit": ET.parse(out / "junit.xml")}


def _up(x: float) -> float:
    """``x`` rounded up to 2 significant digits (written out here, not imported)."""
    scale = 10 ** (math.floor(math.log10(x)) - 1)
    return math.ceil(x / scale - 1e-9) * scale


def _points(x: float) -> str:
    """The table's spelling of a bound in points (a metric in [0, 1])."""
    return f"{_up(100 * x):.3g}"


def _expected_words(row: dict) -> list[str]:
    """What the Note must say, from the row's own numbers: the bound, δ, and the next look."""
    s = row["stats"]
    bound = -s["ci_low"]
    if row["task"] == "zinc":   # MAE: lower is better, not in [0, 1]: plain numbers
        words = [f"rules out rises > {_up(bound):.4g}", "δ 0.01"]
    else:
        words = [f"rules out drops > {_points(bound)} points", "δ 1 point"]
    if row["verdict"] == "INCONCLUSIVE":
        n = s["next_seeds"]
        words.append(f"next: {n} seeds (--graphnetz-seeds={n})")
        shown = int(float(f"{s['expected_seeds']:.2g}"))   # 2 significant digits
        words.append(f"expected to decide by ~{shown}")
    return words


def test_every_speaking_row_states_delta_the_bound_and_the_next_look_in_json_and_junit(
        outputs: dict) -> None:
    data = outputs["json"]
    rows = {r["cell"]: r for r in data["rows"]}
    assert {c: r["verdict"] for c, r in rows.items()} == {
        "noisy/GCN": "INCONCLUSIVE", "tight/GCN": "NOT WORSE", "drop/GCN": "REGRESSED",
        "zinc/GIN": "INCONCLUSIVE"}
    for cell, row in rows.items():
        s = row["stats"]
        if row["verdict"] not in SPEAKING:   # only what it was judged against
            assert s["rules_out_drop"] is None and s["next_seeds"] is None
            assert row["note"] == "δ 1 point", row
            continue
        assert row["note"], cell
        for words in _expected_words(row):
            assert words in row["note"], (cell, words, row["note"])
        # numbers, not words: the bound is the interval's lower end, δ and margin as judged
        assert s["rules_out_drop"] == pytest.approx(-s["ci_low"])
        assert s["min_effect"] == 0.01 and s["margin"] == 0.0
        if row["verdict"] == "INCONCLUSIVE":
            # the next look of the schedule 10→20→…, and the expected need past it
            assert s["next_seeds"] == 20 and s["n"] == 10
            assert isinstance(s["expected_seeds"], int) and s["expected_seeds"] >= 20
            assert s["next_option"] == f"--graphnetz-seeds={s['next_seeds']}"
            assert s["next_command"] == f"pytest {row['test']} --graphnetz-seeds={s['next_seeds']}"
            assert s["baseline_short"] is False
        else:
            assert s["next_seeds"] is None and s["next_command"] is None
    # JUnit: each gate row is a property of its test case holding the same numbers
    props = [json.loads(p.get("value")) for p in outputs["junit"].iter("property")
             if p.get("name") == "graphnetz_gate"]
    assert {p["cell"]: p["stats"]["next_seeds"] for p in props} == {
        c: r["stats"]["next_seeds"] for c, r in rows.items()}
    assert {p["cell"]: p.get("note", "") for p in props} == {c: r["note"] for c, r in rows.items()}
    assert {p["cell"]: p["stats"]["rules_out_drop"] for p in props} == {
        c: r["stats"]["rules_out_drop"] for c, r in rows.items()}


def test_the_note_names_the_look_graphnetz_next_seeds_runs_for_the_same_row(
        outputs: dict) -> None:
    from pytest_graphnetz.cli.nextlook import next_look

    data = outputs["json"]
    open_rows = [r for r in data["rows"] if r["verdict"] == "INCONCLUSIVE"]
    assert len(open_rows) == 2
    for row in open_rows:
        alone = {**data, "rows": [row]}
        look = next_look(alone, budget=1280)
        said = re.search(r"next: (\d+) seeds \(--graphnetz-seeds=(\d+)\)", row["note"])
        assert said, row["note"]
        assert look.seeds == int(said[1]) == int(said[2]) == 20, (look, row["note"])
        expected = int(re.search(r"expected to decide by ~(\d+)", row["note"])[1])
        assert expected >= look.seeds
        assert f"expected to decide by ~{row['stats']['expected_seeds']} seeds" in look.why
    # the same spread (sd 3 points, δ 1 point), but noisy/GCN's REGRESSED is tested at Holm's
    # α/3: it is expected to need more seeds than zinc/GIN, alone in its call
    need = {r["cell"]: r["stats"]["expected_seeds"] for r in open_rows}
    assert need["noisy/GCN"] > need["zinc/GIN"]


def test_a_baseline_short_of_the_next_look_is_refreshed_at_the_look_the_cell_expects(
        ) -> None:
    v = _verdict()
    g = v.guidance
    assert g.baseline_short and g.next_seeds == 20 and g.expected_seeds > 40
    want = 20
    while want < g.expected_seeds:
        want *= 2
    assert g.refresh_seeds() == want
    assert f"next: refresh the baseline with {want} seeds, then 20 seeds" in g.note()
    assert f"Refresh the baseline with {want} seeds first" in v.message()


def test_the_table_the_summary_and_the_comment_carry_the_same_note(outputs: dict) -> None:
    rows = [r for r in outputs["json"]["rows"] if r["verdict"] in SPEAKING]
    assert len(rows) == 3
    terminal = outputs["result"].stdout.str()
    for row in rows:
        note = row["note"]
        # Markdown escapes nothing in these notes but the `>` is kept: the same words
        for where in ("summary", "comment"):
            line = next(x for x in outputs[where].splitlines() if row["cell"] in x and "|" in x)
            assert note in line, (where, line)
        line = next(x for x in terminal.splitlines() if row["cell"] in x and row["verdict"] in x)
        assert line.rstrip().endswith(note), line
        assert re.search(r"δ (1 point|0\.01)", line)


def _verdict(**changes: object):
    rng = np.random.default_rng(3)
    base = 0.8 + 0.02 * rng.standard_normal((1, 1, 10))
    cand = base + 0.03 * rng.standard_normal((1, 1, 10))
    b = BenchmarkReport.from_arrays(base, tasks=["t"], models=["m"], seeds=range(10),
                                    metric="accuracy")
    c = BenchmarkReport.from_arrays(cand, tasks=["t"], models=["m"], seeds=range(10),
                                    metric="accuracy")
    v = assert_not_worse(c, b)[0]
    assert v.verdict == "INCONCLUSIVE"
    c = v.comparison   # a field of the comparison's plan or decision, changed
    for name, value in changes.items():
        part, key = {"seeds_needed": ("plan", "needed"), "ci": ("decision", "ci")}[name]
        c = replace(c, **{part: replace(getattr(c, part), **{key: value})})
    return replace(v, comparison=c)


def test_no_affordable_seed_count_says_so_and_what_the_seeds_resolve() -> None:
    v = _verdict(seeds_needed=None)
    g = v.guidance
    assert g.next_seeds is None and g.next_option is None and g.command("t.py::x") is None
    c = v.comparison
    assert g.resolvable == pytest.approx(c.settings.margin + c.decision.mde)
    # one resolution figure on the row: the MDE column's, named, not rounded a second way
    assert "no affordable seed count resolves δ; these 10 seeds resolve δ ≥ the MDE" in g.note()
    assert v.row()["mde"] == f"{c.decision.mde:.4g}" and "point" not in g.note().split("δ ≥")[-1]
    assert g.numbers()["resolvable_min_effect"] == pytest.approx(c.decision.mde)


def test_a_lower_end_above_zero_rules_out_any_drop_and_the_baseline_short_of_seeds() -> None:
    v = _verdict(ci=replace(_verdict().comparison.decision.ci, low=0.002))
    assert v.guidance.note().startswith("rules out any drop; δ 1 point; next: refresh the "
                                            "baseline with ")
    assert v.guidance.rules_out == 0.0


def test_a_bound_is_rounded_up_so_that_it_still_holds() -> None:
    # -0.03101 rounds to 3.1 points but "> 3.1" would claim drops of 3.1-3.101 are ruled out
    v = _verdict(ci=replace(_verdict().comparison.decision.ci, low=-0.03101))
    assert "rules out drops > 3.2 points" in v.guidance.note()


def test_min_effect_resolvable_is_an_option_and_an_ini_key_and_a_bad_value_names_both(
        pytester: pytest.Pytester) -> None:
    pytester.makepyfile("def test_nothing():\n    pass\n")
    pytester.makeini("[pytest]\ngraphnetz_min_effect = resolvable\n")
    result = pytester.runpytest("-p", "no:cacheprovider")
    assert result.ret == 0
    result.stdout.fnmatch_lines(["graphnetz: seeds 0-9 (10), α 0.05*, δ what the seeds resolve "
                                 "(calibration), *"])
    bad = pytester.runpytest("-p", "no:cacheprovider", "--graphnetz-min-effect=resolved")
    assert bad.ret == pytest.ExitCode.USAGE_ERROR
    assert ("`--graphnetz-min-effect` must be a number or `resolvable`, got 'resolved'"
            in bad.stderr.str())


def test_the_notes_next_step_is_what_next_seeds_prints_for_the_same_row(
        outputs: dict, tmp_path, capsys: pytest.CaptureFixture) -> None:
    """The Note a reviewer reads and the look the CI loop takes are one number: per open row,
    `graphnetz next-seeds` on a verdict file holding that row alone prints the Note's count."""
    from pytest_graphnetz.cli.main import main

    data = outputs["json"]
    open_rows = [r for r in data["rows"] if r["verdict"] == "INCONCLUSIVE"]
    assert len(open_rows) == 2
    for row in open_rows:
        said = re.search(r"next: (\d+) seeds \(--graphnetz-seeds=(\d+)\)", row["note"])
        assert said and said.group(1) == said.group(2), row["note"]
        path = tmp_path / f"{row['task']}.json"
        path.write_text(json.dumps({**data, "rows": [row]}))
        capsys.readouterr()
        assert main(["next-seeds", str(path), "--budget", "100000"]) == 0
        assert capsys.readouterr().out == f"{said.group(1)}\n", row["note"]


SHORT = """
import numpy as np
import pytest

from pytest_graphnetz import BenchmarkReport, assert_not_worse


@pytest.mark.parametrize("sd", [0.03, 0.05])
def test_short(sd):
    rng = np.random.default_rng(7)
    base = 0.8 + 0.02 * rng.standard_normal((1, 1, 10))
    z = rng.standard_normal(10)
    cand = base + sd * (z - z.mean()) / z.std(ddof=1)   # mean Δ exactly 0: INCONCLUSIVE
    make = lambda x: BenchmarkReport.from_arrays(x, tasks=["t"], models=["m"],
                                                 seeds=range(10), metric="accuracy")
    assert_not_worse(make(cand), make(base))
"""


@pytest.mark.parametrize("budget", [80, 1280])
def test_a_short_baselines_refresh_size_is_one_number_in_the_note_and_next_seeds(
        pytester: pytest.Pytester, tmp_path, capsys: pytest.CaptureFixture, budget: int) -> None:
    """A baseline too short for the next look: the Note's refresh size is the one `graphnetz
    next-seeds` names for the same row, at any budget (it says when the budget is below it)."""
    from pytest_graphnetz.cli.main import main

    pytester.makepyfile(test_short=SHORT)
    pytester.runpytest("--graphnetz-json=verdicts.json", "-p", "no:cacheprovider")
    data = json.loads((pytester.path / "verdicts.json").read_text())
    short = [r for r in data["rows"] if r["stats"].get("baseline_short")]
    assert len(short) >= 2, [r["note"] for r in data["rows"]]
    for row in short:
        said = re.search(r"refresh the baseline with (\d+) seeds, then", row["note"])
        assert said, row["note"]
        assert int(said[1]) == row["stats"]["refresh_seeds"] >= row["stats"]["expected_seeds"]
        path = tmp_path / "one.json"
        path.write_text(json.dumps({**data, "rows": [row]}))
        capsys.readouterr()
        assert main(["next-seeds", str(path), "--budget", str(budget), "--current", "10"]) == 1
        err = capsys.readouterr().err
        assert f"refresh it with --graphnetz-seeds={said[1]} first" in err, (row["note"], err)
        assert ("past the budget" in err) is (int(said[1]) > budget)
