"""Rerun-safe seeds: the boundaries of a run that repeats an INCONCLUSIVE gate with more seeds,
so that every error guarantee holds over the whole chain of runs, not per run.

Why. A user told "INCONCLUSIVE, about N seeds would decide it" reruns with N seeds. Cached seeds
make the earlier run's data an exact prefix of the new run's, so the chain of runs is one
sequential experiment whose looks are the runs' seed counts. Testing each run afresh at α
tests the same hypothesis repeatedly: with normal differences of sd 2-8 points and δ = 1 point,
10 → 20 → 40 → 80 seeds reads a wrong verdict at a boundary 8-13% of the time
(``benchmarks/rerun_safe.py``).

The rule. Each of the three one-sided boundaries (REGRESSED at −margin, NOT WORSE at −δ,
BETTER at +margin) spends its α over the chain by one spending function of the seed count,
declared before the first run and open-ended, so any number of reruns is covered:

    α(n) = α · (1 − (1 − ρ) · n₁ / n)      for n ≥ n₁, the first run's seeds,

a first run spends ``ρ·α`` (its critical value is the plain t quantile at level ρα) and each
rerun spends what the function adds at its seed count: doubling the seeds halves what remains.
A rerun's critical value is calibrated for the Student t statistics given the recorded looks
(Lan & DeMets 1983, Biometrika 70:659-663: an α-spending boundary depends only on the looks
taken so far, so a look need not be planned in advance): among normal paths at the boundary
mean that crossed no earlier look, the one that spends exactly ``α(n_K) − α(n_{K−1})``
(simulated exactly through sufficient statistics, as :mod:`.sequential` calibrates its
designs: the joint law of the sequential t statistics does not depend on σ). The boundaries
are non-binding for one another, so each guarantee holds whichever verdict ends the chain.

The record a rerun needs: the seed counts of the earlier runs of the same cell (same baseline,
same candidate), each of which ended INCONCLUSIVE, and ρ. Recomputing from the record gives the
earlier runs' critical values bit for bit (the calibration draws look by look from a fixed
seed), so nothing else need be stored.

What a rerun may not do (the guarantee assumes it): use seeds that do not contain the earlier
runs' seeds; follow a verdict other than INCONCLUSIVE (a REGRESSED cell rerun until it reads
NOT WORSE is a new chance to be wrong); choose its seed count from the sign or size of the
observed mean (the advice depends only on the observed spread and δ).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from functools import lru_cache

import numpy as np

from ._common import _t_quantile
from .boundaries import crossing, grow_paths, t_stat

DEFAULT_RHO = 0.85  # share of α a first run spends: keeps >= 95% of its detection at the same n
CALIBRATION_PATHS = 1 << 20
CALIBRATION_SEED = 26_2004  # any fixed seed: boundaries must not depend on the session


def rerun_spending(n: int, first_n: int, *, alpha: float = 0.05,
                   rho: float = DEFAULT_RHO) -> float:
    """Cumulative one-sided α a chain of runs has spent once it has looked at ``n`` seeds, when
    its first run had ``first_n``: ``α·(1 − (1 − ρ)·first_n / n)``; ``ρ·α`` at the first run,
    tending to α however many reruns follow."""
    _check_params(alpha, rho)
    if not 2 <= first_n <= n:
        raise ValueError(f"a chain of runs needs 2 <= first_n <= n, got first_n={first_n}, n={n}")
    return alpha * (1 - (1 - rho) * first_n / n)


@dataclass(frozen=True)
class RerunDesign:
    """The boundaries of every run of a chain, the current run last.

    ``looks``: the runs' seed counts (strictly increasing); ``spent[k]``: cumulative α by run
    k (:func:`rerun_spending`); ``critical[k]``: the one-sided t critical value of run k, for
    each of the three boundaries (REGRESSED rejects when ``(mean + margin)/se <= −c``, NOT
    WORSE when ``(mean + δ)/se >= c``, BETTER when ``(mean − margin)/se >= c``);
    ``nominal[k]``: run k's per-look one-sided p threshold, ``P(T_{n_k − 1} >= critical[k])``.
    Build with :func:`rerun_design`.
    """

    looks: tuple[int, ...]
    alpha: float
    rho: float
    spent: tuple[float, ...]
    critical: tuple[float, ...]
    nominal: tuple[float, ...]
    # No lean rule: a chain's looks are not a planned schedule (the decision path reads
    # ``design.lean`` of every design it runs).
    lean: float | None = None

    @property
    def n(self) -> int:
        """Seeds of the current run."""
        return self.looks[-1]

    @property
    def run(self) -> int:
        """1-based index of the current run in the chain (1: no rerun yet)."""
        return len(self.looks)

    @property
    def current_critical(self) -> float:
        return self.critical[-1]

    @property
    def current_nominal(self) -> float:
        return self.nominal[-1]

    @property
    def confidence_level(self) -> float:
        """Level of the two-sided interval ``mean ± c·se`` that matches this run's decisions."""
        return 1 - 2 * self.current_nominal

    def at_level(self, alpha: float) -> RerunDesign:
        """The same chain at another level (e.g. ``α/m`` for Holm over m cells): every run's
        boundary at that level, as group-sequential Holm re-tests earlier looks."""
        return rerun_design(self.looks[:-1], self.looks[-1], alpha=alpha, rho=self.rho)


