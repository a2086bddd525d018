"""The JSON schema of a report: its names and versions, its errors, and the checks that run
on a decoded document before anything is built from it."""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any, NoReturn

SCHEMA = "pytest-graphnetz/report"
# 2: histories whose values are all float32 are written with their shortest float32 repr and
# the marker `"float32": true` (version-1 files, without it, are read as before).
# 3: a history may carry `outcomes`, per-example test outcomes keyed by epoch (base64, see
# pytest_graphnetz.base.outcomes); version-1 and -2 files have none and are read as before.
# 4: a history may carry `val_metric` and `restored_epoch` (epoch rules, see History).
# 5: a history may carry `selected`, each epoch rule's epoch by name (a baseline read back).
# A report is written with the lowest version whose readers read it: 3 when its histories use
# none of these keys, 4 without `selected`.
SCHEMA_VERSION = 5
EPOCH_RULE_KEYS = ("val_metric", "restored_epoch")
SELECTED_KEY = "selected"
# The values-only form committed baselines use (BenchmarkReport.to_values_dict).
# 2: a cell's (and an anchor's) per-seed values sit under `values`, keyed by epoch rule name
# (a new rule is a new key); version 1 held `final` and `best_val` beside the cell's other keys.
VALUES_SCHEMA = "pytest-graphnetz/baseline"
VALUES_SCHEMA_VERSION = 2
# The settings a report holds (BenchmarkReport.ci_method, .epoch_selection).
CI_METHODS = ("t", "bootstrap")
EPOCH_SELECTIONS = ("final", "best_val")


class ReportFormatError(ValueError):
    """A report file that cannot be read: malformed, from a newer schema, or inconsistent."""


class ReportSchemaError(ReportFormatError):
    """A report written with a newer schema than this pytest-graphnetz reads (``version``)."""

    def __init__(self, message: str, version: int) -> None:
        super().__init__(message)
        self.version = version



def check_schema(data: Any, source: str) -> str:
    """The schema of the decoded document ``data`` (:data:`SCHEMA` or :data:`VALUES_SCHEMA`),
    after checking it names one and a version this package reads; errors name ``source``."""
    schema = data.get("schema") if isinstance(data, Mapping) else None
    if schema not in (SCHEMA, VALUES_SCHEMA):
        raise ReportFormatError(
            f"{source}: not a pytest-graphnetz report (no `schema: {SCHEMA}` or "
            f"`schema: {VALUES_SCHEMA}`)"
        )
    newest = SCHEMA_VERSION if schema == SCHEMA else VALUES_SCHEMA_VERSION
    version = data.get("schema_version")
    if type(version) is not int or version < 1:
        raise ReportFormatError(f"{source}: missing or invalid `schema_version` ({version!r}); "
                                "it must be a positive integer")
    if version > newest:
        raise ReportSchemaError(
            f"{source}: written with {schema} schema version {version}, newer than the "
            f"{newest} this pytest-graphnetz reads; upgrade pytest-graphnetz",
            version,
        )
    return str(schema)


# -- validating a report's JSON before building anything ----------------------------------------
# A hostile or damaged file must fail with a message, not coerce ("false" read as true, 1.5 read
# as seed 1) nor allocate what it declares (a 157 KB file can declare 2000 × 2000 × 2000 cells).

