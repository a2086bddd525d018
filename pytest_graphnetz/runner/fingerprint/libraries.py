"""What counts as a library, not the user's code, for :func:`~.project.project_code_key`:
the standard library, site-packages, pytest-graphnetz itself, and a distribution installed into
a project folder (``pip install --target``), known by the ``*.dist-info`` beside it."""

from __future__ import annotations

import contextlib
import functools
import os
import sys
from typing import cast


@functools.lru_cache(maxsize=16384)
def in_library_location(path: str) -> bool:
    """Whether ``path`` lies in this interpreter's standard library or site-packages, in any
    directory named ``site-packages`` or ``dist-packages``, in pytest-graphnetz itself, or in a
    library installed into a folder of the project (``pip install --target vendor``, or a
    vendored wheel: its folder holds the ``*.dist-info`` that lists it)."""
    return in_environment(path) or installed_into(os.path.realpath(path)) is not None


@functools.lru_cache(maxsize=16384)
def in_environment(path: str) -> bool:
    """Whether ``path`` lies in this interpreter's standard library or site-packages, in any
    directory named ``site-packages`` or ``dist-packages``, or in pytest-graphnetz itself: where
    a library's version is read from the installation, not from a ``*.dist-info`` beside it."""
    real = os.path.realpath(path)
    parts = real.split(os.sep)
    if "site-packages" in parts or "dist-packages" in parts:
        return True
    return any(real == d or real.startswith(d + os.sep) for d in _library_dirs())


def installed_into(real: str) -> tuple[str, str] | None:
    """``(folder, top-level name)`` when the resolved path ``real`` belongs to a distribution
    installed into ``folder`` (one of its parents), by the ``*.dist-info`` records there."""
    parts = real.split(os.sep)
    for i in range(len(parts) - 1, 0, -1):
        folder, top = os.sep.join(parts[:i]) or os.sep, parts[i]
        top = top[:-3] if top.endswith(".py") else top
        if top in installed_tops(folder):
            return folder, top
    return None


def installed_tops(folder: str) -> dict[str, str]:
    """``{top-level name: "distribution version"}`` of the distributions whose ``*.dist-info``
    lies in ``folder`` (their RECORD lists their files); empty for almost every folder."""
    try:
        return _installed_tops_at(folder, os.stat(folder).st_mtime_ns)
    except OSError:
        return {}


@functools.lru_cache(maxsize=4096)
def _installed_tops_at(folder: str, mtime_ns: int) -> dict[str, str]:
    """:func:`installed_tops` of ``folder`` at this version of its listing (an upgrade
    replaces the ``*.dist-info`` folder, so the listing's mtime keys the memo)."""
    import importlib.metadata

    if not any(n.endswith(".dist-info") for n in os.listdir(folder)):
        return {}
    tops: dict[str, str] = {}
    for dist in importlib.metadata.distributions(path=[folder]):
        label = f"{dist.metadata['Name'] or '?'} {dist.version}"
        for file in dist.files or ():
            first = file.parts[0] if file.parts else ""
            if first and first != ".." and not first.endswith((".dist-info", ".data")):
                tops[first[:-3] if first.endswith(".py") else first] = label
    return tops


@functools.lru_cache(maxsize=1)
def _library_dirs() -> tuple[str, ...]:
    import site
    import sysconfig

    # Not sys.prefix itself: a system Python's prefix is /usr, and a project under /usr/src
    # would then not count as code at all.
    dirs = [sysconfig.get_paths().get(key) for key in ("stdlib", "platstdlib", "purelib",
                                                       "platlib")]
    with contextlib.suppress(AttributeError):  # some embedded interpreters lack these
        dirs += site.getsitepackages() + [site.getusersitepackages()]
    # pytest-graphnetz itself counts by its version (and its built-in trainers by their code,
    # in the trainer's identity), also when run from a checkout: hashing its 40 modules would
    # cost every session here a second.
    # (the package is loaded, this module being in it: asked where, not climbed to)
    package = cast(str, sys.modules["pytest_graphnetz"].__file__)
    dirs.append(os.path.dirname(os.path.abspath(package)))
    return tuple(sorted({os.path.realpath(d) for d in dirs if d}))
