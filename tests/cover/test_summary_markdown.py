"""The pull-request comment renders on GitHub as written: a code span in a table cell is code
(not backslash-escaped backticks, which show as text), a pipe inside one stays in its cell, and
an ERROR row's Cell column names the cell its message names. Rendered with markdown-it-py under
GitHub's table rules (CommonMark + tables); a real pytest session writes the comment.
"""

from __future__ import annotations

import re

import pytest

MarkdownIt = pytest.importorskip("markdown_it").MarkdownIt

SESSION = """
import numpy as np
import torch

from pytest_graphnetz import BenchmarkReport, Task, assert_not_worse


def test_new_model(graphnetz_baseline):
    x = 0.8 + 0.01 * np.arange(10.0).reshape(1, 1, 10)
    cand = BenchmarkReport.from_arrays(x, tasks=["cora"], models=["GAT"], seeds=range(10),
                                       metric="accuracy")
    assert_not_worse(cand, graphnetz_baseline())


def broken(root):
    raise OSError("the dataset is gone")


def test_broken_loader(graphnetz_run):
    graphnetz_run({"karate": Task("karate", broken, epochs=1)},
                  {"GCN": lambda i, o: torch.nn.Linear(i, o)})
"""


def _cells(html: str) -> list[list[str]]:
    rows = re.findall(r"<tr>(.*?)</tr>", html, re.S)
    return [re.findall(r"<t[dh]>(.*?)</t[dh]>", r, re.S) for r in rows]


def test_the_comment_renders_code_spans_and_names_the_error_rows_cell(
        pytester: pytest.Pytester) -> None:
    pytester.makepyfile(test_models=SESSION)
    result = pytester.runpytest("-p", "no:cacheprovider", "--graphnetz-comment=comment.md",
                                "--graphnetz-summary=summary.md")
    result.assert_outcomes(failed=2)
    for page in ("comment.md", "summary.md"):
        markdown = (pytester.path / page).read_text()
        assert "\\`" not in markdown, page
        table = "\n".join(line for line in markdown.splitlines() if line.startswith("|"))
        html = MarkdownIt("commonmark").enable("table").render(table)
        cells = _cells(html)
        width = len(cells[0])
        assert all(len(row) == width for row in cells), cells   # no pipe split a cell
        by_cell = {row[1]: row for row in cells[1:]}
        missing = by_cell["cora/GAT"]
        assert any("<code>pytest test_models.py::test_new_model --graphnetz-update-baselines"
                   "</code>" in c for c in missing), missing
        assert not any("`" in c for c in missing), missing
        # the ERROR row: its message names task 'karate' × model 'GCN'
        assert "karate/GCN" in by_cell, list(by_cell)
        assert any("ERROR" in c for c in by_cell["karate/GCN"])


def test_a_pipe_inside_a_code_span_stays_in_its_cell() -> None:
    from pytest_graphnetz.base.text import markdown_table

    table = markdown_table(("Cell", "Note"), [("a|b", "run `cmd --x a|b` then <b>")])
    html = MarkdownIt("commonmark").enable("table").render(table)
    assert _cells(html)[1] == ["a|b", "run <code>cmd --x a|b</code> then &lt;b&gt;"]
