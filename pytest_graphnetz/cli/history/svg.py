"""A cell's history as an inline SVG figure, written by hand: what the drift check tests, the
paired Δ of every commit against the anchor (+ = better) with its interval, the trend line it
fits, and each recorded verdict in its colour. A few hundred bytes of path data per commit,
no matplotlib: a page of 50 cells × 500 commits draws in well under a second."""

from __future__ import annotations

import math
from collections.abc import Sequence

from pytest_graphnetz.base.text import fmt_level, fmt_num, html_escape
from pytest_graphnetz.cli.history.trend import Cell, CommitHistory, cell_label
from pytest_graphnetz.report.plots import VERDICT_COLOURS

WIDTH, HEIGHT = 900, 270
LEFT, RIGHT, TOP, BOTTOM = 64, 190, 26, 46     # the plot area's margins, in pixels
INTERVAL, TREND, ANCHOR, NO_VERDICT = "#90a4ae", "#455a64", "#6a1b9a", "#263238"


def nice_ticks(low: float, high: float, count: int = 5) -> list[float]:
    """About ``count`` round values (1, 2 or 5 × a power of ten apart) covering [low, high]."""
    if not (math.isfinite(low) and math.isfinite(high)) or high <= low:
        return [low] if math.isfinite(low) else []
    raw = (high - low) / count
    power = 10.0 ** math.floor(math.log10(raw))
    step = next(m * power for m in (1, 2, 5, 10) if m * power >= raw)
    first = math.ceil(low / step - 1e-9)
    return [k * step for k in range(first, int(math.floor(high / step + 1e-9)) + 1)]


def _num(x: float) -> str:
    return f"{x:.1f}"


