"""What a bisect finds, as values: each cell's verdict at one probe (:class:`Evidence`, three
valued: regressed, same or unknown, with the hint an unknown probe gives), one probed commit
(:class:`Step`) and a regressed cell's result (:class:`Finding`). The search that builds them is
:mod:`.search`."""

from __future__ import annotations

from dataclasses import dataclass

from pytest_graphnetz.base.text import ceil_significant, fmt_num
from pytest_graphnetz.cli.history.trend import Cell, cell_label
from pytest_graphnetz.stats.boundaries import schedule

REGRESSED, SAME, UNKNOWN = "regressed", "same", "unknown"


@dataclass(frozen=True)
class Evidence:
    """One cell's verdict at one probe: ``verdict`` (regressed / same / unknown), the seeds it
    was decided on, ``detail`` (the gate's numbers or the bit-for-bit match), and for a gate
    call the paired sd, δ and the level it used (None for a bit-for-bit match)."""

    cell: Cell
    verdict: str
    seeds: int
    detail: str
    sd_diff: float | None = None
    min_effect: float | None = None
    alpha: float | None = None
    mean_diff: float | None = None

    @property
    def label(self) -> str:
        return cell_label(self.cell)

    def hint(self) -> str:
        """For an unknown probe: the δ its seeds resolve at the level it used, and the budget
        the δ it was asked for needs ("" when there is nothing to plan on)."""
        if self.verdict != UNKNOWN or not self.sd_diff or self.alpha is None:
            return ""
        from pytest_graphnetz.gates.calibration.resolution import resolvable_min_effect
        from pytest_graphnetz.stats.planning import seeds_for_min_effect

        resolved = fmt_num(ceil_significant(
            resolvable_min_effect(self.sd_diff, self.seeds, alpha=self.alpha)))
        text = (f"at {self.seeds} seeds and alpha {fmt_num(self.alpha)} this probe's paired sd "
                f"{fmt_num(self.sd_diff)} resolves δ ≥ {resolved} at power "
                f"0.8: rerun with --min-effect {resolved}")
        if self.min_effect:
            need = seeds_for_min_effect(self.sd_diff, self.min_effect, alpha=self.alpha)
            # the schedule's next look, or the first after it that holds `need`
            looks = schedule(self.seeds, 2 * max(need, 2 * self.seeds))
            budget = next(n for n in looks[1:] if n >= need)
            text += (f"; δ {fmt_num(self.min_effect)} needs about {need} seeds "
                     f"(--max-seeds {budget}, a smaller alpha per look with it)")
        return text


@dataclass(frozen=True)
class Step:
    """One probed commit (``index`` into the commit list) and each cell's evidence there."""

    commit: str
    index: int
    evidence: tuple[Evidence, ...]


@dataclass(frozen=True)
class Finding:
    """A regressed cell's result: ``culprit`` is the first commit that reads regressed after a
    commit that reads same (None: the search stopped undecided and the culprit lies in
    ``(last_same, first_regressed]``, or the cell drifted); ``steps`` are the probes that
    decided it. ``drift``: the evidence that no single commit carries the drop (one line per
    gate call that shows it; empty for a step, see :func:`drift_split` and
    :func:`culprit_step`); ``moved``: then
    each commit whose values differ from its parent's, with the mean of that step (first look's
    seeds), or the probed commits against GOOD for a range too long to probe whole."""

    cell: Cell
    culprit: str | None
    last_same: str
    first_regressed: str
    steps: tuple[Step, ...]
    drift: tuple[str, ...] = ()
    moved: tuple[tuple[str, float], ...] = ()

    @property
    def label(self) -> str:
        return cell_label(self.cell)


__all__ = ["REGRESSED", "SAME", "UNKNOWN", "Evidence", "Finding", "Step"]
