"""The suite row: one paired test per model on the per-seed mean difference across a gate
call's tasks, for diffuse regressions that no single cell shows.

A drop of 0.3 point on each of 5 tasks, at 10 seeds and a paired sd of 0.86 point per task,
is caught by Holm over the 5 cells about a third of the time; the per-seed mean across the
tasks has sd 0.86/√5 and the same 0.3-point drop, and one t test on it catches it about three
times in four (``benchmarks/suite_row.py``). The row pairs by seed: seed s's difference is the
mean over tasks of ``candidate − baseline`` at seed s, so whatever correlation the tasks share
through a seed stays in the row's spread and no independence between tasks is assumed.

Its hypothesis ("the mean change over the suite is at least −margin") is one more hypothesis
of the call's REGRESSED family. :func:`suite_family` tests the cells and the row together by
weighted Holm (Holm 1979, Scand. J. Statist. 6:65-70, the weighted form; the graphical
approach of Bretz et al. 2009, Statist. Med. 28:586-604, with transitions proportional to the
weights), so the call's family-wise error stays ≤ α under any dependence; the row's weight
trades diffuse detection against the cells' (measured in the benchmark).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
from numpy.typing import ArrayLike

from pytest_graphnetz.stats._common import ConfidenceInterval, check_level, t_quantile, t_sf
from pytest_graphnetz.stats.decisions import Verdict, decide_look, final_verdict

DEFAULT_SUITE_WEIGHT = 0.5  # share of α the suite row gets first in its call's family


def suite_differences(candidate: ArrayLike, baseline: ArrayLike, *, higher_is_better: bool = True,
                      tasks: Sequence[str] | None = None) -> np.ndarray:
    """Per seed, the mean paired difference across tasks: ``candidate`` and ``baseline`` are
    shaped (task, seed), one model's values of one metric on seeds aligned by seed value.
    Returns shape (seed,), sign-flipped for lower-is-better metrics (+ = better).

    Every value must be finite: a diverged seed is decided in its own cell (it fails it);
    drop that seed from every task before building the row. ``tasks`` names the rows in errors.
    """
    cand = np.asarray(candidate, dtype=float)
    base = np.asarray(baseline, dtype=float)
    if cand.ndim != 2 or cand.shape != base.shape:
        raise ValueError(f"`candidate` and `baseline` must both be shaped (task, seed) and "
                         f"equal, got {cand.shape} and {base.shape}")
    names = list(tasks) if tasks is not None else [str(i) for i in range(cand.shape[0])]
    if len(names) != cand.shape[0]:
        raise ValueError(f"{len(names)} task names for {cand.shape[0]} tasks")
    bad = ~(np.isfinite(cand) & np.isfinite(base))
    if bad.any():
        where = [(names[i], int(j)) for i, j in zip(*np.nonzero(bad), strict=True)]
        raise ValueError(f"suite row: non-finite values at (task, seed position) {where[:5]}; "
                         "drop diverged seeds from every task first (their cells count them)")
    sign = 1.0 if higher_is_better else -1.0
    return sign * (cand - base).mean(axis=0)


@dataclass(frozen=True)
class SuiteResult:
    """A suite row's paired t test on ``diffs`` (per-seed mean differences, + = better).

    ``n``: seeds; ``n_tasks``: tasks averaged (None when unknown); ``mean_diff``, ``sd_diff``,
    ``se``; ``statistic``: ``(mean + margin)/se``, Student t with ``n − 1`` df under
    "mean = −margin"; ``p_value``: one-sided p of H1 "mean < −margin" (small = REGRESSED);
    ``p_not_worse``: of H1 "mean > −δ" (small = NOT WORSE; δ = ``min_effect``, or ``margin``
    when None); ``p_better``: of H1 "mean > +margin"; ``verdict``: at raw level ``alpha`` in
    the order REGRESSED, BETTER, NOT WORSE, INCONCLUSIVE (IDENTICAL when every difference is
    0). In a family, REGRESSED is decided by :func:`suite_family` instead.
    """

    n: int
    n_tasks: int | None
    mean_diff: float
    sd_diff: float
    se: float
    statistic: float
    p_value: float
    p_not_worse: float
    p_better: float
    margin: float
    min_effect: float | None
    alpha: float
    verdict: Verdict

    @property
    def df(self) -> int:
        return self.n - 1

    def confidence_interval(self, confidence_level: float | None = None) -> ConfidenceInterval:
        """Two-sided t interval of the mean; default ``1 − 2α``, the one that matches the
        one-sided decisions at ``alpha``."""
        level = 1 - 2 * self.alpha if confidence_level is None else check_level(confidence_level)
        half = float(t_quantile((1 + level) / 2, self.df)) * self.se
        return ConfidenceInterval(self.mean_diff - half, self.mean_diff + half)


def suite_test(diffs: ArrayLike, *, margin: float = 0.0, min_effect: float | None = None,
               alpha: float = 0.05, n_tasks: int | None = None) -> SuiteResult:
    """One-sided paired t tests of a suite row: ``diffs`` (seed,) from
    :func:`suite_differences`. ``margin`` and ``min_effect`` (δ > margin) are in metric units."""
    d = np.asarray(diffs, dtype=float)
    if d.ndim != 1 or d.size < 2 or not np.all(np.isfinite(d)):
        raise ValueError(f"suite row: `diffs` must be 1-D, finite, with at least 2 seeds, got "
                         f"shape {d.shape}")
    if not margin >= 0:
        raise ValueError(f"suite row: `margin` must be >= 0, got {margin!r}")
    if min_effect is not None and not (math.isfinite(min_effect) and min_effect > margin):
        raise ValueError(f"suite row: `min_effect` (δ) must exceed `margin` ({margin:g}), got "
                         f"{min_effect!r}")
    if not 0 < alpha < 0.5:
        raise ValueError(f"suite row: `alpha` must lie in (0, 0.5), got {alpha!r}")
    n = d.size
    mean, sd = float(d.mean()), float(d.std(ddof=1))
    se = sd / math.sqrt(n)
    delta = margin if min_effect is None else float(min_effect)

    def t(bound: float) -> float:
        gap = mean - bound
        if se > 0:
            return gap / se
        return math.copysign(math.inf, gap) if gap else 0.0

    t_reg, t_nw, t_bt = t(-margin), t(-delta), t(margin)
    p_reg = float(t_sf(-t_reg, n - 1))
    p_nw, p_bt = (float(t_sf(x, n - 1)) for x in (t_nw, t_bt))
    code = decide_look(p_reg, p_nw, p_bt, level=alpha, regressed_level=alpha, last=True,
                       identical=bool(np.all(d == 0)))
    verdict = final_verdict(code)
    return SuiteResult(n=n, n_tasks=n_tasks, mean_diff=mean, sd_diff=sd, se=se, statistic=t_reg,
                       p_value=p_reg, p_not_worse=p_nw, p_better=p_bt, margin=float(margin),
                       min_effect=min_effect, alpha=float(alpha), verdict=verdict)


@dataclass(frozen=True)
class FamilyResult:
    """Weighted Holm over a call's REGRESSED hypotheses: the cells, then the suite rows.

    ``reject_cells`` / ``reject_suite``: rejections in input order; ``level_cells`` /
    ``level_suite``: the level each hypothesis was last tested at (its rejection level when
    rejected), the level its printed interval should use; ``alpha``, ``suite_weight``;
    ``p_adjusted_cells`` / ``p_adjusted_suite``: weighted-Holm adjusted p
    (:func:`weighted_holm_adjusted`), ``<= alpha`` exactly when rejected.
    """

    reject_cells: tuple[bool, ...]
    reject_suite: tuple[bool, ...]
    level_cells: tuple[float, ...]
    level_suite: tuple[float, ...]
    alpha: float
    suite_weight: float
    p_adjusted_cells: tuple[float, ...] = ()
    p_adjusted_suite: tuple[float, ...] = ()


def weighted_holm_adjusted(p_values: ArrayLike, weights: ArrayLike) -> np.ndarray:
    """Adjusted p of weighted Holm, ``p_values`` (m,) with ``weights`` (m,) summing to 1: the
    smallest α at which :func:`weighted_holm` rejects each hypothesis. In the order of ``p/w``,
    ``max`` over the steps so far of ``p · (weight left) / w``, capped at 1 (1 at weight 0)."""
    p = np.asarray(p_values, dtype=float)
    w = np.asarray(weights, dtype=float)
    if p.ndim != 1 or w.shape != p.shape:
        raise ValueError(f"`p_values` and `weights` must be 1-D and equal, got {p.shape} and "
                         f"{w.shape}")
    with np.errstate(divide="ignore"):
        ratio = np.where(w > 0, p / np.where(w > 0, w, 1.0), np.inf)
    order = np.argsort(ratio, kind="stable")
    left = np.flip(np.cumsum(np.flip(w[order])))
    with np.errstate(invalid="ignore"):
        step = np.minimum(1.0, np.where(np.isfinite(ratio[order]), ratio[order] * left, 1.0))
    adjusted = np.empty_like(p)
    adjusted[order] = np.maximum.accumulate(step)
    return adjusted


def weighted_holm(p_values: ArrayLike, weights: ArrayLike, alpha: float = 0.05) -> tuple[np.ndarray,
                                                                             np.ndarray]:
    """Weighted Holm step-down on ``p_values`` shaped (..., m) with ``weights`` (m,) summing
    to 1: at each step the hypothesis with the smallest ``p/w`` among those left is rejected
    when ``p <= α · w / (sum of the weights left)``; the first that is not stops the procedure.
    Returns the rejections and the level each hypothesis was last tested at, both shaped like
    ``p_values`` (vectorised over leading axes, for simulation). Equal weights give Holm."""
    p = np.asarray(p_values, dtype=float)
    w = np.asarray(weights, dtype=float)
    if w.ndim != 1 or p.shape[-1] != w.size or np.any(w < 0) or not math.isclose(w.sum(), 1):
        raise ValueError(f"`weights` must be {p.shape[-1]} numbers >= 0 summing to 1, got {w}")
    if not 0 < alpha < 1:
        raise ValueError(f"`alpha` must lie in (0, 1), got {alpha!r}")
    with np.errstate(divide="ignore"):
        ratio = np.where(w > 0, p / np.where(w > 0, w, 1.0), np.inf)
    order = np.argsort(ratio, axis=-1, kind="stable")
    w_sorted = w[order]
    left = np.flip(np.cumsum(np.flip(w_sorted, -1), -1), -1)  # weight still in play per step
    with np.errstate(invalid="ignore", divide="ignore"):
        level_sorted = np.where(left > 0, alpha * w_sorted / left, 0.0)
    ok = np.take_along_axis(p, order, -1) <= level_sorted
    ok &= w_sorted > 0
    reject_sorted = np.cumprod(ok, axis=-1).astype(bool)
    # A hypothesis not rejected was last tested at the step that stopped the procedure, with
    # the weight left there (the smallest `left` among the steps reached).
    reached = np.concatenate([np.ones_like(ok[..., :1]), reject_sorted[..., :-1]], axis=-1)
    stop_left = np.where(reached, left, np.nan)
    last_left = np.nanmin(stop_left, axis=-1, keepdims=True)
    with np.errstate(invalid="ignore", divide="ignore"):
        tested_sorted = np.where(reject_sorted, level_sorted, alpha * w_sorted / last_left)
    reject = np.empty_like(reject_sorted)
    tested = np.empty_like(tested_sorted)
    np.put_along_axis(reject, order, reject_sorted, -1)
    np.put_along_axis(tested, order, tested_sorted, -1)
    return reject, tested


def suite_family(cell_p: Sequence[float], suite_p: Sequence[float], *, alpha: float = 0.05,
                 suite_weight: float = DEFAULT_SUITE_WEIGHT) -> FamilyResult:
    """The call's REGRESSED family: ``cell_p``, the raw one-sided p of each tested cell (H1
    "mean d < −margin"), and ``suite_p``, those of the suite rows (one per model and metric).
    The rows share ``suite_weight`` of α equally, the cells the rest; a rejected hypothesis
    passes its weight on to the others in proportion to theirs (weighted Holm), so the family's
    error is ≤ α under any dependence. ``suite_weight = rows / (cells + rows)`` is plain Holm
    over all of them. Without suite rows it is Holm over the cells.
    """
    cells, rows = list(cell_p), list(suite_p)
    if not 0 <= suite_weight < 1:
        raise ValueError(f"`suite_weight` must lie in [0, 1), got {suite_weight!r}")
    if not cells and not rows:
        return FamilyResult((), (), (), (), float(alpha), float(suite_weight), (), ())
    share = suite_weight if rows and cells else (1.0 if rows else 0.0)
    weights = np.array([(1 - share) / max(len(cells), 1)] * len(cells)
                       + [share / max(len(rows), 1)] * len(rows))
    reject, level = weighted_holm(np.array(cells + rows), weights, alpha)
    adjusted = weighted_holm_adjusted(np.array(cells + rows), weights)
    k = len(cells)
    return FamilyResult(
        reject_cells=tuple(bool(x) for x in reject[:k]),
        reject_suite=tuple(bool(x) for x in reject[k:]),
        level_cells=tuple(float(x) for x in level[:k]),
        level_suite=tuple(float(x) for x in level[k:]),
        alpha=float(alpha), suite_weight=float(share),
        p_adjusted_cells=tuple(float(x) for x in adjusted[:k]),
        p_adjusted_suite=tuple(float(x) for x in adjusted[k:]))
