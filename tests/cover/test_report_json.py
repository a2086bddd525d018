"""BenchmarkReport JSON: lossless round trip (property-based), NaN/inf, refusals naming the file."""

from __future__ import annotations

import json
import math
import os

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from pytest_graphnetz.report import BenchmarkReport, ReportFormatError
from pytest_graphnetz.report.codec import dumps
from pytest_graphnetz.report.epochs import History, MetricSpec
from pytest_graphnetz.report.schema import SCHEMA_VERSION

floats = st.floats(allow_nan=True, allow_infinity=True)  # includes -0.0 and subnormals
# Task and model names refuse control, format and separator characters (text.check_name).
labels = st.text(st.characters(exclude_categories=("Cc", "Cf", "Cs", "Zl", "Zp")),
                 min_size=1, max_size=8)


@st.composite
def reports(draw) -> BenchmarkReport:
    """A random report: 1-3 tasks × 1-3 models × 1-4 seeds, 1-4 epochs, optional series."""
    tasks = draw(st.lists(labels, min_size=1, max_size=3, unique=True))
    models = draw(st.lists(labels, min_size=1, max_size=3, unique=True))
    seeds = draw(st.lists(st.integers(0, 2**32 - 1), min_size=1, max_size=4, unique=True))
    n_epochs = draw(st.integers(1, 4))
    series = st.lists(floats, min_size=n_epochs, max_size=n_epochs)
    histories = {}
    for t in tasks:
        has_val = draw(st.booleans())
        for m in models:
            for s in seeds:
                histories[(t, m, s)] = History(
                    test=draw(series),
                    val=draw(series) if has_val else None,
                    train_loss=draw(st.one_of(st.just(()), series)),
                    extra=draw(st.dictionaries(labels, series, max_size=2)),
                )
    # Unbounded metrics: the values are any floats (a bounded metric refuses those outside
    # [0, 1], tested in test_report_validation.py).
    metrics = {t: MetricSpec(draw(st.sampled_from(["mae", "loss", "custom"])),
                             draw(st.booleans())) for t in tasks}
    fingerprints = {"data": {t: {s: draw(st.text(max_size=10)) for s in seeds} for t in tasks}}
    protocol = draw(st.dictionaries(labels, st.one_of(
        st.integers(), st.text(max_size=10), st.booleans(), st.none(),
        st.floats(allow_nan=False, allow_infinity=False),
        st.lists(st.integers(), max_size=3)), max_size=3))
    return BenchmarkReport(
        tasks=tasks, models=models, seeds=seeds, metrics=metrics, histories=histories,
        protocol=protocol, fingerprints=fingerprints,
        settings={"ci_method": draw(st.sampled_from(["t", "bootstrap"])),
                  "confidence_level": draw(st.floats(0.5, 0.999)), "epoch_selection": "final"},
    )


def _same_bits(a: float, b: float) -> bool:
    return (math.isnan(a) and math.isnan(b)) or (a == b and math.copysign(1, a) ==
                                                 math.copysign(1, b))


