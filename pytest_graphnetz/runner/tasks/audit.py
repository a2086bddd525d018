"""The catalogue auditor: downloads that are verified, and dataset files that never stay corrupt.

A dataset cache that keeps a half-written download fails identically on every later run. So:

- :func:`download` writes to a temporary file and renames it into place only when the byte
  count matches the server's ``Content-Length`` (a server that sends none: only when a second
  download gives the same bytes); it records each file's size and sha256 in a
  manifest (``graphnetz-manifest.json`` beside it). :func:`verify` re-checks a file against it.
- :func:`audited` runs a build step (parse raw files, process, load); when it fails the way a
  damaged file fails (truncated pickle or archive, size or checksum mismatch), it clears the
  files the step reads and retries, a bounded number of times, then raises
  :class:`CorruptDatasetError` naming the directory.
- An unreachable source raises :class:`DatasetUnavailableError`, whose message is one line
  naming the URL and the directory to pre-fill by hand on an offline machine.
"""

from __future__ import annotations

import hashlib
import json
import pickle
import shutil
import zipfile
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import TypeVar

from pytest_graphnetz.report.codec import read_json
from pytest_graphnetz.report.files import atomic_file, write_text_atomic
from pytest_graphnetz.runner.fingerprint import file_sha256

T = TypeVar("T")

MANIFEST = "graphnetz-manifest.json"
DEFAULT_ATTEMPTS = 3


class DatasetUnavailableError(OSError):
    """The dataset's source cannot be reached (offline machine, wrong URL, HTTP error)."""


class CorruptDatasetError(RuntimeError):
    """A dataset file that is damaged: truncated download, checksum mismatch, unreadable."""


# What a damaged file raises when parsed: a truncated pickle, zip (torch.save) or stream.
# A RuntimeError is included because torch.load reports a truncated archive with one.
CORRUPTION_ERRORS: tuple[type[BaseException], ...] = (
    CorruptDatasetError, pickle.UnpicklingError, EOFError, zipfile.BadZipFile, RuntimeError,
)


def _manifest(folder: Path) -> dict[str, dict]:
    try:
        return read_json(folder / MANIFEST, what="dataset manifest")
    except (OSError, ValueError):
        return {}  # no manifest (files pre-filled by hand) or a damaged one: nothing to check


def _record(path: Path, size: int, digest: str) -> None:
    manifest = _manifest(path.parent)
    manifest[path.name] = {"size": size, "sha256": digest}
    write_text_atomic(path.parent / MANIFEST, json.dumps(manifest, indent=2, sort_keys=True))


def verify(path: Path) -> bool:
    """Whether ``path`` exists and matches its manifest entry (size, then sha256).

    A file without an entry (put there by hand) counts as intact here; parsing it is the
    remaining check (see :func:`audited`).
    """
    if not path.is_file():
        return False
    entry = _manifest(path.parent).get(path.name)
    if entry is None:
        return True
    return path.stat().st_size == entry["size"] and file_sha256(path) == entry["sha256"]


def download(url: str, path: Path, *, attempts: int = DEFAULT_ATTEMPTS, timeout: float = 60.0,
             fill_hint: str = "") -> Path:
    """Fetch ``url`` to ``path`` atomically, retrying a short body up to ``attempts`` times.

    ``http(s)://`` and ``file://`` URLs work. A body shorter than the announced
    ``Content-Length`` is discarded and fetched again; after ``attempts`` tries it raises
    :class:`CorruptDatasetError`. An unreachable source raises :class:`DatasetUnavailableError`
    at once, with a one-line message ending in ``fill_hint``.
    """
    return audited(lambda: _fetch(url, path, timeout=timeout, fill_hint=fill_hint),
                   clear_on_failure=lambda _: [], what=f"download of {url}", attempts=attempts)


def _fetch(url: str, path: Path, *, timeout: float, fill_hint: str) -> Path:
    """One download attempt of :func:`download`."""
    import http.client
    import urllib.error

    with atomic_file(path, binary=True, suffix=".part") as out:
        try:
            expected, size, digest = _stream(url, timeout, out.write)
            if expected is None:
                # No length to check (and no chunked encoding, whose cut http.client detects):
                # a body cut short looks complete. Trust it only when a second download of
                # the same URL gives the same bytes.
                _, again, again_digest = _stream(url, timeout, lambda _: None)
                if (again, again_digest) != (size, digest):
                    raise CorruptDatasetError(
                        f"{url}: the server announces no Content-Length and two downloads "
                        f"differ ({size} and {again} bytes): one was cut short")
        except http.client.IncompleteRead as exc:
            raise CorruptDatasetError(
                f"{url}: the download stopped after {len(exc.partial)} bytes "
                f"({exc.expected} more expected)") from None
        except (urllib.error.URLError, OSError) as exc:
            reason = getattr(exc, "reason", None) or exc
            hint = f"; {fill_hint}" if fill_hint else ""
            raise DatasetUnavailableError(
                f"cannot download {url} ({reason}){hint}") from None
        if expected is not None and size != int(expected):
            raise CorruptDatasetError(
                f"{url}: received {size} bytes but the server announced {expected}")
    _record(path, size, digest)
    return path


def _stream(url: str, timeout: float, write: Callable[[bytes], object]
            ) -> tuple[str | None, int, str]:
    """GET ``url``, handing each chunk to ``write``: ``(announced length, size, sha256)``; the
    announced length is None when the server did not say where the body ends."""
    import urllib.request

    with urllib.request.urlopen(url, timeout=timeout) as response:
        # A chunked body announces its end with its last chunk (http.client detects a cut).
        chunked = bool(getattr(response, "chunked", False))
        announced = response.headers.get("Content-Length")
        size = 0
        h = hashlib.sha256()
        for chunk in iter(lambda: response.read(1 << 20), b""):
            write(chunk)
            h.update(chunk)
            size += len(chunk)
    return (str(size) if chunked else announced), size, h.hexdigest()


def clear(paths: Iterable[Path]) -> None:
    """Delete files and directories (missing ones are fine)."""
    for p in paths:
        if p.is_dir():
            shutil.rmtree(p)
        else:
            p.unlink(missing_ok=True)


def audited(
    build: Callable[[], T],
    *,
    clear_on_failure: Callable[[BaseException], Iterable[Path]],
    what: str,
    attempts: int = DEFAULT_ATTEMPTS,
) -> T:
    """``build()``, retried after clearing damaged files, at most ``attempts`` times in all.

    A failure of a type in :data:`CORRUPTION_ERRORS` calls ``clear_on_failure(error)`` for
    the paths to delete (the step's inputs or outputs), deletes them and runs ``build`` again;
    it may re-raise the error to stop retrying. Any other error propagates at once, so does
    :class:`DatasetUnavailableError`. When every attempt fails, :class:`CorruptDatasetError`
    names ``what`` and the last error.
    """
    if attempts < 1:
        raise ValueError(f"`attempts` must be >= 1, got {attempts}")
    last: BaseException | None = None
    for _ in range(attempts):
        try:
            return build()
        except CORRUPTION_ERRORS as exc:
            last = exc
            clear(clear_on_failure(exc))
    raise CorruptDatasetError(
        f"{what}: still damaged after {attempts} attempts (each cleared and rebuilt); "
        f"last error: {type(last).__name__}: {last}"
    ) from last
