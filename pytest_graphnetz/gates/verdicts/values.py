"""The verdict values and what they say: :class:`CellVerdict` (a comparison gate's cell, fixed or
adaptive seeds: its message, its advice, its table row), :class:`WidthVerdict`
(``assert_ci_width``), :class:`UnpairedCell` (the numbers shown beside a refusal) and the
refusals (:class:`GateRefusal`; :class:`BaselineMissingError`, no baseline for a cell, and its
base :class:`BaselineError`, which the baseline store raises too)."""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

from pytest_graphnetz import stats
from pytest_graphnetz.base.text import fmt_level, fmt_num, fmt_p, fmt_signed
from pytest_graphnetz.gates.verdicts.formatting import (
    ci_level,
    fmt_ci,
    fmt_mean_ci,
    metric_label,
    refresh_hint,
    seed_list,
    verdict_name,
)
from pytest_graphnetz.gates.verdicts.guidance import Guidance, LookNote, Stop, seeds_option
from pytest_graphnetz.report.epochs import in_unit_interval
from pytest_graphnetz.stats import Verdict
from pytest_graphnetz.stats.skew import SkewCheck


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


class BaselineError(Exception):
    """A baseline that cannot be used as it is."""


class BaselineMissingError(BaselineError, FileNotFoundError):
    """No baseline file, or no cell for part of the candidate in it: ``cells``, the
    (task, model) cells missing (None: the whole file), for the summary rows."""

    cells: list[tuple[str, str]] | None = None


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
    look: LookNote | None = None            # not-worse cells: the look it is reported at
    # A BETTER the leak guard flags (verdicts.leak): why; a refresh keeping it needs accept.
    suspect: str = ""
    # not-worse cells: the skew guard on the held seeds (stats.skew); None where not tested
    skew: SkewCheck | None = None

    @property
    def verdict(self) -> stats.Verdict:
        return self.comparison.decision.verdict

    @property
    def cell(self) -> str:
        return f"{self.task}/{self.model}"

    @property
    def p(self) -> float:
        """The p-value this row's verdict rests on: a not-worse BETTER's is the gain's (H1 mean
        Δ > +margin, never Holm-adjusted); else REGRESSED's test, Holm-adjusted in a family."""
        c = self.comparison
        ev, dec = c.evidence, c.decision
        if self.gate == "not_worse" and self.verdict == Verdict.BETTER:
            return ev.p_better
        return ev.p_value if dec.p_adjusted is None else dec.p_adjusted

    def message(self) -> str:
        """The cell's evidence, as a reviewer reads it."""
        c, direction = self.comparison, "higher" if self.higher_is_better else "lower"
        ev, dec, settings = c.evidence, c.decision, c.settings
        p = f"p = {fmt_p(ev.p_value)}"
        if dec.p_adjusted is not None and dec.p_adjusted != ev.p_value:
            p += f" (Holm-adjusted {fmt_p(dec.p_adjusted)})"
        if self.gate == "not_worse" and self.verdict == Verdict.BETTER:
            p = f"p = {fmt_p(self.p)} (of the gain; of a drop: {fmt_p(ev.p_value)})"
        flipped = ""
        if not self.higher_is_better:
            flipped = (f" (+ = better: the sign is flipped, {self.metric} candidate − baseline "
                       f"is {fmt_signed(-ev.mean_diff)})")
        delta = f", min_effect {fmt_num(settings.min_effect)}" if self.gate == "not_worse" else ""
        level = ""
        if dec.regressed_level != dec.level:
            # the MDE is quoted at the level REGRESSED was tested at, the interval's upper end's
            level = f" (at REGRESSED's one-sided level {fmt_num(dec.regressed_level)}, after Holm)"
        # one α (the call's, as the message's first lines state it); a look decides at a level
        alpha = settings.alpha   # the call's; dec.level, the look's, is less on the schedule
        decides = ("" if alpha == dec.level else
                   f" (this look: one-sided level {fmt_num(dec.level)})")
        # Adaptive: the MDE is a one-look t test's at the seeds used, not the sequential design's.
        mde_of = " of a fixed-n test" if self.stop is not None else ""
        lines = [
            f"{self.cell} — {self.metric} ({direction} is better): {self.verdict}",
            f"  baseline  {fmt_mean_ci(self.baseline)}",
            f"  candidate {fmt_mean_ci(self.candidate)}",
            f"  paired Δ {fmt_signed(ev.mean_diff)}{flipped} ({self.ci_label()} CI {fmt_ci(dec.ci)}"
            f"{_level_note(c)}) over "
            f"{ev.n} seeds {seed_list(self.seeds)}; {p}; test {ev.test}, margin "
            f"{fmt_num(settings.margin)}{delta}, alpha {fmt_num(alpha)}{decides}",
            f"  minimum detectable effect{mde_of} at n={ev.n}: {fmt_num(dec.mde)}{level}",
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
        c = self.comparison
        ev, dec, settings = c.evidence, c.decision, c.settings
        delta = settings.min_effect
        if c.below_min_effect and delta is not None:
            return [f"  the drop is significant but smaller than min_effect "
                    f"{fmt_num(delta)} "
                    f"(the {ci_level(c)} CI lies above {fmt_num(-delta)}); if a drop this "
                    f"size is acceptable, accept it with margin={_accepting_margin(dec.ci, delta)} "
                    "(margin must stay below min_effect)"]
        if self.verdict == Verdict.BETTER and self.suspect:
            return [f"  {self.suspect}: a refresh that keeps this cell is refused unless it is "
                    f"accepted (--graphnetz-accept={self.cell})"]
        if self.verdict == Verdict.BETTER:
            return [f"  the candidate is better than the baseline: refresh the baseline to keep "
                    f"the gain ({refresh_hint(self.refresh_command)})"]
        if self.verdict != Verdict.INCONCLUSIVE:
            return []
        if self.gate != "not_worse":
            if not c.plan.needed:
                return ["  no feasible number of seeds would decide it at this margin"]
            return [f"  {c.plan.needed} seeds would decide it "
                    f"(rerun with {self._seeds_option(c.plan.needed)})",
                    *self._unpaired_advice()]
        if settings.min_effect is None:
            return [f"  no min_effect for {self.metric}, so NOT WORSE means the lower bound lies "
                    f"above −margin and no seeds can be planned: set `min_effect` (δ, the "
                    f"smallest regression that matters, in {self.metric} units; "
                    "--graphnetz-min-effect)"]
        n = c.plan.needed
        lines = [f"  the {ci_level(c)} CI {fmt_ci(dec.ci)} reaches below "
                 f"{fmt_num(-settings.min_effect)} (a drop "
                 f"that matters is not ruled out) and above {fmt_num(0.0 - settings.margin)} "
                 "(no "
                 "significant drop either)"]
        if self.folds is not None:
            return lines + self._fold_advice(n, self.folds)
        if n and c.plan.expected is not None:
            lines.append(
                f"  next look: {n} seeds (rerun with {self._seeds_option(n)}; what `graphnetz "
                f"next-seeds` runs in CI); at the observed sd of Δ ({fmt_num(ev.sd_diff)}) a cell "
                f"open here is expected to decide by about {c.plan.expected} seeds, walking "
                "the looks (the mean over cells reading no change as NOT WORSE or a drop of "
                f"{fmt_num(settings.min_effect)} as REGRESSED)")
            lines += self._unpaired_advice()
        elif n:
            lines.append(
                f"  about {n} paired seeds would decide it: at the observed sd of Δ "
                f"({fmt_num(ev.sd_diff)}), {n} seeds read no change as NOT WORSE and a drop of "
                f"{fmt_num(settings.min_effect)} as REGRESSED, each with probability "
                f"≥ {settings.power:g} "
                f"(rerun with {self._seeds_option(n)})")
            lines += self._unpaired_advice()
        return lines

    def _fold_advice(self, n: int | None, k: int) -> list[str]:
        """The plan of a ``k``-fold CV cell, at the per-fold sd of Δ (the evidence's; its se is
        the corrected one), or why no seed count decides it and what would."""
        from pytest_graphnetz.stats.planning import fold_min_effect_floor, fold_se_floor

        c = self.comparison
        settings, dec = c.settings, c.decision
        sd = c.evidence.sd_per_fold
        if n:
            return [f"  about {n} paired seeds would decide it: at the observed per-fold sd of Δ "
                    f"({fmt_num(sd)}; the corrected resampled se is sqrt(1/J + 1/{k - 2}) times "
                    f"it on J seeds), {n} seeds read no change as NOT WORSE and a drop of "
                    f"{fmt_num(settings.min_effect)} as REGRESSED, each with probability "
                    f"≥ {settings.power:g} (rerun with {self._seeds_option(n)})",
                    *self._unpaired_advice()]
        floor = fold_se_floor(sd, folds=k)
        least = fold_min_effect_floor(sd, folds=k, margin=settings.margin, alpha=dec.level,
                                      alpha_regressed=dec.regressed_level, power=settings.power)
        return [f"  no number of seeds would decide it: on {k}-fold cross-validation the "
                f"corrected resampled se never falls below sqrt(1/{k - 2}) × the per-fold sd of "
                f"Δ ({fmt_num(sd)}), i.e. {fmt_num(floor)}, however many seeds run, and "
                f"min_effect {fmt_num(settings.min_effect)} needs it well below that. What would "
                f"decide it: a min_effect of more than {fmt_num(least)} (the least any seed "
                "count resolves with probability "
                f"≥ {settings.power:g}), or a smaller per-fold spread (more test data per fold)"]

    def _seeds_option(self, n: int) -> str:
        """The option that runs ``n`` seeds (adaptive runs keep their MIN: ``MIN..n``)."""
        return seeds_option(n, None if self.stop is None else self.stop.min_seeds)

    def _unpaired_advice(self) -> list[str]:
        """When the planned seeds 0..n-1 are not all in the baseline, more candidate seeds
        cannot pair: the baseline must be refreshed with them first."""
        n = self.comparison.plan.needed
        if not n or not self.baseline_seeds:
            return []
        missing = [s for s in range(n) if s not in self.baseline_seeds]
        if not missing:
            return []
        n = self.guidance.refresh_seeds() or n   # the look the cell is expected to reach
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
        c, p = self.comparison, self.p
        ev, dec = c.evidence, c.decision
        verdict = str(self.verdict) + (": refresh baseline" if self.verdict == Verdict.BETTER
                                       and not self.suspect else "")
        row = {"cell": self.cell, "metric": metric_label(self.metric, self.higher_is_better),
                "baseline": fmt_mean_ci(self.baseline, short=True),
                "candidate": fmt_mean_ci(self.candidate, short=True),
                "delta": f"{fmt_signed(ev.mean_diff)} {fmt_ci(dec.ci)} ({self.ci_label()})",
                "p": fmt_p(p),
                "verdict": verdict, "mde": fmt_num(dec.mde), "n": str(ev.n), "gate": self.gate,
                "failed": "yes" if self.failed else ""}
        if self.stop is not None:  # adaptive: n used / MAX, and what stopping early saved
            row.update(n=f"{ev.n}/{self.stop.planned_max}", saved=str(self.stop.saved))
            # the baseline's mean over the seeds this cell used, which vary from run to run
            row["baseline"] += f" (seeds {seed_list(self.seeds)})"
        note = "; ".join(x for x in (self.suspect, self.guidance.note(), self.table_note) if x)
        if note:
            row["note"] = note
        return row

    @property
    def guidance(self) -> Guidance:
        """What this row rules out and what comes next (:class:`Guidance`)."""
        c = self.comparison
        ev, dec, settings = c.evidence, c.decision, c.settings
        name = verdict_name(dec.verdict)
        speaks = name in (Verdict.NOT_WORSE, Verdict.INCONCLUSIVE)
        low = float(dec.ci.low)
        rules_out = (None if not speaks or not math.isfinite(low)
                     else 0.0 if low >= 0 else -low)
        next_seeds = c.plan.needed if name == Verdict.INCONCLUSIVE else None
        min_seeds = None if self.stop is None else self.stop.min_seeds
        resolvable = None
        if (name == Verdict.INCONCLUSIVE and next_seeds is None
                and settings.min_effect is not None and math.isfinite(dec.mde)):
            resolvable = settings.margin + dec.mde
        short = bool(next_seeds and self.baseline_seeds
                     and any(s not in self.baseline_seeds for s in range(next_seeds)))
        return Guidance(
            verdict=name, higher_is_better=self.higher_is_better,
            unit_interval=in_unit_interval(self.metric), min_effect=settings.min_effect,
            margin=settings.margin, rules_out=rules_out, next_seeds=next_seeds,
            next_option=seeds_option(next_seeds, min_seeds) if next_seeds else None,
            resolvable=resolvable, baseline_short=short,
            baseline_n=len(self.baseline_seeds) or None, n=ev.n,
            trained=ev.n if self.stop is None else self.stop.trained,
            look=(self.stop.look if self.stop is not None
                  else self.look.look if self.look is not None and self.look.on_schedule else None),
            n_looks=(self.stop.n_looks if self.stop is not None
                     else len(self.look.looks) if self.look is not None and self.look.on_schedule
                     else None),
            expected_seeds=c.plan.expected if next_seeds else None)


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
    Δ = candidate − baseline, sign flipped for lower-is-better so + = better) on the seeds both
    sides ran (``welch_seeds``), or None when a side has fewer than 2 finite values there.
    ``baseline_seeds`` / ``candidate_seeds``: the seeds each side's mean is over. Shown beside
    a refusal; never a verdict.
    """

    task: str
    model: str
    metric: str
    higher_is_better: bool
    baseline: stats.CellStats
    candidate: stats.CellStats
    welch: stats.PairedResult | None
    baseline_seeds: tuple[int, ...] = ()
    candidate_seeds: tuple[int, ...] = ()
    welch_seeds: tuple[int, ...] = ()

    @property
    def cell(self) -> str:
        return f"{self.task}/{self.model}"

    def delta(self) -> str:
        w = self.welch
        if w is None:
            return "unpaired: n/a"
        level = fmt_level(w.confidence_level)
        return f"unpaired {fmt_signed(w.mean_diff)} {fmt_ci(w.ci)} ({level})"

    def sides(self) -> str:
        """Each side's seeds, and the Welch test's (the seeds both ran) when the sides differ."""
        if self.baseline_seeds == self.candidate_seeds:
            return f"seeds {seed_list(self.candidate_seeds)} of each side"
        return (f"baseline seeds {seed_list(self.baseline_seeds)}, candidate seeds "
                f"{seed_list(self.candidate_seeds)}; Welch Δ on the {len(self.welch_seeds)} "
                f"both ran ({seed_list(self.welch_seeds)})")

    def line(self) -> str:
        w = self.welch
        welch = ("Welch Δ n/a (fewer than 2 finite values on a side)" if w is None else
                 f"Welch Δ {fmt_signed(w.mean_diff)} ({fmt_level(w.confidence_level)} CI "
                 f"{fmt_ci(w.ci)}, "
                 f"p = {fmt_p(w.p_value)})")
        return (f"  {self.cell}: baseline {fmt_mean_ci(self.baseline)}; candidate "
                f"{fmt_mean_ci(self.candidate)}; {welch}")


# The Notes of an IDENTICAL cell whose model's fingerprint changed (pairing.changed_model_notes):
# values too coarse to register the change, or, on a fine test set, a change that did not alter
# training at all.
CHANGED_MODEL_NOTE = "the model changed, yet every seed scored the same"
UNCHANGED_TRAINING_NOTE = ("the model's code changed but every seed trained to the same "
                           "values: the change did not alter training")


def _level_note(c: stats.Comparison) -> str:
    """Where the ends of an interval whose levels differ from alpha's sit (else "")."""
    if c.decision.ci_alphas is None:
        return ""
    low, high = c.decision.ci_alphas
    return (f" (lower end at one-sided level {fmt_num(low)}, NOT WORSE's and BETTER's; upper "
            f"end at {fmt_num(high)}, REGRESSED's{', after Holm' if high < low else ''})")


def _accepting_margin(ci: stats.ConfidenceInterval, min_effect: float) -> str:
    """A margin that accepts a drop smaller than δ: the magnitude of the interval's lower end,
    rounded up to two significant digits while that stays below δ (``min_effect``)."""
    x = -ci.low
    exponent = math.floor(math.log10(x)) - 1 if x > 0 else 0
    up = math.ceil(x / 10.0**exponent) * 10.0**exponent
    return fmt_num(up if up < min_effect else x)


__all__ = ["CHANGED_MODEL_NOTE", "UNCHANGED_TRAINING_NOTE", "BaselineError", "BaselineMissingError",
           "CellVerdict", "GateRefusal", "UnpairedCell", "WidthVerdict"]
