"""The test-set reuse ledger: per test split, how many gate reads it has had across commits,
against the number of adaptive reads its size supports.

A split is a task's data and split as the report fingerprints them (its data fingerprint at
the smallest seed the report holds: the same data and split rule give the same fingerprint at
every commit). A **read** is one cell (report, model) judged on that split at one commit; a
cell whose per-seed values equal, bit for bit, those of an earlier read of the same cell (an
unchanged model, a cache hit) tells the team nothing new and is not counted again.

**The budget** (docs/history-bisect.md, "Test-set reuse"): a team that picks what to change
next from the scores it read adapts to the test split. Blum & Hardt (2015, "The Ladder: A
Reliable Leaderboard for Machine Learning Competitions", ICML, arXiv:1502.04585) show with
their boosting attack that k adaptively chosen reads of a split of n examples, answered with
their exact scores, can overfit it by order √(k/n); Dwork et al. (2015, "The reusable holdout:
Preserving validity in adaptive data analysis", Science 349(6248):636-638) show that naive
reuse has no better guarantee. So a split read more than ``floor(n·τ²)`` times may be overfit
by more than the tolerance τ, the gate's δ (the smallest regression that matters). Worst case:
the constant of the rate is taken as 1, and a team that does not tune on the test scores
overfits less.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

from .history import in_unit_interval
from .report import BenchmarkReport
from .trend import CommitRun

# τ when no gate recorded its δ: the gates' default δ for metrics bounded in [0, 1]
# (gates.DEFAULT_MIN_EFFECT, one point).
DEFAULT_TOLERANCE = 0.01


@dataclass(frozen=True)
class SplitReads:
    """One split's reads. ``fingerprint``: its data fingerprint (the split's identity);
    ``commits``: the commits whose reports read it; ``reads``: distinct reads (module
    docstring); ``n``: its test examples (None: no per-example outcomes recorded);
    ``tolerance``: τ, the smallest δ a gate recorded on it, else :data:`DEFAULT_TOLERANCE` for
    a metric in [0, 1], else None."""

    task: str
    fingerprint: str
    commits: int
    reads: int
    n: int | None
    tolerance: float | None

    @property
    def budget(self) -> int | None:
        """``floor(n·τ²)``: the reads after which the worst-case overfit √(k/n) exceeds τ."""
        if self.n is None or self.tolerance is None:
            return None
        return math.floor(self.n * self.tolerance ** 2)

    @property
    def overfit_bound(self) -> float | None:
        """√(reads/n): how far k adaptive reads may have overfit the split (worst case)."""
        return None if self.n is None else math.sqrt(self.reads / self.n)

    @property
    def over_budget(self) -> bool:
        return self.budget is not None and self.reads > self.budget


def split_fingerprint(report: BenchmarkReport, task: str) -> str | None:
    """The split's identity in ``report``: ``task``'s data fingerprint at its smallest seed."""
    for seed in sorted(report.seeds):
        fp = report.data_fingerprint(task, seed)
        if fp:
            return fp
    return None


def split_size(report: BenchmarkReport, task: str) -> int | None:
    """The test examples of ``task``, from the per-example outcomes its histories recorded."""
    for model in report.models:
        for seed in report.seeds:
            history = report.histories.get((task, model, seed))
            for outcomes in (history.outcomes.values() if history is not None else ()):
                return int(outcomes.values.size)
    return None


def _tolerance(report: BenchmarkReport, task: str) -> float | None:
    recorded = [float(c["min_effect"]) for c in report.protocol.get("gates") or []
                if isinstance(c, dict) and isinstance(c.get("min_effect"), int | float)]
    if recorded:
        return min(recorded)
    return DEFAULT_TOLERANCE if in_unit_interval(report.metric(task).name) else None


def reuse_ledger(runs: Sequence[CommitRun]) -> list[SplitReads]:
    """Every split the reports of ``runs`` (oldest first) read, in order of first read."""
    found: dict[tuple[str, str], dict] = {}
    for run in runs:
        for name, report in run.reports.items():
            for task in report.tasks:
                fp = split_fingerprint(report, task)
                if fp is None:
                    continue
                entry = found.setdefault((task, fp), {
                    "commits": set(), "seen": {}, "reads": 0, "n": None, "tolerance": None})
                entry["commits"].add(run.commit)
                entry["n"] = entry["n"] or split_size(report, task)
                tolerance = _tolerance(report, task)
                if tolerance is not None:
                    entry["tolerance"] = tolerance if entry["tolerance"] is None else min(
                        entry["tolerance"], tolerance)
                for model in report.models:
                    values = report.values(task, model).tobytes()
                    if entry["seen"].get((name, model)) != values:
                        entry["seen"][(name, model)] = values
                        entry["reads"] += 1
    return [SplitReads(task, fp, len(e["commits"]), e["reads"], e["n"], e["tolerance"])
            for (task, fp), e in found.items()]


def ledger_lines(runs: Sequence[CommitRun]) -> list[str]:
    """The ledger as ``graphnetz history`` prints it: a table, then one line per split read
    past its budget."""
    from .text import fmt_num, format_table

    splits = reuse_ledger(runs)
    rows = [[s.task, s.fingerprint[:12], str(s.commits), str(s.reads),
             "?" if s.n is None else str(s.n), "?" if s.tolerance is None else fmt_num(s.tolerance),
             "?" if s.budget is None else str(s.budget),
             "?" if s.overfit_bound is None else fmt_num(s.overfit_bound),
             "PAST BUDGET" if s.over_budget else ("-" if s.budget is None else "ok")]
            for s in splits]
    lines = ["test-set reuse (distinct gate reads per test split; budget floor(n·τ²), the reads "
             "after which a worst-case adaptive overfit √(k/n) exceeds τ: Blum & Hardt 2015, "
             "docs/history-bisect.md):",
             format_table(["task", "split", "commits", "reads k", "test n", "τ", "budget",
                           "√(k/n)", "status"], rows)]
    for s in splits:
        if s.over_budget:
            lines.append(
                f"{s.task} (split {s.fingerprint[:12]}) has had {s.reads} gate reads, past its "
                f"budget of {s.budget} for {s.n} test examples at τ {fmt_num(s.tolerance)}: "
                f"choices made from its scores may have overfit it by up to "
                f"{fmt_num(s.overfit_bound)}. Confirm on a fresh split (a new seed range of a "
                "seeded split, or held-out data) before trusting a gain of that size")
    return lines


__all__ = ["DEFAULT_TOLERANCE", "SplitReads", "ledger_lines", "reuse_ledger",
           "split_fingerprint", "split_size"]
