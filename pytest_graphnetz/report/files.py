"""Atomic files: what every writer of this package uses, so no reader sees half a file.

:func:`atomic_file` writes to a temp file and renames it over the target; a temp file left by a
killed write is swept by the next write (:func:`remove_stale_temp_files`); a file under version
control is written through an :func:`ignored_temp_dir` (swept by :func:`remove_stale_temp_dirs`).
:func:`read_regular_file` refuses what is not a bounded regular file (a FIFO, a device, a giant).
:func:`file_lock` is the one lock convention: the lock of ``path`` is the file ``.<name>.lock``
beside it, or in a directory git ignores for files under version control (baselines).
Shared by the report, the baselines, the triple cache and the task loaders; stdlib only
(filelock is imported when a lock is taken).
"""

from __future__ import annotations

import contextlib
import errno
import functools
import os
import shutil
import stat
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path
from typing import IO

try:
    import fcntl
except ImportError:  # Windows: temp files are swept by age alone
    fcntl = None  # type: ignore[assignment]

# Larger than any report or cache entry this package writes (a 600-cell report with per-epoch
# histories is a few MB); a file beyond it is not read, so a planted giant cannot exhaust memory.
MAX_READ_BYTES = 1 << 30


class NotARegularFileError(OSError):
    """A path that is not a regular file (a FIFO, a device, a symlink to one) or too large."""


def read_regular_file(path: Path, limit: int = MAX_READ_BYTES) -> bytes:
    """The bytes of ``path`` when it is a regular file of at most ``limit`` bytes, else
    :class:`NotARegularFileError`: a FIFO planted where a file is expected would block a read,
    a symlink to /dev/zero would never end. Opened non-blocking and checked on the open file
    descriptor, so a swap between check and read changes nothing."""
    fd = os.open(path, os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_BINARY", 0))
    try:
        mode = os.fstat(fd)
        if stat.S_ISDIR(mode.st_mode):
            raise IsADirectoryError(errno.EISDIR, "Is a directory", str(path))
        if not stat.S_ISREG(mode.st_mode):
            raise NotARegularFileError(f"{path} is not a regular file (a FIFO, a device or a "
                                       "link to one); not read")
        if mode.st_size > limit:
            raise NotARegularFileError(f"{path} holds {mode.st_size} bytes, more than the "
                                       f"{limit} any file of this package has; not read")
        with os.fdopen(os.dup(fd), "rb") as fh:
            data = fh.read(mode.st_size)  # (read(limit) would allocate all of limit at once)
            while len(data) <= limit:  # a file that grows after the check
                more = fh.read(1 << 20)
                if not more:
                    break
                data += more
    finally:
        os.close(fd)
    if len(data) > limit:
        raise NotARegularFileError(f"{path} grew beyond {limit} bytes while read; not read")
    return data


@contextlib.contextmanager
def atomic_file(path: Path, *, binary: bool = False, suffix: str = ".tmp",
                temp_dir: Path | None = None) -> Iterator[IO]:
    """A file handle whose content replaces ``path`` only if the ``with`` block succeeds.

    Written to a temp file in the same directory (or in ``temp_dir``, which must be on the
    same file system), flushed to disk, then ``os.replace``d: a reader never sees a
    half-written file; on any error the old file is left untouched and the temp file is
    removed.
    """
    path.parent.mkdir(parents=True, exist_ok=True)
    directory = path.parent if temp_dir is None else temp_dir
    directory.mkdir(parents=True, exist_ok=True)
    remove_stale_temp_files(directory, target=path.name, suffix=suffix)
    fd, tmp = tempfile.mkstemp(dir=directory, prefix=f".{path.name}.", suffix=suffix)
    _hold(fd)  # while this process writes: a sweep tells a live write from a killed one
    try:
        with os.fdopen(fd, "wb" if binary else "w", encoding=None if binary else "utf-8") as fh:
            yield fh
            fh.flush()
            os.fsync(fh.fileno())
        # mkstemp creates the file 0600; give it the mode a plain open() would (umask applied),
        # so a cache shared between users or CI jobs stays readable.
        os.chmod(tmp, 0o666 & ~_umask())
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


# A temp file is written in one go and renamed at once, so one this old was left by a process
# killed mid-write (kill -9, a power cut): no live writer can still own it.
STALE_TEMP_SECONDS = 15 * 60
# Where locks work (POSIX flock), a writer holds one on its temp file while it writes, and the
# kernel drops it when the writer dies: a temp file this old whose lock is free is a leftover.
# (The grace covers the instants between mkstemp and the lock, and between close and rename.)
UNLOCKED_TEMP_SECONDS = 60


def remove_stale_temp_files(directory: Path, *, target: str | None = None,
                            suffix: str = ".tmp") -> list[Path]:
    """Delete the temp files :func:`atomic_file` left in ``directory`` (of ``target`` only,
    when given): those older than :data:`UNLOCKED_TEMP_SECONDS` that no live process holds
    locked (its writer was killed), and any older than :data:`STALE_TEMP_SECONDS`; returns
    those deleted. A write in progress in another process (a pytest-xdist worker) is kept."""
    pattern = f".{target}.*{suffix}" if target is not None else f".*{suffix}"
    now = time.time()
    removed = []
    for leftover in Path(directory).glob(pattern):
        with contextlib.suppress(OSError):  # gone already, or not ours to delete
            if not leftover.is_file():
                continue
            age = now - leftover.stat().st_mtime
            if age > STALE_TEMP_SECONDS or (age > UNLOCKED_TEMP_SECONDS
                                            and _lock_is_free(leftover)):
                leftover.unlink()
                removed.append(leftover)
    return removed


@contextlib.contextmanager
def ignored_temp_dir(directory: Path, *, prefix: str) -> Iterator[Path]:
    """A new ``<directory>/<prefix><random>`` holding a .gitignore that ignores all of it, for
    the temp file of a write to a file under version control (a write killed before its rename
    leaves a complete copy that `git add -A` must not commit); removed when the block ends."""
    directory.mkdir(parents=True, exist_ok=True)
    temp = Path(tempfile.mkdtemp(prefix=prefix, dir=directory))
    try:
        (temp / ".gitignore").write_text("# pytest-graphnetz: temp files of writes\n*\n")
        yield temp
    finally:
        shutil.rmtree(temp, ignore_errors=True)


def remove_stale_temp_dirs(directory: Path, *, prefix: str) -> None:
    """Remove what killed writes left of :func:`ignored_temp_dir` in ``directory``: their temp
    files once stale (:func:`remove_stale_temp_files`), then a directory once nothing but its
    .gitignore is left and that is :data:`UNLOCKED_TEMP_SECONDS` old (a live write's is
    younger, or holds its locked temp file)."""
    for temp in Path(directory).glob(f"{prefix}*"):
        if temp.is_symlink() or not temp.is_dir():
            continue
        remove_stale_temp_files(temp)
        with contextlib.suppress(OSError):   # gone already, another process's, read-only
            left = {p.name for p in temp.iterdir()}
            made = (temp / ".gitignore" if left else temp).stat().st_mtime
            if left <= {".gitignore"} and time.time() - made > UNLOCKED_TEMP_SECONDS:
                shutil.rmtree(temp)


def _hold(fd: int) -> None:
    """Lock the temp file open on ``fd`` until it is closed (or its process dies)."""
    if fcntl is not None:
        with contextlib.suppress(OSError):  # a file system without locks: the age rule only
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)


