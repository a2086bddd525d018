"""What the schedule's next looks would deliver for a cell, by simulating cells through the
one walk over looks (:func:`~.sequential.walk_looks`, the gate's decisions): the design's
power at a spread (:func:`sequential_power`), the look that decides an INCONCLUSIVE cell with
a given probability (:func:`advise_next_look`) and the seeds it is expected to use
(:func:`plan_next_look`), each under one :class:`PlanSpec`."""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass
from functools import lru_cache

import numpy as np

from pytest_graphnetz.stats.boundaries import DEFAULT_RHO, Design, design, grow_paths, schedule
from pytest_graphnetz.stats.decisions import Code
from pytest_graphnetz.stats.sequential import Hypotheses, LookStats, walk_looks

PLAN_PATHS = 1 << 15   # simulated cells per plan: Monte-Carlo sd about 0.002 at 0.8
PLAN_SEED = 20_231_984  # any fixed seed: the same cell gets the same advice every time
ADVICE_MAX_SEEDS = 1280  # the largest look advised; past it no affordable seed count decides
MIN_OPEN_PATHS = 200     # fewer simulated cells open than this: the advice plans unconditionally


@dataclass(frozen=True)
class PlanSpec:
    """What a seeds plan on the schedule is made under: the schedule (first look ``first``,
    spending ``alpha`` with ``rho``, looks up to ``max_seeds``), the targets (a drop of
    ``min_effect``, δ, read as REGRESSED at ``regressed_alpha``, None: the schedule's α, and no
    change as NOT WORSE beyond ``margin``, each with probability ``power``) and the
    simulation (``paths`` cells drawn from ``seed``)."""

    min_effect: float
    first: int
    alpha: float = 0.05
    rho: float = DEFAULT_RHO
    margin: float = 0.0
    regressed_alpha: float | None = None
    power: float = 0.8
    max_seeds: int = ADVICE_MAX_SEEDS
    paths: int = PLAN_PATHS
    seed: int = PLAN_SEED

    @property
    def hypotheses(self) -> Hypotheses:
        return Hypotheses(self.margin, self.min_effect, self.regressed_alpha)

    @property
    def design(self) -> Design:
        """The schedule's design up to ``max_seeds``."""
        return design(self.first, self.max_seeds, alpha=self.alpha, rho=self.rho)


