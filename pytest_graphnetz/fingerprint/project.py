"""Project code: every module of the user's project that a run depends on, for the cache key
(:func:`project_code_key`), and what counts as the user's code (:func:`is_project_file`)."""

from __future__ import annotations

import ast
import contextlib
import functools
import hashlib
import inspect
import os
import sys
import types
import warnings
from collections.abc import Iterable
from typing import Any


def project_code_key(targets: Iterable[Any]) -> str:
    """sha256 hex of the project code ``targets`` depend on, for a cache key.

    ``targets``: functions, classes, callable objects, ``functools.partial`` objects, modules,
    or paths (``str`` / ``os.PathLike``) of Python scripts. A command task (a script run in a
    subprocess) passes its script's path and gets the same closure an in-process trainer gets.

    What is in the key:

    - The *reach*, at the grain of definitions (:mod:`.reach`): each target's definition (a
      callable's top-level function or class; a lambda by its line; all of a module or
      script), the functions, classes, assignments and imports it names, transitively across
      project modules (``helpers.drop`` through ``import helpers``, ``from m import f``,
      imports inside functions, ``importlib.import_module("literal")``), plus the other
      module-level statements (argparse calls, ``if``/``try`` blocks, registrations) of every
      module reached and of the packages above it (importing ``a.b`` runs
      ``a/__init__.py``). Only project modules are followed.
    - A module whose reach cannot be seen (``globals()``, computed ``getattr``/imports, star
      imports, a decorator that is not a known wrapper), a module used as a value and one
      imported only for its effects count whole, with every project module they import, by
      their whole normalised code (syntax tree without docstrings: comments, docstrings and
      formatting never count). A module that does not parse counts by its raw bytes.
    - A *project module* is a ``.py`` file outside the library locations: the standard library
      and site-packages directories of this interpreter (:mod:`sysconfig`, :mod:`site`), any
      directory named ``site-packages`` or ``dist-packages`` (other virtual environments, tox
      environments) and pytest-graphnetz's own package. So a project's own modules, a sibling
      checkout on ``PYTHONPATH`` and an editable install all count as code; an installed
      library does not.
    - Every other imported top-level module (a library) counts by the version of the installed
      distribution that provides it (``importlib.metadata``; ``xdist`` by pytest-xdist's),
      whether or not this process has imported it; the standard library by nothing here (the
      Python version is in the runner's key).

    Not in the key: values computed at run time from outside the code (environment variables,
    files, the command line, a module global changed by a caller), files the code reads (the
    runner stamps a loader's data files apart), modules imported only under a computed name.
    Paths never enter the key, so a checkout in another directory shares it.

    Imports resolve as Python would at run time: a module already imported in this process is
    taken from ``sys.modules``, any other is searched on ``sys.path`` (a script's own directory
    first) without being imported; one that cannot be found is skipped. Each module's code is
    parsed once per process and file version (path, size, mtime); a call costs a ``stat`` per
    module of the closure.
    """
    digests: set[str] = set()
    libraries: set[str] = set()
    whole: list[_Where] = []
    reach = _Reach(digests, libraries, whole)
    for target in targets:
        reach.add_target(target)
    reach.run()
    _whole_closure(whole, digests, libraries, set())
    payload = {"modules": sorted(digests), "libraries": _library_versions(libraries)}
    return hashlib.sha256(repr(sorted(payload.items())).encode()).hexdigest()


# (module name, source file, search path, whether to resolve without sys.modules)
_Where = tuple[str, str | None, tuple[str, ...], bool]


