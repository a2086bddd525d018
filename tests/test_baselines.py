"""The baseline store: paths, distinct errors, merging, stable files; then through pytest."""

from __future__ import annotations

import json

import numpy as np
import pytest

from pytest_graphnetz import BenchmarkReport
from pytest_graphnetz.baselines import (
    BaselineError,
    BaselineFormatError,
    BaselineHandle,
    BaselineMissingError,
    BaselineSchemaError,
    default_path,
    load_baseline,
)
from pytest_graphnetz.report import SCHEMA_VERSION

pytest.importorskip("scipy.stats")
import pytest_graphnetz.gates  # noqa: E402,F401  (loaded once: see test_plugin.py)


def report(models=("GCN",), seeds=range(4), offset=0.0) -> BenchmarkReport:
    X = 0.8 + offset + 0.01 * np.arange(len(models) * len(seeds)).reshape(1, len(models), -1)
    return BenchmarkReport.from_arrays(X, tasks=["karate"], models=list(models), seeds=seeds,
                                       metric="accuracy")


def test_default_path_is_module_and_test(tmp_path) -> None:
    assert default_path(tmp_path, "test_models", "test_gcn") == \
        tmp_path / "test_models" / "test_gcn.json"
    # parametrised ids keep their brackets; path separators and spaces cannot escape the dir
    assert default_path(tmp_path, "m", "test_x[a/b c]").name == "test_x[a_b_c].json"
    assert default_path(tmp_path, "m", "../up").parent == tmp_path / "m"


def test_each_problem_has_its_own_error(tmp_path) -> None:
    path = tmp_path / "b.json"
    with pytest.raises(BaselineMissingError, match="create it with `pytest t.py::x --up`"):
        load_baseline(path, update_command="pytest t.py::x --up")
    path.write_text("{not json")
    with pytest.raises(BaselineFormatError, match="cannot be read: .*not valid JSON") as info:
        load_baseline(path)
    assert not isinstance(info.value, BaselineSchemaError)
    data = report().to_dict()
    data["schema_version"] = SCHEMA_VERSION + 1
    path.write_text(json.dumps(data))
    with pytest.raises(BaselineSchemaError, match=f"newer pytest-graphnetz .*version "
                                                  f"{SCHEMA_VERSION + 1}.*Upgrade"):
        load_baseline(path)


def test_write_merges_cell_by_cell(tmp_path) -> None:
    handle = BaselineHandle(tmp_path / "b.json")
    first = report(models=("GCN", "SAGE"), seeds=range(4))
    handle.write(first)
    update = report(models=("GCN", "GAT"), seeds=range(4), offset=0.1)
    merged = BenchmarkReport.from_json(handle.write(update))
    assert merged.models == ("GCN", "SAGE", "GAT") and merged.seeds == (0, 1, 2, 3)
    for model, source in (("GCN", update), ("SAGE", first), ("GAT", update)):
        np.testing.assert_array_equal(merged.values("karate", model),
                                      source.values("karate", model))
    more = BenchmarkReport.from_json(handle.write(report(models=merged.models, seeds=[4, 5])))
    assert more.seeds == (0, 1, 2, 3, 4, 5)


def test_unmergeable_update_is_an_error(tmp_path) -> None:
    handle = BaselineHandle(tmp_path / "b.json")
    handle.write(report(models=("GCN",), seeds=range(4)))
    before = handle.path.read_bytes()
    with pytest.raises(BaselineError, match="cannot merge .*--graphnetz-force"):
        handle.write(report(models=("GAT",), seeds=range(2)))
    assert handle.path.read_bytes() == before


def test_files_are_stable_and_diffable(tmp_path) -> None:
    a, b = tmp_path / "a.json", tmp_path / "b.json"
    report().to_json(a)
    BenchmarkReport.from_json(a).to_json(b)
    assert a.read_bytes() == b.read_bytes()
    text = a.read_text()
    keys = list(json.loads(text))
    assert keys == sorted(keys)
    assert "0.81" in text   # shortest round-trip floats, not 0.8100000000000001


