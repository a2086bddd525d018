"""``TripleCache``: one JSON file per (task, model, seed) run, keyed by a content hash.

Safe under concurrency (pytest-xdist workers, two CI jobs sharing a directory): a per-key
``filelock.FileLock`` is held while a run checks the cache, trains and writes, so no triple is
trained twice; entries are written atomically (temp file + rename), so no half-written file is
ever read. An entry's values are bound to its key by a digest: a corrupt, truncated or edited
entry is discarded with a warning naming the file, and recomputed. An entry whose run depended
on what it read keeps the last :data:`VARIANTS` results, each with what its run read, so an
input changed and changed back is a hit again. A directory that cannot be written is read
(hits served, nothing saved), with one warning.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import re
import shutil
import tempfile
import warnings
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any, Protocol

from pytest_graphnetz.report.codec import dumps, history_from_json, history_to_json, read_json
from pytest_graphnetz.report.epochs import History
from pytest_graphnetz.report.files import (
    file_lock,
    remove_stale_temp_files,
    write_text_atomic,
)

CACHE_SCHEMA = "pytest-graphnetz/triple"
CACHE_VERSION = 1
RECORD_SCHEMA = "pytest-graphnetz/load"
_MAX_RECORD_BYTES = 64 * 2**20
_KEY = re.compile(r"[0-9a-f]{64}")
# Results kept per key for runs that depend on what they read (a config edited, then reverted,
# hits its first result again).
VARIANTS = 8


def canonical_json(obj: Any) -> str:
    """Sorted-key, compact JSON; values JSON cannot hold are written as their ``repr``."""
    return json.dumps(obj, sort_keys=True, separators=(",", ":"), default=repr, allow_nan=True)


def make_key(fields: Mapping[str, Any]) -> str:
    """sha256 hex of the canonical JSON of ``fields`` (everything a run's result depends on)."""
    return hashlib.sha256(canonical_json(fields).encode()).hexdigest()


Check = Callable[[History], "str | None"]


class RemoteTier(Protocol):
    """A shared store beside the local cache (:class:`~.remote.RemoteCache`): verified entries
    fetched by key, new ones published."""

    def fetch(self, key: str) -> dict[str, Any] | None:
        """``key``'s entry as :meth:`TripleCache.put` writes it, verified; None: none."""

    def publish(self, key: str, entry: dict[str, Any]) -> None:
        """Offer ``key``'s freshly written entry to the store."""


class TripleCache:
    """Histories on disk under ``directory``, one ``<key>.json`` per key from :func:`make_key`."""

    def __init__(self, directory: str | os.PathLike, *, read_only: bool = False,
                 remote: RemoteTier | None = None) -> None:
        self.directory = Path(directory)
        # Read-only: hits are served, nothing is written, locked or deleted.
        self.read_only = read_only
        # A shared store consulted on a local miss; what is trained here is offered to it.
        self.remote = remote

    @classmethod
    def open(cls, directory: str | os.PathLike) -> TripleCache | None:
        """The cache at ``directory``, created if needed and swept of stale temp files.

        A cache that cannot be used (the path is a file, a directory that cannot be read) is not
        an error: one warning says why, and None means "train without the cache this run". A
        directory that can be read but not written (a shared, prefilled team cache) is opened
        read-only: its hits are served and nothing is saved, which one warning says.
        """
        cache = cls(directory)
        try:
            cache.directory.mkdir(parents=True, exist_ok=True)
            fd, probe = tempfile.mkstemp(dir=cache.directory, prefix=".probe.", suffix=".tmp")
            os.close(fd)
            os.unlink(probe)
        except OSError as exc:
            cause = f"{type(exc).__name__}: {exc.strerror or exc}"
            if cache.directory.is_dir() and os.access(cache.directory, os.R_OK | os.X_OK):
                warnings.warn(
                    f"graphnetz cache directory {cache.directory} is read-only ({cause}): "
                    "cached results are read, nothing is saved this run",
                    CacheWarning, stacklevel=2)
                return cls(cache.directory, read_only=True)
            if cache.directory.exists() and not cache.directory.is_dir():
                why = "it is a file, not a directory"
            else:
                why = f"it cannot be used ({cause})"
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
                "`pytest_graphnetz.runner.cache.make_key` (a key must never name a path)"
            )
        return self.directory / f"{key}.json"

    def get(self, key: str, check: Check | None = None,
            valid: Callable[[Any], bool] | None = None) -> History | None:
        """The cached History of ``key``, or None: missing, stale, or unusable (warned and
        deleted).

        Unusable: unreadable (not UTF-8, not JSON, nested too deep, truncated), another schema,
        version or key, values that are not numbers, a history ``check`` rejects (it returns
        the problem, e.g. the wrong number of epochs for the triple), or values that do not
        match the entry's digest (edited by hand or by a tool). Stale: no digest (an entry
        written before digests), or ``valid`` (given) rejects what each of the entry's results
        read (``put(..., depends=...)``; a result without it is stale too); the entry stays
        until a fresh run adds to it.
        """
        path = self.path(key)
        try:
            # Regular files of bounded size only: a FIFO or a link to /dev/zero planted in a
            # shared cache must not block the run or exhaust its memory.
            entry = read_json(path, what="cache entry")
            problem = _entry_problem(entry, key)
            history = None
            if problem is None:
                variants = [entry, *entry.get("earlier", ())]
                if any("digest" not in v for v in variants):
                    return None   # written before digests: recomputed, without a warning
                chosen = variants[0] if valid is None else next(
                    (v for v in variants if v.get("depends") is not None
                     and valid(v["depends"])), None)
                if chosen is None:
                    return None
                history = history_from_json(chosen["history"])
                problem = None if check is None else check(history)
                if problem is None:
                    problem = next((_DIGEST_PROBLEM for v in variants
                                    if v["digest"] != _digest(key, v)), None)
        except FileNotFoundError:
            return None
        except (OSError, ValueError, RecursionError, KeyError, TypeError) as exc:
            # ValueError covers UnicodeDecodeError, JSONDecodeError and a malformed history.
            problem = f"{type(exc).__name__}: {str(exc)[:200]}"
        if problem is None:
            return history
        warnings.warn(f"discarding corrupt graphnetz cache entry {path} ({problem}); it will be "
                      "recomputed", CacheWarning, stacklevel=2)
        self.discard(key)
        return None

    def has(self, key: str) -> bool:
        """Whether ``key`` has an entry here: on disk, or fetched from the remote tier (then
        copied here, where :meth:`get` checks it like any other entry)."""
        path = self.path(key)
        if path.exists():
            return True
        if self.remote is None or self.read_only:
            return False
        entry = self.remote.fetch(key)
        if entry is None:
            return False
        try:
            write_text_atomic(path, dumps(entry))
        except OSError:
            return False
        return True

    def discard(self, key: str) -> None:
        """Delete ``key``'s entry (every result it keeps), when there is one and the cache can
        be written."""
        if not self.read_only:
            _remove(self.path(key))

    def put(self, key: str, history: History, fields: Mapping[str, Any] | None = None,
            depends: Any = None) -> Path:
        """Write ``history`` under ``key`` atomically, with its digest; ``fields`` are stored
        for inspection, ``depends`` (JSON: what the run read) for :meth:`get`'s ``valid``.
        With ``depends``, the entry's earlier results that read something else are kept (the
        last :data:`VARIANTS`), so a reverted input hits again."""
        path = self.path(key)
        variant: dict[str, Any] = {"history": history_to_json(history)}  # the report's form
        if depends is not None:
            variant["depends"] = json.loads(canonical_json(depends))
        variant = json.loads(dumps(variant))   # as get reads it back, so the digests agree
        variant["digest"] = _digest(key, variant)
        earlier = [] if depends is None else [
            v for v in self._variants(key) if v.get("depends") != variant["depends"]]
        entry = {"schema": CACHE_SCHEMA, "version": CACHE_VERSION, "key": key, **variant}
        if earlier:
            entry["earlier"] = earlier[:VARIANTS - 1]
        if fields is not None:
            entry["fields"] = json.loads(canonical_json(fields))
        write_text_atomic(path, dumps(entry))
        return path

    def _variants(self, key: str) -> list[dict[str, Any]]:
        """The results ``key``'s entry keeps now, newest first, each with what its run read and
        its digest ([] when there is no usable entry)."""
        try:
            entry = read_json(self.path(key), what="cache entry")
        except (OSError, ValueError):
            return []
        if _entry_problem(entry, key) is not None:
            return []
        variants = [entry, *entry.get("earlier", ())]
        return [{k: v[k] for k in ("history", "depends", "digest")}
                for v in variants if isinstance(v, dict) and "depends" in v and "digest" in v
                and isinstance(v.get("history"), dict) and v["digest"] == _digest(key, v)]

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
        hit = self.get(key, check, valid) if self.has(key) else None
        if hit is not None:
            return hit, True
        if self.read_only:   # no lock can be taken, nothing is saved
            return compute()[0], False
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
            else:
                if self.remote is not None:
                    self.remote.publish(key, read_json(path, what="cache entry"))
            return history, False

    def record_path(self, key: str) -> Path:
        """The file of :meth:`put_record`'s record ``key``: under ``loads/``, apart from the
        triple entries (a key that is not a sha256 hex digest is refused)."""
        return self.directory / "loads" / self.path(key).name

    def get_record(self, key: str) -> dict[str, Any] | None:
        """The JSON object :meth:`put_record` stored under ``key``, or None: missing, written
        before records carried a digest, or unusable (not a regular file, over 64 MiB, not
        JSON, another schema, version or key, content that does not match its digest), then
        warned about and deleted. A record only saves work (what a task's loader returned,
        what building a model gave the key, the numeric settings of a fresh torch), so losing
        one costs a recomputation, never a result.
        """
        path = self.record_path(key)
        try:
            entry = read_json(path, limit=_MAX_RECORD_BYTES, what="cache record")
            if not isinstance(entry, dict) or entry.get("schema") != RECORD_SCHEMA \
                    or entry.get("version") != CACHE_VERSION or entry.get("key") != key \
                    or not isinstance(entry.get("record"), dict):
                raise ValueError(f"not a {RECORD_SCHEMA} record of this key and version")
            if "digest" not in entry:
                return None   # written before digests: recomputed, without a warning
            if entry["digest"] != _record_digest(key, entry["record"]):
                raise ValueError(_DIGEST_PROBLEM)
            return entry["record"]
        except FileNotFoundError:
            return None
        except (OSError, ValueError) as exc:
            self.discard_record(key, f"{type(exc).__name__}: {str(exc)[:200]}")
            return None

    def discard_record(self, key: str, problem: str) -> None:
        """Warn that record ``key`` is unusable (``problem``) and delete it, so it is rebuilt."""
        path = self.record_path(key)
        warnings.warn(f"discarding unusable graphnetz cache record {path} ({problem}); it will "
                      "be recomputed", CacheWarning, stacklevel=3)
        if not self.read_only:
            _remove(path)

    def put_record(self, key: str, record: Mapping[str, Any]) -> None:
        """Store the JSON object ``record`` under ``key`` atomically; a write that fails (a
        read-only or full cache) is skipped silently: :meth:`get_or_compute` warns about it."""
        if self.read_only:
            return
        path = self.record_path(key)
        body = json.loads(canonical_json(record))
        entry = {"schema": RECORD_SCHEMA, "version": CACHE_VERSION, "key": key, "record": body,
                 "digest": _record_digest(key, body)}
        with contextlib.suppress(OSError):
            path.parent.mkdir(exist_ok=True)
            write_text_atomic(path, dumps(entry))


