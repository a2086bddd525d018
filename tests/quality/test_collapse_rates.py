"""The collapse check's false flags by simulation: on normal paired differences each side flags
at its level, and the vectorised statistics are collapse_check's."""

from __future__ import annotations

import numpy as np
import pytest

from pytest_graphnetz.stats.robust import collapse_check, grubbs_critical, grubbs_statistics


def test_false_flags_on_normal_differences_stay_at_alpha_per_side():
    rng = np.random.default_rng(2)
    D = rng.standard_normal((20_000, 10))
    high, low = grubbs_statistics(D)
    crit = grubbs_critical(10, 0.01)
    for side in (high, low):
        assert 0.006 <= np.mean(side > crit) <= 0.0125
    # The vectorised statistics are collapse_check's.
    for row in D[:20]:
        check = collapse_check(np.zeros(10), row)
        assert check.g_baseline == pytest.approx(grubbs_statistics(row[None])[0][0])
        assert check.g_candidate == pytest.approx(grubbs_statistics(row[None])[1][0])
