"""A cell's history across commits: saved reports read back per commit, each cell's trajectory
drawn (PNG figures and one self-contained HTML page), and a drift check against an anchor.

The folder ``graphnetz history`` reads (docs/history-bisect.md says how CI collects it)::

    HISTORY/
      <any name>/                  one folder per commit
        commit.json                {"commit": "<sha>", "date": "<ISO 8601>"} (+ optional "subject")
        reports/<module>/<test>.json   what --graphnetz-report-dir wrote
        graphnetz-verdicts.json    what --graphnetz-json wrote (optional: the verdicts marked)

Commits are ordered by ``date`` (ties by commit id). A cell is (report name, task, model), the
report name its path under ``reports/`` without ``.json`` (``test_models/test_gcn``).

The drift check (:func:`drift_check`), per cell, paired by seed against the anchor (the oldest
commit, or a named one), on the seeds the anchor shares with every later commit:

- **latest against anchor**: the one-sided paired t test (``scipy.stats.ttest_1samp`` on the
  per-seed differences, which is ``ttest_rel``; H1: the latest commit is worse), on the seeds
  the two share;
- **trend**: the per-commit paired means ``m_c = mean_s(d_c,s)``, ``d_c,s`` the commit's value
  minus the anchor's at seed s (sign flipped for lower-is-better metrics), regressed on the
  commit's position (``scipy.stats.linregress``, one-sided: slope < 0). A commit whose values
  equal the previous distinct commit's bit for bit (nothing changed) is one point, not two: the
  test assumes independent points.

Holm across every p-value of every cell (two per cell) at ``alpha`` keeps the probability of
flagging any cell of a flat history at most ``alpha`` (simulated in tests/test_history.py).
"""

from __future__ import annotations

import base64
import io
import json
import math
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from datetime import datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from .baselines import default_path
from .plots import INSTALL_HINT, VERDICT_COLOURS
from .report import BenchmarkReport, write_text_atomic
from .report.views import cell_stats, method_phrase
from .text import fmt_interval, fmt_num, fmt_p, fmt_signed, html_escape

if TYPE_CHECKING:
    from matplotlib.figure import Figure

MANIFEST, REPORTS, VERDICTS = "commit.json", "reports", "graphnetz-verdicts.json"
Cell = tuple[str, str, str]
"""(report name, task, model)."""


class HistoryError(ValueError):
    """A history folder that cannot be read (the message names the file and the fix)."""


@dataclass(frozen=True)
class CommitRun:
    """One commit's saved results: its reports by name and the gate's verdicts by cell."""

    commit: str
    date: datetime
    subject: str
    folder: Path
    reports: Mapping[str, BenchmarkReport]
    verdicts: Mapping[Cell, str]

    @property
    def short(self) -> str:
        return self.commit[:10]


@dataclass(frozen=True)
class Point:
    """A cell at one commit: the per-commit mean and interval of the report, its per-seed
    values (``seed -> value``) and the gate's verdict there (None: none recorded)."""

    index: int
    mean: float
    ci_low: float
    ci_high: float
    n: int
    values: Mapping[int, float]
    verdict: str | None


@dataclass(frozen=True)
class Drift:
    """The drift check of one cell. ``latest_diff``: mean paired Δ latest − anchor (+ = better)
    and its interval ``latest_ci`` at ``1 − 2·alpha``; ``slope``: the trend's per-commit change
    of the paired mean; ``p_latest`` / ``p_trend``: raw one-sided p-values; ``p_*_holm``: after
    Holm across all cells; ``flagged``: either Holm p is at most ``alpha``; ``note``: why a test
    was not run (too few seeds or commits)."""

    cell: Cell
    anchor: int
    seeds: tuple[int, ...]
    latest_diff: float
    latest_ci: tuple[float, float]
    slope: float
    p_latest: float
    p_trend: float
    p_latest_holm: float = 1.0
    p_trend_holm: float = 1.0
    flagged: bool = False
    note: str = ""


@dataclass(frozen=True)
class History:
    """The commits in order and each cell's trajectory (:class:`Point` per commit that has
    it), with the drift check of every cell."""

    runs: tuple[CommitRun, ...]
    series: Mapping[Cell, tuple[Point, ...]]
    drift: Mapping[Cell, Drift]
    anchor: int
    alpha: float

    @property
    def flagged(self) -> list[Drift]:
        return [d for d in self.drift.values() if d.flagged]


def cell_label(cell: Cell) -> str:
    name, task, model = cell
    return f"{name}::{task}/{model}"


# -- reading ------------------------------------------------------------------------------------

def load_runs(directory: str | Path) -> list[CommitRun]:
    """Every commit folder under ``directory`` (see the module docstring), oldest first."""
    root = Path(directory)
    if not root.is_dir():
        raise HistoryError(f"{root}: no such directory; give the folder that holds one folder "
                           f"per commit ({MANIFEST} + {REPORTS}/), see docs/history-bisect.md")
    runs = [_load_run(folder) for folder in sorted(p for p in root.iterdir() if p.is_dir())]
    if not runs:
        raise HistoryError(f"{root}: no commit folders in it (each holds {MANIFEST} and "
                           f"{REPORTS}/, see docs/history-bisect.md)")
    runs.sort(key=lambda r: (r.date, r.commit))
    seen: dict[str, Path] = {}
    for r in runs:
        if r.commit in seen:
            raise HistoryError(f"{r.folder} and {seen[r.commit]} both say commit {r.commit}; "
                               "keep one folder per commit")
        seen[r.commit] = r.folder
    return runs


