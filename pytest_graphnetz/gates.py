"""Gates: compare a candidate report with a baseline on paired per-seed evidence.

Each gate works on every (task, model) cell of the candidate: the seeds both reports ran are
paired **by seed value** (seed 3 with seed 3, whatever their order), the differences
``d_s = candidate − baseline`` (sign flipped for lower-is-better metrics) go to
:func:`pytest_graphnetz.stats.compare`, and the p-values of one call are Holm-corrected across
its tested cells (``assert_not_worse`` only: ``assert_better``/``assert_equivalent`` pass only
when every cell passes, an intersection-union test that needs no correction). A gate returns its
verdicts and raises ``AssertionError`` when one fails; the message carries what a reviewer needs
(cell, metric and direction, both means with intervals, paired Δ with the (1 − 2α) interval that
matches the one-sided decisions, p, test, margin, δ, n, MDE, and for an INCONCLUSIVE cell the
seeds that would decide it, planned for δ).

Pairing that would be fictional is refused (:class:`GateRefusal`): fewer than two shared
seeds, a task whose data or split fingerprint differs for the same seed, a metric mismatch.

Inside pytest, the plugin sets a :class:`GateObserver` for each test body: it supplies the
session's ``--graphnetz-alpha`` / ``--graphnetz-strict`` / ``--graphnetz-min-effect`` defaults
and collects every verdict for the terminal summary. Outside pytest the defaults are
``alpha=0.05``, ``strict=False`` and δ from the metric (:func:`default_min_effect`).
"""

from __future__ import annotations

import math
import os
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from . import stats
from .baselines import BaselineError, BaselineHandle, BaselineMissingError, load_baseline
from .history import MetricSpec
from .report import BenchmarkReport

BaselineLike = BenchmarkReport | BaselineHandle | str | os.PathLike

# "paired" is the default spelling of the paired t-test; every test here pairs by seed.
TESTS = {"paired": "paired-t", "paired-t": "paired-t", "wilcoxon": "wilcoxon",
          "permutation": "permutation", "bootstrap": "bootstrap"}
# Protocol entries that change the last digits but not the protocol: noted, never refused.
_ENVIRONMENT_KEYS = ("device", "threads", "versions")
# δ for metrics bounded in [0, 1] (accuracy, AUC, F1, MRR, Hits@K): one point.
DEFAULT_MIN_EFFECT = 0.01


class GateRefusal(ValueError):
    """The comparison cannot be made honestly (the message says which cell and why)."""


# -- the observer: how the pytest plugin hears about gates ------------------------------------


@dataclass(frozen=True)
class GateObserver:
    """Session defaults for gates run inside a test, and where their summary rows go."""

    alpha: float
    strict: bool
    record: Callable[[dict[str, str]], None]
    min_effect: float | None = None


_OBSERVER: ContextVar[GateObserver | None] = ContextVar("graphnetz_gate_observer", default=None)


@contextmanager
def observing(observer: GateObserver) -> Iterator[GateObserver]:
    """Within the block, gates default to ``observer``'s alpha/strict and report rows to it."""
    token = _OBSERVER.set(observer)
    try:
        yield observer
    finally:
        _OBSERVER.reset(token)


# -- verdicts ----------------------------------------------------------------------------------


