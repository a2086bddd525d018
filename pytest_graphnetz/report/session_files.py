"""The files a session writes besides baselines: checked at session start, written without a
traceback, and shown relative to the rootdir.

A passing run must stay a passing run whatever happens to its side outputs: a report dir or a
summary file the user named that cannot be written is a usage error before any test runs; the
step summary GitHub's runner names (``$GITHUB_STEP_SUMMARY``) is not the user's choice, so one
that cannot be written is one warning and is skipped; a write that fails at the end anyway
(a full disk) is a warning line, never a changed exit code.

Standard library only: the plugin calls this at configure time.
"""

from __future__ import annotations

import errno
import os
import stat
import tempfile
from collections.abc import Callable
from pathlib import Path


def shown(path: str | os.PathLike, root: Path | None) -> str:
    """``path`` relative to ``root`` when it lies inside it (messages stay short and the same
    on every CI runner), else (or with no ``root``) as it is."""
    if root is None:
        return str(path)
    try:
        return str(Path(path).relative_to(root))
    except ValueError:
        return str(path)


def _writable_dir(directory: Path, root: Path) -> str | None:
    """Why files cannot be created in ``directory`` (None: they can). Nothing is created: the
    nearest existing ancestor is probed with a real temp file, removed at once (permission
    bits say nothing for root, a read-only mount or a full quota)."""
    existing = directory
    while not existing.exists() and existing != existing.parent:
        existing = existing.parent
    if not existing.is_dir():
        return f"{shown(existing, root)} is a file, not a directory"
    try:
        fd, probe = tempfile.mkstemp(dir=existing, prefix=".graphnetz-probe.", suffix=".tmp")
        os.close(fd)
        os.unlink(probe)
    except OSError as exc:
        return (f"{shown(existing, root)} cannot be written ({type(exc).__name__}: "
                f"{exc.strerror or exc})")
    return None


def dir_problem(directory: Path, root: Path) -> str | None:
    """Why ``directory`` cannot take the session's reports (None: it can); paths in the
    answer are relative to ``root`` where they lie inside it."""
    return _writable_dir(directory, root)


def file_problem(path: Path, root: Path) -> str | None:
    """Why ``path`` cannot be written or appended to (None: it can). An existing file is
    opened for appending and left unchanged; a missing one is not created, only the
    directory it would go in is probed.

    What is at ``path`` is looked at, not followed: a symbolic link (dangling or not) is
    refused, so an output is never written through a link to somewhere else (a planted
    link to ``~/.bashrc``) nor gets a dangling link's target directories created; a FIFO, a
    device or a socket is refused, as opening one to write can block the session for good.
    """
    try:
        mode = os.lstat(path).st_mode
    except (FileNotFoundError, NotADirectoryError):  # (a parent that is a file: it says so)
        return _writable_dir(path.parent, root)
    except OSError as exc:
        return f"{shown(path, root)} cannot be read ({type(exc).__name__}: " \
            f"{exc.strerror or exc})"
    if stat.S_ISLNK(mode):
        return (f"{shown(path, root)} is a symbolic link (to {os.readlink(path)}); graphnetz "
                "does not write through links: name the file itself, or remove the link")
    if stat.S_ISDIR(mode):
        return f"{shown(path, root)} is a directory, not a file"
    if not stat.S_ISREG(mode):
        return (f"{shown(path, root)} is not a regular file (a FIFO, a device or a socket; "
                "writing to it could block the session)")
    try:
        os.close(open_append(path))
    except OSError as exc:
        return f"{shown(path, root)} cannot be written ({type(exc).__name__}: " \
            f"{exc.strerror or exc})"
    return None


def open_append(path: str | os.PathLike) -> int:
    """A descriptor appending to the regular file ``path``: never follows a final symbolic
    link, never blocks (a FIFO swapped in after the check is refused on the open
    descriptor, not waited on)."""
    fd = os.open(path, os.O_WRONLY | os.O_APPEND | getattr(os, "O_NONBLOCK", 0)
                 | getattr(os, "O_NOFOLLOW", 0))
    if not stat.S_ISREG(os.fstat(fd).st_mode):
        os.close(fd)
        raise OSError(errno.EINVAL, "not a regular file (a FIFO, a device or a socket)",
                      str(path))
    return fd


def write_summaries(text: str, summary: Path | None, step_summary: str | None, *,
                    show: Callable[[Path], str] = str) -> tuple[list[Path], list[str]]:
    """Write the Markdown summary to ``summary`` (replaced atomically) and append it to
    ``step_summary``; returns the paths written and one line per path that failed (an
    ``OSError`` at this point must not cost a passing run its exit code). ``show``: how a
    path is printed."""
    from pytest_graphnetz.report.files import (
        write_text_atomic,  # numpy: paid only by a session that has a summary
    )

    written, failed = [], []
    if summary is not None:
        try:
            write_text_atomic(summary, text)
            written.append(summary)
        except OSError as exc:
            failed.append(f"graphnetz: the Markdown summary was not written to {show(summary)} "
                          f"({type(exc).__name__}: {exc.strerror or exc})")
    if step_summary:
        try:
            # GitHub collects the whole step's summary from this file: append, never replace.
            with os.fdopen(open_append(step_summary), "a", encoding="utf-8") as fh:
                fh.write(text)
            written.append(Path(step_summary))
        except OSError as exc:
            failed.append(f"graphnetz: the step summary was not appended to {step_summary} "
                          f"($GITHUB_STEP_SUMMARY; {type(exc).__name__}: {exc.strerror or exc})")
    return written, failed


__all__ = ["dir_problem", "file_problem", "open_append", "shown",
           "write_summaries"]
