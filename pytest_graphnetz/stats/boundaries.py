"""The one sequential design of every not-worse gate: its schedule of looks, its α-spending
function and the critical values of the Student t statistics at each look (:class:`Design`).

The schedule. A cell's seeds are looked at after ``n₁, 2n₁, 4n₁, ...`` seeds, ``n₁`` the
first look the project declares (its configured seed count; :data:`DEFAULT_FIRST_LOOK`). The
schedule is open-ended: a run walks the looks that the seeds it holds contain, on their
prefixes, and a rerun with more seeds is simply a run that contains more looks. A fixed run of
``n₁`` seeds is look 1, an adaptive run trains the next look while a cell is open. Because a
look's verdict depends only on the first ``n_k`` seeds, nothing needs recording between runs.

The spending. Each of the three one-sided boundaries (REGRESSED at −margin, NOT WORSE at −δ,
BETTER at +margin) spends its α over the looks by one open-ended function of the seed count:

    α(n) = α · (1 − (1 − ρ) · n₁ / n)      (ρ = :data:`DEFAULT_RHO`),

so the first look spends ``ρ·α`` and doubling the seeds halves what remains; however many
looks a team takes, the total stays below α (Lan & DeMets 1983, Biometrika 70:659-663: an
α-spending boundary depends only on the looks taken so far). ρ = 0.85 keeps at least 96% of
a single run's detection at the first look (``benchmarks/rerun_gate.py``). A design with
``ρ = 1`` and one look is a run judged alone at α (seeds off the schedule, tests other than
the paired t, ``--graphnetz-single-run``).

The critical values are calibrated for the t statistics themselves (at 10 seeds a t has 9
degrees of freedom). Under normal differences at the boundary mean their joint law does not
depend on σ; it is simulated exactly through sufficient statistics (per look, the new block's
sum is normal and its within-block sum of squares χ², independent). ``c_1`` is the exact t
quantile of what the first look spends, each later ``c_k`` the order statistic that spends
exactly ``α(n_k) − α(n_{k−1})`` among the simulated paths still running (a fixed seed and
:data:`CALIBRATION_PATHS` paths: Monte-Carlo error about 1e-4 on each increment). The
boundaries are non-binding for one another, so each guarantee holds whichever verdict stops a
cell. A look's critical value depends only on the looks up to it, so a longer schedule extends
a shorter one bit for bit.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass
from functools import lru_cache
from typing import Any

import numpy as np

from pytest_graphnetz.base.seedspec import doublings
from pytest_graphnetz.stats._common import t_quantile

DEFAULT_RHO = 0.85         # share of α the first look spends
DEFAULT_FIRST_LOOK = 10    # the schedule's first look when the project declares none
CALIBRATION_PATHS = 1 << 20
CALIBRATION_SEED = 20_231_983  # any fixed seed: the boundaries must not depend on the session


def schedule(first: int, upto: int) -> tuple[int, ...]:
    """The looks of the schedule that starts at ``first`` seeds and doubles, up to ``upto``
    seeds (``schedule(10, 45) == (10, 20, 40)``); empty when ``upto < first``."""
    if isinstance(first, bool) or isinstance(upto, bool):
        raise TypeError("`first` and `upto` must be integers")
    if int(first) < 2:
        raise ValueError(f"a schedule's first look needs at least 2 seeds, got {first}")
    return doublings(first, upto)


def spending(n: int, first: int, *, alpha: float = 0.05, rho: float = DEFAULT_RHO) -> float:
    """Cumulative one-sided α spent by look ``n`` of a schedule whose first look is ``first``:
    ``α·(1 − (1 − ρ)·first / n)``; ``ρ·α`` at the first look, tending to α."""
    _check_params(alpha, rho)
    if not 2 <= first <= n:
        raise ValueError(f"the spending needs 2 <= first <= n, got first={first}, n={n}")
    return alpha * (1 - (1 - rho) * first / n)


@dataclass(frozen=True)
class LookSchedule:
    """Everything that shapes a run's looks (:mod:`pytest_graphnetz.stats.boundaries`): the
    first look in seeds, the one-sided α each boundary spends and ρ, the share of it the first
    look spends. Written into a baseline when it is refreshed; a run under another schedule is
    refused (a rerun with another first look would be a fresh chance at a pass, not a later
    look). A baseline written before schedules were stored carries the default, the schedule
    every run was judged under then."""

    first_look: int = DEFAULT_FIRST_LOOK
    alpha: float = 0.05
    rho: float = DEFAULT_RHO

    def describe(self) -> str:
        """``first look 10 seeds, α 0.05, ρ 0.85``."""
        return f"first look {self.first_look} seeds, α {self.alpha:g}, ρ {self.rho:g}"

    def to_json(self) -> dict[str, Any]:
        return {"first_look": self.first_look, "alpha": self.alpha, "rho": self.rho}

    @classmethod
    def from_json(cls, data: Any) -> LookSchedule:
        """A stored schedule (:meth:`to_json`); None (a baseline written before schedules were
        stored) is the default."""
        if data is None:
            return cls()
        if not isinstance(data, Mapping) or set(data) != {"first_look", "alpha", "rho"}:
            raise ValueError(f"`schedule` must hold first_look, alpha and rho, got {data!r}")
        first, alpha, rho = data["first_look"], data["alpha"], data["rho"]
        if type(first) is not int or first < 2:
            raise ValueError(f"`schedule.first_look` must be an integer >= 2, got {first!r}")
        for name, value in (("alpha", alpha), ("rho", rho)):
            if isinstance(value, bool) or not isinstance(value, (int, float)) \
                    or not 0 < value <= 1:
                raise ValueError(f"`schedule.{name}` must be a number in (0, 1], got {value!r}")
        return cls(first, float(alpha), float(rho))


@dataclass(frozen=True)
class Design:
    """The boundaries of a cell's looks.

    ``looks``: the seeds at each look (increasing; the schedule's ``n₁, 2n₁, ...`` up to the
    last look the run holds, or one look judged alone); ``rho``: the share of α the first look
    spends (1: a run judged alone at α); ``spent[k]``: cumulative α by look k;
    ``critical[k]``: the one-sided t critical value at look k (REGRESSED rejects when
    ``(mean + margin)/se <= −c``, NOT WORSE when ``(mean + δ)/se >= c``, BETTER when
    ``(mean − margin)/se >= c``; ``inf`` where a look has nothing to spend); ``nominal[k]``:
    look k's one-sided p threshold ``P(T_{n_k − 1} >= critical[k])``, exactly ``spent[0]`` at
    the first look. Build with :func:`design` or :func:`single_look`.
    """

    looks: tuple[int, ...]
    alpha: float
    rho: float
    spent: tuple[float, ...]
    critical: tuple[float, ...]
    nominal: tuple[float, ...]

    @property
    def first(self) -> int:
        return self.looks[0]

    @property
    def max_seeds(self) -> int:
        return self.looks[-1]

    @property
    def on_schedule(self) -> bool:
        """Whether the looks are a schedule's (False: one look judged alone at α)."""
        return self.rho < 1

    def confidence_level(self, k: int = -1) -> float:
        """Level of the two-sided interval ``mean ± c_k·se`` that matches look k's decision."""
        return 1 - 2 * self.nominal[k]

    def at_level(self, alpha: float) -> Design:
        """The same looks and spending at another level (α/m for Holm across m cells): every
        look's boundary at that level, as group-sequential Holm re-tests earlier looks."""
        return _design(self.looks, float(alpha), self.rho)

    def upto(self, n: int) -> Design:
        """This design's looks up to ``n`` seeds (a prefix: the same boundaries bit for bit)."""
        k = sum(1 for x in self.looks if x <= n)
        if k == 0:
            raise ValueError(f"{n} seeds hold no look of {self.describe()}")
        return _design(self.looks[:k], self.alpha, self.rho)

    def describe(self) -> str:
        """``10→20→40`` (a schedule, with an arrow to what follows) or ``10 seeds, alone``."""
        if not self.on_schedule:
            return f"{self.looks[0]} seeds judged alone"
        return "→".join(str(n) for n in self.looks) + "→…"


