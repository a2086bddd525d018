"""``TripleCache``: one JSON file per (task, model, seed) run, keyed by a content hash.

Safe under concurrency (pytest-xdist workers, two CI jobs sharing a directory): a per-key
``filelock.FileLock`` is held while a run checks the cache, trains and writes, so no triple is
trained twice; entries are written atomically (temp file + rename), so no half-written file is
ever read. A corrupt entry is discarded with a warning naming the file, and recomputed.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import re
import tempfile
import warnings
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

from .history import History
from .report.codec import dumps, history_from_json, history_to_json
from .report.files import (
    file_lock,
    read_regular_file,
    remove_stale_temp_files,
    write_text_atomic,
)

CACHE_SCHEMA = "pytest-graphnetz/triple"
CACHE_VERSION = 1
RECORD_SCHEMA = "pytest-graphnetz/load"
_MAX_RECORD_BYTES = 64 * 2**20
_KEY = re.compile(r"[0-9a-f]{64}")


def canonical_json(obj: Any) -> str:
    """Sorted-key, compact JSON; values JSON cannot hold are written as their ``repr``."""
    return json.dumps(obj, sort_keys=True, separators=(",", ":"), default=repr, allow_nan=True)


def make_key(fields: Mapping[str, Any]) -> str:
    """sha256 hex of the canonical JSON of ``fields`` (everything a run's result depends on)."""
    return hashlib.sha256(canonical_json(fields).encode()).hexdigest()


Check = Callable[[History], "str | None"]


class TripleCache:
    """Histories on disk under ``directory``, one ``<key>.json`` per key from :func:`make_key`."""

    def __init__(self, directory: str | os.PathLike) -> None:
        self.directory = Path(directory)

    @classmethod
    def open(cls, directory: str | os.PathLike) -> TripleCache | None:
        """The cache at ``directory``, created if needed and swept of stale temp files.

        A cache that cannot be used (the path is a file, the directory is read-only) is not an
        error: one warning says why, and None means "train without the cache this run".
        """
        cache = cls(directory)
        try:
            cache.directory.mkdir(parents=True, exist_ok=True)
            fd, probe = tempfile.mkstemp(dir=cache.directory, prefix=".probe.", suffix=".tmp")
            os.close(fd)
            os.unlink(probe)
        except OSError as exc:
            if cache.directory.exists() and not cache.directory.is_dir():
                why = "it is a file, not a directory"
            else:
                why = f"it cannot be written ({type(exc).__name__}: {exc.strerror or exc})"
            warnings.warn(
                f"graphnetz cache directory {cache.directory} is unusable: {why}; training "
                "without the cache this run. Fix the directory, or choose another with "
                "--graphnetz-cache-dir (run_benchmark(cache_dir=...))",
                CacheWarning, stacklevel=2,
            )
            return None
        remove_stale_temp_files(cache.directory)
        if (cache.directory / "loads").is_dir():
            remove_stale_temp_files(cache.directory / "loads")
        return cache

    def path(self, key: str) -> Path:
        """The entry file of ``key``; a key that is not a sha256 hex digest is refused."""
        if not isinstance(key, str) or not _KEY.fullmatch(key):
            raise ValueError(
                f"cache key {key!r} is not a 64-character sha256 hex digest; build keys with "
                "`pytest_graphnetz.cache.make_key` (a key must never name a path)"
            )
        return self.directory / f"{key}.json"

    def get(self, key: str, check: Check | None = None,
            valid: Callable[[Any], bool] | None = None) -> History | None:
        """The cached History of ``key``, or None: missing, stale, or unusable (warned and
        deleted).

        Unusable: unreadable (not UTF-8, not JSON, nested too deep, truncated), another schema,
        version or key, values that are not numbers, or a history ``check`` rejects (it returns
        the problem, e.g. the wrong number of epochs for the triple). Stale: ``valid`` (given)
        rejects what the entry's run read (``put(..., depends=...)``; an entry without it is
        stale too); the entry stays until a fresh run replaces it.
        """
        path = self.path(key)
        try:
            # Regular files of bounded size only: a FIFO or a link to /dev/zero planted in a
            # shared cache must not block the run or exhaust its memory.
            text = read_regular_file(path).decode("utf-8")
            entry = json.loads(text)
            problem = _entry_problem(entry, key)
            history = None
            if problem is None and valid is not None and (
                    entry.get("depends") is None or not valid(entry["depends"])):
                return None
            if problem is None:
                history = history_from_json(entry["history"])
                problem = None if check is None else check(history)
        except FileNotFoundError:
            return None
        except (OSError, ValueError, RecursionError, KeyError, TypeError) as exc:
            # ValueError covers UnicodeDecodeError, JSONDecodeError and a malformed history.
            problem = f"{type(exc).__name__}: {str(exc)[:200]}"
        if problem is None:
            return history
        warnings.warn(f"discarding corrupt graphnetz cache entry {path} ({problem}); it will be "
                      "recomputed", CacheWarning, stacklevel=2)
        with contextlib.suppress(OSError):
            path.unlink()
        return None

    def put(self, key: str, history: History, fields: Mapping[str, Any] | None = None,
            depends: Any = None) -> Path:
        """Write ``history`` under ``key`` atomically; ``fields`` are stored for inspection,
        ``depends`` (JSON: what the run read) for :meth:`get`'s ``valid``."""
        path = self.path(key)
        entry = {"schema": CACHE_SCHEMA, "version": CACHE_VERSION, "key": key,
                 "history": history_to_json(history)}  # the report's exact, compact form
        if fields is not None:
            entry["fields"] = json.loads(canonical_json(fields))
        if depends is not None:
            entry["depends"] = json.loads(canonical_json(depends))
        write_text_atomic(path, dumps(entry))
        return path

    def lock(self, key: str) -> contextlib.AbstractContextManager[None]:
        """``key``'s inter-process lock (blocks while another process holds it); its lock file
        is removed on release, so locks do not pile up (waiters retry on a fresh one)."""
        return file_lock(self.path(key), remove=True)

    def get_or_compute(
        self, key: str, compute: Callable[[], History], fields: Mapping[str, Any] | None = None,
        check: Check | None = None,
    ) -> tuple[History, bool]:
        """``(history, cached)``: the entry of ``key``, computing and storing it when absent.

        A hit is read without locking (entries appear whole, by rename). On a miss the lock is
        held across check, compute and write, so concurrent callers with the same key compute
        it once; the others wait and then read the stored entry. The lock file is removed on
        release (late waiters then find the entry), so locks do not pile up.
        """
        return self.get_or_compute_tracked(key, lambda: (compute(), None), fields, check)

    def get_or_compute_tracked(
        self, key: str, compute: Callable[[], tuple[History, Any]],
        fields: Mapping[str, Any] | None = None, check: Check | None = None,
        valid: Callable[[Any], bool] | None = None,
    ) -> tuple[History, bool]:
        """:meth:`get_or_compute` for a run whose result depends on what it read: ``compute``
        returns ``(history, depends)``, stored with the entry, and a hit needs ``valid(depends)``
        (given). ``depends`` None with ``valid`` given: what the run read is unknown, so its
        history is returned and not stored."""
        path = self.path(key)
        hit = self.get(key, check, valid) if path.exists() else None
        if hit is not None:
            return hit, True
        with contextlib.ExitStack() as held:
            try:
                held.enter_context(self.lock(key))
            except OSError as exc:
                # The directory became unusable after TripleCache.open checked it.
                warnings.warn(f"could not lock graphnetz cache entry {path} ({exc}); training "
                              "without the cache", CacheWarning, stacklevel=2)
                return compute()[0], False
            hit = self.get(key, check, valid)
            if hit is not None:
                return hit, True
            history, depends = compute()
            if valid is not None and depends is None:
                return history, False
            try:
                self.put(key, history, fields, depends)
            except OSError as exc:
                # A read-only or full cache directory costs a retrain next time, not this run.
                warnings.warn(f"could not write graphnetz cache entry {path}: {exc}",
                              CacheWarning, stacklevel=2)
            return history, False

    def record_path(self, key: str) -> Path:
        """The file of :meth:`put_record`'s record ``key``: under ``loads/``, apart from the
        triple entries (a key that is not a sha256 hex digest is refused)."""
        return self.directory / "loads" / self.path(key).name

    def get_record(self, key: str) -> dict[str, Any] | None:
        """The JSON object :meth:`put_record` stored under ``key``, or None: missing, or
        unusable (not a regular file, over 64 MiB, not JSON, another schema, version or key),
        then warned about and deleted. A record only saves work (the runner's load records:
        what a task's loader returned), so losing one costs a recomputation, never a result.
        """
        path = self.record_path(key)
        try:
            if not path.is_file() or path.stat().st_size > _MAX_RECORD_BYTES:
                problem = "not a regular file, or larger than 64 MiB" if path.exists() else None
                if problem is None:
                    return None
                raise ValueError(problem)
            entry = json.loads(path.read_bytes().decode("utf-8"))
            if not isinstance(entry, dict) or entry.get("schema") != RECORD_SCHEMA \
                    or entry.get("version") != CACHE_VERSION or entry.get("key") != key \
                    or not isinstance(entry.get("record"), dict):
                raise ValueError(f"not a {RECORD_SCHEMA} record of this key and version")
            return entry["record"]
        except FileNotFoundError:
            return None
        except (OSError, ValueError, RecursionError) as exc:
            warnings.warn(f"discarding unusable graphnetz cache record {path} "
                          f"({type(exc).__name__}: {str(exc)[:200]}); it will be recomputed",
                          CacheWarning, stacklevel=2)
            with contextlib.suppress(OSError):
                if path.is_file():
                    path.unlink()
            return None

    def put_record(self, key: str, record: Mapping[str, Any]) -> None:
        """Store the JSON object ``record`` under ``key`` atomically; a write that fails (a
        read-only or full cache) is skipped silently: :meth:`get_or_compute` warns about it."""
        path = self.record_path(key)
        entry = {"schema": RECORD_SCHEMA, "version": CACHE_VERSION, "key": key,
                 "record": json.loads(canonical_json(record))}
        with contextlib.suppress(OSError):
            path.parent.mkdir(exist_ok=True)
            write_text_atomic(path, dumps(entry))


class CacheWarning(UserWarning):
    """A cache entry or directory that could not be used (the run goes on without it)."""


def _entry_problem(entry: Any, key: str) -> str | None:
    """What makes a decoded entry unusable for ``key`` (None: nothing)."""
    if not isinstance(entry, dict) or entry.get("schema") != CACHE_SCHEMA:
        return f"not a {CACHE_SCHEMA} entry"
    version = entry.get("version")
    if type(version) is not int or version != CACHE_VERSION:
        return f"cache version {version!r}, this pytest-graphnetz writes {CACHE_VERSION}"
    if entry.get("key") != key:
        return "wrong schema or key: the entry belongs to another key"
    if not isinstance(entry.get("history"), dict):
        return "no history"
    return None
