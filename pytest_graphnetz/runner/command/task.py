"""Command tasks: a training script gated as it is; this module holds the values a user writes.

A command task is ``Task(name, DataFiles(...), kind="command")``; its models are
:class:`Command` objects instead of model factories (a script is model and training loop in
one, so each model has its own script or arguments: a trainer per model). :class:`Command`
is the command line and its identity (what keys the cache and fingerprints the model: the
script's normalised code, its arguments without paths, its extra environment, the project
modules it imports); :class:`DataFiles` is the loader, which fingerprints the data named to
pair on, so seeds pair only while that data is unchanged.

Running one seed is :mod:`.run` (placeholders, environment, the metrics file read by
:mod:`.output`), in a process group of its own (:mod:`.process`), forked warm
where it can be (:mod:`.warm`); what a run read, which a cache hit needs unchanged, is
:mod:`.reads`. The format of the metrics file: docs/command-tasks.md; the script side
is :mod:`pytest_graphnetz.script`.
"""

from __future__ import annotations

import hashlib
import json
import os
import shlex
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from pytest_graphnetz.runner.fingerprint import file_sha256


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
    - ``track_reads``: run a Python script under :mod:`.child`, which records the
      files, environment variables and project modules it reads; a cached run is reused only
      while they are unchanged (:func:`.reads.reads_unchanged`). ``False``: the
      script runs as it is and is cached by its code, arguments and ``DataFiles`` only (as
      any command that is not a Python script: ``bash run.sh``).
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

    def fingerprint(self) -> str:
        """The model fingerprint of this command's cells: :func:`identity_digest` of
        :meth:`identity`."""
        return identity_digest(self.identity())


def identity_digest(identity: Mapping[str, Any]) -> str:
    """sha256 of a command's ``identity`` (as JSON with sorted keys): a model fingerprint."""
    return hashlib.sha256(json.dumps(identity, sort_keys=True).encode()).hexdigest()


def portable_args(args: Sequence[str], cwd: str, env: Mapping[str, str]) -> list[Any]:
    """``args`` as the cache key holds them, free of where things are: the interpreter (the
    first argument, when it is Python) by
    :func:`~pytest_graphnetz.runner.fingerprint.interpreter_identity`
    (version, implementation, installed distributions), not its path; an absolute path inside
    ``cwd`` relative to it. ``python -m pytest`` and ``pytest``, another virtual environment
    with the same packages and a clone in another directory then give one key."""
    from pytest_graphnetz.runner.fingerprint import interpreter_identity, looks_like_python

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
    in the cache key (:func:`pytest_graphnetz.runner.fingerprint.normalised_source`); a file that is
    not Python (a shell script) counts byte for byte."""
    from pytest_graphnetz.runner.fingerprint import normalised_source

    return normalised_source(Path(path).read_text(encoding="utf-8"))


def project_code(script: Path) -> Any:
    """The key of the project modules ``script`` imports, transitively (not site-packages or
    the standard library): an edit to a model module the script imports must retrain, as it
    does for an in-process trainer
    (:func:`pytest_graphnetz.runner.fingerprint.project_code_key`)."""
    from pytest_graphnetz.runner.fingerprint import project_code_key

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
                out.append((path.name, file_sha256(path)))
            elif path.is_dir():
                out.append((path.name, {str(f.relative_to(path)): file_sha256(f)
                                        for f in sorted(path.rglob("*")) if f.is_file()}))
            else:
                raise FileNotFoundError(f"DataFiles: {given!r} does not exist (the data the "
                                        "command task's script reads)")
        return out
