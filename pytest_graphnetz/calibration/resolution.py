"""What δ a calibrated cell's seeds resolve: the measured cells (:class:`CellCalibration`, one
test's :class:`Calibration`) and the planning arithmetic over their innocent paired sd, through
:mod:`pytest_graphnetz.stats.planning`."""

from __future__ import annotations

import math
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    import numpy as np

DEFAULT_SALT = 1
DEFAULT_POWER = 0.8


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
    from ..stats.planning import seeds_for_min_effect

    if int(n_seeds) < 2:
        raise ValueError(f"`n_seeds` must be at least 2 paired seeds, got {n_seeds!r}")
    if not (math.isfinite(sd_diff) and sd_diff >= 0):
        raise ValueError(f"`sd_diff` must be a finite number >= 0, got {sd_diff!r}")
    if sd_diff == 0:
        return 0.0

    # With margin 0 the seeds needed depend on δ / sd only: bisect the ratio on sd 1.
    def resolves(ratio: float) -> bool:
        return seeds_for_min_effect(1.0, ratio, alpha=alpha, alpha_regressed=alpha_regressed,
                                    power=power) <= n_seeds

    low, high = 0.0, 1.0
    while not resolves(high):
        low, high = high, high * 2
    while high - low > 1e-4 * high:
        mid = (low + high) / 2
        low, high = (low, mid) if resolves(mid) else (mid, high)
    return high * sd_diff


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
        from ..stats.planning import seeds_for_min_effect

        a = self.alpha if alpha is None else alpha
        return seeds_for_min_effect(self.cells[cell_key].sd_paired, min_effect, alpha=a,
                                    alpha_regressed=a / self.family, power=self.power)

    def merged(self, other: Calibration) -> Calibration:
        """Both calibrations' cells (``other``'s win), e.g. the runs of one test."""
        return replace(self, cells={**self.cells, **other.cells})


__all__ = ["Calibration", "CalibrationError", "CellCalibration", "DEFAULT_POWER", "DEFAULT_SALT",
           "resolvable_min_effect"]
