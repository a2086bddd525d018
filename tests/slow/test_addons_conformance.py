"""Each statistical add-on (replicates, the leak guard, calibrate, the reuse ledger) against
what it promises: the quick mode of ``benchmarks/addons_conformance.py`` on the real code,
every row met; and a row fails when its rate's interval lies wholly on the wrong side."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

import pytest

pytest.importorskip("torch")
BENCHMARKS = Path(__file__).resolve().parents[2] / "benchmarks"


@pytest.fixture(scope="module")
def conformance():
    sys.path.insert(0, str(BENCHMARKS))
    spec = importlib.util.spec_from_file_location("addons_conformance",
                                                  BENCHMARKS / "addons_conformance.py")
    module = importlib.util.module_from_spec(spec)
    sys.modules["addons_conformance"] = module   # its dataclasses look their module up
    spec.loader.exec_module(module)
    yield module
    sys.modules.pop("addons_conformance", None)
    sys.path.remove(str(BENCHMARKS))


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
