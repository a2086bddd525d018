"""The report's JSON codec: stable, diffable text (:func:`dumps`), strict reading
(:func:`read_json`), and float32 values written at float32 length, in histories and in the
per-seed vectors of committed baselines, losslessly."""

from __future__ import annotations

import json
import math
import re
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from pytest_graphnetz.report.epochs import History, MetricSpec
from pytest_graphnetz.report.files import MAX_READ_BYTES, NotARegularFileError, read_regular_file
from pytest_graphnetz.report.schema import (
    EPOCH_RULE_KEYS,
    NON_FINITE,
    SCHEMA,
    SCHEMA_VERSION,
    SELECTED_KEY,
    ReportFormatError,
    check_series,
    is_json_number,
    json_type,
)

if TYPE_CHECKING:
    from pytest_graphnetz.report.record import ReportRecord


class DuplicateNameError(ReportFormatError):
    """A JSON object that names one key twice: ``json`` keeps the last copy silently, so a
    merge that kept both sides of a conflicting line would be read as its second side while a
    reader of the file sees the first. ``path``: the keys down to it; ``lines``: where the two
    copies start (None when they could not be located)."""

    def __init__(self, source: object, path: tuple[str | int, ...],
                 lines: tuple[int, int] | None) -> None:
        self.source, self.path, self.lines = source, path, lines
        inside = "".join(f"[{k}]" if isinstance(k, int) else f"/{k}" for k in path[:-1])
        where = f"in {inside.lstrip('/')}" if inside else "at the top level"
        at = f" (lines {lines[0]} and {lines[1]})" if lines else ""
        super().__init__(f"{source}: the name {str(path[-1])!r} appears twice {where}{at}; "
                         "a JSON reader would keep the last copy and ignore the first")


def read_json(path: Path, *, limit: int = MAX_READ_BYTES, what: str = "report") -> Any:
    """The JSON document in ``path`` (a ``what`` file: a report, a verdict file...) read as a
    regular file of at most ``limit`` bytes and parsed by :func:`parse_json`.

    Raises FileNotFoundError, or :class:`ReportFormatError` (a directory, a FIFO, a device, a
    file past ``limit``, not UTF-8, not JSON, a duplicated name: :class:`DuplicateNameError`).
    """
    try:
        text = read_regular_file(path, limit).decode("utf-8")
    except FileNotFoundError:
        raise FileNotFoundError(f"no {what} at {path}") from None
    except IsADirectoryError:
        raise ReportFormatError(f"{path}: is a directory, not a {what} file") from None
    except NotARegularFileError as exc:
        raise ReportFormatError(str(exc)) from None
    except UnicodeDecodeError as exc:
        raise ReportFormatError(f"{path}: not a UTF-8 text file ({exc})") from exc
    return parse_json(text, path)


def parse_json(text: str, source: object, *, constants: bool = False) -> Any:
    """The JSON document ``text`` (from ``source``, which errors name): the one JSON reader of
    this package, for every file it reads. :class:`ReportFormatError` when it is not JSON,
    nests too deeply, or holds a bare ``NaN``/``Infinity`` (unless ``constants``: a command
    task's metrics file may); :class:`DuplicateNameError` when an object names a key twice."""
    try:
        return json.loads(text, object_pairs_hook=_unique,
                          parse_constant=None if constants else _reject_constant)
    except _Duplicate:
        raise DuplicateNameError(source, *_first_duplicate(text)) from None
    except ValueError as exc:  # JSONDecodeError, or a bare NaN/Infinity (_reject_constant)
        raise ReportFormatError(f"{source}: not valid JSON ({exc})") from exc
    except RecursionError:
        raise ReportFormatError(
            f"{source}: JSON nested too deeply to read (the files of this package are a few "
            "levels deep)") from None


_WHITESPACE = re.compile(r"[ \t\n\r]*")


class _Duplicate(Exception):
    pass


