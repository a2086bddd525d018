"""Content fingerprints (sha256 hex) of task data, built models and code, stable across processes.

- :func:`data_fingerprint`: every tensor of the data (features, edges, labels, split masks...)
  by name, dtype, shape and bytes. Two runs pair only when this matches per seed.
- :func:`model_fingerprint`: the *built* model (repr, parameter/buffer names, shapes, dtypes
  and initial bytes), the code of its user-defined module classes and the factory's identity.
  Whatever changes the built model — source, a global, an env var, a config file — changes it.
- :func:`callable_identity`: a function's qualified name and a hash of its *normalised* code:
  the syntax tree without docstrings, so comments, docstrings and formatting do not count, while
  every name, number and statement does — plus the module-level functions, classes and plain
  constants of its own module that it names (a helper or a ``DROPOUT = 0.5`` used in ``forward``).
- :func:`project_code_key`: the whole normalised code of every project module (not a library's)
  that callables or scripts import, transitively, and the versions of the libraries they import.
- :func:`callable_state` and :func:`data_files_stamp` (with :func:`recording_opened_files`):
  what a loader carries and the files it read, so a cache hit can skip running it.
"""

from __future__ import annotations

import ast
import contextlib
import functools
import hashlib
import inspect
import os
import sys
import textwrap
import threading
import warnings
from collections.abc import Callable, Iterable, Iterator, Mapping
from typing import Any

# Modules whose classes are versioned with their library (the versions enter the cache key);
# the source of every other nn.Module class in a model is hashed.
_LIBRARY_PREFIXES = ("torch.", "torch_geometric.")


def _hasher() -> Any:
    return hashlib.sha256()


def data_fingerprint(data: Any) -> str:
    """sha256 of everything a loader returned (a ``Data``, a dataset, tuples/dicts of them)."""
    h = _hasher()
    _feed(h, data)
    return h.hexdigest()


def _feed(h: Any, obj: Any) -> None:
    """Hash ``obj`` into ``h``, type-tagged so different structures never collide trivially."""
    import numpy as np
    import torch
    from torch_geometric.data import Dataset, InMemoryDataset
    from torch_geometric.data.data import BaseData

    if isinstance(obj, torch.Tensor):
        _feed_tensor(h, obj)
    elif isinstance(obj, np.ndarray):
        h.update(f"ndarray:{obj.dtype.str}:{obj.shape};".encode())
        h.update(np.ascontiguousarray(obj).tobytes())
    elif isinstance(obj, BaseData):
        h.update(f"{type(obj).__qualname__}{{".encode())
        _feed(h, obj.to_dict())
        h.update(b"}")
    elif isinstance(obj, InMemoryDataset):
        # Hash the collated storage once instead of materialising every graph.
        h.update(f"{type(obj).__qualname__}[".encode())
        _feed(h, obj._data)
        _feed(h, obj.slices)
        _feed(h, None if obj._indices is None else list(obj.indices()))
        h.update(b"]")
    elif isinstance(obj, (Dataset, torch.utils.data.Dataset)) and hasattr(obj, "__len__"):
        h.update(f"{type(obj).__qualname__}[{len(obj)}:".encode())
        for i in range(len(obj)):
            _feed(h, obj[i])
        h.update(b"]")
    elif isinstance(obj, Mapping):
        h.update(b"{")
        for key in sorted(obj, key=repr):
            h.update(repr(key).encode() + b":")
            _feed(h, obj[key])
        h.update(b"}")
    elif isinstance(obj, (list, tuple)):
        h.update(f"{type(obj).__name__}[".encode())
        for v in obj:
            _feed(h, v)
        h.update(b"]")
    elif obj is None or isinstance(obj, (bool, int, float, str, bytes)):
        h.update(f"{type(obj).__name__}:{obj!r};".encode())
    elif hasattr(obj, "__dict__"):
        h.update(f"{type(obj).__module__}.{type(obj).__qualname__}".encode())
        _feed(h, vars(obj))
    else:
        h.update(f"{type(obj).__qualname__}:{obj!r};".encode())


