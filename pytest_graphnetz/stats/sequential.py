"""Adaptive seeds: a group-sequential paired t design that decides a cell at the first look
where its evidence is clear and says how many more seeds it needs otherwise.

A cell's paired differences ``d`` (sign-flipped so ``d > 0`` means "candidate better") are
looked at after ``looks = (MIN, 2·MIN, 4·MIN, ..., MAX)`` seeds. Three one-sided hypotheses
are each tested with their own α-spending boundary, so each error rate holds over the whole
schedule, not per look:

- REGRESSED rejects "mean d ≥ −margin": ``(mean + margin) / se <= −c_k``;
- NOT WORSE rejects "mean d ≤ −δ" (δ = ``min_effect``): ``(mean + δ) / se >= c_k``;
- BETTER rejects "mean d ≤ +margin": ``(mean − margin) / se >= c_k``.

Each boundary is non-binding for the others (a cell stopped by one boundary can only cross the
others less often), so P(REGRESSED | mean d = −margin) ≤ α and P(NOT WORSE | mean d = −δ) ≤ α.

The lean rule: before MAX, a cell that crosses NOT WORSE stops only if its estimate does not
lean towards a drop, ``(mean + margin) / se > −lean`` (:data:`DEFAULT_LEAN` = 1.5 standard
errors); otherwise it takes the next look's seeds. Five seeds with a lucky small spread can put
a real regression's interval above −δ while its mean still sits well below 0; holding such a
cell costs an innocent one little (its mean is near 0). The rule only shrinks NOT WORSE's
stopping region, so neither guarantee moves; ``benchmarks/adaptive_seeds.py`` measures what it
buys (detection of a −0.7-point regression up, wrong NOT WORSE down, a few tenths of a seed).

The looks, the spending function and the calibrated boundaries live in :mod:`.boundaries`
(their names are importable from here too); this module decides with them: one cell at a
look (:func:`sequential_decide`), many cells over the whole schedule (:func:`run_schedule`), a
family of cells (:func:`sequential_holm`) and the seeds a design needs
(:func:`sequential_seeds_for_min_effect`).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from functools import lru_cache
from typing import Any

import numpy as np

from ._common import ConfidenceInterval, _vector
from .boundaries import (
    CALIBRATION_PATHS,
    CALIBRATION_SEED,
    DEFAULT_GAMMA,
    DEFAULT_LEAN,
    SequentialDesign,
    grow_paths,
    schedule,
    sequential_design,
    spent,
)
from .decisions import Verdict

# Integer codes of the vectorised core, in the order of `_VERDICTS`.
_VERDICTS = (None, Verdict.REGRESSED, Verdict.NOT_WORSE, Verdict.BETTER, Verdict.INCONCLUSIVE,
             Verdict.IDENTICAL)
_CONTINUE, _REGRESSED, _NOT_WORSE, _BETTER, _INCONCLUSIVE, _IDENTICAL = range(6)


@dataclass(frozen=True)
class SequentialDecision:
    """The state of one cell after a look.

    ``verdict``: REGRESSED, NOT WORSE, BETTER, IDENTICAL, INCONCLUSIVE (open at MAX), or
    ``None`` while the cell continues; ``more_seeds``: seeds to add before the next look (0 once
    decided); ``n``: pairs used; ``look``: 1-based index of this look of ``max_seeds``'s
    schedule; ``ci``: the repeated two-sided ``1 − 2α`` confidence interval at this look
    (``mean ± c_k · se``), the interval that matches the decision; ``critical``: ``c_k``
    (REGRESSED's ``c_k`` at ``regressed_alpha``, when that differs, is ``critical_regressed``);
    ``t_regressed``, ``t_not_worse``, ``t_better``: the three statistics.
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

    @property
    def max_seeds(self) -> int:
        return self.looks[-1]

    @property
    def saved(self) -> int:
        """Seeds not trained against a fixed design at MAX (0 while the cell continues)."""
        return self.max_seeds - self.n if self.stopped else 0


def sequential_decide(diffs: Any, design: SequentialDesign, *, margin: float = 0.0,
                      min_effect: float | None = None, regressed_alpha: float | None = None,
                      label: str | None = None) -> SequentialDecision:
    """The decision on one cell at a look: ``diffs`` (n,) are its finite paired differences,
    sign-flipped so ``+`` is better, with ``n`` one of ``design.looks``. The cell is taken to be
    open at this look (no earlier look stopped it): the decision and every statistic are those
    of these ``n`` differences at this look's boundaries, never an earlier look's.

    ``min_effect`` (δ > margin): NOT WORSE's boundary; None falls back to ``-margin``.
    ``regressed_alpha``: the level of REGRESSED's boundary when it differs from the design's
    (Holm across cells; NOT WORSE and BETTER stay at ``design.alpha``).
    IDENTICAL when every difference is exactly 0 at the first look.
    """
    where = label or "cell"
    d = _vector(diffs, "diffs", where)
    if not np.all(np.isfinite(d)):
        raise ValueError(f"{where}: `diffs` must be finite (diverged seeds are decided by the "
                         "gate before the sequential test)")
    if d.size not in design.looks:
        raise ValueError(f"{where}: {d.size} paired seeds is not a look of the schedule "
                         f"{design.looks}; train up to the next look")
    k = design.looks.index(d.size)
    codes, n_used, stats = _run(d[None, :], design, margin=margin, min_effect=min_effect,
                                regressed_alpha=regressed_alpha, upto=d.size, first=k)
    code = int(codes[0])
    verdict = _VERDICTS[code]
    more = design.looks[k + 1] - d.size if code == _CONTINUE else 0
    mean, sd, se, c, c_reg, t_reg, t_nw, t_bt = (float(x[0]) for x in stats)
    return SequentialDecision(
        verdict=verdict, more_seeds=more, n=d.size, look=k + 1, looks=design.looks,
        mean_diff=mean, sd_diff=sd, ci=ConfidenceInterval(mean - c * se, mean + c * se),
        critical=c, critical_regressed=c_reg, t_regressed=t_reg, t_not_worse=t_nw,
        t_better=t_bt, margin=float(margin), min_effect=min_effect, alpha=design.alpha,
        regressed_alpha=design.alpha if regressed_alpha is None else float(regressed_alpha))


def run_schedule(D: Any, design: SequentialDesign, *, margin: float = 0.0,
                 min_effect: float | None = None,
                 regressed_alpha: float | None = None) -> tuple[np.ndarray, np.ndarray]:
    """The whole schedule on many cells at once: ``D`` (cells, MAX) holds each cell's paired
    differences in the order seeds would be trained. Returns per cell its verdict (an object
    array of :class:`Verdict`) and the seeds it used (int array), as if each cell had taken more
    seeds only while :func:`sequential_decide` said so. For simulation and benchmarks."""
    D = np.asarray(D, dtype=float)
    if D.ndim != 2 or D.shape[1] < design.max_seeds or not np.all(np.isfinite(D)):
        raise ValueError(f"`D` must be finite, shaped (cells, >= {design.max_seeds}), got "
                         f"{D.shape}")
    codes, n_used, _ = _run(D, design, margin=margin, min_effect=min_effect,
                            regressed_alpha=regressed_alpha, upto=design.max_seeds)
    return np.array([_VERDICTS[c] for c in codes], dtype=object), n_used


def _run(D: np.ndarray, design: SequentialDesign, *, margin: float, min_effect: float | None,
         regressed_alpha: float | None, upto: int,
         first: int = 0) -> tuple[np.ndarray, np.ndarray, tuple]:
    """The vectorised core behind :func:`sequential_decide` and :func:`run_schedule`: walks the
    looks from index ``first`` up to ``upto`` seeds; returns per row the code, the seeds used,
    and the statistics at the row's last look (mean, sd, se, c, c_regressed, t_regressed,
    t_not_worse, t_better)."""

    def at(k: int, n: int, open_: np.ndarray) -> _LookStats:
        X = D[open_, :n]
        return (X.mean(axis=1), X.std(axis=1, ddof=1), np.max(np.abs(X), axis=1),
                np.all(X == 0, axis=1))

    return _walk(at, D.shape[0], design, margin=margin, min_effect=min_effect,
                 regressed_alpha=regressed_alpha, upto=upto, first=first)


# Per open row at a look: mean, sd, the largest |difference| (the rounding scale of
# `_sided_t`) and whether every difference is exactly 0.
_LookStats = tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]


