"""Values and files refused where they enter: a percent accuracy, a value beyond float32, wrong
types, hostile nesting or grids, a directory. Each refusal names the cell or file, the value and
the fix, in one line; nothing is coerced.
"""

from __future__ import annotations

import json
import subprocess
import sys
import warnings
from pathlib import Path

import pytest

from pytest_graphnetz import BenchmarkReport
from pytest_graphnetz.gates.refreshing.baselines import (
    BaselineFormatError,
    read_baseline,
    write_baseline,
)
from pytest_graphnetz.report import ReportFormatError


def _report(values: list[float], metric: str = "accuracy") -> BenchmarkReport:
    return BenchmarkReport.from_arrays([[values]], tasks=["karate"], models=["GCN"],
                                       seeds=range(len(values)), metric=metric)


# -- values checked where they enter ---------------------------------------------------------------


def test_from_arrays_refuses_a_percent_accuracy_naming_the_cell() -> None:
    with pytest.raises(ValueError) as info:
        _report([0.75, 75.3, 0.74])
    assert str(info.value) == (
        "cell karate/GCN, seed 1: accuracy 75.3 at epoch 0 lies outside [0, 1]: it looks like "
        "a percent; give fractions (0.753), not percents (a metric that is not a proportion "
        "needs another name, e.g. Task(metric=...))")
    _report([0.0, 1.0, float("nan")])  # the bounds themselves and a diverged seed are fine
    _report([75.3, 80.1], metric="mae")  # an unbounded metric takes any value


def test_a_custom_trainer_returning_percents_is_refused_before_it_is_cached(root, tmp_path
                                                                          ) -> None:
    pytest.importorskip("torch")
    from pytest_graphnetz import run_benchmark
    from pytest_graphnetz.runner import TripleError
    from tests.helpers.tiny import gcn, tiny_task

    task = tiny_task(trainer=percent_trainer)
    cache = tmp_path / "cache"
    with pytest.raises(TripleError, match=r"trainer of task 'tiny': accuracy 75\.3 at epoch 1 "
                                          r"lies outside \[0, 1\]: it looks like a percent"):
        run_benchmark({"tiny": task}, {"GCN": gcn}, seeds=[0], device="cpu", root=root,
                      cache_dir=cache)
    assert not list(cache.glob("*.json"))  # nothing stored: a fixed trainer is not served this


def percent_trainer(model, data, *, task, device) -> dict:
    return {"test": [0.5, 75.3]}


def _baseline_file(tmp_path: Path, **cell: object) -> Path:
    path = write_baseline(tmp_path / "baselines" / "test_m" / "test_a.json",
                          _report([0.5, 0.75, 0.25]), {})
    data = json.loads(path.read_text())
    data["models"]["GCN"]["tasks"]["karate"]["values"].update(cell)
    path.write_text(json.dumps(data))
    return path


@pytest.mark.parametrize(("cell", "message"), [
    ({"final": [0.5, "0.9", 0.25]}, "`final` must be a list of numbers"),
    ({"final": [0.5, 1e39, 0.25], "float32": True}, "`final` 1e+39 does not fit a float32"),
    ({"final": [0.5, 75.3, 0.25], "float32": False},
     "accuracy 75.3 at epoch 0 lies outside [0, 1]"),
])
def test_baselines_refuse_what_reports_refuse_in_one_line(tmp_path: Path, cell: dict,
                                                          message: str) -> None:
    path = _baseline_file(tmp_path, **cell)
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # numpy's overflow RuntimeWarning was printed before
        with pytest.raises(BaselineFormatError) as info:
            read_baseline(path)
    assert message in str(info.value)
    assert "\n" not in str(info.value)


def test_a_history_value_beyond_float32_is_a_format_error() -> None:
    from pytest_graphnetz.report.codec import history_from_json

    with warnings.catch_warnings():
        warnings.simplefilter("error")
        with pytest.raises(ValueError, match=r"a history value 1e\+39 does not fit a float32"):
            history_from_json({"test": [0.5, 1e39], "float32": True})


# -- report files ----------------------------------------------------------------------------------


def _valid() -> dict:
    return BenchmarkReport.from_arrays([[[0.5, 0.6]]], tasks=["t"], models=["m"], seeds=[0, 1],
                                       metric="accuracy").to_dict()


def _with(**changes) -> dict:
    data = _valid()
    for dotted, value in changes.items():
        *parents, leaf = dotted.split("__")
        node = data
        for key in parents:
            node = node[key]
        node[leaf] = value
    return data


