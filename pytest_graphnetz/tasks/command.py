"""Command tasks: a training script gated as it is, run per (model, seed) in a subprocess.

A command task is ``Task(name, DataFiles(...), kind="command")``; its models are
:class:`Command` objects instead of model factories (a script is model and training loop in
one, so each model has its own script or arguments: a trainer per model). Per triple the
runner fills the placeholders ``{seed}``, ``{device}``, ``{output}``, ``{threads}`` and
``{metric}`` in the command's arguments, sets the matching ``GRAPHNETZ_*`` variables, pins
threads and device through the environment (:func:`environment`) and reads the per-epoch
metrics the script wrote to ``{output}`` (format: docs/command-tasks.md; the script side is
:mod:`pytest_graphnetz.script`). Reseeding is the script's job; ``Command(...,
check_determinism=True)`` reruns one seed and refuses a script whose two runs differ.

The loader of a command task only fingerprints the data the script reads (``DataFiles``: the
bytes of the files), so seeds pair only while that data is unchanged. The cache key holds the
script's normalised code (comments and formatting do not count; an argparse default does), its
arguments and the environment the runner sets.
"""

from __future__ import annotations

import hashlib
import json
import math
import os
import re
import shlex
import subprocess
import tempfile
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from .. import script as script_side
from ..history import History

STDERR_LINES = 20  # how much of a failing script's stderr its error shows
_PLACEHOLDER = re.compile(r"\{(seed|device|output|threads|metric)\}")


class CommandError(RuntimeError):
    """A command task's script failed, or wrote no usable metrics file."""


class NondeterministicScriptError(CommandError):
    """Two runs of one seed of a script gave different metrics."""


@dataclass(frozen=True)
class Command:
    """One model of a command task: the command line that trains it and writes its metrics.

    - ``args``: the command, a list or a shell-style string (split with ``shlex``), e.g.
      ``[sys.executable, "gcn.py", "--lr", "0.01"]``; ``{seed}``, ``{device}``, ``{output}``,
      ``{threads}`` and ``{metric}`` in an argument are filled per triple.
    - ``script``: the file whose code keys the cache (default: the first argument ending in
      ``.py``); it is resolved against ``cwd`` now and must exist.
    - ``env``: extra environment variables (part of the cache key); ``cwd``: the working
      directory (default: the current one, fixed when the Command is made).
    - ``timeout``: seconds before a run is killed and fails (None: no limit).
    - ``check_determinism``: rerun the run's first seed once, uncached, and refuse the script
      when the two runs' metrics differ.
    """

    args: Sequence[str] | str
    script: str | os.PathLike | None = None
    env: Mapping[str, str] = field(default_factory=dict)
    cwd: str | os.PathLike | None = None
    timeout: float | None = None
    check_determinism: bool = False

    def __post_init__(self) -> None:
        args = shlex.split(self.args) if isinstance(self.args, str) else list(self.args)
        if not args or not all(isinstance(a, str) for a in args):
            raise TypeError(f"Command: `args` must be a non-empty list of strings (or one "
                            f"string), got {self.args!r}")
        object.__setattr__(self, "args", tuple(args))
        cwd = Path(self.cwd if self.cwd is not None else os.getcwd()).resolve()
        object.__setattr__(self, "cwd", str(cwd))
        script = self.script
        if script is None:
            script = next((a for a in args if a.endswith(".py")), None)
            if script is None:
                raise ValueError(f"Command {shlex.join(args)!r}: no argument ends in `.py`; pass "
                                 "`script=` (the file whose code keys the cache)")
        path = cwd / script
        if not path.is_file():
            raise FileNotFoundError(f"Command {shlex.join(args)!r}: script {str(path)!r} does "
                                    "not exist; pass `script=` or `cwd=`")
        object.__setattr__(self, "script", str(path))
        object.__setattr__(self, "env", {str(k): str(v) for k, v in dict(self.env).items()})

    def __str__(self) -> str:
        """The script's name and its arguments (the interpreter and directories left out, so a
        committed baseline reads the same on every machine)."""
        script = Path(str(self.script))
        at = next((i for i, a in enumerate(self.args)
                   if (Path(str(self.cwd)) / a).resolve() == script), None)
        return shlex.join(self.args if at is None else [script.name, *self.args[at + 1:]])

    def identity(self) -> dict[str, Any]:
        """What keys the cache and fingerprints the model: the script's normalised code, the
        arguments and the extra environment (the runner adds seed, device and threads)."""
        script = Path(str(self.script))  # a str path after __post_init__
        out: dict[str, Any] = {"script": script.name,
                               "code": hashlib.sha256(script_code(script).encode()).hexdigest(),
                               "args": list(self.args), "env": dict(sorted(self.env.items()))}
        project = project_code(script)
        if project is not None:
            out["project"] = project
        return out

    def script_seed(self, seed: int) -> int:
        """The seed the script receives for benchmark seed ``seed`` (``{seed}``,
        ``GRAPHNETZ_SEED``): the seed itself; a calibration's salted command moves it
        (:class:`pytest_graphnetz.calibration.SaltedCommand`)."""
        return seed

    def fingerprint(self) -> str:
        """sha256 of :meth:`identity`, the model fingerprint of this command's cells."""
        return hashlib.sha256(json.dumps(self.identity(), sort_keys=True).encode()).hexdigest()


