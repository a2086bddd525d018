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

from pytest_graphnetz.runner.fingerprint.interpreter import installed_version
from pytest_graphnetz.runner.fingerprint.libraries import (
    in_environment,
    in_library_location,
    installed_into,
    installed_tops,
)
from pytest_graphnetz.runner.fingerprint.locate import (
    FingerprintError,
    absolute_imports,
    find_spec,
    locate,
    script_search_path,
    source_file,
)


def project_code_key(targets: Iterable[Any]) -> str:
    """sha256 hex of the project code ``targets`` depend on, for a cache key.

    ``targets``: functions, classes, callable objects, ``functools.partial`` objects, modules,
    or paths (``str`` / ``os.PathLike``) of Python scripts. A command task (a script run in a
    subprocess) passes its script's path and gets the same closure an in-process trainer gets.

    What is in the key (docs/cache.md says it for users):

    - The *reach*, at the grain of definitions (:mod:`.reach`): each target's definition (a
      callable's top-level function or class; a lambda by its line; all of a script), what it
      names, transitively across project modules, and what runs when each module reached is
      imported: its other statements, its definitions that call something, the packages
      above it and, in turn, the modules it imports (a name imported and never used counts
      only through what its module runs, so a model's key does not hold its siblings').
    - Whole, with every project module it imports: a module whose reach cannot be seen
      (``globals()``, computed ``getattr``/imports, star imports, an unknown decorator), one
      used as a value or loaded by ``import_module``, and one whose classes may register
      themselves on creation (a project base with ``__init_subclass__``, a metaclass).
    - A library (a module :func:`is_project_file` refuses) by its distribution's version.

    Not in the key: values computed at run time from outside the code (environment variables,
    files, the command line), modules imported only under a computed name. No path enters it.

    Imports resolve as Python would at run time: a module already imported in this process is
    taken from ``sys.modules``, any other is searched on ``sys.path`` (a script's own directory
    first) without being imported; one that cannot be found is skipped. Each module's code is
    parsed once per process and file version (path, size, mtime); a call costs a ``stat`` per
    module of the closure.
    """
    digests, libraries, _ = _walk(targets)
    payload = {"modules": sorted(digests), "libraries": _library_versions(libraries)}
    return hashlib.sha256(repr(sorted(payload.items())).encode()).hexdigest()


def project_code_files(targets: Iterable[Any]) -> frozenset[str]:
    """The project source files (absolute paths) whose code :func:`project_code_key` of
    ``targets`` holds, at the grain of definitions or whole: a change to one of them that
    the key does not see cannot change what ``targets`` run."""
    return _walk(targets)[2]


def _walk(targets: Iterable[Any]) -> tuple[set[str], dict[str, str | None], frozenset[str]]:
    """``(digests, library top-level names, files)`` of the project code ``targets`` reach."""
    digests: set[str] = set()
    libraries: dict[str, str | None] = {}
    whole: list[_Where] = []
    reach = _Reach(digests, libraries, whole)
    seen: set[str] = set()
    targets = list(targets)
    try:
        for target in targets:
            reach.add_target(target)
        reach.run()
        _whole_closure(whole, digests, libraries, seen)
    except FingerprintError as exc:
        named = ", ".join(_label(t) for t in targets)
        raise FingerprintError(f"{exc}, reached from {named}") from exc.__cause__
    return digests, libraries, frozenset(reach.visited | seen)


# (module name, source file, search path, whether to resolve without sys.modules)
_Where = tuple[str, str | None, tuple[str, ...], bool]


