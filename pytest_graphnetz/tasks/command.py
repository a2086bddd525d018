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

The loader of a command task only fingerprints the data named to pair on (``DataFiles``: the
bytes of the files), so seeds pair only while that data is unchanged. The cache key holds the
script's normalised code (comments and formatting do not count; an argparse default does), its
arguments (no paths: :func:`portable_args`) and the environment the runner sets; a hit also
needs everything the run read unchanged (:func:`run_traced`, :func:`reads_unchanged`). Each run
is a process group of its own (:func:`run_process`), forked warm where it can be
(:mod:`.command_warm`).
"""

from __future__ import annotations

import atexit
import contextlib
import hashlib
import json
import math
import os
import re
import shlex
import signal
import stat
import subprocess
import tempfile
import threading
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from .. import script as script_side
from ..history import History
from .command_warm import WarmServer, close_servers, warm_server

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
    - ``track_reads``: run a Python script under :mod:`.command_child`, which records the
      files, environment variables and project modules it reads; a cached run is reused only
      while they are unchanged (:func:`reads_unchanged`). ``False``: the script runs as it is
      and is cached by its code, arguments and ``DataFiles`` only (as any command that is not
      a Python script: ``bash run.sh``).
    """

    args: Sequence[str] | str
    script: str | os.PathLike | None = None
    env: Mapping[str, str] = field(default_factory=dict)
    cwd: str | os.PathLike | None = None
    timeout: float | None = None
    check_determinism: bool = False
    track_reads: bool = True

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
                               "args": portable_args(self.args, str(self.cwd), self.env),
                               "env": dict(sorted(self.env.items()))}
        project = project_code(script)
        if project is not None:
            out["project"] = project
        return out

    def script_seed(self, seed: int) -> int:
        """The seed the script receives for benchmark seed ``seed`` (``{seed}``,
        ``GRAPHNETZ_SEED``): the seed itself; a calibration's salted command moves it
        (:class:`pytest_graphnetz.calibration.salting.SaltedCommand`)."""
        return seed

    def fingerprint(self) -> str:
        """sha256 of :meth:`identity`, the model fingerprint of this command's cells."""
        return hashlib.sha256(json.dumps(self.identity(), sort_keys=True).encode()).hexdigest()


def portable_args(args: Sequence[str], cwd: str, env: Mapping[str, str]) -> list[Any]:
    """``args`` as the cache key holds them, free of where things are: the interpreter (the
    first argument, when it is Python) by :func:`~pytest_graphnetz.fingerprint.interpreter_identity`
    (version, implementation, installed distributions), not its path; an absolute path inside
    ``cwd`` relative to it. ``python -m pytest`` and ``pytest``, another virtual environment
    with the same packages and a clone in another directory then give one key."""
    from ..fingerprint import interpreter_identity, looks_like_python

    out: list[Any] = []
    for i, arg in enumerate(args):
        if i == 0 and looks_like_python(arg):
            out.append({"python": interpreter_identity(
                arg, cwd=cwd, path=env.get("PATH", os.environ.get("PATH")))})
        elif os.path.isabs(arg) and (arg == cwd or arg.startswith(cwd.rstrip(os.sep) + os.sep)):
            out.append(os.path.relpath(arg, cwd))
        else:
            out.append(arg)
    return out


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
    script reads, so a changed data file makes the gate refuse the pairing.

    ``DataFiles()`` names none: what each run reads is tracked anyway (:func:`run_traced`), so
    a changed config or data file retrains. Name the data as shipped (the raw files, never a
    derived ``processed/`` directory a fresh clone lacks) where a change must make the gate
    refuse to pair the new runs with the baseline's."""

    paths: Sequence[str | os.PathLike] = ()

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
    """Run ``command`` for one seed; the History its metrics file holds (see
    :func:`run_traced`)."""
    return run_traced(command, task=task, model=model, metric=metric, seed=seed, device=device,
                      threads=threads, deterministic=deterministic)[0]


