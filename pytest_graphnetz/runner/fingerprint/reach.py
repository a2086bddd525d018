"""A module's code at the grain of its definitions, for :func:`~.project.project_code_key`.

:func:`analyse` splits a module's top-level statements into *definitions* (functions, classes,
assignments to plain names, imports: each by the names it binds) and *other statements*
(expressions, ``if``/``try``/``for`` blocks, assignments to subscripts or attributes, argparse
calls: what runs at import whatever is used). Each definition has the digest of its normalised
code and the names it references (``name`` or ``name.attr.attr``); a definition whose statement
calls something at import (``X = register(GAT)``, a call in a class body or a default value)
is named in ``runs_at_import``, as it runs whatever is used. A module whose reach cannot
be seen is *dynamic* and counts whole: ``globals()``, ``locals()``, ``vars()``, ``eval``,
``exec``, ``sys.modules``, ``__dict__`` of an imported name, ``getattr``/``setattr`` with a
computed name on an imported name, ``import_module``/``__import__`` with a computed name, a
star import, or a decorator that is not a known pure wrapper (a registry's ``@register``).
"""

from __future__ import annotations

import ast
import functools
import hashlib
import warnings
from dataclasses import dataclass, field

Ref = tuple[str, tuple[str, ...]]   # (name, attributes read from it)

# Decorators that wrap a definition without registering it anywhere (by their last name).
_PURE_DECORATORS = frozenset({
    "property", "staticmethod", "classmethod", "cached_property", "wraps", "cache",
    "lru_cache", "dataclass", "abstractmethod", "overload", "final", "override", "no_grad",
    "inference_mode", "enable_grad", "total_ordering", "singledispatch", "setter", "getter",
    "deleter", "contextmanager", "asynccontextmanager", "unique", "runtime_checkable",
    "fixture", "parametrize", "skipif", "skip", "xfail", "usefixtures", "filterwarnings"})
_DYNAMIC_CALLS = frozenset({"globals", "locals", "eval", "exec"})


@dataclass
class Binding:
    """An import binding: ``import module`` (member None) or ``from module import member``."""

    module: str
    level: int
    member: str | None


@dataclass
class ModuleInfo:
    dynamic: bool
    others: str                                   # digest of the other statements ("": none)
    other_refs: list[Ref]
    defs: dict[str, tuple[str, list[Ref]]]        # name -> (digest, refs)
    nested: dict[str, list[Binding]]              # imports inside a definition, by its name
    effects: list[Binding]                        # import_module("literal") anywhere
    bindings: dict[str, Binding]
    imports: list[Binding]                        # what each import that runs at import loads
    runs_at_import: list[str]                     # definitions that call something at import
    # Class creation that can run code elsewhere: this module defines `__init_subclass__`,
    # `__set_name__`, a metaclass or a `metaclass=` keyword (``hooks``); the names each of its
    # top-level classes derives from (``class_bases``), where such code may live.
    hooks: bool
    class_bases: dict[str, list[str]]
    lambdas: dict[int, tuple[str, list[Ref]]] = field(default_factory=dict)  # by line
    all_refs: list[Ref] = field(default_factory=list)


def _refs(node: ast.AST) -> list[Ref]:
    """Every ``name`` and ``name.a.b`` that ``node`` reads."""
    out: list[Ref] = []
    inner: set[int] = set()
    for sub in ast.walk(node):
        if isinstance(sub, ast.Attribute) and id(sub) not in inner:
            attrs: list[str] = []
            cur: ast.AST = sub
            while isinstance(cur, ast.Attribute):
                inner.add(id(cur))
                attrs.append(cur.attr)
                cur = cur.value
            if isinstance(cur, ast.Name):
                inner.add(id(cur))
                out.append((cur.id, tuple(reversed(attrs))))
        elif isinstance(sub, ast.Name) and id(sub) not in inner:
            out.append((sub.id, ()))
    return out


def _import_bindings(stmt: ast.Import | ast.ImportFrom) -> list[tuple[str, Binding]]:
    """``(bound name, binding)`` of each name an import statement binds (not ``*``)."""
    if isinstance(stmt, ast.Import):
        return [(a.asname or a.name.partition(".")[0],
                 Binding(a.name if a.asname else a.name.partition(".")[0], 0, None))
                for a in stmt.names]
    return [(a.asname or a.name, Binding(stmt.module or "", stmt.level, a.name))
            for a in stmt.names if a.name != "*"]


