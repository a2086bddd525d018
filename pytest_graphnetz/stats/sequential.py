"""Deciding with the one design (:mod:`.boundaries`): a cell at its looks, many cells over a
schedule, a family of cells (what the next looks would deliver: :mod:`.lookahead`).

A cell's paired differences ``d`` (sign-flipped so ``d > 0`` means "candidate better") are
looked at after each look's seeds. Three one-sided hypotheses are each tested with their own
α-spending boundary, so each error rate holds over every look a team takes:

- REGRESSED rejects "mean d ≥ −margin": ``(mean + margin) / se <= −c_k``;
- NOT WORSE rejects "mean d ≤ −δ" (δ = ``min_effect``): ``(mean + δ) / se >= c_k``;
- BETTER rejects "mean d ≤ +margin": ``(mean − margin) / se >= c_k``.

Each boundary is non-binding for the others, so P(REGRESSED | mean d = −margin) ≤ α and
P(NOT WORSE | mean d = −δ) ≤ α. Every decision here goes through
:func:`~.decisions.decide_look` on the look's one-sided p-values, as the gate's does:
:func:`walk_looks` is the one loop over looks, fed by raw differences (:func:`run_schedule`,
:func:`sequential_decide`) or by simulated sufficient statistics
(:func:`~.lookahead.sequential_power`, :func:`~.lookahead.advise_next_look`).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from pytest_graphnetz.stats._common import ConfidenceInterval, as_vector, t_moments
from pytest_graphnetz.stats.boundaries import Design, design, schedule
from pytest_graphnetz.stats.decisions import LOOK_VERDICTS, Code, Verdict, decide_look
from pytest_graphnetz.stats.skew import DEFAULT_SKEW_Z, guarded_skewness, guarded_t


@dataclass(frozen=True)
class SequentialDecision:
    """The state of one cell after a look.

    ``verdict``: REGRESSED, NOT WORSE, BETTER, IDENTICAL, INCONCLUSIVE (open at the design's
    last look), or ``None`` while the cell continues; ``more_seeds``: seeds to add before the
    next look (0 once decided); ``n``: pairs used; ``look``: 1-based index of this look;
    ``ci``: the two-sided ``1 − 2·nominal`` interval at this look (``mean ± c_k · se``), the
    interval that matches the decision; ``critical``: ``c_k`` (REGRESSED's at
    ``regressed_alpha``: ``critical_regressed``); ``t_regressed``, ``t_not_worse``,
    ``t_better``: the three statistics.
    """

    verdict: Verdict | None
    more_seeds: int
    n: int
    look: int
    looks: tuple[int, ...]
    mean_diff: float
    sd_diff: float
    ci: ConfidenceInterval
    critical: float
    critical_regressed: float
    t_regressed: float
    t_not_worse: float
    t_better: float
    margin: float
    min_effect: float | None
    alpha: float
    regressed_alpha: float

    @property
    def stopped(self) -> bool:
        return self.verdict is not None


def sequential_decide(diffs: Any, design: Design, *, margin: float = 0.0,
                      min_effect: float | None = None, regressed_alpha: float | None = None,
                      label: str | None = None,
                      skew_threshold: float | None = DEFAULT_SKEW_Z) -> SequentialDecision:
    """The decision on one cell at a look: ``diffs`` (n,) are its finite paired differences,
    sign-flipped so ``+`` is better, with ``n`` one of ``design.looks``. The cell is taken to be
    open at this look (no earlier look stopped it); INCONCLUSIVE only at the design's last look.

    ``min_effect`` (δ > margin): NOT WORSE's boundary; None falls back to ``-margin``.
    ``regressed_alpha``: the level of REGRESSED's boundary when it differs from the design's
    (Holm across cells). IDENTICAL when every difference is 0 at the first look.
    """
    where = label or "cell"
    d = as_vector(diffs, "diffs", where)
    if not np.all(np.isfinite(d)):
        raise ValueError(f"{where}: `diffs` must be finite (diverged seeds are decided by the "
                         "gate before the sequential test)")
    if d.size not in design.looks:
        raise ValueError(f"{where}: {d.size} paired seeds is not a look of {design.looks}; "
                         "train up to the next look")
    k = design.looks.index(d.size)
    codes, _, stats = walk_differences(d[None, :], design, margin=margin, min_effect=min_effect,
                                       regressed_alpha=regressed_alpha, upto=d.size, first=k,
                                       skew_threshold=skew_threshold)
    code = int(codes[0])
    more = design.looks[k + 1] - d.size if code == Code.CONTINUE else 0
    mean, sd, se, c, c_reg, t_reg, t_nw, t_bt = (float(x[0]) for x in stats)
    return SequentialDecision(
        verdict=LOOK_VERDICTS[code], more_seeds=more, n=d.size, look=k + 1, looks=design.looks,
        mean_diff=mean, sd_diff=sd, ci=ConfidenceInterval(mean - c * se, mean + c * se),
        critical=c, critical_regressed=c_reg, t_regressed=t_reg, t_not_worse=t_nw,
        t_better=t_bt, margin=float(margin), min_effect=min_effect, alpha=design.alpha,
        regressed_alpha=design.alpha if regressed_alpha is None else float(regressed_alpha))


def run_schedule(D: Any, design: Design, *, margin: float = 0.0,
                 min_effect: float | None = None, regressed_alpha: float | None = None,
                 every_look: bool = False,
                 skew_threshold: float | None = DEFAULT_SKEW_Z) -> tuple[np.ndarray, np.ndarray]:
    """The whole design on many cells at once: ``D`` (cells, >= MAX) holds each cell's paired
    differences in seed order. Returns per cell its verdict (an object array of
    :class:`Verdict`) and the seeds of the look it is reported at (int array). By default as
    if each cell had taken more seeds only while open (an adaptive run); ``every_look``: as a
    run that holds all MAX seeds, which reads every look (a REGRESSED crossing at any look
    wins over an earlier NOT WORSE or BETTER). The skew guard (:mod:`.skew`) acts as in the
    gate, on each look's seeds; ``skew_threshold`` None turns it off (the plain t test). For
    simulation and benchmarks."""
    D = np.asarray(D, dtype=float)
    if D.ndim != 2 or D.shape[1] < design.max_seeds or not np.all(np.isfinite(D)):
        raise ValueError(f"`D` must be finite, shaped (cells, >= {design.max_seeds}), got "
                         f"{D.shape}")
    codes, n_used, _ = walk_differences(D, design, margin=margin, min_effect=min_effect,
                                        regressed_alpha=regressed_alpha, upto=design.max_seeds,
                                        every_look=every_look, skew_threshold=skew_threshold)
    return np.array([LOOK_VERDICTS[c] for c in codes], dtype=object), n_used


def walk_differences(D: np.ndarray, design: Design, *, margin: float, min_effect: float | None,
                     regressed_alpha: float | None, upto: int, first: int = 0,
                     every_look: bool = False,
                     skew_threshold: float | None = DEFAULT_SKEW_Z
                     ) -> tuple[np.ndarray, np.ndarray, tuple]:
    """:func:`walk_looks` on raw differences ``D`` (rows, seeds), with the skew guard at
    ``skew_threshold`` (None: off) measured at each look on that look's seeds only: no look
    reads a seed past it, whatever the rows hold."""

    def at(k: int, n: int, open_: np.ndarray) -> LookStats:
        X = D[open_, :n]
        mean, sd, _ = t_moments(X)   # scaled before squaring: finite never gives inf
        return mean, sd, np.max(np.abs(X), axis=1), np.all(X == 0, axis=1)

    skew = None
    if skew_threshold is not None:
        threshold = float(skew_threshold)

        def skew(k: int, n: int, open_: np.ndarray) -> np.ndarray:
            return guarded_skewness(D[open_, :n], threshold=threshold)

    return walk_looks(at, D.shape[0], design, Hypotheses(margin, min_effect, regressed_alpha),
                      upto=upto, first=first, every_look=every_look, skew=skew)


# Per open row at a look: mean, sd, the largest |difference| (the rounding scale of
# `_sided_t`) and whether every difference is exactly 0.
LookStats = tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]


@dataclass(frozen=True)
class Hypotheses:
    """The three one-sided hypotheses a look tests (the module's docstring): REGRESSED's and
    BETTER's at ``margin``, NOT WORSE's at ``-min_effect`` (δ > margin; None: ``-margin``),
    REGRESSED's boundary at ``regressed_alpha`` (None: the design's α; Holm across cells)."""

    margin: float = 0.0
    min_effect: float | None = None
    regressed_alpha: float | None = None

    def __post_init__(self) -> None:
        if not self.margin >= 0:
            raise ValueError(f"`margin` must be >= 0 (in metric units), got {self.margin!r}")
        if self.min_effect is not None and not self.min_effect > self.margin:
            raise ValueError(f"`min_effect` (δ) must exceed `margin` ({self.margin}), got "
                             f"{self.min_effect!r}")

    @property
    def bounds(self) -> tuple[float, float, float]:
        """What REGRESSED's, NOT WORSE's and BETTER's statistics are centred on."""
        delta = self.margin if self.min_effect is None else float(self.min_effect)
        return -self.margin, -delta, self.margin


