"""A remote triple cache beside the local one: any fsspec URL (``s3://``, ``gs://``, ``file://``
on a shared mount; ``memory://`` for tests), read by default, written only when asked.

Each triple is one immutable object, ``<url>/triples/<key>.json``, written create-only: S3's
``If-None-Match: *`` (s3fs ``mode="create"``), an atomic hard link on a local or mounted
directory, an exists-check elsewhere. The first writer wins; a losing writer's result is the
same run (same key), so losing counts as a hit. An object holds the local cache's entry (with
its digest), its producer (host, CI run, device, library versions, time) and, when the team
gives a key (``$GRAPHNETZ_REMOTE_CACHE_KEY``, a CI secret), an HMAC-SHA256 over key, entry and
producer: readers holding the key then refuse an object without a valid one.

A remote hit is checked like a local one, then copied into the local cache
(:meth:`~pytest_graphnetz.runner.cache.TripleCache.has`), where the digest, the triple's checks
and the verify sample apply as to any entry. Every operation is bounded
(:data:`DEFAULT_TIMEOUT`): a remote that is down, slow, forbidden or full costs one warning
naming the URL and local training, never a verdict or a hang. docs/cache.md has the threat
model.

:class:`Store` is the small interface a backend implements (get, put-if-absent, list,
delete); :class:`FsspecStore` is the one shipped. fsspec is imported only here, when the
option is used (``pip install "pytest-graphnetz[remote]"``).
"""

from __future__ import annotations

import contextlib
import functools
import hashlib
import hmac
import os
import platform
import re
import threading
import time
import warnings
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import Any, Protocol, TypeVar

from pytest_graphnetz.report.codec import parse_json
from pytest_graphnetz.runner.cache import CacheWarning, canonical_json, entry_problem

KEY_ENV = "GRAPHNETZ_REMOTE_CACHE_KEY"
TIMEOUT_ENV = "GRAPHNETZ_REMOTE_CACHE_TIMEOUT"   # seconds per operation (default below)
OPTION = "--graphnetz-remote-cache"
INSTALL = 'pip install "pytest-graphnetz[remote]"'
OBJECT_SCHEMA = "pytest-graphnetz/remote-triple"
OBJECT_VERSION = 1
# Seconds one remote operation may take before the remote counts as down for the run: a cache
# object is a few hundred kB at most, so a healthy store answers in well under a second.
DEFAULT_TIMEOUT = 10.0
# Where a CI run names itself, first match wins.
CI_RUN_ENV = ("GITHUB_RUN_ID", "CI_PIPELINE_ID", "BUILDKITE_BUILD_ID", "CIRCLE_WORKFLOW_ID",
              "BUILD_ID")
_URL = re.compile(r"([a-z][a-z0-9+.-]*)://(.+)", re.IGNORECASE)
_KEY = re.compile(r"[0-9a-f]{64}")

T = TypeVar("T")


class RemoteCacheError(ValueError):
    """A remote cache URL that cannot be used (malformed, unknown protocol, missing package)."""


@dataclass(frozen=True)
class ObjectInfo:
    """One object of a store: its name (``<key>.json``), size in bytes, and modification time
    (seconds since the epoch; None where the store does not say)."""

    name: str
    size: int
    modified: float | None


class Store(Protocol):
    """Where remote objects live, by name (``<key>.json``); each call may raise ``OSError``."""

    def get(self, name: str) -> bytes | None:
        """The object's bytes, None when there is none."""

    def put_if_absent(self, name: str, data: bytes) -> bool:
        """Create the object; False when one already exists (it is left as it is)."""

    def list(self) -> list[ObjectInfo]:
        """Every object."""

    def delete(self, name: str) -> None:
        """Remove the object (none: nothing)."""


@dataclass(frozen=True)
class RemoteSettings:
    """What a run's triples need to open the remote cache, picklable for workers."""

    url: str
    write: bool = False
    timeout: float = DEFAULT_TIMEOUT
    # The team key (HMAC), read where the run starts; not shown in a repr.
    team_key: str | None = field(default=None, repr=False)

    @classmethod
    def from_environment(cls, url: str, *, write: bool = False) -> RemoteSettings:
        """Settings for ``url`` (checked: :func:`check_url`) with the team key of
        ``$GRAPHNETZ_REMOTE_CACHE_KEY`` and the timeout of ``$GRAPHNETZ_REMOTE_CACHE_TIMEOUT``
        (seconds) when set."""
        given = os.environ.get(TIMEOUT_ENV)
        try:
            timeout = DEFAULT_TIMEOUT if not given else float(given)
        except ValueError:
            raise RemoteCacheError(f"${TIMEOUT_ENV} must be a number of seconds, got "
                                   f"{given!r}") from None
        if not 0 < timeout < float("inf"):
            raise RemoteCacheError(f"${TIMEOUT_ENV} must be > 0 seconds, got {given!r}")
        return cls(check_url(url), write=write, timeout=timeout,
                   team_key=os.environ.get(KEY_ENV) or None)


