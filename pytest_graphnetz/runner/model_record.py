"""The model record: what building a model gave a triple's cache key, kept beside the entries, so
a session whose model code and environment are unchanged neither calls the factory nor imports
torch and PyG.

A triple's key holds the built model's fingerprint (its repr, attributes, parameter shapes and
initial bytes: :func:`~pytest_graphnetz.runner.fingerprint.model_fingerprint`), and its report
the model's description (repr, parameter count). Both are recorded per (factory, channels, seed)
under a key of everything the build can depend on that is known without building:

- the factory's code and the values it carries (``callable_state``), the project code it
  reaches (the triple key's own ``project`` part), and the values the reached project modules
  hold now (:func:`module_state`: a constant a caller changed, one read from a variable at
  import);
- the channels and the seed (the build is reseeded with it), the machine part of the triple
  key (device, library versions, numeric settings), and torch's process defaults that shape a
  built model (default dtype and device: torch's import defaults while torch is not imported,
  which is when nothing can have changed them).

A record is used only while what the build read at run time reads the same: the environment
variables it looked up and the files it opened (size, mtime). Like every record of the cache it
carries a digest of its content and key: a damaged or edited one is discarded and rebuilt,
never trusted.
"""

from __future__ import annotations

import hashlib
import inspect
import os
import sys
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from pytest_graphnetz.runner.cache import canonical_json, make_key

if TYPE_CHECKING:
    from pytest_graphnetz.runner.cache import TripleCache

_SKIPPED_MODULES = ("typing", "typing_extensions", "__future__", "abc")


def module_state(files: frozenset[str]) -> str | None:
    """A stable text of the values held now by the imported project modules whose source is
    among ``files`` (the code a factory reaches): every module-level name that is not a module,
    function, class or typing construct (their code is in the key already). None when one of
    them has no stable text (a logger, an open file): a factory reaching it is built every run.
    """
    from pytest_graphnetz.runner.fingerprint import callable_state

    wanted = {os.path.realpath(f) for f in files}
    # Resolving every imported module's path (hundreds, component by component) would cost
    # more than the rest of a warm session's key; a path whose file is none of the wanted
    # files' cannot resolve to one of them, so one stat rules most modules out first.
    inodes = {_inode(f) for f in wanted}
    found = []
    for name, module in list(sys.modules.items()):
        path = getattr(module, "__file__", None)
        if not isinstance(path, str) or _inode(path) not in inodes \
                or os.path.realpath(path) not in wanted:
            continue
        values = []
        for attribute, value in sorted(vars(module).items()):
            if attribute.startswith("__") or inspect.ismodule(value) or inspect.isroutine(value) \
                    or inspect.isclass(value) \
                    or type(value).__module__ in _SKIPPED_MODULES:
                continue
            text = callable_state(value)
            if text is None:
                return None
            values.append((attribute, text))
        found.append((name, values))
    return canonical_json(sorted(found))


def _inode(path: str) -> tuple[int, int] | None:
    """The (device, inode) of the file at ``path``, following links; None when there is none
    (then only resolving the path can tell)."""
    try:
        st = os.stat(path)
    except (OSError, ValueError):
        return None
    return st.st_dev, st.st_ino


def torch_defaults() -> dict[str, str]:
    """torch's default dtype and device: read from torch where it is imported, its import
    defaults (float32, cpu) where it is not, since nothing can have set them then."""
    torch = sys.modules.get("torch")
    if torch is None:
        return {"dtype": "torch.float32", "device": "cpu"}
    return {"dtype": str(torch.get_default_dtype()), "device": str(torch.get_default_device())}


def record_key(built: Mapping[str, Any] | None, project: Any, channels: list[int], seed: int,
               context: Mapping[str, Any]) -> str | None:
    """The key of the record of a model built with ``channels`` after reseeding with ``seed``:
    ``built`` is the factory's part of the code identities (``callable_state`` and
    :func:`module_state`), ``project`` the project code key, ``context`` the triple key's
    machine part. None when the factory or a module it reaches carries a value with no stable
    text: such a model is built every run."""
    if built is None or built.get("state") is None or built.get("modules") is None:
        return None
    return make_key({"model_record": dict(built), "project": project, "channels": channels,
                     "seed": seed, "torch": torch_defaults(), **context})


