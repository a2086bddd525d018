"""`graphnetz compare --mlflow` and `BenchmarkReport.from_mlflow` on a real MLflow file store:
the same verdicts and JSON as report files of the same numbers, refusals that name the runs,
bad input as a usage error (exit 2) that names the option."""

from __future__ import annotations

import json
import os
import sys

import numpy as np
import pytest

from pytest_graphnetz import BenchmarkReport
from pytest_graphnetz.cli.main import main
from tests.helpers.servers import closed_uri, file_store, log_runs

pytest.importorskip("mlflow")

SEEDS = range(10)
RNG = np.random.default_rng(58)
BASE = RNG.uniform(0.70, 0.80, size=10)
# A regression of about 1.5 points with seed noise: full-precision floats, so any rounding on
# the way through MLflow would show.
CAND = BASE - 0.015 + RNG.normal(0.0, 0.004, size=10)
V1, V2 = "exp:params.version = 'v1'", "exp:params.version = 'v2'"


def logged(uri: str, values, version: str, **kw) -> list[str]:
    return log_runs(uri, "exp", {("cora", "GCN", s): float(values[s]) for s in SEEDS},
                    params={"version": version}, **kw)


@pytest.fixture
def store(tmp_path, monkeypatch) -> str:
    uri = file_store(tmp_path, monkeypatch)
    logged(uri, BASE, "v1")
    logged(uri, CAND, "v2")
    return uri


def mlflow_compare(uri: str, base: str = V1, cand: str = V2, *more: str) -> int:
    return main(["compare", "--mlflow", base, cand, "--tracking-uri", uri, "--metric",
                 "test_acc", "--task-param", "dataset", "--model-param", "model", *more])


def test_compare_mlflow_equals_compare_of_report_files_bit_for_bit(store, tmp_path,
                                                                    capsys) -> None:
    files = []
    for name, values in (("base", BASE), ("cand", CAND)):
        path = tmp_path / f"{name}.json"
        BenchmarkReport.from_arrays(values.reshape(1, 1, -1), tasks=["cora"], models=["GCN"],
                                    seeds=SEEDS, metric="test_acc").to_json(path)
        files.append(str(path))
    assert main(["compare", *files, "--json", str(tmp_path / "files.json")]) == 1
    table_files = capsys.readouterr().out
    assert mlflow_compare(store, V1, V2, "--json", str(tmp_path / "runs.json")) == 1
    table_runs = capsys.readouterr().out
    assert "REGRESSED" in table_runs
    assert table_runs == table_files
    rows = [json.loads((tmp_path / f).read_text())["rows"] for f in ("files.json", "runs.json")]
    assert [r["stats"] for r in rows[0]] == [r["stats"] for r in rows[1]]
    assert rows[1][0]["verdict"] == "REGRESSED" and rows[1][0]["failed_build"]
    report = BenchmarkReport.from_mlflow("exp", metric="test_acc", tracking_uri=store,
                                         filter_string="params.version = 'v2'",
                                         task_param="dataset", model_param="model")
    assert report.values("cora", "GCN").tolist() == CAND.tolist()   # bit for bit


def test_an_innocent_change_passes(store, capsys) -> None:
    assert mlflow_compare(store, V1, V1) == 0
    assert "IDENTICAL" in capsys.readouterr().out


def test_the_value_best_by_a_validation_metric(tmp_path, monkeypatch) -> None:
    uri = file_store(tmp_path, monkeypatch)
    tests = {("cora", "GCN", s): [0.5, 0.6 + s / 100, 0.4] for s in SEEDS}
    # val_acc peaks at epoch 1: that epoch's test value is the run's value
    vals = {k: [0.1, 0.9, 0.5] for k in tests}
    log_runs(uri, "exp", tests, val=vals)
    report = BenchmarkReport.from_mlflow("exp", metric="test_acc", best_by="val_acc",
                                         tracking_uri=uri, model_param="model")
    assert report.epoch_selection == "best_val"
    assert report.values("runs", "GCN").tolist() == [0.6 + s / 100 for s in SEEDS]
    last = BenchmarkReport.from_mlflow("exp", metric="test_acc", tracking_uri=uri)
    assert last.values("runs", "model").tolist() == [0.4] * 10