def check_url(url: str, *, option: str = f"`{OPTION}`") -> str:
    """``url`` stripped, when fsspec can open it: a ``protocol://path`` URL whose protocol
    fsspec knows and whose package is installed. Otherwise :class:`RemoteCacheError` naming
    ``option``, the value and the fix. Imports fsspec (and the protocol's package)."""
    text = str(url).strip()
    match = _URL.fullmatch(text)
    if match is None or not match.group(2).strip("/"):
        raise RemoteCacheError(
            f"{option}: {url!r} is not a URL with a location: write PROTOCOL://PATH, e.g. "
            "s3://team-bucket/graphnetz, gs://team-bucket/graphnetz or "
            "file:///mnt/shared/graphnetz")
    try:
        import fsspec
    except ImportError:
        raise RemoteCacheError(f"{option}={text}: fsspec is not installed; {INSTALL}") from None
    protocol = match.group(1).lower()
    try:
        fsspec.get_filesystem_class(protocol)
    except ValueError:
        raise RemoteCacheError(
            f"{option}={text}: fsspec knows no protocol {protocol!r}; use one of s3, gs, "
            "file (a shared mount), or another fsspec protocol") from None
    except ImportError as exc:
        raise RemoteCacheError(
            f"{option}={text}: the package for {protocol}:// is missing ({exc}); {INSTALL} "
            "(s3fs; `pip install gcsfs` for gs://)") from None
    if protocol in ("s3", "s3a") and _no_s3_credentials():
        raise RemoteCacheError(
            f"{option}={text}: no AWS credentials found (environment, ~/.aws profile, "
            "instance role); set AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY (a CI secret) or "
            "AWS_PROFILE, or FSSPEC_S3_ANON=true for a public bucket")
    return text


def _no_s3_credentials() -> bool:
    """Whether botocore finds no credentials where s3fs will look (a bucket read anonymously,
    ``FSSPEC_S3_ANON=true``, needs none)."""
    import fsspec.config

    if str(fsspec.config.conf.get("s3", {}).get("anon", "")).lower() in ("true", "1"):
        return False
    try:
        import botocore.session
    except ImportError:
        return False   # s3fs brings botocore: without it the protocol check above failed
    return botocore.session.get_session().get_credentials() is None


class FsspecStore:
    """A :class:`Store` on any fsspec URL; objects under ``<url>/triples/``."""

    def __init__(self, url: str, *, timeout: float = DEFAULT_TIMEOUT) -> None:
        import fsspec.core

        protocol = _URL.fullmatch(url).group(1).lower()  # type: ignore[union-attr]
        options: dict[str, Any] = {}
        if protocol in ("s3", "s3a"):
            # botocore's own timeouts and one retry: a dead endpoint fails in seconds.
            options["config_kwargs"] = {"connect_timeout": timeout, "read_timeout": timeout,
                                        "retries": {"max_attempts": 2}}
            # One GET per object: s3fs otherwise asks each object's size first (a HEAD) to
            # split large reads, and cache objects are small.
            options["max_concurrency"] = 1
        self.fs, root = fsspec.core.url_to_fs(url, **options)
        self.root = root.rstrip("/") + "/triples"
        self.local = protocol in ("file", "local")

    def _path(self, name: str) -> str:
        return f"{self.root}/{name}"

    def get(self, name: str) -> bytes | None:
        try:
            return bytes(self.fs.cat_file(self._path(name)))
        except FileNotFoundError:
            return None

    def put_if_absent(self, name: str, data: bytes) -> bool:
        path = self._path(name)
        if self.local:
            return _link_new_file(path, data)
        try:
            self.fs.pipe_file(path, data, mode="create")
        except FileExistsError:
            return False
        return True

    def list(self) -> list[ObjectInfo]:
        try:
            found = self.fs.ls(self.root, detail=True)
        except FileNotFoundError:
            return []
        infos = []
        for item in found:
            name = str(item["name"]).rstrip("/").rpartition("/")[2]
            if item.get("type") == "directory" or not name.endswith(".json"):
                continue
            infos.append(ObjectInfo(name, int(item.get("size") or 0), _modified(item)))
        return infos

    def delete(self, name: str) -> None:
        with contextlib.suppress(FileNotFoundError):
            self.fs.rm_file(self._path(name))


