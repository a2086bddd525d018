"""The test-set reuse ledger: per test split, the gate reads it has had across commits, each
charged by what its verdict revealed, and whether the bound on the next read's estimate has
loosened by more than a stated share of δ, the smallest change that matters.

docs/history-bisect.md ("Test-set reuse") defines a split, a read and its cost, and derives the
bound (Dwork et al. 2015, arXiv:1506.02629): a read chosen knowing b bits of earlier verdicts,
on a split of n examples, lies within

    τ(b) = √((b·ln 2 + ln(2/β)) / (2n))

of its true value with probability at least 1 − β. A read that repeats the cell's previous
verdict costs 1 bit, another verdict 1 + log₂(K − 1), an unrecorded one log₂ K. The split is
PAST BUDGET when τ(b) − τ(0) exceeds ``share``·δ, TOO SMALL FOR δ when τ(0) > δ already.
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
    def verdicts(self) -> Mapping[tuple[str, str, str], str]: ...
    @property
    def splits(self) -> Mapping[tuple[str, str], SplitFacts]: ...


#: The verdict a cell's first read is expected to give (its code word costs 1 bit).
EXPECTED = str(Verdict.NOT_WORSE)


@dataclass(frozen=True)
class ReuseBudget:
    """The rule (module docstring). ``share``: the part of δ the reuse term may take (> 0);
    ``beta``: the guarantee's failure probability; ``answers``: the kinds of answer one read
    gives (the gates' verdicts); ``delta``: δ for every split (None: each split's own, from
    its reports, else 0.01 for a metric in [0, 1])."""

    share: float = 0.5
    beta: float = 0.05
    answers: int = len(Verdict)
    delta: float | None = None

    def __post_init__(self) -> None:
        if not self.share > 0.0:
            raise ValueError(f"`share` must be > 0, got {self.share}")
        if not 0.0 < self.beta < 1.0:
            raise ValueError(f"`beta` must lie in (0, 1), got {self.beta}")
        if self.answers < 3:
            raise ValueError(f"`answers` must be at least 3, got {self.answers}")
        if self.delta is not None and not self.delta > 0:
            raise ValueError(f"`delta` must be > 0, got {self.delta}")

    def cost(self, verdict: str | None, previous: str | None) -> float:
        """Bits a read reveals: 1 when ``verdict`` repeats ``previous`` (None: the cell's first
        read, expected :data:`EXPECTED`), 1 + log₂(K − 1) for another verdict, log₂ K when the
        verdict is unknown."""
        if verdict is None:
            return math.log2(self.answers)
        if verdict == (EXPECTED if previous is None else previous):
            return 1.0
        return 1.0 + math.log2(self.answers - 1)

    def tolerance(self, bits: float, n: int) -> float:
        """τ of a read chosen knowing ``bits`` bits of a split of ``n`` examples, at 1 − β."""
        return math.sqrt((bits * math.log(2) + math.log(2 / self.beta)) / (2 * n))

    def budget_bits(self, n: int, delta: float) -> float:
        """The most bits whose reuse term τ(b) − τ(0) on ``n`` examples stays within
        ``share``·δ."""
        limit = self.tolerance(0, n) + self.share * delta
        return (2 * n * limit * limit - math.log(2 / self.beta)) / math.log(2)

    def examples_for(self, delta: float) -> int:
        """The test examples at which a fresh read's τ(0) is δ."""
        return math.ceil(math.log(2 / self.beta) / (2 * delta * delta))

    def describe(self) -> str:
        return (f"a read costs 1 bit when its verdict repeats the cell's last, "
                f"{1 + math.log2(self.answers - 1):.2g} bits otherwise; PAST BUDGET when the "
                f"next read's reuse term (Hoeffding at 1 − β = {1 - self.beta:.3g}, Dwork et "
                f"al. 2015's description-length bound) exceeds {self.share:g}·δ")