def design(first: int, upto: int, *, alpha: float = 0.05, rho: float = DEFAULT_RHO) -> Design:
    """The schedule's design from its first look ``first`` up to the last look within ``upto``
    seeds, at one-sided level ``alpha`` for each boundary. Deterministic, cached per process."""
    _check_params(alpha, rho)
    looks = schedule(first, upto)
    if not looks:
        raise ValueError(f"{upto} seeds hold no look of a schedule starting at {first}")
    return _design(looks, float(alpha), float(rho))


def single_look(n: int, *, alpha: float = 0.05) -> Design:
    """One look at ``n`` seeds that spends all of ``alpha``: a run judged alone."""
    _check_params(alpha, 1.0)
    if n < 2:
        raise ValueError(f"a look needs at least 2 seeds, got {n}")
    return _design((int(n),), float(alpha), 1.0)


@lru_cache(maxsize=256)
def _design(looks: tuple[int, ...], alpha: float, rho: float) -> Design:
    from scipy import special

    spent = tuple(spending(n, looks[0], alpha=alpha, rho=rho) for n in looks)
    critical = calibrate(looks, spent)
    nominal = (spent[0], *(float(special.stdtr(n - 1, -c))
                           for n, c in zip(looks[1:], critical[1:], strict=True)))
    return Design(looks=looks, alpha=alpha, rho=rho, spent=spent, critical=critical,
                  nominal=nominal)


