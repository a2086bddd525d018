"""Notes only where they apply: "collapsed" only for a run that collapsed, the missing-δ note
only on rows whose NOT WORSE it qualifies, candidate seeds the baseline cannot pair named on
the row, a skewed row's "hold 20+ seeds" saying to refresh first when the baseline lacks them.
"""

from __future__ import annotations

import numpy as np
import pytest

pytest.importorskip("scipy.stats")
from pytest_graphnetz import BenchmarkReport  # noqa: E402
from pytest_graphnetz.gates.comparing.compare import compare_reports  # noqa: E402
from pytest_graphnetz.gates.comparing.pairing import collapse_notes  # noqa: E402


def _make(x: np.ndarray, seeds, metric: str = "accuracy") -> BenchmarkReport:
    return BenchmarkReport.from_arrays(x, tasks=["t"], models=["m"], seeds=seeds, metric=metric)


def test_an_ordinary_value_whose_difference_is_an_outlier_is_not_called_collapsed() -> None:
    # the candidate scores 0.80 at seed 8, in the middle of its seeds, but the baseline's seed
    # 8 was its best: the paired difference is the outlier, the run is not
    base = [0.80, 0.81, 0.79, 0.80, 0.81, 0.79, 0.80, 0.81, 0.86, 0.80]
    cand = [b + d for b, d in zip(base, [0.001, -0.001, 0.0, 0.001, -0.001, 0.0, 0.001, 0.0,
                                         0.0, -0.001], strict=True)]
    cand[8] = 0.80
    notes, short = collapse_notes(base, cand, list(range(10)), higher_is_better=True)
    assert short == "seed 8: outlying paired difference, t test less reliable", short
    assert "collapsed" not in short and "not a collapsed run" in notes[0]
    # a run that did collapse is still called so
    cand[8] = 0.40
    notes, short = collapse_notes(base, cand, list(range(10)), higher_is_better=True)
    assert short == "seed 8 collapsed (candidate): t test less reliable", short


def test_the_missing_delta_note_is_only_on_rows_it_qualifies() -> None:
    rng = np.random.default_rng(2)
    base = 1.0 + 0.02 * rng.standard_normal((1, 1, 10))
    z = rng.standard_normal(10)
    for shift, verdict, noted in ((0.1, "REGRESSED", False), (-0.1, "BETTER", False),
                                  (0.0, "INCONCLUSIVE", True)):
        cand = base + shift + 0.001 * (z - z.mean())
        (v,) = compare_reports(_make(cand, range(10), "mae"), _make(base, range(10), "mae"))
        assert v.verdict == verdict
        assert ("no min_effect" in v.row().get("note", "")) is noted, v.row()


def test_candidate_seeds_the_baseline_cannot_pair_are_named_on_the_row() -> None:
    rng = np.random.default_rng(1)
    base = 0.8 + 0.02 * rng.standard_normal((1, 1, 20))
    cand = base + 0.001 * rng.standard_normal((1, 1, 20))
    (v,) = compare_reports(_make(cand, range(20)), _make(base[:, :, :10], range(10)))
    assert v.comparison.evidence.n == 10
    assert ("candidate seeds 10-19 unpaired, not read (the baseline holds 0-9): refresh it "
            "with 20 seeds first to use them") in v.row()["note"]
    (v,) = compare_reports(_make(cand[:, :, :10], range(10)), _make(base, range(20)))
    assert "unpaired" not in v.row().get("note", "")


def test_a_refusals_first_line_fits_a_terminal_and_the_detail_follows() -> None:
    from pytest_graphnetz.base.text import FIRST_LINE_WIDTH
    from pytest_graphnetz.gates.verdicts.values import GateRefusal

    rng = np.random.default_rng(3)
    x = 0.8 + 0.02 * rng.standard_normal((1, 1, 10))
    base = _make(x, range(10))
    cases = {
        "seeds": (_make(x[:, :, :1], [9]), "they share 1 seed(s) [9]"),
        "metric": (_make(x, range(10), "f1"), "two different metrics cannot be paired"),
        "data": (BenchmarkReport.from_arrays(
            x, tasks=["t"], models=["m"], seeds=range(10), metric="accuracy",
            fingerprints={"data": {"t": {s: "new" for s in range(10)}}}),
            "its data or split differs"),
    }
    fingerprinted = BenchmarkReport.from_arrays(
        x, tasks=["t"], models=["m"], seeds=range(10), metric="accuracy",
        fingerprints={"data": {"t": {s: "old" for s in range(10)}}})
    for name, (cand, detail) in cases.items():
        with pytest.raises(GateRefusal) as info:
            compare_reports(cand, fingerprinted if name == "data" else base)
        first, rest = str(info.value).split("\n", 1)
        assert len(first) <= FIRST_LINE_WIDTH and first.startswith(("cannot pair", "no paired"))
        assert detail in rest, (name, rest)
