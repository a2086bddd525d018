"""Deciding with the one design (:mod:`.boundaries`): a cell at its looks, many cells over a
schedule, a family of cells, and what the next look would deliver.

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
:func:`sequential_decide`) or by simulated sufficient statistics (:func:`sequential_power`,
:func:`advise_next_look`).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from functools import lru_cache
from typing import Any

import numpy as np

from pytest_graphnetz.stats._common import ConfidenceInterval, as_vector, t_moments
from pytest_graphnetz.stats.boundaries import DEFAULT_RHO, Design, design, grow_paths, schedule
from pytest_graphnetz.stats.decisions import LOOK_VERDICTS, Code, Verdict, decide_look
from pytest_graphnetz.stats.skew import DEFAULT_SKEW_Z, guarded_skewness, guarded_t

PLAN_PATHS = 1 << 15   # simulated cells per plan: Monte-Carlo sd about 0.002 at 0.8
PLAN_SEED = 20_231_984  # any fixed seed: the same cell gets the same advice every time
ADVICE_MAX_SEEDS = 1280  # the largest look advised; past it no affordable seed count decides
MIN_OPEN_PATHS = 200     # fewer simulated cells open than this: the advice plans unconditionally


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

    def at(k: int, n: int, open_: np.ndarray) -> _LookStats:
        X = D[open_, :n]
        mean, sd, _ = t_moments(X)   # scaled before squaring: finite never gives inf
        return mean, sd, np.max(np.abs(X), axis=1), np.all(X == 0, axis=1)

    skew = None
    if skew_threshold is not None:
        threshold = float(skew_threshold)

        def skew(k: int, n: int, open_: np.ndarray) -> np.ndarray:
            return guarded_skewness(D[open_, :n], threshold=threshold)

    return walk_looks(at, D.shape[0], design, margin=margin, min_effect=min_effect,
                      regressed_alpha=regressed_alpha, upto=upto, first=first,
                      every_look=every_look, skew=skew)


# Per open row at a look: mean, sd, the largest |difference| (the rounding scale of
# `_sided_t`) and whether every difference is exactly 0.
_LookStats = tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]


def walk_looks(at: Callable[[int, int, np.ndarray], _LookStats], rows: int, design: Design, *,
               margin: float, min_effect: float | None, regressed_alpha: float | None, upto: int,
               first: int = 0, every_look: bool = False,
               skew: Callable[[int, int, np.ndarray], np.ndarray] | None = None,
               correct: Callable[..., tuple[np.ndarray, np.ndarray, np.ndarray]] = guarded_t
               ) -> tuple[np.ndarray, np.ndarray, tuple]:
    """The one loop over looks, whatever holds the data: ``at(k, n, open_)`` gives the open
    rows' statistics at look ``k`` (``n`` seeds), for the looks from index ``first`` up to
    ``upto`` seeds; a row still open at the design's last look is INCONCLUSIVE, before it
    CONTINUE. Each look decides through
    :func:`~.decisions.decide_look` on the t statistics' one-sided p-values. Returns per row
    its code, the seeds of the look it is reported at, and its statistics there (mean, sd,
    se, c, c_regressed, t_regressed, t_not_worse, t_better).

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

    if not margin >= 0:
        raise ValueError(f"`margin` must be >= 0 (in metric units), got {margin!r}")
    if min_effect is not None and not min_effect > margin:
        raise ValueError(f"`min_effect` (δ) must exceed `margin` ({margin}), got {min_effect!r}")
    delta = margin if min_effect is None else float(min_effect)
    reg = design if regressed_alpha is None else design.at_level(regressed_alpha)
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
        t_reg, t_nw, t_bt = (_sided_t(mean, se, scale, b) for b in (-margin, -delta, margin))
        h_reg, h_nw, h_bt = t_reg, t_nw, t_bt
        if skew is not None:
            g = skew(k, n, open_)
            h_reg, h_nw, h_bt = correct(t_reg, t_nw, t_bt, g, n)
        df = n - 1
        if every_look:
            zero_so_far[open_] &= zero
            identical = zero_so_far[open_] & (k == upto_k)
        else:
            identical = zero if k == first else np.zeros(zero.shape, dtype=bool)
        new = decide_look(special.stdtr(df, h_reg), special.stdtr(df, -h_nw),
                          special.stdtr(df, -h_bt), level=design.nominal[k],
                          regressed_level=reg.nominal[k], last=k == last, identical=identical)
        if every_look:
            # an all-zero look is no evidence yet (IDENTICAL needs every look); a row that
            # passed keeps its look unless REGRESSED crosses here
            new = np.where(zero_so_far[open_] & ~identical, Code.CONTINUE, new)
            if k == last:
                new = np.where(new == Code.CONTINUE, Code.INCONCLUSIVE, new)
            was = passed[open_]
            moved = ~was | (new == Code.REGRESSED)
            new = np.where(moved, new, code[open_])
        else:
            moved = np.ones(new.shape, dtype=bool)
        code[open_] = new
        rows_moved = np.flatnonzero(open_)[moved]
        n_used[rows_moved] = n
        c, c_reg = design.critical[k], reg.critical[k]
        for arr, val in zip(stats, (mean, sd, se, np.full_like(mean, c), np.full_like(mean, c_reg),
                                    t_reg, t_nw, t_bt), strict=True):
            arr[rows_moved] = val[moved]
    return code, n_used, stats


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


