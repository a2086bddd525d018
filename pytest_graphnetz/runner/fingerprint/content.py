"""Content fingerprints (sha256 hex) of task data and built models, stable across processes.

- :func:`data_fingerprint`: every tensor of the data (features, edges, labels, split masks...)
  by name, dtype, shape and bytes. Two runs pair only when this matches per seed.
- :func:`model_fingerprint`: the *built* model (repr, parameter/buffer names, shapes, dtypes
  and initial bytes), the code of its user-defined module classes and the factory's identity.
  Whatever changes the built model — source, a global, an env var, a config file — changes it.
- :func:`file_sha256`: a file's bytes (a command task's data files, a dataset's manifest).
"""

from __future__ import annotations

import hashlib
import sys
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

from pytest_graphnetz.runner.fingerprint.code import callable_identity

# Modules whose classes are versioned with their library (the versions enter the cache key);
# the source of every other nn.Module class in a model is hashed.
_LIBRARY_PREFIXES = ("torch.", "torch_geometric.")


def data_fingerprint(data: Any) -> str:
    """sha256 of everything a loader returned (a ``Data``, a dataset, tuples/dicts of them)."""
    h = hashlib.sha256()
    _feed(h, data)
    return h.hexdigest()


def file_sha256(path: Path) -> str:
    """The sha256 of the bytes of the file at ``path``, read in blocks of 1 MiB."""
    h = hashlib.sha256()
    with path.open("rb") as fh:
        for block in iter(lambda: fh.read(1 << 20), b""):
            h.update(block)
    return h.hexdigest()


def _feed(h: Any, obj: Any) -> None:
    """Hash ``obj`` into ``h``, type-tagged so different structures never collide trivially."""
    import numpy as np

    if _feed_library_value(h, obj):
        return
    if isinstance(obj, np.ndarray):
        h.update(f"ndarray:{obj.dtype.str}:{obj.shape};".encode())
        h.update(np.ascontiguousarray(obj).tobytes())
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


def _feed_library_value(h: Any, obj: Any) -> bool:
    """Hash ``obj`` if it is a tensor, a PyG ``Data`` or a dataset; whether it was one.

    Such a value exists only once its library is imported, so neither is imported here: a
    loader that returns plain values (a command task's file digests) is hashed without them."""
    torch: Any = sys.modules.get("torch")
    if torch is None:
        return False
    if isinstance(obj, torch.Tensor):
        _feed_tensor(h, obj)
        return True
    if "torch_geometric" in sys.modules:
        from torch_geometric.data import Dataset, InMemoryDataset
        from torch_geometric.data.data import BaseData

        if isinstance(obj, BaseData):
            h.update(f"{type(obj).__qualname__}{{".encode())
            _feed(h, obj.to_dict())
            h.update(b"}")
            return True
        if isinstance(obj, InMemoryDataset):
            # Hash the collated storage once instead of materialising every graph.
            h.update(f"{type(obj).__qualname__}[".encode())
            _feed(h, obj._data)
            _feed(h, obj.slices)
            _feed(h, None if obj._indices is None else list(obj.indices()))
            h.update(b"]")
            return True
        datasets: tuple[type, ...] = (Dataset, torch.utils.data.Dataset)
    else:
        datasets = (torch.utils.data.Dataset,)
    if isinstance(obj, datasets) and hasattr(obj, "__len__"):
        dataset: Any = obj
        h.update(f"{type(dataset).__qualname__}[{len(dataset)}:".encode())
        for i in range(len(dataset)):
            _feed(h, dataset[i])
        h.update(b"]")
        return True
    return False


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



def model_fingerprint(model: Any, factory: Callable[..., Any] | None = None) -> str:
    """sha256 of a built ``torch.nn.Module`` and the factory that built it.

    Covers ``repr(model)``, each submodule's class, ``extra_repr()`` and plain attributes
    (numbers, strings, flags), every parameter and buffer (name, dtype, shape, initial bytes),
    :func:`callable_identity` of each non-library module class it contains and of the factory.
    Lazy (uninitialised) parameters contribute their name only.
    """
    from torch.nn.parameter import UninitializedParameter

    h = hashlib.sha256()
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

