"""The identity of a Python interpreter for a cache key: what it is, never where it is.

A command task's first argument is usually ``sys.executable``, an absolute path that differs
between ``python -m pytest`` and ``pytest`` (``.venv/bin/python3`` against
``.venv/bin/python``), between two virtual environments and between two clones. The key holds
:func:`interpreter_identity` instead: the implementation, the Python version, the platform and
the content of the environment (every installed distribution and its version).
"""

from __future__ import annotations

import contextlib
import functools
import json
import os
import re
import shutil
import subprocess
import sys
from typing import Any

# Run in-process for this interpreter, in a fresh `-I` process for another one, so both give
# the same text. Distributions are listed from the library directories only (site-packages,
# the user site): a project directory on sys.path (`python -m pytest` adds the current one)
# holding an *.egg-info must not change the environment's identity.
_PROBE = r"""
import hashlib, importlib.metadata, json, os, platform, site, sys
dirs = set(getattr(site, "getsitepackages", lambda: [])())
dirs.add(getattr(site, "getusersitepackages", lambda: "")())
dirs.update(p for p in sys.path if "site-packages" in p.split(os.sep)
            or "dist-packages" in p.split(os.sep))
paths = [p for p in sys.path if p in dirs] + sorted(d for d in dirs if d and d not in sys.path)
dists = sorted({(str(d.metadata["Name"] or "?").lower().replace("_", "-"), str(d.version))
                for d in importlib.metadata.distributions(path=paths)})
print(json.dumps({"implementation": sys.implementation.name,
                  "version": platform.python_version(), "machine": platform.machine(),
                  "system": platform.system(),
                  "environment": hashlib.sha256(json.dumps(dists).encode()).hexdigest()}))
"""

_INTERPRETER = re.compile(r"(python|pypy)[0-9.]*(\.exe)?", re.IGNORECASE)


def looks_like_python(program: str) -> bool:
    """Whether ``program`` (an argument, a path or a bare name) names a Python interpreter."""
    return bool(_INTERPRETER.fullmatch(os.path.basename(program))) or \
        os.path.abspath(program) == os.path.abspath(sys.executable)


def interpreter_identity(program: str, *, cwd: str | None = None,
                         path: str | None = None) -> dict[str, Any]:
    """``{"implementation", "version", "machine", "system", "environment"}`` of the Python
    interpreter ``program`` (a path, or a bare name looked up on ``path``, as the command's
    process would); ``environment`` is the sha256 of its installed distributions and versions.

    This interpreter (the same file, or another name in the same ``bin`` directory) is asked
    in-process; another one once per process and file version, in a subprocess. One that
    cannot be run counts by its file name only (the run then fails and says why)."""
    found = program if os.sep in program else shutil.which(program, path=path) or program
    full = os.path.abspath(os.path.join(cwd or os.getcwd(), found))
    mine = os.path.abspath(sys.executable)
    if full == mine or (os.path.dirname(full) == os.path.dirname(mine)
                        and os.path.realpath(full) == os.path.realpath(mine)):
        return _this_interpreter()
    try:
        stat = os.stat(full)
    except OSError:
        return {"program": os.path.basename(program)}
    return _other_interpreter(full, stat.st_mtime_ns, stat.st_size)


@functools.cache
def _this_interpreter() -> dict[str, Any]:
    import contextlib
    import io

    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        exec(compile(_PROBE, "<graphnetz interpreter probe>", "exec"), {})  # noqa: S102
    result: dict[str, Any] = json.loads(out.getvalue())
    return result


@functools.lru_cache(maxsize=32)
def _other_interpreter(program: str, mtime_ns: int, size: int) -> dict[str, Any]:
    try:
        done = subprocess.run([program, "-I", "-c", _PROBE], capture_output=True, text=True,
                              timeout=60, check=True)
        result: dict[str, Any] = json.loads(done.stdout)
    except (OSError, subprocess.SubprocessError, ValueError):
        return {"program": os.path.basename(program)}
    return result


@functools.cache
def installed_version(top: str) -> str:
    """The version of the distribution(s) installing top-level module ``top``, or "?"."""
    import importlib.metadata
    import importlib.util

    try:
        return importlib.metadata.version(top)   # the usual case: named as it is imported
    except (importlib.metadata.PackageNotFoundError, ValueError):
        pass
    try:
        if importlib.util.find_spec(top) is None:   # not installed (an optional import)
            return "?"
    except (ImportError, ValueError):
        return "?"
    # ``xdist`` from pytest-xdist, ``yaml`` from PyYAML: map import names to distributions.
    # That reads every installed package's file list (0.3-1.7 s here), so only for such a
    # module, and once per process.
    names = sorted(set(_distributions_by_module().get(top, ())))
    versions = []
    for name in names:
        with contextlib.suppress(importlib.metadata.PackageNotFoundError):
            versions.append(f"{name} {importlib.metadata.version(name)}")
    return "; ".join(versions) or "?"


@functools.lru_cache(maxsize=1)
def _distributions_by_module() -> dict[str, list[str]]:
    import importlib.metadata

    return dict(importlib.metadata.packages_distributions())
