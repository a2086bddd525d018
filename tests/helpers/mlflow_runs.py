"""What the MLflow tests share: a store, and runs logged into it as a team's script would."""

from __future__ import annotations

import socket
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import pytest


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


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def closed_uri() -> str:
    """An http:// tracking URI nothing listens on."""
    return f"http://127.0.0.1:{free_port()}"


