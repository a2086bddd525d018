"""Verdicts: what a gate says about each cell, and how it reads.

One constructor per kind of verdict (:class:`CellVerdict` for the comparison gates, fixed or
adaptive seeds, :class:`WidthVerdict` for ``assert_ci_width``), one pass rule per gate
(:data:`PASSES`, :func:`failed_verdict`), one δ default (:func:`default_min_effect`), the
refusal (:class:`GateRefusal`), and the formatting every message, table row and summary shares.
"""

from __future__ import annotations

import math
import shlex
from collections.abc import Sequence
from dataclasses import dataclass, replace

import numpy as np

from . import stats
from .history import CLIPPED, MetricSpec, clip_to_metric, in_unit_interval
from .report import BenchmarkReport
from .stats import Verdict
from .stats.intervals import describe
from .text import (
    ceil_significant,
    fmt_fixed,
    fmt_interval,
    fmt_level,
    fmt_num,
    fmt_p,
    fmt_signed,
    seed_trainings,
)

# δ for metrics bounded in [0, 1] (accuracy, AUC, F1, MRR, Hits@K): one point.
DEFAULT_MIN_EFFECT = 0.01


class GateRefusal(ValueError):
    """The comparison cannot be made honestly (the message says which cell and why).

    ``reason`` is the one-line reason for the summary table; ``cells`` the (task, model) cells
    it concerns (None: every cell of the call); ``unpaired`` the before/after numbers of those
    cells (:class:`UnpairedCell`) when they can still be shown, unpaired, without a verdict.
    """

    def __init__(self, message: str, *, reason: str | None = None,
                 cells: Sequence[tuple[str, str]] | None = None,
                 unpaired: Sequence[UnpairedCell] = ()) -> None:
        super().__init__(message)
        self.reason = reason or message.split("\n", 1)[0]
        self.cells = None if cells is None else list(cells)
        self.unpaired = tuple(unpaired)