@dataclass(frozen=True)
class CellVerdict:
    """The verdict of one (task, model) cell of a comparison gate.

    ``comparison`` is the :class:`~pytest_graphnetz.stats.Comparison` (paired Δ, CI, p, Holm
    p, MDE, seeds needed); ``baseline`` / ``candidate`` describe each side on the paired seeds
    (mean and interval, :class:`~pytest_graphnetz.stats.CellStats`); ``seeds`` are those seeds.
    """

    task: str
    model: str
    metric: str
    higher_is_better: bool
    gate: str                       # "not_worse" | "better" | "equivalent"
    comparison: Any                 # stats.Comparison
    baseline: Any                   # stats.CellStats over `seeds`
    candidate: Any                  # stats.CellStats over `seeds`
    seeds: tuple[int, ...]
    failed: bool
    notes: tuple[str, ...] = ()
    baseline_seeds: tuple[int, ...] = ()   # every seed the baseline holds
    refresh_command: str | None = None      # the command that rewrites this baseline

    @property
    def verdict(self) -> str:
        return _verdict_name(self.comparison.verdict)

    @property
    def cell(self) -> str:
        return f"{self.task}/{self.model}"

    def message(self) -> str:
        """The cell's evidence, as a reviewer reads it."""
        c, direction = self.comparison, "higher" if self.higher_is_better else "lower"
        p = f"p = {_p(c.p_value)}"
        if c.p_adjusted is not None and c.p_adjusted != c.p_value:
            p += f" (Holm-adjusted {_p(c.p_adjusted)})"
        flipped = ""
        if not self.higher_is_better:
            flipped = (f" (+ = better: the sign is flipped, {self.metric} candidate − baseline "
                       f"is {_signed(-c.mean_diff)})")
        delta = f", min_effect {_num(c.min_effect)}" if self.gate == "not_worse" else ""
        level = ""
        if c.mde_alpha is not None and c.mde_alpha < c.alpha:
            level = f" (at the Holm level {_num(c.mde_alpha)})"
        lines = [
            f"{self.cell} — {self.metric} ({direction} is better): {self.verdict}",
            f"  baseline  {_mean_ci(self.baseline)}",
            f"  candidate {_mean_ci(self.candidate)}",
            f"  paired Δ {_signed(c.mean_diff)}{flipped} ({_level(c)} CI {_ci(c.ci)}) over "
            f"{c.n} seeds {_seed_list(self.seeds)}; {p}; test {c.test}, margin "
            f"{_num(c.margin)}{delta}, alpha {_num(c.alpha)}",
            f"  minimum detectable effect at n={c.n}: {_num(c.mde)}{level}",
            *self._advice(),
        ]
        lines += [f"  note: {n}" for n in (*self.notes, *c.notes)]
        return "\n".join(lines)

    def _advice(self) -> list[str]:
        """What the reviewer can do about this verdict (lines of the message)."""
        c = self.comparison
        if c.below_min_effect:
            return [f"  the drop is significant but smaller than min_effect {_num(c.min_effect)} "
                    f"(the {_level(c)} CI lies above {_num(-c.min_effect)}); if a drop this "
                    f"size is acceptable, accept it with margin={_accepting_margin(c)} (margin "
                    "must stay below min_effect)"]
        if self.verdict == "BETTER":
            return [f"  the candidate is better than the baseline: refresh the baseline to keep "
                    f"the gain ({_refresh_hint(self.refresh_command)})"]
        if self.verdict != "INCONCLUSIVE":
            return []
        if self.gate != "not_worse":
            if not c.seeds_needed:
                return ["  no feasible number of seeds would decide it at this margin"]
            return [f"  {c.seeds_needed} seeds would decide it "
                    f"(rerun with --graphnetz-seeds={c.seeds_needed})", *self._unpaired_advice()]
        if c.min_effect is None:
            return [f"  no min_effect for {self.metric}, so NOT WORSE means the lower bound lies "
                    f"above −margin and no seeds can be planned: set `min_effect` (δ, the "
                    f"smallest regression that matters, in {self.metric} units; "
                    "--graphnetz-min-effect)"]
        n = c.seeds_needed
        lines = [f"  the {_level(c)} CI {_ci(c.ci)} reaches below {_num(-c.min_effect)} (a drop "
                 f"that matters is not ruled out) and above {_num(0.0 - c.margin)} (no "
                 "significant drop either)"]
        if n:
            lines.append(
                f"  about {n} paired seeds would decide it: at the observed sd of Δ "
                f"({_num(c.sd_diff)}), {n} seeds read no change as NOT WORSE and a drop of "
                f"{_num(c.min_effect)} as REGRESSED, each with probability ≥ {c.power:g} "
                f"(rerun with --graphnetz-seeds={n})")
            lines += self._unpaired_advice()
        return lines

    def _unpaired_advice(self) -> list[str]:
        """When the planned seeds 0..n-1 are not all in the baseline, more candidate seeds
        cannot pair: the baseline must be refreshed with them first."""
        n = self.comparison.seeds_needed
        if not n or not self.baseline_seeds:
            return []
        missing = [s for s in range(n) if s not in self.baseline_seeds]
        if not missing:
            return []
        return [f"  but the baseline has only seeds {_seed_list(self.baseline_seeds)}: candidate "
                f"seeds beyond them cannot pair. Refresh the baseline with {n} seeds first, from "
                f"the baseline's code ({_refresh_hint(self.refresh_command, n)})"]

    def row(self) -> dict[str, str]:
        """The summary-table row (plain strings: it travels through xdist and JUnit XML)."""
        c = self.comparison
        p = c.p_adjusted if c.p_adjusted is not None else c.p_value
        verdict = self.verdict + (": refresh baseline" if self.verdict == "BETTER" else "")
        return {"cell": self.cell, "metric": _metric(self.metric, self.higher_is_better),
                "baseline": _mean_ci(self.baseline, short=True),
                "candidate": _mean_ci(self.candidate, short=True),
                "delta": f"{_signed(c.mean_diff)} {_ci(c.ci)} ({_level(c)})", "p": _p(p),
                "verdict": verdict, "mde": _num(c.mde), "n": str(c.n), "gate": self.gate}


