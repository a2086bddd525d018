"""Servers on loopback and the stores behind them: a real S3-protocol server (moto's standalone
server) for the remote-cache tests, driven through s3fs exactly as a user's bucket is
(credentials and endpoint from the environment, ``AWS_ENDPOINT_URL``, nothing mocked in the
client); MLflow stores, and runs logged into them as a team's script would."""

from __future__ import annotations

import contextlib
import socket
import threading
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import pytest

BUCKET = "team-cache"


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


@dataclass
class S3Server:
    """A running moto server: its endpoint, and the server itself (``stop()``)."""

    server: object
    endpoint: str

    def client(self, **credentials: str):
        import boto3

        return boto3.client("s3", endpoint_url=self.endpoint, region_name="us-east-1",
                            **credentials)

    def objects(self) -> dict[str, bytes]:
        s3 = self.client()
        found = s3.list_objects_v2(Bucket=BUCKET).get("Contents", [])
        return {o["Key"]: s3.get_object(Bucket=BUCKET, Key=o["Key"])["Body"].read()
                for o in found}


def aws_environment(monkeypatch: pytest.MonkeyPatch, endpoint: str) -> None:
    """What a user's CI sets for a bucket: credentials, region and (for an S3-compatible
    store) the endpoint; botocore reads them when s3fs makes its client."""
    monkeypatch.setenv("AWS_ACCESS_KEY_ID", "testing")
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", "testing")
    monkeypatch.setenv("AWS_DEFAULT_REGION", "us-east-1")
    monkeypatch.setenv("AWS_ENDPOINT_URL", endpoint)
    for name in ("AWS_PROFILE", "AWS_SESSION_TOKEN"):
        monkeypatch.delenv(name, raising=False)
    # s3fs keeps one filesystem per set of arguments: a fresh one sees this environment.
    import s3fs

    s3fs.S3FileSystem.clear_instance_cache()


@contextlib.contextmanager
def moto_server(monkeypatch: pytest.MonkeyPatch) -> Iterator[S3Server]:
    from moto.server import ThreadedMotoServer

    port = free_port()
    server = ThreadedMotoServer(ip_address="127.0.0.1", port=port, verbose=False)
    server.start()
    endpoint = f"http://127.0.0.1:{port}"
    aws_environment(monkeypatch, endpoint)
    running = S3Server(server, endpoint)
    # moto keeps its state per process, not per server: start from an empty account
    import urllib.request

    urllib.request.urlopen(urllib.request.Request(f"{endpoint}/moto-api/reset",
                                                  method="POST"), timeout=10).close()
    running.client().create_bucket(Bucket=BUCKET)
    try:
        yield running
    finally:
        with contextlib.suppress(Exception):
            server.stop()


