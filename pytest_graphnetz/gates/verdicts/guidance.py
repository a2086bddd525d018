"""What a verdict's row rules out and what comes next (:class:`Guidance`, the one place every
output reads it from), and where a not-worse cell was decided: the look of the schedule it is
reported at (:class:`LookNote`) and where an adaptive cell stopped (:class:`Stop`)."""

from __future__ import annotations

import shlex
from dataclasses import dataclass

from pytest_graphnetz.base.text import ceil_significant, fmt_fixed, fmt_num, seed_trainings
from pytest_graphnetz.gates.verdicts.formatting import seed_list
from pytest_graphnetz.stats import Verdict


def seeds_option(n: int, min_seeds: int | None = None) -> str:
    """The option that runs ``n`` seeds; an adaptive run keeps its MIN (``MIN..n``)."""
    return f"--graphnetz-seeds={n}" if min_seeds is None else f"--graphnetz-seeds={min_seeds}..{n}"


@dataclass(frozen=True)
class Guidance:
    """What a NOT WORSE or INCONCLUSIVE row rules out and what comes next: the one place every
    output (table Note, Markdown, comment, JSON, JUnit) reads it from (built by
    :attr:`~pytest_graphnetz.gates.verdicts.values.CellVerdict.guidance`).

    Differences are candidate − baseline, sign-flipped so + = better, as in the gate.

    - ``min_effect`` (δ) and ``margin``: what the row was judged against.
    - ``rules_out``: the interval's lower end L rules out drops larger than ``rules_out``
      (``-L`` when L < 0; ``0.0`` when L ≥ 0: any drop); None when the row has no such
      statement (a verdict other than NOT WORSE / INCONCLUSIVE, or no finite lower end).
    - ``next_seeds``: INCONCLUSIVE only, the seed count of the next look
      (``comparison.plan.needed``: on the schedule, what ``graphnetz next-seeds`` prints for
      this row); ``next_option`` the option that runs it; ``expected_seeds``: the seeds the
      cell is expected to use before it decides (``comparison.plan.expected``; None off the
      schedule).
      ``baseline_short``: the baseline lacks seeds that look needs (refresh it first);
      ``baseline_n``: how many seeds the baseline holds (None: not known).
    - ``resolvable``: INCONCLUSIVE with δ but no affordable seed count: the δ these seeds do
      resolve (``margin + comparison.decision.mde``, the MDE at the level REGRESSED is tested at).
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
    expected_seeds: int | None = None

    def command(self, test: str | None) -> str | None:
        """The command that takes the next look of test ``test`` (a node id; None: unknown,
        then None)."""
        if self.next_option is None or not test:
            return None
        return f"pytest {shlex.quote(test)} {self.next_option}"

    def note(self) -> str:
        """The table's words: "rules out drops > 3.2 points; δ 1 point; next: 20 seeds
        (--graphnetz-seeds=20); expected to decide by ~40"; a REGRESSED or BETTER row only what
        it was judged against ("δ 1 point"); "" for IDENTICAL."""
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
            first = (f"refresh the baseline with {self.refresh_seeds()} seeds, then "
                     if self.baseline_short else "")
            parts.append(f"next: {first}{self.next_seeds} seeds ({self.next_option})")
            if self.expected_seeds is not None:
                parts.append(f"expected to decide by ~{int(float(f'{self.expected_seeds:.2g}'))}")
        elif self.resolvable is not None:
            # one resolution figure per row: the MDE column's, not a second rounding of it
            of = "the MDE" if not self.margin else "margin + MDE"
            parts.append(f"no affordable seed count resolves δ; these {self.n} seeds resolve "
                         f"δ ≥ {of}")
        return "; ".join(parts)

    def refresh_seeds(self) -> int | None:
        """The seeds a baseline short of the next look should hold: the first look of the
        schedule at or past the expected need (the next look off the schedule). The one
        refresh size: the Note says it, the JSON row carries it (``refresh_seeds``) and
        ``graphnetz next-seeds`` prints it for the same row."""
        if self.next_seeds is None:
            return None
        n = self.next_seeds
        while self.expected_seeds is not None and n < self.expected_seeds:
            n *= 2
        return n

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
                "expected_seeds": self.expected_seeds,
                "baseline_short": self.baseline_short, "baseline_seeds": self.baseline_n,
                "refresh_seeds": self.refresh_seeds() if self.baseline_short else None,
                "resolvable_min_effect": self.resolvable, "trained": self.trained,
                "look": self.look, "n_looks": self.n_looks}


@dataclass(frozen=True)
class LookNote:
    """The look of the schedule a not-worse cell is reported at: ``looks``, the design's looks
    the run walked (the schedule's, or one look judged alone); ``look``, 1-based; ``level``,
    the one-sided level NOT WORSE and BETTER are decided at there; ``alone``, why the cell is
    judged alone at α ("" on the schedule); ``unused``, paired seeds past the last look (read,
    not tested); ``read``, the seeds the run read past the reported look (its later looks,
    none of which crossed REGRESSED; 0: none)."""

    looks: tuple[int, ...]
    look: int
    on_schedule: bool
    level: float
    alone: str = ""
    unused: tuple[int, ...] = ()
    read: int = 0

    def label(self) -> str:
        """``look 1 of 10→20→…`` (the open-ended schedule), or ``judged alone``."""
        if not self.on_schedule:
            return "judged alone"
        return f"look {self.look} of {'→'.join(str(n) for n in self.looks)}→…"

    def describe(self) -> str:
        """The table's Note: judged alone (why), or the seeds no look uses ("" otherwise)."""
        if not self.on_schedule:
            return f"judged alone at α: {self.alone}" if self.alone else ""
        parts = []
        if self.read:
            parts.append(f"read to {self.read} seeds: no later look crossed REGRESSED")
        if self.unused:
            parts.append(f"seeds {seed_list(self.unused)} read, not tested (the next look is "
                         f"{2 * self.looks[-1]} seeds)")
        return "; ".join(parts)

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
        if self.read:
            text += (f"; every look up to {self.read} seeds was read and none crossed "
                     "REGRESSED (a crossing at any look the run holds fails it)")
        if self.unused:
            text += (f"; seeds {seed_list(self.unused)} are past the last complete look: read "
                     "(a diverged or differing seed there counts), not tested")
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


__all__ = ["Guidance", "LookNote", "Stop", "seeds_option"]
