"""What δ a calibrated cell's seeds resolve: the measured cells (:class:`CellCalibration`, one
test's :class:`Calibration`), their innocent paired sd per training budget (:class:`EpochCurve`,
from the per-epoch records: :func:`value_at_budget`), the check that the salted rerun's mean did
not move (:attr:`CellCalibration.shift_p`), and the planning arithmetic over the paired sd,
through :mod:`pytest_graphnetz.stats.planning`."""

from __future__ import annotations

import math
from dataclasses import dataclass, field, replace
from functools import cached_property, lru_cache
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    import numpy as np

    from pytest_graphnetz.report.epochs import History, MetricSpec

DEFAULT_SALT = 1
DEFAULT_POWER = 0.8
#: The cheapest budget is planned from this one-sided upper confidence bound of each budget's
#: paired sd (χ² on n − 1 degrees of freedom): a 10-seed sd is off by ±25%, and planning from
#: the estimate named, near the threshold, a budget that delivered power 0.8 in only 54% of
#: calibrations (``benchmarks/calibrate_budget.py`` measures the bound's rate).
BUDGET_LEVEL = 0.9


class CalibrationError(ValueError):
    """A calibration that cannot stand for its cells (the salt changed the data, a bad file)."""


def resolvable_min_effect(sd_diff: float, n_seeds: int, *, alpha: float = 0.05,
                          alpha_regressed: float | None = None,
                          power: float = DEFAULT_POWER) -> float:
    """The smallest δ that ``n_seeds`` paired seeds resolve when paired differences have sd
    ``sd_diff``: the least δ with :func:`~pytest_graphnetz.stats.planning.seeds_for_min_effect`
    ``(sd_diff, δ) <= n_seeds`` (no change reads NOT WORSE and a drop of δ REGRESSED, each with
    probability ≥ ``power``), found by bisection (the seeds needed fall as δ grows). In the units
    of ``sd_diff``, to a relative precision of 1e-4.
    """
    if int(n_seeds) < 2:
        raise ValueError(f"`n_seeds` must be at least 2 paired seeds, got {n_seeds!r}")
    if not (math.isfinite(sd_diff) and sd_diff >= 0):
        raise ValueError(f"`sd_diff` must be a finite number >= 0, got {sd_diff!r}")
    if sd_diff == 0:
        return 0.0
    return _resolvable_ratio(int(n_seeds), alpha, alpha_regressed, power) * sd_diff


@lru_cache(maxsize=256)
def _resolvable_ratio(n_seeds: int, alpha: float, alpha_regressed: float | None,
                      power: float) -> float:
    """δ / sd that ``n_seeds`` resolve: with margin 0 the seeds needed depend on δ / sd only,
    so bisect the ratio on sd 1 (once per setting: a calibration asks it per budget)."""
    from pytest_graphnetz.stats.planning import seeds_for_min_effect

    def resolves(ratio: float) -> bool:
        return seeds_for_min_effect(1.0, ratio, alpha=alpha, alpha_regressed=alpha_regressed,
                                    power=power) <= n_seeds

    low, high = 0.0, 1.0
    while not resolves(high):
        low, high = high, high * 2
    while high - low > 1e-4 * high:
        mid = (low + high) / 2
        low, high = (low, mid) if resolves(mid) else (mid, high)
    return high


def value_at_budget(history: History, budget: int, rule: str, metric: MetricSpec,
                    selected: int) -> float:
    """The value a run trained for ``budget`` epochs would report, read from the per-epoch
    record ``history`` of a longer run: under ``rule`` ``"final"`` the test value at epoch
    ``budget`` (1-based), under ``"best_val"`` the test value at the best validation epoch among
    the first ``budget`` (the first on ties, NaN never best). A budget at or past the run's
    length is the run itself: its test value at ``selected``, the epoch the report's rule chose
    (an early-stopped run stops there whatever the budget). Exact when nothing in training
    depends on the planned length (a learning-rate schedule over E epochs does)."""
    if budget >= history.n_epochs:
        return history.test[selected]
    if rule == "final":
        return history.test[budget - 1]
    assert history.val is not None   # best_val is only asked of a task with validation series
    sign = 1.0 if history.val_higher_is_better(metric) else -1.0
    vals = [sign * v if v == v else -math.inf for v in history.val[:budget]]
    return history.test[vals.index(max(vals))]