def _walk(at: Callable[[int, int, np.ndarray], _LookStats], rows: int,
          design: SequentialDesign, *, margin: float, min_effect: float | None,
          regressed_alpha: float | None, upto: int,
          first: int = 0) -> tuple[np.ndarray, np.ndarray, tuple]:
    """The decisions of the schedule, whatever holds the data: ``at(k, n, open_)`` gives the
    open rows' statistics at look ``k`` (``n`` seeds). :func:`_run` computes them from the
    differences, :func:`sequential_power` from simulated sufficient statistics."""
    if not margin >= 0:
        raise ValueError(f"`margin` must be >= 0 (in metric units), got {margin!r}")
    if min_effect is not None and not min_effect > margin:
        raise ValueError(f"`min_effect` (δ) must exceed `margin` ({margin}), got {min_effect!r}")
    delta = margin if min_effect is None else float(min_effect)
    reg = design if regressed_alpha is None else design.at_level(regressed_alpha)
    code = np.full(rows, _CONTINUE)
    n_used = np.zeros(rows, dtype=int)
    stats = tuple(np.full(rows, np.nan) for _ in range(8))
    for k, n in enumerate(design.looks):
        if k < first:
            continue
        if n > upto:
            break
        open_ = code == _CONTINUE
        if not open_.any():
            break
        mean, sd, scale, zero = at(k, n, open_)
        se = sd / math.sqrt(n)
        c, c_reg = design.critical[k], reg.critical[k]
        t_reg, t_nw, t_bt = (_sided_t(mean, se, scale, b) for b in (-margin, -delta, margin))
        new = np.full(mean.shape[0], _CONTINUE)
        not_worse = t_nw >= c
        if design.lean is not None and k < len(design.looks) - 1:
            not_worse &= t_reg > -design.lean   # the lean rule (module docstring)
        new[not_worse] = _NOT_WORSE
        new[t_bt >= c] = _BETTER
        new[t_reg <= -c_reg] = _REGRESSED
        if k == first:
            new[zero] = _IDENTICAL
        if k == len(design.looks) - 1:
            new[new == _CONTINUE] = _INCONCLUSIVE
        code[open_] = new
        n_used[open_] = n
        for arr, val in zip(stats, (mean, sd, se, np.full_like(mean, c), np.full_like(mean, c_reg),
                                    t_reg, t_nw, t_bt), strict=True):
            arr[open_] = val
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


