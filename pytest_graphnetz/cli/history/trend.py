"""A cell's history across commits: saved reports read back per commit (each file once, its
per-seed values only), each cell's trajectory, and a drift check against an anchor (drawn by
:mod:`.svg`, laid out by :mod:`.page`).

docs/history-bisect.md gives the folder ``graphnetz history`` reads (one folder per commit:
``commit.json``, ``reports/``, an optional verdict file) and the drift check. A cell is
(report name, task, model), the report name its path under ``reports/`` without ``.json``.

The drift check (:func:`drift_check`), per cell, paired by seed against the anchor on the seeds
it shares with every later commit: the latest commit against the anchor by the one-sided
paired t (:func:`pytest_graphnetz.stats.paired.paired_tests`), and the trend of the per-commit
paired means by :func:`pytest_graphnetz.stats.slope.slope_test` (a commit bit-identical to the
previous distinct one is one point, not two: the test assumes independent points). Holm
across every p-value of every cell (two per cell) at ``alpha`` keeps the probability of
flagging any cell of a flat history at most ``alpha`` (simulated in tests/cover/test_history.py).
"""

from __future__ import annotations

import functools
import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from datetime import datetime
from pathlib import Path

import numpy as np

from pytest_graphnetz.base.text import fmt_interval, fmt_num, fmt_p, fmt_signed
from pytest_graphnetz.cli.history.ledger import SplitFacts, split_facts
from pytest_graphnetz.gates.refreshing.baselines import default_path
from pytest_graphnetz.report import BenchmarkReport
from pytest_graphnetz.report.codec import read_json
from pytest_graphnetz.report.epochs import MetricSpec
from pytest_graphnetz.report.values_form import plain_cell_values

MANIFEST, REPORTS, VERDICTS = "commit.json", "reports", "graphnetz-verdicts.json"
MAX_MANIFEST_BYTES = 1 << 20   # a commit file is one line; a larger one is not one
Cell = tuple[str, str, str]
"""(report name, task, model)."""


class HistoryError(ValueError):
    """A history folder that cannot be read (the message names the file and the fix)."""


@dataclass(frozen=True)
class CommitRun:
    """One commit's saved results: each cell's per-seed values (``seed -> value``, under
    its report's epoch rule), each cell's metric, and the gate's verdicts by cell."""

    commit: str
    date: datetime
    subject: str
    folder: Path
    values: Mapping[Cell, Mapping[int, float]]
    metrics: Mapping[Cell, MetricSpec]
    verdicts: Mapping[Cell, str]
    # each (report name, task)'s test split as its report names it (the reuse ledger)
    splits: Mapping[tuple[str, str], SplitFacts] = field(default_factory=dict)

    @property
    def short(self) -> str:
        return self.commit[:10]


@dataclass(frozen=True)
class Point:
    """A cell at one commit (``index``: its position in the history): its per-seed values
    (``seed -> value``, NaN for a diverged seed) and the gate's verdict there (None: none
    recorded)."""

    index: int
    values: Mapping[int, float]
    verdict: str | None

    @property
    def n(self) -> int:
        """The seeds that did not diverge."""
        return sum(math.isfinite(v) for v in self.values.values())

    @property
    def mean(self) -> float:
        """The mean over the seeds that did not diverge (NaN with none)."""
        finite = [v for v in self.values.values() if math.isfinite(v)]
        return math.fsum(finite) / len(finite) if finite else math.nan


@dataclass(frozen=True)
class Delta:
    """A commit against the anchor, paired by seed on the seeds the two share (``n``): the
    mean paired difference (+ = better) and its two-sided ``1 − 2·alpha`` interval, the
    interval the one-sided test of the latest commit decides with (NaN below 2 seeds)."""

    index: int
    n: int
    mean: float
    ci_low: float
    ci_high: float


@dataclass(frozen=True)
class Drift:
    """The drift check of one cell. ``latest_diff``: mean paired Δ latest − anchor (+ = better)
    and its interval ``latest_ci`` at ``1 − 2·alpha``; ``slope`` and ``intercept``: the trend's
    least-squares line through the per-commit paired means (per commit position); ``p_latest``
    / ``p_trend``: raw one-sided p-values; ``p_*_holm``: after Holm across all cells;
    ``flagged``: either Holm p is at most ``alpha``; ``note``: why a test was not run (too few
    seeds or commits); ``deltas``: every commit from the anchor on against the anchor, paired
    (what the figure draws)."""

    cell: Cell
    anchor: int
    seeds: tuple[int, ...]
    latest_diff: float
    latest_ci: tuple[float, float]
    slope: float
    p_latest: float
    p_trend: float
    intercept: float = math.nan
    deltas: tuple[Delta, ...] = ()
    p_latest_holm: float = 1.0
    p_trend_holm: float = 1.0
    flagged: bool = False
    note: str = ""