def _link_new_file(path: str, data: bytes) -> bool:
    """Create ``path`` holding ``data`` all at once, or not at all: written to a temporary file
    beside it, then hard-linked to its name (which fails when the name exists), so a reader on
    the mount never sees a half-written object and two writers never replace each other."""
    import tempfile

    directory = os.path.dirname(path)
    os.makedirs(directory, exist_ok=True)
    fd, temp = tempfile.mkstemp(dir=directory, prefix=".put.", suffix=".tmp")
    try:
        with os.fdopen(fd, "wb") as fh:
            fh.write(data)
        os.chmod(temp, 0o644)   # a shared mount: every user of the team reads it
        try:
            os.link(temp, path)
        except FileExistsError:
            return False
        return True
    finally:
        with contextlib.suppress(OSError):
            os.unlink(temp)


def _modified(item: dict[str, Any]) -> float | None:
    """An fsspec listing's modification time as seconds since the epoch."""
    from datetime import datetime

    for name in ("mtime", "LastModified", "updated", "created"):
        value = item.get(name)
        if isinstance(value, (int, float)):
            return float(value)
        if isinstance(value, datetime):
            return value.timestamp()
        if isinstance(value, str):
            with contextlib.suppress(ValueError):
                return datetime.fromisoformat(value.replace("Z", "+00:00")).timestamp()
    return None


def producer(fields: dict[str, Any] | None) -> dict[str, Any]:
    """Who wrote an object: the host, the CI run when one is set, the device and library
    versions of the triple's key (``fields``), and when."""
    fields = fields or {}
    ci = next(((name, os.environ[name]) for name in CI_RUN_ENV if os.environ.get(name)), None)
    device = fields.get("device")
    return {"host": platform.node(), "ci_run": None if ci is None else f"{ci[0]}={ci[1]}",
            "device": device.get("name") if isinstance(device, dict) else None,
            "versions": fields.get("versions"),
            "written": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())}


def seal(key: str, entry: dict[str, Any], made_by: dict[str, Any], team_key: str | None
         ) -> dict[str, Any]:
    """The remote object of ``key``'s local ``entry``: authenticated with ``team_key``."""
    body = {"schema": OBJECT_SCHEMA, "version": OBJECT_VERSION, "key": key, "entry": entry,
            "producer": made_by}
    return {**body, "mac": None if team_key is None else _mac(team_key, body)}


def unseal(key: str, data: bytes, team_key: str | None) -> tuple[dict[str, Any] | None, str]:
    """``(entry, "")`` from the bytes of ``key``'s object, or ``(None, why)`` when it cannot
    stand for ``key``: not JSON, another schema, version or key, an entry whose values do not
    match its digest, or (with ``team_key``) a missing or wrong HMAC."""
    try:
        obj = parse_json(data.decode("utf-8"), f"{key}.json")
    except (ValueError, RecursionError) as exc:
        return None, f"not a JSON object ({type(exc).__name__}: truncated or damaged?)"
    if not isinstance(obj, dict) or obj.get("schema") != OBJECT_SCHEMA \
            or obj.get("version") != OBJECT_VERSION:
        return None, f"not a {OBJECT_SCHEMA} object of version {OBJECT_VERSION}"
    if obj.get("key") != key:
        return None, "it belongs to another key"
    if team_key is not None:
        body = {name: obj.get(name) for name in ("schema", "version", "key", "entry",
                                                 "producer")}
        if not isinstance(obj.get("mac"), str):
            return None, (f"it is not authenticated, and this run holds a team key (${KEY_ENV})"
                          ": only writers holding it are trusted")
        if not hmac.compare_digest(obj["mac"], _mac(team_key, body)):
            return None, "its HMAC does not match: written without the team key, or edited"
    problem = entry_problem(obj.get("entry"), key)
    if problem is not None:
        return None, problem
    return obj["entry"], ""


def _mac(team_key: str, body: dict[str, Any]) -> str:
    return hmac.new(team_key.encode(), canonical_json(body).encode(), hashlib.sha256).hexdigest()