@dataclass(frozen=True)
class WidthVerdict:
    """One cell of :func:`assert_ci_width`: its interval, width, and the seeds to narrow it."""

    task: str
    model: str
    metric: str
    higher_is_better: bool
    stats: Any                      # stats.CellStats
    width: float
    max_width: float
    seeds_needed: int | None
    failed: bool

    @property
    def cell(self) -> str:
        return f"{self.task}/{self.model}"

    @property
    def verdict(self) -> str:
        return "TOO WIDE" if self.failed else "OK"

    def message(self) -> str:
        s = self.stats
        more = (f"about {self.seeds_needed} seeds would bring it under "
                f"(rerun with --graphnetz-seeds={self.seeds_needed})" if self.seeds_needed
                else "more seeds would not help (no spread estimate)")
        return (f"{self.cell} — {self.metric}: {s.method} {s.confidence_level:.0%} interval "
                f"{_ci(s.ci)} is {_num(self.width)} wide, over the maximum "
                f"{_num(self.max_width)} (n={s.n}, mean {_num(s.mean)}); {more}")

    def row(self) -> dict[str, str]:
        return {"cell": self.cell, "metric": _metric(self.metric, self.higher_is_better),
                "baseline": "", "candidate": _mean_ci(self.stats, short=True),
                "delta": f"width {_num(self.width)} (max {_num(self.max_width)})", "p": "",
                "verdict": self.verdict, "mde": "", "n": str(self.stats.n), "gate": "ci_width"}


# -- the gates -----------------------------------------------------------------------------------


def assert_not_worse(report: BenchmarkReport, baseline: BaselineLike, *, test: str = "paired",
                     margin: float = 0.0, min_effect: float | None = None,
                     alpha: float | None = None, strict: bool | None = None,
                     rng: Any = None) -> list[CellVerdict]:
    """Fail on paired evidence that ``report`` is worse than ``baseline`` by more than ``margin``.

    Per cell, d = candidate − baseline (sign flipped for lower-is-better metrics), the first of:

    - REGRESSED (fails): the one-sided test rejects "mean d ≥ −margin" (Holm across the cells
      actually tested; IDENTICAL cells are not in the family). A significant drop smaller than
      δ is REGRESSED too; the message says how to accept it (``margin``);
    - BETTER (passes): the one-sided test rejects "mean d ≤ +margin"; a refresh keeps the gain;
    - NOT WORSE (passes): the one-sided (1 − α) lower bound of mean d lies above −δ;
    - INCONCLUSIVE (passes, fails with ``strict``); IDENTICAL: every d_s exactly 0.

    δ = ``min_effect``, the smallest regression that matters, in metric units, > ``margin``;
    default the session's ``--graphnetz-min-effect``, else :func:`default_min_effect` (0.01 for
    metrics bounded in [0, 1]; none for MAE/RMSE/loss, where NOT WORSE falls back to −margin).
    ``alpha`` / ``strict`` default to 0.05 / False, or the session's options in pytest.
    Returns one :class:`CellVerdict` per candidate cell.
    """
    return _comparison_gate("not_worse", report, baseline, test=test, margin=margin,
                            min_effect=min_effect, alpha=alpha, strict=strict, rng=rng)