def _load_run(folder: Path) -> CommitRun:
    manifest = folder / MANIFEST
    fix = ('write it with `git show -s --format=\'{"commit": "%H", "date": "%cI"}\' HEAD > '
           f"{MANIFEST}` (docs/history-bisect.md)")
    try:
        meta = json.loads(manifest.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise HistoryError(f"{manifest}: missing; every commit folder says which commit it is: "
                           f"{fix}") from None
    except (OSError, ValueError) as exc:
        raise HistoryError(f"{manifest}: not readable JSON ({exc}); {fix}") from None
    if not isinstance(meta, dict) or not isinstance(meta.get("commit"), str) \
            or not meta["commit"] or not isinstance(meta.get("date"), str):
        raise HistoryError(f"{manifest}: needs a \"commit\" and a \"date\" string; {fix}")
    try:
        date = datetime.fromisoformat(meta["date"].replace("Z", "+00:00"))
    except ValueError:
        raise HistoryError(f"{manifest}: \"date\" {meta['date']!r} is not ISO 8601 (e.g. "
                           f"2026-12-01T10:00:00+00:00); {fix}") from None
    if date.tzinfo is None:
        raise HistoryError(f"{manifest}: \"date\" {meta['date']!r} has no time zone (commits "
                           f"from several machines must sort); {fix}")
    reports_dir = folder / REPORTS
    reports = {p.relative_to(reports_dir).as_posix().removesuffix(".json"):
               BenchmarkReport.from_json(p) for p in sorted(reports_dir.rglob("*.json"))}
    if not reports:
        raise HistoryError(f"{reports_dir}: no reports; copy what --graphnetz-report-dir wrote "
                           "for this commit there")
    return CommitRun(meta["commit"], date, str(meta.get("subject", "")), folder, reports,
                     _load_verdicts(folder / VERDICTS))


def _load_verdicts(path: Path) -> dict[Cell, str]:
    """The verdict of each cell in a --graphnetz-json file, keyed as the reports are."""
    if not path.exists():
        return {}
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
        rows = data["rows"]
    except (OSError, ValueError, KeyError, TypeError) as exc:
        raise HistoryError(f"{path}: not a --graphnetz-json verdict file ({exc})") from None
    out: dict[Cell, str] = {}
    for row in rows:
        if not isinstance(row, dict) or not row.get("task") or not row.get("model"):
            continue
        test = str(row.get("test", ""))
        module, _, rest = test.partition("::")
        name = default_path("", Path(module).stem, rest.replace("::", ".")).as_posix()
        out.setdefault((name.removesuffix(".json"), row["task"], row["model"]),
                       str(row.get("verdict", "")))
    return out


def trajectories(runs: Sequence[CommitRun]) -> dict[Cell, tuple[Point, ...]]:
    """Each cell's points, one per commit whose reports hold it, in commit order."""
    out: dict[Cell, list[Point]] = {}
    for i, run in enumerate(runs):
        for name, report in run.reports.items():
            for (task, model), row in cell_stats(report).items():
                values = dict(zip(report.seeds, report.values(task, model).tolist(),
                                  strict=True))
                cell = (name, task, model)
                out.setdefault(cell, []).append(Point(
                    i, float(row.mean), float(row.ci_low), float(row.ci_high), int(row.n_seeds),
                    values, run.verdicts.get(cell)))
    return {c: tuple(p) for c, p in out.items()}


# -- the drift check ------------------------------------------------------------------------------

def drift_check(series: Mapping[Cell, Sequence[Point]], *, anchor: int = 0,
                higher_is_better: Mapping[Cell, bool] | None = None,
                alpha: float = 0.05) -> dict[Cell, Drift]:
    """The drift check of every cell from commit ``anchor`` on (module docstring); a cell
    absent at the anchor is checked from its first commit."""
    from scipy import stats as sps

    from .stats import holm

    out: dict[Cell, Drift] = {}
    for cell, points in series.items():
        sign = 1.0 if (higher_is_better or {}).get(cell, True) else -1.0
        points = [p for p in points if p.index >= anchor]
        out[cell] = _drift_one(cell, points, sign, alpha, sps)
    tested = [(cell, kind) for cell, d in out.items() for kind in ("latest", "trend")
              if not math.isnan(getattr(d, f"p_{kind}"))]
    adjusted: dict[tuple[Cell, str], float] = {}
    if tested:
        p_values = holm([getattr(out[c], f"p_{k}") for c, k in tested], alpha=alpha).p_adjusted
        adjusted = dict(zip(tested, p_values, strict=True))
    for cell, d in out.items():
        p_latest, p_trend = adjusted.get((cell, "latest"), 1.0), adjusted.get((cell, "trend"), 1.0)
        out[cell] = replace(d, p_latest_holm=p_latest, p_trend_holm=p_trend,
                            flagged=p_latest <= alpha or p_trend <= alpha)
    return out


def _drift_one(cell: Cell, points: Sequence[Point], sign: float, alpha: float,
               sps: Any) -> Drift:
    nan = math.nan
    if len(points) < 2:
        return Drift(cell, points[0].index if points else -1, (), nan, (nan, nan), nan, nan, nan,
                     note="one commit: nothing to compare")
    first = points[0]
    finite = [{s: v for s, v in p.values.items() if math.isfinite(v)} for p in points]
    shared_last = sorted(set(finite[0]) & set(finite[-1]))
    latest_diff, latest_ci, p_latest, note = nan, (nan, nan), nan, ""
    if len(shared_last) >= 2:
        d = sign * (np.array([finite[-1][s] for s in shared_last])
                    - np.array([finite[0][s] for s in shared_last]))
        latest_diff = float(d.mean())
        if not d.any():
            p_latest, latest_ci = 1.0, (0.0, 0.0)
        else:
            res = sps.ttest_1samp(d, 0.0, alternative="less")
            p_latest = float(res.pvalue)
            ci = sps.ttest_1samp(d, 0.0).confidence_interval(1 - 2 * alpha)
            latest_ci = (float(ci.low), float(ci.high))
    else:
        note = f"the latest commit shares {len(shared_last)} seeds with the anchor"
    seeds = sorted(set.intersection(*(set(f) for f in finite)))
    slope, p_trend = nan, nan
    if len(seeds) >= 2:
        xs, means, previous = [], [], None
        for p, f in zip(points, finite, strict=True):
            vec = np.array([f[s] for s in seeds])
            if previous is not None and vec.tobytes() == previous.tobytes():
                continue   # unchanged, bit for bit: the same point again, not a new one
            previous = vec
            base = np.array([finite[0][s] for s in seeds])
            xs.append(p.index)
            means.append(float(sign * (vec - base).mean()))
        if len(xs) >= 3 and np.ptp(means) > 0:
            fit = sps.linregress(xs, means, alternative="less")
            slope, p_trend = float(fit.slope), float(fit.pvalue)
        elif len(xs) >= 3:
            slope, p_trend = 0.0, 1.0
        else:
            note = note or f"{len(xs)} distinct commits: no trend to test"
    else:
        note = note or (f"the anchor and every later commit share {len(seeds)} seeds; "
                        "the trend needs 2")
    return Drift(cell, first.index, tuple(seeds), latest_diff, latest_ci, slope, p_latest,
                 p_trend, note=note)


def load_history(directory: str | Path, *, anchor: str | None = None,
                 alpha: float = 0.05) -> History:
    """Read ``directory`` and check every cell for drift against ``anchor`` (a commit id or
    its prefix; None: the oldest commit)."""
    runs = load_runs(directory)
    index = 0
    if anchor is not None:
        matches = [i for i, r in enumerate(runs) if r.commit.startswith(anchor)]
        if len(matches) != 1:
            raise HistoryError(
                f"--anchor {anchor}: {'no' if not matches else len(matches)} commit(s) of "
                f"{directory} match it (commits: {', '.join(r.short for r in runs)})")
        index = matches[0]
    series = trajectories(runs)
    direction = {}
    for cell, points in series.items():
        report = runs[points[0].index].reports[cell[0]]
        direction[cell] = report.metric(cell[1]).higher_is_better
    return History(tuple(runs), series, drift_check(series, anchor=index,
                                                    higher_is_better=direction, alpha=alpha),
                   index, alpha)


def drift_lines(history: History) -> list[str]:
    """The drift check as the terminal prints it: one line per cell."""
    from .text import format_table

    rows = []
    for cell, d in history.drift.items():
        rows.append([cell_label(cell), "DRIFT" if d.flagged else ("-" if d.note else "ok"),
                     fmt_signed(d.latest_diff), fmt_interval(*d.latest_ci),
                     fmt_p(d.p_latest_holm if not math.isnan(d.p_latest) else None),
                     fmt_signed(d.slope), fmt_p(d.p_trend_holm if not math.isnan(d.p_trend)
                                                else None), d.note])
    anchor = history.runs[history.anchor]
    head = (f"drift against the anchor {anchor.short} ({anchor.date:%Y-%m-%d}), "
            f"{len(history.runs)} commits, Holm over every test at alpha "
            f"{fmt_num(history.alpha)}:")
    return [head, format_table(["cell", "drift", "latest Δ", "CI", "p (Holm)", "trend/commit",
                                "p (Holm)", "note"], rows)]


# -- figures and the page -------------------------------------------------------------------------

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
        f"<th>{level} CI</th><th>p latest (Holm)</th><th>trend per commit</th>"
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
    page = write_page(history, output)
    print(f"history page: {page} ({len(history.series)} figure(s) beside it)")
    return 1 if history.flagged else 0