class _Reach:
    """The definitions the targets reach, module by module (see :mod:`.reach`): each reached
    definition's digest, the other statements of each module visited, the package
    ``__init__`` above it; a dynamic module, a module used as a value, or one imported for its
    effects only go to ``whole`` (counted whole, with everything it imports)."""

    def __init__(self, digests: set[str], libraries: set[str], whole: list[_Where]) -> None:
        self.digests, self.libraries, self.whole = digests, libraries, whole
        self.todo: list[tuple[_Where, str, tuple[str, ...]]] = []
        self.visited: set[str] = set()
        self.done: set[tuple[str, str]] = set()

    def info(self, where: _Where) -> Any:
        from .reach import analyse

        name, file, _, _ = where
        if file is None or not is_project_file(file):
            self.libraries.add(name.partition(".")[0])
            return None
        try:
            st = os.stat(file)
        except OSError as exc:
            self.digests.add(f"unreadable {name}: {type(exc).__name__}")
            return None
        info = analyse(file, st.st_mtime_ns, st.st_size)
        if info is None or info.dynamic:
            self.whole.append(where)
            return None
        if file not in self.visited:   # what runs at import, whatever is used
            self.visited.add(file)
            self.digests.add(f"{name}:<module>:{info.others}")
            self.push_refs(where, info.other_refs)
            for binding in [*info.unused_imports, *info.effects]:
                found = self.resolve_module(where, binding)
                if found is not None:
                    self.whole.append(found)
            self.packages_above(where)
        return info

    def packages_above(self, where: _Where) -> None:
        name, _, search, fresh = where
        parts = name.split(".")
        for i in range(1, len(parts)):
            found, file = _locate(".".join(parts[:i]), search, fresh)
            if found:
                self.info((".".join(parts[:i]), file, search, fresh))

    def add_target(self, target: Any) -> None:
        where = _target_module(target)
        info = self.info(where)
        if info is None:
            return
        while isinstance(target, functools.partial):
            target = target.func
        if isinstance(target, (str, os.PathLike)) or inspect.ismodule(target):
            self.digests.add(f"{where[0]}:<all>:{_module_code(*_stamp(where[1]))[0]}")
            self.push_refs(where, info.all_refs)   # every statement runs
            self.todo.extend((where, n, ()) for n in info.defs if n not in info.bindings)
            return
        target = getattr(target, "__func__", target)
        owner = target if inspect.isfunction(target) or inspect.isclass(target) else type(target)
        top = getattr(owner, "__qualname__", "").split(".")[0]
        if top == "<lambda>":
            line = getattr(getattr(owner, "__code__", None), "co_firstlineno", None)
            if line in info.lambdas:
                digest, refs = info.lambdas[line]
                self.digests.add(f"{where[0]}:<lambda {line}>:{digest}")
                self.push_refs(where, refs)
                return
        if top in info.defs:
            self.todo.append((where, top, ()))
        else:
            self.whole.append(where)   # not a top-level name of its module: count it whole

    def push_refs(self, where: _Where, refs: list[tuple[str, tuple[str, ...]]]) -> None:
        self.todo.extend((where, name, attrs) for name, attrs in refs)

    def run(self) -> None:
        while self.todo:
            where, name, attrs = self.todo.pop()
            info = self.info(where)
            if info is None:
                continue
            if name in info.bindings:
                if (where[1] or "", name + "." + ".".join(attrs)) in self.done:
                    continue
                self.done.add((where[1] or "", name + "." + ".".join(attrs)))
                if name in info.defs:   # else the import is in an `if`/`try`: in <module>
                    self.digests.add(f"{where[0]}:{name}:{info.defs[name][0]}")
                self.follow(where, info.bindings[name], attrs)
            elif name in info.defs and (where[1] or "", name) not in self.done:
                self.done.add((where[1] or "", name))
                self.digests.add(f"{where[0]}:{name}:{info.defs[name][0]}")
                self.push_refs(where, info.defs[name][1])
                for binding in info.nested.get(name, ()):   # imports inside the definition
                    self.follow(where, binding, ())

    def absolute(self, where: _Where, binding: Any) -> str:
        name, file, _, _ = where
        package = name if os.path.basename(file or "") == "__init__.py" else \
            name.rpartition(".")[0]
        resolved = _absolute_imports(((binding.module, binding.level, ()),), package)
        return resolved[0][0] if resolved else ""

    def resolve_module(self, where: _Where, binding: Any) -> _Where | None:
        module = self.absolute(where, binding)
        if binding.member is not None:
            found, file = _locate(f"{module}.{binding.member}", where[2], where[3])
            if found:
                return (f"{module}.{binding.member}", file, where[2], where[3])
        found, file = _locate(module, where[2], where[3]) if module else (False, None)
        return (module, file, where[2], where[3]) if found else None

    def follow(self, where: _Where, binding: Any, attrs: tuple[str, ...]) -> None:
        """Where ``binding`` (read with ``attrs``) leads: a definition of another module, or
        a module used as a value (counted whole)."""
        module = self.absolute(where, binding)
        if not module:
            return
        _, search, fresh = where[1], where[2], where[3]
        found, file = _locate(module, search, fresh)
        if not found:
            return
        current: _Where = (module, file, search, fresh)
        self.info(current)
        rest = list(attrs) if binding.member is None else [binding.member, *attrs]
        if binding.member is None and "." in module:   # `import a.b` binds a: start at a
            top = module.partition(".")[0]
            found, file = _locate(top, search, fresh)
            current = (top, file, search, fresh)
        while rest:
            sub = f"{current[0]}.{rest[0]}"
            found, file = _locate(sub, search, fresh)
            if not found:
                break
            current = (sub, file, search, fresh)
            self.info(current)
            rest.pop(0)
        if current[1] is None or not is_project_file(current[1]):
            self.libraries.add(current[0].partition(".")[0])
        elif rest:
            self.todo.append((current, rest[0], tuple(rest[1:])))
        else:
            self.whole.append(current)   # the module object itself is used