def run_traced(command: Command, *, task: str, model: str, metric: str, seed: int, device: str,
               threads: int, deterministic: str) -> tuple[History, dict[str, Any] | None]:
    """Run ``command`` for one seed: the History its metrics file holds, and what the run read
    (:func:`reads_record`): :data:`UNTRACKED` for a command that is not a Python script (or
    ``-c``, or ``track_reads=False``); None when the script left by ``os._exit`` (what it read
    is unknown: the runner does not cache the run).

    A non-zero exit, a timeout, a missing or invalid metrics file raise :class:`CommandError`
    with the command line, the exit code and the tail of its stderr. The script runs in its own
    process group (:func:`run_process`), which nothing of it survives.
    """
    where = f"task {task!r} × model {model!r} × seed {seed}"
    given = command.script_seed(seed)
    with tempfile.TemporaryDirectory(prefix="graphnetz-command-") as tmp:
        output = str(Path(tmp) / "metrics.json")
        reads = str(Path(tmp) / "reads.json")
        env = environment(seed=given, device=device, threads=threads,
                          deterministic=deterministic, metric=metric, output=output)
        if given != seed:   # salted (calibration): the benchmark seed, for data and splits
            env[script_side.DATA_SEED_ENV] = str(seed)
        values = {"seed": str(given), "device": env[script_side.DEVICE_ENV], "output": output,
                  "threads": str(threads), "metric": metric}
        args = [_PLACEHOLDER.sub(lambda m: values[m.group(1)], a) for a in command.args]
        shown = shlex.join(args)
        traced = traced_args(args, reads) if command.track_reads else None
        full_env = {**os.environ, **command.env, **env}
        # Warm once a run of this script has shown it imports torch (the server's preload):
        # a script without it starts faster cold than a server importing torch.
        server = warm_server(traced, full_env, device, own=command.env) \
            if traced and str(command.script) in _IMPORTS_TORCH else None
        done = run_process(traced or args, cwd=str(command.cwd), env=full_env,
                           timeout=command.timeout, logs=Path(tmp), where=f"{where}: `{shown}`",
                           server=server)
        if done.returncode != 0:
            raise CommandError(f"{where}: `{shown}` exited with code {done.returncode}"
                               f"{_tail(done.stderr or done.stdout)}")
        if not Path(output).is_file():
            raise CommandError(
                f"{where}: `{shown}` exited with code 0 but wrote no metrics file (it should "
                f"write {{output}} / ${script_side.OUTPUT_ENV}: add `graphnetz.record(test=..., "
                f"val=...)` once per epoch, see docs/command-tasks.md){_tail(done.stderr)}")
        try:
            text = read_metrics_file(Path(output), where=f"{where}: `{shown}`")
            history = read_output(text, metric=metric)
        except ValueError as exc:
            raise CommandError(f"{where}: `{shown}` wrote an invalid metrics file: {exc}"
                               f"{_tail(done.stderr)}") from exc
        record = UNTRACKED if traced is None else reads_record(
            Path(reads), cwd=str(command.cwd), ignore_env={*env, *command.env})
        if record is not None and record.pop("torch", False):
            _IMPORTS_TORCH.add(str(command.script))
        return history, record


_IMPORTS_TORCH: set[str] = set()   # scripts whose runs imported torch: run warm from then on


# The record of a run that was not traced (not a Python script, or `track_reads=False`): its
# cache entry is keyed as before tracking existed, by the code, arguments and DataFiles only.
UNTRACKED: dict[str, Any] = {"untracked": True}


# The program that runs a traced script (stdlib only: it may run under another interpreter).
CHILD = Path(__file__).with_name("command_child.py")
_PYTHON_OPTIONS_WITH_VALUE = frozenset({"-W", "-X", "--check-hash-based-pycs"})


def traced_args(args: Sequence[str], reads: str) -> list[str] | None:
    """``args`` rewritten to run their script (or ``-m`` module) under :data:`CHILD`, which
    writes what it read to ``reads``; None when ``args`` run no Python script (a shell script,
    ``python -c``, a program read from stdin). Interpreter options stay where they were."""
    from ..fingerprint import looks_like_python

    if not args or not looks_like_python(args[0]):
        return None
    i = 1
    while i < len(args):
        arg = args[i]
        if arg in _PYTHON_OPTIONS_WITH_VALUE:
            i += 2
            continue
        if arg == "-m":
            return None if i + 1 >= len(args) else [*args[:i], str(CHILD), reads, "--",
                                                     *args[i:]]
        if arg == "--":
            i += 1
            break
        if arg.startswith("-"):
            if arg == "-" or arg.startswith("--") or (arg[1] not in "WX" and "c" in arg[1:]):
                return None  # stdin, a long option we do not know, or -c
            if arg[1] not in "WX" and "m" in arg[1:]:
                return None  # -um module: rare; run untracked rather than misparse
            i += 1
            continue
        break
    if i >= len(args):
        return None
    return [*args[:i], str(CHILD), reads, "--", *args[i:]]