class _Reach:
    """The definitions the targets reach, module by module (see :mod:`.reach`): each reached
    definition's digest; of each module visited, what runs when it is imported (its other
    statements, its definitions that call something, the modules it imports, in turn, and the
    package ``__init__`` above it). A dynamic module, a module used as a value, one loaded by
    ``import_module``, and one whose classes may register themselves on creation go to
    ``whole`` (counted whole, with everything it imports)."""

    def __init__(self, digests: set[str], libraries: dict[str, str | None],
                 whole: list[_Where]) -> None:
        self.digests, self.libraries, self.whole = digests, libraries, whole
        self.todo: list[tuple[_Where, str, tuple[str, ...]]] = []
        self.visited: set[str] = set()
        self.hooked: set[str] = set()
        self.done: set[tuple[str, str]] = set()

    def info(self, where: _Where) -> Any:
        from pytest_graphnetz.runner.fingerprint.reach import analyse

        name, file, _, _ = where
        if file is None or not is_project_file(file):
            _count_library(self.libraries, where)
            return None
        try:
            st = os.stat(file)
        except OSError as exc:
            self.digests.add(f"unreadable {name}: {type(exc).__name__}")
            return None
        info = analyse(file, st.st_mtime_ns, st.st_size)
        if file not in self.visited and info is not None and not info.dynamic:
            self.visited.add(file)   # what runs at import, whatever is used
            if self.creates_hooked(where, info, list(info.class_bases), set()):
                self.hooked.add(file)
            else:
                if info.others:
                    self.digests.add(f"{name}:<module>:{info.others}")
                self.push_refs(where, [*info.other_refs, *((n, ()) for n in info.runs_at_import)])
                # Each import runs its module (its statements, not its definitions): a name
                # imported and never used changes no key but through what its module runs.
                for binding in info.imports:
                    found = self.resolve_module(where, binding)
                    if found is not None:
                        self.todo.append((found, "", ()))
                for binding in info.effects:   # import_module("name"): used through a value
                    found = self.resolve_module(where, binding)
                    if found is not None:
                        self.whole.append(found)
                self.packages_above(where)
        if info is None or info.dynamic or file in self.hooked:
            self.whole.append(where)
            return None
        return info

    def creates_hooked(self, where: _Where, info: Any, names: list[str],
                       seen: set[tuple[str, str]]) -> bool:
        """Whether creating the classes ``names`` of ``where`` may run project code (a
        base's ``__init_subclass__``, a metaclass) that registers them where a model looks
        them up by name; a library's bases are taken to run none (torch's and PyG's do not)."""
        from pytest_graphnetz.runner.fingerprint.reach import analyse

        if info.hooks:
            return True
        for name in names:
            if (where[1] or "", name) in seen:
                continue
            seen.add((where[1] or "", name))
            if name in info.class_bases:
                if self.creates_hooked(where, info, info.class_bases[name], seen):
                    return True
                continue
            binding = info.bindings.get(name)
            found = None if binding is None else self.resolve_module(where, binding)
            if found is None or found[1] is None or not is_project_file(found[1]):
                continue
            with contextlib.suppress(OSError):
                target = analyse(*_stamp(found[1]))
                if target is None or target.dynamic:
                    return True
                there = [binding.member] if binding.member and found[0] == self.absolute(
                    where, binding) else list(target.class_bases)
                if self.creates_hooked(found, target, there, seen):
                    return True
        return False

    def packages_above(self, where: _Where) -> None:
        name, _, search, fresh = where
        parts = name.split(".")
        for i in range(1, len(parts)):
            found, file = locate(".".join(parts[:i]), search, fresh)
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
        resolved = absolute_imports(((binding.module, binding.level, ()),), package)
        return resolved[0][0] if resolved else ""

    def resolve_module(self, where: _Where, binding: Any) -> _Where | None:
        module = self.absolute(where, binding)
        if binding.member is not None:
            found, file = locate(f"{module}.{binding.member}", where[2], where[3])
            if found:
                return (f"{module}.{binding.member}", file, where[2], where[3])
        found, file = locate(module, where[2], where[3]) if module else (False, None)
        return (module, file, where[2], where[3]) if found else None

    def follow(self, where: _Where, binding: Any, attrs: tuple[str, ...]) -> None:
        """Where ``binding`` (read with ``attrs``) leads: a definition of another module, or
        a module used as a value (counted whole)."""
        module = self.absolute(where, binding)
        if not module:
            return
        _, search, fresh = where[1], where[2], where[3]
        found, file = locate(module, search, fresh)
        if not found:
            return
        current: _Where = (module, file, search, fresh)
        self.info(current)
        rest = list(attrs) if binding.member is None else [binding.member, *attrs]
        if binding.member is None and "." in module:   # `import a.b` binds a: start at a
            top = module.partition(".")[0]
            found, file = locate(top, search, fresh)
            current = (top, file, search, fresh)
        while rest:
            sub = f"{current[0]}.{rest[0]}"
            found, file = locate(sub, search, fresh)
            if not found:
                break
            current = (sub, file, search, fresh)
            self.info(current)
            rest.pop(0)
        if current[1] is None or not is_project_file(current[1]):
            _count_library(self.libraries, current)
        elif rest:
            self.todo.append((current, rest[0], tuple(rest[1:])))
        else:
            self.whole.append(current)   # the module object itself is used