@dataclass(frozen=True)
class CellVerdict:
    """The verdict of one (task, model) cell of a comparison gate.

    ``comparison`` is the :class:`~pytest_graphnetz.stats.Comparison` (paired Δ, CI, p, Holm
    p, MDE, seeds needed); ``baseline`` / ``candidate`` describe each side on the paired seeds
    (mean and interval, :class:`~pytest_graphnetz.stats.CellStats`); ``seeds`` are those seeds.
    ``stop``: for an adaptive report, where the cell's schedule stopped
    (:class:`Stop`); None for fixed seeds.
    """

    task: str
    model: str
    metric: str
    higher_is_better: bool
    gate: str                       # "not_worse" | "better" | "equivalent"
    comparison: stats.Comparison
    baseline: stats.CellStats       # over `seeds`
    candidate: stats.CellStats      # over `seeds`
    seeds: tuple[int, ...]
    failed: bool
    notes: tuple[str, ...] = ()
    baseline_seeds: tuple[int, ...] = ()   # every seed the baseline holds
    refresh_command: str | None = None      # the command that rewrites this baseline
    stop: Stop | None = None                # adaptive seeds: where the cell stopped
    table_note: str = ""                    # the summary table's Note for a passing cell
    folds: int | None = None                # k of a k-fold CV task (corrected resampled t)
    # The α the gate call was given; comparison.alpha is the level the reported look decides
    # at (less than α on the schedule). None: the same.
    call_alpha: float | None = None
    look: LookNote | None = None            # not-worse cells: the look it is reported at

    @property
    def verdict(self) -> stats.Verdict:
        return self.comparison.verdict

    @property
    def cell(self) -> str:
        return f"{self.task}/{self.model}"

    def message(self) -> str:
        """The cell's evidence, as a reviewer reads it."""
        c, direction = self.comparison, "higher" if self.higher_is_better else "lower"
        p = f"p = {fmt_p(c.p_value)}"
        if c.p_adjusted is not None and c.p_adjusted != c.p_value:
            p += f" (Holm-adjusted {fmt_p(c.p_adjusted)})"
        flipped = ""
        if not self.higher_is_better:
            flipped = (f" (+ = better: the sign is flipped, {self.metric} candidate − baseline "
                       f"is {fmt_signed(-c.mean_diff)})")
        delta = f", min_effect {fmt_num(c.min_effect)}" if self.gate == "not_worse" else ""
        level = ""
        if c.mde_alpha is not None and c.mde_alpha < c.alpha:
            # the level is REGRESSED's, not a second MDE (issue 33)
            level = f" (REGRESSED tested at the Holm level α = {fmt_num(c.mde_alpha)})"
        # Adaptive: the MDE is a one-look t test's at the seeds used, not the sequential design's.
        mde_of = " of a fixed-n test" if self.stop is not None else ""
        lines = [
            f"{self.cell} — {self.metric} ({direction} is better): {self.verdict}",
            f"  baseline  {fmt_mean_ci(self.baseline)}",
            f"  candidate {fmt_mean_ci(self.candidate)}",
            f"  paired Δ {fmt_signed(c.mean_diff)}{flipped} ({self.ci_label()} CI {fmt_ci(c.ci)}"
            f"{_level_note(c)}) over "
            f"{c.n} seeds {seed_list(self.seeds)}; {p}; test {c.test}, margin "
            f"{fmt_num(c.margin)}{delta}, alpha {fmt_num(c.alpha)}",
            f"  minimum detectable effect{mde_of} at n={c.n}: {fmt_num(c.mde)}{level}",
        ]
        if self.stop is not None:   # adaptive seeds: where the schedule stopped this cell
            lines.append(f"  {self.stop.describe()}")
        if self.look is not None:
            lines.append(f"  {self.look.explain()}")
        lines += self._advice()
        lines += [f"  note: {n}" for n in (*self.notes, *c.notes)]
        return "\n".join(lines)

    def _advice(self) -> list[str]:
        """What the reviewer can do about this verdict (lines of the message)."""
        c, delta = self.comparison, self.comparison.min_effect
        if c.below_min_effect and delta is not None:
            return [f"  the drop is significant but smaller than min_effect "
                    f"{fmt_num(delta)} "
                    f"(the {ci_level(c)} CI lies above {fmt_num(-delta)}); if a drop this "
                    f"size is acceptable, accept it with margin={_accepting_margin(c.ci, delta)} "
                    "(margin must stay below min_effect)"]
        if self.verdict == Verdict.BETTER:
            return [f"  the candidate is better than the baseline: refresh the baseline to keep "
                    f"the gain ({refresh_hint(self.refresh_command)})"]
        if self.verdict != Verdict.INCONCLUSIVE:
            return []
        if self.gate != "not_worse":
            if not c.seeds_needed:
                return ["  no feasible number of seeds would decide it at this margin"]
            return [f"  {c.seeds_needed} seeds would decide it "
                    f"(rerun with {self._seeds_option(c.seeds_needed)})",
                    *self._unpaired_advice()]
        if c.min_effect is None:
            return [f"  no min_effect for {self.metric}, so NOT WORSE means the lower bound lies "
                    f"above −margin and no seeds can be planned: set `min_effect` (δ, the "
                    f"smallest regression that matters, in {self.metric} units; "
                    "--graphnetz-min-effect)"]
        n = c.seeds_needed
        lines = [f"  the {ci_level(c)} CI {fmt_ci(c.ci)} reaches below "
                 f"{fmt_num(-c.min_effect)} (a drop "
                 f"that matters is not ruled out) and above {fmt_num(0.0 - c.margin)} (no "
                 "significant drop either)"]
        if self.folds is not None:
            return lines + self._fold_advice(n, self.folds)
        if n:
            lines.append(
                f"  about {n} paired seeds would decide it: at the observed sd of Δ "
                f"({fmt_num(c.sd_diff)}), {n} seeds read no change as NOT WORSE and a drop of "
                f"{fmt_num(c.min_effect)} as REGRESSED, each with probability ≥ {c.power:g} "
                f"(rerun with {self._seeds_option(n)})")
            lines += self._unpaired_advice()
        return lines

    def _fold_advice(self, n: int | None, k: int) -> list[str]:
        """The plan of a ``k``-fold CV cell, at the per-fold sd of Δ (the comparison's sd is
        the one the correction inflated), or why no seed count decides it and what would."""
        from .stats.heldout import fold_ratio
        from .stats.planning import fold_min_effect_floor

        c = self.comparison
        rho = fold_ratio(k)
        sd = c.sd_diff / math.sqrt(1 + c.n * rho)
        if n:
            return [f"  about {n} paired seeds would decide it: at the observed per-fold sd of Δ "
                    f"({fmt_num(sd)}; the corrected resampled se is sqrt(1/J + 1/{k - 2}) times "
                    f"it on J seeds), {n} seeds read no change as NOT WORSE and a drop of "
                    f"{fmt_num(c.min_effect)} as REGRESSED, each with probability ≥ {c.power:g} "
                    f"(rerun with {self._seeds_option(n)})", *self._unpaired_advice()]
        floor = math.sqrt(rho) * sd
        least = fold_min_effect_floor(sd, folds=k, margin=c.margin, alpha=c.alpha,
                                      alpha_regressed=c.mde_alpha or c.alpha, power=c.power)
        return [f"  no number of seeds would decide it: on {k}-fold cross-validation the "
                f"corrected resampled se never falls below sqrt(1/{k - 2}) × the per-fold sd of "
                f"Δ ({fmt_num(sd)}), i.e. {fmt_num(floor)}, however many seeds run, and "
                f"min_effect {fmt_num(c.min_effect)} needs it well below that. What would "
                f"decide it: a min_effect of more than {fmt_num(least)} (the least any seed "
                "count resolves with probability "
                f"≥ {c.power:g}), or a smaller per-fold spread (more test data per fold)"]

    def _seeds_option(self, n: int) -> str:
        """The option that runs ``n`` seeds (adaptive runs keep their MIN: ``MIN..n``)."""
        return seeds_option(n, None if self.stop is None else self.stop.min_seeds)

    def _unpaired_advice(self) -> list[str]:
        """When the planned seeds 0..n-1 are not all in the baseline, more candidate seeds
        cannot pair: the baseline must be refreshed with them first."""
        n = self.comparison.seeds_needed
        if not n or not self.baseline_seeds:
            return []
        missing = [s for s in range(n) if s not in self.baseline_seeds]
        if not missing:
            return []
        return [f"  but the baseline has only seeds {seed_list(self.baseline_seeds)}: candidate "
                f"seeds beyond them cannot pair. Refresh the baseline with {n} seeds first, from "
                f"the baseline's code ({refresh_hint(self.refresh_command, n)})"]

    def ci_label(self) -> str:
        """The interval's level, with the look it decides at: "91.5%, look 1 of 10→…"."""
        if self.look is None or not self.look.on_schedule:
            return ci_level(self.comparison)
        return f"{ci_level(self.comparison)}, {self.look.label()}"

    def row(self) -> dict[str, str]:
        """The summary-table row (plain strings: it travels through xdist and JUnit XML)."""
        c = self.comparison
        p = c.p_adjusted if c.p_adjusted is not None else c.p_value
        verdict = str(self.verdict) + (": refresh baseline" if self.verdict == Verdict.BETTER
                                       else "")
        row = {"cell": self.cell, "metric": metric_label(self.metric, self.higher_is_better),
                "baseline": fmt_mean_ci(self.baseline, short=True),
                "candidate": fmt_mean_ci(self.candidate, short=True),
                "delta": f"{fmt_signed(c.mean_diff)} {fmt_ci(c.ci)} ({self.ci_label()})",
                "p": fmt_p(p),
                "verdict": verdict, "mde": fmt_num(c.mde), "n": str(c.n), "gate": self.gate,
                "failed": "yes" if self.failed else ""}
        if self.stop is not None:  # adaptive: n used / MAX, and what stopping early saved
            row.update(n=f"{c.n}/{self.stop.planned_max}", saved=str(self.stop.saved))
            # the baseline's mean over the seeds this cell used, which vary from run to run
            row["baseline"] += f" (seeds {seed_list(self.seeds)})"
        note = "; ".join(x for x in (self.guidance.note(), self.table_note) if x)
        if note:
            row["note"] = note
        return row

    @property
    def guidance(self) -> Guidance:
        """What this row rules out and what comes next (:class:`Guidance`)."""
        return Guidance.of(self)


