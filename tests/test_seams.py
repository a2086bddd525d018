"""The seams between the gate and its surroundings (issue 22, items 2, 5, 7 and 8).

Each test here failed on the code before the fix: values checked where they enter, file names
and paths, output paths checked at session start, refreshes that prune only what they saw,
killed writes, planted cache entries and truncated downloads.
"""

from __future__ import annotations

import json
import warnings
from pathlib import Path

import pytest

from pytest_graphnetz import BenchmarkReport
from pytest_graphnetz.baselines import BaselineFormatError, read_baseline, write_baseline

# In-process pytester runs drop modules first imported inside them, and scipy's extensions do
# not survive a second import: load the gates (and the scipy they use) here, once.
pytest.importorskip("scipy.stats")
pytest.importorskip("scipy.optimize")
import pytest_graphnetz.gates  # noqa: E402,F401


def _report(values: list[float], metric: str = "accuracy") -> BenchmarkReport:
    return BenchmarkReport.from_arrays([[values]], tasks=["karate"], models=["GCN"],
                                       seeds=range(len(values)), metric=metric)


# -- 7. values checked where they enter -----------------------------------------------------------


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
    from conftest import gcn, tiny_task

    from pytest_graphnetz import run_benchmark
    from pytest_graphnetz.runner import TripleError

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
    data["models"]["GCN"]["tasks"]["karate"].update(cell)
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
    from pytest_graphnetz.report import history_from_json

    with warnings.catch_warnings():
        warnings.simplefilter("error")
        with pytest.raises(ValueError, match=r"a history value 1e\+39 does not fit a float32"):
            history_from_json({"test": [0.5, 1e39], "float32": True})


# -- 2. a full refresh prunes only the modules it saw ---------------------------------------------

GATED = """
import pytest
from pytest_graphnetz import BenchmarkReport, assert_not_worse
{head}

def test_{name}(graphnetz_baseline):
    report = BenchmarkReport.from_arrays([[[0.80, 0.82, 0.79]]], tasks=["karate"],
                                         models=["GCN"], seeds=range(3), metric="accuracy")
    assert_not_worse(report, graphnetz_baseline())
"""


def _two_modules(pytester: pytest.Pytester, *, skip_b: bool = False) -> None:
    pytester.makeini("[pytest]\n")
    for name in ("a", "b"):
        head = 'pytest.skip("needs a GPU", allow_module_level=True)' \
            if name == "b" and skip_b else ""
        (pytester.path / name).mkdir(exist_ok=True)
        (pytester.path / name / f"test_{name}.py").write_text(GATED.format(name=name, head=head))


def _baselines(pytester: pytest.Pytester) -> list[str]:
    root = pytester.path / "baselines"
    return sorted(str(p.relative_to(root)) for p in root.glob("*/*.json"))


@pytest.mark.parametrize("unseen", ["--ignore=b", "subdirectory", "module-level skip"])
def test_a_full_refresh_deletes_no_baseline_of_a_module_it_did_not_see(
        pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch, unseen: str) -> None:
    _two_modules(pytester)
    pytester.runpytest("--graphnetz-update-baselines").assert_outcomes(passed=2)
    stale = pytester.path / "baselines" / "test_a" / "test_renamed.json"
    stale.write_bytes((pytester.path / "baselines" / "test_a" / "test_a.json").read_bytes())
    assert _baselines(pytester) == ["test_a/test_a.json", "test_a/test_renamed.json",
                                    "test_b/test_b.json"]
    args = ["--graphnetz-update-baselines"]
    if unseen == "--ignore=b":
        args.append("--ignore=b")
    elif unseen == "subdirectory":
        monkeypatch.chdir(pytester.path / "a")
    else:
        _two_modules(pytester, skip_b=True)
    result = pytester.runpytest(*args)
    assert result.ret == 0
    # test_a was seen: its stale file goes; test_b was not: its baseline stays, listed.
    assert _baselines(pytester) == ["test_a/test_a.json", "test_b/test_b.json"]
    result.stdout.fnmatch_lines([
        "graphnetz: deleted 1 baseline(s) that no test used*",
        "  baselines/test_a/test_renamed.json",
        "graphnetz: 1 baseline(s) of test modules this run did not collect, or skipped, kept*",
        "  baselines/test_b/test_b.json",
    ])