def check_report_dict(data: Mapping, source: str) -> None:
    """Refuse wrong types and a declared grid the histories do not fill, naming ``source``."""

    def fail(where: str, problem: str) -> NoReturn:
        raise ReportFormatError(f"{source}: malformed report: `{where}` {problem}")

    def mapping(where: str, value: Any) -> Mapping:
        if not isinstance(value, Mapping):
            fail(where, f"must be an object, got {json_type(value)}")
        return value

    for key in ("tasks", "models", "seeds", "metrics", "histories"):
        if key not in data:
            raise ReportFormatError(f"{source}: malformed report: missing key {key!r}")
    axes: dict[str, list] = {}
    for axis, kind in (("tasks", str), ("models", str), ("seeds", int)):
        labels = data[axis]
        if not isinstance(labels, list):
            fail(axis, f"must be a list, got {json_type(labels)}")
        for i, label in enumerate(labels):
            if type(label) is not kind:
                fail(f"{axis}[{i}]", f"must be {'a string' if kind is str else 'an integer'}, "
                     f"got {label!r}")
        if len(set(labels)) != len(labels):
            fail(axis, f"has duplicate labels: {labels[:20]}")
        axes[axis] = labels
    known = {axis: {str(v) for v in labels} for axis, labels in axes.items()}

    metrics = mapping("metrics", data.get("metrics"))
    for task in axes["tasks"]:
        spec = mapping(f"metrics.{task}", metrics.get(task, {}))
        if not isinstance(spec.get("name"), str):
            fail(f"metrics.{task}.name", f"must be a string, got {spec.get('name')!r}")
        if type(spec.get("higher_is_better")) is not bool:
            fail(f"metrics.{task}.higher_is_better",
                 f"must be true or false, got {spec.get('higher_is_better')!r}")

    count = 0
    for task, by_model in mapping("histories", data.get("histories")).items():
        if task not in known["tasks"]:
            fail(f"histories.{task}", "is not one of `tasks`")
        for model, by_seed in mapping(f"histories.{task}", by_model).items():
            if model not in known["models"]:
                fail(f"histories.{task}.{model}", "is not one of `models`")
            for seed in mapping(f"histories.{task}.{model}", by_seed):
                if seed not in known["seeds"]:
                    fail(f"histories.{task}.{model}.{seed}", "is not one of `seeds`")
                count += 1
    cells = len(axes["tasks"]) * len(axes["models"]) * len(axes["seeds"])
    if count != cells:  # every history is of a declared cell, so some cells have none
        fail("histories", f"has no history for {cells - count} of the {len(axes['tasks'])} × "
             f"{len(axes['models'])} × {len(axes['seeds'])} = {cells} cells that `tasks`, "
             "`models` and `seeds` declare")

    settings = mapping("settings", data.get("settings", {}))
    for name, value in settings.items():
        expected = {"ci_method": str, "epoch_selection": str,
                    "confidence_level": float}.get(name)
        if expected is None:
            continue  # the constructor refuses a setting it does not take
        if not (isinstance(value, str) if expected is str else is_json_number(value)):
            fail(f"settings.{name}", f"must be a {'string' if expected is str else 'number'}, "
                 f"got {value!r}")
    mapping("protocol", data.get("protocol", {}))
    for kind, by_name in mapping("fingerprints", data.get("fingerprints", {})).items():
        for name, per_seed in mapping(f"fingerprints.{kind}", by_name).items():
            for seed, fp in mapping(f"fingerprints.{kind}.{name}", per_seed).items():
                if not _INT_TEXT.fullmatch(seed) or not isinstance(fp, str):
                    fail(f"fingerprints.{kind}.{name}.{seed}",
                         f"must map an integer seed to a string, got {fp!r}")


_INT_TEXT = re.compile(r"-?(0|[1-9][0-9]*)")
NON_FINITE = ("NaN", "Infinity", "-Infinity")


def is_json_number(value: Any) -> bool:
    return type(value) in (int, float)


def json_type(value: Any) -> str:
    names = {dict: "an object", list: "a list", str: "a string", bool: "a boolean",
             int: "a number", float: "a number", type(None): "null"}
    return names.get(type(value), type(value).__name__)



def check_series(where: str, values: Any) -> None:
    if not isinstance(values, list):
        raise ValueError(f"history series `{where}` must be a list of numbers, got "
                         f"{json_type(values)}")
    for i, v in enumerate(values):
        if not (is_json_number(v) or v in NON_FINITE):
            raise ValueError(f"history series `{where}`[{i}] must be a number (or \"NaN\", "
                             f"\"Infinity\", \"-Infinity\"), got {v!r}")
