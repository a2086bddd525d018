"""The MLflow export and import against the stores teams run: a SQLite backend, and
`mlflow server` started on a free loopback port by the test (stopped at the end). A session
exported and read back gives the candidate's values bit for bit; `compare --mlflow` on the
server gives the verdicts of the plugin's own session on the same numbers."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
import urllib.request
from collections.abc import Iterator
from pathlib import Path

import pytest

pytest.importorskip("scipy.stats")
pytest.importorskip("mlflow")
# In-process pytester runs drop the modules first imported inside them, and SQLAlchemy's do not
# survive a second import: load MLflow's SQL store here, once.
import mlflow.store.tracking.sqlalchemy_store  # noqa: E402,F401
import mlflow.tracking  # noqa: E402,F401

import pytest_graphnetz.gates  # noqa: E402,F401
from pytest_graphnetz import BenchmarkReport  # noqa: E402
from pytest_graphnetz.cli.main import main  # noqa: E402
from tests.helpers.servers import MLFLOW_BASE as BASE  # noqa: E402
from tests.helpers.servers import MLFLOW_CAND as CAND  # noqa: E402
from tests.helpers.servers import MLFLOW_GATES as GATES  # noqa: E402
from tests.helpers.servers import free_port, log_runs  # noqa: E402

SERVER_START_S = 240   # a cold `mlflow server` migrates its SQLite store first


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """`mlflow server` on 127.0.0.1 and a free port, its own SQLite store and artifacts."""
    where = tmp_path_factory.mktemp("server")
    port = free_port()
    mlflow = Path(sys.executable).with_name("mlflow")
    process = subprocess.Popen(
        [str(mlflow), "server", "--host", "127.0.0.1", "--port", str(port),
         "--backend-store-uri", f"sqlite:///{where / 'mlflow.db'}",
         "--artifacts-destination", str(where / "artifacts"), "--workers", "1"],
        stdout=(where / "server.log").open("w"), stderr=subprocess.STDOUT,
        start_new_session=True)
    uri = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + SERVER_START_S
        while True:
            try:
                with urllib.request.urlopen(f"{uri}/health", timeout=2) as response:
                    if response.status == 200:
                        break
            except OSError:
                pass
            if process.poll() is not None or time.monotonic() > deadline:
                pytest.fail("mlflow server did not start: "
                            + (where / "server.log").read_text()[-2000:])
            time.sleep(0.5)
        yield uri
    finally:
        os.killpg(process.pid, signal.SIGTERM)
        try:
            process.wait(timeout=30)
        except subprocess.TimeoutExpired:
            os.killpg(process.pid, signal.SIGKILL)
            process.wait()


def exported_session(pytester: pytest.Pytester, uri: str) -> dict:
    pytester.makepyfile(test_exported_gates=GATES)
    result = pytester.runpytest(f"--graphnetz-mlflow={uri}", "--graphnetz-json=v.json",
                                "--graphnetz-report-dir=reports")
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines(["graphnetz: 1 gate call(s) exported to MLflow at *: "
                                 "23 run(s) created, 0 already there"])
    return json.loads((pytester.path / "v.json").read_text())


def read_back(uri: str) -> BenchmarkReport:
    return BenchmarkReport.from_mlflow("graphnetz", metric="accuracy", tracking_uri=uri,
                                       filter_string="tags.`graphnetz.run` = 'seed'",
                                       task_param="task", model_param="model")


@pytest.mark.parametrize("backend", ["sqlite", "server"])
def test_a_session_exported_reads_back_bit_for_bit(backend, pytester: pytest.Pytester,
                                                   request: pytest.FixtureRequest) -> None:
    uri = (f"sqlite:///{pytester.path / 'mlflow.db'}" if backend == "sqlite"
           else request.getfixturevalue("server"))
    exported_session(pytester, uri)
    back = read_back(uri)
    for i, task in enumerate(("cora", "citeseer")):
        assert back.values(task, "GCN").tolist() == CAND[i, 0].tolist()
    assert main(["export", "mlflow", str(pytester.path / "v.json"), "--reports",
                 str(pytester.path / "reports"), "--tracking-uri", uri]) == 0
    assert len(back.seeds) == 10
    assert read_back(uri).values("cora", "GCN").tolist() == CAND[0, 0].tolist()


def test_compare_mlflow_on_the_server_gives_the_plugins_verdicts(
        server: str, pytester: pytest.Pytester, capsys: pytest.CaptureFixture) -> None:
    plugin = exported_session(pytester, f"sqlite:///{pytester.path / 'plugin.db'}")
    for version, values in (("v1", BASE), ("v2", CAND)):
        log_runs(server, "team", {(task, "GCN", s): float(values[i, 0, s])
                                  for i, task in enumerate(("cora", "citeseer"))
                                  for s in range(10)}, params={"version": version},
                 metric="accuracy")
    out = pytester.path / "compare.json"
    code = main(["compare", "--mlflow", "team:params.version = 'v1'",
                 "team:params.version = 'v2'", "--tracking-uri", server, "--metric", "accuracy",
                 "--task-param", "dataset", "--model-param", "model", "--json", str(out)])
    assert code == 1
    assert "REGRESSED" in capsys.readouterr().out
    ours = {r["cell"]: r["stats"] for r in json.loads(out.read_text())["rows"]}
    theirs = {r["cell"]: r["stats"] for r in plugin["rows"]}
    assert ours.keys() == theirs.keys()
    for cell, stats in theirs.items():
        # every number equal; the next-look command names the test the plugin ran
        drop = ("next_command",)
        assert {k: v for k, v in ours[cell].items() if k not in drop} == \
            {k: v for k, v in stats.items() if k not in drop}


def test_the_worked_example_runs_and_reads_its_regression(
        tmp_path: Path, capsys: pytest.CaptureFixture) -> None:
    """examples/mlflow/train.py as docs/mlflow.md runs it, on 3 seeds (a first look of 3)."""
    pytest.importorskip("torch_geometric")
    script = Path(__file__).parents[2] / "examples" / "mlflow" / "train.py"
    uri = f"sqlite:///{tmp_path / 'mlflow.db'}"
    for version in ("v1", "v2-regression"):
        subprocess.run([sys.executable, str(script), "--version", version, "--seeds", "3",
                        "--tracking-uri", uri], check=True, capture_output=True)
    code = main(["compare", "--mlflow", "pyg-example:params.version = 'v1'",
                 "pyg-example:params.version = 'v2-regression'", "--tracking-uri", uri,
                 "--metric", "test_acc", "--best-by", "val_acc", "--task-param", "dataset",
                 "--model-param", "model", "--first-look", "3"])
    out = capsys.readouterr().out
    assert "block-model/GCN" in out and code in (0, 1)
