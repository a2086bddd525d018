"""`--graphnetz-mlflow` and `graphnetz export mlflow` on a real MLflow file store: the layout
(a parent per gate call, a run per cell, a run per seed), the round trip bit for bit, a
re-export that adds nothing, and a store that is down costing one warning, never a verdict."""

from __future__ import annotations

import json
import subprocess
import tempfile
from pathlib import Path

import pytest

pytest.importorskip("scipy.stats")
pytest.importorskip("mlflow")
# In-process pytester runs drop modules first imported inside them: load them here, once.
import mlflow.tracking  # noqa: E402,F401

import pytest_graphnetz.gates  # noqa: E402,F401
from pytest_graphnetz import BenchmarkReport  # noqa: E402
from pytest_graphnetz.cli.main import main  # noqa: E402
from tests.helpers.servers import MLFLOW_CAND as CAND  # noqa: E402
from tests.helpers.servers import MLFLOW_GATES as GATES  # noqa: E402
from tests.helpers.servers import closed_uri, file_store  # noqa: E402


def runs_of(uri: str, level: str) -> list:
    from mlflow.tracking import MlflowClient

    client = MlflowClient(uri)
    exp = client.get_experiment_by_name("graphnetz").experiment_id
    return client.search_runs([exp], f"tags.`graphnetz.run` = '{level}'")


def test_a_session_exported_reads_back_bit_for_bit_and_again_adds_nothing(
        pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch) -> None:
    uri = file_store(pytester.path, monkeypatch)
    pytester.makepyfile(test_exported_gates=GATES)
    git = ["git", "-c", "user.name=t", "-c", "user.email=t@t"]
    for command in (["init", "-q"], ["commit", "-q", "--allow-empty", "-m", "session"]):
        subprocess.run([*git, *command], cwd=pytester.path, check=True)
    head = subprocess.run(["git", "rev-parse", "HEAD"], cwd=pytester.path, check=True,
                          capture_output=True, text=True).stdout.strip()
    result = pytester.runpytest(f"--graphnetz-mlflow={uri}", "--graphnetz-json=v.json",
                                "--graphnetz-report-dir=reports")
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines(["graphnetz: 1 gate call(s) exported to MLflow at *: "
                                 "23 run(s) created, 0 already there"])
    (call,) = runs_of(uri, "call")
    assert call.data.tags["graphnetz.test"] == "test_exported_gates.py::test_gate"
    assert call.data.tags["graphnetz.verdict"] == "REGRESSED"
    assert call.data.tags["graphnetz.alpha"] == "0.05"
    assert call.data.tags["graphnetz.commit"] == head
    assert "rerun-safe looks, first look 10 seeds" in call.data.tags["graphnetz.schedule"]
    from mlflow.tracking import MlflowClient

    client = MlflowClient(uri)
    assert [a.path for a in client.list_artifacts(call.info.run_id)] == ["gate.md"]
    page = client.download_artifacts(call.info.run_id, "gate.md", str(pytester.path))
    assert "citeseer/GCN" in Path(page).read_text(encoding="utf-8")
    # each cell's run carries its row's numbers exactly (repr), under the call
    rows = {r["cell"]: r for r in json.loads((pytester.path / "v.json").read_text())["rows"]}
    cells = {r.data.tags["graphnetz.cell"]: r for r in runs_of(uri, "cell")}
    assert cells.keys() == rows.keys() == {"cora/GCN", "citeseer/GCN"}
    for cell, run in cells.items():
        stats = rows[cell]["stats"]
        assert run.data.tags["mlflow.parentRunId"] == call.info.run_id
        assert run.data.tags["graphnetz.verdict"] == rows[cell]["verdict"]
        assert float(run.data.tags["graphnetz.mean_diff"]) == stats["mean_diff"]
        assert run.data.metrics["p"] == stats["p"] and run.data.metrics["n"] == 10
    assert cells["citeseer/GCN"].data.tags["graphnetz.verdict"] == "REGRESSED"
    # the seeds read back into a report: the candidate's values, bit for bit
    back = BenchmarkReport.from_mlflow("graphnetz", metric="accuracy", tracking_uri=uri,
                                       filter_string="tags.`graphnetz.run` = 'seed'",
                                       task_param="task", model_param="model")
    for i, task in enumerate(("cora", "citeseer")):
        assert back.values(task, "GCN").tolist() == CAND[i, 0].tolist()
    seed = runs_of(uri, "seed")[0]
    assert {"task", "model", "seed", "device", "cache_key"} <= seed.data.params.keys()
    assert "series.test" in seed.data.metrics
    # exporting the same session again, from another checkout: nothing new
    monkeypatch.chdir(Path(__file__).parent)
    assert main(["export", "mlflow", str(pytester.path / "v.json"), "--reports",
                 str(pytester.path / "reports"), "--tracking-uri", uri]) == 0
    assert len(runs_of(uri, "seed")) == 20 and len(runs_of(uri, "call")) == 1