def assert_better(report: BenchmarkReport, baseline: BaselineLike, *, test: str = "paired",
                  margin: float = 0.0, alpha: float | None = None, strict: bool | None = None,
                  rng: Any = None) -> list[CellVerdict]:
    """Pass only on paired evidence that every cell improved on ``baseline`` by over ``margin``.

    Each cell is tested at ``alpha``, without Holm: the gate passes only when every cell passes
    (an intersection-union test, whose level is ``alpha`` as it stands)."""
    return _comparison_gate("better", report, baseline, test=test, margin=margin,
                            alpha=alpha, strict=strict, rng=rng)


def assert_equivalent(report: BenchmarkReport, baseline: BaselineLike, *, margin: float,
                      test: str = "paired", alpha: float | None = None,
                      strict: bool | None = None, rng: Any = None) -> list[CellVerdict]:
    """Pass only when every cell's paired mean difference lies within ±``margin`` (TOST).

    Like :func:`assert_better`, an intersection-union test: every cell at ``alpha``, no Holm."""
    if not margin > 0:
        raise ValueError(f"assert_equivalent needs `margin` > 0 (the equivalence bound), "
                         f"got {margin!r}")
    return _comparison_gate("equivalent", report, baseline, test=test, margin=margin,
                            alpha=alpha, strict=strict, rng=rng)


def assert_ci_width(report: BenchmarkReport, max_width: float, *,
                    method: str | None = None) -> list[WidthVerdict]:
    """Fail when a cell's interval (``method``, default the report's) is wider than ``max_width``.

    The message says how many seeds would bring each wide interval under ``max_width``.
    Returns one :class:`WidthVerdict` per cell.
    """
    if not max_width > 0:
        raise ValueError(f"`max_width` must be > 0, got {max_width!r}")
    verdicts = []
    for task in report.tasks:
        spec = report.metric(task)
        for model in report.models:
            cell = _describe(report.values(task, model), report, method=method)
            width = float(cell.ci.high - cell.ci.low)
            failed = not width <= max_width   # a NaN width (n < 2) fails too
            needed = None
            if failed and math.isfinite(cell.std) and cell.std > 0:
                needed = stats.seeds_for_width(cell.std, max_width,
                                               confidence_level=report.confidence_level)
            verdicts.append(WidthVerdict(task, model, spec.name, spec.higher_is_better, cell,
                                         width, float(max_width), needed, failed))
    _finish("assert_ci_width", verdicts, header=f"interval wider than {_num(max_width)}")
    return verdicts


# -- the work --------------------------------------------------------------------------------------


def _comparison_gate(gate: str, report: BenchmarkReport, baseline: BaselineLike, *, test: str,
                     margin: float, alpha: float | None, strict: bool | None,
                     rng: Any, min_effect: float | None = None) -> list[CellVerdict]:
    observer = _OBSERVER.get()
    alpha = alpha if alpha is not None else (observer.alpha if observer else 0.05)
    strict = strict if strict is not None else (observer.strict if observer else False)
    if min_effect is None and observer is not None:
        min_effect = observer.min_effect
    if test not in TESTS:
        raise ValueError(f"`test` must be one of {sorted(TESTS)} (every gate test is paired by "
                         f"seed), got {test!r}")
    test = TESTS[test]
    if isinstance(baseline, BaselineHandle) and baseline.update:
        return _refresh(gate, report, baseline, test=test, margin=margin, alpha=alpha, rng=rng)
    source, base = _load(baseline)
    command = baseline.update_command if isinstance(baseline, BaselineHandle) else None
    verdicts = compare_reports(report, base, gate=gate, test=test, margin=margin,
                               min_effect=min_effect, alpha=alpha, strict=strict, source=source,
                               rng=rng, refresh_command=command)
    name = f"assert_{gate}"
    _finish(name, verdicts, header=f"{_TITLE[gate]} against {source} ({_config(verdicts)})")
    return verdicts