def seeds_option(n: int, min_seeds: int | None = None) -> str:
    """The option that runs ``n`` seeds; an adaptive run keeps its MIN (``MIN..n``)."""
    return f"--graphnetz-seeds={n}" if min_seeds is None else f"--graphnetz-seeds={min_seeds}..{n}"


@dataclass(frozen=True)
class Guidance:
    """What a NOT WORSE or INCONCLUSIVE row rules out and what comes next: the one place every
    output (table Note, Markdown, comment, JSON, JUnit) reads it from (:meth:`of`).

    Differences are candidate − baseline, sign-flipped so + = better, as in the gate.

    - ``min_effect`` (δ) and ``margin``: what the row was judged against.
    - ``rules_out``: the interval's lower end L rules out drops larger than ``rules_out``
      (``-L`` when L < 0; ``0.0`` when L ≥ 0: any drop); None when the row has no such
      statement (a verdict other than NOT WORSE / INCONCLUSIVE, or no finite lower end).
    - ``next_seeds``: INCONCLUSIVE only, the seed count of the next look
      (``comparison.seeds_needed``); ``next_option`` the option that runs it.
      ``baseline_short``: the baseline lacks seeds that look needs (refresh it first);
      ``baseline_n``: how many seeds the baseline holds (None: not known).
    - ``resolvable``: INCONCLUSIVE with δ but no affordable seed count: the δ these seeds do
      resolve (``margin + comparison.mde``, the MDE at the level REGRESSED is tested at).
    - ``n``: the paired seeds the row was decided on; ``trained``: the candidate
      seed-trainings it took (adaptive: the seeds its schedule trained); ``look``: the look of
      the schedule it was decided at, of ``n_looks`` walked (None: judged alone).
    """

    verdict: str
    higher_is_better: bool
    unit_interval: bool
    min_effect: float | None
    margin: float
    rules_out: float | None
    next_seeds: int | None
    next_option: str | None
    resolvable: float | None
    baseline_short: bool
    baseline_n: int | None
    n: int
    trained: int
    look: int | None = None
    n_looks: int | None = None

    @classmethod
    def of(cls, v: CellVerdict) -> Guidance:
        c = v.comparison
        name = verdict_name(c.verdict)
        speaks = name in (Verdict.NOT_WORSE, Verdict.INCONCLUSIVE)
        low = float(c.ci.low)
        rules_out = (None if not speaks or not math.isfinite(low)
                     else 0.0 if low >= 0 else -low)
        next_seeds = c.seeds_needed if name == Verdict.INCONCLUSIVE else None
        min_seeds = None if v.stop is None else v.stop.min_seeds
        resolvable = None
        if name == Verdict.INCONCLUSIVE and next_seeds is None and c.min_effect is not None \
                and math.isfinite(c.mde):
            resolvable = c.margin + c.mde
        short = bool(next_seeds and v.baseline_seeds
                     and any(s not in v.baseline_seeds for s in range(next_seeds)))
        return cls(
            verdict=name, higher_is_better=v.higher_is_better,
            unit_interval=in_unit_interval(v.metric), min_effect=c.min_effect,
            margin=c.margin, rules_out=rules_out, next_seeds=next_seeds,
            next_option=seeds_option(next_seeds, min_seeds) if next_seeds else None,
            resolvable=resolvable, baseline_short=short,
            baseline_n=len(v.baseline_seeds) or None, n=c.n,
            trained=c.n if v.stop is None else v.stop.trained,
            look=(v.stop.look if v.stop is not None
                  else v.look.look if v.look is not None and v.look.on_schedule else None),
            n_looks=(v.stop.n_looks if v.stop is not None
                     else len(v.look.looks) if v.look is not None and v.look.on_schedule
                     else None))

    def command(self, test: str | None) -> str | None:
        """The command that takes the next look of test ``test`` (a node id; None: unknown,
        then None)."""
        if self.next_option is None or not test:
            return None
        return f"pytest {shlex.quote(test)} {self.next_option}"

    def note(self) -> str:
        """The table's words: "rules out drops > 3.2 points; δ 1 point; next:
        --graphnetz-seeds=20"; a REGRESSED or BETTER row only what it was judged against
        ("δ 1 point"); "" for IDENTICAL."""
        if self.verdict == Verdict.IDENTICAL:
            return ""
        worse = "drops" if self.higher_is_better else "rises"
        parts = []
        if self.rules_out is not None:
            parts.append(f"rules out any {worse[:-1]}" if self.rules_out == 0 else
                         f"rules out {worse} > {self.amount(self.rules_out, up=True)}")
        if self.min_effect is not None:
            parts.append(f"δ {self.amount(self.min_effect)}")
        if self.margin:
            parts.append(f"margin {self.amount(self.margin)}")
        if self.next_option is not None:
            first = (f"refresh the baseline with {self.next_seeds} seeds, then "
                     if self.baseline_short else "")
            parts.append(f"next: {first}{self.next_option}")
        elif self.resolvable is not None:
            parts.append(f"no affordable seed count resolves δ; these {self.n} seeds resolve "
                         f"δ ≥ {self.amount(self.resolvable, up=True)}")
        return "; ".join(parts)

    def amount(self, x: float, *, up: bool = False) -> str:
        """``x`` in words: points for a metric in [0, 1] (0.031 → "3.1 points"), else the
        number; ``up``: rounded up to 2 significant digits (a bound that must still hold)."""
        if self.unit_interval:
            points = 100 * x
            shown = f"{ceil_significant(points) if up else points:.3g}"
            return f"{shown} point{'' if shown == '1' else 's'}"
        return fmt_num(ceil_significant(x) if up else x)

    def numbers(self, test: str | None = None) -> dict[str, object]:
        """The JSON/JUnit keys (docs/verdicts-json.md): numbers, and the next look's option
        and command as strings."""
        return {"rules_out_drop": self.rules_out, "next_seeds": self.next_seeds,
                "next_option": self.next_option, "next_command": self.command(test),
                "baseline_short": self.baseline_short, "baseline_seeds": self.baseline_n,
                "resolvable_min_effect": self.resolvable, "trained": self.trained,
                "look": self.look, "n_looks": self.n_looks}