def _dotted(node: ast.AST) -> str:
    while isinstance(node, ast.Call):
        node = node.func
    while isinstance(node, ast.Attribute):
        return node.attr
    return node.id if isinstance(node, ast.Name) else ""


def _calls_at_import(stmt: ast.AST) -> bool:
    """Whether defining ``stmt`` calls something: in an assignment's value, a class body (not
    inside its methods), a class's bases or a function's default values."""
    if isinstance(stmt, (ast.Assign, ast.AnnAssign)):
        runs: list[ast.AST] = [stmt.value] if stmt.value is not None else []
    elif isinstance(stmt, ast.ClassDef):
        runs = [*stmt.bases, *stmt.keywords, *(s for s in stmt.body if not isinstance(
            s, (ast.FunctionDef, ast.AsyncFunctionDef)))]
        runs += [d for s in stmt.body if isinstance(s, (ast.FunctionDef, ast.AsyncFunctionDef))
                 for d in (*s.args.defaults, *s.args.kw_defaults) if d is not None]
    elif isinstance(stmt, (ast.FunctionDef, ast.AsyncFunctionDef)):
        runs = [d for d in (*stmt.args.defaults, *stmt.args.kw_defaults) if d is not None]
    else:
        return False
    while runs:   # a lambda's body runs when it is called, not here
        node = runs.pop()
        if isinstance(node, ast.Call):
            return True
        if not isinstance(node, ast.Lambda):
            runs.extend(ast.iter_child_nodes(node))
    return False


def _class_hooks(node: ast.ClassDef) -> bool:
    """Whether creating ``node`` or a subclass of it runs code of its own."""
    return any(k.arg == "metaclass" for k in node.keywords) or \
        any(_dotted(b) == "type" for b in node.bases) or \
        any(isinstance(s, (ast.FunctionDef, ast.AsyncFunctionDef))
            and s.name in ("__init_subclass__", "__set_name__")
            for s in node.body)


def _digest(nodes: list[ast.AST]) -> str:
    return hashlib.sha256("\n".join(ast.dump(n) for n in nodes).encode()).hexdigest()


@functools.lru_cache(maxsize=4096)
def analyse(path: str, mtime_ns: int, size: int) -> ModuleInfo | None:
    """The :class:`ModuleInfo` of the source file ``path`` at this version; None when it does
    not parse (it then counts by its bytes, whole)."""
    from pytest_graphnetz.runner.fingerprint.code import without_docstrings

    try:
        with open(path, "rb") as fh, warnings.catch_warnings():
            warnings.simplefilter("ignore")
            tree = without_docstrings(ast.parse(fh.read(), filename=path))
    except (SyntaxError, ValueError, OSError):
        return None
    bindings, defs, others, star = _top_level(tree)
    dynamic = star or _dynamic(tree, set(bindings))
    lambdas: dict[int, list[ast.Lambda]] = {}
    for node in ast.walk(tree):
        if isinstance(node, ast.Lambda):
            lambdas.setdefault(node.lineno, []).append(node)
    nested = {name: [b for stmt in stmts if not isinstance(stmt, (ast.Import, ast.ImportFrom))
                     for inner in ast.walk(stmt) if isinstance(inner, (ast.Import, ast.ImportFrom))
                     for _, b in _import_bindings(inner)]
              for name, stmts in defs.items()}
    effects = [Binding(node.args[0].value, 0, None) for node in ast.walk(tree)
               if isinstance(node, ast.Call) and _dotted(node.func) in ("import_module",
                                                                        "__import__")
               and node.args and isinstance(node.args[0], ast.Constant)
               and isinstance(node.args[0].value, str)]
    classes = [s for s in tree.body if isinstance(s, ast.ClassDef)]
    imports = [Binding(a.name, 0, None) if isinstance(node, ast.Import)
               else Binding(node.module or "", node.level, a.name)
               for stmt in tree.body
               if not isinstance(stmt, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef))
               for node in ast.walk(stmt) if isinstance(node, (ast.Import, ast.ImportFrom))
               for a in node.names if a.name != "*"]
    return ModuleInfo(
        dynamic=dynamic, others=_digest(others) if others else "",
        other_refs=[r for stmt in others for r in _refs(stmt)],
        defs={name: (_digest(stmts), [r for s in stmts for r in _refs(s)])
              for name, stmts in defs.items()},
        nested=nested, effects=effects, bindings=bindings, imports=imports,
        runs_at_import=sorted({name for name, stmts in defs.items()
                               if any(_calls_at_import(s) for s in stmts)}),
        hooks=any(_class_hooks(n) for n in ast.walk(tree) if isinstance(n, ast.ClassDef)),
        class_bases={c.name: [r[0] for b in (*c.bases, *c.keywords) for r in _refs(b)]
                     for c in classes},
        lambdas={line: (_digest(list(nodes)), [r for n in nodes for r in _refs(n)])
                 for line, nodes in lambdas.items()},
        all_refs=_refs(tree))