def script_code(path: str | os.PathLike) -> str:
    """The script's code without comments, docstrings and formatting, as project modules count
    in the cache key (:func:`pytest_graphnetz.fingerprint.normalised_source`); a file that is
    not Python (a shell script) counts byte for byte."""
    from ..fingerprint import normalised_source

    return normalised_source(Path(path).read_text(encoding="utf-8"))


def project_code(script: Path) -> Any:
    """The key of the project modules ``script`` imports, transitively (not site-packages or
    the standard library): an edit to a model module the script imports must retrain, as it
    does for an in-process trainer (:func:`pytest_graphnetz.fingerprint.project_code_key`)."""
    from ..fingerprint import project_code_key

    return project_code_key([script])


@dataclass(frozen=True)
class DataFiles:
    """A command task's loader: the sha256 of each file (or every file under a directory) the
    script reads, so a changed data file makes the gate refuse the pairing."""

    paths: Sequence[str | os.PathLike]

    def __post_init__(self) -> None:
        paths = [self.paths] if isinstance(self.paths, (str, os.PathLike)) else self.paths
        object.__setattr__(self, "paths", tuple(str(Path(p).resolve()) for p in paths))

    def __call__(self, root: str) -> list[tuple[str, Any]]:
        """``[(file or directory name, sha256 or {relative path: sha256})]`` in the order
        given; names, not full paths, so the same data in another checkout pairs."""
        out: list[tuple[str, Any]] = []
        for given in self.paths:
            path = Path(given)
            if path.is_file():
                out.append((path.name, _file_hash(path)))
            elif path.is_dir():
                out.append((path.name, {str(f.relative_to(path)): _file_hash(f)
                                        for f in sorted(path.rglob("*")) if f.is_file()}))
            else:
                raise FileNotFoundError(f"DataFiles: {given!r} does not exist (the data the "
                                        "command task's script reads)")
        return out


def _file_hash(path: Path) -> str:
    h = hashlib.sha256()
    with path.open("rb") as fh:
        for block in iter(lambda: fh.read(1 << 20), b""):
            h.update(block)
    return h.hexdigest()


