"""Hostile or mistaken input: option values, task names, report files. Each is refused with a
message that names the option, task or file, the value and the fix; nothing is coerced."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

from pytest_graphnetz import BenchmarkReport, Task
from pytest_graphnetz.report import ReportFormatError

# -- options -------------------------------------------------------------------------------------


@pytest.mark.parametrize(("value", "message"), [
    ("4294967296", "*'4294967296' asks for 4294967296 seeds; at most 10000 are allowed*"),
    ("0-99999999", "*'0-99999999' asks for 100000000 seeds; at most 10000 are allowed*"),
    ("4294967296,1", "*'4294967296,1' has seed 4294967296; seeds must be below 2**32*"),
    ("4294967290-4294967296", "*has seed 4294967296; seeds must be below 2**32*"),
])
def test_huge_seed_counts_are_usage_errors_at_parse_time(pytester: pytest.Pytester, value: str,
                                                          message: str) -> None:
    pytester.makepyfile("def test_x(): pass")
    result = pytester.runpytest_subprocess(f"--graphnetz-seeds={value}")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines([f"ERROR: graphnetz: `--graphnetz-seeds`*{message}"])
    assert "INTERNALERROR" not in result.stderr.str() + result.stdout.str()


@pytest.mark.parametrize(("args", "ini", "message"), [
    (["--graphnetz-workers=abc"], "",
     "ERROR: graphnetz: `--graphnetz-workers` must be a whole number of processes, got 'abc'"),
    (["--graphnetz-alpha=five"], "",
     "ERROR: graphnetz: `--graphnetz-alpha` must be a number, got 'five'"),
    ([], "graphnetz_update_baselines = maybe",
     "ERROR: graphnetz: the ini key `graphnetz_update_baselines` must be true or false*maybe*"),
    ([], "graphnetz_workers = many",
     "ERROR: graphnetz: the ini key `graphnetz_workers` in tox.ini must be a whole number*"),
])
def test_bad_option_values_name_the_option(pytester: pytest.Pytester, args: list[str], ini: str,
                                           message: str) -> None:
    pytester.makeini(f"[pytest]\n{ini}\n")
    pytester.makepyfile("def test_x(): pass")
    result = pytester.runpytest_subprocess(*args)
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines([message])


# -- task names ----------------------------------------------------------------------------------


def _loader(root):  # never called: the name is refused first
    raise AssertionError("loaded")


@pytest.mark.parametrize("name", ["../../../x", "/tmp/escape", "..", ".", "", "a/b", "a\\b",
                                  "C:evil"])
def test_a_task_name_cannot_leave_the_data_root(name: str) -> None:
    from pytest_graphnetz.tasks import resolve_tasks

    with pytest.raises(ValueError, match="cannot name a directory under the data root"):
        Task(name, _loader)
    with pytest.raises(ValueError, match="cannot name a directory under the data root"):
        resolve_tasks({name: _loader})
    with pytest.raises(ValueError, match="`category`"):
        Task("fine", _loader, category="../up")


def test_a_hostile_task_name_writes_nothing_outside_the_root(tmp_path) -> None:
    from conftest import gcn, tiny_csbm

    from pytest_graphnetz import run_benchmark

    root = tmp_path / "a" / "b" / "root"
    with pytest.raises(ValueError, match=r"rename it, e\.g\. to 'x'"):
        run_benchmark({"../../../x": tiny_csbm}, {"GCN": gcn}, seeds=[0], device="cpu",
                      root=root)
    # <root>/custom/../../../x would have been tmp_path/a/x
    assert [p for p in tmp_path.rglob("*") if p.is_file()] == []


def test_plain_names_with_spaces_and_dots_stay_allowed(tmp_path) -> None:
    assert Task("cora v2.1 (full)", _loader).name == "cora v2.1 (full)"


# -- report files --------------------------------------------------------------------------------


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
    (_with(settings={"pickle": "x"}), "unexpected keyword argument 'pickle'"),
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


def test_a_small_file_declaring_a_huge_grid_is_refused_before_allocating(tmp_path) -> None:
    path = tmp_path / "huge.json"
    run = subprocess.run([sys.executable, "-c", HUGE_GRID, str(path)], capture_output=True,
                         text=True, timeout=120)
    assert run.returncode == 0, run.stderr[-2000:]
    assert path.stat().st_size < 200_000
    assert ("`histories` has no history for 7999999999 of the 2000 × 2000 × 2000 = 8000000000 "
            "cells") in run.stdout


@pytest.mark.parametrize("content", [
    '{"schema": ' + "[" * 200_000 + "]" * 200_000 + "}",
    json.dumps(_with(metrics__t__higher_is_better="false")),
])
def test_the_cli_says_what_is_wrong_with_a_hostile_report(tmp_path, capsys, content) -> None:
    from pytest_graphnetz.cli import main

    path = tmp_path / "hostile.json"
    path.write_text(content)
    assert main(["show", str(path)]) == 2
    err = capsys.readouterr().err
    assert err.startswith(f"graphnetz show: {path}: ") and err.count("\n") == 1
