"""Cross-validation folds and single held-out evaluations: fold spread, the Nadeau–Bengio
corrected resampled t test, Wilson intervals and the bootstrap over test examples."""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Any

import numpy as np
from numpy.typing import ArrayLike

from pytest_graphnetz.base.text import fmt_fixed, fmt_level, fmt_p
from pytest_graphnetz.stats._common import (
    ConfidenceInterval,
    RngLike,
    check_level,
    finite_vector,
    resolve_rng,
    standardized_effect,
    t_p_greater,
    t_quantile,
)
from pytest_graphnetz.stats.paired import PairedResult
from pytest_graphnetz.stats.tables import Pairwise, Table

if TYPE_CHECKING:
    from pytest_graphnetz.base.outcomes import TestOutcomes


@dataclass(frozen=True)
class FoldSummary:
    """Mean ± standard deviation of k fold scores: a description of fold spread.

    Deliberately no confidence level: fold scores share training data, so ``std / sqrt(k)`` is
    not a valid standard error (Bengio & Grangier, 2004).
    """

    mean: float
    std: float
    k: int

    def __str__(self) -> str:
        return f"{self.mean:.4f} ± {self.std:.4f} (spread over {self.k} folds, not a CI)"


def describe_folds(scores: ArrayLike) -> FoldSummary:
    """Mean ± sample std of k fold scores (k,): fold spread, with no confidence level."""
    arr = finite_vector(scores, "scores")
    return FoldSummary(mean=float(arr.mean()), std=float(arr.std(ddof=1)), k=int(arr.size))


def corrected_resampled_ttest(a: ArrayLike, b: ArrayLike, *, n_train: int, n_test: int,
                              confidence_level: float = 0.95) -> PairedResult:
    """Nadeau–Bengio corrected resampled t test on paired fold scores ``a``, ``b`` (J,).

    The variance of the mean difference is ``(1/J + n_test/n_train) · s²`` instead of ``s²/J``,
    because fold training sets overlap; t has J - 1 degrees of freedom. ``J`` may be k folds or
    r × k repeated folds; ``n_train``/``n_test`` are the sizes of one fold's splits.
    """
    a, b = finite_vector(a, "a"), finite_vector(b, "b")
    if a.shape != b.shape:
        raise ValueError(f"`a` has {a.size} folds but `b` has {b.size}; pair them by fold")
    if n_train <= 0 or n_test <= 0:
        raise ValueError(f"`n_train` and `n_test` must be positive, got {n_train}, {n_test}")
    level = check_level(confidence_level)
    d = a - b
    j = d.size
    mean, sd = float(d.mean()), float(d.std(ddof=1))
    se = math.sqrt(1 / j + n_test / n_train) * sd
    p_greater = float(t_p_greater(mean, se, j - 1))
    p = min(1.0, 2 * min(p_greater, 1 - p_greater))
    half = float(t_quantile((1 + level) / 2, j - 1)) * se
    return PairedResult(test="corrected-t", n=j, mean_diff=mean,
                        ci=ConfidenceInterval(mean - half, mean + half), p_value=p,
                        effect_size=float(standardized_effect(np.array(mean), np.array(sd))),
                        confidence_level=level, interval="corrected-t")


def wilson_interval(k: float, n: int, *, confidence_level: float = 0.95) -> ConfidenceInterval:
    """Wilson score interval for a proportion: ``k`` successes (e.g. correct answers) of ``n``.

    ``k`` may be fractional (a mean count over seeds); the interval depends on ``k / n``.
    """
    from scipy import special

    if n <= 0 or not 0 <= k <= n:
        raise ValueError(f"need 0 <= k <= n and n > 0, got k={k}, n={n}")
    z = float(special.ndtri((1 + check_level(confidence_level)) / 2))
    p = k / n
    centre = (p + z * z / (2 * n)) / (1 + z * z / n)
    half = z / (1 + z * z / n) * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n))
    return ConfidenceInterval(max(0.0, centre - half), min(1.0, centre + half))


