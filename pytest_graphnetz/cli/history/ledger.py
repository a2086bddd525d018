"""The test-set reuse ledger: per test split, how many gate reads it has had across commits,
against the number of adaptive reads after which what a read says of the split is no longer
nearly as trustworthy as on a fresh split.

A split is a task's data and split as the report fingerprints them (its data fingerprint at
the smallest seed the report holds: the same data and split rule give the same fingerprint at
every commit). A **read** is one cell (report, model) judged on that split at one commit; a
cell whose per-seed values equal, bit for bit, those of an earlier read of the same cell (an
unchanged model, a cache hit) tells the team nothing new and is not counted again.

**The budget** (docs/history-bisect.md, "Test-set reuse"): the description-length bound of
Dwork, Feldman, Hardt, Pitassi, Reingold & Roth (2015, "Generalization in adaptive data
analysis and holdout reuse", NIPS 2015, arXiv:1506.02629; the Science paper "The reusable
holdout", 349(6248):636-638, rests on it): if everything the analyst learned from a split of n
examples before choosing a query can be written in b bits, that query's estimate on the split
lies within τ of its true value with probability at least 1 − β whenever
2^b · 2·exp(−2τ²n) ≤ β (Hoeffding's bound, union over the 2^b possible histories), so

    τ(b) = √((b·ln 2 + ln(2/β)) / (2n)).

A read answers with its verdict, one of the ``K`` kinds a gate gives (``len(Verdict)``), so
the k-th read is chosen knowing b = (k − 1)·log₂ K bits (the first knows nothing of the
split: it is a fresh read). Its guarantee is looser than a fresh split's τ(0) by the factor
√(1 + (k − 1)·ln K / ln(2/β)), in which n cancels; the **budget** is the most reads whose
every guarantee stays within ``factor`` times the fresh one:
1 + floor((factor² − 1)·ln(2/β) / ln K). Past it, confirm on a split the team has not read.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol

from pytest_graphnetz.stats.comparison import Verdict


class _Run(Protocol):
    """What the ledger reads of one commit's results (``trend.CommitRun``)."""

    @property
    def commit(self) -> str: ...
    @property
    def values(self) -> Mapping[tuple[str, str, str], Mapping[int, float]]: ...
    @property
    def splits(self) -> Mapping[tuple[str, str], SplitFacts]: ...


@dataclass(frozen=True)
class ReuseBudget:
    """The budget's rule (module docstring). ``factor``: how much looser than a fresh split's
    the latest read's guarantee may be (> 1); ``beta``: the guarantee's failure probability;
    ``answers``: the kinds of answer one read gives (the gates' verdicts)."""

    factor: float = 2.0
    beta: float = 0.05
    answers: int = len(Verdict)

    def __post_init__(self) -> None:
        if not self.factor > 1.0:
            raise ValueError(f"`factor` must be > 1 (1 would allow no reuse), got {self.factor}")
        if not 0.0 < self.beta < 1.0:
            raise ValueError(f"`beta` must lie in (0, 1), got {self.beta}")
        if self.answers < 2:
            raise ValueError(f"`answers` must be at least 2, got {self.answers}")

    def bits(self, reads: int) -> float:
        """What the ``reads``-th read was chosen knowing: (reads − 1)·log₂ K bits."""
        return max(reads - 1, 0) * math.log2(self.answers)

    def tolerance(self, reads: int, n: int) -> float:
        """τ of the ``reads``-th read of a split of ``n`` examples, at 1 − β."""
        return math.sqrt((self.bits(reads) * math.log(2) + math.log(2 / self.beta)) / (2 * n))

    def looseness(self, reads: int) -> float:
        """τ of the ``reads``-th read over τ of a fresh read (the same for every n)."""
        return math.sqrt(1 + self.bits(reads) * math.log(2) / math.log(2 / self.beta))

    @property
    def reads(self) -> int:
        """The budget: the most reads whose looseness stays at most ``factor``."""
        room = (self.factor ** 2 - 1) * math.log(2 / self.beta) / math.log(self.answers)
        return 1 + math.floor(room + 1e-12)

    def describe(self) -> str:
        return (f"budget {self.reads} reads: each read releases a verdict (log2 "
                f"{self.answers} bits), and past the budget the latest read's guarantee "
                f"(Hoeffding at 1 − β = {1 - self.beta:.3g}, Dwork et al. 2015's "
                f"description-length bound) is more than {self.factor:g} times a fresh "
                "split's")


@dataclass(frozen=True)
class SplitReads:
    """One split's reads. ``fingerprint``: its data fingerprint (the split's identity);
    ``commits``: the commits whose reports read it; ``reads``: distinct reads (module
    docstring); ``n``: its test examples (None: no per-example outcomes recorded);
    ``rule``: the budget it is held to."""

    task: str
    fingerprint: str
    commits: int
    reads: int
    n: int | None
    rule: ReuseBudget = field(default_factory=ReuseBudget)

    @property
    def budget(self) -> int:
        return self.rule.reads

    @property
    def over_budget(self) -> bool:
        return self.reads > self.budget

    @property
    def looseness(self) -> float:
        """The latest read's guarantee over a fresh read's."""
        return self.rule.looseness(self.reads)

    @property
    def tolerance(self) -> float | None:
        """±τ of the latest read's estimate at 1 − β (None: ``n`` unknown)."""
        return None if self.n is None else self.rule.tolerance(self.reads, self.n)

    @property
    def fresh_tolerance(self) -> float | None:
        """±τ of one read of a fresh split of the same size."""
        return None if self.n is None else self.rule.tolerance(1, self.n)