def look_verdict(comparison: Any, design: SequentialDesign, look: int) -> Verdict | None:
    """The verdict of NOT WORSE's and BETTER's boundaries (REGRESSED is the family's, see
    :func:`sequential_holm`) on a cell open at look index ``look``, from ``comparison``: a
    ``not_worse`` :class:`~pytest_graphnetz.stats.Comparison` made on exactly that look's seeds.

    Each boundary is its one-sided p against the look's nominal level ``design.nominal[look]``
    (``p <= nominal`` is ``t >= c_k`` for the paired t test, whose p-values already treat a
    difference within the data's rounding as none). Before the last look, NOT WORSE also needs
    the lean rule: REGRESSED's p above ``P(T <= -lean)``. Returns BETTER, NOT WORSE, IDENTICAL,
    INCONCLUSIVE (still open at the last look) or None (take the next look's seeds). A one-look
    design decides exactly as :func:`~pytest_graphnetz.stats.compare` does at ``alpha``.
    """
    from scipy import special

    if comparison.verdict is Verdict.IDENTICAL:
        return Verdict.IDENTICAL
    last = look == len(design.looks) - 1
    level = design.nominal[look]
    if comparison.p_better <= level:
        return Verdict.BETTER
    leans = (not last and design.lean is not None
             and comparison.p_value <= float(special.stdtr(comparison.n - 1, -design.lean)))
    if comparison.p_reverse <= level and not leans:
        return Verdict.NOT_WORSE
    return Verdict.INCONCLUSIVE if last else None


