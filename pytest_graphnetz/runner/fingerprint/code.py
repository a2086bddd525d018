"""The identity of code: a callable's qualified name and a hash of its *normalised* code (the
syntax tree without docstrings, so comments, docstrings and formatting do not count, while every
name, number and statement does), plus what it names in its own module."""

from __future__ import annotations

import ast
import contextlib
import functools
import hashlib
import inspect
import os
import sys
import textwrap
import weakref
from collections.abc import Iterable
from typing import Any


def callable_identity(fn: Any) -> dict[str, str | None]:
    """``{"name": module.qualname, "code": sha256 of the normalised code or None}`` of a callable
    (or of a whole module, whose every function then counts).

    The code is the normalised code of the callable — ``ast.dump`` of its syntax tree without
    position attributes and without the docstring of each module, class and function, or its
    raw source when that does not parse alone (a lambda cut out of a larger expression) — plus,
    recursively, that of the module-level functions and classes of its own module that it
    names, and the ``repr`` of the plain constants (numbers, strings, tuples/lists/dicts of
    them) it names: an edit to a helper that ``forward`` calls, or to ``HIDDEN = 16``, changes
    the identity. Renaming a variable changes it too (a rename never changes a result, but
    telling a rename from a meaningful edit is not worth a stale cache hit).
    ``functools.partial`` objects are resolved to their function plus the repr of their bound
    arguments; callables whose source cannot be read (builtins, C extensions) get ``None``.
    """
    bound = ""
    while isinstance(fn, functools.partial):
        bound += f"partial{fn.args!r}{sorted(fn.keywords.items())!r}"
        fn = fn.func
    target: Any
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


_Parsed = tuple[str | None, ast.Module | None]
# What the identity reads of one object's code: its normalised text (``ast.dump`` of the tree,
# or the raw source when it does not parse alone; None: no source) and the names it uses.
_Normalised = tuple[str | None, frozenset[str]]

# Per live object: the stamp of its source file and what `_normalised` made of it. A class's
# source costs a parse of its whole module file (inspect.findsource) and a dump of its tree,
# for every triple that names it; the same object with an unchanged file has the same source.
# Weak keys: a reloaded module's new objects are new keys, and a collected object's entry goes
# with it.
_PARSED: weakref.WeakKeyDictionary[Any, tuple[tuple[str, int, int], _Normalised]] = \
    weakref.WeakKeyDictionary()


def _normalised(obj: Any) -> _Normalised:
    """``obj``'s normalised code and the names in it (:data:`_Normalised`), parsed and dumped
    once per object and version of its file."""
    stamp = _file_stamp(obj)
    try:
        hit = _PARSED.get(obj)
    except TypeError:   # not weakly referenceable: parsed each time
        hit = None
    if stamp is not None and hit is not None and hit[0] == stamp:
        return hit[1]
    source, tree = parse_now(obj)
    found: _Normalised = (source, frozenset())
    if tree is not None:
        found = (ast.dump(tree), frozenset(n.id for n in ast.walk(tree)
                                           if isinstance(n, ast.Name)))
    if stamp is not None:
        with contextlib.suppress(TypeError):
            _PARSED[obj] = (stamp, found)
    return found


def _file_stamp(obj: Any) -> tuple[str, int, int] | None:
    """Path, mtime (ns) and size of the file ``obj``'s source is read from (as linecache checks
    it), or None."""
    try:
        path = inspect.getsourcefile(obj)
        if path is None:
            return None
        st = os.stat(path)
    except (OSError, TypeError):
        return None
    return path, st.st_mtime_ns, st.st_size


def parse_now(obj: Any) -> _Parsed:
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


def without_docstrings(tree: ast.Module) -> ast.Module:
    """``tree`` with the docstring of each module, class and function removed (in place)."""
    return _without_docstrings(tree)


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
    """The normalised code of ``target`` and of the same-module globals it names, in a stable
    order; None when ``target``'s own source cannot be read."""
    text, names = _normalised(target)
    if text is None:
        return None
    parts = [text]
    if inspect.ismodule(target):
        return parts  # every function of the module is in its own source already
    seen, todo = {id(target)}, [(target, names)]
    while todo:
        obj, names = todo.pop()
        module = sys.modules.get(getattr(obj, "__module__", None) or "")
        namespace = vars(module) if module is not None else {}
        for ref in sorted(names & namespace.keys()):
            value = namespace[ref]
            if (inspect.isfunction(value) or inspect.isclass(value)) \
                    and getattr(value, "__module__", None) == obj.__module__:
                if id(value) not in seen:
                    seen.add(id(value))
                    ref_text, ref_names = _normalised(value)
                    todo.append((value, ref_names))
                    parts.append(f"{ref}={ref_text}")
            elif is_plain(value):
                parts.append(f"{ref}={value!r}")
    return parts


def is_plain(value: Any, depth: int = 0) -> bool:
    """Numbers, strings, None, and lists/tuples/dicts of them (a config constant)."""
    if value is None or isinstance(value, (bool, int, float, complex, str, bytes)):
        return True
    if depth > 3:
        return False
    if isinstance(value, (list, tuple)):
        return all(is_plain(v, depth + 1) for v in value)
    if isinstance(value, dict):
        return all(is_plain(k, depth + 1) and is_plain(v, depth + 1) for k, v in value.items())
    return False



def names_in_code(fn: Any, names: Iterable[str]) -> set[str]:
    """Which of ``names`` appear as a name or attribute (``NeighborLoader``,
    ``loader.NeighborLoader``) in the code :func:`callable_identity` hashes for ``fn``: its own
    and that of the same-module functions and classes it names. Empty when the code cannot
    be read."""
    while isinstance(fn, functools.partial):
        fn = fn.func
    target = fn if (inspect.isfunction(fn) or inspect.ismethod(fn) or inspect.isclass(fn)
                    or inspect.ismodule(fn)) else type(fn)
    wanted = set(names)
    found: set[str] = set()
    for part in _code_closure(target) or ():
        found.update(n for n in wanted if f"id='{n}'" in part or f"attr='{n}'" in part)
    return found