class CacheWarning(UserWarning):
    """A cache entry or directory that could not be used (the run goes on without it)."""


_DIGEST_PROBLEM = ("its values do not match its digest: edited or damaged after it was "
                   "written")


def _remove(path: Path) -> None:
    """Delete what is at an entry's or record's ``path``: a file, a link, a FIFO, or a
    directory that took the name (its contents are no one's but the cache's), so a damaged
    entry is replaced by the next write instead of warned about on every run."""
    with contextlib.suppress(OSError):
        if path.is_dir() and not path.is_symlink():
            shutil.rmtree(path)
        else:
            path.unlink()


def _digest(key: str, variant: Mapping[str, Any]) -> str:
    """sha256 binding one result of an entry (its history and what its run read) to ``key``."""
    body = {"key": key, "history": variant.get("history"), "depends": variant.get("depends")}
    return hashlib.sha256(canonical_json(body).encode()).hexdigest()


def _record_digest(key: str, record: Any) -> str:
    """sha256 binding a record's content to its ``key``."""
    return hashlib.sha256(canonical_json({"key": key, "record": record}).encode()).hexdigest()


def entry_problem(entry: Any, key: str) -> str | None:
    """What makes a decoded entry unusable for ``key``, its digests included (None: nothing);
    a remote object's entry is checked with it before it is copied into a local cache."""
    problem = _entry_problem(entry, key)
    if problem is not None:
        return problem
    variants = [entry, *entry.get("earlier", ())]
    if any(not isinstance(v.get("digest"), str) or v["digest"] != _digest(key, v)
           for v in variants):
        return _DIGEST_PROBLEM
    return None


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
    earlier = entry.get("earlier", [])
    if not isinstance(earlier, list) or not all(
            isinstance(v, dict) and isinstance(v.get("history"), dict) for v in earlier):
        return "earlier results that are not histories"
    return None