def environment(*, seed: int, device: str, threads: int, deterministic: str, metric: str,
                output: str | None = None) -> dict[str, str]:
    """The variables the runner sets for one run (``output`` aside, part of the cache key).

    Threads are pinned for every library (OpenMP, MKL, OpenBLAS) as torch's count is in the
    runner; the device through ``CUDA_VISIBLE_DEVICES`` (none on CPU; the one pinned GPU,
    which the script then sees as ``cuda:0``); hash randomisation is fixed (set order).
    """
    kind, _, index = device.partition(":")
    env = {script_side.SEED_ENV: str(seed), script_side.THREADS_ENV: str(threads),
           script_side.METRIC_ENV: metric, script_side.DETERMINISTIC_ENV: deterministic,
           "OMP_NUM_THREADS": str(threads), "MKL_NUM_THREADS": str(threads),
           "OPENBLAS_NUM_THREADS": str(threads), "PYTHONHASHSEED": "0"}
    if kind == "cuda":
        visible = os.environ.get("CUDA_VISIBLE_DEVICES")
        ids = visible.split(",") if visible else None
        env["CUDA_VISIBLE_DEVICES"] = ids[int(index or 0)] if ids else (index or "0")
        env[script_side.DEVICE_ENV] = "cuda:0"
        if deterministic != "off":
            from ..determinism import CUBLAS_ENV, CUBLAS_VALUE

            env[CUBLAS_ENV] = CUBLAS_VALUE
    else:
        env["CUDA_VISIBLE_DEVICES"] = ""  # a script choosing its own device finds no GPU
        env[script_side.DEVICE_ENV] = kind
    if output is not None:
        env[script_side.OUTPUT_ENV] = output
    return env


def run(command: Command, *, task: str, model: str, metric: str, seed: int, device: str,
        threads: int, deterministic: str) -> History:
    """Run ``command`` for one seed; the History its metrics file holds.

    A non-zero exit, a timeout, a missing or invalid metrics file raise :class:`CommandError`
    with the command line, the exit code and the tail of its stderr.
    """
    where = f"task {task!r} × model {model!r} × seed {seed}"
    given = command.script_seed(seed)
    with tempfile.TemporaryDirectory(prefix="graphnetz-command-") as tmp:
        output = str(Path(tmp) / "metrics.json")
        env = environment(seed=given, device=device, threads=threads,
                          deterministic=deterministic, metric=metric, output=output)
        if given != seed:   # salted (calibration): the benchmark seed, for data and splits
            env[script_side.DATA_SEED_ENV] = str(seed)
        values = {"seed": str(given), "device": env[script_side.DEVICE_ENV], "output": output,
                  "threads": str(threads), "metric": metric}
        args = [_PLACEHOLDER.sub(lambda m: values[m.group(1)], a) for a in command.args]
        shown = shlex.join(args)
        try:
            done = subprocess.run(args, cwd=command.cwd, env={**os.environ, **command.env, **env},
                                  capture_output=True, text=True, timeout=command.timeout)
        except FileNotFoundError as exc:
            raise CommandError(f"{where}: cannot start `{shown}` ({exc})") from exc
        except subprocess.TimeoutExpired as exc:
            raise CommandError(f"{where}: `{shown}` ran past its timeout of {command.timeout} s"
                               f"{_tail(exc.stderr)}") from exc
        if done.returncode != 0:
            raise CommandError(f"{where}: `{shown}` exited with code {done.returncode}"
                               f"{_tail(done.stderr or done.stdout)}")
        if not Path(output).is_file():
            raise CommandError(
                f"{where}: `{shown}` exited with code 0 but wrote no metrics file (it should "
                f"write {{output}} / ${script_side.OUTPUT_ENV}: add `graphnetz.record(test=..., "
                f"val=...)` once per epoch, see docs/command-tasks.md){_tail(done.stderr)}")
        try:
            return read_output(Path(output).read_text(encoding="utf-8"), metric=metric)
        except ValueError as exc:
            raise CommandError(f"{where}: `{shown}` wrote an invalid metrics file: {exc}"
                               f"{_tail(done.stderr)}") from exc


def _tail(text: str | bytes | None) -> str:
    if isinstance(text, bytes):
        text = text.decode("utf-8", "replace")
    lines = (text or "").rstrip().splitlines()[-STDERR_LINES:]
    return "; its stderr ends:\n" + "\n".join(lines) if lines else "; no stderr"


