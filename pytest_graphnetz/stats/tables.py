"""Report views: the Summary and Pairwise tables over ``X[task, model, seed]`` (T, M, S)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
from numpy.typing import ArrayLike

from pytest_graphnetz.base.text import fmt_fixed, fmt_level, fmt_p, format_table, markdown_table
from pytest_graphnetz.stats._common import (
    PAIRED_TESTS,
    RngLike,
    check_choice,
    check_level,
    group_rows,
)
from pytest_graphnetz.stats.decisions import holm
from pytest_graphnetz.stats.intervals import describe_many
from pytest_graphnetz.stats.paired import PairedResult, paired_tests, require_pairs


class Table(Sequence):
    """A tuple of frozen rows that prints as an aligned table (``str``) or Markdown."""

    rows: tuple

    def __getitem__(self, i: Any) -> Any:
        return self.rows[i]

    def __len__(self) -> int:
        return len(self.rows)

    def _table(self) -> tuple[list[str], list[list[object]]]:
        raise NotImplementedError

    def __str__(self) -> str:
        return format_table(*self._table())

    def to_markdown(self) -> str:
        return markdown_table(*self._table())


@dataclass(frozen=True)
class SummaryRow:
    """One (task, model) cell: ``n_seeds`` finite seeds described, ``n_diverged`` non-finite."""

    task: str
    model: str
    metric: str
    n_seeds: int
    n_diverged: int
    mean: float
    std: float
    sem: float
    ci_low: float
    ci_high: float
    method: str
    source: str = "seeds"


@dataclass(frozen=True, repr=False)
class Summary(Table):
    """Rows of :class:`SummaryRow` in (task, model) order; ``str()`` is an aligned table.

    ``source`` says which uncertainty the intervals cover (``"seeds"``, ``"test_set"``,
    ``"total"``; see :data:`~pytest_graphnetz.stats.heldout.COVERS`), ``notes`` any caveat.
    """

    rows: tuple[SummaryRow, ...]
    method: str
    confidence_level: float
    source: str = "seeds"
    notes: tuple[str, ...] = ()

    def _table(self) -> tuple[list[str], list[list[object]]]:
        pct = fmt_level(self.confidence_level)
        which = "" if self.source == "seeds" else f" ({self.source.replace('_', ' ')})"
        headers = ["task", "model", "metric", "seeds", "diverged", "mean", "std", "sem",
                   f"{pct} CI low{which}", f"{pct} CI high{which}", "method"]
        return headers, [[r.task, r.model, r.metric, r.n_seeds, r.n_diverged,
                          *(fmt_fixed(x) for x in (r.mean, r.std, r.sem, r.ci_low, r.ci_high)),
                          r.method]
                         for r in self.rows]

    def __str__(self) -> str:
        return "\n".join([super().__str__(), *(f"note: {n}" for n in self.notes)])

    def __repr__(self) -> str:
        return f"Summary({len(self.rows)} rows, method={self.method!r})\n{self}"


@dataclass(frozen=True)
class PairwiseRow:
    """One model pair on one task, on seeds paired by seed value.

    Sign convention: ``mean_diff``, ``ci_low``, ``ci_high`` and ``effect_size`` are oriented so
    that a positive value means ``model_a`` is better than ``model_b``: ``a - b`` for
    higher-is-better metrics, ``b - a`` for lower-is-better ones. ``p_holm`` is Holm-adjusted
    across the pairs of the task. ``intervals_overlap`` says whether the two cells' own intervals
    (the report's CI method) overlap: a caution for readers, never the verdict. A pair skipped
    as untestable (``untestable="skip"``: fewer than 2 seeds finite in both models) has NaN
    statistics, ``n`` usable seeds and ``intervals_overlap=False``.
    """

    task: str
    model_a: str
    model_b: str
    n: int
    mean_diff: float
    ci_low: float
    ci_high: float
    p_value: float
    p_holm: float
    effect_size: float
    intervals_overlap: bool
    test: str

    def better_at(self, alpha: float) -> str | None:
        """The model the test favours at level ``alpha`` (Holm-adjusted p ``<= alpha`` and a
        nonzero difference), else None: the pair is not distinguishable."""
        if self.p_holm <= alpha and self.mean_diff != 0:
            return self.model_a if self.mean_diff > 0 else self.model_b
        return None


@dataclass(frozen=True, repr=False)
class Pairwise(Table):
    """Rows of :class:`PairwiseRow`; ``notes`` collects caveats (excluded seeds, p floors)."""

    rows: tuple[PairwiseRow, ...]
    test: str
    confidence_level: float
    notes: tuple[str, ...] = ()

    def _table(self) -> tuple[list[str], list[list[object]]]:
        pct = fmt_level(self.confidence_level)
        headers = ["task", "A", "B", "n", "Δ (+: A better)", f"{pct} CI low", f"{pct} CI high",
                   "p", "p (Holm)", "effect", "CIs overlap", "test"]
        return headers, [[r.task, r.model_a, r.model_b, r.n,
                          *(fmt_fixed(x) for x in (r.mean_diff, r.ci_low, r.ci_high)),
                          fmt_p(r.p_value), fmt_p(r.p_holm), fmt_fixed(r.effect_size, 2),
                          "yes" if r.intervals_overlap else "no", r.test]
                         for r in self.rows]

    def __str__(self) -> str:
        return "\n".join([super().__str__(), *(f"note: {n}" for n in self.notes)])

    def __repr__(self) -> str:
        return f"Pairwise({len(self.rows)} rows, test={self.test!r})\n{self}"


def summarize(X: ArrayLike, *, tasks: Sequence[str], models: Sequence[str], metrics: Sequence[str],
              method: str = "t", confidence_level: float = 0.95, n_resamples: int = 10_000,
              rng: RngLike = None) -> Summary:
    """:class:`Summary` of ``X[task, model, seed]`` (T, M, S); ``metrics``: each task's metric."""
    X = np.asarray(X, dtype=float)
    t, m, s = X.shape
    cells = describe_many(X.reshape(t * m, s), method=method, confidence_level=confidence_level,
                          n_resamples=n_resamples, rng=rng)
    rows = tuple(
        SummaryRow(task=tasks[i], model=models[j], metric=metrics[i], n_seeds=c.n,
                   n_diverged=c.n_diverged, mean=c.mean, std=c.std, sem=c.sem, ci_low=c.ci.low,
                   ci_high=c.ci.high, method=method)
        for (i, j), c in zip(np.ndindex(t, m), cells, strict=True)
    )
    return Summary(rows=rows, method=method, confidence_level=check_level(confidence_level))


@dataclass(frozen=True)
class PairwiseSpec:
    """How :func:`pairwise_table` compares two models: the paired ``test`` and the
    ``confidence_level`` of its intervals, ``ci_method`` of each cell's own interval (the
    overlap column), ``n_resamples`` of a resampling test, and what a pair with fewer than 2
    usable seeds does (``untestable``: ``"raise"`` or ``"skip"``)."""

    test: str = "paired-t"
    confidence_level: float = 0.95
    ci_method: str = "t"
    n_resamples: int = 10_000
    untestable: str = "raise"


DEFAULT_PAIRWISE = PairwiseSpec()


def pairwise_table(X: ArrayLike, spec: PairwiseSpec = DEFAULT_PAIRWISE, *,
                   tasks: Sequence[str], models: Sequence[str],
                   higher_is_better: Sequence[bool], rng: RngLike = None,
                   seeds: Sequence[int] | None = None) -> Pairwise:
    """:class:`Pairwise` over ``X[task, model, seed]`` (T, M, S) under ``spec``: every pair
    i < j of models per task; sign convention in :class:`PairwiseRow`.

    All pairs of all tasks that share a pattern of diverged seeds are tested in one batch.
    A pair with fewer than 2 seeds finite in both models raises, or with
    ``untestable="skip"`` gets a row of NaN statistics (its ``n`` says how many seeds were
    usable), a note, and no part in its task's Holm family.
    """
    test, untestable, n_resamples = spec.test, spec.untestable, spec.n_resamples
    check_choice("test", test, PAIRED_TESTS)
    check_choice("untestable", untestable, ("raise", "skip"))
    level = check_level(spec.confidence_level)
    X = np.asarray(X, dtype=float)
    t_n, m_n, s_n = X.shape
    seeds = list(range(s_n)) if seeds is None else list(seeds)
    # Orient every task so that larger is better: then "a - b > 0" reads "a is better".
    V = X * np.where(np.asarray(higher_is_better, dtype=bool), 1.0, -1.0)[:, None, None]
    cells = describe_many(V.reshape(t_n * m_n, s_n), method=spec.ci_method, confidence_level=level,
                          n_resamples=n_resamples, rng=rng)
    keys = [(t, i, j) for t in range(t_n) for i in range(m_n) for j in range(i + 1, m_n)]
    if not keys:
        return Pairwise(rows=(), test=test, confidence_level=level)
    A = np.stack([V[t, i] for t, i, _ in keys])
    B = np.stack([V[t, j] for t, _, j in keys])
    results: list[PairedResult | None] = [None] * len(keys)
    notes: list[str] = []
    finite = np.isfinite(A) & np.isfinite(B)
    for mask, idx in group_rows(finite):
        bad = [seeds[s] for s in np.flatnonzero(~mask)]
        n_usable = int(mask.sum())
        skip = untestable == "skip" and n_usable < 2
        for k in idx:
            t, i, j = keys[k]
            where = f"task {tasks[t]!r}, {models[i]} vs {models[j]}"
            if skip:
                notes.append(f"{where}: not compared, only {n_usable} seed(s) finite in both "
                             "models")
                continue
            require_pairs(n_usable, where, bad)
            if bad:
                notes.append(f"{where}: seed(s) {bad} excluded (diverged in one model or both)")
        if skip:
            continue  # results[k] stays None for these pairs
        at = np.ix_(np.asarray(idx), mask)
        batch = paired_tests(A[at], B[at], test=test, confidence_level=level,
                             n_resamples=n_resamples, rng=rng)
        for k, res in zip(idx, batch, strict=True):
            results[k] = res
            notes.extend(n for n in res.notes if n not in notes)
    p_holm = np.full(len(keys), np.nan)
    for t in range(t_n):
        tested = [(k, r) for k, (key, r) in enumerate(zip(keys, results, strict=True))
                  if key[0] == t and r is not None]
        if tested:
            p_holm[[k for k, _ in tested]] = holm([r.p_value for _, r in tested]).p_adjusted
    rows = []
    nan = float("nan")
    for k, ((t, i, j), found) in enumerate(zip(keys, results, strict=True)):
        ca, cb = cells[t * m_n + i].ci, cells[t * m_n + j].ci
        if found is None:  # skipped as untestable: NaN statistics (p_holm is NaN already)
            row = PairwiseRow(task=tasks[t], model_a=models[i], model_b=models[j],
                              n=int(finite[k].sum()), mean_diff=nan, ci_low=nan, ci_high=nan,
                              p_value=nan, p_holm=nan, effect_size=nan,
                              intervals_overlap=False, test=test)
        else:
            row = PairwiseRow(task=tasks[t], model_a=models[i], model_b=models[j], n=found.n,
                              mean_diff=found.mean_diff, ci_low=found.ci.low,
                              ci_high=found.ci.high, p_value=found.p_value,
                              p_holm=float(p_holm[k]), effect_size=found.effect_size,
                              intervals_overlap=bool(ca.low <= cb.high and cb.low <= ca.high),
                              test=test)
        rows.append(row)
    return Pairwise(rows=tuple(rows), test=test, confidence_level=level, notes=tuple(notes))