@dataclass(frozen=True)
class EpochCurve:
    """One cell's innocent noise per training budget, from the per-epoch records of the baseline
    run and its salted rerun: at ``budgets[i]`` epochs, the baseline's mean over seeds
    (``mean``), the sd of the paired differences salted − baseline (``sd_paired``) and the
    seeds paired (``n``: both sides finite). All of one length, budgets rising."""

    budgets: tuple[int, ...]
    mean: tuple[float, ...]
    sd_paired: tuple[float, ...]
    n: tuple[int, ...]

    @classmethod
    def from_values(cls, budgets: tuple[int, ...], baseline: np.ndarray,
                    salted: np.ndarray) -> EpochCurve:
        """From per-seed values ``baseline``, ``salted``, each of shape [budget, seed]."""
        import numpy as np

        base, salt = np.asarray(baseline, float), np.asarray(salted, float)
        keep = np.isfinite(base) & np.isfinite(salt)
        means, sds, ns = [], [], []
        for b, s, k in zip(base, salt, keep, strict=True):
            n = int(k.sum())
            ns.append(n)
            means.append(float(b[k].mean()) if n else math.nan)
            sds.append(float((s[k] - b[k]).std(ddof=1)) if n > 1 else math.nan)
        return cls(tuple(int(b) for b in budgets), tuple(means), tuple(sds), tuple(ns))


@dataclass(frozen=True)
class CellCalibration:
    """One (task, model) cell: the per-seed values of the baseline run and of its salted rerun
    (``seeds`` order, under the report's epoch selection), and what they imply.

    ``sd_seed``: sd of the baseline's per-seed values; ``sd_paired``: sd of the paired
    differences salted − baseline (the noise of an innocent change); ``n``: seeds paired (a
    seed diverged on either side is left out).
    """

    task: str
    model: str
    metric: str
    seeds: tuple[int, ...]
    baseline: tuple[float, ...]
    salted: tuple[float, ...]
    # Per training budget (None: the runs kept no per-epoch record); a file keeps it rounded,
    # so it takes no part in equality.
    curve: EpochCurve | None = field(default=None, compare=False)

    def _pairs(self) -> tuple[np.ndarray, np.ndarray]:
        import numpy as np

        base, salted = np.asarray(self.baseline, float), np.asarray(self.salted, float)
        keep = np.isfinite(base) & np.isfinite(salted)
        return base[keep], salted[keep]

    @property
    def n(self) -> int:
        return int(self._pairs()[0].size)

    @property
    def sd_seed(self) -> float:
        base = self._pairs()[0]
        return float(base.std(ddof=1)) if base.size > 1 else math.nan

    @property
    def sd_paired(self) -> float:
        base, salted = self._pairs()
        return float((salted - base).std(ddof=1)) if base.size > 1 else math.nan

    @property
    def mean_paired(self) -> float:
        base, salted = self._pairs()
        return float((salted - base).mean()) if base.size else math.nan

    @cached_property
    def shift_p(self) -> float:
        """Two-sided p of the paired t test of salted against baseline (NaN below 2 pairs): a
        salted rerun is the same training under other draws, so its mean must not move; a
        small p says the salt changed something else (the split, the data) or the run is not
        deterministic given its seed."""
        from pytest_graphnetz.stats.paired import paired_test

        base, salted = self._pairs()
        if base.size < 2:
            return math.nan
        return float(paired_test(salted, base, label=f"{self.task}/{self.model}").p_value)

    @property
    def plannable(self) -> bool:
        """Whether the cell has a paired sd to plan from (at least 2 pairs, a finite sd)."""
        return self.n >= 2 and math.isfinite(self.sd_paired)


