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
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Protocol

from pytest_graphnetz.report.epochs import in_unit_interval


class _Run(Protocol):
    """What the ledger reads of one commit's results (``trend.CommitRun``)."""

    @property
    def commit(self) -> str: ...
    @property
    def values(self) -> Mapping[tuple[str, str, str], Mapping[int, float]]: ...
    @property
    def splits(self) -> Mapping[tuple[str, str], SplitFacts]: ...


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


@dataclass(frozen=True)
class SplitFacts:
    """What one report says of one task's test split: its ``fingerprint`` (the data
    fingerprint at the report's smallest seed), its test examples ``n`` (from the per-example
    outcomes, None if none were recorded) and τ (``tolerance``: the smallest δ a gate recorded,
    else :data:`DEFAULT_TOLERANCE` for a metric in [0, 1], else None)."""

    fingerprint: str
    n: int | None
    tolerance: float | None


def split_facts(data: Mapping[str, Any]) -> dict[str, SplitFacts]:
    """Each task's :class:`SplitFacts` from a decoded report file (a full report or the
    values-only form; a task without a data fingerprint is left out), read from the JSON
    that ``graphnetz history`` reads once anyway."""
    fingerprints = (data.get("fingerprints") or {}).get("data") or {}
    gates = (data.get("protocol") or {}).get("gates") or []
    recorded = [float(c["min_effect"]) for c in gates
                if isinstance(c, Mapping) and isinstance(c.get("min_effect"), int | float)
                and not isinstance(c.get("min_effect"), bool)]
    histories: Mapping = data.get("histories") or {}
    metrics: Mapping = data.get("metrics") or {}
    if not isinstance(histories, Mapping) or not isinstance(metrics, Mapping):
        return {}
    out: dict[str, SplitFacts] = {}
    for task, per_seed in fingerprints.items():
        if not isinstance(per_seed, Mapping) or not per_seed:
            continue
        seed = min(per_seed, key=int)
        if not per_seed[seed]:
            continue
        metric = metrics.get(task)
        name = metric.get("name") if isinstance(metric, Mapping) else None
        tolerance = (min(recorded) if recorded else
                     DEFAULT_TOLERANCE if isinstance(name, str) and in_unit_interval(name)
                     else None)
        out[task] = SplitFacts(str(per_seed[seed]), _split_size(histories.get(task)), tolerance)
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


def reuse_ledger(runs: Sequence[_Run]) -> list[SplitReads]:
    """Every split the reports of ``runs`` (oldest first) read, in order of first read."""
    found: dict[tuple[str, str], dict] = {}
    for run in runs:
        cells: dict[tuple[str, str], list[tuple[str, Mapping[int, float]]]] = {}
        for (name, task, model), per_seed in run.values.items():
            cells.setdefault((name, task), []).append((model, per_seed))
        for (name, task), facts in run.splits.items():
            entry = found.setdefault((task, facts.fingerprint), {
                "commits": set(), "seen": {}, "reads": 0, "n": None, "tolerance": None})
            entry["commits"].add(run.commit)
            entry["n"] = entry["n"] or facts.n
            if facts.tolerance is not None:
                entry["tolerance"] = facts.tolerance if entry["tolerance"] is None else min(
                    entry["tolerance"], facts.tolerance)
            for model, per_seed in cells.get((name, task), ()):
                values = tuple(sorted(per_seed.items()))
                if entry["seen"].get((name, model)) != values:
                    entry["seen"][(name, model)] = values
                    entry["reads"] += 1
    return [SplitReads(task, fp, len(e["commits"]), e["reads"], e["n"], e["tolerance"])
            for (task, fp), e in found.items()]


def ledger_lines(runs: Sequence[_Run]) -> list[str]:
    """The ledger as ``graphnetz history`` prints it: a table, then one line per split read
    past its budget."""
    from pytest_graphnetz.base.text import fmt_num, format_table

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


__all__ = ["DEFAULT_TOLERANCE", "SplitFacts", "SplitReads", "ledger_lines", "reuse_ledger",
           "split_facts"]