@dataclass(frozen=True)
class SplitFacts:
    """What one report says of one task's test split: its ``fingerprint`` (the data
    fingerprint at the report's smallest seed) and its test examples ``n`` (from the
    per-example outcomes, None if none were recorded)."""

    fingerprint: str
    n: int | None


def split_facts(data: Mapping[str, Any]) -> dict[str, SplitFacts]:
    """Each task's :class:`SplitFacts` from a decoded report file (a full report or the
    values-only form; a task without a data fingerprint is left out), read from the JSON
    that ``graphnetz history`` reads once anyway."""
    fingerprints = (data.get("fingerprints") or {}).get("data") or {}
    histories: Mapping = data.get("histories") or {}
    if not isinstance(histories, Mapping):
        return {}
    out: dict[str, SplitFacts] = {}
    for task, per_seed in fingerprints.items():
        if not isinstance(per_seed, Mapping) or not per_seed:
            continue
        seed = min(per_seed, key=int)
        if not per_seed[seed]:
            continue
        out[task] = SplitFacts(str(per_seed[seed]), _split_size(histories.get(task)))
    return out


def _split_size(by_model: Any) -> int | None:
    """The test examples of a task's per-example outcomes (any model, seed and epoch)."""
    for by_seed in (by_model.values() if isinstance(by_model, Mapping) else ()):
        for history in (by_seed.values() if isinstance(by_seed, Mapping) else ()):
            outcomes = history.get("outcomes") if isinstance(history, Mapping) else None
            for record in (outcomes.values() if isinstance(outcomes, Mapping) else ()):
                if isinstance(record, Mapping) and isinstance(record.get("n"), int):
                    return int(record["n"])
    return None


def reuse_ledger(runs: Sequence[_Run], rule: ReuseBudget | None = None) -> list[SplitReads]:
    """Every split the reports of ``runs`` (oldest first) read, in order of first read, each
    held to ``rule`` (None: :class:`ReuseBudget`'s defaults)."""
    rule = ReuseBudget() if rule is None else rule
    found: dict[tuple[str, str], dict] = {}
    for run in runs:
        cells: dict[tuple[str, str], list[tuple[str, Mapping[int, float]]]] = {}
        for (name, task, model), per_seed in run.values.items():
            cells.setdefault((name, task), []).append((model, per_seed))
        for (name, task), facts in run.splits.items():
            entry = found.setdefault((task, facts.fingerprint), {
                "commits": set(), "seen": {}, "reads": 0, "n": None})
            entry["commits"].add(run.commit)
            entry["n"] = entry["n"] or facts.n
            for model, per_seed in cells.get((name, task), ()):
                values = tuple(sorted(per_seed.items()))
                if entry["seen"].get((name, model)) != values:
                    entry["seen"][(name, model)] = values
                    entry["reads"] += 1
    return [SplitReads(task, fp, len(e["commits"]), e["reads"], e["n"], rule)
            for (task, fp), e in found.items()]


def ledger_lines(splits: Sequence[SplitReads]) -> list[str]:
    """The ledger as ``graphnetz history`` prints it: what the budget is, a table, then one
    line per split read past its budget saying what that means and what to do."""
    from pytest_graphnetz.base.text import fmt_num, format_table

    if not splits:
        return ["test-set reuse: no report names its data fingerprint, no split to count"]
    rows = [[s.task, s.fingerprint[:12], str(s.commits), str(s.reads), str(s.budget),
             f"{s.looseness:.2f}x", "?" if s.n is None else str(s.n),
             "?" if s.tolerance is None else f"±{fmt_num(s.tolerance)}",
             "?" if s.fresh_tolerance is None else f"±{fmt_num(s.fresh_tolerance)}",
             "PAST BUDGET" if s.over_budget else "ok"] for s in splits]
    lines = [f"test-set reuse (distinct gate reads per test split; {splits[0].rule.describe()}; "
             "docs/history-bisect.md):",
             format_table(["task", "split", "commits", "reads", "budget", "looseness",
                           "test n", "latest ±τ", "fresh ±τ", "status"], rows)]
    for s in splits:
        if s.over_budget:
            size = ("" if s.n is None else
                    f" (±{fmt_num(s.tolerance)} against ±{fmt_num(s.fresh_tolerance)} at "
                    f"n = {s.n})")
            lines.append(
                f"{s.task} (split {s.fingerprint[:12]}): {s.reads} gate reads, past its budget "
                f"of {s.budget}: the latest read's guarantee is {s.looseness:.2f} times as "
                f"loose as a fresh split's{size}, so choices made from these verdicts may have "
                "fitted the split itself. Rotate or refresh the test split (a new seed range of "
                "a seeded split, or held-out data) and confirm there")
    return lines


__all__ = ["ReuseBudget", "SplitFacts", "SplitReads", "ledger_lines", "reuse_ledger",
           "split_facts"]