@dataclass(frozen=True)
class Calibration:
    """Every calibrated cell of one test (its gate's family), and how it was planned.

    ``family``: the cells gated together, so REGRESSED is planned at the Holm level
    ``alpha / family`` (the first step, the strictest); ``epoch_selection``: which epoch the
    values are taken at; ``path``: where it was read from (None when not from a file; the file
    is :mod:`.store`'s).
    """

    cells: dict[tuple[str, str], CellCalibration]
    salt: int = DEFAULT_SALT
    alpha: float = 0.05
    power: float = DEFAULT_POWER
    epoch_selection: str = "final"
    path: Path | None = field(default=None, compare=False)

    @property
    def family(self) -> int:
        return max(1, len(self.cells))

    def resolvable(self, cell_key: tuple[str, str], n_seeds: int | None = None, *,
                   alpha: float | None = None) -> float:
        """The smallest δ that ``n_seeds`` (default: the calibrated seeds) resolve in a cell."""
        cell = self.cells[cell_key]
        a = self.alpha if alpha is None else alpha
        return resolvable_min_effect(cell.sd_paired, cell.n if n_seeds is None else n_seeds,
                                     alpha=a, alpha_regressed=a / self.family, power=self.power)

    def seeds_needed(self, cell_key: tuple[str, str], min_effect: float, *,
                     alpha: float | None = None) -> int:
        """Paired seeds at which a cell resolves ``min_effect`` (``seeds_for_min_effect``)."""
        from pytest_graphnetz.stats.planning import seeds_for_min_effect

        a = self.alpha if alpha is None else alpha
        return seeds_for_min_effect(self.cells[cell_key].sd_paired, min_effect, alpha=a,
                                    alpha_regressed=a / self.family, power=self.power)

    def resolvable_at(self, cell_key: tuple[str, str], index: int,
                      n_seeds: int | None = None, *, bound: bool = False) -> float:
        """:meth:`resolvable` at the curve's ``index``-th budget (NaN: no paired sd there);
        ``bound``: planned from the :data:`BUDGET_LEVEL` upper confidence bound of its paired
        sd instead of the estimate (what :meth:`cheapest_budget` promises on)."""
        from pytest_graphnetz.stats.intervals import sd_upper_bound

        cell = self.cells[cell_key]
        assert cell.curve is not None
        sd, n = cell.curve.sd_paired[index], cell.curve.n[index]
        seeds = n if n_seeds is None else n_seeds
        if not math.isfinite(sd) or seeds < 2 or n < 2:
            return math.nan
        if bound:
            sd = sd_upper_bound(sd, n, confidence_level=BUDGET_LEVEL)
        return resolvable_min_effect(sd, seeds, alpha=self.alpha,
                                     alpha_regressed=self.alpha / self.family, power=self.power)

    def cheapest_budget(self, cell_key: tuple[str, str], min_effect: float,
                        n_seeds: int | None = None) -> int | None:
        """The fewest epochs from which on every recorded budget resolves ``min_effect`` at
        ``n_seeds`` (default: the calibrated seeds), planned from the :data:`BUDGET_LEVEL`
        upper bound of each budget's paired sd, so the budget named delivers the planned power
        on fresh seeds in most calibrations even where the true power crosses it between two
        budgets; one budget that dips below by chance does not count. None: the longest budget
        does not resolve it (or there is no curve)."""
        curve = self.cells[cell_key].curve
        if curve is None:
            return None
        n = self.cells[cell_key].n if n_seeds is None else n_seeds
        cheapest = None
        for i in reversed(range(len(curve.budgets))):
            if not self.resolvable_at(cell_key, i, n, bound=True) <= min_effect:
                break
            cheapest = curve.budgets[i]
        return cheapest

    def shift_p_adjusted(self, cell_key: tuple[str, str]) -> float:
        """The cell's :attr:`CellCalibration.shift_p`, Holm-adjusted over the calibration's
        cells (those with a p): one self-check per calibration, so chance alone warns in at
        most ``alpha`` of innocent calibrations, not ``alpha`` of their cells."""
        ps = sorted((c.shift_p, k) for k, c in self.cells.items() if math.isfinite(c.shift_p))
        adjusted, running = math.nan, 0.0
        for rank, (p, key) in enumerate(ps):
            running = max(running, min(1.0, (len(ps) - rank) * p))
            if key == cell_key:
                adjusted = running
        return adjusted

    def shifted(self, cell_key: tuple[str, str]) -> bool:
        """Whether the salted rerun's mean moved: :meth:`shift_p_adjusted` < alpha."""
        return self.shift_p_adjusted(cell_key) < self.alpha

    def merged(self, other: Calibration) -> Calibration:
        """Both calibrations' cells (``other``'s win), e.g. the runs of one test."""
        return replace(self, cells={**self.cells, **other.cells})


__all__ = ["BUDGET_LEVEL", "Calibration", "CalibrationError", "CellCalibration", "DEFAULT_POWER",
           "DEFAULT_SALT", "EpochCurve", "resolvable_min_effect", "value_at_budget"]
