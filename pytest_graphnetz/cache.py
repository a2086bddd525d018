"""``TripleCache``: one JSON file per (task, model, seed) run, keyed by a content hash.

Safe under concurrency (pytest-xdist workers, two CI jobs sharing a directory): a per-key
``filelock.FileLock`` is held while a run checks the cache, trains and writes, so no triple is
trained twice; entries are written atomically (temp file + rename), so no half-written file is
ever read. A corrupt entry is discarded with a warning naming the file, and recomputed.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import warnings
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from .history import History
from .report import dumps, history_from_json, history_to_json, write_text_atomic

CACHE_SCHEMA = "pytest-graphnetz/triple"
CACHE_VERSION = 1
_KEY = re.compile(r"[0-9a-f]{64}")


def canonical_json(obj: Any) -> str:
    """Sorted-key, compact JSON; values JSON cannot hold are written as their ``repr``."""
    return json.dumps(obj, sort_keys=True, separators=(",", ":"), default=repr, allow_nan=True)


def make_key(fields: Mapping[str, Any]) -> str:
    """sha256 hex of the canonical JSON of ``fields`` (everything a run's result depends on)."""
    return hashlib.sha256(canonical_json(fields).encode()).hexdigest()


class TripleCache:
    """Histories on disk under ``directory``, one ``<key>.json`` per key from :func:`make_key`."""

    def __init__(self, directory: str | os.PathLike) -> None:
        self.directory = Path(directory)

    def path(self, key: str) -> Path:
        """The entry file of ``key``; a key that is not a sha256 hex digest is refused."""
        if not isinstance(key, str) or not _KEY.fullmatch(key):
            raise ValueError(
                f"cache key {key!r} is not a 64-character sha256 hex digest; build keys with "
                "`pytest_graphnetz.cache.make_key` (a key must never name a path)"
            )
        return self.directory / f"{key}.json"

    def get(self, key: str) -> History | None:
        """The cached History of ``key``, or None (missing, or corrupt: warned and deleted)."""
        path = self.path(key)
        try:
            text = path.read_text(encoding="utf-8")
        except FileNotFoundError:
            return None
        try:
            entry = json.loads(text)
            if entry.get("schema") != CACHE_SCHEMA or entry.get("key") != key:
                raise ValueError("wrong schema or key")
            return history_from_json(entry["history"])
        except (ValueError, KeyError, TypeError, AttributeError) as exc:
            warnings.warn(
                f"discarding corrupt graphnetz cache entry {path} ({exc}); it will be recomputed",
                stacklevel=2,
            )
            path.unlink(missing_ok=True)
            return None

    def put(self, key: str, history: History, fields: Mapping[str, Any] | None = None) -> Path:
        """Write ``history`` under ``key`` atomically; ``fields`` are stored for inspection."""
        path = self.path(key)
        entry = {"schema": CACHE_SCHEMA, "version": CACHE_VERSION, "key": key,
                 "history": history_to_json(history)}  # the report's exact, compact form
        if fields is not None:
            entry["fields"] = json.loads(canonical_json(fields))
        write_text_atomic(path, dumps(entry))
        return path

    @contextmanager
    def lock(self, key: str) -> Iterator[None]:
        """Hold ``key``'s inter-process lock (blocks while another process holds it)."""
        from filelock import FileLock

        path = self.path(key)
        path.parent.mkdir(parents=True, exist_ok=True)
        with FileLock(str(path) + ".lock"):
            yield

    def get_or_compute(
        self, key: str, compute: Callable[[], History], fields: Mapping[str, Any] | None = None
    ) -> tuple[History, bool]:
        """``(history, cached)``: the entry of ``key``, computing and storing it when absent.

        The lock is held across check, compute and write, so concurrent callers with the same
        key compute it once; the others wait and then read the stored entry.
        """
        with self.lock(key):
            hit = self.get(key)
            if hit is not None:
                return hit, True
            history = compute()
            try:
                self.put(key, history, fields)
            except OSError as exc:
                # A read-only or full cache directory costs a retrain next time, not this run.
                warnings.warn(f"could not write graphnetz cache entry {self.path(key)}: {exc}",
                              stacklevel=2)
            return history, False