def _simulate(sd_diff: float | np.ndarray, min_effect: float, design: Design, *, margin: float,
              regressed_alpha: float | None, paths: int, seed: int,
              ) -> tuple[tuple[np.ndarray, np.ndarray], tuple[np.ndarray, np.ndarray]]:
    """Codes and seeds used of ``paths`` simulated cells walked through ``design``, under no
    change (true mean 0) and under a drop of δ: normal differences of sd ``sd_diff`` (a number,
    or one per path), simulated through their sufficient statistics at each look (the new
    block's sum is normal, its within-block sum of squares χ², independent; the law of the t
    statistics is exact). Draws are laid out look by look (common random numbers)."""
    gen = np.random.default_rng(seed)
    S, Q = np.zeros(paths), np.zeros(paths)
    sums, squares, n_prev = [], [], 0
    for n in design.looks:
        S, Q = grow_paths(gen, S, Q, n_prev, n)
        sums.append(S)
        squares.append(Q)
        n_prev = n
    sigma = np.broadcast_to(np.asarray(sd_diff, dtype=float), (paths,))

    def shifted(shift: float) -> Callable[[int, int, np.ndarray], _LookStats]:
        def at(k: int, n: int, open_: np.ndarray) -> _LookStats:
            mean = sigma[open_] * sums[k][open_] / n - shift
            return (mean, sigma[open_] * np.sqrt(squares[k][open_] / (n - 1)), np.abs(mean),
                    np.zeros(mean.shape, dtype=bool))
        return at

    null, drop = (walk_looks(shifted(shift), paths, design, margin=margin, min_effect=min_effect,
                             regressed_alpha=regressed_alpha, upto=design.max_seeds)[:2]
                  for shift in (0.0, float(min_effect)))
    return null, drop


_PASSES = (Code.NOT_WORSE, Code.BETTER, Code.IDENTICAL)


def sequential_power(sd_diff: float, min_effect: float, design: Design, *,
                     margin: float = 0.0, regressed_alpha: float | None = None,
                     paths: int = PLAN_PATHS, seed: int = PLAN_SEED) -> tuple[float, float]:
    """What ``design`` delivers for a cell whose paired differences are normal with sd
    ``sd_diff``: the chance that no change (true mean 0) reads NOT WORSE or BETTER, and the
    chance that a drop of ``min_effect`` (δ) reads REGRESSED (at ``regressed_alpha``), each by
    the design's last look, through :func:`walk_looks` (the gate's decisions)."""
    if not (math.isfinite(sd_diff) and sd_diff > 0):
        raise ValueError(f"`sd_diff` must be a finite number > 0, got {sd_diff!r}")
    (null, _), (drop, _) = _simulate(sd_diff, min_effect, design, margin=margin,
                                     regressed_alpha=regressed_alpha, paths=paths, seed=seed)
    return float(np.isin(null, _PASSES).mean()), float(np.mean(drop == Code.REGRESSED))


