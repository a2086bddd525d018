"""The history's figures and page: each cell's trajectory as a PNG figure (matplotlib, the
``plot`` extra, imported where it draws) and one self-contained HTML page (CSS inline, every
figure a ``data:`` URI: no server, no network), and the ``graphnetz history`` command."""

from __future__ import annotations

import base64
import io
import math
import re
from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING

from .plots import INSTALL_HINT, VERDICT_COLOURS
from .report.files import write_text_atomic
from .report.views import method_phrase
from .text import fmt_interval, fmt_num, fmt_p, fmt_signed, html_escape
from .trend import Cell, History, cell_label, drift_lines, load_history

if TYPE_CHECKING:
    from matplotlib.figure import Figure


def plot_cell(history: History, cell: Cell) -> Figure:
    """One cell's trajectory: per-commit mean with its interval, the anchor's mean as a line,
    each recorded verdict marked in its colour."""
    try:
        from matplotlib.figure import Figure
    except ImportError as exc:
        raise ImportError(f"history figures need matplotlib, an optional extra: "
                          f"{INSTALL_HINT}") from exc
    points, runs = history.series[cell], history.runs
    drift = history.drift[cell]
    report = runs[points[0].index].reports[cell[0]]
    fig = Figure(figsize=(9.0, 3.3), layout="constrained")
    ax = fig.add_subplot()
    x = [p.index for p in points]
    means = [p.mean for p in points]
    ax.errorbar(x, means, yerr=[[p.mean - p.ci_low for p in points],
                                [p.ci_high - p.mean for p in points]],
                fmt="-", color="#455a64", ecolor="#90a4ae", lw=1.2, capsize=2, zorder=1,
                label=f"mean over seeds, {method_phrase(report)}")
    colours = {v.value: c for v, c in VERDICT_COLOURS.items()}
    for verdict in dict.fromkeys(p.verdict for p in points):
        mine = [p for p in points if p.verdict == verdict]
        ax.scatter([p.index for p in mine], [p.mean for p in mine], zorder=3, s=26,
                   color=colours.get(verdict or "", "#263238"),
                   label=verdict or "no verdict recorded", edgecolors="white", linewidths=0.6)
    anchor = next((p for p in points if p.index == drift.anchor), None)
    if anchor is not None:
        ax.axhline(anchor.mean, color="#6a1b9a", ls=":", lw=1, zorder=0)
        ax.scatter([anchor.index], [anchor.mean], marker="D", s=48, facecolors="none",
                   edgecolors="#6a1b9a", zorder=4, label=f"anchor {runs[anchor.index].short}")
    ax.set_xticks(x, [runs[i].short[:7] for i in x], rotation=60, fontsize=7,
                  fontfamily="monospace")
    spec = report.metric(cell[1])
    ax.set_ylabel(f"{spec.name} ({'higher' if spec.higher_is_better else 'lower'} is better)")
    ax.set_xlabel("commit, oldest first", fontsize=8)
    status = "DRIFT" if drift.flagged else "no drift"
    ax.set_title(f"{cell_label(cell)}: {status}", fontsize=9, loc="left")
    ax.grid(axis="y", color="#eceff1", lw=0.8)
    ax.legend(fontsize=7, loc="upper left", bbox_to_anchor=(1.01, 1.0), frameon=False)
    return fig


def png_bytes(fig: Figure) -> bytes:
    """The figure as PNG, rendered through Agg (no pyplot), without matplotlib's URL in the
    file's metadata."""
    buffer = io.BytesIO()
    fig.savefig(buffer, format="png", dpi=110, metadata={"Software": None})
    return buffer.getvalue()


def figure_name(k: int, cell: Cell) -> str:
    slug = re.sub(r"[^A-Za-z0-9._-]+", "_", cell_label(cell)).strip("_")[:80]
    return f"{k:03d}-{slug}.png"