def walk_looks(at: Callable[[int, int, np.ndarray], LookStats], rows: int, design: Design,
               hypotheses: Hypotheses, *, upto: int, first: int = 0, every_look: bool = False,
               skew: Callable[[int, int, np.ndarray], np.ndarray] | None = None,
               correct: Callable[..., tuple[np.ndarray, np.ndarray, np.ndarray]] = guarded_t
               ) -> tuple[np.ndarray, np.ndarray, tuple]:
    """The one loop over looks, whatever holds the data: ``at(k, n, open_)`` gives the open
    rows' statistics at look ``k`` (``n`` seeds), for the looks from index ``first`` up to
    ``upto`` seeds; a row still open at the design's last look is INCONCLUSIVE, before it
    CONTINUE. Each look decides ``hypotheses`` through :func:`~.decisions.decide_look` on the
    t statistics' one-sided p-values. Returns per row its code, the seeds of the look it is
    reported at, and its statistics there (mean, sd, se, c, c_regressed, t_regressed,
    t_not_worse, t_better).

    By default a row stops at its first crossing (it trains no more seeds). ``every_look``: the
    rows hold every look's seeds, and every look is read (futility non-binding): a row that
    crossed NOT WORSE or BETTER keeps that verdict and look unless a later look crosses
    REGRESSED, which wins; IDENTICAL only when every look is all zeros. Each boundary is
    calibrated on paths that run on past the others' crossings (:func:`~.boundaries.calibrate`),
    so its error rate holds under this rule as it stands.

    ``skew(k, n, open_)``: the open rows' guarded skewness (:mod:`.skew`: 0 where the guard
    does not fire); the three statistics then go through ``correct(t_regressed, t_not_worse,
    t_better, skewness, n)`` before their p-values, by default the gate's guard
    (:func:`~.skew.guarded_t`; the reported statistics stay the plain t's). Benchmarks pass
    other rules to weigh them against it."""
    from scipy import special

    reg = (design if hypotheses.regressed_alpha is None
           else design.at_level(hypotheses.regressed_alpha))
    code = np.full(rows, int(Code.CONTINUE))
    n_used = np.zeros(rows, dtype=int)
    stats = tuple(np.full(rows, np.nan) for _ in range(8))
    upto_k = sum(1 for n in design.looks if n <= upto) - 1
    if upto_k < first:
        raise ValueError(f"{upto} seeds reach no look of {design.looks} from look {first + 1}")
    last = len(design.looks) - 1   # a cell still open there is INCONCLUSIVE
    zero_so_far = np.ones(rows, dtype=bool)   # every look all zeros (every_look)
    for k in range(first, upto_k + 1):
        passed = np.isin(code, (Code.NOT_WORSE, Code.BETTER))
        open_ = (code == Code.CONTINUE) | (passed if every_look else False)
        if not open_.any():
            break
        n = design.looks[k]
        mean, sd, scale, zero = at(k, n, open_)
        se = sd / math.sqrt(n)
        t_reg, t_nw, t_bt = (_sided_t(mean, se, scale, b) for b in hypotheses.bounds)
        h_reg, h_nw, h_bt = t_reg, t_nw, t_bt
        if skew is not None:
            h_reg, h_nw, h_bt = correct(t_reg, t_nw, t_bt, skew(k, n, open_), n)
        if every_look:
            zero_so_far[open_] &= zero
            identical = zero_so_far[open_] & (k == upto_k)
        else:
            identical = zero if k == first else np.zeros(zero.shape, dtype=bool)
        df = n - 1
        new = decide_look(special.stdtr(df, h_reg), special.stdtr(df, -h_nw),
                          special.stdtr(df, -h_bt), level=design.nominal[k],
                          regressed_level=reg.nominal[k], last=k == last, identical=identical)
        moved = np.ones(new.shape, dtype=bool)
        if every_look:
            new, moved = _read_on(new, code[open_], passed[open_],
                                  zero_so_far[open_] & ~identical, last=k == last)
        code[open_] = new
        rows_moved = np.flatnonzero(open_)[moved]
        n_used[rows_moved] = n
        c, c_reg = design.critical[k], reg.critical[k]
        for arr, val in zip(stats, (mean, sd, se, np.full_like(mean, c), np.full_like(mean, c_reg),
                                    t_reg, t_nw, t_bt), strict=True):
            arr[rows_moved] = val[moved]
    return code, n_used, stats