@lru_cache(maxsize=256)   # the cells of a call often repeat
def advise_next_look(sd_diff: float, n_observed: int, min_effect: float, *, first: int,
                     taken: int = 0, alpha: float = 0.05, rho: float = DEFAULT_RHO,
                     margin: float = 0.0, regressed_alpha: float | None = None,
                     power: float = 0.8, max_seeds: int = ADVICE_MAX_SEEDS,
                     paths: int = PLAN_PATHS, seed: int = PLAN_SEED) -> int | None:
    """The seeds of the look of the schedule (first look ``first``, spending ``alpha``, ``rho``)
    that decides a cell INCONCLUSIVE after ``taken`` seeds: the smallest look past ``taken`` at
    which, given that the cell was still open at every look up to ``taken``, no change reads
    NOT WORSE (or BETTER) and a drop of δ reads REGRESSED (at ``regressed_alpha``), each with
    probability ``power``. ``taken = 0``: a cell that has had no look of the schedule (judged
    alone on fewer seeds). None when no look up to ``max_seeds`` does.

    The sd is not known: ``sd_diff`` was estimated on ``n_observed`` pairs, so each simulated
    cell draws its σ from the estimate's fiducial law (σ² = (n − 1)·s² / χ²_{n−1}) before its
    path, and the power is averaged over what the sd may be. The advice depends only on the
    spread, never on the observed mean's sign or size (that would bias the rerun)."""
    if not (math.isfinite(sd_diff) and sd_diff > 0):
        raise ValueError(f"`sd_diff` must be a finite number > 0, got {sd_diff!r}")
    looks = [n for n in schedule(first, max_seeds) if n > taken]
    if not looks:
        return None
    full = design(first, max_seeds, alpha=alpha, rho=rho)
    gen = np.random.default_rng(seed + 1)
    df = max(int(n_observed) - 1, 1)
    sigma = sd_diff * np.sqrt(df / gen.chisquare(df, paths))
    (null, n_null), (drop, n_drop) = _simulate(sigma, min_effect, full, margin=margin,
                                              regressed_alpha=regressed_alpha, paths=paths,
                                              seed=seed)
    open_null, open_drop = n_null > taken, n_drop > taken   # still open after `taken` seeds
    # A spread so small that simulated cells are hardly ever open after `taken` seeds: the
    # condition carries no information, so plan unconditionally (else "no seed count").
    if open_null.sum() < MIN_OPEN_PATHS or open_drop.sum() < MIN_OPEN_PATHS:
        open_null = open_drop = np.ones(paths, dtype=bool)
    for n in looks:
        ok_null = np.mean(np.isin(null[open_null], _PASSES) & (n_null[open_null] <= n))
        ok_drop = np.mean((drop[open_drop] == Code.REGRESSED) & (n_drop[open_drop] <= n))
        if min(ok_null, ok_drop) >= power:
            return n
    return None


@dataclass(frozen=True)
class LookPlan:
    """What an INCONCLUSIVE cell does next (:func:`plan_next_look`): ``next_look``, the
    schedule's next look past the seeds it has (what the CI loop, ``graphnetz next-seeds``,
    runs next), and ``expected``, the seeds it is expected to use before it decides (the mean
    over simulated cells open here, at the observed sd, walking the schedule up to its last
    affordable look); both None when no affordable seed count decides it
    (:func:`advise_next_look`)."""

    next_look: int | None
    expected: int | None


@lru_cache(maxsize=256)   # the cells of a call often repeat
def plan_next_look(sd_diff: float, n_observed: int, min_effect: float, *, first: int,
                   taken: int = 0, alpha: float = 0.05, rho: float = DEFAULT_RHO,
                   margin: float = 0.0, regressed_alpha: float | None = None,
                   power: float = 0.8, max_seeds: int = ADVICE_MAX_SEEDS,
                   paths: int = PLAN_PATHS, seed: int = PLAN_SEED) -> LookPlan:
    """The next look and the expected need of a cell INCONCLUSIVE after ``taken`` seeds of the
    schedule (first look ``first``; ``taken = 0``: judged alone on ``n_observed`` seeds).

    The next look is the smallest look past ``max(taken, n_observed)``: looks are walked one by
    one, as the CI loop does. The expected need is the mean of the seeds used by simulated
    cells whose differences have sd ``sd_diff`` (the observed sd, plugged in: averaging over
    the sd's fiducial law, as the power look does, lands about 1.5x above what cells at the
    true sd use; ``benchmarks/advice_check.py`` measures both), given that they were open
    after ``taken`` seeds, pooled over no change and a drop of δ, counting a cell still open
    at ``max_seeds`` at ``max_seeds``. Both None when :func:`advise_next_look` finds no look
    up to ``max_seeds`` that decides the cell with probability ``power``."""
    if advise_next_look(sd_diff, n_observed, min_effect, first=first, taken=taken, alpha=alpha,
                        rho=rho, margin=margin, regressed_alpha=regressed_alpha, power=power,
                        max_seeds=max_seeds, paths=paths, seed=seed) is None:
        return LookPlan(None, None)
    past = max(taken, int(n_observed))
    later = [n for n in schedule(first, max_seeds) if n > past]
    if not later:
        return LookPlan(None, None)
    full = design(first, max_seeds, alpha=alpha, rho=rho)
    (_, n_null), (_, n_drop) = _simulate(sd_diff, min_effect, full, margin=margin,
                                         regressed_alpha=regressed_alpha, paths=paths,
                                         seed=seed)
    used = np.concatenate([n_null, n_drop])
    open_ = used > taken
    if open_.sum() < MIN_OPEN_PATHS:   # as in advise_next_look: plan unconditionally
        open_ = np.ones(used.size, dtype=bool)
    expected = max(float(used[open_].mean()), float(later[0]))
    return LookPlan(later[0], math.ceil(expected))


__all__ = [
    "ADVICE_MAX_SEEDS", "PLAN_PATHS", "PLAN_SEED", "FamilyDecision", "LookPlan",
    "SequentialDecision", "advise_next_look", "design", "plan_next_look", "run_schedule",
    "schedule", "sequential_decide", "sequential_holm", "sequential_power",
]
