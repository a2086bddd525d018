"""What reaches the pull request: the session summary as a value (:class:`GateSummary`), the
concise comment, the JSON verdict file and JUnit numbers, escaping, and the rows of graphnetz
tests that failed outside their gates.

Unit tests build :class:`GateSummary` from rows; the plugin's part runs real pytest sessions.
Injection is checked by rendering through a CommonMark + tables renderer (markdown-it-py).
Nothing here trains: the gates run on ``BenchmarkReport.from_arrays`` numbers.
"""

from __future__ import annotations

import json
import re
import sys
import xml.etree.ElementTree as ET

import numpy as np
import pytest

sps = pytest.importorskip("scipy.stats")
pytest.importorskip("scipy.optimize")
import pytest_graphnetz.gates  # noqa: E402,F401
from pytest_graphnetz import BenchmarkReport  # noqa: E402
from pytest_graphnetz.base.text import code_block, markdown_escape  # noqa: E402
from pytest_graphnetz.plugin.summary import GateSummary  # noqa: E402
from pytest_graphnetz.stats.boundaries import LookSchedule  # noqa: E402
from tests.helpers.reports import bind  # noqa: E402
from tests.helpers.summaries import BASE, COMMON, DROPS, OUTCOMES, declare_six_seeds  # noqa: E402


def row(test: str, cell: str, verdict: str, *, failed: bool = False, **more: str) -> dict:
    return {"test": test, "cell": cell, "verdict": verdict, "failed": "yes" if failed else "",
            "delta": "-0.0095 [-0.01146, -0.007544] (90%)", "n": "10", **more}


def table_rows(markdown: str) -> list[str]:
    return [line for line in markdown.splitlines()
            if line.startswith("| ") and not line.startswith("| Test |")]


# -- the comment ---------------------------------------------------------------------------------

def test_comment_lists_what_changed_and_folds_identical_rows() -> None:
    test = "tests/test_models.py::test_cora"
    rows = [row(test, f"task{i}/GCN", "IDENTICAL") for i in range(5)]
    rows += [row(test, "cora/GCN", "NOT WORSE"), row(test, "cora/GAT", "REGRESSED", failed=True)]
    rows += [row(test, f"task{i}/GAT", "IDENTICAL") for i in range(5)]
    rows += [row(test, "cora/SAGE", "INCONCLUSIVE", note="no seeds planned")]
    summary = GateSummary(rows=rows, failures={test: "AssertionError: cora/GAT regressed"},
                          exitstatus=1)
    comment = summary.comment()
    listed = table_rows(comment)
    assert len(listed) == 3                                   # 13 rows, 10 IDENTICAL folded
    assert "✗ REGRESSED" in listed[0] and "cora/GAT" in listed[0]   # failing first
    assert "10 IDENTICAL row(s)" in comment
    assert "1 of 13 gate row(s) failed the build" in comment
    assert "1 failed, 0 refused, 12 passed" in comment
    header = comment.split("\n| Test |")[1].split("\n")[0]
    assert [h.strip() for h in header.strip(" |").split(" | ")] == [
        "Cell", "Paired Δ (+ = better) [CI]", "Verdict", "n", "Note"]
    assert "AssertionError: cora/GAT regressed" in comment       # why it failed, folded


def width_row(test: str, cell: str, *, failed: bool = False) -> dict:
    return {"test": test, "cell": cell, "verdict": "TOO WIDE" if failed else "OK",
            "failed": "yes" if failed else "", "delta": "width 0.03 (max 0.08)", "n": "10",
            "stats": {"kind": "ci_width", "n": 10, "width": 0.03, "max_width": 0.08}}