def _feed_tensor(h: Any, t: Any) -> None:
    import torch

    if t.is_sparse:
        t = t.coalesce()
        h.update(f"sparse:{tuple(t.shape)};".encode())
        _feed_tensor(h, t.indices())
        _feed_tensor(h, t.values())
        return
    h.update(f"tensor:{t.dtype}:{tuple(t.shape)};".encode())
    # Viewing as bytes works for every dtype numpy lacks (bfloat16, complex32...).
    flat = t.detach().cpu().contiguous().reshape(-1)
    h.update(flat.view(torch.uint8).numpy().tobytes())


def callable_identity(fn: Any) -> dict[str, str | None]:
    """``{"name": module.qualname, "code": sha256 of the normalised code or None}`` of a callable
    (or of a whole module, whose every function then counts).

    The code is :func:`normalised_code` of the callable plus, recursively, of the module-level
    functions and classes of its own module that it names, and the ``repr`` of the plain
    constants (numbers, strings, tuples/lists/dicts of them) it names: an edit to a helper that
    ``forward`` calls, or to ``HIDDEN = 16``, changes the identity. ``functools.partial``
    objects are resolved to their function plus the repr of their bound arguments; callables
    whose source cannot be read (builtins, C extensions) get ``None``.
    """
    import functools

    bound = ""
    while isinstance(fn, functools.partial):
        bound += f"partial{fn.args!r}{sorted(fn.keywords.items())!r}"
        fn = fn.func
    if inspect.ismodule(fn):
        target, name = fn, fn.__name__
    else:
        target = fn if (inspect.isfunction(fn) or inspect.ismethod(fn) or inspect.isclass(fn)) \
            else type(fn)
        qualname = getattr(target, "__qualname__", repr(target))
        name = f"{getattr(target, '__module__', '?')}.{qualname}"
    parts = _code_closure(target)
    code = None if parts is None else hashlib.sha256("\n".join(parts).encode()).hexdigest()
    return {"name": name + bound, "code": code}


def normalised_code(obj: Any) -> str | None:
    """The code of a function, class or module with docstrings, comments and formatting removed.

    ``ast.dump`` of its syntax tree without position attributes and without the docstring of
    each module, class and function: renaming a variable or changing a number still changes it
    (a rename never changes a result, but telling a rename from a meaningful edit is not worth
    a stale cache hit). None when the source cannot be read; the raw source text when it does
    not parse alone (a lambda cut out of a larger expression).
    """
    source, tree = _parse(obj)
    return ast.dump(tree) if tree is not None else source


def _parse(obj: Any) -> tuple[str | None, ast.Module | None]:
    """``obj``'s source and its syntax tree without docstrings (None for what is missing)."""
    try:
        source = inspect.getsource(obj)
    except (OSError, TypeError):
        return None, None
    try:
        tree = ast.parse(textwrap.dedent(source))
    except SyntaxError:
        return source, None
    return source, _without_docstrings(tree)


def normalised_source(text: str) -> str:
    """A file's source ``text`` without comments, docstrings and formatting (``ast.dump``);
    a text that is not Python (a shell script) counts as it is."""
    try:
        tree = ast.parse(text)
    except SyntaxError:
        return text
    return ast.dump(_without_docstrings(tree))


def _without_docstrings(tree: ast.Module) -> ast.Module:
    """``tree`` with the docstring of each module, class and function removed (in place)."""
    for node in ast.walk(tree):
        if isinstance(node, (ast.Module, ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef)):
            body = node.body
            if body and isinstance(body[0], ast.Expr) and isinstance(body[0].value, ast.Constant) \
                    and isinstance(body[0].value.value, str):
                node.body = body[1:] or [ast.Pass()]
    return tree