@dataclass(frozen=True)
class WidthVerdict:
    """One cell of :func:`assert_ci_width`: its interval, width, and the seeds to narrow it."""

    task: str
    model: str
    metric: str
    higher_is_better: bool
    stats: stats.CellStats
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
        if self.seeds_needed:
            more = (f"about {self.seeds_needed} seeds would bring it under "
                    f"(rerun with --graphnetz-seeds={self.seeds_needed})")
        else:  # n < 2: no spread to plan from, and more seeds are exactly what it needs
            diverged = f" ({s.n_diverged} diverged)" if s.n_diverged else ""
            more = (f"an interval needs at least 2 finished seeds and this cell has "
                    f"{s.n}{diverged}: run more seeds (e.g. --graphnetz-seeds=10), then this "
                    "gate says how many bring it under")
        return (f"{self.cell} — {self.metric}: {s.method} {fmt_level(s.confidence_level)} interval "
                f"{fmt_ci(s.ci)} is {fmt_num(self.width)} wide, over the maximum "
                f"{fmt_num(self.max_width)} (n={s.n}, mean {fmt_num(s.mean)}); {more}")

    def row(self) -> dict[str, str]:
        return {"cell": self.cell, "metric": metric_label(self.metric, self.higher_is_better),
                "baseline": "", "candidate": fmt_mean_ci(self.stats, short=True),
                "delta": f"width {fmt_num(self.width)} (max {fmt_num(self.max_width)})", "p": "",
                "verdict": self.verdict, "mde": "", "n": str(self.stats.n), "gate": "ci_width",
                "failed": "yes" if self.failed else ""}