_MAX_READS_BYTES = 64 * 2**20


def reads_record(path: Path, *, cwd: str, ignore_env: set[str]) -> dict[str, Any] | None:
    """What a traced run read, from :data:`CHILD`'s file ``path``: ``{"files": {path: sha256},
    "dirs": {path: sha256 of the names}, "env": {name: sha256 or None}, "modules": {path:
    normalised-code sha256}}``, paths relative to ``cwd`` when inside it. Library locations,
    files the run wrote before reading them and the variables in ``ignore_env`` (those the
    runner sets, which the key holds) are left out. None when the file is missing or not one
    :data:`CHILD` writes (the script left by ``os._exit``, or overwrote it)."""
    from ..fingerprint import in_library_location, is_project_file, module_digest
    from ..report.files import read_regular_file

    try:
        raw = json.loads(read_regular_file(path, limit=_MAX_READS_BYTES).decode("utf-8"))
        files, dirs, env, modules = raw["files"], raw["dirs"], raw["env"], raw["modules"]
        if not (isinstance(files, dict) and isinstance(dirs, dict) and isinstance(env, dict)
                and isinstance(modules, list)):
            return None
    except (OSError, ValueError, KeyError, TypeError, RecursionError):
        return None

    def portable(p: str) -> str:
        inside = p == cwd or p.startswith(cwd.rstrip(os.sep) + os.sep)
        return os.path.relpath(p, cwd) if inside else p

    out: dict[str, Any] = {
        "torch": raw.get("torch") is True,   # popped by run_traced: not part of the record
        "files": {portable(p): h for p, h in sorted(files.items())
                  if isinstance(h, str) and not in_library_location(p)},
        "dirs": {portable(p): h for p, h in sorted(dirs.items())
                 if isinstance(h, str) and not in_library_location(p)},
        "env": {n: h for n, h in sorted(env.items())
                if n not in ignore_env and (h is None or isinstance(h, str))},
        "modules": {}}
    for p in sorted(m for m in modules if isinstance(m, str)):
        if is_project_file(p) and os.path.isfile(p):
            out["modules"][portable(p)] = module_digest(p)
    temp = str(path.parent) + os.sep
    # What the run made, as it ended ({path: sha256}): what it read back (PyG's processed
    # data.pt), and the other files it wrote up to _MAX_DERIVED_BYTES (PyG's pre_transform.pt,
    # which later runs read; not a large checkpoint).
    out["derived"] = {}
    reread = {d for d in raw.get("reread", ()) if isinstance(d, str)}
    for p in sorted({d for d in raw.get("produced", ()) if isinstance(d, str)} | reread):
        if p.startswith((temp, "/proc/", "/sys/", "/dev/")) or p.endswith((".pyc", ".tmp")) \
                or in_library_location(p):
            continue
        with contextlib.suppress(OSError):
            if p in reread or os.stat(p).st_size <= _MAX_DERIVED_BYTES:
                out["derived"][portable(p)] = file_hash(p)
    return out


_MAX_DERIVED_BYTES = 64 * 2**20


Derived = Callable[[str, str], Any]   # (path, sha256) -> the inputs that made it, or None


def derivations(record: Mapping[str, Any]) -> list[tuple[str, str, dict[str, Any]]]:
    """``(path, sha256, inputs)`` of each file a run made and read back (PyG's ``processed/``
    on its first run), with what the run read: a later run that read that file can stand
    where it is missing (a fresh clone) while those inputs are unchanged."""
    derived = record.get("derived") if isinstance(record, Mapping) else None
    if not isinstance(derived, Mapping):
        return []
    inputs = {k: record[k] for k in ("files", "dirs", "env", "modules") if k in record}
    return [(p, h, inputs) for p, h in derived.items() if isinstance(h, str)]


