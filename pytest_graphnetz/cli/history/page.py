"""The history page: one self-contained HTML file (CSS inline, every figure an inline SVG
drawn by :mod:`.svg`: no server, no network, no matplotlib), each figure also written
beside it as a ``.svg`` file, and the ``graphnetz history`` command."""

from __future__ import annotations

import math
import re
from collections.abc import Sequence
from pathlib import Path

from pytest_graphnetz.base.text import (
    fmt_interval,
    fmt_level,
    fmt_num,
    fmt_p,
    fmt_signed,
    html_escape,
)
from pytest_graphnetz.cli.history.ledger import (
    LEDGER_HEADERS,
    ReuseBudget,
    SplitReads,
    ledger_lines,
    ledger_rows,
    reuse_ledger,
    split_advice,
)
from pytest_graphnetz.cli.history.svg import cell_svg
from pytest_graphnetz.cli.history.trend import (
    Cell,
    CommitHistory,
    cell_label,
    drift_lines,
    load_history,
)
from pytest_graphnetz.report.files import write_text_atomic


def figure_name(k: int, cell: Cell) -> str:
    slug = re.sub(r"[^A-Za-z0-9._-]+", "_", cell_label(cell)).strip("_")[:80]
    return f"{k:03d}-{slug}.svg"


def write_page(history: CommitHistory, output: str | Path,
               ledger: Sequence[SplitReads] = ()) -> Path:
    """``output``/index.html (self-contained: CSS and figures inline, ``ledger`` the test-set
    reuse table) and each cell's figure beside it as an SVG file; returns the page's path."""
    out = Path(output)
    out.mkdir(parents=True, exist_ok=True)
    for k, cell in enumerate(history.series):
        write_text_atomic(out / figure_name(k, cell), cell_svg(history, cell, standalone=True))
    page = out / "index.html"
    write_text_atomic(page, render_page(history, ledger))
    return page


_CSS = """
body{font:14px/1.45 system-ui,-apple-system,"Segoe UI",sans-serif;margin:2em auto;
max-width:1100px;padding:0 1em;color:#263238}
h1{font-size:1.5em;margin-bottom:.2em}h2{font-size:1.1em;margin:1.6em 0 .4em}
table{border-collapse:collapse;margin:.5em 0;font-size:13px}
th,td{border-bottom:1px solid #e0e0e0;padding:3px 8px;text-align:left;vertical-align:top}
th{background:#f5f5f5}td.num{text-align:right;font-variant-numeric:tabular-nums}
code{font-family:ui-monospace,monospace;font-size:12px}
.drift{color:#c62828;font-weight:600}.ok{color:#2e7d32}.muted{color:#78909c}
svg{max-width:100%;height:auto;border:1px solid #eceff1}
details{margin:.3em 0 1em}summary{cursor:pointer;color:#455a64}
"""


