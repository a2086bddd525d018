"""Each statistical add-on (replicates, the leak guard, calibrate, the reuse ledger) against
what it promises: the quick mode of ``benchmarks/addons_conformance.py`` on the real code,
every row met; and a row fails when its rate's interval lies wholly on the wrong side."""

from __future__ import annotations

import pytest

from tests.helpers.benchmark_scripts import loaded

pytest.importorskip("torch")

# The quick run trains the add-ons' tasks: the whole file is in the slow tier.
pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def conformance():
    yield from loaded("addons_conformance", on_path=True)


def test_every_add_on_keeps_its_promise_in_the_quick_run(conformance) -> None:
    rows = conformance.all_rows(quick=True)
    assert {r.addon for r in rows} == {"replicates", "leak guard", "calibrate", "reuse ledger"}
    assert len(rows) == 14
    assert [r.promise for r in rows if not r.met] == []


def test_a_row_is_not_met_when_its_interval_lies_past_the_promise(conformance) -> None:
    Rate, Row = conformance.Rate, conformance.Row
    ceiling = Row("x", "≤ 5%", "", Rate(80, 1000), 0.05, True, "b.py")      # [0.065, 0.099]
    floor = Row("x", "≥ 99%", "", Rate(970, 1000), 0.99, False, "b.py")     # [0.957, 0.979]
    assert not ceiling.met and not floor.met
    assert Row("x", "≤ 5%", "", Rate(55, 1000), 0.05, True, "b.py").met
