"""The MLflow tracker: each gate call as a tree of runs, a parent run per gate call, a child
per cell, a grandchild per seed the row used (docs/mlflow.md has the layout, the tags and the
params of each).

Every run carries ``graphnetz.run`` (``call``, ``cell`` or ``seed``) and ``graphnetz.key``; a
call's runs also carry ``graphnetz.call``, the call's :attr:`~.tracker.GateCall.key`. An export
first reads the keys under that call and creates only the runs that are missing, so exporting a
session again adds nothing. Numbers go into tags as ``repr`` (exact) and into metrics as floats
(MLflow stores doubles), so a seed's value reads back bit for bit
(``BenchmarkReport.from_mlflow``).

Imported only when an export is asked for; ``mlflow`` itself inside the methods.
"""

from __future__ import annotations

import hashlib
import json
import math
import os
import tempfile
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from pytest_graphnetz.plugin.tracker import Exported, GateCall

if TYPE_CHECKING:
    from pytest_graphnetz.report import BenchmarkReport

DEFAULT_EXPERIMENT = "graphnetz"
# The row numbers a cell's run carries as tags and metrics (docs/verdicts-json.md).
CELL_NUMBERS = ("mean_diff", "ci_low", "ci_high", "level", "p", "n", "baseline_mean",
                "candidate_mean", "mde", "alpha", "margin", "min_effect")
# MLflow's log_batch takes at most 1,000 metrics per request.
BATCH = 1000


class MlflowTracker:
    """Exports gate calls to the MLflow tracking store at ``tracking_uri`` (None:
    ``MLFLOW_TRACKING_URI``), into ``experiment`` (None: ``MLFLOW_EXPERIMENT_NAME``, else
    ``graphnetz``; created when absent)."""

    def __init__(self, tracking_uri: str | None = None, experiment: str | None = None, *,
                 option: str = "--tracking-uri") -> None:
        from pytest_graphnetz.report.mlflow_runs import mlflow_client

        self.client = mlflow_client(tracking_uri, option)
        self.experiment = experiment or os.environ.get("MLFLOW_EXPERIMENT_NAME") \
            or DEFAULT_EXPERIMENT
        self.where = f"MLflow at {self.client.tracking_uri} (experiment {self.experiment})"

    def export(self, calls: Sequence[GateCall], *, series: bool = True) -> Exported:
        from pytest_graphnetz.report.mlflow_runs import failing_fast

        with failing_fast():
            return self._export(calls, series)

    def _export(self, calls: Sequence[GateCall], series: bool) -> Exported:
        created = existing = 0
        if not calls:
            return Exported(0, 0)
        experiment = self._experiment_id()
        for call in calls:
            have = self._keys(experiment, call.key)
            parent = have.get(call.key)
            if parent is None:
                parent = self._start(experiment, f"{_short(call.test)} #{call.index}", None, {
                    "graphnetz.test": call.test, "graphnetz.commit": call.commit or "",
                    "graphnetz.schedule": call.schedule,
                    "graphnetz.alpha": _tag(call.setting("alpha")),
                    "graphnetz.min_effect": _tag(call.setting("min_effect")),
                    "graphnetz.verdict": call.headline, "graphnetz.run": "call"}, call.key,
                    call.key)
                with tempfile.TemporaryDirectory() as tmp:
                    page = Path(tmp) / "gate.md"
                    page.write_text(call.markdown(), encoding="utf-8")
                    self.client.log_artifact(parent, str(page))
                self.client.set_terminated(parent)
                created += 1
            else:
                existing += 1
            for row in call.rows:
                c, e = self._cell(experiment, call, row, parent, have, series)
                created, existing = created + c, existing + e
        return Exported(created, existing)

    def _cell(self, experiment: str, call: GateCall, row: Mapping[str, Any], parent: str,
              have: Mapping[str, str], series: bool) -> tuple[int, int]:
        cell = str(row.get("cell", ""))
        key = f"{call.key}/{cell}"
        created = existing = 0
        run = have.get(key)
        if run is None:
            stats = row.get("stats") or {}
            tags = {"graphnetz.verdict": str(row.get("verdict", "")),
                    "graphnetz.note": str(row.get("note", ""))[:4000],
                    "graphnetz.failed": str(bool(row.get("failed"))).lower(),
                    "graphnetz.run": "cell", "graphnetz.cell": cell,
                    **{f"graphnetz.{k}": _tag(stats.get(k)) for k in CELL_NUMBERS if k in stats}}
            run = self._start(experiment, cell, parent, tags, key, call.key)
            numbers = {k: float(v) for k, v in stats.items()
                       if k in CELL_NUMBERS and isinstance(v, (int, float))}
            self._log(run, [(k, v, 0) for k, v in numbers.items()])
            self.client.set_terminated(run, "FINISHED")
            created += 1
        else:
            existing += 1
        used = (row.get("stats") or {}).get("seeds")
        report = call.report_of(cell, used or ())
        if report is None:
            return created, existing
        task, _, model = cell.partition("/")
        values = report.values(task, model)
        for k, seed in enumerate(report.seeds):
            if used is not None and seed not in used:
                continue
            triple = triple_key(report, task, model, seed)
            seed_key = f"{call.key}/{triple}"
            if seed_key in have:
                existing += 1
                continue
            seed_run = self._start(
                experiment, f"{cell} seed {seed}", run,
                {"graphnetz.run": "seed", "graphnetz.cell": cell}, seed_key, call.key)
            points = [(report.metric(task).name, float(values[k]), 0)]
            if series:
                points += _series(report.histories[(task, model, seed)])
            self._log(seed_run, points, params={
                "task": task, "model": model, "seed": seed, "device": _device(report),
                "cache_key": triple, "epoch_selection": report.epoch_selection})
            self.client.set_terminated(seed_run, "FINISHED")
            created += 1
        return created, existing

    def _experiment_id(self) -> str:
        found = self.client.get_experiment_by_name(self.experiment)
        if found is not None:
            return str(found.experiment_id)
        return str(self.client.create_experiment(self.experiment))

    def _keys(self, experiment: str, call_key: str) -> dict[str, str]:
        """``graphnetz.key`` → run id of every run exported for the call already."""
        from pytest_graphnetz.report.mlflow_runs import search_runs

        return {run.data.tags["graphnetz.key"]: run.info.run_id
                for run in search_runs(self.client, experiment,
                                       f"tags.`graphnetz.call` = '{call_key}'")
                if "graphnetz.key" in run.data.tags and run.info.status == "FINISHED"}

    def _start(self, experiment: str, name: str, parent: str | None, tags: Mapping[str, str],
               key: str, call_key: str) -> str:
        tags = {**tags, "graphnetz.key": key, "graphnetz.call": call_key}
        if parent is not None:
            tags["mlflow.parentRunId"] = parent
        return str(self.client.create_run(experiment, run_name=name, tags=tags).info.run_id)

    def _log(self, run: str, points: Sequence[tuple[str, float, int]],
             params: Mapping[str, Any] | None = None) -> None:
        """Metrics ``(name, value, step)`` and params, a request per 1,000 metrics."""
        from mlflow.entities import Metric, Param

        now = _now_ms()
        metrics = [Metric(k, v, now, step) for k, v, step in points]
        first = [Param(k, str(v)[:6000]) for k, v in (params or {}).items()]
        for start in range(0, max(len(metrics), 1), BATCH):
            self.client.log_batch(run, metrics=metrics[start:start + BATCH], params=first)
            first = []