@dataclass(frozen=True)
class CommitHistory:
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
        meta = read_json(manifest, limit=MAX_MANIFEST_BYTES, what="commit file")
    except FileNotFoundError:
        raise HistoryError(f"{manifest}: missing; every commit folder says which commit it is: "
                           f"{fix}") from None
    except (OSError, ValueError) as exc:   # ReportFormatError: not a regular file, not JSON
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
    values: dict[Cell, Mapping[int, float]] = {}
    metrics: dict[Cell, MetricSpec] = {}
    splits: dict[tuple[str, str], SplitFacts] = {}
    for path in sorted(reports_dir.rglob("*.json")):
        name = path.relative_to(reports_dir).as_posix().removesuffix(".json")
        data = read_json(path)
        specs, cells = cell_values_of(data, path)
        splits.update(((name, task), facts) for task, facts in split_facts(data).items())
        for (task, model), per_seed in cells.items():
            values[(name, task, model)] = per_seed
            metrics[(name, task, model)] = specs[task]
    if not values:
        raise HistoryError(f"{reports_dir}: no reports; copy what --graphnetz-report-dir wrote "
                           "for this commit there")
    return CommitRun(meta["commit"], date, str(meta.get("subject", "")), folder, values,
                     metrics, _load_verdicts(folder / VERDICTS), splits)


def cell_values_of(data: Mapping, path: Path) -> tuple[dict[str, MetricSpec],
                                                      dict[tuple[str, str], dict[int, float]]]:
    """The report ``data`` decoded from the file at ``path``: each task's metric and each
    (task, model) cell's per-seed values under the report's own epoch rule, as
    ``BenchmarkReport.from_json(path).values(task, model)`` gives them (straight from the JSON
    where :func:`~pytest_graphnetz.report.values_form.plain_cell_values` can, else through the
    report)."""
    plain = plain_cell_values(data, str(path))
    if plain is not None:
        return plain
    report = BenchmarkReport.from_dict(data, source=str(path))
    return dict(report.metrics), {
        (t, m): dict(zip(report.seeds, report.values(t, m).tolist(), strict=True))
        for t in report.tasks for m in report.models}


def _load_verdicts(path: Path) -> dict[Cell, str]:
    """The verdict of each cell in a --graphnetz-json file, keyed as the reports are."""
    try:
        data = read_json(path, what="verdict file")
        rows = data["rows"]
    except FileNotFoundError:
        return {}
    except (OSError, ValueError, KeyError, TypeError) as exc:
        raise HistoryError(f"{path}: not a --graphnetz-json verdict file ({exc})") from None
    out: dict[Cell, str] = {}
    for row in rows:
        if not isinstance(row, dict) or not row.get("task") or not row.get("model"):
            continue
        out.setdefault((_report_name(str(row.get("test", ""))), row["task"], row["model"]),
                       str(row.get("verdict", "")))
    return out


@functools.lru_cache(maxsize=4096)
def _report_name(test: str) -> str:
    """The report name (path under ``reports/`` without ``.json``) of a test's node id: every
    commit's verdict file names the same tests."""
    module, _, rest = test.partition("::")
    name = default_path("", Path(module).stem, rest.replace("::", ".")).as_posix()
    return name.removesuffix(".json")


def trajectories(runs: Sequence[CommitRun]) -> dict[Cell, tuple[Point, ...]]:
    """Each cell's points, one per commit whose reports hold it, in commit order."""
    out: dict[Cell, list[Point]] = {}
    for i, run in enumerate(runs):
        for cell, values in run.values.items():
            out.setdefault(cell, []).append(Point(i, values, run.verdicts.get(cell)))
    return {c: tuple(p) for c, p in out.items()}


# -- the drift check ------------------------------------------------------------------------------

def drift_check(series: Mapping[Cell, Sequence[Point]], *, anchor: int = 0,
                higher_is_better: Mapping[Cell, bool] | None = None,
                alpha: float = 0.05) -> dict[Cell, Drift]:
    """The drift check of every cell from commit ``anchor`` on (module docstring); a cell
    absent at the anchor is checked from its first commit."""
    from pytest_graphnetz.stats.decisions import holm

    out: dict[Cell, Drift] = {}
    for cell, points in series.items():
        sign = 1.0 if (higher_is_better or {}).get(cell, True) else -1.0
        points = [p for p in points if p.index >= anchor]
        out[cell] = _drift_one(cell, points, sign, alpha)
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