def _unique(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    obj = dict(pairs)
    if len(obj) != len(pairs):
        raise _Duplicate
    return obj


def _first_duplicate(text: str) -> tuple[tuple[str | int, ...], tuple[int, int] | None]:
    """The keys down to the first name an object of ``text`` repeats, and the lines of its two
    copies: a walk with json's own scanners, run only once a duplicate was found."""
    scan = json.JSONDecoder().raw_decode
    key_at = json.decoder.scanstring  # type: ignore[attr-defined]  # (not in typeshed)

    def skip(i: int) -> int:
        """The index of the first character at or after ``i`` that is not white space."""
        return _WHITESPACE.match(text, i).end()  # type: ignore[union-attr]  # (* matches "")

    class Found(Exception):
        def __init__(self, path: tuple[str | int, ...], first: int, second: int) -> None:
            self.path, self.first, self.second = path, first, second

    def walk(i: int, path: tuple[str | int, ...]) -> int:
        """The end of the value starting at ``i``."""
        if text[i] not in "{[":
            return int(scan(text, i)[1])
        closing, n = "}" if text[i] == "{" else "]", 0
        seen: dict[str, int] = {}
        i = skip(i + 1)
        while text[i] != closing:
            if closing == "}":
                key, after = key_at(text, i + 1)
                if key in seen:
                    raise Found((*path, key), seen[key], i)
                seen[key] = i
                i = skip(walk(skip(skip(after) + 1), (*path, key)))   # (past the colon)
            else:
                i, n = skip(walk(i, (*path, n))), n + 1
            if text[i] == ",":
                i = skip(i + 1)
        return i + 1

    try:
        walk(skip(0), ())
    except Found as found:
        return found.path, (text.count("\n", 0, found.first) + 1,
                            text.count("\n", 0, found.second) + 1)
    except (ValueError, IndexError, RecursionError):
        pass
    return ("?",), None


# -- histories in JSON: float32 values at float32 length -----------------------------------------
# Trainers record float32 tensors, so a history's values are float32 numbers widened to Python
# floats, whose shortest *double* repr is 17 digits long (0.6931471824645996). A history whose
# values are all float32 is written with their shortest float32 repr (0.6931472, which a JSON
# reader parses to the nearest double) and `"float32": true`; reading rounds each value back to
# float32, recovering it exactly. Encoding checks that round trip value by value and keeps the
# full doubles when it would not hold, so the format is lossless by construction.

FLOAT32_MARK = "float32"


def through_float32(doubles: np.ndarray, what: str) -> np.ndarray:
    """``doubles`` rounded to float32 and widened back (a ``"float32": true`` vector); a finite
    value beyond float32's range is a ValueError, not numpy's overflow warning and an inf."""
    with np.errstate(over="ignore"):
        narrow = doubles.astype(np.float32)
    overflow = np.flatnonzero(np.isinf(narrow) & np.isfinite(doubles))
    if overflow.size:
        raise ValueError(
            f"{what} {float(doubles[overflow[0]])!r} does not fit a float32 (the vector is marked "
            f"`\"{FLOAT32_MARK}\": true`; float32 reaches {float(np.finfo(np.float32).max):.8g})")
    return narrow.astype(np.float64)


def _float32_short(values: np.ndarray) -> list[float] | None:
    """``values`` at their shortest float32 repr, or None when they are not all float32."""
    with np.errstate(over="ignore", invalid="ignore"):  # out of float32 range: not float32
        narrow = values.astype(np.float32)
    if not np.array_equal(narrow.astype(np.float64), values, equal_nan=True):
        return None
    # numpy prints a float32 by its shortest repr that reads back as the same float32.
    short = [float(str(x)) for x in narrow]
    if not np.array_equal(np.array(short, dtype=np.float32), narrow, equal_nan=True):
        return None  # never seen; the guard keeps the format exact if a reader rounded otherwise
    return short


def history_to_json(hist: History) -> dict:
    """``hist.to_dict()``, float32 histories shortened (see above)."""
    d = hist.to_dict()
    series = [d["test"], d.get("val") or [], d.get("train_loss", [])]
    series += list(d.get("extra", {}).values())
    short = _float32_short(np.array([v for s in series for v in s], dtype=np.float64))
    if short is None:
        return d
    it = iter(short)

    def take(s: list) -> list[float]:
        return [next(it) for _ in s]

    out: dict = {FLOAT32_MARK: True, "test": take(d["test"])}
    if "val" in d:
        out["val"] = take(d["val"])
    if "train_loss" in d:
        out["train_loss"] = take(d["train_loss"])
    if "extra" in d:
        out["extra"] = {k: take(v) for k, v in d["extra"].items()}
    for key in ("outcomes", "val_metric", "restored_epoch", "selected"):
        if key in d:
            out[key] = d[key]
    return out


def history_from_json(d: Mapping) -> History:
    """Inverse of :func:`history_to_json` (plain ``History.to_dict()`` forms too).

    Values must be numbers or the strings of the non-finite ones: a boolean or any other
    string is a ValueError, never coerced.
    """
    if not isinstance(d, Mapping):
        raise ValueError(f"a history must be an object, got {json_type(d)}")
    for name in ("test", "val", "train_loss"):
        if d.get(name) is not None or name == "test":
            check_series(name, d.get(name))
    extra = d.get("extra", {})
    if not isinstance(extra, Mapping):
        raise ValueError(f"history `extra` must be an object, got {json_type(extra)}")
    for name, values in extra.items():
        check_series(f"extra.{name}", values)
    if type(d.get(FLOAT32_MARK, False)) is not bool:
        raise ValueError(f"history `{FLOAT32_MARK}` must be true or false, "
                         f"got {d[FLOAT32_MARK]!r}")
    if not d.get(FLOAT32_MARK):
        return History.from_dict(d)

    def widen(values: Any) -> tuple[float, ...]:
        # Strings are the non-finite values ("NaN", "Infinity"); float() reads them.
        doubles = np.array([float(v) for v in values], dtype=np.float64)
        return tuple(through_float32(doubles, "a history value").tolist())

    wide = {name: widen(d[name]) for name in ("test", "val", "train_loss")
            if d.get(name) is not None}
    return History.from_dict({**d, **wide, "extra": {k: widen(v) for k, v in extra.items()}})



def values_to_json(vectors: Mapping[str, Any]) -> dict:
    """Per-seed vectors (``None`` kept as null) for JSON, float32 ones at float32 length.

    Adds ``"float32": true`` when every value is exactly a float32 (what trainers record):
    they are then written with their shortest float32 repr, as histories are (see below).
    """
    present = {k: np.asarray(v, dtype=np.float64) for k, v in vectors.items() if v is not None}
    out: dict = {k: None for k, v in vectors.items() if v is None}
    flat = np.concatenate(list(present.values())) if present else np.empty(0)
    short = _float32_short(flat)
    if short is None:
        out.update({k: [float(x) for x in v] for k, v in present.items()})
        return out
    it = iter(short)
    out.update({k: [next(it) for _ in v] for k, v in present.items()})
    out[FLOAT32_MARK] = True
    return out


def values_from_json(d: Mapping, keys: Sequence[str]) -> dict[str, np.ndarray | None]:
    """Inverse of :func:`values_to_json` for ``keys`` (a null or absent vector is None)."""
    out: dict[str, np.ndarray | None] = {}
    for k in keys:
        if d.get(k) is None:
            out[k] = None
            continue
        # As report histories are read: numbers, or the strings of the non-finite ones;
        # "0.9" is refused, never coerced.
        if not isinstance(d[k], list) or not all(is_json_number(v) or v in NON_FINITE
                                                 for v in d[k]):
            raise ValueError(f"`{k}` must be a list of numbers (or \"NaN\", \"Infinity\", "
                             f"\"-Infinity\"), got {d[k]!r}")
        doubles = np.array([float(v) for v in d[k]], dtype=np.float64)
        out[k] = through_float32(doubles, f"`{k}`") if d.get(FLOAT32_MARK) else doubles
    return out



# -- JSON encoding: non-finite floats as strings, series on one line, sorted keys ----------------
# History series decode the strings back with float("NaN"/"Infinity"/"-Infinity").

def _reject_constant(name: str) -> float:
    raise ValueError(f"bare {name} is not JSON; reports store it as the string {name!r}")


def _encode_float(x: float) -> float | str:
    if math.isnan(x):
        return "NaN"
    if math.isinf(x):
        return "Infinity" if x > 0 else "-Infinity"
    return x


def dumps(obj: Any) -> str:
    """Stable, diffable JSON: sorted keys, two-space indent, lists of scalars on one line.

    Floats use Python's shortest round-trip repr (lossless, fixed for a given value); NaN and
    ±inf become the strings ``"NaN"``, ``"Infinity"``, ``"-Infinity"`` inside number lists.
    """
    return _dump(obj, 0) + "\n"


def _dump(obj: Any, depth: int) -> str:
    pad, inner = "  " * depth, "  " * (depth + 1)
    if isinstance(obj, Mapping):
        if not obj:
            return "{}"
        items = [f"{inner}{json.dumps(str(k))}: {_dump(obj[k], depth + 1)}"
                 for k in sorted(obj, key=str)]
        return "{\n" + ",\n".join(items) + "\n" + pad + "}"
    if isinstance(obj, (list, tuple)):
        if all(type(v) is float for v in obj):  # a history series: skip the checks below
            return "[" + ", ".join(map(_scalar, obj)) + "]"
        if all(not isinstance(v, (Mapping, list, tuple)) for v in obj):
            return "[" + ", ".join(_scalar(v) for v in obj) + "]"
        return "[\n" + ",\n".join(inner + _dump(v, depth + 1) for v in obj) + "\n" + pad + "]"
    return _scalar(obj)


def _scalar(v: Any) -> str:
    if type(v) is float and math.isfinite(v):
        return repr(v)  # what json.dumps writes for a finite float, without its overhead
    if isinstance(v, (float, np.floating)):
        return json.dumps(_encode_float(float(v)))
    if isinstance(v, np.integer):
        return str(int(v))
    return json.dumps(v, allow_nan=False)


def report_to_dict(report: ReportRecord) -> dict[str, Any]:
    """The JSON-ready form of ``report`` (:meth:`BenchmarkReport.to_dict`): labels, metrics,
    protocol, fingerprints and every history, at the lowest schema version that holds it."""
    cells: dict = {}
    for (t, m, s), hist in report.histories.items():
        cells.setdefault(t, {}).setdefault(m, {})[str(s)] = history_to_json(hist)
    written = [h for by_model in cells.values() for by_seed in by_model.values()
               for h in by_seed.values()]
    if any(SELECTED_KEY in h for h in written):
        version = SCHEMA_VERSION
    else:
        version = 4 if any(key in h for h in written for key in EPOCH_RULE_KEYS) else 3
    return {
        "schema": SCHEMA,
        "schema_version": version,
        "tasks": list(report.tasks),
        "models": list(report.models),
        "seeds": list(report.seeds),
        "metrics": {t: {"name": spec.name, "higher_is_better": spec.higher_is_better}
                    for t, spec in report.metrics.items()},
        "settings": report.settings(),
        "protocol": report.protocol,
        "fingerprints": {
            kind: {name: {str(s): fp for s, fp in per_seed.items()}
                   for name, per_seed in by_name.items()}
            for kind, by_name in report.fingerprints.items()
        },
        "histories": cells,
    }


def report_arguments(data: Mapping) -> dict[str, Any]:
    """The :class:`~pytest_graphnetz.report.BenchmarkReport` constructor's arguments from a
    report's JSON form (checked first by ``schema.check_report_dict``)."""
    metrics = {t: MetricSpec(d["name"], d["higher_is_better"])
               for t, d in data["metrics"].items()}
    histories = {
        (t, m, int(s)): _cell_history(t, m, s, h)
        for t, by_model in data["histories"].items()
        for m, by_seed in by_model.items()
        for s, h in by_seed.items()
    }
    fingerprints = {
        kind: {name: {int(s): fp for s, fp in per_seed.items()}
               for name, per_seed in by_name.items()}
        for kind, by_name in data.get("fingerprints", {}).items()
    }
    return {"tasks": data["tasks"], "models": data["models"], "seeds": data["seeds"],
            "metrics": metrics, "histories": histories, "protocol": data.get("protocol", {}),
            "fingerprints": fingerprints, "settings": data.get("settings", {})}


def _cell_history(task: str, model: str, seed: str, d: Any) -> History:
    try:
        return history_from_json(d)
    except (ValueError, TypeError, KeyError) as exc:
        raise ValueError(f"history of task {task!r} × model {model!r} × seed {seed}: "
                         f"{exc}") from exc