def rerun_design(prior_looks: Sequence[int], n: int, *, alpha: float = 0.05,
                 rho: float = DEFAULT_RHO,
                 prior_verdicts: Sequence[str] | None = None) -> RerunDesign:
    """The boundaries of a run on ``n`` seeds after earlier runs of the same cell on
    ``prior_looks`` seeds (oldest first; empty for a first run).

    ``prior_verdicts``, when given, are the earlier runs' verdicts: each must be INCONCLUSIVE
    (a decided cell is not rerun). Deterministic and cached per process.
    """
    _check_params(alpha, rho)
    looks = tuple(int(x) for x in (*prior_looks, n))
    if looks[0] < 2 or any(b <= a for a, b in zip(looks, looks[1:], strict=False)):
        raise ValueError(
            f"a rerun must use more seeds than every earlier run (and those seeds): got seed "
            f"counts {list(looks)}; rerun with more than {max(looks[:-1], default=1)} seeds")
    if prior_verdicts is not None:
        verdicts = [str(v) for v in prior_verdicts]
        if len(verdicts) != len(prior_looks):
            raise ValueError(f"{len(verdicts)} prior verdicts for {len(prior_looks)} prior runs")
        decided = [(k + 1, v) for k, v in enumerate(verdicts) if v != "INCONCLUSIVE"]
        if decided:
            run, verdict = decided[0]
            raise ValueError(
                f"run {run} of this cell ({looks[run - 1]} seeds) was decided {verdict}; only an "
                "INCONCLUSIVE cell may be rerun with more seeds (rerunning a decided cell gives "
                "the data another chance to read wrong). Keep its verdict, or start a new chain "
                "by refreshing the baseline")
    return _design(looks, float(alpha), float(rho))


@lru_cache(maxsize=256)
def _design(looks: tuple[int, ...], alpha: float, rho: float) -> RerunDesign:
    from scipy import special

    spent = tuple(rerun_spending(n, looks[0], alpha=alpha, rho=rho) for n in looks)
    critical = calibrate_looks(looks, spent)
    # The first run's critical value is the exact t quantile of what it spends, so its nominal
    # level is that spend itself (as in sequential.py): a first run decides at exactly ρα.
    nominal = (spent[0], *(float(special.stdtr(n - 1, -c))
                           for n, c in zip(looks[1:], critical[1:], strict=True)))
    return RerunDesign(looks=looks, alpha=alpha, rho=rho, spent=spent, critical=critical,
                       nominal=nominal)