_TITLE = {"not_worse": "paired regression gate", "better": "paired improvement gate",
          "equivalent": "paired equivalence gate (TOST)"}
# What each gate lets through (``strict`` also fails INCONCLUSIVE).
_PASSES = {"not_worse": {"NOT WORSE", "BETTER", "IDENTICAL", "INCONCLUSIVE"}, "better": {"BETTER"},
           "equivalent": {"EQUIVALENT", "IDENTICAL"}}


def compare_reports(report: BenchmarkReport, baseline: BenchmarkReport, *, gate: str = "not_worse",
                    test: str = "paired-t", margin: float = 0.0, min_effect: float | None = None,
                    alpha: float = 0.05, strict: bool = False, source: str = "the baseline",
                    rng: Any = None, refresh_command: str | None = None) -> list[CellVerdict]:
    """Every candidate cell of ``report`` against ``baseline`` (``not_worse``: Holm across the
    tested cells); raises nothing but :class:`GateRefusal` / :class:`BaselineMissingError` (the
    gates decide what fails), and ``ValueError`` for a ``min_effect`` not above ``margin``.
    ``min_effect`` None: each task's :func:`default_min_effect`.
    """
    if gate == "not_worse" and min_effect is not None and not min_effect > margin:
        raise ValueError(
            f"`min_effect` ({min_effect!r}) must be larger than `margin` ({margin!r}): δ is the "
            "smallest regression that matters, margin the drop that is tolerated; raise "
            "min_effect (--graphnetz-min-effect) or lower the margin"
        )
    _check_cells(report, baseline, source)
    seeds = _shared_seeds(report, baseline, source)
    _check_metrics(report, baseline, source)
    _check_fingerprints(report, baseline, seeds, source)
    notes = _environment_notes(report, baseline) + _unpaired_notes(report, baseline, seeds,
                                                                    refresh_command)
    cand_idx = [report.seeds.index(s) for s in seeds]
    base_idx = [baseline.seeds.index(s) for s in seeds]
    cells, specs = [], []
    for task in report.tasks:
        spec = report.metric(task)
        for model in report.models:
            specs.append((task, model, spec))
            cell = {"candidate": report.values(task, model)[cand_idx],
                    "baseline": baseline.values(task, model)[base_idx],
                    "higher_is_better": spec.higher_is_better,
                    "label": f"{task}/{model}", "seeds": seeds}
            if gate == "not_worse":
                cell["min_effect"] = (min_effect if min_effect is not None
                                      else default_min_effect(spec, margin))
            cells.append(cell)
    comparisons = stats.compare_many(cells, kind=gate, test=test, margin=margin, alpha=alpha,
                                     rng=rng)
    verdicts = []
    for (task, model, spec), cell, comp in zip(specs, cells, comparisons, strict=True):
        name = _verdict_name(comp.verdict)
        failed = name not in _PASSES[gate] or (strict and name == "INCONCLUSIVE")
        verdicts.append(CellVerdict(
            task, model, spec.name, spec.higher_is_better, gate, comp,
            _describe(cell["baseline"], baseline), _describe(cell["candidate"], report),
            tuple(seeds), failed, notes, tuple(baseline.seeds), refresh_command))
    return verdicts


def default_min_effect(spec: MetricSpec, margin: float = 0.0) -> float | None:
    """δ when none is given: :data:`DEFAULT_MIN_EFFECT` (one point) for a metric bounded in
    [0, 1] whose ``margin`` is below it; None otherwise (MAE, RMSE, loss have no natural
    scale: NOT WORSE then falls back to −margin and the message asks for ``min_effect``)."""
    return DEFAULT_MIN_EFFECT if spec.unit_interval and margin < DEFAULT_MIN_EFFECT else None