def _code_closure(target: Any) -> list[str] | None:
    """:func:`normalised_code` of ``target`` and of the same-module globals it names, in a
    stable order; None when ``target``'s own source cannot be read."""
    source, tree = _parse(target)
    if source is None:
        return None
    parts = [ast.dump(tree) if tree is not None else source]
    if inspect.ismodule(target):
        return parts  # every function of the module is in its own source already
    seen, todo = {id(target)}, [(target, tree)]
    while todo:
        obj, obj_tree = todo.pop()
        if obj_tree is None:
            continue
        module = sys.modules.get(getattr(obj, "__module__", None) or "")
        namespace = vars(module) if module is not None else {}
        names = {n.id for n in ast.walk(obj_tree) if isinstance(n, ast.Name)}
        for ref in sorted(names & namespace.keys()):
            value = namespace[ref]
            if (inspect.isfunction(value) or inspect.isclass(value)) \
                    and getattr(value, "__module__", None) == obj.__module__:
                if id(value) not in seen:
                    seen.add(id(value))
                    ref_source, ref_tree = _parse(value)
                    todo.append((value, ref_tree))
                    parts.append(f"{ref}=" + (ast.dump(ref_tree) if ref_tree is not None
                                              else str(ref_source)))
            elif _is_plain(value):
                parts.append(f"{ref}={value!r}")
    return parts


def _is_plain(value: Any, depth: int = 0) -> bool:
    """Numbers, strings, None, and lists/tuples/dicts of them (a config constant)."""
    if value is None or isinstance(value, (bool, int, float, complex, str, bytes)):
        return True
    if depth > 3:
        return False
    if isinstance(value, (list, tuple)):
        return all(_is_plain(v, depth + 1) for v in value)
    if isinstance(value, dict):
        return all(_is_plain(k, depth + 1) and _is_plain(v, depth + 1) for k, v in value.items())
    return False


def model_fingerprint(model: Any, factory: Callable[..., Any] | None = None) -> str:
    """sha256 of a built ``torch.nn.Module`` and the factory that built it.

    Covers ``repr(model)``, each submodule's class, ``extra_repr()`` and plain attributes
    (numbers, strings, flags), every parameter and buffer (name, dtype, shape, initial bytes),
    :func:`callable_identity` of each non-library module class it contains and of the factory.
    Lazy (uninitialised) parameters contribute their name only.
    """
    from torch.nn.parameter import UninitializedParameter

    h = _hasher()
    if factory is not None:
        h.update(repr(sorted(callable_identity(factory).items())).encode())
    h.update(repr(model).encode())
    # A model's repr may hide its settings (PyG's GCN prints no dropout), so every submodule
    # adds its class, extra_repr and plain attributes (dropout p, normalize, jk_mode...).
    for name, module in model.named_modules():
        cls = type(module)
        h.update(f"module:{name}:{cls.__module__}.{cls.__qualname__}:{module.extra_repr()};"
                 .encode())
        h.update(repr(_plain_attributes(module)).encode())
    for kind, named in (("param", model.named_parameters()), ("buffer", model.named_buffers())):
        for name, tensor in named:
            h.update(f"{kind}:{name};".encode())
            if isinstance(tensor, UninitializedParameter):
                h.update(b"uninitialized;")
            elif tensor is not None:
                _feed_tensor(h, tensor)
    classes = {type(m) for m in model.modules()}
    for cls in sorted(classes, key=lambda c: f"{c.__module__}.{c.__qualname__}"):
        if not f"{cls.__module__}.".startswith(_LIBRARY_PREFIXES):
            h.update(repr(sorted(callable_identity(cls).items())).encode())
    return h.hexdigest()


def _plain_attributes(module: Any) -> list[tuple[str, str]]:
    """Sorted ``(name, repr)`` of a module's public attributes holding plain values."""
    plain = (bool, int, float, str, type(None))
    out = []
    for key, value in vars(module).items():
        if key.startswith("_") or key == "training":
            continue
        if isinstance(value, plain) or (isinstance(value, (tuple, list))
                                        and all(isinstance(v, plain) for v in value)):
            out.append((key, repr(value)))
    return sorted(out)


# -- project code: every module of the user's project that a run depends on ---------------------