def _read_on(new: np.ndarray, before: np.ndarray, passed: np.ndarray, all_zero: np.ndarray, *,
             last: bool) -> tuple[np.ndarray, np.ndarray]:
    """A look of a run that reads every look, on its open rows: their codes ``new`` at this
    look, ``before`` it, which had ``passed`` (NOT WORSE or BETTER), and which read ``all_zero``
    so far without being IDENTICAL. An all-zero look is no evidence yet (IDENTICAL needs every
    look); a row that passed keeps its look unless REGRESSED crosses here. Returns the codes
    and which rows take this look."""
    new = np.where(all_zero, Code.CONTINUE, new)
    if last:
        new = np.where(new == Code.CONTINUE, Code.INCONCLUSIVE, new)
    moved = ~passed | (new == Code.REGRESSED)
    return np.where(moved, new, before), moved


def _sided_t(mean: np.ndarray, se: np.ndarray, scale: np.ndarray, bound: float) -> np.ndarray:
    """``(mean − bound) / se`` per row, exact where the spread is nil: a gap within rounding of
    the data (a few ulps of ``scale``, the row's largest magnitude) counts as 0, a real gap with
    no spread is ±inf, and no gap with no spread is 0 (the data sit on the boundary)."""
    scale = scale + abs(bound)
    tol = 64 * np.finfo(float).eps * np.maximum(scale, np.finfo(float).tiny)
    gap = mean - bound
    gap = np.where(np.abs(gap) <= tol, 0.0, gap)
    flat = se <= tol
    exact = np.where(gap > 0, np.inf, np.where(gap < 0, -np.inf, 0.0))
    with np.errstate(divide="ignore", invalid="ignore"):
        return np.where(flat, exact, gap / np.where(flat, 1.0, se))