def _refresh(gate: str, report: BenchmarkReport, handle: BaselineHandle, *, test: str,
             margin: float, alpha: float, rng: Any) -> list[CellVerdict]:
    """``--graphnetz-update-baselines``: write the candidate, unless the ratchet refuses.

    The ratchet compares the candidate with the baseline it would replace (a not-worse gate on
    their shared cells): a REGRESSED cell, an unreadable baseline or a pairing that cannot be
    made refuses the update unless ``handle.force``. Returns the ratchet's verdicts.
    """
    old, verdicts = None, []
    try:
        old = handle.load() if handle.exists() else None
        if old is not None:
            verdicts = _ratchet(report, old, test=test, margin=margin, alpha=alpha,
                                source=str(handle.path), rng=rng)
    except (BaselineError, GateRefusal):
        if not handle.force:
            raise
    regressed = [v for v in verdicts if v.verdict == "REGRESSED"]
    if regressed and not handle.force:
        _record(verdicts, status="REFUSED")
        raise AssertionError(
            f"refusing to update baseline {handle.path}: the candidate is REGRESSED against it "
            f"in {len(regressed)} cell(s) (the ratchet stops slow drift).\n\n"
            + "\n\n".join(v.message() for v in regressed)
            + "\n\nIf the regression is intended, rerun with "
            + (f"`{handle.update_command} --graphnetz-force`" if handle.update_command
               else "--graphnetz-force")
        )
    try:
        handle.write(report, merge=old is not None, current=old)
    except BaselineError:
        if not handle.force:
            raise
        handle.write(report, merge=False)
    _record(verdicts, status="UPDATED")
    if not verdicts:
        _record_written(report, gate)
    return verdicts


def _ratchet(report: BenchmarkReport, old: BenchmarkReport, **kwargs: Any) -> list[CellVerdict]:
    """The not-worse verdicts of ``report`` against ``old`` on the cells both have."""
    tasks = [t for t in report.tasks if t in old.tasks]
    models = [m for m in report.models if m in old.models]
    if not (tasks and models):
        return []
    return compare_reports(report.subset(tasks=tasks, models=models),
                           old.subset(tasks=tasks, models=models), gate="not_worse", **kwargs)


def _record_written(report: BenchmarkReport, gate: str) -> None:
    observer = _OBSERVER.get()
    if observer is None:
        return
    for task in report.tasks:
        spec = report.metric(task)
        for model in report.models:
            cell = _describe(report.values(task, model), report)
            observer.record({"cell": f"{task}/{model}",
                             "metric": _metric(spec.name, spec.higher_is_better),
                             "candidate": _mean_ci(cell, short=True), "verdict": "WRITTEN",
                             "n": str(cell.n), "gate": gate, "baseline": "(new)"})


# -- checks that refuse --------------------------------------------------------------------------


def _load(baseline: BaselineLike) -> tuple[str, BenchmarkReport]:
    if isinstance(baseline, BenchmarkReport):
        return "the baseline report", baseline
    if isinstance(baseline, BaselineHandle):
        return str(baseline.path), baseline.load()
    if isinstance(baseline, (str, os.PathLike)):
        return str(baseline), load_baseline(Path(baseline))
    raise TypeError(f"`baseline` must be a BenchmarkReport, a path or a baseline handle, "
                    f"got {type(baseline).__name__}")


def _shared_seeds(report: BenchmarkReport, baseline: BenchmarkReport, source: str) -> list[int]:
    seeds = [s for s in report.seeds if s in baseline.seeds]
    if len(seeds) < 2:
        raise GateRefusal(
            f"cannot pair the candidate with {source}: they share {len(seeds)} seed(s) "
            f"{seeds} (candidate seeds {_seed_list(report.seeds)}, baseline seeds "
            f"{_seed_list(baseline.seeds)}); a paired test needs at least 2. Run the seeds the "
            "baseline has (--graphnetz-seeds), or refresh the baseline."
        )
    return seeds