@dataclass(frozen=True)
class SplitReads:
    """One split's reads. ``fingerprint``: its data fingerprint (the split's identity);
    ``commits``: the commits whose reports read it; ``reads``: distinct reads (module
    docstring); ``bits``: what they revealed; ``n``: its test examples (None: no per-example
    outcomes recorded); ``delta``: δ (None: unknown); ``rule``: the rule it is held to."""

    task: str
    fingerprint: str
    commits: int
    reads: int
    bits: float
    n: int | None
    delta: float | None
    rule: ReuseBudget = field(default_factory=ReuseBudget)

    @property
    def tolerance(self) -> float | None:
        """±τ of the next read's estimate at 1 − β (None: ``n`` unknown)."""
        return None if self.n is None else self.rule.tolerance(self.bits, self.n)

    @property
    def fresh_tolerance(self) -> float | None:
        """±τ_1 of one read of a fresh split of the same size."""
        return None if self.n is None else self.rule.tolerance(0, self.n)

    @property
    def reuse(self) -> float | None:
        """The reuse term τ(b) − τ_1, in metric units (None: ``n`` unknown)."""
        if self.tolerance is None or self.fresh_tolerance is None:
            return None
        return self.tolerance - self.fresh_tolerance

    @property
    def budget(self) -> float | None:
        """The bits the split may reveal (None: ``n`` or δ unknown, or too small)."""
        if self.n is None or self.delta is None or self.too_small:
            return None
        return self.rule.budget_bits(self.n, self.delta)

    @property
    def too_small(self) -> bool:
        """Whether a fresh read's bound already exceeds δ (a larger test set is the remedy)."""
        fresh = self.fresh_tolerance
        return fresh is not None and self.delta is not None and fresh > self.delta

    @property
    def over_budget(self) -> bool:
        reuse = self.reuse
        return (not self.too_small and reuse is not None and self.delta is not None
                and reuse > self.rule.share * self.delta)

    @property
    def status(self) -> str:
        if self.n is None or self.delta is None:
            return "?"
        return "TOO SMALL FOR δ" if self.too_small else \
            "PAST BUDGET" if self.over_budget else "ok"


@dataclass(frozen=True)
class SplitFacts:
    """What one report says of one task's test split: its ``fingerprint`` (the data
    fingerprint at the report's smallest seed), its test examples ``n`` (from the per-example
    outcomes, None if none were recorded) and δ (the gates' recorded ``min_effect``, else 0.01
    for a metric in [0, 1]; None: unknown)."""

    fingerprint: str
    n: int | None
    delta: float | None = None


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
        out[task] = SplitFacts(str(per_seed[seed]), _split_size(histories.get(task)),
                               _delta(data, task))
    return out