@dataclass(frozen=True)
class FamilyDecision:
    """Group-sequential Holm on one gate call's REGRESSED hypotheses.

    ``rejected[i]``: cell i is REGRESSED; ``at_look[i]``: the look index whose statistic
    rejected it (None if not rejected); ``level``: the last level of the step-down,
    ``alpha / (m - r)`` with r rejections; ``p_adjusted``: classical Holm-adjusted p per cell
    for one-look families (None otherwise, whose decision is the boundaries'); ``levels``: per
    cell, the level it was last tested at when the cells' levels differ (a weighted family,
    e.g. with a suite row), else None; ``tested_at``: per cell of a step-down family, the level
    of the step that rejected it (``α / (m − j)`` for the j-th rejection), or ``level`` for a
    cell never rejected (empty: ``level`` for every cell).
    """

    rejected: tuple[bool, ...]
    at_look: tuple[int | None, ...]
    level: float
    p_adjusted: tuple[float, ...] | None
    levels: tuple[float, ...] | None = None
    tested_at: tuple[float, ...] = ()

    def level_of(self, i: int) -> float:
        """The level cell ``i``'s REGRESSED was last tested at: the step that rejected it, or
        the family's last step for a cell it did not reject (a weighted family: its own)."""
        if self.levels is not None:
            return self.levels[i]
        return self.tested_at[i] if self.tested_at else self.level