def _check_cells(report: BenchmarkReport, baseline: BenchmarkReport, source: str) -> None:
    missing = [f"{t}/{m}" for t in report.tasks for m in report.models
               if t not in baseline.tasks or m not in baseline.models]
    if missing:
        raise BaselineMissingError(
            f"{source} has no baseline for cell(s) {missing} (it has tasks "
            f"{list(baseline.tasks)}, models {list(baseline.models)}); add them with "
            "`pytest --graphnetz-update-baselines` (merges cell by cell)"
        )


def _check_metrics(report: BenchmarkReport, baseline: BenchmarkReport, source: str) -> None:
    for task in report.tasks:
        a, b = report.metric(task), baseline.metric(task)
        if (a.name, a.higher_is_better) != (b.name, b.higher_is_better):
            raise GateRefusal(
                f"task {task!r}: the candidate reports {a.name} ({a.direction}) but {source} "
                f"has {b.name} ({b.direction}); two different metrics cannot be paired. "
                "Refresh the baseline if the metric change is intended."
            )


def _check_fingerprints(report: BenchmarkReport, baseline: BenchmarkReport, seeds: Sequence[int],
                        source: str) -> None:
    for task in report.tasks:
        changed = [s for s in seeds
                   if None not in (fa := report.data_fingerprint(task, s),
                                   fb := baseline.data_fingerprint(task, s)) and fa != fb]
        if changed:
            raise GateRefusal(
                f"task {task!r}: its data or split differs from {source} for the same seed(s) "
                f"{changed}, so a per-seed pairing would be fictional. If the data change is "
                "intended, refresh the baseline (--graphnetz-update-baselines --graphnetz-force)."
            )


def _unpaired_notes(report: BenchmarkReport, baseline: BenchmarkReport, seeds: Sequence[int],
                    refresh_command: str | None) -> tuple[str, ...]:
    """Candidate seeds the baseline lacks are left out: say so, and how to pair them."""
    extra = [s for s in report.seeds if s not in seeds]
    if not extra:
        return ()
    return (f"candidate seed(s) {_seed_list(extra)} have no baseline counterpart (the baseline "
            f"holds {_seed_list(baseline.seeds)}) and are not used; to pair them, refresh the "
            f"baseline with those seeds from the baseline's code "
            f"({_refresh_hint(refresh_command, max(report.seeds) + 1)})",)


def _environment_notes(report: BenchmarkReport, baseline: BenchmarkReport) -> tuple[str, ...]:
    notes = []
    for key in _ENVIRONMENT_KEYS:
        a, b = report.protocol.get(key), baseline.protocol.get(key)
        if a is not None and b is not None and a != b:
            notes.append(f"{key} differs (baseline {_brief(b, a)}, candidate {_brief(a, b)}): "
                         "the protocol is the same, the last digits may not be")
    return tuple(notes)


def _brief(value: Any, other: Any) -> str:
    # For version dicts, show only the entries that differ.
    if isinstance(value, dict) and isinstance(other, dict):
        return ", ".join(f"{k} {value.get(k)}" for k in sorted(value)
                         if value.get(k) != other.get(k)) or "-"
    return str(value)


def gate_table(verdicts: Sequence[CellVerdict | WidthVerdict], *, markdown: bool = False) -> str:
    """The verdicts as the summary table (plain text, or GitHub Markdown)."""
    from .text import format_table, markdown_table

    rows = [v.row() for v in verdicts]
    body = [[r.get(c, "") for c in TABLE_COLUMNS] for r in rows]
    return (markdown_table if markdown else format_table)(TABLE_HEADERS, body)


# Row keys and headers of the gate table (the plugin's session summary adds the test).
TABLE_COLUMNS = ("cell", "metric", "baseline", "candidate", "delta", "p", "verdict", "mde", "n")
TABLE_HEADERS = ("Cell", "Metric", "Baseline", "Candidate", "Paired Δ (+ = better) [CI]", "p",
                 "Verdict", "MDE", "n")


# -- failing, recording, formatting --------------------------------------------------------------


