"""A linear trend over positions: the least-squares slope and its one-sided test (is the series
falling?), as the history's drift check uses it on per-commit paired means."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from numpy.typing import ArrayLike

from pytest_graphnetz.stats._common import as_vector


@dataclass(frozen=True)
class SlopeTest:
    """The least-squares line ``intercept + slope · x`` through ``n`` points and the one-sided
    p-value of "slope < 0" (Student's t on n − 2 degrees of freedom)."""

    slope: float
    intercept: float
    p_falling: float
    n: int


def slope_test(x: ArrayLike, y: ArrayLike) -> SlopeTest:
    """The trend of ``y`` (n,) over positions ``x`` (n,), n ≥ 3 (``scipy.stats.linregress``,
    ``alternative="less"``). A constant ``y`` is a slope of exactly 0 with p = 1."""
    xs, ys = as_vector(x, "x", "slope test"), as_vector(y, "y", "slope test")
    if xs.shape != ys.shape or xs.size < 3:
        raise ValueError(f"slope test: `x` and `y` need the same length, at least 3 points, "
                         f"got {xs.size} and {ys.size}")
    if np.ptp(ys) == 0:
        return SlopeTest(0.0, float(ys[0]), 1.0, int(xs.size))
    from scipy import stats as sps

    fit = sps.linregress(xs, ys, alternative="less")
    return SlopeTest(float(fit.slope), float(fit.intercept), float(fit.pvalue), int(xs.size))