@dataclass(frozen=True)
class UnpairedCell:
    """One cell's before/after numbers when seeds cannot be paired (data or split changed).

    ``baseline`` / ``candidate``: :class:`~pytest_graphnetz.stats.CellStats` of each side;
    ``welch``: Welch's unpaired t comparison (a :class:`~pytest_graphnetz.stats.PairedResult`,
    Δ = candidate − baseline, sign flipped for lower-is-better so + = better), or None when a
    side has fewer than 2 finite values. Shown beside a refusal; never a verdict.
    """

    task: str
    model: str
    metric: str
    higher_is_better: bool
    baseline: stats.CellStats
    candidate: stats.CellStats
    welch: stats.PairedResult | None

    @property
    def cell(self) -> str:
        return f"{self.task}/{self.model}"

    def delta(self) -> str:
        w = self.welch
        if w is None:
            return "unpaired: n/a"
        level = fmt_level(w.confidence_level)
        return f"unpaired {fmt_signed(w.mean_diff)} {fmt_ci(w.ci)} ({level})"

    def line(self) -> str:
        w = self.welch
        welch = ("Welch Δ n/a (fewer than 2 finite values on a side)" if w is None else
                 f"Welch Δ {fmt_signed(w.mean_diff)} ({fmt_level(w.confidence_level)} CI "
                 f"{fmt_ci(w.ci)}, "
                 f"p = {fmt_p(w.p_value)})")
        return (f"  {self.cell}: baseline {fmt_mean_ci(self.baseline)}; candidate "
                f"{fmt_mean_ci(self.candidate)}; {welch}")