def test_a_store_that_is_down_costs_one_line_not_a_verdict(
        pytester: pytest.Pytester) -> None:
    pytester.makepyfile(test_exported_gates=GATES)
    result = pytester.runpytest(f"--graphnetz-mlflow={closed_uri()}")
    result.assert_outcomes(failed=1)   # the regression still fails the build, nothing else
    warnings = [line for line in result.outlines if "were not exported" in line]
    assert len(warnings) == 1 and "the verdicts stand" in warnings[0]
    assert result.ret == 1


def test_without_series_a_seed_run_holds_only_its_value(
        pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch) -> None:
    uri = file_store(pytester.path, monkeypatch)
    temporary = pytester.mkdir("tmp")
    monkeypatch.setattr(tempfile, "tempdir", str(temporary))
    pytester.makepyfile(test_exported_gates=GATES)
    pytester.makeini(f"[pytest]\ngraphnetz_mlflow = {uri}\ngraphnetz_mlflow_no_series = true\n")
    result = pytester.runpytest()
    result.assert_outcomes(failed=1)
    seed = runs_of(uri, "seed")[0]
    assert set(seed.data.metrics) == {"accuracy"}
    # the candidate reports were kept for the export only: removed, and not announced
    assert list(temporary.iterdir()) == []
    assert "candidate report(s) saved" not in result.stdout.str()


def test_export_of_a_saved_report_and_bad_input(pytester: pytest.Pytester,
                                                monkeypatch: pytest.MonkeyPatch,
                                                capsys: pytest.CaptureFixture) -> None:
    uri = file_store(pytester.path, monkeypatch)
    pytester.makepyfile(test_exported_gates=GATES)
    pytester.runpytest("--graphnetz-report-dir=reports").assert_outcomes(failed=1)
    (saved,) = (pytester.path / "reports").rglob("*.json")
    assert main(["export", "mlflow", str(saved), "--tracking-uri", uri]) == 0
    assert "23 run(s) created" in capsys.readouterr().out
    cells = runs_of(uri, "cell")
    assert {r.data.tags["graphnetz.verdict"] for r in cells} == {"NOT COMPARED"}
    assert len(runs_of(uri, "seed")) == 20
    assert main(["export", "mlflow", str(saved), "--tracking-uri", closed_uri()]) == 2
    err = capsys.readouterr().err
    assert "--tracking-uri http://127.0.0.1:" in err and "start the server" in err
    assert main(["export", "mlflow", str(saved), "--reports", "nowhere"]) == 2


def test_a_test_path_taken_as_the_tracking_uri_is_a_usage_error(
        pytester: pytest.Pytester) -> None:
    pytester.makepyfile(test_exported_gates=GATES)
    result = pytester.runpytest("--graphnetz-mlflow", "test_exported_gates.py")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(
        ["*--graphnetz-mlflow* took 'test_exported_gates.py', a test path*"])
