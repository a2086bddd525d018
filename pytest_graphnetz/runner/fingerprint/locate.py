"""Where a module is found, importing nothing: as this process finds it (``sys.modules``
first) or as a new process running a script would (``fresh``), for
:func:`~.project.project_code_key`. Namespace packages at any depth, a new process's start-up
path (``.pth`` folders of editable installs) and editable installs' import hooks included."""

from __future__ import annotations

import functools
import os
import sys
from typing import Any

from pytest_graphnetz.runner.fingerprint.libraries import in_library_location


class FingerprintError(RuntimeError):
    """The project code of a run could not be read for its cache key; the message names the
    module and the script or callable that imports it."""


def script_search_path(script: str) -> tuple[str, ...]:
    """Where a new process running ``script`` finds its imports: the script's directory (links
    resolved, as Python does), ``$PYTHONPATH``, then what this interpreter's start-up adds
    (its library directories and the folders ``.pth`` files add: an editable install's
    ``src/``). Not the rest of this process's ``sys.path``: ``python -m pytest`` adds the
    current directory there and ``pytest`` its ``bin`` directory, and neither reaches the
    script."""
    extra = [p for p in os.environ.get("PYTHONPATH", "").split(os.pathsep) if p]
    return (os.path.dirname(os.path.realpath(script)), *extra, *startup_path())


@functools.lru_cache(maxsize=1)
def startup_path() -> tuple[str, ...]:
    """The ``sys.path`` a new process of this interpreter starts with, without ``$PYTHONPATH``
    and the script's folder: asked of one such process (``site`` runs ``.pth`` files, which can
    import code, so it is not replayed here); this process's library entries if it fails."""
    import json
    import subprocess

    try:
        done = subprocess.run([sys.executable, "-E", "-c",
                               "import json, sys; print(json.dumps(sys.path[1:]))"],
                              capture_output=True, text=True, timeout=60, check=True,
                              cwd=os.path.dirname(sys.executable) or None)
        return tuple(p for p in json.loads(done.stdout) if isinstance(p, str) and p)
    except (OSError, subprocess.SubprocessError, ValueError):
        return tuple(p for p in sys.path if p and in_library_location(p))


def source_file(file: str | None) -> str | None:
    """The absolute path of ``file`` when it is Python source (not bytecode or a C extension)."""
    if not file or not file.endswith(".py"):
        return None
    return os.path.abspath(file)


def locate(name: str, search: tuple[str, ...], fresh: bool) -> tuple[bool, str | None]:
    """Whether module ``name`` exists, and its source file (None: builtin, extension...);
    ``fresh``: as a new process would find it, ignoring ``sys.modules``."""
    module = None if fresh else sys.modules.get(name)
    if module is not None:
        return True, source_file(getattr(module, "__file__", None))
    spec = find_spec(name, search, fresh)
    if spec is None:
        return False, None
    return True, source_file(spec.origin if spec.has_location else None)


def find_spec(name: str, search: tuple[str, ...], fresh: bool) -> Any:
    """The spec of ``name`` found on the file system, importing nothing (None: not found).

    Searched path entry by path entry, as :class:`importlib.machinery.PathFinder` does but
    without its namespace wrapper: that one asks ``sys.modules`` for the parent package, which
    a module never imported is not in (``KeyError: 'src'`` for ``src.models``, a namespace
    package two levels deep). A namespace package's locations are a plain list here."""
    parent = name.rpartition(".")[0]
    if parent:
        imported = None if fresh else sys.modules.get(parent)
        if imported is not None:
            locations = getattr(imported, "__path__", None)
        else:
            parent_spec = find_spec(parent, search, fresh)
            locations = None if parent_spec is None else parent_spec.submodule_search_locations
        if not locations:
            return None
        search = tuple(locations)
    try:
        spec = _path_spec(name, search)
    except (ImportError, ValueError, OSError):
        return None
    except Exception as exc:   # an import hook's own failure: say which module, not KeyError
        raise FingerprintError(
            f"cannot locate module `{name}` for the cache key ({type(exc).__name__}: {exc})"
            ) from exc
    if spec is None and not parent:
        spec = _hook_spec(name)
    return spec


def _path_spec(name: str, search: tuple[str, ...]) -> Any:
    """``name``'s spec from the entries of ``search``: the first module or regular package,
    else a namespace package over every portion found (Python's rule)."""
    from importlib.machinery import ModuleSpec

    portions: list[str] = []
    for entry in search:
        finder = _entry_finder(entry)
        spec = None if finder is None else finder.find_spec(name)
        if spec is None:
            continue
        if spec.loader is not None:
            return spec
        portions.extend(spec.submodule_search_locations or ())
    if not portions:
        return None
    namespace = ModuleSpec(name, None, is_package=True)
    namespace.submodule_search_locations = portions
    return namespace


def _entry_finder(entry: str) -> Any:
    """The path entry finder of ``entry`` (a directory, a zip file), as the import system makes
    it: from ``sys.path_importer_cache``, else from ``sys.path_hooks`` (cached there, as
    :class:`~importlib.machinery.PathFinder` caches it)."""
    entry = entry or os.getcwd()
    if entry in sys.path_importer_cache:
        return sys.path_importer_cache[entry]
    for hook in sys.path_hooks:
        try:
            finder = hook(entry)
        except ImportError:
            continue
        sys.path_importer_cache[entry] = finder
        return finder
    return None


def _hook_spec(name: str) -> Any:
    """The spec of top-level ``name`` from an import hook that is not a path search: an editable
    install's finder (setuptools, scikit-build-core, meson-python map names to the project's
    folders). Python's own finders and pytest's assertion rewriter (which finds test modules on
    this process's path, not the script's) are left out."""
    from importlib.machinery import BuiltinImporter, FrozenImporter, PathFinder

    for finder in sys.meta_path:
        if finder in (BuiltinImporter, FrozenImporter, PathFinder) or \
                str(getattr(finder, "__module__", "")).startswith(("_pytest.", "_distutils_hack")):
            continue
        find = getattr(finder, "find_spec", None)
        if find is None:
            continue
        try:
            spec = find(name, None)
        except (ImportError, ValueError, OSError):
            continue
        except Exception as exc:   # the hook's own bug: say which module and which hook
            raise FingerprintError(f"cannot locate module `{name}` for the cache key: the import "
                                   f"hook {finder!r} failed ({type(exc).__name__}: {exc})"
                                   ) from exc
        if spec is not None:
            return spec
    return None


def absolute_imports(imports: tuple[tuple[str, int, tuple[str, ...]], ...],
                      package: str) -> list[tuple[str, tuple[str, ...]]]:
    """``(absolute module name, imported names)`` of ``imports`` (from :func:`_module_code`),
    relative ones resolved against ``package``; ones that cannot resolve are left out."""
    out = []
    for module, level, members in imports:
        if level:
            bits = package.rsplit(".", level - 1) if package else []
            if len(bits) < level:
                continue  # a relative import above the top package fails at run time too
            module = bits[0] + (f".{module}" if module else "")
        if module:
            out.append((module, members))
    return out