def reads_unchanged(command: Command, record: Any, derived: Derived | None = None,
                    depth: int = 0) -> bool:
    """Whether everything a run of ``command`` read (its :func:`reads_record`) reads the same
    now: each file's content, each listed directory's names, each variable's value in the
    environment the run would get, each project module's normalised code. A record of
    another shape is not unchanged (the run is redone).

    A file that is missing (not changed) still reads the same when ``derived(path, sha256)``
    gives the inputs of a run that made it with that content and those inputs read the same
    now (:func:`derivations`): a fresh clone without PyG's ``processed/`` is a full hit."""
    from ..fingerprint import module_digest

    if record == UNTRACKED:  # valid while the command still runs untraced
        return not command.track_reads or traced_args(command.args, "-") is None
    if not isinstance(record, dict) or not all(
            isinstance(record.get(k), dict) for k in ("files", "dirs", "env", "modules")):
        return False
    cwd = str(command.cwd)
    env = {**os.environ, **command.env}
    for name, digest in record["env"].items():
        value = env.get(name)
        if (None if value is None else hashlib.sha256(value.encode()).hexdigest()) != digest:
            return False
    try:
        for rel, digest in record["files"].items():
            try:
                if file_hash(os.path.join(cwd, rel)) != digest:
                    return False
            except FileNotFoundError:
                inputs = None if derived is None or depth >= 3 else derived(rel, digest)
                if inputs is None or not reads_unchanged(command, inputs, derived, depth + 1):
                    return False
        for rel, digest in record["dirs"].items():
            names = sorted(n for n in os.listdir(os.path.join(cwd, rel)) if n != "__pycache__")
            if hashlib.sha256("\0".join(names).encode()).hexdigest() != digest:
                return False
        for rel, digest in record["modules"].items():
            if module_digest(os.path.join(cwd, rel)) != digest:
                return False
    except (OSError, TypeError, ValueError):
        return False   # gone, unreadable, or a record that is not ours
    return True


# sha256 of files by (path, size, mtime_ns): the config a hundred triples read is hashed once.
_HASHES: dict[tuple[str, int, int], str] = {}


def file_hash(path: str) -> str:
    """The sha256 of ``path``'s bytes (OSError when it is missing or not a regular file)."""
    st = os.stat(path)
    if not stat.S_ISREG(st.st_mode):
        raise IsADirectoryError(path)
    stamp = (path, st.st_size, st.st_mtime_ns)
    if stamp not in _HASHES:
        if len(_HASHES) > 4096:
            _HASHES.clear()
        _HASHES[stamp] = _file_hash(Path(path))
    return _HASHES[stamp]


# Bounds on what a script leaves for the runner. Its stdout and stderr go to files (never
# through pipes into memory: 60 MB of output cost 120 MB there); past MAX_OUTPUT_BYTES on
# either one, the run is stopped. The metrics file is read whole, parsed into floats: past
# MAX_METRICS_BYTES it is refused (a 2-million-epoch file peaked at 840 MB).
MAX_OUTPUT_BYTES = 256 * 2**20
MAX_METRICS_BYTES = 8 * 2**20
_TAIL_BYTES = 64 * 2**10   # what is read back of stderr for an error's tail
_POLL_SECONDS = 0.05


@dataclass(frozen=True)
class Finished:
    """A command that exited: its exit code and the tails of its stdout and stderr."""

    returncode: int
    stdout: str
    stderr: str


def run_process(args: Sequence[str], *, cwd: str, env: Mapping[str, str],
                timeout: float | None, logs: Path, where: str,
                server: WarmServer | None = None) -> Finished:
    """Run ``args`` in a new session (its own process group) and wait for it to exit.

    - stdout and stderr go to files under ``logs``; only their last 64 KiB are read back, so
      output costs no memory, and a grandchild that keeps them open cannot delay the run.
    - Past ``timeout`` seconds, past :data:`MAX_OUTPUT_BYTES` of output, on ``KeyboardInterrupt``
      (SIGINT) or SIGTERM to this process, the whole group is killed (SIGKILL); after a normal
      exit too, so no grandchild outlives its run.
    - ``CommandError`` names ``where`` for a program that cannot start, a timeout and too much
      output.
    """
    _install_signal_handler()
    out_path, err_path = logs / "stdout.log", logs / "stderr.log"
    with out_path.open("wb") as out, err_path.open("wb") as err:
        proc: Any = None
        if server is not None:   # a child forked from the warm server, when it can
            proc = server.start(list(args[2:]), cwd=cwd, env=env, stdout=str(out_path),
                                stderr=str(err_path))
        if proc is None:
            if not os.path.isdir(cwd):
                raise CommandError(f"{where}: cannot start it (no directory {cwd!r})")
            try:
                proc = subprocess.Popen(list(args), cwd=cwd, env=dict(env),
                                        stdin=subprocess.DEVNULL, stdout=out, stderr=err,
                                        start_new_session=True)
            except OSError as exc:  # FileNotFoundError, PermissionError
                raise CommandError(f"{where}: cannot start it ({exc})") from exc
        _LIVE_GROUPS.add(proc.pid)
        deadline = None if timeout is None else time.monotonic() + timeout
        problem = None
        try:
            while True:
                try:
                    returncode = proc.wait(timeout=_POLL_SECONDS)
                    break
                except subprocess.TimeoutExpired:
                    pass
                if deadline is not None and time.monotonic() > deadline:
                    problem = f"ran past its timeout of {timeout} s"
                    break
                for name, fh in (("stdout", out), ("stderr", err)):
                    if os.fstat(fh.fileno()).st_size > MAX_OUTPUT_BYTES:
                        problem = (
                            f"wrote more than {MAX_OUTPUT_BYTES // 2**20} MiB to its {name} "
                            "(pytest_graphnetz.tasks.command.MAX_OUTPUT_BYTES) and was stopped; "
                            "print less (a line per epoch, not per batch) or log to a file of "
                            "the script's own")
                if problem is not None:
                    break
        finally:
            _kill_group(proc)
    stdout, stderr = _read_tail(out_path), _read_tail(err_path)
    if problem is not None:
        raise CommandError(f"{where} {problem}{_tail(stderr)}")
    return Finished(returncode, stdout, stderr)