def _stamp(file: str | None) -> tuple[str, int, int]:
    st = os.stat(file or "")
    return file or "", st.st_mtime_ns, st.st_size


def _whole_closure(todo: list[_Where], digests: set[str], libraries: set[str],
                   seen: set[str]) -> None:
    """Each module of ``todo`` whole, and every module it imports, transitively."""
    while todo:
        name, file, search, fresh = todo.pop()
        if file is None or not is_project_file(file):
            libraries.add(name.partition(".")[0])
            continue
        if file in seen:
            continue
        seen.add(file)
        try:
            stat = os.stat(file)
            digest, imports = _module_code(file, stat.st_mtime_ns, stat.st_size)
        except OSError as exc:  # unreadable: its name and the error stand in for its code
            digests.add(f"unreadable {name}: {type(exc).__name__}")
            continue
        digests.add(digest)
        package = name if os.path.basename(file) == "__init__.py" else name.rpartition(".")[0]
        for module, members in _absolute_imports(imports, package):
            parts = module.split(".")
            for i in range(1, len(parts) + 1):  # `import a.b` runs a/__init__.py too
                found, found_file = _locate(".".join(parts[:i]), search, fresh)
                if found:
                    todo.append((".".join(parts[:i]), found_file, search, fresh))
            if found and found_file is not None and is_project_file(found_file) \
                    and os.path.basename(found_file) == "__init__.py":
                # `from package import name`: name may be a submodule (of a project package
                # only: a library's submodules count through its version already).
                for member in members:
                    found, found_file = _locate(f"{module}.{member}", search, fresh)
                    if found:
                        todo.append((f"{module}.{member}", found_file, search, fresh))




def _target_module(target: Any) -> tuple[str, str | None, tuple[str, ...], bool]:
    """``(module name, source file or None, import search path, fresh)`` where ``target``
    lives; ``fresh`` for a script, whose imports resolve as in a new process (not through
    this process's ``sys.modules``)."""
    if isinstance(target, (str, os.PathLike)):
        path = os.path.abspath(os.fspath(target))
        return "__main__", _source_file(path), _script_search_path(path), True
    while isinstance(target, functools.partial):
        target = target.func
    module: types.ModuleType | None
    if inspect.ismodule(target):
        module = target
    else:
        target = getattr(target, "__func__", target)  # a bound method: its function
        owner = target if inspect.isfunction(target) or inspect.isclass(target) else type(target)
        module = sys.modules.get(getattr(owner, "__module__", None) or "")
    if module is None:
        return "", None, tuple(sys.path), False
    return (module.__name__, _source_file(getattr(module, "__file__", None)), tuple(sys.path),
            False)


def _script_search_path(script: str) -> tuple[str, ...]:
    """Where a new process running ``script`` finds its imports: the script's directory (links
    resolved, as Python does), ``$PYTHONPATH``, then this interpreter's library directories.
    Not the rest of this process's ``sys.path``: ``python -m pytest`` adds the current
    directory there and ``pytest`` its ``bin`` directory, and neither reaches the script."""
    extra = [p for p in os.environ.get("PYTHONPATH", "").split(os.pathsep) if p]
    return (os.path.dirname(os.path.realpath(script)), *extra,
            *(p for p in sys.path if p and in_library_location(p)))


def _source_file(file: str | None) -> str | None:
    """The absolute path of ``file`` when it is Python source (not bytecode or a C extension)."""
    if not file or not file.endswith(".py"):
        return None
    return os.path.abspath(file)


def _locate(name: str, search: tuple[str, ...], fresh: bool) -> tuple[bool, str | None]:
    """Whether module ``name`` exists, and its source file (None: builtin, extension...);
    ``fresh``: as a new process would find it, ignoring ``sys.modules``."""
    module = None if fresh else sys.modules.get(name)
    if module is not None:
        return True, _source_file(getattr(module, "__file__", None))
    spec = _find_spec(name, search, fresh)
    if spec is None:
        return False, None
    return True, _source_file(spec.origin if spec.has_location else None)