def test_a_green_comment_lists_only_what_a_reviewer_must_read() -> None:
    """Passing width rows and IDENTICAL rows are one count line; a green comment points to the
    full table, not to failing tests' messages it does not have."""
    test = "tests/test_models.py::test_cora"
    rows = [row(test, "cora/GCN", "NOT WORSE"), row(test, "cora/GAT", "IDENTICAL"),
            width_row(test, "cora/GCN"), width_row(test, "cora/GAT")]
    comment = GateSummary(rows=rows, exitstatus=0).comment()
    listed = table_rows(comment)
    assert len(listed) == 1 and "NOT WORSE" in listed[0]
    assert ("Not listed: 1 IDENTICAL row(s) (every paired seed scored exactly the baseline's "
            "value) and 2 width row(s) within their max width.") in comment
    assert "failing test" not in comment and "message" not in comment
    assert "The full table is in the job's step summary" in comment
    # a failing width row is listed, and a red comment points to the messages
    rows[3] = width_row(test, "cora/GAT", failed=True)
    red = GateSummary(rows=rows, failures={test: "AssertionError: too wide"}, exitstatus=1)
    comment = red.comment()
    assert len(table_rows(comment)) == 2 and "✗ TOO WIDE" in table_rows(comment)[0]
    assert "1 width row(s) within their max width" in comment
    assert "every failing test's message are in the job's step summary" in comment
    # the full Markdown summary still has every row
    assert len(table_rows(red.markdown())) == 4


@pytest.mark.parametrize(("trained", "cached", "says"), [
    (0, 20, "this run trained none: all 20 triple(s) read from the cache."),
    (5, 15, "this run trained 5 triple(s), read 15 from the cache."),
    (20, 0, "this run trained 20 triple(s)."),
])
def test_the_seeds_line_says_what_this_run_trained(trained, cached, says) -> None:
    test = "tests/test_models.py::test_cora"
    rows = [{**row(test, f"cora/M{i}", "NOT WORSE"), "stats": {"kind": "not_worse", "n": 10}}
            for i in range(2)]
    line = GateSummary(rows=rows, trained=trained, cached=cached).looks_line()
    assert line == f"Seeds: 2 cell(s) stopped at 10 seeds; {says}"
    assert "seed-trainings" not in line
    # outside a session (no triple counts): what the cells cost over their looks
    assert GateSummary(rows=rows).looks_line() == (
        "Seeds: 2 cell(s) stopped at 10 seeds; 20 seed-trainings of the candidate in all "
        "(each seed trains once: the cache keeps earlier looks).")


def test_a_600_cell_failing_call_stays_short_and_points_to_the_rest() -> None:
    test = "tests/test_models.py::test_big"
    rows = [row(test, f"task{i:03d}/GCN", "NOT WORSE" if i % 3 else "REGRESSED",
                failed=not i % 3, note="x" * 60) for i in range(600)]
    message = "\n\n".join(f"task{i:03d}/GCN — accuracy: REGRESSED\n" + "detail " * 40
                          for i in range(200))
    summary = GateSummary(rows=rows, failures={test: message}, exitstatus=1)
    assert len(summary.markdown()) > 65_536         # the full page: too long for a comment
    comment = summary.comment()
    assert len(comment) < 10_000
    listed = table_rows(comment)
    assert 10 < len(listed) < 600
    assert all("✗ REGRESSED" in line for line in listed)   # the 200 failing rows come first
    folded = re.search(r"and (\d+) more row\(s\) \((\d+) failing the build\) not shown", comment)
    assert folded and int(folded.group(1)) == 600 - len(listed)
    assert int(folded.group(2)) == 200 - len(listed)
    assert "step summary" in comment and "graphnetz-verdicts" in comment


# -- escaping: rendered through CommonMark + tables ------------------------------------------------

EVIL = ["cora\r# FAKE: all gates passed", "</details><img src=x onerror=alert(1)>",
        "@octocat", "[click](https://evil.example)", "a```b", "x\r\n\r\n<h2>FAKE</h2>",
        "https://evil.example/x", "pipe | and \\| and `code`", "\u202eRTL"]
ALLOWED_HTML = re.compile(r"</?(details|summary|code|sub)>")


def rendered(markdown: str) -> tuple[list, str]:
    from markdown_it import MarkdownIt

    md = MarkdownIt("commonmark").enable("table")
    tokens = md.parse(markdown)
    return tokens, md.render(markdown)