@pytest.mark.parametrize(("data", "problem"), [
    (_with(metrics__t__higher_is_better="false"),
     "`metrics.t.higher_is_better` must be true or false, got 'false'"),
    (_with(metrics__t__higher_is_better=0), "`metrics.t.higher_is_better` must be true or false"),
    (_with(seeds=[0, 1.5]), "`seeds[1]` must be an integer, got 1.5"),
    (_with(seeds=[0, True]), "`seeds[1]` must be an integer, got True"),
    (_with(schema_version=True), "invalid `schema_version` (True)"),
    (_with(schema_version=1.0), "invalid `schema_version` (1.0)"),
    (_with(tasks=[1]), "`tasks[0]` must be a string, got 1"),
    (_with(tasks="t"), "`tasks` must be a list, got a string"),
    (_with(settings={"confidence_level": "0.9"}), "`settings.confidence_level` must be a number"),
    (_with(settings={"pickle": "x"}), "unknown report setting(s) ['pickle']"),
    (_with(histories__t__m={"0": {"test": [0.5]}, "1.0": {"test": [0.6]}}),
     "`histories.t.m.1.0` is not one of `seeds`"),
    (_with(histories__t__m__0={"test": [True]}),
     "task 't' × model 'm' × seed 0: history series `test`[0] must be a number"),
    (_with(histories__t__m__0={"test": ["0.5"]}), "must be a number"),
    (_with(histories__t__m__0={"test": 0.5}), "`test` must be a list of numbers, got a number"),
    (_with(fingerprints={"data": {"t": {"0": 7}}}), "must map an integer seed to a string"),
])
def test_wrong_types_in_a_report_are_refused_not_coerced(tmp_path, data, problem) -> None:
    path = tmp_path / "report.json"
    path.write_text(json.dumps(data))
    with pytest.raises(ReportFormatError) as info:
        BenchmarkReport.from_json(path)
    assert str(path) in str(info.value)
    assert problem in str(info.value)


def test_a_report_nested_200000_deep_is_a_format_error(tmp_path) -> None:
    path = tmp_path / "deep.json"
    path.write_text('{"schema": ' + "[" * 200_000 + "]" * 200_000 + "}")
    with pytest.raises(ReportFormatError, match="nested too deeply"):
        BenchmarkReport.from_json(path)


def test_a_directory_is_not_a_report(tmp_path) -> None:
    with pytest.raises(ReportFormatError, match="is a directory, not a report file"):
        BenchmarkReport.from_json(tmp_path)


@pytest.mark.parametrize("content", [
    '{"schema": ' + "[" * 200_000 + "]" * 200_000 + "}",
    json.dumps(_with(metrics__t__higher_is_better="false")),
])
def test_the_cli_says_what_is_wrong_with_a_hostile_report(tmp_path, capsys, content) -> None:
    from pytest_graphnetz.cli.main import main

    path = tmp_path / "hostile.json"
    path.write_text(content)
    assert main(["show", str(path)]) == 2
    err = capsys.readouterr().err
    assert err.startswith(f"graphnetz show: {path}: ") and err.count("\n") == 1


# -- costs seconds each (marked slow): fresh interpreters, subprocess sessions or killed
# processes (the slow tier, tests/README.md) ------------------------------------------------


HUGE_GRID = """
import json, resource, sys
from pytest_graphnetz import BenchmarkReport
from pytest_graphnetz.report import ReportFormatError

data = BenchmarkReport.from_arrays([[[0.5, 0.6]]], tasks=["t"], models=["m"], seeds=[0, 1],
                                   metric="accuracy").to_dict()
data["tasks"] = [f"t{i}" for i in range(2000)]
data["models"] = [f"m{i}" for i in range(2000)]
data["seeds"] = list(range(2000))
data["metrics"] = {t: {"name": "accuracy", "higher_is_better": True} for t in data["tasks"]}
data["histories"] = {"t0": {"m0": {"0": {"test": [0.5]}}}}
with open(sys.argv[1], "w") as fh:
    json.dump(data, fh)
# Far less than the 8e9 (task, model, seed) tuples the grid declares would take.
limit = 1 << 30
resource.setrlimit(resource.RLIMIT_AS, (limit, limit))
try:
    BenchmarkReport.from_json(sys.argv[1])
except ReportFormatError as exc:
    print("REFUSED", exc)
"""


@pytest.mark.slow
def test_a_small_file_declaring_a_huge_grid_is_refused_before_allocating(tmp_path) -> None:
    path = tmp_path / "huge.json"
    run = subprocess.run([sys.executable, "-c", HUGE_GRID, str(path)], capture_output=True,
                         text=True, timeout=600)
    assert run.returncode == 0, run.stderr[-2000:]
    assert path.stat().st_size < 200_000
    assert ("`histories` has no history for 7999999999 of the 2000 × 2000 × 2000 = 8000000000 "
            "cells") in run.stdout