class RemoteCache:
    """The remote tier of a :class:`~pytest_graphnetz.runner.cache.TripleCache`: fetches
    verified entries, publishes new ones, and after the first failure stays out of the run's
    way (one warning naming the URL)."""

    def __init__(self, settings: RemoteSettings, store: Store | None = None) -> None:
        self.settings = settings
        self._store = store
        self.down: str | None = None          # why the remote is skipped for the rest of the run
        self.read_only: str | None = None     # why nothing more is written
        self.unreadable: str | None = None    # why a read was refused (warned about once)

    @property
    def store(self) -> Store:
        if self._store is None:
            self._store = FsspecStore(self.settings.url, timeout=self.settings.timeout)
        return self._store

    def fetch(self, key: str) -> dict[str, Any] | None:
        """The local cache entry of ``key`` from the remote object, verified (:func:`unseal`);
        None: no object, an unusable one (warned about, never served), or the remote is
        down."""
        data = self._bounded(f"reading {key}.json", lambda: self.store.get(f"{key}.json"))
        if data is None:
            return None
        entry, why = unseal(key, data, self.settings.team_key)
        if entry is None:
            warnings.warn(
                f"graphnetz remote cache object {self.settings.url}/triples/{key}.json is not "
                f"served ({why}); the triple is trained here. A maintainer removes it with "
                f"`graphnetz cache purge --remote {self.settings.url} --key {key} --yes`",
                CacheWarning, stacklevel=2)
            return None
        return entry

    def publish(self, key: str, entry: dict[str, Any]) -> None:
        """Write ``key``'s ``entry`` create-only when this run writes (``write``); an object
        already there (another writer won) is left alone."""
        if not self.settings.write or self.read_only is not None:
            return
        fields = entry.get("fields") if isinstance(entry.get("fields"), dict) else None
        data = dumps_object(seal(key, entry, producer(fields), self.settings.team_key))
        self._bounded(f"writing {key}.json", lambda: self.store.put_if_absent(f"{key}.json", data))

    def _bounded(self, what: str, operation: Callable[[], T]) -> T | None:
        """``operation()`` in a daemon thread, waited for at most ``timeout`` seconds; None
        when it failed or ran out of time (the remote is then down for this run, or, for a
        write refused or out of space, read-only)."""
        if self.down is not None:
            return None
        box: dict[str, Any] = {}

        def target() -> None:
            try:
                box["value"] = operation()
            except BaseException as exc:  # noqa: BLE001 - reported on the calling thread
                box["error"] = exc

        worker = threading.Thread(target=target, name="graphnetz-remote-cache", daemon=True)
        worker.start()
        worker.join(self.settings.timeout)
        if worker.is_alive():
            self._give_up(f"{what} took longer than {self.settings.timeout:g} s")
            return None
        error = box.get("error")
        if error is None:
            return box.get("value")
        cause = f"{type(error).__name__}: {str(error)[:300]}"
        if what.startswith("reading") and isinstance(error, PermissionError):
            # S3 answers 403, not 404, for a missing object to a reader without ListBucket.
            if self.unreadable is None:
                self.unreadable = cause
                warnings.warn(f"graphnetz remote cache {self.settings.url} refused a read "
                              f"({cause}); such objects count as missing (a reader needs "
                              "s3:GetObject and s3:ListBucket, or the store's equivalent)",
                              CacheWarning, stacklevel=3)
            return None
        if what.startswith("writing") and isinstance(error, (PermissionError, OSError)) \
                and _refused_write(error):
            self.read_only = cause
            warnings.warn(f"graphnetz remote cache {self.settings.url} cannot be written "
                          f"({cause}); it is read, and nothing more is written this run",
                          CacheWarning, stacklevel=3)
            return None
        self._give_up(f"{what} failed ({cause})")
        return None

    def _give_up(self, why: str) -> None:
        self.down = why
        warnings.warn(f"graphnetz remote cache {self.settings.url} is not used for the rest of "
                      f"this run: {why}; triples it would have served are trained (and cached) "
                      "here", CacheWarning, stacklevel=4)


def _refused_write(error: BaseException) -> bool:
    """Whether a failed write means "not allowed here" or "full", not "unreachable"."""
    import errno

    if isinstance(error, PermissionError):
        return True
    return isinstance(error, OSError) and error.errno in (errno.ENOSPC, errno.EDQUOT,
                                                          errno.EROFS, errno.EACCES)


def dumps_object(obj: dict[str, Any]) -> bytes:
    """An object's bytes: compact, sorted JSON (NaN kept, as the local cache keeps it)."""
    return canonical_json(obj).encode()


@functools.cache
def open_remote(settings: RemoteSettings) -> RemoteCache:
    """The remote cache of ``settings``, one per process: whether it is down (and the one
    warning that said so) holds for every triple this process runs."""
    return RemoteCache(settings)


def object_key(name: str) -> str | None:
    """The triple key an object name (``<key>.json``) stands for; None for any other name."""
    stem = name[:-5] if name.endswith(".json") else ""
    return stem if _KEY.fullmatch(stem) else None


def iter_objects(store: Store) -> Iterator[tuple[ObjectInfo, dict[str, Any] | None]]:
    """Every triple object of ``store`` with its decoded JSON (None: unreadable)."""
    for info in store.list():
        if object_key(info.name) is None:
            continue
        data = store.get(info.name)
        try:
            obj = None if data is None else parse_json(data.decode("utf-8"), info.name)
        except (ValueError, RecursionError):
            obj = None
        yield info, obj if isinstance(obj, dict) else None


__all__ = ["DEFAULT_TIMEOUT", "INSTALL", "KEY_ENV", "TIMEOUT_ENV", "FsspecStore", "ObjectInfo",
           "RemoteCache", "RemoteCacheError", "RemoteSettings", "Store", "check_url",
           "iter_objects", "object_key", "open_remote", "producer", "seal", "unseal"]
