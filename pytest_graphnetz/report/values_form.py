"""The values-only form of a report that committed baselines use: per cell the selected
per-seed values, no per-epoch histories (schema ``pytest-graphnetz/baseline``)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any, TypeVar

import numpy as np

from pytest_graphnetz.report.codec import (
    FLOAT32_MARK,
    through_float32,
    values_from_json,
    values_to_json,
)
from pytest_graphnetz.report.epochs import History, MetricSpec
from pytest_graphnetz.report.schema import (
    EPOCH_SELECTIONS,
    NON_FINITE,
    VALUES_SCHEMA,
    VALUES_SCHEMA_VERSION,
    ReportFormatError,
    check_report_dict,
    check_schema,
    is_json_number,
)
from pytest_graphnetz.report.trials import PROTOCOL_KEY as TUNING_KEY
from pytest_graphnetz.report.trials import TuningRecord

if TYPE_CHECKING:
    from pytest_graphnetz.report.record import ReportRecord
    from pytest_graphnetz.stats import Summary

R = TypeVar("R", bound="ReportRecord")

# Protocol entries kept per task or per model in the values form (the rest is "environment").
# Not the run's environment: per cell, or what one run's cache check found.
_PER_CELL_PROTOCOL = ("tasks", "models", "source", "cache")
_VALUES_SOURCE = "values only: each history holds the value each epoch rule selected"


def rule_values(report: ReportRecord, task: str, model: str) -> dict[str, np.ndarray]:
    """The cell's per-seed values (``seeds`` order) under every epoch rule its task supports,
    by rule name: ``final`` always, ``best_val`` where the task has validation series."""
    supported = report.epoch_selection_support()[task]
    return {rule: report.values(task, model, epoch_selection=rule)
            for rule in EPOCH_SELECTIONS if rule == "final" or supported}


def rule_validation(report: ReportRecord, task: str, model: str) -> dict[str, np.ndarray]:
    """The cell's per-seed validation values (``seeds`` order) at the epoch each rule selects,
    by rule name, as :func:`rule_values` gives the test values; empty when a run of the cell
    recorded no validation series (a value is NaN where that run's series is)."""
    if not all(report.histories[(task, model, s)].val is not None for s in report.seeds):
        return {}
    out = {}
    for rule in rule_values(report, task, model):
        epochs = report.selected_epochs(rule)
        vals = []
        for s in report.seeds:
            series = report.histories[(task, model, s)].val
            assert series is not None   # checked above
            vals.append(series[epochs[(task, model, s)]])
        out[rule] = np.asarray(vals, dtype=float)
    return out


def rule_values_from_json(d: Mapping, version: int, what: str) -> dict[str, np.ndarray]:
    """Inverse of ``{"values": values_to_json(rule_values(...))}``: per rule name, the per-seed
    values a cell or an anchor holds. Version 1 files held ``final`` and ``best_val`` beside the
    cell's other keys (``best_val`` null where unsupported); they read the same."""
    if version >= 2:
        vectors = d["values"]
        if not isinstance(vectors, Mapping):
            raise ValueError(f"{what}: `values` must be an object of per-seed lists by epoch "
                             f"rule, got {vectors!r}")
        unknown = [k for k in vectors if k not in (*EPOCH_SELECTIONS, FLOAT32_MARK)]
        if unknown:   # (a rule spelled otherwise by a hand or a merge would never be read)
            raise ValueError(f"{what}: `values` holds {unknown}, which is not an epoch rule "
                             f"({', '.join(EPOCH_SELECTIONS)})")
        found = values_from_json(vectors, [k for k in vectors if k != FLOAT32_MARK])
    else:
        found = values_from_json(d, ("final", "best_val"))
    out = {rule: vec for rule, vec in found.items() if vec is not None}
    if "final" not in out:
        raise ValueError(f"{what}: no `final` values")
    return out


def to_values_dict(report: ReportRecord, summary: Summary) -> dict:
    """The values-only JSON form that committed baselines use (no per-epoch histories).

    Per (model, task) cell: the per-seed values under each epoch rule by name (``values``:
    ``final``, and ``best_val`` where the task has validation series), mean and interval (its
    row of ``summary``, the report's summary under its own settings), the model's repr and
    parameter count when the runner recorded them; per model its per-seed fingerprints; per
    task its metric, protocol and per-seed data fingerprints. Per-seed lists follow ``seeds``.
    Everything of one model sits in that model's block, so a change to one model changes only
    its lines. Read back by :meth:`BenchmarkReport.from_dict`, it is a report whose history per
    triple is just the selected values (see :func:`from_values_dict`).
    """
    rows = {(r.task, r.model): r for r in summary}
    info = report.protocol.get("models", {})
    models: dict = {}
    for m in report.models:
        block: dict = {"tasks": {}}
        fps = [report.fingerprints.get("model", {}).get(m, {}).get(s) for s in report.seeds]
        if any(fp is not None for fp in fps):
            block["fingerprints"] = fps
        for t in report.tasks:
            cell: dict = {"values": values_to_json(rule_values(report, t, m))}
            validation = rule_validation(report, t, m)
            if validation:   # the leak guard reads it (test gain against validation gain)
                cell["validation"] = values_to_json(validation)
            described = info.get(m, {}).get(t, {})
            row = rows[(t, m)]
            cell.update({
                "model": described.get("repr"), "parameters": described.get("parameters"),
                # For the reader only (never read back): six digits are plenty.
                "summary": {"mean": _round(row.mean), "n": row.n_seeds,
                            "ci": [_round(row.ci_low), _round(row.ci_high)],
                            "n_diverged": row.n_diverged},
            })
            block["tasks"][t] = cell
        models[m] = block
    tasks = {}
    for t in report.tasks:
        spec = report.metrics[t]
        tasks[t] = {"metric": {"name": spec.name, "higher_is_better": spec.higher_is_better},
                    "protocol": report.protocol.get("tasks", {}).get(t)}
        fps = [report.data_fingerprint(t, s) for s in report.seeds]
        if any(fp is not None for fp in fps):
            tasks[t]["data_fingerprints"] = fps
    environment = {k: v for k, v in report.protocol.items() if k not in _PER_CELL_PROTOCOL}
    if environment.get(TUNING_KEY) is not None:
        # A search's reviewable summary: per trial its configuration and mean validation score;
        # every trial × seed stays in the full report (--graphnetz-report-dir, to_json).
        environment[TUNING_KEY] = TuningRecord.from_dict(environment[TUNING_KEY]).summary(
            ).to_dict()
    return {"schema": VALUES_SCHEMA, "schema_version": VALUES_SCHEMA_VERSION,
            "seeds": list(report.seeds), "settings": report.settings(),
            "environment": environment, "tasks": tasks, "models": models}


def from_values_dict(cls: type[R], data: Mapping, source: str) -> R:
    """A report from :meth:`BenchmarkReport.to_values_dict`.

    With no per-epoch record to keep, each triple's history holds one value per epoch rule and
    names the rule of each (``History.selected``), so ``values()`` under any rule, and every
    statistic, gate and view built on it, gives back exactly the stored numbers; a rule a task
    lacks (``best_val`` without validation series) stays unsupported. ``protocol["source"]``
    says the histories are selections, not training curves.
    """
    try:
        seeds = [int(s) for s in data["seeds"]]
        if any(isinstance(s, bool) for s in data["seeds"]) or \
                [float(s) for s in data["seeds"]] != seeds:
            raise ValueError(f"`seeds` must be integers, got {data['seeds']}")
        tasks, models = list(data["tasks"]), list(data["models"])
        metrics, task_protocol, data_fps = {}, {}, {}
        for t, block in data["tasks"].items():
            m = block["metric"]
            if not isinstance(m["higher_is_better"], bool):
                raise ValueError(f"task {t!r}: `higher_is_better` must be true or false")
            metrics[t] = MetricSpec(str(m["name"]), m["higher_is_better"])
            if block.get("protocol") is not None:
                task_protocol[t] = block["protocol"]
            if block.get("data_fingerprints") is not None:
                data_fps[t] = _per_seed(block["data_fingerprints"], seeds, f"task {t!r}")
        histories: dict[tuple[str, str, int], History] = {}
        model_fps: dict[str, dict[int, str]] = {}
        model_info: dict[str, dict[str, dict[str, Any]]] = {}
        for m, block in data["models"].items():
            if block.get("fingerprints") is not None:
                model_fps[m] = _per_seed(block["fingerprints"], seeds, f"model {m!r}")
            missing = [t for t in tasks if t not in block["tasks"]]
            if missing:
                raise ValueError(f"model {m!r} has no cell for task(s) {missing}")
            for t, cell in block["tasks"].items():
                if t not in metrics:
                    raise ValueError(f"cell {t}/{m}: task {t!r} is not among `tasks`")
                v = rule_values_from_json(cell, data["schema_version"], f"cell {t}/{m}")
                for rule, vec in v.items():
                    if len(vec) != len(seeds):
                        raise ValueError(f"cell {t}/{m}: `{rule}` has {len(vec)} values for "
                                         f"{len(seeds)} seeds")
                rules = sorted(v)  # one order whatever the file's: equal files, equal reports
                val = _validation(cell, rules, len(seeds), f"cell {t}/{m}")
                for k, s in enumerate(seeds):
                    histories[(t, m, s)] = History(
                        test=tuple(float(v[r][k]) for r in rules),
                        val=None if val is None else tuple(float(val[r][k]) for r in rules),
                        selected={r: i for i, r in enumerate(rules)})
                if cell.get("model") is not None or cell.get("parameters") is not None:
                    model_info.setdefault(m, {})[t] = {"repr": cell.get("model"),
                                                       "parameters": cell.get("parameters")}
        protocol = {**data.get("environment", {}), "source": _VALUES_SOURCE,
                    "tasks": task_protocol, "models": model_info}
        return cls(tasks=tasks, models=models, seeds=seeds, metrics=metrics,
                   histories=histories, protocol=protocol,
                   fingerprints={"data": data_fps, "model": model_fps},
                   settings=data.get("settings", {}))
    except (KeyError, TypeError, ValueError, AttributeError) as exc:
        detail = f"missing key {exc}" if isinstance(exc, KeyError) else str(exc)
        raise ReportFormatError(f"{source}: malformed baseline: {detail}") from exc


def _validation(cell: Mapping, rules: Sequence[str], n: int,
                what: str) -> dict[str, np.ndarray] | None:
    """A cell's ``validation`` vectors (one per rule of its ``values``), or None without."""
    if cell.get("validation") is None:
        return None
    found = values_from_json(cell["validation"], rules)
    for rule in rules:
        vec = found[rule]
        if vec is None or len(vec) != n:
            raise ValueError(f"{what}: `validation` needs {n} `{rule}` values, one per seed")
    return {r: vec for r, vec in found.items() if vec is not None}


def _round(x: float) -> float:
    return float(f"{x:.6g}")


def _per_seed(values: Any, seeds: Sequence[int], what: str) -> dict[int, str]:
    if not isinstance(values, list) or len(values) != len(seeds):
        raise ValueError(f"{what}: fingerprints must be a list with one entry per seed")
    return {s: str(fp) for s, fp in zip(seeds, values, strict=True) if fp is not None}


CellValues = dict[tuple[str, str], dict[int, float]]
"""Per (task, model) cell: ``{seed: value}`` under the report's own epoch rule."""


def plain_cell_values(data: Mapping, source: str
                      ) -> tuple[dict[str, MetricSpec], CellValues] | None:
    """Each task's metric and each cell's per-seed values (``seed -> value``, NaN for a
    diverged seed) of the decoded report ``data``, read straight from its JSON, or None when
    the report itself must be built to select them.

    A full report under the ``final`` rule whose histories name no restored or selected epoch
    (what every built-in trainer writes) gives, after the same schema check, the last ``test``
    entry of each triple: what ``BenchmarkReport.from_dict(data).values(task, model)`` gives,
    seed by seed, without building any per-epoch history (which is what makes reading
    hundreds of commits' reports fast). The values-only form (committed baselines; what a
    results branch can keep) holds each rule's per-seed vector: read as is. Anything else
    (``best_val`` on a full report, a restored epoch) is None: read it through the report.
    """
    schema = check_schema(data, source)
    rule = data.get("settings", {}).get("epoch_selection", "final")
    if schema == VALUES_SCHEMA:
        return _selected_values(data, source, rule)
    if rule != "final":
        return None
    check_report_dict(data, source)
    if any(key in h for by_model in data["histories"].values()
           for by_seed in by_model.values() for h in by_seed.values()
           if isinstance(h, Mapping) for key in ("restored_epoch", "selected")):
        return None
    metrics = {t: MetricSpec(d["name"], d["higher_is_better"])
               for t, d in data["metrics"].items()}
    cells: CellValues = {}
    for t in data["tasks"]:
        for m in data["models"]:
            by_seed = data["histories"][t][m]
            last, narrow = [], []
            for s in data["seeds"]:
                history = by_seed[str(s)]
                series = history.get("test") if isinstance(history, Mapping) else None
                if not isinstance(series, list) or not series or not (
                        is_json_number(series[-1]) or series[-1] in NON_FINITE):
                    raise ReportFormatError(
                        f"{source}: malformed report: history of task {t!r} × model {m!r} × "
                        f"seed {s}: its last `test` value must be a number (or \"NaN\", "
                        f"\"Infinity\", \"-Infinity\"), got {series!r:.80}")
                last.append(float(series[-1]))
                narrow.append(history.get(FLOAT32_MARK) is True)
            values, mask = np.array(last), np.array(narrow, dtype=bool)
            values[mask] = through_float32(values[mask], "a history value")
            cells[(t, m)] = dict(zip(data["seeds"], values.tolist(), strict=True))
    return metrics, cells


def _selected_values(data: Mapping, source: str, rule: str
                     ) -> tuple[dict[str, MetricSpec], CellValues] | None:
    """:func:`plain_cell_values` of the values-only form: each cell's stored vector under
    ``rule`` (what :func:`from_values_dict`'s report gives under it); None when a cell lacks
    the rule (``best_val`` without validation series: the report itself refuses that)."""
    try:
        seeds = data["seeds"]
        if not isinstance(seeds, list) or any(type(x) is not int for x in seeds):
            raise ValueError(f"`seeds` must be integers, got {seeds!r}")
        metrics = {}
        for t, block in data["tasks"].items():
            if not isinstance(block["metric"]["higher_is_better"], bool):
                raise ValueError(f"task {t!r}: `higher_is_better` must be true or false")
            metrics[t] = MetricSpec(str(block["metric"]["name"]),
                                    block["metric"]["higher_is_better"])
        cells: CellValues = {}
        for t in metrics:
            for m, block in data["models"].items():
                if t not in block["tasks"]:
                    raise ValueError(f"model {m!r} has no cell for task {t!r}")
                vectors = rule_values_from_json(block["tasks"][t], data["schema_version"],
                                                f"cell {t}/{m}")
                if rule not in vectors:
                    return None
                if len(vectors[rule]) != len(seeds):
                    raise ValueError(f"cell {t}/{m}: `{rule}` has {len(vectors[rule])} values "
                                     f"for {len(seeds)} seeds")
                cells[(t, m)] = dict(zip(seeds, vectors[rule].tolist(), strict=True))
        return metrics, cells
    except (KeyError, TypeError, ValueError, AttributeError) as exc:
        detail = f"missing key {exc}" if isinstance(exc, KeyError) else str(exc)
        raise ReportFormatError(f"{source}: malformed baseline: {detail}") from exc