def assert_inert(markdown: str, table_rows_expected: int | None = None) -> None:
    tokens, html = rendered(markdown)
    flat = [t for tok in tokens for t in [tok, *(tok.children or [])]]
    assert not [t for t in flat if t.type in ("link_open", "image")], html
    headings = [t for t in flat if t.type == "heading_open"]
    assert all(t.tag == "h3" for t in headings), html         # only our own title
    for t in flat:
        if t.type in ("html_block", "html_inline"):
            assert "<" not in ALLOWED_HTML.sub("", t.content), t.content
    assert "<img" not in html and "<h2>" not in html and "<h1>" not in html
    # GitHub links mentions and bare URLs in text, never inside code blocks
    text = re.sub(r"<pre>.*?</pre>", "", html, flags=re.S)
    assert "@octocat" not in text and "https://evil" not in text
    if table_rows_expected is not None:
        body = [t for t in flat if t.type == "tr_open"]
        assert len(body) == table_rows_expected + 1, html      # + the header row


def test_names_messages_and_reasons_cannot_inject() -> None:
    rows = [row(name, f"{name}/{name}", "REGRESSED", failed=True, note=name) for name in EVIL]
    failures = {name: f"AssertionError: {name}\n{name}\n```\n# heading" for name in EVIL}
    summary = GateSummary(rows=rows, failures=failures, exitstatus=1)
    assert_inert(summary.markdown(), len(EVIL))
    assert_inert(summary.comment(), len(EVIL))
    # what is shown is still the name, made visible
    assert "cora\\r" in rendered(summary.markdown())[1]


def test_code_blocks_and_escapes_hold() -> None:
    block = code_block("```\n````\n# not a heading")
    tokens, _ = rendered(block + "\n\n# after")
    fences = [t for t in tokens if t.type == "fence"]
    assert len(fences) == 1 and fences[0].content == "```\n````\n# not a heading\n"
    assert [t.tag for t in tokens if t.type == "heading_open"] == ["h1"]   # only "after"
    assert_inert(markdown_escape("x\r# y <b>z</b> @octocat [a](b)"))


def test_compare_markdown_is_fenced_and_escaped(tmp_path, capsys) -> None:
    from pytest_graphnetz import BenchmarkReport
    from pytest_graphnetz.cli.main import main

    model = "a````b <img src=x> @octocat"
    for file, shift in (("base.json", 0.0), ("cand.json", -0.05)):
        BenchmarkReport.from_arrays(np.array([[BASE + shift]]), tasks=["karate"],
                                    models=[model], seeds=range(6), metric="accuracy"
                                    ).to_json(tmp_path / file)
    bind(tmp_path / "base.json", LookSchedule(6))   # a baseline of a project at 6 seeds
    code = main(["compare", str(tmp_path / "base.json"), str(tmp_path / "cand.json"),
                 "--markdown", "--first-look", "6"])
    assert code == 1
    markdown = capsys.readouterr().out
    tokens, _ = rendered(markdown)
    (fence,) = [t for t in tokens if t.type == "fence"]    # the model name did not close it
    assert f"karate/{model} — accuracy (higher is better): REGRESSED" in fence.content
    assert_inert(markdown, 1)


def test_names_with_control_characters_are_refused_where_they_are_made() -> None:
    from pytest_graphnetz import BenchmarkReport, Task

    with pytest.raises(ValueError, match=r"task name 'a\\rb'.*control character"):
        Task("a\rb", lambda root: None)
    with pytest.raises(ValueError, match=r"model name 'GAT\\n'.*control character"):
        BenchmarkReport.from_arrays(np.zeros((1, 1, 2)), tasks=["t"], models=["GAT\n"],
                                    seeds=range(2), metric="accuracy")
    with pytest.raises(ValueError, match=r"task name .*control character"):
        BenchmarkReport.from_arrays(np.zeros((1, 1, 2)), tasks=["t\x1b[31m"], models=["m"],
                                    seeds=range(2), metric="accuracy")