def failed_verdict(gate: str, name: str, strict: bool) -> bool:
    """The pass rule: whether verdict ``name`` fails ``gate`` (``strict``: INCONCLUSIVE too)."""
    return name not in PASSES[gate] or (strict and name == Verdict.INCONCLUSIVE)


@dataclass(frozen=True)
class LookNote:
    """The look of the schedule a not-worse cell is reported at: ``looks``, the design's looks
    the run walked (the schedule's, or one look judged alone); ``look``, 1-based; ``level``,
    the one-sided level NOT WORSE and BETTER are decided at there; ``alone``, why the cell is
    judged alone at α ("" on the schedule); ``unused``, paired seeds past the last look."""

    looks: tuple[int, ...]
    look: int
    on_schedule: bool
    level: float
    alone: str = ""
    unused: tuple[int, ...] = ()

    def label(self) -> str:
        """``look 1 of 10→20→…`` (the open-ended schedule), or ``judged alone``."""
        if not self.on_schedule:
            return "judged alone"
        return f"look {self.look} of {'→'.join(str(n) for n in self.looks)}→…"

    def describe(self) -> str:
        """The table's Note: judged alone (why), or the seeds no look uses ("" otherwise)."""
        if not self.on_schedule:
            return f"judged alone at α: {self.alone}" if self.alone else ""
        if self.unused:
            return (f"seeds {seed_list(self.unused)} unused (the next look is "
                    f"{2 * self.looks[-1]} seeds)")
        return ""

    def explain(self) -> str:
        """The message's line on the look: what a look is, and what this one spent."""
        if not self.on_schedule:
            why = f" ({self.alone})" if self.alone else ""
            return (f"judged alone at alpha{why}: a rerun of this cell is another run at alpha, "
                    "not a look of the schedule; docs/guarantees.md")
        text = (f"look {self.look} of the schedule {'→'.join(str(n) for n in self.looks)}→… "
                f"(looks at the first look's seeds and its doublings, each judged on the first "
                f"n seeds; this look decides NOT WORSE and BETTER at one-sided "
                f"{fmt_num(self.level)}); a rerun with more seeds walks the same looks again, "
                "so its verdict can only add to this one; docs/guarantees.md")
        if self.unused:
            text += (f"; seeds {seed_list(self.unused)} are past the last complete look and "
                     "unused")
        return text