def triple_key(report: BenchmarkReport, task: str, model: str, seed: int) -> str:
    """A digest of what the triple's cache key is built from, as the report records it: the
    task's data fingerprint and configuration, the model's fingerprint, the seed, the device
    kind; the history's values when the report records no fingerprint (numbers given by
    ``from_arrays``)."""
    fps = report.fingerprints or {}
    parts = [task, model, seed,
             (fps.get("data") or {}).get(task, {}).get(seed),
             (fps.get("model") or {}).get(model, {}).get(seed),
             (report.protocol.get("tasks") or {}).get(task), _device(report)]
    if parts[3] is None and parts[4] is None:
        parts.append(repr(report.histories[(task, model, seed)]))
    text = json.dumps(parts, sort_keys=True, default=str)
    return hashlib.sha256(text.encode()).hexdigest()[:32]


def _series(history: Any) -> list[tuple[str, float, int]]:
    named = {"series.test": history.test, "series.val": history.val,
             "series.train_loss": history.train_loss,
             **{f"series.{k}": v for k, v in history.extra.items()}}
    return [(name, float(v), epoch) for name, values in named.items() if values
            for epoch, v in enumerate(values)]


def _device(report: BenchmarkReport) -> str:
    device = report.protocol.get("device")
    if isinstance(device, Mapping):
        return str(device.get("name") or device.get("kind") or "")
    return "" if device is None else str(device)


def _tag(value: Any) -> str:
    if value is None or (isinstance(value, float) and not math.isfinite(value)):
        return ""
    return repr(value) if isinstance(value, float) else str(value)


def _short(test: str) -> str:
    from pytest_graphnetz.plugin.summary import short_test

    return short_test(test)


def _now_ms() -> int:
    import time

    return int(time.time() * 1000)