def paired_deltas(points: Sequence[Point], sign: float, alpha: float
                  ) -> tuple[list[Delta], list[float]]:
    """Every point against the first (the anchor), paired by seed on the seeds the two share
    (the paired t of :func:`pytest_graphnetz.stats.paired.paired_tests` at ``1 − 2·alpha``,
    commits that share the same seeds in one call), and each point's one-sided p of "worse
    than the anchor" (1 where every difference is 0; NaN below 2 shared seeds)."""
    from pytest_graphnetz.stats.paired import paired_tests

    finite = [{s: v for s, v in p.values.items() if math.isfinite(v)} for p in points]
    groups: dict[tuple[int, ...], list[int]] = {}
    for i, f in enumerate(finite):
        groups.setdefault(tuple(sorted(set(finite[0]) & set(f))), []).append(i)
    nan = math.nan
    deltas = [Delta(p.index, 0, nan, nan, nan) for p in points]
    p_worse = [nan] * len(points)
    for shared, rows in groups.items():
        if len(shared) < 2:
            deltas = [replace(d, n=len(shared)) if i in rows else d for i, d in enumerate(deltas)]
            continue
        A = sign * np.array([[finite[i][s] for s in shared] for i in rows])
        B = np.broadcast_to(sign * np.array([finite[0][s] for s in shared]), A.shape)
        results = paired_tests(A, B, confidence_level=1 - 2 * alpha)
        for i, a, b, r in zip(rows, A, B, results, strict=True):
            deltas[i] = Delta(points[i].index, len(shared), r.mean_diff, r.ci.low, r.ci.high)
            # The two-sided p of the t test, turned into the one-sided p of "mean < 0".
            p_worse[i] = (1.0 if not (a - b).any() else
                          r.p_value / 2 if r.mean_diff < 0 else 1 - r.p_value / 2)
    return deltas, p_worse


def _drift_one(cell: Cell, points: Sequence[Point], sign: float, alpha: float) -> Drift:
    from pytest_graphnetz.stats.slope import slope_test

    nan = math.nan
    if len(points) < 2:
        return Drift(cell, points[0].index if points else -1, (), nan, (nan, nan), nan, nan, nan,
                     note="one commit: nothing to compare")
    first = points[0]
    deltas, p_worse = paired_deltas(points, sign, alpha)
    latest = deltas[-1]
    latest_ci, p_latest, note = (latest.ci_low, latest.ci_high), p_worse[-1], ""
    if latest.n < 2:
        note = f"the latest commit shares {latest.n} seeds with the anchor"
    finite = [{s: v for s, v in p.values.items() if math.isfinite(v)} for p in points]
    seeds = sorted(set.intersection(*(set(f) for f in finite)))
    slope, intercept, p_trend = nan, nan, nan
    if len(seeds) >= 2:
        xs, means, previous = [], [], None
        base = np.array([finite[0][s] for s in seeds])
        for p, f in zip(points, finite, strict=True):
            vec = np.array([f[s] for s in seeds])
            if previous is not None and vec.tobytes() == previous.tobytes():
                continue   # unchanged, bit for bit: the same point again, not a new one
            previous = vec
            xs.append(p.index)
            means.append(float(sign * (vec - base).mean()))
        if len(xs) >= 3:
            fit = slope_test(xs, means)
            slope, intercept, p_trend = fit.slope, fit.intercept, fit.p_falling
        else:
            note = note or f"{len(xs)} distinct commits: no trend to test"
    else:
        note = note or (f"the anchor and every later commit share {len(seeds)} seeds; "
                        "the trend needs 2")
    return Drift(cell, first.index, tuple(seeds), latest.mean, latest_ci, slope, p_latest,
                 p_trend, intercept=intercept, deltas=tuple(deltas), note=note)


def load_history(directory: str | Path, *, anchor: str | None = None,
                 alpha: float = 0.05) -> CommitHistory:
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
    direction = {cell: runs[points[0].index].metrics[cell].higher_is_better
                 for cell, points in series.items()}
    return CommitHistory(tuple(runs), series, drift_check(series, anchor=index,
                                                    higher_is_better=direction, alpha=alpha),
                   index, alpha)


def drift_lines(history: CommitHistory) -> list[str]:
    """The drift check as the terminal prints it: one line per cell."""
    from pytest_graphnetz.base.text import format_table

    rows = []
    for cell, d in history.drift.items():
        rows.append([cell_label(cell), "DRIFT" if d.flagged else ("-" if d.note else "ok"),
                     fmt_signed(d.latest_diff), fmt_interval(*d.latest_ci),
                     fmt_p(d.p_latest_holm if not math.isnan(d.p_latest) else None),
                     fmt_signed(d.slope), fmt_p(d.p_trend_holm if not math.isnan(d.p_trend)
                                                else None), d.note])
    anchor = history.runs[history.anchor]
    level = f"{100 * (1 - 2 * history.alpha):.3g}%"
    head = (f"drift against the anchor {anchor.short} ({anchor.date:%Y-%m-%d}), "
            f"{len(history.runs)} commits, Holm over every test at alpha "
            f"{fmt_num(history.alpha)} (a flag is a Holm p at most alpha; each CI is the "
            f"unadjusted {level} one):")
    return [head, format_table(["cell", "drift", "latest Δ", f"{level} CI", "p (Holm)",
                                "trend/commit",
                                "p (Holm)", "note"], rows)]