def read_output(text: str, *, metric: str) -> History:
    """The History in a metrics file's text; ``ValueError`` naming the problem otherwise.

    ``metric`` must be the task's metric (case aside): a script reporting another one is
    refused rather than gated under the wrong name.
    """
    try:
        data = json.loads(text)  # bare NaN / Infinity accepted: a diverged run
    except RecursionError:
        raise ValueError("JSON nested too deeply (a metrics file is one flat object)") from None
    if not isinstance(data, Mapping):
        raise ValueError(f"expected a JSON object, got {type(data).__name__}")
    if data.get("format", script_side.FORMAT) != script_side.FORMAT or \
            data.get("version", 1) != script_side.FORMAT_VERSION:
        raise ValueError(f"`format`/`version` {data.get('format')!r}/{data.get('version')!r}: "
                         f"this pytest-graphnetz reads {script_side.FORMAT!r} version "
                         f"{script_side.FORMAT_VERSION}")
    name = data.get("metric")
    if not isinstance(name, str) or name.lower() != metric.lower():
        raise ValueError(f"`metric` is {name!r} but the task reports {metric!r}; write that "
                         "metric, or set the task's `metric=`")
    if "test" not in data:
        raise ValueError("no `test` series (the task's metric per epoch)")

    def series(key: str, values: Any) -> list[float] | None:
        if values is None:
            return None
        if not isinstance(values, list) or not all(
                v is None or (type(v) in (int, float)) for v in values):
            raise ValueError(f"`{key}` must be a list of numbers (null or NaN: diverged)")
        try:
            return [math.nan if v is None else float(v) for v in values]
        except OverflowError:  # an integer of 400 digits
            raise ValueError(f"`{key}` holds a number too large for a float") from None

    extra = data.get("extra") or {}
    if not isinstance(extra, Mapping):
        raise ValueError("`extra` must be an object of named series")
    val = series("val", data.get("val"))
    return History(test=tuple(series("test", data["test"]) or ()),
                   val=None if val is None else tuple(val),
                   train_loss=tuple(series("train_loss", data.get("train_loss")) or ()),
                   extra={k: tuple(series(f"extra.{k}", v) or ()) for k, v in extra.items()},
                   val_metric=data.get("val_metric"), restored_epoch=data.get("restored_epoch"))


def check_rerun(command: Command, first: History, **run_args: Any) -> None:
    """Run ``command`` once more for the seed of ``first`` (``run_args``: as for :func:`run`)
    and raise :class:`NondeterministicScriptError` when its metrics differ."""
    again = run(command, **run_args)
    if _canonical(again) == _canonical(first):  # NaN equal to NaN: a diverged epoch repeats
        return
    differs = ""
    for name in ("test", "val", "train_loss"):
        a, b = getattr(first, name) or (), getattr(again, name) or ()
        if len(a) != len(b):
            differs = f"`{name}` has {len(a)} epochs, then {len(b)}"
            break
        bad = [i for i, (x, y) in enumerate(zip(a, b, strict=True))
               if x != y and not (math.isnan(x) and math.isnan(y))]
        if bad:
            differs = f"`{name}` at epoch {bad[0]}: {a[bad[0]]!r}, then {b[bad[0]]!r}"
            break
    raise NondeterministicScriptError(
        f"script {command.script} is not deterministic: two runs of seed {run_args['seed']} "
        f"(task {run_args['task']!r} × model {run_args['model']!r}) differ "
        f"({differs or 'in their extra series or epoch fields'}). Reseeding is the script's "
        "job: call `graphnetz.seed()` (pytest_graphnetz.script) before the data, model and "
        "optimizer are made, and draw nothing from time or os.urandom")


def _canonical(history: History) -> str:
    return json.dumps(history.to_dict(), sort_keys=True)
