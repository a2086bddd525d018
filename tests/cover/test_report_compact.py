"""Compact report JSON: float32 histories at float32 length, still an exact round trip.

Trainers record float32 tensors; their values widened to Python floats have 17-digit double
reprs. ``report.py`` writes such histories with the shortest float32 repr and a ``float32``
marker, and rounds back to float32 on reading. ``tests/cover/test_report_json.py`` covers general
histories (any double); here: float32 ones, the marker, and the fallback for mixed ones.
"""

from __future__ import annotations

import json
import math

import numpy as np
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from pytest_graphnetz.report import BenchmarkReport
from pytest_graphnetz.report.epochs import History, MetricSpec

float32s = st.floats(width=32, allow_nan=True, allow_infinity=True)  # -0.0, subnormals too


def _report(hist: History) -> BenchmarkReport:
    return BenchmarkReport(tasks=["t"], models=["m"], seeds=[0],
                           metrics={"t": MetricSpec("score", True)},  # any float32 fits
                           histories={("t", "m", 0): hist})


def _bits(values) -> list[str]:
    """Exact identity of each value (sign of zero included; every NaN alike)."""
    return ["nan" if math.isnan(v) else float(v).hex() for v in values]


@settings(max_examples=80, deadline=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(test=st.lists(float32s, min_size=1, max_size=6), data=st.data())
def test_float32_histories_round_trip_exactly(test, data, tmp_path):
    n = len(test)
    series = st.lists(float32s, min_size=n, max_size=n)
    hist = History(test=test, val=data.draw(st.one_of(st.none(), series)),
                   train_loss=data.draw(st.one_of(st.just(()), series)),
                   extra=data.draw(st.dictionaries(st.text(max_size=5), series, max_size=2)))
    path = _report(hist).to_json(tmp_path / "r.json")
    raw = json.loads(path.read_text())["histories"]["t"]["m"]["0"]
    assert raw["float32"] is True
    back = BenchmarkReport.from_json(path).histories[("t", "m", 0)]
    for name in ("test", "val", "train_loss"):
        mine, theirs = getattr(hist, name), getattr(back, name)
        assert (mine is None) == (theirs is None)
        if mine is not None:
            assert _bits(theirs) == _bits(mine), name
    assert {k: _bits(v) for k, v in back.extra.items()} == \
        {k: _bits(v) for k, v in hist.extra.items()}


def test_float32_values_are_written_short_and_doubles_in_full(tmp_path):
    loss = float(np.float32(np.log(2)))  # 0.6931471824645996 as a double
    f32 = _report(History(test=[0.25, loss], train_loss=[loss, math.nan]))
    raw = json.loads(f32.to_json(tmp_path / "a.json").read_text())["histories"]["t"]["m"]["0"]
    assert raw == {"float32": True, "test": [0.25, 0.6931472], "train_loss": [0.6931472, "NaN"]}
    assert BenchmarkReport.from_json(tmp_path / "a.json").histories[("t", "m", 0)].test[1] == loss

    # One value that is not a float32 keeps the whole history in full doubles, unmarked.
    mixed = _report(History(test=[0.1, loss]))  # 0.1 is a double with no float32 twin
    raw = json.loads(mixed.to_json(tmp_path / "b.json").read_text())["histories"]["t"]["m"]["0"]
    assert raw == {"test": [0.1, loss]}
    assert BenchmarkReport.from_json(tmp_path / "b.json") == mixed


def test_reports_differing_below_float32_precision_stay_unequal():
    """The short form must not make a double equal to its float32 neighbour."""
    loss = float(np.float32(0.1))  # 0.10000000149011612
    assert _report(History(test=[loss])) != _report(History(test=[0.1]))


def test_version_1_files_without_the_marker_still_load(tmp_path):
    data = _report(History(test=[0.5, 0.75])).to_dict()
    data["schema_version"] = 1
    del data["histories"]["t"]["m"]["0"]["float32"]
    back = BenchmarkReport.from_dict(data)
    assert back.histories[("t", "m", 0)].test == (0.5, 0.75)