@dataclass(frozen=True)
class FamilyDecision:
    """Group-sequential Holm on one gate call's REGRESSED hypotheses.

    ``rejected[i]``: cell i is REGRESSED; ``at_look[i]``: the look index whose statistic
    rejected it (None if not rejected); ``level``: the last level of the step-down,
    ``alpha / (m - r)`` with r rejections (``alpha`` when every cell is rejected), the level at
    which every cell's REGRESSED boundary reads as its verdict (rejected cells are below it, the
    others above); ``p_adjusted``: classical Holm-adjusted p per cell for one-look designs
    (None for sequential ones, whose decision is the boundaries'); ``levels``: per cell, the
    level it was last tested at when the cells' levels differ (a weighted family, e.g. with a
    suite row, :func:`~pytest_graphnetz.stats.suite.suite_family`), else None.
    """

    rejected: tuple[bool, ...]
    at_look: tuple[int | None, ...]
    level: float
    p_adjusted: tuple[float, ...] | None
    levels: tuple[float, ...] | None = None


def sequential_holm(histories: Sequence[Sequence[float]],
                    designs: Sequence[SequentialDesign]) -> FamilyDecision:
    """Holm across the cells of one gate call for their REGRESSED boundaries, the
    group-sequential way (Maurer & Bretz 2013, Statistics in Biopharmaceutical Research
    5:311-320): each open hypothesis is tested at level ``α / (m − r)``, ``r`` the number
    already rejected, and when one is rejected the others are re-tested at every look they
    have had, with the boundaries of the new level.

    ``histories[i]``: cell i's one-sided REGRESSED p-values, one per look it has had, each
    computed on exactly that look's seeds (:attr:`Comparison.p_value`); ``designs[i]``: its
    design (one ``alpha`` for all). A look rejects at level ``a`` when its p is at most
    ``design.at_level(a).nominal[k]``. When every design has one look this is Holm's
    step-down on the p-values, computed the classical way (adjusted p ``<= alpha``).
    """
    from .decisions import holm

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
        # What one look spends: alpha for a fixed seed count, ρ·alpha for the first run of a
        # rerun chain (stats.rerun); ``level`` stays in units of the designs' alpha.
        result = holm([h[0] for h in histories], first.pop())
        r = sum(result.reject)
        return FamilyDecision(result.reject, tuple(0 if x else None for x in result.reject),
                              alpha / max(m - r, 1), result.p_adjusted)
    at: list[int | None] = [None] * m
    while None in at:
        level = alpha / at.count(None)
        new = {}
        for i, (hist, design) in enumerate(zip(histories, designs, strict=True)):
            if at[i] is None:
                if len(hist) > len(design.looks):
                    raise ValueError(f"cell {i}: {len(hist)} looks for a design of "
                                     f"{len(design.looks)}")
                nominal = design.at_level(level).nominal
                hit = [k for k, p in enumerate(hist) if p <= nominal[k]]
                if hit:
                    new[i] = hit[0]
        if not new:
            break
        for i, k in new.items():
            at[i] = k
    r = m - at.count(None)
    return FamilyDecision(tuple(k is not None for k in at), tuple(at), alpha / max(m - r, 1),
                          None)


PLAN_PATHS = 1 << 14   # simulated cells per target and MAX: Monte-Carlo sd about 0.003 at 0.8
PLAN_SEED = 20_231_984  # any fixed seed: the same cell gets the same advice every time