def _delta(data: Mapping[str, Any], task: str) -> float | None:
    """δ of a report's task: the smallest ``min_effect`` its gates recorded, else 0.01 for a
    metric bounded in [0, 1] (the gates' default), else None."""
    from pytest_graphnetz.report.epochs import in_unit_interval

    gates = (data.get("protocol") or {}).get("gates") or []
    recorded = [g.get("min_effect") for g in gates if isinstance(g, Mapping)]
    numbers = [float(x) for x in recorded if isinstance(x, int | float) and x > 0]
    if numbers:
        return min(numbers)
    metric = (data.get("metrics") or {}).get(task)
    name = metric.get("name") if isinstance(metric, Mapping) else metric
    return 0.01 if isinstance(name, str) and in_unit_interval(name) else None


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
    held to ``rule`` (None: :class:`ReuseBudget`'s defaults): its distinct reads, each charged
    :meth:`ReuseBudget.cost` against the cell's previous verdict."""
    rule = ReuseBudget() if rule is None else rule
    found: dict[tuple[str, str], dict] = {}
    for run in runs:
        cells: dict[tuple[str, str], list[tuple[str, Mapping[int, float]]]] = {}
        for (name, task, model), per_seed in run.values.items():
            cells.setdefault((name, task), []).append((model, per_seed))
        for (name, task), facts in run.splits.items():
            entry = found.setdefault((task, facts.fingerprint), {
                "commits": set(), "seen": {}, "said": {}, "reads": 0, "bits": 0.0,
                "n": None, "delta": None})
            entry["commits"].add(run.commit)
            entry["n"] = entry["n"] or facts.n
            entry["delta"] = entry["delta"] or facts.delta
            for model, per_seed in cells.get((name, task), ()):
                values = tuple(sorted(per_seed.items()))
                if entry["seen"].get((name, model)) == values:
                    continue
                entry["seen"][(name, model)] = values
                entry["reads"] += 1
                verdict = run.verdicts.get((name, task, model))
                entry["bits"] += rule.cost(verdict, entry["said"].get((name, model)))
                if verdict is not None:
                    entry["said"][(name, model)] = verdict
    return [SplitReads(task, fp, len(e["commits"]), e["reads"], e["bits"], e["n"],
                       rule.delta or e["delta"], rule)
            for (task, fp), e in found.items()]


LEDGER_HEADERS = ("task", "split", "commits", "reads", "bits", "budget (bits)", "test n", "δ",
                  "fresh ±τ_1", "next ±τ", "reuse term", "status")


def ledger_rows(splits: Sequence[SplitReads]) -> list[list[str]]:
    """One row of :data:`LEDGER_HEADERS` per split (numbers in metric units)."""
    from pytest_graphnetz.base.text import fmt_num

    def num(x: float | None, sign: str = "") -> str:
        return "?" if x is None else f"{sign}{fmt_num(x)}"

    return [[s.task, s.fingerprint[:12], str(s.commits), str(s.reads), f"{s.bits:.1f}",
             "—" if s.budget is None else f"{s.budget:.0f}", "?" if s.n is None else str(s.n),
             num(s.delta), num(s.fresh_tolerance, "±"), num(s.tolerance, "±"),
             num(s.reuse, "+"), s.status] for s in splits]


def split_advice(s: SplitReads) -> str | None:
    """What a split that needs action asks for: past its budget, rotate the split; too small
    for δ from the first read, a larger test set. None: nothing to do."""
    from pytest_graphnetz.base.text import fmt_num

    where = f"{s.task} (split {s.fingerprint[:12]})"
    if s.too_small:
        assert s.fresh_tolerance is not None and s.delta is not None
        return (f"{where}: {s.n} test examples bound even a fresh read only to "
                f"±{fmt_num(s.fresh_tolerance)}, more than δ = {fmt_num(s.delta)}: no count of "
                "reads is safe and rotating the split cannot help. The remedy is a larger test "
                f"set (about {s.rule.examples_for(s.delta):,} examples for ±δ at a fresh read)")
    if s.over_budget:
        assert s.reuse is not None and s.delta is not None and s.budget is not None
        return (f"{where}: {s.reads} gate reads revealed {s.bits:.0f} bits, past its budget of "
                f"{s.budget:.0f}: the next read's bound is ±{fmt_num(s.tolerance or 0.0)}, its "
                f"reuse term +{fmt_num(s.reuse)} exceeds {s.rule.share:g}·δ = "
                f"{fmt_num(s.rule.share * s.delta)}, so choices made from these verdicts may "
                "have fitted the split itself. Rotate or refresh the test split (a new seed "
                "range of a seeded split, or held-out data) and confirm there")
    return None


def ledger_lines(splits: Sequence[SplitReads]) -> list[str]:
    """The ledger as ``graphnetz history`` prints it: the rule, a table, then one line per
    split that needs action (:func:`split_advice`)."""
    from pytest_graphnetz.base.text import format_table

    if not splits:
        return ["test-set reuse: no report names its data fingerprint, no split to count"]
    lines = [f"test-set reuse (distinct gate reads per test split; {splits[0].rule.describe()}; "
             "docs/history-bisect.md):",
             format_table(list(LEDGER_HEADERS), ledger_rows(splits))]
    return lines + [a for a in map(split_advice, splits) if a is not None]


__all__ = ["EXPECTED", "LEDGER_HEADERS", "ReuseBudget", "SplitFacts", "SplitReads",
           "ledger_lines", "ledger_rows", "reuse_ledger", "split_advice", "split_facts"]