def cell_svg(history: CommitHistory, cell: Cell, *, standalone: bool = False) -> str:
    """The SVG element of one cell's history (module docstring), every string escaped; with
    ``standalone`` it carries the SVG namespace a ``.svg`` file needs (HTML needs none)."""
    e = html_escape
    drift, runs = history.drift[cell], history.runs
    deltas = [d for d in drift.deltas if math.isfinite(d.mean)]
    verdicts = {p.index: p.verdict for p in history.series[cell]}
    spec = runs[history.series[cell][0].index].metrics[cell]
    status = "DRIFT" if drift.flagged else "no drift"
    title = f"{cell_label(cell)}: {status}"
    fill = ' fill="#c62828"' if drift.flagged else ""
    namespace = ' xmlns="http://www.w3.org/2000/svg"' if standalone else ""
    out = [f'<svg{namespace} width="{WIDTH}" height="{HEIGHT}" '
           f'viewBox="0 0 {WIDTH} {HEIGHT}" role="img" font-family="system-ui,sans-serif" '
           f'font-size="11"><title>{e(title)}</title>',
           f'<text x="{LEFT}" y="16" font-size="12" font-weight="600"{fill}>{e(title)}</text>']
    if not deltas:
        out.append(f'<text x="{LEFT}" y="{HEIGHT // 2}" fill="#78909c">no commit shares 2 '
                   f'seeds with the anchor: nothing to draw</text></svg>')
        return "".join(out)
    xs = [d.index for d in deltas]
    x0, x1 = min(xs), max(max(xs), min(xs) + 1)
    finite = [v for d in deltas for v in (d.mean, d.ci_low, d.ci_high) if math.isfinite(v)]
    low, high = min(*finite, 0.0), max(*finite, 0.0)
    pad = (high - low) * 0.06 or 1e-3
    low, high = low - pad, high + pad
    width, height = WIDTH - LEFT - RIGHT, HEIGHT - TOP - BOTTOM

    def px(i: float) -> float:
        return LEFT + (i - x0) / (x1 - x0) * width

    def py(v: float) -> float:
        return TOP + (high - v) / (high - low) * height

    for tick in nice_ticks(low, high):
        y = _num(py(tick))
        out.append(f'<path d="M{LEFT} {y}h{width}" stroke="#eceff1"/>'
                   f'<text x="{LEFT - 5}" y="{y}" dy="4" text-anchor="end">'
                   f'{e(fmt_num(tick) if tick else "0")}</text>')
    out.append(f'<path d="M{LEFT} {TOP}V{TOP + height}h{width}" stroke="#b0bec5" fill="none"/>')
    zero = _num(py(0.0))
    out.append(f'<path d="M{LEFT} {zero}h{width}" stroke="{ANCHOR}" stroke-dasharray="3 3"/>')
    bars = "".join(f"M{_num(px(d.index))} {_num(py(d.ci_low))}V{_num(py(d.ci_high))}"
                   for d in deltas if math.isfinite(d.ci_low))
    out.append(f'<path d="{bars}" stroke="{INTERVAL}" stroke-width="1.2"/>')
    line = "".join(("M" if k == 0 else "L") + f"{_num(px(d.index))} {_num(py(d.mean))}"
                   for k, d in enumerate(deltas))
    out.append(f'<path d="{line}" stroke="{INTERVAL}" stroke-width="0.8" fill="none"/>')
    colours = {v.value: c for v, c in VERDICT_COLOURS.items()}
    size = 6 if len(deltas) <= 60 else 4   # markers: the trend stays visible among hundreds
    legend: list[tuple[str, str, str]] = [
        (INTERVAL, "line", f"paired Δ, {fmt_level(1 - 2 * history.alpha)} CI"),
        (ANCHOR, "dot", "anchor (Δ = 0)")]
    trend = math.isfinite(drift.slope) and math.isfinite(drift.intercept)
    if trend:
        legend.insert(1, (TREND, "dash", "trend (least squares)"))
    for verdict in dict.fromkeys(verdicts.get(d.index) for d in deltas):
        colour = colours.get(verdict or "", NO_VERDICT)
        marks = "".join(f"M{_num(px(d.index))} {_num(py(d.mean))}h0" for d in deltas
                        if verdicts.get(d.index) == verdict)
        out.append(f'<path d="{marks}" stroke="{colour}" stroke-width="{size}" '
                   f'stroke-linecap="round"/>')
        legend.append((colour, "mark", verdict or "no verdict recorded"))
    if trend:
        ends = [(i, drift.intercept + drift.slope * i) for i in (x0, x1)]
        out.append(f'<path d="M{_num(px(ends[0][0]))} {_num(py(ends[0][1]))}'
                   f'L{_num(px(ends[1][0]))} {_num(py(ends[1][1]))}" stroke="{TREND}" '
                   f'stroke-width="1.5" stroke-dasharray="7 3"/>')
    out += _x_labels(history, xs, px, TOP + height)
    out.append(f'<text x="{LEFT + width / 2}" y="{HEIGHT - 4}" text-anchor="middle" '
               f'fill="#546e7a">commit, oldest first (anchor {e(runs[drift.anchor].short[:7])})'
               f'</text>')
    out.append(f'<text transform="translate(12 {TOP + height / 2}) rotate(-90)" '
               f'text-anchor="middle" fill="#546e7a">Δ {e(spec.name)} vs anchor (+ = better)'
               f'</text>')
    out += _legend(legend)
    out.append("</svg>")
    return "".join(out)


def _x_labels(history: CommitHistory, xs: Sequence[int], px, bottom: float) -> list[str]:
    """At most ten commit ids under the axis, evenly spread, the first and last included."""
    step = max(1, math.ceil(len(xs) / 10))
    chosen = list(xs[::step])
    if chosen[-1] != xs[-1]:
        chosen[-1] = xs[-1]
    return [f'<text x="{_num(px(i))}" y="{bottom + 14}" text-anchor="middle" '
            f'font-family="ui-monospace,monospace" font-size="9">'
            f'{html_escape(history.runs[i].short[:7])}</text>' for i in chosen]


def _legend(entries: Sequence[tuple[str, str, str]]) -> list[str]:
    x = WIDTH - RIGHT + 14
    out = []
    for k, (colour, kind, label) in enumerate(entries):
        y = TOP + 6 + 16 * k
        mark = {"line": f'<path d="M{x} {y}h16" stroke="{colour}" stroke-width="1.5"/>',
                "dash": f'<path d="M{x} {y}h16" stroke="{colour}" stroke-width="1.5" '
                        f'stroke-dasharray="5 2"/>',
                "dot": f'<path d="M{x} {y}h16" stroke="{colour}" stroke-dasharray="3 3"/>',
                "mark": f'<path d="M{x + 8} {y}h0" stroke="{colour}" stroke-width="6" '
                        f'stroke-linecap="round"/>'}[kind]
        out.append(f'{mark}<text x="{x + 22}" y="{y}" dy="4">{html_escape(label)}</text>')
    return out