@settings(max_examples=60, deadline=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(report=reports())
def test_round_trip_is_lossless(report, tmp_path):
    path = report.to_json(tmp_path / "r.json")
    back = BenchmarkReport.from_json(path)
    assert back == report
    assert (back.tasks, back.models, back.seeds) == (report.tasks, report.models, report.seeds)
    assert back.metrics == report.metrics
    assert back.fingerprints == report.fingerprints
    assert (back.ci_method, back.confidence_level) == (report.ci_method, report.confidence_level)
    for key, hist in report.histories.items():
        got = back.histories[key]
        for name in ("test", "val", "train_loss"):
            mine, theirs = getattr(hist, name), getattr(got, name)
            assert (mine is None) == (theirs is None)
            if mine is not None:
                assert len(mine) == len(theirs)
                assert all(_same_bits(a, b) for a, b in zip(mine, theirs, strict=True)), name
        assert set(got.extra) == set(hist.extra)
    X, Y = report.X, back.X
    assert np.array_equal(X, Y, equal_nan=True)
    # Writing the loaded report again gives the same bytes: the format is a fixed point.
    assert back.to_json(tmp_path / "again.json").read_text() == path.read_text()


def test_nan_and_infinities_are_stored_as_strings_and_restored(tmp_path):
    hist = History(test=[0.5, math.nan], val=[math.inf, -math.inf], train_loss=[1.0, math.nan])
    report = BenchmarkReport(tasks=["t"], models=["m"], seeds=[3],
                             metrics={"t": MetricSpec("accuracy", True)},
                             histories={("t", "m", 3): hist})
    path = report.to_json(tmp_path / "r.json")
    raw = json.loads(path.read_text())  # strict JSON: no bare NaN/Infinity tokens
    assert raw["histories"]["t"]["m"]["3"]["test"] == [0.5, "NaN"]
    assert raw["histories"]["t"]["m"]["3"]["val"] == ["Infinity", "-Infinity"]
    back = BenchmarkReport.from_json(path)
    assert back == report
    assert back.diverged() == [("t", "m", 3)]
    assert math.isnan(back.values("t", "m")[0])


def test_report_with_nan_equals_its_round_trip():
    report = BenchmarkReport.from_arrays([[[0.5, math.nan]]], tasks=["t"], models=["m"],
                                         seeds=[0, 1], metric="accuracy")
    assert BenchmarkReport.from_dict(json.loads(dumps(report.to_dict()))) == report


def test_write_is_atomic_and_leaves_the_old_file_on_failure(tmp_path, monkeypatch):
    report = BenchmarkReport.from_arrays([[[0.5, 0.6]]], tasks=["t"], models=["m"],
                                         seeds=[0, 1], metric="accuracy")
    path = report.to_json(tmp_path / "r.json")
    before = path.read_text()

    def crash(src, dst):
        raise OSError("disk full")

    monkeypatch.setattr(os, "replace", crash)
    other = BenchmarkReport.from_arrays([[[0.1, 0.2]]], tasks=["t"], models=["m"],
                                        seeds=[0, 1], metric="accuracy")
    with pytest.raises(OSError, match="disk full"):
        other.to_json(path)
    assert path.read_text() == before
    assert [p.name for p in tmp_path.iterdir()] == ["r.json"]  # no temp file left behind


def test_atomic_file_replaces_only_a_finished_write(tmp_path):
    from pytest_graphnetz.report.files import atomic_file

    path = tmp_path / "sub" / "data.bin"
    with atomic_file(path, binary=True, suffix=".part") as fh:
        fh.write(b"first")
    umask = os.umask(0)
    os.umask(umask)
    assert path.read_bytes() == b"first"
    assert path.stat().st_mode & 0o777 == 0o666 & ~umask  # not mkstemp's 0600
    with pytest.raises(ValueError, match="stopped midway"), \
            atomic_file(path, binary=True, suffix=".part") as fh:
        fh.write(b"half")
        raise ValueError("stopped midway")
    assert path.read_bytes() == b"first"
    assert [p.name for p in path.parent.iterdir()] == ["data.bin"]  # no .part left behind


def _write(tmp_path, content) -> str:
    path = tmp_path / "bad.json"
    if isinstance(content, bytes):
        path.write_bytes(content)
    else:
        path.write_text(content if isinstance(content, str) else json.dumps(content))
    return str(path)


def _valid_dict() -> dict:
    return BenchmarkReport.from_arrays([[[0.5, 0.6]]], tasks=["t"], models=["m"], seeds=[0, 1],
                                       metric="accuracy").to_dict()


@pytest.mark.parametrize("content, problem", [
    ("{not json", "not valid JSON"),
    ("", "not valid JSON"),
    (b"\xff\xfe\x00garbage", "UTF-8"),
    ('{"schema": "pytest-graphnetz/report", "test": [NaN]}', "not valid JSON"),
    ([1, 2, 3], "not a pytest-graphnetz report"),
    ({"schema": "something-else"}, "not a pytest-graphnetz report"),
    ({"schema": "pytest-graphnetz/report"}, "schema_version"),
    ({**_valid_dict(), "schema_version": SCHEMA_VERSION + 1}, "newer"),
    ({k: v for k, v in _valid_dict().items() if k != "histories"}, "missing key 'histories'"),
    ({**_valid_dict(), "seeds": [0, 1, 2]}, "no history"),
    ({**_valid_dict(), "histories": {"t": {"m": {"0": {"test": [0.5]},
                                                 "1": {"test": [0.5], "val": [1, 2]}}}}},
     "epochs"),
    ({**_valid_dict(), "settings": {"ci_method": "magic"}}, "ci_method"),
])
def test_bad_files_are_refused_naming_the_file_and_problem(tmp_path, content, problem):
    path = _write(tmp_path, content)
    with pytest.raises(ReportFormatError) as info:
        BenchmarkReport.from_json(path)
    assert path in str(info.value)
    assert problem in str(info.value)


def test_newer_schema_says_to_upgrade(tmp_path):
    path = _write(tmp_path, {**_valid_dict(), "schema_version": 99})
    with pytest.raises(ReportFormatError, match="upgrade pytest-graphnetz"):
        BenchmarkReport.from_json(path)


def test_missing_file_names_the_path(tmp_path):
    with pytest.raises(FileNotFoundError, match="nope.json"):
        BenchmarkReport.from_json(tmp_path / "nope.json")


def test_runner_report_round_trips(tmp_path):
    from pytest_graphnetz import run_benchmark
    from tests.helpers.tiny import gcn, tiny_task

    report = run_benchmark({"tiny": tiny_task(epochs=3)}, {"GCN": gcn}, seeds=[0, 1],
                           device="cpu", root=tmp_path / "data")
    back = BenchmarkReport.from_json(report.to_json(tmp_path / "r.json"))
    assert back == report
    assert back.data_fingerprint("tiny", 1) == report.data_fingerprint("tiny", 1)
    assert back.protocol == report.protocol