def _top_level(tree: ast.Module) -> tuple[dict[str, Binding], dict[str, list[ast.AST]],
                                          list[ast.AST], bool]:
    """The module's top-level statements by job: the names its imports bind (also inside a
    ``try:`` or ``if``), the statements that define each name (a def, a class, an import, a
    plain assignment), every other statement, and whether a star import binds unknown names."""
    bindings: dict[str, Binding] = {}
    defs: dict[str, list[ast.AST]] = {}
    others: list[ast.AST] = []
    star = False
    for stmt in tree.body:
        names: list[str] = []
        if isinstance(stmt, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            names = [stmt.name]
        elif isinstance(stmt, (ast.Import, ast.ImportFrom)):
            if isinstance(stmt, ast.ImportFrom) and any(a.name == "*" for a in stmt.names):
                star = True
            for bound, binding in _import_bindings(stmt):
                bindings[bound] = binding
                names.append(bound)
        elif isinstance(stmt, ast.Assign) and all(
                isinstance(t, ast.Name) or isinstance(t, ast.Tuple)
                and all(isinstance(e, ast.Name) for e in t.elts) for t in stmt.targets):
            for t in stmt.targets:
                if isinstance(t, ast.Name):
                    names.append(t.id)
                elif isinstance(t, ast.Tuple):
                    names += [e.id for e in t.elts if isinstance(e, ast.Name)]
        elif isinstance(stmt, ast.AnnAssign) and isinstance(stmt.target, ast.Name) \
                and stmt.value is not None:
            names = [stmt.target.id]
        if names:
            for name in names:
                defs.setdefault(name, []).append(stmt)
        else:
            others.append(stmt)
            for inner in ast.walk(stmt):   # `try: import yaml` binds a module-level name too
                if isinstance(inner, (ast.Import, ast.ImportFrom)):
                    for bound, binding in _import_bindings(inner):
                        bindings.setdefault(bound, binding)
    return bindings, defs, others, star


def _dynamic(tree: ast.Module, imported: set[str]) -> bool:
    """Whether the module reaches names in ways reach cannot follow: a decorator that is not
    known to be pure, ``exec``-like calls, ``vars()``, a computed attribute of an ``imported``
    module, a computed import, an imported module's ``__dict__`` or ``sys.modules``."""
    for node in ast.walk(tree):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            if any(_dotted(d) not in _PURE_DECORATORS for d in node.decorator_list):
                return True
        elif isinstance(node, ast.Call):
            fn = _dotted(node.func)
            literal = len(node.args) >= 2 and isinstance(node.args[1], ast.Constant)
            computed_attribute = fn in ("getattr", "setattr", "hasattr", "delattr") and \
                not literal and bool(node.args) and isinstance(node.args[0], ast.Name) and \
                node.args[0].id in imported
            computed_import = fn in ("import_module", "__import__") and not (
                node.args and isinstance(node.args[0], ast.Constant))
            if fn in _DYNAMIC_CALLS or (fn == "vars" and not node.args) or \
                    computed_attribute or computed_import:
                return True
        elif isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name) and (
                node.attr == "__dict__" and node.value.id in imported
                or node.attr == "modules" and node.value.id == "sys"):
            return True
    return False