def _find_spec(name: str, search: tuple[str, ...], fresh: bool) -> Any:
    """The spec of ``name`` found on the file system, importing nothing (None: not found)."""
    from importlib.machinery import PathFinder

    parent = name.rpartition(".")[0]
    if parent:
        imported = None if fresh else sys.modules.get(parent)
        if imported is not None:
            locations = getattr(imported, "__path__", None)
        else:
            parent_spec = _find_spec(parent, search, fresh)
            locations = None if parent_spec is None else parent_spec.submodule_search_locations
        if not locations:
            return None
        search = tuple(locations)
    try:
        return PathFinder.find_spec(name, list(search))
    except (ImportError, ValueError, OSError):
        return None


def _absolute_imports(imports: tuple[tuple[str, int, tuple[str, ...]], ...],
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


def module_digest(path: str) -> str:
    """The sha256 of the normalised code of the source file ``path`` (comments, docstrings and
    formatting do not count), as :func:`project_code_key` counts a module; OSError when it
    cannot be read."""
    st = os.stat(path)
    return _module_code(os.path.abspath(path), st.st_mtime_ns, st.st_size)[0]


@functools.lru_cache(maxsize=4096)
def _module_code(path: str, mtime_ns: int, size: int) -> tuple[str, tuple]:
    """``(sha256 of the normalised code, imports)`` of the source file ``path`` at this version
    (``mtime_ns`` and ``size`` key the memo); imports are ``(module, level, names)``."""
    import re

    with open(path, "rb") as fh:
        raw = fh.read()
    try:
        with warnings.catch_warnings():  # the user's SyntaxWarnings are Python's to report
            warnings.simplefilter("ignore")
            tree = ast.parse(raw, filename=path)
    except (SyntaxError, ValueError):
        return hashlib.sha256(raw).hexdigest(), ()
    imports: list[tuple[str, int, tuple[str, ...]]] = []
    _strip_statements(tree.body, imports, docstring=True)
    # importlib.import_module("name") / __import__("name") with a literal name
    for match in re.finditer(rb"(?:import_module|__import__)\(\s*['\"]([\w.]+)['\"]", raw):
        imports.append((match.group(1).decode(), 0, ()))
    code = ast.dump(tree)
    return hashlib.sha256(code.encode()).hexdigest(), tuple(imports)


def _strip_statements(body: list[ast.stmt], imports: list, *, docstring: bool) -> None:
    """Remove the docstrings of the modules, classes and functions in ``body`` (in place) and
    collect its import statements, at any depth. Walks statements only (imports and
    definitions are statements): a full :func:`ast.walk` costs several times as much."""
    if docstring and body and isinstance(body[0], ast.Expr) \
            and isinstance(body[0].value, ast.Constant) and isinstance(body[0].value.value, str):
        del body[0]
        if not body:
            body.append(ast.Pass())
    for node in body:
        if isinstance(node, ast.Import):
            imports.extend((alias.name, 0, ()) for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            imports.append((node.module or "", node.level,
                            tuple(a.name for a in node.names if a.name != "*")))
        definition = isinstance(node, (ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef))
        for field in ("body", "orelse", "finalbody"):
            inner = getattr(node, field, None)
            if isinstance(inner, list):
                _strip_statements(inner, imports, docstring=definition and field == "body")
        for inner in (*getattr(node, "handlers", ()), *getattr(node, "cases", ())):
            _strip_statements(inner.body, imports, docstring=False)


def is_project_file(path: str | os.PathLike) -> bool:
    """Whether ``path`` is a ``.py`` file of the user's code: one outside every library location
    (see :func:`project_code_key`)."""
    path = os.fspath(path)
    return path.endswith(".py") and not in_library_location(path)


@functools.lru_cache(maxsize=16384)
def in_library_location(path: str) -> bool:
    """Whether ``path`` lies in this interpreter's standard library or site-packages, in any
    directory named ``site-packages`` or ``dist-packages``, or in pytest-graphnetz itself."""
    real = os.path.realpath(path)
    parts = real.split(os.sep)
    if "site-packages" in parts or "dist-packages" in parts:
        return True
    return any(real == d or real.startswith(d + os.sep) for d in _library_dirs())


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
    # (this file is pytest_graphnetz/fingerprint/project.py: the package is two levels up)
    dirs.append(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    return tuple(sorted({os.path.realpath(d) for d in dirs if d}))


def _library_versions(tops: set[str]) -> list[str]:
    """``top==version`` for each non-stdlib top-level module in ``tops``: the version of the
    installed distribution that provides it ("?" when none does).

    Read from the installation, never from the imported module: a process that has imported
    ``xdist`` and one that has not must give one key (before, the first read ``__version__``
    and the second looked for a distribution named ``xdist``, found none, and wrote "?")."""
    return [f"{top}=={installed_version(top)}"
            for top in sorted(tops - set(sys.stdlib_module_names) - {"", "__main__"})]


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