@dataclass(frozen=True)
class Stop:
    """Where an adaptive cell stopped: the look it is reported at (``n`` seeds, ``look`` of
    ``n_looks``), the seeds it ``trained``, its last look ``max_seeds`` (below the schedule's
    ``planned_max`` when the baseline pairs fewer), and the boundaries of the reported look:
    ``critical`` (t, NOT WORSE and BETTER at alpha), ``critical_regressed`` (REGRESSED's t at
    the Holm level ``regressed_alpha``); None for a cell decided without a test."""

    n: int
    trained: int
    min_seeds: int
    max_seeds: int
    planned_max: int
    look: int
    n_looks: int
    critical: float | None = None
    critical_regressed: float | None = None
    regressed_alpha: float | None = None

    @property
    def saved(self) -> int:
        """Seed-trainings saved against a fixed design at the seeds this cell could pair."""
        return self.max_seeds - self.trained

    def describe(self) -> str:
        text = (f"adaptive seeds: stopped at look {self.look} of {self.n_looks} ({self.n}/"
                f"{self.max_seeds} seeds), {seed_trainings(self.saved)} saved against fixed "
                f"{self.max_seeds}")
        if self.trained > self.n:
            text += (f"; it trained {self.trained} seeds, and Holm rejected it at look "
                     f"{self.look} once other cells were rejected")
        if self.critical is not None:
            text += f"; boundary |t| >= {fmt_fixed(self.critical, 3)} at this look"
            if self.critical_regressed is not None and self.critical_regressed != self.critical:
                text += (f" (REGRESSED {fmt_fixed(self.critical_regressed, 3)} at Holm level "
                         f"{fmt_num(self.regressed_alpha)})")
            text += "; the CI is the repeated interval of this look at those boundaries"
        return text




# What each gate lets through (``strict`` also fails INCONCLUSIVE).
PASSES: dict[str, frozenset[Verdict]] = {
    "not_worse": frozenset({Verdict.NOT_WORSE, Verdict.BETTER, Verdict.IDENTICAL,
                            Verdict.INCONCLUSIVE}),
    "better": frozenset({Verdict.BETTER}),
    "equivalent": frozenset({Verdict.EQUIVALENT, Verdict.IDENTICAL})}


CHANGED_MODEL_NOTE = "the model changed, yet every seed scored the same"


def default_min_effect(spec: MetricSpec, margin: float = 0.0) -> float | None:
    """δ when none is given, for a metric bounded in [0, 1]: ``margin +``
    :data:`DEFAULT_MIN_EFFECT`, the smallest regression that matters being one point beyond
    the drop that is tolerated (0.01 at margin 0; 0.02 at margin 0.01). It never vanishes when
    a margin is set, and the gap NOT WORSE must resolve (δ − margin) is one point whatever the
    margin, so the seeds it needs do not jump with it. None for MAE, RMSE, loss (no natural
    scale): NOT WORSE then falls back to −margin, and the row's Note says so
    (:data:`NO_MIN_EFFECT_NOTE`)."""
    return margin + DEFAULT_MIN_EFFECT if in_unit_interval(spec.name) else None


NO_MIN_EFFECT_NOTE = "no min_effect: NOT WORSE only means above −margin; set δ"


def gate_table(verdicts: Sequence[CellVerdict | WidthVerdict], *, markdown: bool = False) -> str:
    """The verdicts as the summary table (plain text, or GitHub Markdown)."""
    from .text import format_table, markdown_table

    rows = [v.row() for v in verdicts]
    body = [[r.get(c, "") for c in TABLE_COLUMNS] for r in rows]
    return (markdown_table if markdown else format_table)(TABLE_HEADERS, body)