def calibrate_looks(looks: Sequence[int], cumulative_alpha: Sequence[float], *,
                    paths: int = CALIBRATION_PATHS,
                    seed: int = CALIBRATION_SEED) -> tuple[float, ...]:
    """One-sided critical values ``c_k`` of the one-sample t statistics at nested looks of
    ``looks[k]`` normal observations, such that under the null (mean at the boundary) the first
    crossing ``t_k >= c_k`` happens at look k with probability
    ``cumulative_alpha[k] − cumulative_alpha[k − 1]``.

    ``c_1`` is the exact t quantile; later values are order statistics of ``paths`` simulated
    sequential t statistics (sufficient statistics per look: the new block's sum is normal, its
    within-block sum of squares χ², independent), Monte-Carlo error about ``sqrt(α/paths)`` on
    each increment. A look with nothing to spend gets ``inf`` (no statistic crosses it).
    The prefix of the result depends only on the prefix of the inputs.
    """
    looks = tuple(int(x) for x in looks)
    cum = np.asarray(cumulative_alpha, dtype=float)
    if len(looks) != cum.size or not looks:
        raise ValueError(f"{len(looks)} looks for {cum.size} cumulative levels")
    if looks[0] < 2 or any(b <= a for a, b in zip(looks, looks[1:], strict=False)):
        raise ValueError(f"`looks` must increase from at least 2, got {list(looks)}")
    if not (0 < cum[0] < 0.5 and np.all(np.diff(cum) >= 0) and cum[-1] < 0.5):
        raise ValueError(f"`cumulative_alpha` must be non-decreasing in (0, 0.5), got {cum}")
    critical = [float(_t_quantile(1 - cum[0], looks[0] - 1))]
    if len(looks) == 1:
        return tuple(critical)
    gen = np.random.default_rng(seed)
    n_prev = looks[0]
    S, Q = grow_paths(gen, np.zeros(paths), np.zeros(paths), 0, n_prev)
    running = t_stat(S, Q, n_prev) < critical[0]
    for k in range(1, len(looks)):
        n = looks[k]
        S, Q = grow_paths(gen, S, Q, n_prev, n)
        stat = t_stat(S, Q, n)
        j = int(round((cum[k] - cum[k - 1]) * paths))  # paths that should first cross here
        c = crossing(stat, running, j, n)
        critical.append(math.inf if c is None else c)
        running &= stat < critical[-1]
        n_prev = n
    return tuple(critical)


def _check_params(alpha: float, rho: float) -> None:
    if not 0 < alpha < 0.5:
        raise ValueError(f"`alpha` must lie in (0, 0.5), got {alpha!r}")
    if not 0 < rho <= 1:
        raise ValueError(f"`rho` (the share of α a first run spends) must lie in (0, 1], got "
                         f"{rho!r}; 1 leaves nothing for reruns")


def rerun_seeds_needed(prior_looks: Sequence[int], sd_diff: float, min_effect: float, *,
                       margin: float = 0.0, alpha: float = 0.05,
                       alpha_regressed: float | None = None, rho: float = DEFAULT_RHO,
                       power: float = 0.8, max_seeds: int = 10_000) -> int | None:
    """Seeds for the next run of a chain whose runs so far had ``prior_looks`` seeds (the last
    ended INCONCLUSIVE), so that at that run's boundary "no change" reads NOT WORSE and a
    drop of δ reads REGRESSED, each with probability ``power`` (paired sd ``sd_diff``).

    A planning figure on the safe side: the run's boundary is taken as the t quantile at the α
    the run adds (``α(N) − α(n_K)``), which is at least its calibrated critical value (paths
    that crossed earlier are not there to share it), and earlier runs are not conditioned on.
    None when even ``max_seeds`` would not do.
    """
    from .planning import seeds_for_min_effect

    if not prior_looks:
        raise ValueError("`prior_looks` must hold the seed counts of the runs so far")
    first, last = int(prior_looks[0]), int(prior_looks[-1])
    a_reg = alpha if alpha_regressed is None else float(alpha_regressed)

    def added(n: int, level: float) -> float:
        return (rerun_spending(n, first, alpha=level, rho=rho)
                - rerun_spending(last, first, alpha=level, rho=rho))

    def enough(n: int) -> bool:
        return seeds_for_min_effect(sd_diff, min_effect, margin=margin, alpha=added(n, alpha),
                                    alpha_regressed=added(n, a_reg), power=power) <= n

    lo, hi = last, min(2 * last, max_seeds)
    if hi <= last:
        return None
    while not enough(hi):  # α(N) − α(n_K) grows with N, so `enough` is monotone
        if hi >= max_seeds:
            return None
        lo, hi = hi, min(2 * hi, max_seeds)
    while hi - lo > 1:
        mid = (lo + hi) // 2
        lo, hi = (lo, mid) if enough(mid) else (mid, hi)
    return hi