@contextlib.contextmanager
def silent_server() -> Iterator[str]:
    """An endpoint that accepts connections and never answers (a hung store)."""
    listener = socket.socket()
    listener.bind(("127.0.0.1", 0))
    listener.listen(16)
    held: list[socket.socket] = []
    stop = threading.Event()

    def accept() -> None:
        listener.settimeout(0.2)
        while not stop.is_set():
            with contextlib.suppress(OSError):
                held.append(listener.accept()[0])

    thread = threading.Thread(target=accept, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{listener.getsockname()[1]}"
    finally:
        stop.set()
        thread.join()
        for conn in held:
            conn.close()
        listener.close()


@contextlib.contextmanager
def read_only_credentials(server: S3Server, monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    """Credentials of an IAM user allowed to read the bucket and nothing else, with moto's
    authorisation switched on: a write is a real 403 AccessDenied."""
    import json

    import boto3
    from moto import settings

    iam = boto3.client("iam", endpoint_url=server.endpoint, region_name="us-east-1")
    iam.create_user(UserName="reader")
    iam.put_user_policy(UserName="reader", PolicyName="read", PolicyDocument=json.dumps({
        "Version": "2012-10-17", "Statement": [{"Effect": "Allow", "Action": [
            "s3:GetObject", "s3:ListBucket", "s3:HeadObject"], "Resource": "*"}]}))
    key = iam.create_access_key(UserName="reader")["AccessKey"]
    import s3fs

    before = settings.INITIAL_NO_AUTH_ACTION_COUNT
    with monkeypatch.context() as inside:
        inside.setenv("AWS_ACCESS_KEY_ID", key["AccessKeyId"])
        inside.setenv("AWS_SECRET_ACCESS_KEY", key["SecretAccessKey"])
        s3fs.S3FileSystem.clear_instance_cache()
        settings.INITIAL_NO_AUTH_ACTION_COUNT = 0
        try:
            yield
        finally:
            settings.INITIAL_NO_AUTH_ACTION_COUNT = before
    s3fs.S3FileSystem.clear_instance_cache()


# The scratch project of the tests that move a cache between checkouts, shards and stores: a
# tiny CSBM task and a GCN factory (a test module adds its tasks and gates below it).
TINY_PROJECT = '''
from pytest_graphnetz import Task
from pytest_graphnetz.runner.tasks.synthetic import CSBM, load_csbm


def tiny(root, *, seed):
    return load_csbm(CSBM("tiny", num_classes=3, nodes_per_class=20, p_in=0.2, p_out=0.03,
                          num_features=8, mean_norm=1.0), root, seed)


def gcn(in_channels, out_channels):
    from torch_geometric.nn import GCN

    return GCN(in_channels, 16, 2, out_channels)
'''


def file_store(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> str:
    """A local file store (``file://``; MLflow 3 keeps it behind MLFLOW_ALLOW_FILE_STORE)."""
    monkeypatch.setenv("MLFLOW_ALLOW_FILE_STORE", "true")
    return (tmp_path / "mlruns").as_uri()


def log_runs(uri: str, experiment: str, values: Mapping[tuple[str, str, int], Any], *,
             params: Mapping[str, str] | None = None, metric: str = "test_acc",
             val: Mapping[tuple[str, str, int], Sequence[float]] | None = None,
             status: str = "FINISHED", seed_param: str = "seed") -> list[str]:
    """One run per (dataset, model, seed) key: params ``dataset``, ``model``, ``seed_param``
    (and ``params``); ``metric`` one value (logged at step 0) or a per-epoch series (step =
    epoch), ``val`` a per-epoch ``val_acc`` series. Returns the run ids."""
    from mlflow.entities import Metric, Param
    from mlflow.tracking import MlflowClient

    client = MlflowClient(uri)
    found = client.get_experiment_by_name(experiment)
    exp = found.experiment_id if found else client.create_experiment(experiment)
    ids = []
    for (dataset, model, seed), value in values.items():
        run = client.create_run(exp, run_name=f"{model}-{seed}")
        series = list(value) if isinstance(value, (list, tuple)) else [value]
        metrics = [Metric(metric, float(v), 0, step) for step, v in enumerate(series)]
        if val is not None:
            metrics += [Metric("val_acc", float(v), 0, step)
                        for step, v in enumerate(val[(dataset, model, seed)])]
        given = {"dataset": dataset, "model": model, seed_param: str(seed), **(params or {})}
        client.log_batch(run.info.run_id, metrics=metrics,
                         params=[Param(k, str(v)) for k, v in given.items()])
        if status != "RUNNING":
            client.set_terminated(run.info.run_id, status)
        ids.append(run.info.run_id)
    return ids


def closed_uri() -> str:
    """An http:// tracking URI nothing listens on."""
    return f"http://127.0.0.1:{free_port()}"


# An exported gate: two tasks, ten seeds, the second task regressed.
_RNG = np.random.default_rng(7)
MLFLOW_BASE = _RNG.uniform(0.6, 0.9, size=(2, 1, 10))
MLFLOW_CAND = MLFLOW_BASE + _RNG.normal(0.0, 0.003, size=MLFLOW_BASE.shape)
MLFLOW_CAND[1] -= 0.03   # the second task regresses

MLFLOW_GATES = f"""
import numpy as np
from pytest_graphnetz import BenchmarkReport, assert_not_worse

def report(values):
    return BenchmarkReport.from_arrays(np.array(values), tasks=["cora", "citeseer"],
                                       models=["GCN"], seeds=range(10), metric="accuracy")

def test_gate():
    assert_not_worse(report({MLFLOW_CAND.tolist()!r}), report({MLFLOW_BASE.tolist()!r}))
"""