def _lock_is_free(path: Path) -> bool:
    """Whether no process holds ``path``'s write lock (False where locks do not work)."""
    if fcntl is None:
        return False
    fd = os.open(path, os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_NOFOLLOW", 0))
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except OSError:  # BlockingIOError: a live writer holds it
        return False
    finally:
        os.close(fd)   # (releases the lock just taken)
    return True


def write_text_atomic(path: Path, text: str, *, temp_dir: Path | None = None) -> None:
    """Write ``text`` to ``path`` through :func:`atomic_file`."""
    with atomic_file(path, temp_dir=temp_dir) as fh:
        fh.write(text)


@functools.cache
def _umask() -> int:
    # os.umask can only be read by setting it: do that once per process, not per write.
    mask = os.umask(0)
    os.umask(mask)
    return mask


@contextlib.contextmanager
def file_lock(path: Path, *, remove: bool = False) -> Iterator[None]:
    """Hold the inter-process lock of ``path`` (pytest-xdist workers, processes sharing a
    directory) while the ``with`` block runs; blocks while another process holds it.

    ``remove``: delete the lock file before releasing it, so locks do not pile up; a process
    still waiting on the deleted file notices and retries on a fresh one (filelock).
    """
    from filelock import FileLock

    lock = path.parent / f".{path.name}.lock"
    lock.parent.mkdir(parents=True, exist_ok=True)
    with FileLock(str(lock)):
        try:
            yield
        finally:
            if remove:
                with contextlib.suppress(OSError):
                    lock.unlink()