# -- the same through real pytest sessions (numbers from from_arrays: nothing trains) -------------

GATE = """
import numpy as np
from pytest_graphnetz import BenchmarkReport, assert_not_worse

SHIFT = {shift}


def test_gcn(graphnetz_baseline):
    X = 0.8 + SHIFT + np.array([[[0.01, 0.03, 0.0, 0.02, 0.01, 0.04]]])
    report = BenchmarkReport.from_arrays(X, tasks=["karate"], models=["GCN"], seeds=range(6),
                                         metric="accuracy")
    assert_not_worse(report, graphnetz_baseline())
"""


@pytest.fixture
def project(pytester: pytest.Pytester) -> pytest.Pytester:
    pytester.makepyfile(test_model=GATE.format(shift="0.0"))
    return pytester


def baseline_file(pytester: pytest.Pytester):
    return pytester.path / "baselines" / "test_model" / "test_gcn.json"


def test_missing_baseline_names_the_command(project: pytest.Pytester) -> None:
    result = project.runpytest()
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines([
        "*BaselineMissingError: no baseline at *baselines/test_model/test_gcn.json: create it "
        "with `pytest test_model.py::test_gcn --graphnetz-update-baselines`*"])
    assert not baseline_file(project).exists()


@pytest.mark.parametrize(("content", "message"), [
    ("{not json", "*BaselineFormatError: baseline *test_gcn.json cannot be read: *not valid JSON*"),
    ('{"schema": "pytest-graphnetz/report", "schema_version": 99}',
     "*BaselineSchemaError: baseline *test_gcn.json was written by a newer pytest-graphnetz "
     "(report schema version 99*"),
    ('{"schema": "pytest-graphnetz/report", "schema_version": 1, "tasks": []}',
     "*BaselineFormatError: baseline *test_gcn.json cannot be read: *malformed report*"),
])
def test_unreadable_baseline_is_never_overwritten(project: pytest.Pytester, content: str,
                                                  message: str) -> None:
    path = baseline_file(project)
    path.parent.mkdir(parents=True)
    path.write_text(content)
    for args in ((), ("--graphnetz-update-baselines",)):
        result = project.runpytest(*args)
        result.assert_outcomes(failed=1)
        result.stdout.fnmatch_lines([message])
        assert path.read_text() == content
    # only --graphnetz-force replaces it
    project.runpytest("--graphnetz-update-baselines", "--graphnetz-force").assert_outcomes(passed=1)
    assert BenchmarkReport.from_json(path).seeds == tuple(range(6))


def test_ratchet_through_pytest(project: pytest.Pytester) -> None:
    project.runpytest("--graphnetz-update-baselines").assert_outcomes(passed=1)
    path = baseline_file(project)
    good = path.read_bytes()
    project.makepyfile(test_model=GATE.format(shift="-0.05"))
    refused = project.runpytest("--graphnetz-update-baselines")
    refused.assert_outcomes(failed=1)
    refused.stdout.fnmatch_lines(["*refusing to update baseline*REGRESSED*",
                                  "*REFUSED (REGRESSED)*"])
    assert path.read_bytes() == good
    # a better candidate refreshes without force
    project.makepyfile(test_model=GATE.format(shift="0.05"))
    project.runpytest("--graphnetz-update-baselines").assert_outcomes(passed=1)
    assert path.read_bytes() != good


def test_handle_paths_inside_pytest(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(test_model="""
        class TestA:
            def test_x(self, graphnetz_baseline):
                print("PATH=" + str(graphnetz_baseline().path))

        def test_x(graphnetz_baseline):
            print("PATH=" + str(graphnetz_baseline().path))
            print("PATH=" + str(graphnetz_baseline("shared").path))
    """)
    result = pytester.runpytest("-s", "--graphnetz-baseline-dir=refs")
    result.assert_outcomes(passed=2)
    refs = pytester.path / "refs" / "test_model"
    assert [line.split("=", 1)[1] for line in result.outlines if "PATH=" in line] == [
        str(refs / "TestA.test_x.json"), str(refs / "test_x.json"), str(refs / "shared.json")]