def recorded(cache: TripleCache, key: str) -> tuple[str, dict[str, Any]] | None:
    """``(model fingerprint, model description)`` recorded under ``key``, or None: no record,
    a damaged one (the cache warns about it and deletes it: it is rebuilt), or one whose build
    read an environment variable or a file that reads differently now."""
    from pytest_graphnetz.runner.fingerprint import data_files_stamp, environment_unchanged

    record = cache.get_record(key)
    if record is None:
        return None
    if not _usable(record):
        cache.discard_record(key, "not a model record")
        return None
    if not environment_unchanged(record["environment"]):
        return None
    if data_files_stamp([path for path, _, _ in record["files"]]) != record["files"]:
        return None
    return record["fingerprint"], record["info"]


def store(cache: TripleCache, key: str, fingerprint: str, info: Mapping[str, Any],
          environment: Mapping[str, str | None], files: list[list[Any]]) -> None:
    """Record a built model's ``fingerprint`` and ``info`` under ``key``, with what its build
    read (``environment``: variables by name; ``files``: a ``data_files_stamp``)."""
    cache.put_record(key, {"fingerprint": fingerprint, "info": dict(info),
                           "environment": dict(environment), "files": files})


def _usable(body: Mapping[str, Any]) -> bool:
    """Whether a record has the fields :func:`recorded` reads, of the right types."""
    info = body.get("info")
    return (isinstance(body.get("fingerprint"), str) and isinstance(info, dict)
            and isinstance(info.get("repr"), str) and type(info.get("parameters")) is int
            and isinstance(body.get("environment"), dict)
            and all(v is None or isinstance(v, str) for v in body["environment"].values())
            and isinstance(body.get("files"), list)
            and all(isinstance(f, list) and len(f) == 3 and isinstance(f[0], str)
                    for f in body["files"]))


def build(factory: Any, seed: int, channels: list[int],
          ) -> tuple[Any, dict[str, str | None], list[list[Any]]]:
    """``(model, environment, files)``: the model ``factory(*channels)`` builds after reseeding
    with ``seed``, the environment variables its build looked up and the stamp of the data
    files it opened (what a record of it must find unchanged)."""
    from pytest_graphnetz.runner import environment
    from pytest_graphnetz.runner.fingerprint import (
        data_files_stamp,
        recording_environment,
        recording_opened_files,
    )

    environment.reseed(seed)
    with recording_opened_files() as opened, recording_environment() as variables:
        model = factory(*channels)
    return model, variables, data_files_stamp(opened)


def describe(model: Any) -> dict[str, Any]:
    """What the model was, as reports and baselines keep it: its repr with a digest of its
    structure, and its parameter count (lazy parameters, sized at the first forward, do not
    count: they have no size yet)."""
    from torch.nn.parameter import UninitializedParameter

    settings = hyperparameters(model)
    described = f"{model!r} {{{settings}}}" if settings else repr(model)
    return {"repr": f"{described} [structure {structure_digest(model)}]", "parameters": sum(
        p.numel() for p in model.parameters() if not isinstance(p, UninitializedParameter))}


def hyperparameters(model: Any, limit: int = 400) -> str:
    """The model's settings as ``name=value`` pairs: the public numbers, flags and strings it
    and its direct submodules keep as attributes (``hidden_channels=96, dropout.p=0.5``), the
    way most models (PyG's among them) hold what they were built with. A compact repr can
    hide them (PyG's ``GCN(16, 7, num_layers=2)`` at any hidden width), so a baseline's diff
    names the setting that changed; cut at ``limit`` characters."""
    def scalars(module: Any, prefix: str) -> list[str]:
        return [f"{prefix}{name}={value!r}" for name, value in vars(module).items()
                if not name.startswith("_") and name != "training"
                and type(value) in (int, float, bool, str)]

    pairs = scalars(model, "")
    for name, child in model.named_children():
        pairs += scalars(child, f"{name}.")
    text = ", ".join(pairs)
    return text if len(text) <= limit else text[:limit - 1] + "…"


def structure_digest(model: Any) -> str:
    """8 hex digits of the model's architecture: every submodule's class and every parameter
    and buffer's name and shape (not their values). A compact repr can hide the architecture
    (PyG's ``GCN(16, 64, num_layers=2)`` says nothing of its hidden width): a baseline's diff
    shows this change whenever the architecture does."""
    from torch.nn.parameter import UninitializedParameter

    def shape(t: Any) -> str:
        return "lazy" if isinstance(t, UninitializedParameter) else str(tuple(t.shape))

    parts = [f"{name}:{type(m).__module__}.{type(m).__qualname__}"
             for name, m in model.named_modules()]
    parts += [f"{name}={shape(p)}" for name, p in model.named_parameters()]
    parts += [f"{name}~{shape(b)}" for name, b in model.named_buffers()]
    return hashlib.sha256("\n".join(parts).encode()).hexdigest()[:8]