def sequential_holm(histories: Sequence[Sequence[float]],
                    designs: Sequence[Design]) -> FamilyDecision:
    """Holm across the cells of one gate call for their REGRESSED boundaries, the
    group-sequential way (Maurer & Bretz 2013, Statistics in Biopharmaceutical Research
    5:311-320): each open hypothesis is tested at level ``α / (m − r)``, ``r`` the number
    already rejected, and when one is rejected the others are re-tested at every look they
    have had, with the boundaries of the new level.

    ``histories[i]``: cell i's one-sided REGRESSED p-values, one per look it has had, each on
    exactly that look's seeds; ``designs[i]``: its design (one ``alpha`` for all). A look
    rejects at level ``a`` when its p is at most ``design.at_level(a).nominal[k]``. When every
    design has one look spending the same α this is Holm's step-down on the p-values, computed
    the classical way (adjusted p ``<=`` what the look spends).
    """
    from pytest_graphnetz.stats.decisions import holm

    if len(histories) != len(designs):
        raise ValueError(f"{len(histories)} histories for {len(designs)} designs")
    alphas = {d.alpha for d in designs}
    if len(alphas) > 1:
        raise ValueError(f"Holm needs one `alpha` for the whole family, got {sorted(alphas)}")
    m = len(histories)
    if m == 0:
        return FamilyDecision((), (), 0.0, ())
    alpha = designs[0].alpha
    first = {d.spent[0] for d in designs}
    if all(len(d.looks) == 1 for d in designs) and len(first) == 1:
        if any(len(h) != 1 for h in histories):
            raise ValueError("a one-look design has exactly one p-value per cell")
        result = holm([h[0] for h in histories], first.pop())
        r = sum(result.reject)
        return FamilyDecision(result.reject, tuple(0 if x else None for x in result.reject),
                              alpha / max(m - r, 1), result.p_adjusted,
                              tested_at=tuple(alpha / k for k in result.steps))
    at: list[int | None] = [None] * m
    steps: list[float | None] = [None] * m
    while None in at:
        level = alpha / at.count(None)
        new = {}
        for i, (hist, d) in enumerate(zip(histories, designs, strict=True)):
            if at[i] is None:
                if len(hist) > len(d.looks):
                    raise ValueError(f"cell {i}: {len(hist)} looks for a design of "
                                     f"{len(d.looks)}")
                nominal = d.at_level(level).nominal
                hit = [k for k, p in enumerate(hist) if p <= nominal[k]]
                if hit:
                    new[i] = hit[0]
        if not new:
            break
        for i, k in new.items():
            at[i], steps[i] = k, level
    r = m - at.count(None)
    last = alpha / max(m - r, 1)
    return FamilyDecision(tuple(k is not None for k in at), tuple(at), last, None,
                          tested_at=tuple(last if x is None else x for x in steps))


__all__ = [
    "FamilyDecision", "Hypotheses", "LookStats", "SequentialDecision", "design", "run_schedule",
    "schedule", "sequential_decide", "sequential_holm", "walk_looks",
]
