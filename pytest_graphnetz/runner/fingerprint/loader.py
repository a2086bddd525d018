"""What a loader or a model factory reads: the values it carries (:func:`callable_state`), the
files it opened (:func:`recording_opened_files`, :func:`data_files_stamp`) and the environment
variables it looked up (:func:`recording_environment`), so a cache hit can skip running it."""

from __future__ import annotations

import contextlib
import functools
import inspect
import os
import sys
import threading
from collections.abc import Iterable, Iterator
from typing import Any

from pytest_graphnetz.runner.fingerprint.code import callable_identity, is_plain
from pytest_graphnetz.runner.fingerprint.content import data_fingerprint
from pytest_graphnetz.runner.fingerprint.libraries import in_library_location


def callable_state(fn: Any) -> str | None:
    """A stable text of the values a callable carries besides its code: closure cells,
    defaults, ``functools.partial`` arguments, a bound method's instance, a callable object's
    attributes. None when one of them has no stable text (an open file, a generator...): the
    caller must then run the callable instead of trusting a key.
    """
    return _stable(fn, 0)


def _stable(value: Any, depth: int) -> str | None:
    import enum

    if depth > 6:
        return None
    if is_plain(value) or isinstance(value, (enum.Enum, os.PathLike)):
        return repr(value)
    if isinstance(value, (list, tuple, dict)):
        items = value.items() if isinstance(value, dict) else enumerate(value)
        texts = [(_stable(k, depth + 1), _stable(v, depth + 1)) for k, v in items]
        if any(k is None or v is None for k, v in texts):
            return None
        return f"{type(value).__name__}{sorted(texts) if isinstance(value, dict) else texts}"
    if inspect.ismodule(value):
        return f"module:{value.__name__}"
    if isinstance(value, functools.partial):
        inner = [_stable(v, depth + 1) for v in (value.func, value.args, value.keywords)]
        return None if None in inner else f"partial{inner}"
    if inspect.ismethod(value):
        inner = [_stable(value.__func__, depth + 1), _stable(value.__self__, depth + 1)]
        return None if None in inner else f"method{inner}"
    if inspect.isfunction(value):
        cells = []
        for name, cell in zip(value.__code__.co_freevars, value.__closure__ or (), strict=True):
            try:
                cells.append((name, _stable(cell.cell_contents, depth + 1)))
            except ValueError:  # a cell not filled yet
                cells.append((name, "<empty>"))
        defaults = [_stable(value.__defaults__, depth + 1),
                    _stable(value.__kwdefaults__, depth + 1)]
        if None in defaults or any(text is None for _, text in cells):
            return None
        return f"function:{sorted(callable_identity(value).items())}{cells}{defaults}"
    if inspect.isclass(value) or inspect.isbuiltin(value):
        return f"code:{sorted(callable_identity(value).items())}"
    if _is_data(value):
        return f"data:{data_fingerprint(value)}"
    if hasattr(value, "__dict__"):  # a dataclass, a callable object, a config object
        attributes = _stable(vars(value), depth + 1)
        cls = type(value)
        return None if attributes is None else \
            f"{sorted(callable_identity(cls).items())}{attributes}"
    return None


def _is_data(value: Any) -> bool:
    """A tensor, an array or a PyG data object (hashed by content), checked without importing
    torch or numpy when they are not loaded."""
    np, torch = sys.modules.get("numpy"), sys.modules.get("torch")
    if np is not None and isinstance(value, np.ndarray):
        return True
    if torch is None:
        return False
    from torch_geometric.data.data import BaseData

    return isinstance(value, (torch.Tensor, BaseData))


def recording_opened_files() -> contextlib.AbstractContextManager[set[str]]:
    """A context manager yielding the set of paths opened (``open``, ``os.open``) or renamed
    to (``os.rename``, ``os.replace``) in this thread while it is active, through an audit
    hook (:func:`sys.addaudithook`) installed once per process. Not seen: C code opening files
    by itself (not through Python), and other threads and processes."""
    _install_open_hook()
    return _recording()