def _finish(name: str, verdicts: Sequence[CellVerdict | WidthVerdict], *, header: str) -> None:
    _record(verdicts)
    failed = [v for v in verdicts if v.failed]
    if failed:
        raise AssertionError(
            f"{name}: {len(failed)} of {len(verdicts)} cell(s) failed ({header})\n\n"
            + "\n\n".join(v.message() for v in failed)
        )


def _record(verdicts: Sequence[CellVerdict | WidthVerdict], status: str | None = None) -> None:
    observer = _OBSERVER.get()
    if observer is None:
        return
    for v in verdicts:
        row = v.row()
        if status:
            row["verdict"] = f"{status} ({v.verdict})"
        observer.record(row)


def _config(verdicts: Sequence[CellVerdict]) -> str:
    c = verdicts[0].comparison
    text = f"{c.test}, alpha {_num(c.alpha)}, margin {_num(c.margin)}"
    if c.kind != "not_worse":
        return text + (", every cell must pass (no Holm needed)" if len(verdicts) > 1 else "")
    effects = sorted({_num(v.comparison.min_effect) for v in verdicts})
    text += f", min_effect {'/'.join(effects)}"
    tested = sum(v.verdict != "IDENTICAL" for v in verdicts)
    return text + (f", Holm across the {tested} tested cells" if tested > 1 else "")


def _describe(x: np.ndarray, report: BenchmarkReport, *, method: str | None = None) -> Any:
    """``x`` described by ``method`` (default the report's) at the report's level, bootstrap
    draws from a fixed seed: the same interval every time the cell is shown."""
    return stats.describe(x, method=method or report.ci_method,
                          confidence_level=report.confidence_level,
                          rng=np.random.default_rng(0))


def _verdict_name(verdict: Any) -> str:
    return str(getattr(verdict, "value", verdict))


def _metric(name: str, higher_is_better: bool) -> str:
    return f"{name} {'↑' if higher_is_better else '↓'}"


def _num(x: float | None) -> str:
    if x is None or (isinstance(x, float) and math.isnan(x)):
        return "n/a"
    return f"{float(x):.4g}"


def _level(c: Any) -> str:
    """The label of a comparison's interval: "90%" at alpha 0.05."""
    return f"{100 * c.confidence_level:.3g}%"


def _accepting_margin(c: Any) -> str:
    """A margin that accepts a drop smaller than δ: the magnitude of the interval's lower end,
    rounded up to two significant digits while that stays below δ."""
    x = -c.ci.low
    exponent = math.floor(math.log10(x)) - 1 if x > 0 else 0
    up = math.ceil(x / 10.0**exponent) * 10.0**exponent
    return _num(up if up < c.min_effect else x)


def _refresh_hint(command: str | None, n_seeds: int | None = None) -> str:
    seeds = f" --graphnetz-seeds={n_seeds}" if n_seeds else ""
    if command:
        return f"`{command}{seeds}`"
    return f"`pytest --graphnetz-update-baselines{seeds}` on the gate's test"


def _signed(x: float) -> str:
    return "n/a" if math.isnan(x) else f"{float(x) + 0.0:+.4g}"


def _p(x: float | None) -> str:
    if x is None or math.isnan(x):
        return "n/a"
    return f"{x:.2g}" if x < 0.01 else f"{x:.3f}"


def _ci(ci: Any) -> str:
    return f"[{_num(ci.low)}, {_num(ci.high)}]"


def _mean_ci(cell: Any, *, short: bool = False) -> str:
    text = f"{_num(cell.mean)} {_ci(cell.ci)}"
    if short:
        return text
    extra = f", {cell.n_diverged} diverged" if getattr(cell, "n_diverged", 0) else ""
    return f"{text} ({cell.method} {cell.confidence_level:.0%} CI, n={cell.n}{extra})"


def _seed_list(seeds: Sequence[int]) -> str:
    seeds = list(seeds)
    if len(seeds) > 2 and seeds == list(range(seeds[0], seeds[-1] + 1)):
        return f"{seeds[0]}-{seeds[-1]}"
    return ",".join(str(s) for s in seeds)