def sequential_power(sd_diff: float, min_effect: float, design: SequentialDesign, *,
                     margin: float = 0.0, regressed_alpha: float | None = None,
                     paths: int = PLAN_PATHS, seed: int = PLAN_SEED) -> tuple[float, float]:
    """What ``design`` delivers for a cell whose paired differences are normal with sd
    ``sd_diff``: the chance that no change (true mean 0) reads NOT WORSE or BETTER, and the
    chance that a drop of ``min_effect`` (δ) reads REGRESSED (at ``regressed_alpha``), each
    through the design's own boundaries and lean rule (the decisions of :func:`run_schedule`),
    on ``paths`` simulated cells from ``seed``.

    The cells are simulated through their sufficient statistics at each look (the new block's
    sum is normal and its within-block sum of squares χ², independent: the law of the t
    statistics is exact), so a design of hundreds of seeds costs what its few looks cost. The
    draws are laid out look by look, so designs that share their looks before MAX share those
    draws (common random numbers: the search below is smooth)."""
    if not (math.isfinite(sd_diff) and sd_diff > 0):
        raise ValueError(f"`sd_diff` must be a finite number > 0, got {sd_diff!r}")
    gen = np.random.default_rng(seed)
    S, Q = np.zeros(paths), np.zeros(paths)
    sums, squares, n_prev = [], [], 0
    for n in design.looks:
        S, Q = grow_paths(gen, S, Q, n_prev, n)
        sums.append(S)
        squares.append(Q)
        n_prev = n
    scaled_margin, scaled_effect = margin / sd_diff, min_effect / sd_diff

    def shifted(shift: float) -> Callable[[int, int, np.ndarray], _LookStats]:
        def at(k: int, n: int, open_: np.ndarray) -> _LookStats:
            mean = sums[k][open_] / n - shift
            return (mean, np.sqrt(squares[k][open_] / (n - 1)), np.abs(mean),
                    np.zeros(mean.shape, dtype=bool))
        return at

    null, drop = (_walk(shifted(shift), paths, design, margin=scaled_margin,
                        min_effect=scaled_effect, regressed_alpha=regressed_alpha,
                        upto=design.max_seeds)[0] for shift in (0.0, scaled_effect))
    passes = np.isin(null, [_NOT_WORSE, _BETTER, _IDENTICAL])
    return float(passes.mean()), float(np.mean(drop == _REGRESSED))


@lru_cache(maxsize=256)   # one search per cell and settings: the cells of a call often repeat
def sequential_seeds_for_min_effect(sd_diff: float, min_effect: float, *, min_seeds: int,
                                    start: int, margin: float = 0.0, alpha: float = 0.05,
                                    regressed_alpha: float | None = None, power: float = 0.8,
                                    gamma: float = DEFAULT_GAMMA,
                                    lean: float | None = DEFAULT_LEAN) -> int:
    """The MAX of ``min_seeds..MAX`` whose calibrated design separates "no change" from "a
    drop of δ": both chances of :func:`sequential_power` at least ``power``.

    The fixed-n plan (:func:`~pytest_graphnetz.stats.planning.seeds_for_min_effect`, passed as
    ``start``) is where the search begins: a sequential design spends α over its looks, so at
    the same MAX it delivers less than the fixed test (issue 21: the fixed plan's 34 seeds,
    run as 5..34, delivered 0.61 and 0.61). MAX grows by about 15% until both chances reach
    ``power``, then bisects down to the smallest such MAX (taking power to grow with MAX).
    Each step calibrates a design (the looks before MAX are shared, :mod:`.boundaries`) and
    simulates it through its looks' sufficient statistics: about 0.1 s at hundreds of seeds."""
    lo_max = max(int(min_seeds), 3)
    n = max(int(start), lo_max)
    if sd_diff == 0:
        return n

    def ok(m: int) -> bool:
        design = sequential_design(min_seeds, m, alpha=alpha, gamma=gamma, lean=lean)
        return min(sequential_power(sd_diff, min_effect, design, margin=margin,
                                    regressed_alpha=regressed_alpha)) >= power

    lo = n - 1
    while not ok(n):
        lo, n = n, max(n + 1, math.ceil(n * 1.15))
    while n - lo > 1:
        mid = (lo + n) // 2
        lo, n = (lo, mid) if ok(mid) else (mid, n)
    return n


__all__ = [
    "CALIBRATION_PATHS", "CALIBRATION_SEED", "DEFAULT_GAMMA", "DEFAULT_LEAN", "PLAN_PATHS",
    "PLAN_SEED", "FamilyDecision", "SequentialDecision", "SequentialDesign", "look_verdict",
    "run_schedule", "schedule", "sequential_decide", "sequential_design", "sequential_holm",
    "sequential_power", "sequential_seeds_for_min_effect", "spent",
]