def calibrate(looks: tuple[int, ...], cumulative: tuple[float, ...]) -> tuple[float, ...]:
    """The one calibrator: per-look critical values of the sequential one-sample t statistics
    under the null (normal differences with mean at the boundary) such that crossing first at
    look k has probability ``cumulative[k] − cumulative[k−1]``. A look with nothing to spend
    gets ``inf``. The prefix of the result depends only on the prefix of the inputs."""
    cum = np.asarray(cumulative, dtype=float)
    if len(looks) != cum.size or not looks:
        raise ValueError(f"{len(looks)} looks for {cum.size} cumulative levels")
    if looks[0] < 2 or any(b <= a for a, b in zip(looks, looks[1:], strict=False)):
        raise ValueError(f"`looks` must increase from at least 2, got {list(looks)}")
    if not (0 < cum[0] < 0.5 and np.all(np.diff(cum) >= 0) and cum[-1] < 0.5):
        raise ValueError(f"cumulative levels must be non-decreasing in (0, 0.5), got {cum}")
    critical = [float(t_quantile(1 - cum[0], looks[0] - 1))]
    if len(looks) == 1:
        return tuple(critical)
    # The paths depend only on the looks, never on α or the spending: the designs at the Holm
    # levels of a family, and a longer schedule, share them.
    stats = _paths(tuple(looks)).stats
    running = stats[0] < critical[0]
    for k in range(1, len(looks)):
        j = int(round((cum[k] - cum[k - 1]) * CALIBRATION_PATHS))  # paths to first cross here
        c = crossing(stats[k], running, j, looks[k])
        critical.append(math.inf if c is None else c)
        running &= stats[k] < critical[-1]
    return tuple(critical)


def crossing(stat: np.ndarray, running: np.ndarray, j: int, n: int) -> float | None:
    """The critical value that ``j`` of the running paths cross: halfway between the j-th and
    (j+1)-th largest of ``stat[running]`` (t statistics of ``n`` seeds); None when ``j`` is 0
    or all of them.

    Only the top ``j + 1`` running values matter, so the order statistics are taken among the
    running values above a generous cut from the t law of ``stat`` (checked to hold at least
    ``j + 1`` values; else all running values): the numbers of a full sort, for less."""
    alive = int(np.count_nonzero(running))
    if not 0 < j < alive:
        return None
    share = 2 * (j + 1 + running.size - alive) / running.size + 1e-3
    top = stat[running & (stat >= t_quantile(1 - share, n - 1))] if share < 0.5 else None
    if top is None or top.size <= j:
        top = stat[running]
    pair = -np.partition(-top, (j - 1, j))[j - 1:j + 1]
    return float(pair.mean())