def _count_library(libraries: dict[str, str | None], where: _Where) -> None:
    """Count module ``where`` (not a project file) by its library's version; a namespace package
    of the project (a folder without ``__init__.py``) holds no code and is no library."""
    name, file, search, fresh = where
    top = name.partition(".")[0]
    if file is None:
        spec = None if name in sys.modules and not fresh else find_spec(name, search, fresh)
        portions = [] if spec is None or spec.loader is not None else \
            list(spec.submodule_search_locations or ())
        if portions and not any(in_library_location(p) for p in portions):
            return
    if libraries.get(top) is None:
        libraries[top] = file


def _label(target: Any) -> str:
    """How an error names ``target``: a script's path, a callable's module and name."""
    if isinstance(target, (str, os.PathLike)):
        return os.fspath(target)
    return f"{getattr(target, '__module__', '?')}.{getattr(target, '__qualname__', target)}"


def _stamp(file: str | None) -> tuple[str, int, int]:
    st = os.stat(file or "")
    return file or "", st.st_mtime_ns, st.st_size


def _whole_closure(todo: list[_Where], digests: set[str], libraries: dict[str, str | None],
                   seen: set[str]) -> None:
    """Each module of ``todo`` whole, and every module it imports, transitively."""
    while todo:
        name, file, search, fresh = todo.pop()
        if file is None or not is_project_file(file):
            _count_library(libraries, (name, file, search, fresh))
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
        for module, members in absolute_imports(imports, package):
            parts = module.split(".")
            for i in range(1, len(parts) + 1):  # `import a.b` runs a/__init__.py too
                found, found_file = locate(".".join(parts[:i]), search, fresh)
                if found:
                    todo.append((".".join(parts[:i]), found_file, search, fresh))
            if found and found_file is not None and is_project_file(found_file) \
                    and os.path.basename(found_file) == "__init__.py":
                # `from package import name`: name may be a submodule (of a project package
                # only: a library's submodules count through its version already).
                for member in members:
                    found, found_file = locate(f"{module}.{member}", search, fresh)
                    if found:
                        todo.append((f"{module}.{member}", found_file, search, fresh))


def _target_module(target: Any) -> tuple[str, str | None, tuple[str, ...], bool]:
    """``(module name, source file or None, import search path, fresh)`` where ``target``
    lives; ``fresh`` for a script, whose imports resolve as in a new process (not through
    this process's ``sys.modules``)."""
    if isinstance(target, (str, os.PathLike)):
        path = os.path.abspath(os.fspath(target))
        return "__main__", source_file(path), script_search_path(path), True
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
    return (module.__name__, source_file(getattr(module, "__file__", None)), tuple(sys.path),
            False)


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


def _library_versions(libraries: dict[str, str | None]) -> list[str]:
    """``top==version`` for each non-stdlib top-level module of ``libraries`` (name → a source
    file of it, or None): the version of the distribution that provides it ("?" when none does),
    read from the installation, never from the imported module (a process that has imported
    ``xdist`` and one that has not must give one key). A library installed into a project folder
    (``pip install --target``) counts by the ``*.dist-info`` beside it."""
    out = []
    for top in sorted(set(libraries) - set(sys.stdlib_module_names) - {"", "__main__"}):
        file = libraries[top]
        into = None if file is None or in_environment(file) else \
            installed_into(os.path.realpath(file))
        version = installed_tops(into[0])[into[1]] if into else installed_version(top)
        out.append(f"{top}=={version}")
    return out