# The process groups of the runs in progress in this process: killed on SIGTERM and at exit.
_LIVE_GROUPS: set[int] = set()


def _kill_group(proc: Any) -> None:
    """SIGKILL ``proc``'s process group (the script and everything it started), then reap it."""
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(proc.pid, signal.SIGKILL)
    with contextlib.suppress(subprocess.TimeoutExpired):
        proc.wait(timeout=10)
    _LIVE_GROUPS.discard(proc.pid)


def _kill_live_groups() -> None:
    for group in list(_LIVE_GROUPS):
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(group, signal.SIGKILL)


_SIGNAL_HANDLER: list[bool] = []


def _install_signal_handler() -> None:
    """Once per process, from the main thread: on SIGTERM kill the live groups, then do what
    the handler before did (the default: terminate). A script's group is a session of its own,
    so the terminal's SIGINT and a SIGTERM sent to this process never reach it by themselves;
    atexit covers an interpreter exiting while a run is in progress (KeyboardInterrupt)."""
    if _SIGNAL_HANDLER or threading.current_thread() is not threading.main_thread():
        return
    _SIGNAL_HANDLER.append(True)
    atexit.register(_kill_live_groups)
    previous = signal.getsignal(signal.SIGTERM)

    def on_sigterm(signum: int, frame: Any) -> None:
        _kill_live_groups()
        with contextlib.suppress(Exception):
            close_servers()
        if callable(previous):
            previous(signum, frame)
        elif previous != signal.SIG_IGN:
            signal.signal(signal.SIGTERM, signal.SIG_DFL)
            os.kill(os.getpid(), signal.SIGTERM)

    with contextlib.suppress(ValueError, OSError):
        signal.signal(signal.SIGTERM, on_sigterm)


def _read_tail(path: Path) -> str:
    with path.open("rb") as fh:
        size = fh.seek(0, os.SEEK_END)
        fh.seek(max(0, size - _TAIL_BYTES))
        data = fh.read()
    text = data.decode("utf-8", "replace")
    return text if size <= _TAIL_BYTES else text.partition("\n")[2]


def read_metrics_file(path: Path, *, where: str) -> str:
    """The text of a run's metrics file, refused past :data:`MAX_METRICS_BYTES`."""
    from ..report.files import read_regular_file

    size = path.stat().st_size
    if size > MAX_METRICS_BYTES:
        raise CommandError(
            f"{where}: its metrics file {path} holds {size / 2**20:.1f} MiB, more than the "
            f"{MAX_METRICS_BYTES // 2**20} MiB a command task reads "
            "(pytest_graphnetz.tasks.command.MAX_METRICS_BYTES); record once per epoch, not "
            "per step or batch")
    try:
        return read_regular_file(path, limit=MAX_METRICS_BYTES).decode("utf-8")
    except OSError as exc:  # a FIFO or a device left at the path, a file that grew past it
        raise CommandError(f"{where}: its metrics file {path} cannot be read ({exc})") from exc


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