@dataclass(frozen=True)
class _Paths:
    """:data:`CALIBRATION_PATHS` simulated null paths up to the last of some looks: the t
    statistic at each look, the running sum ``S`` and sum of squares about the mean ``Q`` at
    the last (σ = 1), and the generator state that draws the next look's block."""

    stats: tuple[np.ndarray, ...]
    S: np.ndarray
    Q: np.ndarray
    state: Mapping[str, Any]


@lru_cache(maxsize=6)
def _paths(looks: tuple[int, ...]) -> _Paths:
    """The paths of ``looks``, drawn look by look from :data:`CALIBRATION_SEED`, so the paths
    of a prefix of the looks are the first looks' paths of the whole (4 MB per look; six sets
    of looks kept)."""
    if len(looks) > 1:
        head = _paths(looks[:-1])
        gen = np.random.Generator(np.random.PCG64())
        gen.bit_generator.state = head.state
        S, Q = grow_paths(gen, head.S, head.Q, looks[-2], looks[-1])
        return _Paths((*head.stats, t_stat(S, Q, looks[-1])), S, Q, gen.bit_generator.state)
    gen = np.random.default_rng(CALIBRATION_SEED)
    zero = np.zeros(CALIBRATION_PATHS, dtype=np.float32)
    S, Q = grow_paths(gen, zero, zero, 0, looks[0])
    return _Paths((t_stat(S, Q, looks[0]),), S, Q, gen.bit_generator.state)


def grow_paths(gen: np.random.Generator, S: np.ndarray, Q: np.ndarray, n_prev: int,
               n: int) -> tuple[np.ndarray, np.ndarray]:
    """Simulated paths of standard normal differences taken from ``n_prev`` to ``n`` seeds
    through their sufficient statistics: ``S`` the running sum, ``Q`` the sum of squares about
    the mean (both zero at ``n_prev = 0``). The block of ``m = n − n_prev`` new normals adds a
    sum ~ N(0, m) and a within-block SS ~ χ²_{m−1}, independent; the dtype is ``S``'s."""
    m = n - n_prev
    dtype = S.dtype
    block = gen.standard_normal(S.size, dtype=dtype) * math.sqrt(m)
    within = (np.zeros(S.size, dtype=dtype) if m == 1
              else 2 * gen.standard_gamma((m - 1) / 2, S.size, dtype=dtype))
    if n_prev == 0:
        return block, within
    return S + block, Q + within + (n_prev * m / n) * (S / n_prev - block / m) ** 2


def t_stat(S: np.ndarray, Q: np.ndarray, n: int) -> np.ndarray:
    """The one-sample t statistic of each path from its sum ``S`` and sum of squares about the
    mean ``Q`` at ``n`` seeds."""
    # A float32 χ² draw can be exactly 0 among millions of paths (small df): that path's t is
    # ±inf, its true limit.
    with np.errstate(divide="ignore", invalid="ignore"):
        return (S / n) / np.sqrt(Q / (n - 1) / n)


def clear_caches() -> None:
    """Forget every cached design and set of simulated paths, as in a fresh process (for checks
    that calibrating does not depend on what was calibrated before)."""
    _design.cache_clear()
    _paths.cache_clear()


def _check_params(alpha: float, rho: float) -> None:
    if not 0 < alpha < 0.5:
        raise ValueError(f"`alpha` must lie in (0, 0.5), got {alpha!r}")
    if not 0 < rho <= 1:
        raise ValueError(f"`rho` (the share of α the first look spends) must lie in (0, 1], "
                         f"got {rho!r}")