def _simulate(sd_diff: float | np.ndarray, hypotheses: Hypotheses, design: Design, *,
              paths: int, seed: int,
              ) -> tuple[tuple[np.ndarray, np.ndarray], tuple[np.ndarray, np.ndarray]]:
    """Codes and seeds used of ``paths`` simulated cells walked through ``design`` deciding
    ``hypotheses``, under no change (true mean 0) and under a drop of δ (its ``min_effect``,
    a number): normal differences of sd ``sd_diff`` (a number,
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

    def shifted(shift: float) -> Callable[[int, int, np.ndarray], LookStats]:
        def at(k: int, n: int, open_: np.ndarray) -> LookStats:
            mean = sigma[open_] * sums[k][open_] / n - shift
            return (mean, sigma[open_] * np.sqrt(squares[k][open_] / (n - 1)), np.abs(mean),
                    np.zeros(mean.shape, dtype=bool))
        return at

    null, drop = (walk_looks(shifted(shift), paths, design, hypotheses, upto=design.max_seeds)[:2]
                  for shift in (0.0, float(hypotheses.min_effect or 0.0)))
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
    (null, _), (drop, _) = _simulate(sd_diff, Hypotheses(margin, min_effect, regressed_alpha),
                                     design, paths=paths, seed=seed)
    return float(np.isin(null, _PASSES).mean()), float(np.mean(drop == Code.REGRESSED))


@lru_cache(maxsize=256)   # the cells of a call often repeat
def advise_next_look(sd_diff: float, n_observed: int, spec: PlanSpec, *,
                     taken: int = 0) -> int | None:
    """The seeds of the look of ``spec``'s schedule that decides a cell INCONCLUSIVE after
    ``taken`` seeds: the smallest look past ``taken`` at which, given that the cell was still
    open at every look up to ``taken``, no change reads NOT WORSE (or BETTER) and a drop of δ
    reads REGRESSED, each with probability ``spec.power``. ``taken = 0``: a cell that has had
    no look of the schedule (judged alone on fewer seeds). None when no look up to
    ``spec.max_seeds`` does.

    The sd is not known: ``sd_diff`` was estimated on ``n_observed`` pairs, so each simulated
    cell draws its σ from the estimate's fiducial law (σ² = (n − 1)·s² / χ²_{n−1}) before its
    path, and the power is averaged over what the sd may be. The advice depends only on the
    spread, never on the observed mean's sign or size (that would bias the rerun)."""
    if not (math.isfinite(sd_diff) and sd_diff > 0):
        raise ValueError(f"`sd_diff` must be a finite number > 0, got {sd_diff!r}")
    looks = [n for n in schedule(spec.first, spec.max_seeds) if n > taken]
    if not looks:
        return None
    gen = np.random.default_rng(spec.seed + 1)
    df = max(int(n_observed) - 1, 1)
    sigma = sd_diff * np.sqrt(df / gen.chisquare(df, spec.paths))
    (null, n_null), (drop, n_drop) = _simulate(sigma, spec.hypotheses, spec.design,
                                              paths=spec.paths, seed=spec.seed)
    open_null, open_drop = n_null > taken, n_drop > taken   # still open after `taken` seeds
    # A spread so small that simulated cells are hardly ever open after `taken` seeds: the
    # condition carries no information, so plan unconditionally (else "no seed count").
    if open_null.sum() < MIN_OPEN_PATHS or open_drop.sum() < MIN_OPEN_PATHS:
        open_null = open_drop = np.ones(spec.paths, dtype=bool)
    for n in looks:
        ok_null = np.mean(np.isin(null[open_null], _PASSES) & (n_null[open_null] <= n))
        ok_drop = np.mean((drop[open_drop] == Code.REGRESSED) & (n_drop[open_drop] <= n))
        if min(ok_null, ok_drop) >= spec.power:
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
def plan_next_look(sd_diff: float, n_observed: int, spec: PlanSpec, *,
                   taken: int = 0) -> LookPlan:
    """The next look and the expected need of a cell INCONCLUSIVE after ``taken`` seeds of
    ``spec``'s schedule (``taken = 0``: judged alone on ``n_observed`` seeds).

    The next look is the smallest look past ``max(taken, n_observed)``: looks are walked one by
    one, as the CI loop does. The expected need is the mean of the seeds used by simulated
    cells whose differences have sd ``sd_diff`` (the observed sd, plugged in: averaging over
    the sd's fiducial law, as the power look does, lands about 1.5x above what cells at the
    true sd use; ``benchmarks/advice_check.py`` measures both), given that they were open
    after ``taken`` seeds, pooled over no change and a drop of δ, counting a cell still open
    at ``spec.max_seeds`` at it. Both None when :func:`advise_next_look` finds no look up to
    ``spec.max_seeds`` that decides the cell with probability ``spec.power``."""
    if advise_next_look(sd_diff, n_observed, spec, taken=taken) is None:
        return LookPlan(None, None)
    past = max(taken, int(n_observed))
    later = [n for n in schedule(spec.first, spec.max_seeds) if n > past]
    if not later:
        return LookPlan(None, None)
    (_, n_null), (_, n_drop) = _simulate(sd_diff, spec.hypotheses, spec.design,
                                         paths=spec.paths, seed=spec.seed)
    used = np.concatenate([n_null, n_drop])
    open_ = used > taken
    if open_.sum() < MIN_OPEN_PATHS:   # as in advise_next_look: plan unconditionally
        open_ = np.ones(used.size, dtype=bool)
    expected = max(float(used[open_].mean()), float(later[0]))
    return LookPlan(later[0], math.ceil(expected))


__all__ = ["ADVICE_MAX_SEEDS", "PLAN_PATHS", "PLAN_SEED", "LookPlan", "PlanSpec",
           "advise_next_look", "plan_next_look", "sequential_power"]