# Row keys and headers of the gate table (the plugin's session summary adds the test).


# Row keys and headers of the gate table (the plugin's session summary adds the test).
TABLE_COLUMNS = ("cell", "metric", "baseline", "candidate", "delta", "p", "verdict", "mde", "n")


TABLE_HEADERS = ("Cell", "Metric", "Baseline", "Candidate", "Paired Δ (+ = better) [CI]", "p",
                 "Verdict", "MDE", "n")


def describe_values(x: np.ndarray, report: BenchmarkReport, *, method: str | None = None,
              metric: str | None = None) -> stats.CellStats:
    """``x`` described by ``method`` (default the report's) at the report's level, bootstrap
    draws from a fixed seed: the same interval every time the cell is shown.

    Given the ``metric`` (cells that are shown, not judged), an interval that leaves [0, 1] for a
    metric bounded there is clipped to it, and its method says so, as ``summary()`` does;
    ``assert_ci_width`` judges the unclipped width, so it passes no metric."""
    cell = describe(x, method=method or report.ci_method,
                    confidence_level=report.confidence_level,
                    rng=np.random.default_rng(0))
    clipped = None if metric is None else clip_to_metric(metric, cell.ci.low, cell.ci.high)
    if clipped is None:
        return cell
    return replace(cell, ci=stats.ConfidenceInterval(*clipped), method=f"{cell.method}, {CLIPPED}")


def verdict_name(verdict: stats.Verdict | str) -> str:
    return str(getattr(verdict, "value", verdict))


def metric_label(name: str, higher_is_better: bool) -> str:
    return f"{name} {'↑' if higher_is_better else '↓'}"


def ci_level(c: stats.Comparison) -> str:
    """The label of a comparison's interval: "90%" at alpha 0.05; its coverage when its ends
    are at the levels its decisions use (Holm on REGRESSED's side, a sequential look's)."""
    return fmt_level(c.confidence_level)


def _level_note(c: stats.Comparison) -> str:
    """Where the ends of an interval whose levels differ from alpha's sit (else "")."""
    if c.ci_alphas is None:
        return ""
    low, high = c.ci_alphas
    return (f" (lower end: one-sided level {fmt_num(low)}, NOT WORSE's and BETTER's; upper "
            f"end: {fmt_num(high)}, REGRESSED's{' after Holm' if high < low else ''})")


def _accepting_margin(ci: stats.ConfidenceInterval, min_effect: float) -> str:
    """A margin that accepts a drop smaller than δ: the magnitude of the interval's lower end,
    rounded up to two significant digits while that stays below δ (``min_effect``)."""
    x = -ci.low
    exponent = math.floor(math.log10(x)) - 1 if x > 0 else 0
    up = math.ceil(x / 10.0**exponent) * 10.0**exponent
    return fmt_num(up if up < min_effect else x)


def refresh_hint(command: str | None, n_seeds: int | None = None) -> str:
    seeds = f" --graphnetz-seeds={n_seeds}" if n_seeds else ""
    if command:
        return f"`{command}{seeds}`"
    return f"`pytest --graphnetz-update-baselines{seeds}` on the gate's test"


def fmt_ci(ci: stats.ConfidenceInterval) -> str:
    return fmt_interval(ci.low, ci.high)


def fmt_mean_ci(cell: stats.CellStats, *, short: bool = False) -> str:
    text = f"{fmt_num(cell.mean)} {fmt_ci(cell.ci)}"
    if short:
        return text
    extra = f", {cell.n_diverged} diverged" if getattr(cell, "n_diverged", 0) else ""
    return f"{text} ({cell.method} {fmt_level(cell.confidence_level)} CI, n={cell.n}{extra})"


def seed_list(seeds: Sequence[int]) -> str:
    seeds = list(seeds)
    if len(seeds) > 2 and seeds == list(range(seeds[0], seeds[-1] + 1)):
        return f"{seeds[0]}-{seeds[-1]}"
    return ",".join(str(s) for s in seeds)
