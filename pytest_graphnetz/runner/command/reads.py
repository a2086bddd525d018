"""What a command task's run read, and whether it still reads the same (a cache hit needs it).

A Python script runs under :data:`CHILD` (:func:`traced_args`), which records the files,
directories, environment variables and project modules it reads; :func:`reads_record` turns
that into the record stored with the cached run, :func:`reads_unchanged` checks it against
the checkout as it is now, and :func:`derivations` names the files a run made and read back
(PyG's ``processed/``), which a fresh clone may lack and still hit. A command that is no
Python script runs untraced (:data:`UNTRACKED`), cached by its code, arguments and DataFiles.
"""

from __future__ import annotations

import contextlib
import hashlib
import os
import stat
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from types import MappingProxyType
from typing import Any

from pytest_graphnetz.runner.command.task import Command
from pytest_graphnetz.runner.fingerprint import file_sha256

# The record of a run that was not traced (not a Python script, or `track_reads=False`): its
# cache entry is keyed as before tracking existed, by the code, arguments and DataFiles only.
UNTRACKED: Mapping[str, Any] = MappingProxyType({"untracked": True})


# The program that runs a traced script (stdlib only: it may run under another interpreter).
CHILD = Path(__file__).with_name("child.py")
_PYTHON_OPTIONS_WITH_VALUE = frozenset({"-W", "-X", "--check-hash-based-pycs"})


def traced_args(args: Sequence[str], reads: str) -> list[str] | None:
    """``args`` rewritten to run their script (or ``-m`` module) under :data:`CHILD`, which
    writes what it read to ``reads``; None when ``args`` run no Python script (a shell script,
    ``python -c``, a program read from stdin). Interpreter options stay where they were."""
    from pytest_graphnetz.runner.fingerprint import looks_like_python

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


def reads_record(path: Path, *, cwd: str, ignore_env: set[str],
                 covered: frozenset[str] = frozenset(),
                 hashes: FileHashes | None = None) -> dict[str, Any] | None:
    """What a traced run read, from :data:`CHILD`'s file ``path``: ``{"files": {path: sha256},
    "dirs": {path: sha256 of the names}, "env": {name: sha256 or None}, "modules": {path:
    normalised-code sha256}}``, paths relative to ``cwd`` when inside it. Library locations,
    files the run wrote before reading them, the variables in ``ignore_env`` (those the
    runner sets, which the key holds) and the modules in ``covered`` (those whose code the key
    holds at the grain of definitions:
    :func:`~pytest_graphnetz.runner.fingerprint.project_code_files`
    of the script) are left out. None when the file is missing or not one :data:`CHILD`
    writes (the script left by ``os._exit``, or overwrote it)."""
    from pytest_graphnetz.report.codec import read_json
    from pytest_graphnetz.runner.fingerprint import (
        in_library_location,
        is_project_file,
        module_digest,
    )

    try:
        raw = read_json(path, limit=_MAX_READS_BYTES, what="reads file")
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
        if is_project_file(p) and os.path.isfile(p) and os.path.abspath(p) not in covered:
            out["modules"][portable(p)] = module_digest(p)
    temp = str(path.parent) + os.sep
    out["exists"] = _checks(raw.get("exists"), raw, temp, portable)
    # What the run made, as it ended ({path: sha256}): what it read back (PyG's processed
    # data.pt), and the other files it wrote up to _MAX_DERIVED_BYTES (PyG's pre_transform.pt,
    # which later runs read; not a large checkpoint).
    out["derived"] = {}
    reread = {d for d in raw.get("reread", ()) if isinstance(d, str)}
    for p in sorted({d for d in raw.get("produced", ()) if isinstance(d, str)} | reread):
        if p.startswith((temp, "/proc/", "/sys/")) or p.endswith((".pyc", ".tmp")) \
                or in_library_location(p):
            continue
        with contextlib.suppress(OSError):
            if p in reread or os.stat(p).st_size <= _MAX_DERIVED_BYTES:
                out["derived"][portable(p)] = file_hash(p, hashes)
    return out


_MAX_DERIVED_BYTES = 64 * 2**20
_KINDS = ("file", "dir", "other", None)


