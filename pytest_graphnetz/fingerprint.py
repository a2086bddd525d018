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
"""

from __future__ import annotations

import ast
import hashlib
import inspect
import sys
import textwrap
from collections.abc import Callable, Mapping
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
    for node in ast.walk(tree):
        if isinstance(node, (ast.Module, ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef)):
            body = node.body
            if body and isinstance(body[0], ast.Expr) and isinstance(body[0].value, ast.Constant) \
                    and isinstance(body[0].value.value, str):
                node.body = body[1:] or [ast.Pass()]
    return source, tree


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
