"""The conformance harness's quick mode (benchmarks/conformance.py): every invariant of the one
design holds exactly through the real gate on a fixed seed (a longer run only adds looks,
REGRESSED stays REGRESSED, no look reads a seed past it, canonical seeds only, the schedule bound
to the baseline), and its pure parts against independent references."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from tests.helpers.benchmark_scripts import loaded

SCRIPT = Path(__file__).resolve().parents[2] / "benchmarks" / "conformance.py"


@pytest.fixture(scope="module")
def conformance():
    yield from loaded("conformance")


def test_every_invariant_holds_through_the_real_gate(conformance) -> None:
    """On the default schedule and on first looks 5 and 8 (a baseline bound to each)."""
    checks = ("chain_is_one_call", "no_seed_past_the_look_is_read", "canonical_seeds_only",
              "schedule_is_bound")
    assert conformance.check_invariants(seed=0) == {
        name: [] for name in (*checks, *(f"{c}, first look {first}" for first in (5, 8)
                                         for c in checks))}


def test_a_first_look_below_10_walks_its_own_looks_through_the_gate(conformance) -> None:
    """The rows at first looks 5 and 8 decide at those looks (the gate's walk, not 10's), and a
    run below the first look is refused there too: the invariants above are not vacuous."""
    rng = np.random.default_rng(5)
    for first in (5, 8):
        decided = set()
        with conformance.without_advice():
            for _ in range(12):
                D = conformance.cells(rng, 1)
                (v,) = conformance.judged(D, first, first)
                decided.add((str(v.verdict), v.comparison.evidence.n))
        assert {("REGRESSED", first), ("NOT WORSE", first)} <= decided, decided
        row = next(r for r in conformance.ROWS if r.name == f"first look {first}: normal, sd 2")
        # REGRESSED at look `first`, gains after it: a walk from look 10 would not read it
        D = np.full((1, 80), 6.0)
        D[0, :first] = [-3.0, -2.5, -3.5, -2.0, -3.0, -2.8, -3.2, -2.6][:first]
        assert list(row.walk(D, 1.0, False)) == ["REGRESSED"]
        assert list(conformance.gate_walk(D, 1.0, False)) != ["REGRESSED"]


@pytest.mark.parametrize(("k", "n"), [(0, 20), (1, 20), (50, 1000), (20, 20)])
def test_rates_carry_statsmodels_wilson_interval(conformance, k: int, n: int) -> None:
    from statsmodels.stats.proportion import proportion_confint

    low, high = proportion_confint(k, n, alpha=0.05, method="wilson")
    assert conformance.wilson(k, n) == pytest.approx((low, high), abs=1e-12)


def test_the_rows_draw_the_shapes_they_name(conformance) -> None:
    """Sd, skewness and discreteness of each row's sampler on 200,000 values, against scipy."""
    from scipy import stats

    rng = np.random.default_rng(3)
    for row in conformance.ROWS:
        d = row.draw(rng, 2500, 0.0).ravel()
        if "sd" in row.name:
            sd = float(row.name.rsplit("sd ", 1)[1])
            assert d.std() == pytest.approx(sd, rel=0.06 if "t(3)" in row.name else 0.02)
        skew = stats.skew(d)
        expected = {"exponential +2": 2, "exponential −2": -2, "gamma +1": 1, "gamma −1": -1}
        for kind, g in expected.items():
            if row.name.startswith(kind):
                assert skew == pytest.approx(g, abs=0.15), row.name
        if row.name.startswith("accuracy"):
            nodes = int(row.name.split()[2].replace(",", ""))
            assert np.allclose(d * nodes / 100, np.round(d * nodes / 100))   # whole nodes
    # each target: α where the design promises it, 2α on skewed shapes
    assert {r.target for r in conformance.ROWS} == {0.05, 0.1}


def _cells(text: str, header_start: str) -> list[list[str]]:
    lines = text.splitlines()
    at = next(i for i, x in enumerate(lines) if x.startswith(header_start))
    rows = []
    for line in lines[at + 2:]:
        if not line.startswith("|"):
            break
        rows.append([c.strip().replace("**", "") for c in line.strip("|").split("|")])
    return rows


def test_the_guarantees_page_quotes_the_committed_rates() -> None:
    """docs/guarantees.md's skew-guard table is benchmarks/conformance_results.md's rates."""
    root = SCRIPT.parents[1]
    results = {r[0]: r for r in _cells((root / "benchmarks" / "conformance_results.md")
                                       .read_text(), "| row |")}
    page = _cells((root / "docs" / "guarantees.md").read_text(), "| paired differences |")
    assert len(page) == 7 and len(results) == 18

    def rate(row: str, column: int) -> str:
        return results[row][column].split(" [")[0]

    for label, first, second, detection in page:
        shape = label.split(",")[0]
        if shape.startswith("accuracy"):
            names = ["accuracy on 100 test nodes", "accuracy on 1,000 test nodes"]
        else:
            names = [f"{shape}, sd 2", f"{shape}, sd 4"]
        assert first == ", ".join(f"{rate(n, 2)} / {rate(n, 3)}" for n in names), label
        assert second == ", ".join(rate(n, 4) for n in names), label
        assert detection == ", ".join(f"{rate(n, 5)} ({rate(n, 6)})" for n in names), label


def test_a_skewed_row_names_the_rate_the_harness_measured_on_its_side() -> None:
    """stats.skew.CHAIN_RATES, which a corrected row's Note and message name, is the lowest and
    highest of the committed results file's rates on each side of the skew: false REGRESSED
    (chain and 80 held) on the right-skewed rows, a wrong pass at −δ on the left-skewed ones."""
    from pytest_graphnetz.gates.comparing.cells import skew_table_note
    from pytest_graphnetz.stats.skew import CHAIN_RATES, CHAIN_RATES_FILE, SkewCheck, skew_note

    root = SCRIPT.parents[1]
    results = _cells((root / CHAIN_RATES_FILE).read_text(), "| row |")

    def figures(sign: str, columns: tuple[int, ...]) -> list[float]:
        return [float(r[c].split("%")[0]) for r in results
                if r[0].startswith((f"gamma {sign}1", f"exponential {sign}2")) for c in columns]

    measured = {"right": figures("+", (2, 3)), "left": figures("−", (4,))}
    assert all(len(v) >= 4 for v in measured.values())
    for side, values in measured.items():
        low, high = CHAIN_RATES[side]
        assert (f"{100 * low:.1f}", f"{100 * high:.1f}") == (f"{min(values):.1f}",
                                                             f"{max(values):.1f}"), side
    right, left = SkewCheck(10, 1.7, 0.69, 2.5, 2.0), SkewCheck(10, -1.7, 0.69, -2.5, 2.0)
    named = {side: f"{100 * low:.1f}-{100 * high:.1f}%" for side, (low, high)
             in CHAIN_RATES.items()}
    assert skew_table_note(right).endswith(f"false REGRESSED {named['right']} in the chain")
    assert skew_table_note(left).endswith(f"wrong NOT WORSE/BETTER {named['left']} in the chain")
    assert f"false REGRESSED {named['right']} in the rerun chain" in skew_note(right)
    assert f"wrong NOT WORSE/BETTER {named['left']} in the rerun chain" in skew_note(left)
    assert CHAIN_RATES_FILE in skew_note(left)