def test_runs_are_read_a_page_at_a_time(store) -> None:
    from mlflow.tracking import MlflowClient

    from pytest_graphnetz.report.mlflow_runs import RunSelection, read_runs

    client = MlflowClient(store)
    pages = []
    search = client.search_runs

    def counted(*args, **kwargs):
        pages.append(kwargs["max_results"])
        return search(*args, **kwargs)

    client.search_runs = counted   # type: ignore[method-assign]
    side = RunSelection.parse(V2)
    paged = read_runs(client, side, metric="test_acc", page_size=3)
    assert pages == [3, 3, 3, 3]   # 10 runs: 3 + 3 + 3 + 1
    whole = read_runs(client, side, metric="test_acc")
    assert paged.histories == whole.histories and paged.seeds == tuple(SEEDS)


@pytest.mark.parametrize("problem", ["duplicate", "missing", "metric", "running", "seed"])
def test_runs_that_cannot_be_paired_are_refused_by_name(problem, tmp_path, monkeypatch,
                                                        capsys) -> None:
    uri = file_store(tmp_path, monkeypatch)
    logged(uri, BASE, "v1")
    cand = {("cora", "GCN", s): float(CAND[s]) for s in SEEDS}
    if problem == "missing":
        del cand[("cora", "GCN", 9)]
    bad = {}
    if problem == "duplicate":
        bad = {"values": {("cora", "GCN", 3): 0.5}}
    elif problem == "metric":
        bad = {"values": {("cora", "GCN", 9): 0.5}, "metric": "accuracy"}
        del cand[("cora", "GCN", 9)]
    elif problem == "running":
        bad = {"values": {("cora", "GCN", 9): 0.5}, "status": "RUNNING"}
        del cand[("cora", "GCN", 9)]
    elif problem == "seed":
        bad = {"values": {("cora", "GCN", 9): 0.5}, "seed_param": "seed_name"}
        del cand[("cora", "GCN", 9)]
    log_runs(uri, "exp", cand, params={"version": "v2"})
    named = []
    if bad:
        values = bad.pop("values")
        named = log_runs(uri, "exp", values, params={"version": "v2"}, **bad)
    assert mlflow_compare(uri) == 2
    err = capsys.readouterr().err
    expected = {"duplicate": "repeat the seed of another run",
                "missing": "1 baseline run(s) have no partner with the same seed",
                "metric": "did not log the metric `test_acc`",
                "running": "still running",
                "seed": "no whole-number param `seed`"}[problem]
    assert expected in err
    assert all(run in err for run in named)
    assert "CANDIDATE" in err if problem != "missing" else "GCN-9" in err


def test_bad_input_is_a_usage_error_naming_the_option(store, capsys, monkeypatch) -> None:
    monkeypatch.delenv("MLFLOW_HTTP_REQUEST_MAX_RETRIES", raising=False)
    assert mlflow_compare(store, "nope:", V2) == 2
    err = capsys.readouterr().err
    assert "BASELINE 'nope:'" in err and "no experiment named or numbered 'nope'" in err
    assert mlflow_compare(store, V1, "exp:params.version ==== 'v2'") == 2
    err = capsys.readouterr().err
    assert "CANDIDATE" in err and "MLflow rejects the filter" in err and "search syntax" in err
    assert mlflow_compare(closed_uri()) == 2
    err = capsys.readouterr().err
    assert "--tracking-uri http://127.0.0.1:" in err and "start the server" in err
    # one try per request while reading, and the caller's environment as it was after
    assert "MLFLOW_HTTP_REQUEST_MAX_RETRIES" not in os.environ
    assert main(["compare", "--mlflow", V1, V2, "--tracking-uri", store, "--metric",
                 "score"]) == 2
    assert "--metric score: its direction cannot be told" in capsys.readouterr().err
    for argv, said in ((["--mlflow", V1, V2], "e.g. --metric test_acc"),
                       (["a.json", "b.json", "--metric", "acc"], "add --mlflow")):
        with pytest.raises(SystemExit) as exit_:
            main(["compare", *argv])
        assert exit_.value.code == 2 and said in capsys.readouterr().err
    monkeypatch.setitem(sys.modules, "mlflow", None)
    monkeypatch.setitem(sys.modules, "mlflow.tracking", None)
    assert mlflow_compare(store) == 2
    assert "pip install 'pytest-graphnetz[mlflow]'" in capsys.readouterr().err