def bootstrap_metric(y_true: ArrayLike, y_pred: ArrayLike,
                     metric: Callable[[np.ndarray, np.ndarray], float], *,
                     confidence_level: float = 0.95, n_resamples: int = 10_000,
                     rng: RngLike = None) -> ConfidenceInterval:
    """Percentile bootstrap interval of ``metric(y_true, y_pred)`` over test examples.

    ``y_true``, ``y_pred``: arrays whose first axis is the example axis (n, ...); each resample
    draws n examples with replacement and calls ``metric`` once. For one held-out evaluation:
    it is the uncertainty from the finite test set, not from training randomness.
    """
    y_true, y_pred = np.asarray(y_true), np.asarray(y_pred)
    if len(y_true) != len(y_pred) or len(y_true) < 2:
        raise ValueError(f"`y_true` ({len(y_true)}) and `y_pred` ({len(y_pred)}) need the same "
                         "length, at least 2 examples")
    level = check_level(confidence_level)
    idx = resolve_rng(rng).integers(0, len(y_true), size=(n_resamples, len(y_true)))
    values = np.array([float(metric(y_true[i], y_pred[i])) for i in idx])
    low, high = np.quantile(values, [(1 - level) / 2, (1 + level) / 2])
    return ConfidenceInterval(float(low), float(high))



# -- per-example outcomes: the test set's sampling error, and both sources together ------------
# An outcome is any object with ``n`` (examples), ``proportion`` (bool: Wilson applies),
# ``value()`` (the metric on all examples) and ``resampled(weights)`` ((B, n) example counts ->
# (B,) metric values), such as :class:`pytest_graphnetz.base.outcomes.TestOutcomes`.

SOURCES = ("seeds", "test_set", "total")
COVERS = {
    "seeds": "training randomness only (spread over seeds; the test set is held fixed)",
    "test_set": "the finite test set's sampling error only (training randomness not covered)",
    "total": "both: a two-level bootstrap over seeds, then test examples",
}


@dataclass(frozen=True)
class ExampleInterval:
    """An interval for a cell's mean from per-example outcomes; ``method`` and ``source`` say
    how it was made and which source of uncertainty it covers (:data:`COVERS`)."""

    mean: float
    ci: ConfidenceInterval
    method: str
    source: str
    n_seeds: int
    n_examples: int
    shared_test_set: bool


def example_interval(outcomes: Sequence[TestOutcomes], *, source: str = "test_set",
                     method: str | None = None, shared_test_set: bool = True,
                     confidence_level: float = 0.95, n_resamples: int = 2000,
                     rng: RngLike = None) -> ExampleInterval:
    """Interval for the mean over seeds of a cell's metric, from each seed's outcomes (S,).

    ``source="test_set"``: sampling error of the finite test set with the trained models held
    fixed. Proportions (accuracy) get the Wilson interval at the cell mean ``p`` with ``n`` the
    test-set size (one model's sampling error at that accuracy; ``method="bootstrap"`` asks for
    the bootstrap instead); other metrics a percentile bootstrap over test examples of the
    seed-mean metric. ``source="total"``: two-level percentile bootstrap, seeds drawn with
    replacement, then test examples. ``shared_test_set``: the seeds were evaluated on the same
    examples (one resample of example indices serves every seed, keeping their correlation);
    else each seed's examples are resampled on their own (folds, seeded splits).
    """
    _choice("source", source, ("test_set", "total"))
    _choice("method", method, (None, "wilson", "bootstrap"))
    level = check_level(confidence_level)
    outcomes = list(outcomes)
    if not outcomes:
        raise ValueError("no seed has per-example outcomes")
    sizes = {o.n for o in outcomes}
    shared = shared_test_set and len(sizes) == 1
    values = np.array([o.value() for o in outcomes])
    mean = float(np.mean(values))
    proportion = all(o.proportion for o in outcomes)
    n_examples = int(round(float(np.mean([o.n for o in outcomes]))))
    if method == "wilson" and (source != "test_set" or not proportion):
        raise ValueError("`method='wilson'` needs source='test_set' and a proportion metric "
                         "(accuracy); use method='bootstrap'")
    if source == "test_set" and proportion and method != "bootstrap":
        ci = wilson_interval(mean * n_examples, n_examples, confidence_level=level)
        return ExampleInterval(mean, ci, "wilson", source, len(outcomes), n_examples, shared)
    gen = resolve_rng(rng)
    M = np.empty((len(outcomes), n_resamples))
    if shared:
        weights = _resample_counts(gen, n_examples, n_resamples)
        for s, o in enumerate(outcomes):
            M[s] = o.resampled(weights)
    else:
        for s, o in enumerate(outcomes):
            M[s] = o.resampled(_resample_counts(gen, o.n, n_resamples))
    if source == "test_set":
        stats = np.nanmean(M, axis=0)
        label = "bootstrap over test examples"
    else:
        k = len(outcomes)
        seed_counts = _resample_counts(gen, k, n_resamples)  # (B, S)
        stats = np.nansum(seed_counts.T * M, axis=0) / np.sum(seed_counts.T * np.isfinite(M),
                                                                axis=0)
        label = "two-level bootstrap (seeds, then test examples)"
    if source == "total":
        # A percentile bootstrap over few seeds is too narrow (the resampled spread of S
        # values is (S-1)/S of theirs, and a normal tail is not a t tail): the interval is the
        # mean ± t(S-1) × the bootstrap's standard error × sqrt(S/(S-1)). Coverage checked by
        # simulation (tests/cover/test_uncertainty.py).
        k = len(outcomes)
        se = float(np.nanstd(stats, ddof=1)) * math.sqrt(k / max(k - 1, 1))
        half = float(t_quantile((1 + level) / 2, max(k - 1, 1))) * se
        return ExampleInterval(mean, ConfidenceInterval(mean - half, mean + half), label,
                               source, k, n_examples, shared)
    low, high = np.nanquantile(stats, [(1 - level) / 2, (1 + level) / 2])
    return ExampleInterval(mean, ConfidenceInterval(float(low), float(high)), label, source,
                           len(outcomes), n_examples, shared)