def project_code_key(targets: Iterable[Any]) -> str:
    """sha256 hex of the project code ``targets`` depend on, for a cache key.

    ``targets``: functions, classes, callable objects, ``functools.partial`` objects, modules,
    or paths (``str`` / ``os.PathLike``) of Python scripts. A command task (a script run in a
    subprocess) passes its script's path and gets the same closure an in-process trainer gets.

    What is in the key:

    - The *closure*: each target's module (for a callable, the module defining it; for a path,
      the script), every module its source imports (``import`` and ``from ... import``
      statements anywhere in the file, inside functions and ``try`` blocks too, and
      ``importlib.import_module("literal")``), transitively, and the packages above each one
      (importing ``a.b`` runs ``a/__init__.py``). Only project modules are followed.
    - A *project module* is a ``.py`` file outside the library locations: the standard library
      and site-packages directories of this interpreter (:mod:`sysconfig`, :mod:`site`), any
      directory named ``site-packages`` or ``dist-packages`` (other virtual environments, tox
      environments) and pytest-graphnetz's own package. So a project's own modules, a sibling
      checkout on ``PYTHONPATH`` and an editable install all count as code; an installed
      library does not.
    - Each project module counts by its whole normalised code (syntax tree without docstrings,
      so comments, docstrings and formatting do not count): every module-level statement is
      in, e.g. an ``argparse`` default, a constant, a helper's body, a loss function in another
      file. A module that does not parse counts by its raw bytes.
    - Every other imported top-level module (a library) counts by its version: its
      ``__version__`` when imported, else that of the installed distribution of its name
      (``importlib.metadata``); the standard library by nothing here (the Python version is in
      the runner's key).

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
    # (module name, source file, search path, whether to resolve without sys.modules)
    todo: list[tuple[str, str | None, tuple[str, ...], bool]] = []
    for target in targets:
        todo.append(_target_module(target))
    digests: set[str] = set()
    libraries: set[str] = set()
    seen: set[str] = set()
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
    payload = {"modules": sorted(digests), "libraries": _library_versions(libraries)}
    return hashlib.sha256(repr(sorted(payload.items())).encode()).hexdigest()


def _target_module(target: Any) -> tuple[str, str | None, tuple[str, ...], bool]:
    """``(module name, source file or None, import search path, fresh)`` where ``target``
    lives; ``fresh`` for a script, whose imports resolve as in a new process (not through
    this process's ``sys.modules``)."""
    if isinstance(target, (str, os.PathLike)):
        path = os.path.abspath(os.fspath(target))
        return "__main__", _source_file(path), (os.path.dirname(path), *sys.path), True
    while isinstance(target, functools.partial):
        target = target.func
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
    dirs.append(os.path.dirname(os.path.abspath(__file__)))
    return tuple(sorted({os.path.realpath(d) for d in dirs if d}))


def _library_versions(tops: set[str]) -> list[str]:
    """``top==version`` for each non-stdlib top-level module in ``tops``: its ``__version__``
    when imported, else the version of the distribution of that name ("?" when neither).

    (Not ``importlib.metadata.packages_distributions``: it reads every installed package's
    file list, 0.3-1.7 s here, on every session.)"""
    import importlib.metadata

    out = []
    for top in sorted(tops - set(sys.stdlib_module_names) - {"", "__main__"}):
        version = getattr(sys.modules.get(top), "__version__", None)
        if not isinstance(version, str):
            try:
                version = importlib.metadata.version(top)
            except (importlib.metadata.PackageNotFoundError, ValueError):
                version = "?"
        out.append(f"{top}=={version}")
    return out


# -- what a loader reads: its carried state and its data files --------------------------------

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
    if _is_plain(value) or isinstance(value, (enum.Enum, os.PathLike)):
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
        path = args[0 if event == "open" else 1] if files is not None and len(args) > 1 \
            else None
        if isinstance(path, (str, bytes, os.PathLike)):
            with contextlib.suppress(Exception):  # never let the hook break the audited call
                files.add(os.path.abspath(os.fsdecode(path)))

    sys.addaudithook(hook)


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


def names_in_code(fn: Any, names: Iterable[str]) -> set[str]:
    """Which of ``names`` appear as a name or attribute (``NeighborLoader``,
    ``loader.NeighborLoader``) in the code :func:`callable_identity` hashes for ``fn``: its own
    and that of the same-module functions and classes it names. Empty when the code cannot
    be read."""
    import functools as _functools

    while isinstance(fn, _functools.partial):
        fn = fn.func
    target = fn if (inspect.isfunction(fn) or inspect.ismethod(fn) or inspect.isclass(fn)
                    or inspect.ismodule(fn)) else type(fn)
    wanted = set(names)
    found: set[str] = set()
    for part in _code_closure(target) or ():
        found.update(n for n in wanted if f"id='{n}'" in part or f"attr='{n}'" in part)
    return found