def render_page(history: CommitHistory, ledger: Sequence[SplitReads] = ()) -> str:
    """The HTML page; every string from the reports is escaped, every figure inline."""
    e = html_escape
    runs, anchor = history.runs, history.runs[history.anchor]
    flagged = history.flagged
    head = (f"<p class=\"drift\">{len(flagged)} of {len(history.drift)} cell(s) drift from the "
            f"anchor.</p>" if flagged else
            f"<p class=\"ok\">No cell drifts from the anchor ({len(history.drift)} checked).</p>")
    rows = []
    for k, (cell, d) in enumerate(history.drift.items()):
        state = ('<span class="drift">DRIFT</span>' if d.flagged else
                 '<span class="muted">not checked</span>' if d.note and math.isnan(d.p_trend)
                 and math.isnan(d.p_latest) else '<span class="ok">ok</span>')
        rows.append(
            f"<tr><td><a href=\"#cell-{k}\"><code>{e(cell_label(cell))}</code></a></td>"
            f"<td>{state}</td><td class=\"num\">{e(fmt_signed(d.latest_diff))}</td>"
            f"<td class=\"num\">{e(fmt_interval(*d.latest_ci))}</td>"
            f"<td class=\"num\">{e(fmt_p(None if math.isnan(d.p_latest) else d.p_latest_holm))}"
            f"</td><td class=\"num\">{e(fmt_signed(d.slope))}</td>"
            f"<td class=\"num\">{e(fmt_p(None if math.isnan(d.p_trend) else d.p_trend_holm))}"
            f"</td><td>{e(d.note)}</td></tr>")
    level = fmt_level(1 - 2 * history.alpha)
    parts = [
        "<!DOCTYPE html>", "<html lang=\"en\"><head><meta charset=\"utf-8\">",
        "<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">",
        "<title>graphnetz history</title>", f"<style>{_CSS}</style></head><body>",
        "<h1>graphnetz history</h1>",
        f"<p class=\"muted\">{len(runs)} commits from {e(runs[0].short)} "
        f"({runs[0].date:%Y-%m-%d}) to {e(runs[-1].short)} ({runs[-1].date:%Y-%m-%d}); anchor "
        f"<code>{e(anchor.short)}</code>. Per cell, what the drift check tests: each commit's "
        f"paired Δ against the anchor (mean over the seeds the two share, + = better) with its "
        f"{level} interval, the trend line fitted through them, the gate's verdict in colour, "
        "the anchor at 0 dotted.</p>", head,
        "<h2>Drift against the anchor</h2>",
        "<table><tr><th>cell</th><th>drift</th><th>latest Δ (+ = better)</th>"
        f"<th>{level} CI (unadjusted)</th><th>p latest (Holm)</th><th>trend per commit</th>"
        "<th>p trend (Holm)</th><th>note</th></tr>", *rows, "</table>",
        f"<p class=\"muted\">Paired by seed against the anchor: a one-sided paired t test of "
        f"the latest commit, and a one-sided trend test (least squares) on the per-commit "
        f"paired means, bit-identical commits counted once; Holm over every test of every "
        f"cell at alpha {e(fmt_num(history.alpha))}.</p>",
        *ledger_html(ledger),
    ]
    # The same commit's cells repeat its id, date and subject: escape each once.
    commit_cells = [f"<td><code>{e(run.short)}</code></td><td>{run.date:%Y-%m-%d %H:%M}</td>"
                    f"<td>{e(run.subject)}</td>" for run in runs]
    verdict_cell: dict[str | None, str] = {}
    for k, (cell, points) in enumerate(history.series.items()):
        deltas = {d.index: d for d in history.drift[cell].deltas}
        parts += [f"<h2 id=\"cell-{k}\"><code>{e(cell_label(cell))}</code></h2>",
                  cell_svg(history, cell),
                  "<details><summary>per commit</summary><table><tr><th>commit</th>"
                  "<th>date</th><th>subject</th><th>seeds</th><th>mean</th>"
                  f"<th>paired Δ vs anchor [{level} CI]</th><th>verdict</th></tr>"]
        for p in points:
            delta = deltas.get(p.index)
            # Numbers we format ourselves: digits, signs, brackets; nothing to escape.
            paired = ("" if delta is None or math.isnan(delta.mean) else
                      f"{fmt_signed(delta.mean)} {fmt_interval(delta.ci_low, delta.ci_high)} "
                      f"(n={delta.n})")
            if p.verdict not in verdict_cell:
                verdict_cell[p.verdict] = f"<td>{e(p.verdict or '')}</td>"
            parts.append(
                f"<tr>{commit_cells[p.index]}<td class=\"num\">{p.n}</td>"
                f"<td class=\"num\">{fmt_num(p.mean)}</td><td class=\"num\">{paired}</td>"
                f"{verdict_cell[p.verdict]}</tr>")
        parts.append("</table></details>")
    parts.append("</body></html>")
    return "\n".join(parts) + "\n"


def ledger_html(ledger: Sequence[SplitReads]) -> list[str]:
    """The test-set reuse ledger as the page shows it: the rule, a table (PAST BUDGET in red
    only), and what a split that needs action asks for (the terminal's lines, as HTML)."""
    if not ledger:
        return []
    e = html_escape
    css = {"PAST BUDGET": "drift", "ok": "ok"}
    rows = []
    for row in ledger_rows(ledger):
        cells = [f"<td><code>{e(row[0])}</code></td>", f"<td><code>{e(row[1])}</code></td>",
                 *(f"<td class=\"num\">{e(x)}</td>" for x in row[2:-1]),
                 f"<td><span class=\"{css.get(row[-1], 'muted')}\">{e(row[-1])}</span></td>"]
        rows.append("<tr>" + "".join(cells) + "</tr>")
    advice = [f"<p class=\"{'drift' if s.over_budget else 'muted'}\">{e(line)}</p>"
              for s in ledger if (line := split_advice(s)) is not None]
    header = "".join(f"<th>{e(h)}</th>" for h in LEDGER_HEADERS)
    return ["<h2>Test-set reuse</h2>",
            f"<p class=\"muted\">Distinct gate reads per test split across these commits; "
            f"{e(ledger[0].rule.describe())} (docs/history-bisect.md).</p>",
            f"<table><tr>{header}</tr>", *rows, "</table>", *advice]


def run_history(directory: str, output: str, *, anchor: str | None, alpha: float,
                reuse: ReuseBudget | None = None) -> int:
    """``graphnetz history``: the drift table and the test-set reuse ledger (held to
    ``reuse``, None: its defaults) printed, the page and figures written; 1 when a cell
    drifts, 0 when none does."""
    history = load_history(directory, anchor=anchor, alpha=alpha)
    for line in drift_lines(history):
        print(line)
    ledger = reuse_ledger(history.runs, reuse)
    for line in ledger_lines(ledger):
        print(line)
    page = write_page(history, output, ledger)
    print(f"history page: {page} ({len(history.series)} SVG figure(s) inline and beside it)")
    return 1 if history.flagged else 0