def _resample_counts(gen: np.random.Generator, n: int, n_resamples: int) -> np.ndarray:
    """(B, n) counts: how often each of n items is drawn in each of B resamples of size n."""
    idx = gen.integers(0, n, size=(n_resamples, n)) + n * np.arange(n_resamples)[:, None]
    counts = np.bincount(idx.ravel(), minlength=n * n_resamples).reshape(n_resamples, n)
    return counts.astype(float)


def _choice(name: str, value: Any, allowed: Sequence[Any]) -> None:
    if value not in allowed:
        raise ValueError(f"`{name}` must be one of {list(allowed)}, got {value!r}")


# -- paired on the same test examples: McNemar and the paired bootstrap over examples ----------

@dataclass(frozen=True)
class McNemarResult:
    """Exact McNemar test of two classifiers on the same n examples.

    ``a_only``: examples only A got right, ``b_only``: only B; the two-sided p is the exact
    binomial test of ``a_only`` among the ``a_only + b_only`` discordant examples at 1/2.
    """

    n: int
    a_only: int
    b_only: int
    statistic: int
    p_value: float


def mcnemar_exact(a_correct: ArrayLike, b_correct: ArrayLike) -> McNemarResult:
    """Exact McNemar test on per-example correctness bits ``a_correct``, ``b_correct`` (n,)."""
    from scipy.stats import binom

    a, b = np.asarray(a_correct, dtype=bool), np.asarray(b_correct, dtype=bool)
    if a.shape != b.shape or a.ndim != 1:
        raise ValueError(f"`a_correct` {a.shape} and `b_correct` {b.shape} must be 1-D bits "
                         "of the same test examples")
    a_only, b_only = int(np.sum(a & ~b)), int(np.sum(~a & b))
    low = min(a_only, b_only)
    p = min(1.0, 2 * float(binom.cdf(low, a_only + b_only, 0.5)))
    return McNemarResult(n=int(a.size), a_only=a_only, b_only=b_only, statistic=low, p_value=p)