def write_page(history: History, output: str | Path) -> Path:
    """``output``/index.html (self-contained: CSS inline, figures as data: URIs) and each
    cell's figure beside it as a PNG; returns the page's path."""
    out = Path(output)
    out.mkdir(parents=True, exist_ok=True)
    figures = {}
    for k, cell in enumerate(history.series):
        data = png_bytes(plot_cell(history, cell))
        (out / figure_name(k, cell)).write_bytes(data)
        figures[cell] = base64.b64encode(data).decode("ascii")
    page = out / "index.html"
    write_text_atomic(page, render_page(history, figures))
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
img{max-width:100%;border:1px solid #eceff1}
details{margin:.3em 0 1em}summary{cursor:pointer;color:#455a64}
"""


def render_page(history: History, figures: Mapping[Cell, str]) -> str:
    """The HTML page; every string from the reports is escaped, every image inline."""
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
    level = f"{100 * (1 - 2 * history.alpha):.3g}%"
    parts = [
        "<!DOCTYPE html>", "<html lang=\"en\"><head><meta charset=\"utf-8\">",
        "<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">",
        "<title>graphnetz history</title>", f"<style>{_CSS}</style></head><body>",
        "<h1>graphnetz history</h1>",
        f"<p class=\"muted\">{len(runs)} commits from {e(runs[0].short)} "
        f"({runs[0].date:%Y-%m-%d}) to {e(runs[-1].short)} ({runs[-1].date:%Y-%m-%d}); anchor "
        f"<code>{e(anchor.short)}</code>. Per commit: the mean over seeds with its interval, "
        "the gate's verdict in colour, the anchor's mean dotted.</p>", head,
        "<h2>Drift against the anchor</h2>",
        "<table><tr><th>cell</th><th>drift</th><th>latest Δ (+ = better)</th>"
        f"<th>{level} CI (unadjusted)</th><th>p latest (Holm)</th><th>trend per commit</th>"
        "<th>p trend (Holm)</th><th>note</th></tr>", *rows, "</table>",
        f"<p class=\"muted\">Paired by seed against the anchor: a one-sided paired t test of "
        f"the latest commit, and a one-sided trend test (least squares) on the per-commit "
        f"paired means, bit-identical commits counted once; Holm over every test of every "
        f"cell at alpha {e(fmt_num(history.alpha))}.</p>",
    ]
    for k, (cell, points) in enumerate(history.series.items()):
        parts += [f"<h2 id=\"cell-{k}\"><code>{e(cell_label(cell))}</code></h2>",
                  f"<img alt=\"{e(cell_label(cell))} across commits\" "
                  f"src=\"data:image/png;base64,{figures[cell]}\">",
                  "<details><summary>per commit</summary><table><tr><th>commit</th>"
                  "<th>date</th><th>subject</th><th>seeds</th><th>mean</th><th>interval</th>"
                  "<th>verdict</th></tr>"]
        for p in points:
            run = runs[p.index]
            parts.append(
                f"<tr><td><code>{e(run.short)}</code></td><td>{run.date:%Y-%m-%d %H:%M}</td>"
                f"<td>{e(run.subject)}</td><td class=\"num\">{p.n}</td>"
                f"<td class=\"num\">{e(fmt_num(p.mean))}</td>"
                f"<td class=\"num\">{e(fmt_interval(p.ci_low, p.ci_high))}</td>"
                f"<td>{e(p.verdict or '')}</td></tr>")
        parts.append("</table></details>")
    parts.append("</body></html>")
    return "\n".join(parts) + "\n"


def run_history(directory: str, output: str, *, anchor: str | None, alpha: float) -> int:
    """``graphnetz history``: the drift table printed, the page and figures written; 1 when a
    cell drifts, 0 when none does."""
    history = load_history(directory, anchor=anchor, alpha=alpha)
    for line in drift_lines(history):
        print(line)
    from .ledger import ledger_lines

    for line in ledger_lines(history.runs):
        print(line)
    page = write_page(history, output)
    print(f"history page: {page} ({len(history.series)} figure(s) beside it)")
    return 1 if history.flagged else 0

