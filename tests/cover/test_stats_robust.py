"""The collapse check: Grubbs critical values against the published table (ASTM E178, one-sided
upper 5% and 1%), and planted collapses on either side. Its false-flag rate by simulation:
tests/quality/test_collapse_rates.py."""

from __future__ import annotations

import math

import numpy as np
import pytest

from pytest_graphnetz.stats.robust import (
    collapse_check,
    grubbs_critical,
)

# ASTM E178-16a, Table 1: one-sided critical values of T = (x_n − mean)/s.
ASTM_5 = {3: 1.153, 4: 1.463, 5: 1.672, 6: 1.822, 7: 1.938, 8: 2.032, 10: 2.176, 15: 2.409,
          20: 2.557}
ASTM_1 = {3: 1.155, 5: 1.749, 10: 2.410, 15: 2.705, 20: 2.884}


def test_grubbs_critical_values_match_the_astm_table():
    for n, value in ASTM_5.items():
        assert grubbs_critical(n, 0.05) == pytest.approx(value, abs=2e-3)
    for n, value in ASTM_1.items():
        assert grubbs_critical(n, 0.01) == pytest.approx(value, abs=2e-3)
    with pytest.raises(ValueError, match="at least 3"):
        grubbs_critical(2)


def test_a_collapsed_seed_is_flagged_on_its_side():
    rng = np.random.default_rng(1)
    base = 0.80 + 0.02 * rng.standard_normal(10)
    cand = base + 0.005 * rng.standard_normal(10)
    seeds = list(range(100, 110))
    assert not collapse_check(base, cand, seeds=seeds).flagged
    collapsed = base.copy()
    collapsed[3] -= 0.2   # the baseline's seed 103 fell far below: d jumps up there
    check = collapse_check(collapsed, cand, seeds=seeds)
    assert check.baseline_seeds == (103,) and check.candidate_seeds == ()
    assert check.g_baseline > check.critical
    cand_collapsed = cand.copy()
    cand_collapsed[7] -= 0.2
    check = collapse_check(base, cand_collapsed, seeds=seeds)
    assert check.candidate_seeds == (107,) and check.baseline_seeds == ()
    # A lower-is-better metric collapses upwards (a loss that blew up).
    check = collapse_check(-base, -cand_collapsed, higher_is_better=False, seeds=seeds)
    assert check.candidate_seeds == (107,)


def test_no_spread_or_too_few_seeds_flags_nothing():
    assert collapse_check([0.5, 0.5, 0.5], [0.5, 0.5, 0.5]).critical == math.inf
    assert not collapse_check([0.5, 0.6], [0.1, 0.6]).flagged
    with pytest.raises(ValueError, match="finite"):
        collapse_check([0.5, np.nan, 0.4], [0.5, 0.5, 0.5])