@contextlib.contextmanager
def _recording() -> Iterator[set[str]]:
    files: set[str] = set()
    previous = getattr(_OPENED, "files", None)
    _OPENED.files = files
    try:
        yield files
    finally:
        _OPENED.files = previous


# The set that the audit hook fills, per thread (None while nothing records).
_OPENED = threading.local()


@functools.cache
def _install_open_hook() -> None:
    def hook(event: str, args: tuple) -> None:
        # "open": open(), os.open(); "os.rename": os.rename() and os.replace(), whose target
        # is what an atomic write (temp file + rename) leaves on disk.
        if event != "open" and event != "os.rename":
            return
        files = getattr(_OPENED, "files", None)
        if files is None or len(args) < 2:
            return
        path = args[0 if event == "open" else 1]
        if isinstance(path, (str, bytes, os.PathLike)):
            with contextlib.suppress(Exception):  # never let the hook break the audited call
                files.add(os.path.abspath(os.fsdecode(path)))

    sys.addaudithook(hook)


ALL_VARIABLES = "*"   # recording_environment's name for "the whole environment was read"


@contextlib.contextmanager
def recording_environment() -> Iterator[dict[str, str | None]]:
    """A context manager yielding ``{name: value or None}`` of the environment variables looked
    up through ``os.environ`` (``os.environ[name]``, ``.get``, ``in``, ``os.getenv``) while it
    is active; a read of the whole environment (iterating, copying it) adds
    :data:`ALL_VARIABLES`. ``os.environ`` is swapped for a recording view of the same variables
    for the block, so writes go through as usual. Not seen: a reference to ``os.environ``
    taken before the block (``from os import environ``) and C code calling ``getenv``."""
    real = os.environ
    reads: dict[str, str | None] = {}

    class Recording(type(real)):  # type: ignore[misc]
        def __getitem__(self, name: str) -> str:
            try:
                value = super().__getitem__(name)
            except KeyError:
                reads.setdefault(name, None)
                raise
            reads.setdefault(name, value)
            return value

        def __iter__(self) -> Iterator[str]:
            reads[ALL_VARIABLES] = None
            return super().__iter__()

    # The mapping object is swapped, not the environment: both views share its variables.
    parts = (real._data, real.encodekey, real.decodekey,  # type: ignore[attr-defined]
             real.encodevalue, real.decodevalue)
    os.environ = Recording(*parts)  # noqa: B003
    try:
        yield reads
    finally:
        os.environ = real  # noqa: B003


def environment_unchanged(reads: dict[str, str | None]) -> bool:
    """Whether the variables :func:`recording_environment` recorded read the same now (a record
    that read the whole environment never does: it cannot say which variables mattered)."""
    return ALL_VARIABLES not in reads and all(os.environ.get(name) == value
                                              for name, value in reads.items())


def files_under(root: str | os.PathLike) -> list[str]:
    """Every file under ``root``, recursively (none when it does not exist)."""
    return [os.path.join(directory, name) for directory, _, names in os.walk(os.fspath(root))
            for name in names]


def data_files_stamp(paths: Iterable[str]) -> list[list[Any]]:
    """``[[path, size, mtime_ns], ...]``, sorted, of the data files among ``paths``: existing
    regular files that are not Python code, lock or temp files, and lie neither in a library
    location nor in /proc, /sys or /dev.

    Two equal stamps of the same paths mean, short of a rewrite that keeps a file's size and
    nanosecond mtime, that none of those files changed; a file that went missing, or a new one
    among ``paths``, makes them differ.
    """
    import stat as stat_module

    stamp = []
    for path in sorted(set(paths)):
        if path.startswith(("/proc/", "/sys/", "/dev/")) or path.endswith(
                (".py", ".pyc", ".pyd", ".so", ".dylib", ".pth", ".lock", ".tmp")) \
                or in_library_location(path):
            continue
        try:
            st = os.stat(path)
        except OSError:
            continue  # a temp file renamed away, or a file opened but never created
        if stat_module.S_ISREG(st.st_mode):
            stamp.append([path, st.st_size, st.st_mtime_ns])
    return stamp