def paired_example_bootstrap(a: TestOutcomes, b: TestOutcomes, *, higher_is_better: bool = True,
                             confidence_level: float = 0.95, n_resamples: int = 2000,
                             rng: RngLike = None) -> tuple[float, ConfidenceInterval, float]:
    """Paired percentile bootstrap over test examples of ``metric(a) - metric(b)``.

    ``a``, ``b``: outcomes of two models on the same n examples (see :func:`example_interval`);
    each resample draws one set of example indices for both. Oriented so that > 0 means A is
    better. Returns ``(difference, interval, p)``; p is two-sided from the resampled
    differences: twice the smaller share on either side of 0, within [1/n_resamples, 1].
    """
    if a.n != b.n:
        raise ValueError(f"the two models were scored on {a.n} and {b.n} examples; a paired "
                         "test needs the same test examples")
    level = check_level(confidence_level)
    sign = 1.0 if higher_is_better else -1.0
    weights = _resample_counts(resolve_rng(rng), a.n, n_resamples)
    d = sign * (a.resampled(weights) - b.resampled(weights))
    d = d[np.isfinite(d)]
    diff = sign * (a.value() - b.value())
    low, high = np.quantile(d, [(1 - level) / 2, (1 + level) / 2])
    p = min(1.0, 2 * min(np.mean(d <= 0), np.mean(d >= 0)))
    return diff, ConfidenceInterval(float(low), float(high)), float(max(p, 1 / d.size))


EXAMPLE_TESTS = ("mcnemar", "bootstrap-examples")
EXAMPLE_NOTES = (
    "per-seed rows are paired on the same test examples: they cover the test set's sampling "
    "error at that seed, NOT seed variance (another training seed may reverse them)",
    "rows with seed 'all' combine the seeds with the seed as the unit: a sign-flip test over "
    "seeds on the per-seed differences (examples are never pooled across seeds)",
)


@dataclass(frozen=True)
class ExamplePairRow:
    """One model pair on one task at one seed (``seed``) or across seeds (``seed=None``).

    ``mean_diff`` > 0 means ``model_a`` is better (metric direction applied). Per seed: ``n``
    test examples, ``a_only``/``b_only`` the examples only A / only B got right (McNemar's
    discordant counts; None for other metrics). Across seeds: ``n`` seeds, the mean per-seed
    difference with a t interval and the sign-flip p.
    """

    task: str
    model_a: str
    model_b: str
    seed: int | None
    n: int
    mean_diff: float
    ci_low: float
    ci_high: float
    p_value: float
    a_only: int | None
    b_only: int | None
    test: str


@dataclass(frozen=True, repr=False)
class ExamplePairwise(Table):
    """Rows of :class:`ExamplePairRow`; ``notes`` say what they do and do not cover."""

    rows: tuple[ExamplePairRow, ...]
    test: str
    confidence_level: float
    notes: tuple[str, ...] = ()

    def _table(self) -> tuple[list[str], list[list[object]]]:
        pct = fmt_level(self.confidence_level)
        headers = ["task", "A", "B", "seed", "n", "Δ (+: A better)", f"{pct} CI low",
                   f"{pct} CI high", "p", "A only", "B only", "test"]

        def cell(x: Any) -> str:
            return "" if x is None else str(x)

        return headers, [[r.task, r.model_a, r.model_b, "all" if r.seed is None else r.seed,
                          r.n, fmt_fixed(r.mean_diff), fmt_fixed(r.ci_low), fmt_fixed(r.ci_high),
                          fmt_p(r.p_value), cell(r.a_only), cell(r.b_only), r.test]
                         for r in self.rows]

    def __str__(self) -> str:
        return "\n".join([super().__str__(), *(f"note: {n}" for n in self.notes)])

    def __repr__(self) -> str:
        return f"ExamplePairwise({len(self.rows)} rows, test={self.test!r})\n{self}"