def test_run_benchmark_refuses_a_model_name_with_a_control_character() -> None:
    from pytest_graphnetz import run_benchmark

    with pytest.raises(ValueError, match=r"model name 'G\\rCN'.*control character"):
        run_benchmark("social", {"G\rCN": lambda i, o: None}, seeds=range(2))


# -- the plugin: rows derived from test outcomes ---------------------------------------------------

def test_a_failure_outside_graphnetz_is_not_called_a_pass(pytester: pytest.Pytester) -> None:
    declare_six_seeds(pytester)
    pytester.makepyfile(test_out=OUTCOMES)
    result = pytester.runpytest("-p", "no:cacheprovider", "-k", "fine or unrelated")
    result.assert_outcomes(passed=1, failed=1)
    result.stdout.fnmatch_lines(["1 gate row(s), none failed the build (0 failed, 0 refused, "
                                 "1 passed); but pytest failed outside the gates (exit status "
                                 "1)*"])


def test_json_and_junit_carry_the_numbers(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(test_num=COMMON + """

def test_regressed():
    assert_not_worse(report(BASE + DROPS), report(BASE))
""")
    # the project declares its schedule's first look at its 6 seeds
    result = pytester.runpytest("-p", "no:cacheprovider", "--graphnetz-json=v.json",
                                "--junitxml=junit.xml", "-o", "graphnetz_seeds=6")
    result.assert_outcomes(failed=1)
    d = DROPS                                                     # candidate − baseline
    ref = sps.ttest_1samp(d, 0.0, alternative="less")             # H1: mean d < −margin (0)
    # look 1 of the schedule spends rho * alpha = 0.85 * 0.05 (docs/guarantees.md): the row's
    # interval is the two-sided 1 - 2 * 0.0425 one and its alpha the level spent
    ci = sps.ttest_1samp(d, 0.0).confidence_interval(1 - 2 * 0.0425)
    (data,) = json.loads((pytester.path / "v.json").read_text())["rows"]
    stats = data["stats"]
    assert data["verdict"] == "REGRESSED" and data["failed_build"] is True
    assert (data["task"], data["model"]) == ("karate", "GCN")
    assert stats["mean_diff"] == pytest.approx(d.mean())
    assert stats["ci_low"] == pytest.approx(ci.low) and stats["ci_high"] == pytest.approx(ci.high)
    assert stats["p"] == pytest.approx(ref.pvalue)
    assert stats["n"] == 6 and stats["level"] == pytest.approx(0.915)
    assert stats["margin"] == 0 and stats["min_effect"] == pytest.approx(0.01)
    assert stats["alpha"] == pytest.approx(0.0425) and stats["test"] == "paired-t"
    (case,) = ET.parse(pytester.path / "junit.xml").iter("testcase")
    (prop,) = [json.loads(p.get("value")) for p in case.iter("property")
               if p.get("name") == "graphnetz_gate"]
    assert prop["stats"] == stats


# -- baseline cells no gate used -------------------------------------------------------------------

UNUSED = COMMON + """
pytestmark = pytest.mark.graphnetz


def test_models(graphnetz_baseline):
    models = os.environ["GNZ_MODELS"].split(",")
    assert_not_worse(report(BASE, models=models), graphnetz_baseline())


def test_other():
    pass
"""


def test_prune_lists_then_removes_the_unused_cells(pytester: pytest.Pytester,
                                                   monkeypatch: pytest.MonkeyPatch) -> None:
    """`graphnetz prune` runs the gates, lists the cells no gate used and, with --yes only,
    removes them; a partial run removes nothing (it cannot tell)."""
    from pytest_graphnetz.gates.refreshing.baselines import read_baseline

    declare_six_seeds(pytester)
    pytester.makepyfile(test_unused=UNUSED)
    monkeypatch.setenv("GNZ_MODELS", "GCN,GAT")
    pytester.runpytest("-p", "no:cacheprovider", "--graphnetz-update-baselines"
                       ).assert_outcomes(passed=2)
    path = pytester.path / "baselines" / "test_unused" / "test_models.json"
    before = path.read_text()
    monkeypatch.setenv("GNZ_MODELS", "GCN")                 # GAT removed from the model dict

    def prune(*args: str):
        return pytester.run(sys.executable, "-m", "pytest_graphnetz.cli", "prune", *args,
                            "-p", "no:cacheprovider")

    partial = prune("-k", "models")
    assert partial.ret == 2 and "cannot tell which cells are unused" in partial.stdout.str()
    listed = prune()
    assert listed.ret == 0, listed.stdout.str()
    listed.stdout.fnmatch_lines([
        "graphnetz prune: baselines/test_unused/test_models.json: would remove karate/GAT",
        "graphnetz prune: nothing written; rerun with --yes to remove them*"])
    assert path.read_text() == before                       # a listing writes nothing
    removed = prune("--yes")
    assert removed.ret == 0
    removed.stdout.fnmatch_lines(["*test_models.json: removed karate/GAT"])
    stored = read_baseline(path)
    assert list(stored.report.models) == ["GCN"] and list(stored.anchors) == [("karate", "GCN")]
    assert prune().stdout.str().count("nothing to remove") == 1
    pytester.runpytest("-p", "no:cacheprovider").assert_outcomes(passed=2)


def test_prune_refuses_to_refresh(capsys) -> None:
    """Prune reads the gates as they are: a refresh in the same run would make every cell
    look used (and rewrite the files), so it is refused before pytest starts."""
    from pytest_graphnetz.cli.main import main

    assert main(["prune", "--yes", "--graphnetz-update-baselines"]) == 2
    assert "refresh with `graphnetz refresh` first, then prune" in capsys.readouterr().err


def test_prune_keeps_a_cell_the_grid_needs(tmp_path) -> None:
    """A baseline is a task × model grid: a cell goes with its whole model or task only."""
    from pytest_graphnetz.gates import compare_reports
    from pytest_graphnetz.gates.refreshing.baselines import BaselineHandle, read_baseline
    from pytest_graphnetz.gates.refreshing.ratchet import drop_cells, refresh

    X = np.tile(BASE, (2, 2, 1))
    grid = BenchmarkReport.from_arrays(X, tasks=["a", "b"], models=["GCN", "GAT"],
                                       seeds=range(6), metric="accuracy")
    path = tmp_path / "b.json"
    refresh(BaselineHandle(path, update=True), grid,
            lambda c, r, s: compare_reports(c, r, gate="not_worse", source=s, rerun_safe=False))
    dropped, kept = drop_cells(path, [("a", "GAT")], write=True)
    assert dropped == [] and kept == [("a", "GAT")]
    dropped, kept = drop_cells(path, [("a", "GAT"), ("b", "GAT"), ("b", "GCN")], write=True)
    assert sorted(dropped) == [("a", "GAT"), ("b", "GAT"), ("b", "GCN")] and kept == []
    stored = read_baseline(path)
    assert (list(stored.report.tasks), list(stored.report.models)) == (["a"], ["GCN"])
    assert set(stored.written) == {("a", "GCN")}
    assert drop_cells(path, [("a", "GCN")], write=True) == ([], [("a", "GCN")])  # never empty


def test_baseline_cells_no_gate_used_are_listed(pytester: pytest.Pytester,
                                               monkeypatch: pytest.MonkeyPatch) -> None:
    declare_six_seeds(pytester)
    pytester.makepyfile(test_unused=UNUSED)
    monkeypatch.setenv("GNZ_MODELS", "GCN,GAT")
    pytester.runpytest("-p", "no:cacheprovider", "--graphnetz-update-baselines"
                       ).assert_outcomes(passed=2)
    monkeypatch.setenv("GNZ_MODELS", "GCN")                 # GAT removed from the model dict
    result = pytester.runpytest("-p", "no:cacheprovider", "--graphnetz-summary=gates.md",
                                "--graphnetz-comment=c.md")
    result.assert_outcomes(passed=2)
    assert result.ret == 0
    result.stdout.fnmatch_lines([
        "graphnetz: 1 baseline cell(s) that no gate of this run used*",
        "  baselines/test_unused/test_models.json: karate/GAT"])
    assert "karate/GAT" in (pytester.path / "gates.md").read_text()
    assert "1 baseline cell(s) that no gate of this run used" in \
        (pytester.path / "c.md").read_text()

    failing = pytester.runpytest("-p", "no:cacheprovider", "--graphnetz-fail-unused",
                                 "-m", "graphnetz")      # the CI command: every gate selected
    failing.assert_outcomes(passed=2)
    assert failing.ret == 1
    failing.stdout.fnmatch_lines(["*karate/GAT*", "*--graphnetz-fail-unused: the run fails*"])
    # a partial run cannot tell: nothing listed, nothing failed
    partial = pytester.runpytest("-p", "no:cacheprovider", "--graphnetz-fail-unused",
                                 "-k", "models")
    assert partial.ret == 0 and "no gate of this run used" not in partial.stdout.str()
    node = pytester.runpytest("-p", "no:cacheprovider", "--graphnetz-fail-unused",
                              "test_unused.py::test_models")
    assert node.ret == 0 and "no gate of this run used" not in node.stdout.str()


# -- per-cell acceptance in the ratchet ------------------------------------------------------------

ACCEPT = COMMON + """

def test_pair(graphnetz_baseline):
    gcn = np.array([float(x) for x in os.environ["GNZ_GCN"].split(",")])
    gat = np.array([float(x) for x in os.environ["GNZ_GAT"].split(",")])
    candidate = BenchmarkReport.from_arrays(
        np.array([[gcn, gat]]), tasks=["karate"], models=["GCN", "GAT"], seeds=range(6),
        metric="accuracy")
    assert_not_worse(candidate, graphnetz_baseline())
"""


def test_accepting_one_cell_resets_only_its_anchor(pytester: pytest.Pytester,
                                                   monkeypatch: pytest.MonkeyPatch) -> None:
    from pytest_graphnetz.gates.refreshing.baselines import read_baseline

    def values(x: np.ndarray) -> str:
        return ",".join(str(v) for v in x)

    pytester.makepyfile(test_acc=ACCEPT)
    update = ("-p", "no:cacheprovider", "--graphnetz-update-baselines")
    monkeypatch.setenv("GNZ_GCN", values(BASE))
    monkeypatch.setenv("GNZ_GAT", values(BASE))
    pytester.runpytest(*update).assert_outcomes(passed=1)
    path = pytester.path / "baselines" / "test_acc" / "test_pair.json"
    # each cell records the refresh it was written under
    assert read_baseline(path).written == {("karate", "GCN"): {"verdict": "NEW"},
                                           ("karate", "GAT"): {"verdict": "NEW"}}

    # GAT lost 1.4 points (REGRESSED); GCN moved by noise: the refresh is refused on GAT
    monkeypatch.setenv("GNZ_GAT", values(BASE + DROPS))
    monkeypatch.setenv("GNZ_GCN", values(BASE + np.array([0.001, -0.001, 0, 0.002, 0, 0])))
    refused = pytester.runpytest(*update)
    refused.assert_outcomes(failed=1)
    out = refused.stdout.str()
    accept = out.index("--graphnetz-accept=karate/GAT")
    force = out.index("--graphnetz-force`")
    assert accept < force                                   # the force option comes last
    assert "every other cell keeps its anchor" in out

    accepted = pytester.runpytest(*update, "--graphnetz-accept=karate/GAT")
    accepted.assert_outcomes(passed=1)
    stored = read_baseline(path)
    np.testing.assert_array_equal(stored.anchors[("karate", "GAT")].final, BASE + DROPS)
    np.testing.assert_array_equal(stored.anchors[("karate", "GCN")].final, BASE)  # kept
    np.testing.assert_array_equal(stored.report.values("karate", "GAT"), BASE + DROPS)
    # the diff says why: GAT was accepted REGRESSED, GCN written NOT WORSE; in the file, in
    # each cell's block
    gat, gcn = stored.written[("karate", "GAT")], stored.written[("karate", "GCN")]
    assert gat == {"verdict": "REGRESSED", "accepted": True}
    assert gcn["verdict"] == "NOT WORSE" and "accepted" not in gcn
    block = json.loads(path.read_text())["models"]["GAT"]["tasks"]["karate"]
    assert block["refresh"] == gat
    # an unchanged refresh (IDENTICAL) keeps the record, so the file does not change
    before = path.read_text()
    pytester.runpytest(*update).assert_outcomes(passed=1)
    assert path.read_text() == before


def test_a_refused_inconclusive_refresh_names_the_seeds_that_decide_it(
        pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch) -> None:
    pytester.makepyfile(test_acc=ACCEPT)
    update = ("-p", "no:cacheprovider", "--graphnetz-update-baselines")
    monkeypatch.setenv("GNZ_GCN", ",".join(map(str, BASE)))
    monkeypatch.setenv("GNZ_GAT", ",".join(map(str, BASE)))
    pytester.runpytest(*update).assert_outcomes(passed=1)
    # a loss the paired test cannot call (one-sided p = 0.074): INCONCLUSIVE, negative mean Δ
    shift = np.array([-0.002, -0.025, 0.003, -0.019, 0.004, -0.0114])
    monkeypatch.setenv("GNZ_GAT", ",".join(map(str, BASE + shift)))
    refused = pytester.runpytest(*update)
    refused.assert_outcomes(failed=1)
    out = refused.stdout.str()
    found = re.search(r"about (\d+) paired seeds would decide the INCONCLUSIVE cell\(s\) "
                      r"\(rerun with --graphnetz-seeds=(\d+)", out)
    assert found and found.group(1) == found.group(2) and int(found.group(1)) > 6, out
    assert out.index("--graphnetz-accept=karate/GAT") < found.start() < \
        out.index("--graphnetz-force`")


def test_accept_needs_a_refresh_and_a_cell(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(test_acc=ACCEPT)
    result = pytester.runpytest("--graphnetz-accept=karate/GAT")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(["*--graphnetz-accept*--graphnetz-update-baselines*"])
    result = pytester.runpytest("--graphnetz-update-baselines", "--graphnetz-accept=GAT")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(["*TASK/MODEL*'GAT'*"])


def test_graphnetz_refresh_accept_becomes_the_pytest_option() -> None:
    from pytest_graphnetz.cli.subcommands import accept_options

    assert accept_options(["t.py::test_a", "--accept", "cora/GAT", "--accept=cora/GCN"]) == [
        "t.py::test_a", "--graphnetz-accept=cora/GAT", "--graphnetz-accept=cora/GCN"]


# -- graphnetz compare reproduces the gate ---------------------------------------------------------

GATED = COMMON + """

def test_gated():
    base = report(BASE)
    base.to_json("base.json")
    # a drop of about half a point, tolerated by the test's margin
    assert_not_worse(report(BASE + DROPS / 3), base, margin=0.01, min_effect=0.02)
"""


def test_compare_reads_the_gates_settings_from_the_saved_report(
        pytester: pytest.Pytester, capsys: pytest.CaptureFixture) -> None:
    from pytest_graphnetz import BenchmarkReport
    from pytest_graphnetz.cli.main import main

    declare_six_seeds(pytester)
    pytester.makepyfile(test_gate=GATED)
    result = pytester.runpytest("-p", "no:cacheprovider", "--graphnetz-report-dir=reports")
    result.assert_outcomes(passed=1)
    assert "  NOT WORSE  " in result.stdout.str()
    base = bind(pytester.path / "base.json", LookSchedule(6))   # the project's schedule
    cand = pytester.path / "reports" / "test_gate" / "test_gated.json"
    (call,) = BenchmarkReport.from_json(cand).protocol["gates"]
    assert "commit" in call   # the checkout's git commit (None outside one), for an export
    del call["commit"]
    assert call == {"gate": "not_worse", "test": "paired-t", "margin": 0.01, "min_effect": 0.02,
                    "alpha": 0.05, "strict": False, "first_look": 6, "single_run": False,
                    "node": "test_gate.py::test_gated", "cells": ["karate/GCN"]}

    capsys.readouterr()
    assert main(["compare", base, str(cand)]) == 0            # the gate's verdict, no flags
    out = capsys.readouterr()
    assert "NOT WORSE" in out.out and "margin 0.01" in out.err
    # explicit flags still win: at margin 0 the same drop is a regression
    assert main(["compare", base, str(cand), "--margin", "0", "--min-effect", "0.01"]) == 1
    assert "REGRESSED" in capsys.readouterr().out


def test_the_comment_names_the_unused_baseline_cells() -> None:
    """As the step summary does: a reviewer sees which cells, not only how many."""
    unused = [("baselines/test_m/test_models.json", "karate/GAT"),
              ("baselines/test_m/test_models.json", "cora/GAT"),
              ("baselines/test_m/test_other.json", "karate/SAGE")]
    comment = GateSummary(rows=[{"test": "test_m.py::test_models", "cell": "karate/GCN",
                                 "verdict": "NOT WORSE"}], unused=unused).comment()
    assert "3 baseline cell(s) that no gate of this run used" in comment
    assert "- baselines/test_m/test_models.json: karate/GAT, cora/GAT" in comment
    assert "- baselines/test_m/test_other.json: karate/SAGE" in comment
    # hundreds of files: a bounded list, and where the rest is
    many = [(f"baselines/m/test_{i}.json", "t/M") for i in range(500)]
    long = GateSummary(unused=many).comment()
    assert len(long) < 9_000 and "more baseline file(s)" in long


# -- costs seconds each (marked slow): fresh interpreters, subprocess sessions or killed
# processes (the slow tier, tests/README.md) ------------------------------------------------


@pytest.mark.slow
@pytest.mark.parametrize("mode", ["serial", "xdist"])
def test_every_failed_graphnetz_test_has_a_row(pytester: pytest.Pytester, mode: str) -> None:
    declare_six_seeds(pytester)
    pytester.makepyfile(test_out=OUTCOMES)
    args = ("-p", "no:cacheprovider", "--graphnetz-summary=gates.md",
            "--graphnetz-json=verdicts.json", "--graphnetz-comment=c.md", "-k", "not unrelated")
    if mode == "xdist":
        pytest.importorskip("xdist")
        result = pytester.runpytest_subprocess("-n", "2", *args)
    else:
        result = pytester.runpytest("-p", "no:xdist", *args)
    result.assert_outcomes(passed=1, failed=3, errors=1)
    out = result.stdout.str()
    for test, reason in (("test_raises_before_gate", "RuntimeError: the model exploded"),
                         ("test_fails_after_gate", "AssertionError: checked something else"),
                         ("test_marked", "ValueError: bad hyperparameter"),
                         ("test_setup_error", "RuntimeError: fixture refused: no GPU")):
        (line,) = [x for x in out.splitlines() if x.startswith(f"test_out.py::{test} ")
                   and "ERROR" in x]
        assert "✗ FAIL" in line and reason in line, line
    assert "4 of 6 gate row(s) failed the build (✗ FAIL), in 4 test(s): 4 failed" in out
    assert "none failed" not in (pytester.path / "gates.md").read_text()
    assert "none failed" not in (pytester.path / "c.md").read_text()
    data = json.loads((pytester.path / "verdicts.json").read_text())
    assert data["build_failed"] and data["exit_status"] == 1
    assert data["counts"] == {"rows": 6, "failed": 4, "refused": 0, "passed": 2,
                              "identical": 2, "tests": 5}