def _checks(exists: Any, raw: Mapping[str, Any], temp: str,
            portable: Callable[[str], str]) -> dict[str, str | None]:
    """The existence checks of a run that a hit needs unchanged: ``{path: kind or None}``
    (absent), less what the other parts of the record decide already: a path the run made
    (or one under a directory it made), a file it read, a directory above one."""
    from pytest_graphnetz.runner.fingerprint import in_library_location

    if not isinstance(exists, Mapping):
        return {}
    made = {p.rstrip(os.sep) for p in raw.get("produced", ()) if isinstance(p, str)}
    read = [p for key in ("files", "dirs") if isinstance(raw.get(key), Mapping)
            for p in raw[key]] + [p for p in raw.get("modules", ()) if isinstance(p, str)]
    above = {parent for p in read for parent in _parents(p)}
    out: dict[str, str | None] = {}
    for p, kind in sorted(exists.items()):
        if kind not in _KINDS or not isinstance(p, str) or \
                p.startswith((temp, "/proc/", "/sys/")) or in_library_location(p):
            continue
        if p in made or any(parent in made for parent in _parents(p)):
            continue   # the run's own output: its existence is the run's doing
        if (kind == "file" and p in read) or (kind == "dir" and p in above):
            continue   # the read itself is checked (a derived file can stand in for it)
        out[portable(p)] = kind
    return out


def _parents(path: str) -> list[str]:
    out, head = [], os.path.dirname(path)
    while head and head != os.path.dirname(head):
        out.append(head)
        head = os.path.dirname(head)
    return out


def path_kind(path: str) -> str | None:
    """What is at ``path`` as the existence record names it: "file", "dir", "other" or None."""
    try:
        mode = os.stat(path).st_mode
    except (OSError, ValueError):
        return None
    return "file" if stat.S_ISREG(mode) else "dir" if stat.S_ISDIR(mode) else "other"


Derived = Callable[[str, str], Any]   # (path, sha256) -> the inputs that made it, or None


def derivations(record: Mapping[str, Any]) -> list[tuple[str, str, dict[str, Any]]]:
    """``(path, sha256, inputs)`` of each file a run made and read back (PyG's ``processed/``
    on its first run), with what the run read: a later run that read that file can stand
    where it is missing (a fresh clone) while those inputs are unchanged."""
    derived = record.get("derived") if isinstance(record, Mapping) else None
    if not isinstance(derived, Mapping):
        return []
    inputs = {k: record[k] for k in ("files", "dirs", "env", "modules", "exists")
              if k in record}
    return [(p, h, inputs) for p, h in derived.items() if isinstance(h, str)]


def reads_unchanged(command: Command, record: Any, derived: Derived | None = None,
                    depth: int = 0, *, hashes: FileHashes | None = None) -> bool:
    """Whether everything a run of ``command`` read (its :func:`reads_record`) reads the same
    now: each file's content, each listed directory's names, each variable's value in the
    environment the run would get, each project module's normalised code. A record of
    another shape is not unchanged (the run is redone).

    A file that is missing (not changed) still reads the same when ``derived(path, sha256)``
    gives the inputs of a run that made it with that content and those inputs read the same
    now (:func:`derivations`): a fresh clone without PyG's ``processed/`` is a full hit."""
    from pytest_graphnetz.runner.fingerprint import module_digest

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
                if file_hash(os.path.join(cwd, rel), hashes) != digest:
                    return False
            except FileNotFoundError:
                inputs = None if derived is None or depth >= 3 else derived(rel, digest)
                if inputs is None or not reads_unchanged(command, inputs, derived, depth + 1,
                                                         hashes=hashes):
                    return False
        for rel, digest in record["dirs"].items():
            names = sorted(n for n in os.listdir(os.path.join(cwd, rel)) if n != "__pycache__")
            if hashlib.sha256("\0".join(names).encode()).hexdigest() != digest:
                return False
        for rel, digest in record["modules"].items():
            if module_digest(os.path.join(cwd, rel)) != digest:
                return False
        exists = record.get("exists", {})   # absent in records made before it was kept
        if not isinstance(exists, dict):
            return False
        for rel, kind in exists.items():
            if path_kind(os.path.join(cwd, rel)) != kind:
                return False
    except (OSError, TypeError, ValueError):
        return False   # gone, unreadable, or a record that is not ours
    return True


# sha256 of files by (path, size, mtime_ns): the config a hundred triples read is hashed once
# (an executor's, :class:`~.run.CommandExecutor`).
FileHashes = dict[tuple[str, int, int], str]
_MAX_HASHES = 4096


def file_hash(path: str, hashes: FileHashes | None = None) -> str:
    """The sha256 of ``path``'s bytes (OSError when it is missing or not a regular file),
    looked up in (and added to) ``hashes`` by the file's path, size and mtime."""
    st = os.stat(path)
    if not stat.S_ISREG(st.st_mode):
        raise IsADirectoryError(path)
    if hashes is None:
        return file_sha256(Path(path))
    stamp = (path, st.st_size, st.st_mtime_ns)
    if stamp not in hashes:
        if len(hashes) > _MAX_HASHES:
            hashes.clear()
        hashes[stamp] = file_sha256(Path(path))
    return hashes[stamp]