def example_pair_rows(task: str, model_a: str, model_b: str, pairs: Sequence[tuple[int, Any, Any]],
                      *, test: str, higher_is_better: bool, confidence_level: float = 0.95,
                      n_resamples: int = 2000, rng: RngLike = None) -> list[ExamplePairRow]:
    """Rows for one pair of models: one per seed of ``pairs`` ((seed, outcomes A, outcomes B)),
    then, with 2 or more seeds, the combined row (seed ``None``)."""
    from pytest_graphnetz.stats.paired import paired_test

    _choice("test", test, EXAMPLE_TESTS)
    level = check_level(confidence_level)
    gen = resolve_rng(rng)
    sign = 1.0 if higher_is_better else -1.0
    rows, diffs = [], []
    for seed, a, b in pairs:
        if a.n != b.n or (a.labels is not None and not np.array_equal(a.labels, b.labels)):
            raise ValueError(f"task {task!r}, seed {seed}: {model_a} and {model_b} were not "
                             "scored on the same test examples; a paired test needs them")
        if test == "mcnemar":
            if not (a.proportion and b.proportion):
                raise ValueError(f"task {task!r}: McNemar needs right/wrong per example "
                                 f"(accuracy), the metric is {a.metric!r}; use "
                                 "test='bootstrap-examples'")
            mc = mcnemar_exact(a.values, b.values)
            diff = (mc.a_only - mc.b_only) / mc.n
            # Newcombe's interval is overkill here; the bootstrap gives the difference's CI.
            _, ci, _ = paired_example_bootstrap(a, b, confidence_level=level,
                                                n_resamples=n_resamples, rng=gen)
            rows.append(ExamplePairRow(task, model_a, model_b, seed, mc.n, diff, ci.low,
                                       ci.high, mc.p_value, mc.a_only, mc.b_only,
                                       "mcnemar (exact)"))
        else:
            diff, ci, p = paired_example_bootstrap(a, b, higher_is_better=higher_is_better,
                                                   confidence_level=level,
                                                   n_resamples=n_resamples, rng=gen)
            rows.append(ExamplePairRow(task, model_a, model_b, seed, a.n, diff, ci.low, ci.high,
                                       p, None, None, "bootstrap over examples"))
        diffs.append((sign * a.value(), sign * b.value()))
    if len(diffs) >= 2:
        va, vb = np.array(diffs).T
        res = paired_test(va, vb, test="permutation", confidence_level=level, rng=gen)
        rows.append(ExamplePairRow(task, model_a, model_b, None, res.n, res.mean_diff,
                                   res.ci.low, res.ci.high, res.p_value, None, None,
                                   "sign-flip over seeds"))
    return rows


# -- k-fold CV cells: the corrected resampled t test wherever a paired test runs -------------

FOLD_NOTE = ("task {task!r} is {k}-fold cross-validation: folds share training data, so its "
             "paired tests use the corrected resampled t test (Nadeau–Bengio: variance × "
             "(1/J + 1/(k−2))), not {test}; its mean ± std is fold spread, not a CI")


def fold_corrected_pairwise(table: Pairwise, X: ArrayLike, *, tasks: Sequence[str],
                            models: Sequence[str], folds: Sequence[int | None],
                            higher_is_better: Sequence[bool]) -> Pairwise:
    """``table`` (over ``X[task, model, seed]``) with every row of a k-fold task (``folds``
    per task, None for none) redone as the corrected resampled t test (on the pairs finite in
    both models), Holm re-adjusted within the task, and :data:`FOLD_NOTE` added."""
    from pytest_graphnetz.stats.decisions import holm

    values = np.asarray(X, dtype=float)
    rows = list(table.rows)
    notes = list(table.notes)
    for t_i, (task, k) in enumerate(zip(tasks, folds, strict=True)):
        if k is None:
            continue
        sign = 1.0 if higher_is_better[t_i] else -1.0
        mine = [i for i, r in enumerate(rows) if r.task == task and math.isfinite(r.p_value)]
        for i in mine:
            r = rows[i]
            a = sign * values[t_i, list(models).index(r.model_a)]
            b = sign * values[t_i, list(models).index(r.model_b)]
            keep = np.isfinite(a) & np.isfinite(b)
            # n_test / n_train of one fold: 1 / (k - 2) (fold_ratio)
            res = corrected_resampled_ttest(a[keep], b[keep], n_train=k - 2, n_test=1,
                                            confidence_level=table.confidence_level)
            rows[i] = replace(r, n=res.n, mean_diff=res.mean_diff, ci_low=res.ci.low,
                              ci_high=res.ci.high, p_value=res.p_value,
                              effect_size=res.effect_size, test="corrected-t (folds)")
        if mine:
            adjusted = holm([rows[i].p_value for i in mine]).p_adjusted
            for i, p in zip(mine, adjusted, strict=True):
                rows[i] = replace(rows[i], p_holm=float(p))
        notes.append(FOLD_NOTE.format(task=task, k=k, test=table.test))
    return replace(table, rows=tuple(rows), notes=tuple(notes))
