"""What a triple runs in: torch and PyG imported quietly, every RNG reseeded (a command's script
under the run's :class:`SeedMap`), the device resolved and described, and the library versions
that enter the cache key."""

from __future__ import annotations

import contextlib
import functools
import os
import platform
import re
import sys
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from pytest_graphnetz.runner.cache import TripleCache


class DeviceError(RuntimeError):
    """A pinned device that this machine does not have (never silently replaced)."""



def import_torch_geometric() -> None:
    """Import torch_geometric (and torch) with their import-time DeprecationWarnings silenced.

    PyG 2.8 calls ``torch.jit.script`` while importing, which torch >= 2.10 deprecates: warnings
    that are not the user's doing would fill their pytest warnings summary and fail a
    ``-W error`` run. Only the import is silenced; once cached, later imports cost nothing.
    """
    if "torch_geometric" in sys.modules:  # imported: the block below would change nothing
        return                             # (and copying the environment costs a triple 0.3 ms)
    import warnings

    with warnings.catch_warnings(), environment_kept():
        warnings.simplefilter("ignore", DeprecationWarning)
        import torch_geometric  # noqa: F401


@contextlib.contextmanager
def environment_kept() -> Iterator[None]:
    """Undo what the block changes in ``os.environ``: the runner's own import of torch sets
    ``TORCHINDUCTOR_CACHE_DIR`` (torch's default made explicit, which torch sets again where it
    compiles). A command task's script inherits this process's environment and its reads of
    it key the cache, so what it inherits must not depend on whether this session's runner
    happened to import torch (it does for an in-process task, not for a cached command task)."""
    before = dict(os.environ)
    try:
        yield
    finally:
        for name in [n for n in os.environ if n not in before]:
            del os.environ[name]
        for name, value in before.items():
            if os.environ.get(name) != value:
                os.environ[name] = value



def reseed(seed: int) -> None:
    """Reseed every RNG training code can reach: Python, NumPy, torch CPU and all CUDA devices.

    The one reseeding: the runner's before every load and build, and a calibration's salted
    factory's (:class:`~pytest_graphnetz.gates.calibration.salting.SaltedFactory`) before it
    builds."""
    import random

    import numpy as np
    import torch

    random.seed(seed)
    np.random.seed(seed)
    # Every device's generator: torch.manual_seed calls torch.cuda.manual_seed_all itself (and
    # MPS's and XPU's); a second call only repeats it (traceback.format_stack while CUDA is
    # uninitialised: ~1 ms a triple).
    torch.manual_seed(seed)


@dataclass(frozen=True)
class SeedMap:
    """The seed a command task's script receives in place of the benchmark seed: a
    calibration's salted run (:func:`~pytest_graphnetz.gates.calibration.salting.salted_seed_map`)
    moves every draw of initialisation and training while the data and splits stay at the
    benchmark seed (the script reads it as ``GRAPHNETZ_DATA_SEED``).

    ``seed``: benchmark seed -> the script's seed (picklable, for worker processes); ``key``:
    what the cache key and the model fingerprint hold for the map (``{"salt": 1}``), so a run
    under a map never reuses a run without it, nor one under another map."""

    seed: Callable[[int], int]
    key: Mapping[str, Any]


def resolve_device(device: str = "auto") -> str:
    """The torch device string for ``device``: ``auto``, ``cpu``, ``cuda``, ``cuda:i`` or ``mps``.

    ``auto`` picks CUDA, then MPS, then CPU. A pinned device that is absent raises
    :class:`DeviceError`; it is never replaced by another one.
    """
    spec = str(device).strip().lower()
    if spec == "cpu" or (spec == "auto" and _no_gpu_build()):
        return "cpu"
    with environment_kept():
        import torch

    mps = getattr(torch.backends, "mps", None)
    has_mps = bool(mps is not None and mps.is_available())
    if spec == "auto":
        if torch.cuda.is_available():
            return "cuda:0"
        return "mps" if has_mps else "cpu"
    if spec == "mps":
        if not has_mps:
            raise DeviceError("device='mps' was asked for but this machine has no usable MPS "
                              "(Apple-silicon GPU); pass device='cpu' or device='auto'")
        return "mps"
    if spec == "cuda" or spec.startswith("cuda:"):
        index_text = spec.partition(":")[2] or "0"
        # ASCII digits only: str.isdigit() also accepts "²", which int() then refuses.
        if not re.fullmatch(r"[0-9]+", index_text):
            raise DeviceError(f"device={device!r} is not a device; use 'cuda' or 'cuda:<index>'")
        count = torch.cuda.device_count() if torch.cuda.is_available() else 0
        if int(index_text) >= count:
            have = f"{count} CUDA device(s)" if count else "no CUDA device (or a CPU-only torch)"
            raise DeviceError(f"device={device!r} was asked for but this machine has {have}; "
                              "pass an existing device, device='cpu' or device='auto'")
        return f"cuda:{int(index_text)}"
    raise DeviceError(f"device={device!r} is not one of 'auto', 'cpu', 'cuda', 'cuda:<i>', 'mps'")


def _no_gpu_build() -> bool:
    """Whether ``auto`` can only mean the CPU, known without importing torch: torch not yet
    imported, no Apple MPS platform, and an installed torch built without CUDA or ROCm (its
    ``torch/version.py`` says ``cuda = None`` and ``hip = None``). Anything else: False, and
    torch is asked."""
    import ast
    import importlib.util
    import sys
    from pathlib import Path

    if "torch" in sys.modules or sys.platform == "darwin":
        return False
    spec = importlib.util.find_spec("torch")
    if spec is None or not spec.submodule_search_locations:
        return False
    try:
        tree = ast.parse((Path(list(spec.submodule_search_locations)[0]) / "version.py")
                         .read_text(encoding="utf-8"))
    except (OSError, SyntaxError, ValueError):
        return False
    built = {}
    for node in tree.body:
        if isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name):
            name, value = node.target.id, node.value
        elif isinstance(node, ast.Assign) and isinstance(node.targets[0], ast.Name):
            name, value = node.targets[0].id, node.value
        else:
            continue
        if isinstance(value, ast.Constant):
            built[name] = value.value
    return all(name in built and built[name] is None for name in ("cuda", "hip"))


def device_info(device: str) -> dict[str, str]:
    """``{"kind": "cpu"|"cuda"|"mps", "name": ...}`` of a resolved device."""
    kind = device.partition(":")[0]
    if kind == "cuda":
        import torch

        name = torch.cuda.get_device_name(int(device.partition(":")[2] or 0))
    elif kind == "mps":
        name = f"Apple MPS ({platform.machine()})"
    else:
        name = _cpu_name()
    return {"kind": kind, "name": name}


def machine(device: str, deterministic: str, *, in_process: bool = True,
            records: TripleCache | None = None) -> dict[str, Any]:
    """Where the triples run, described where they run: ``device`` resolved (``auto`` picks
    this machine's accelerator), cuBLAS prepared for the determinism mode before CUDA starts,
    and what the cache key and the report record of it (``info``, ``gpu``, ``versions``,
    ``hardware``, ``platform``, and ``numerics``: the numeric settings and scatter backend the
    triples train under, for a sweep that trains in this process, ``in_process``; a command
    task's script sets its own). The sweep calls it in its own process; with an executor,
    each triple calls it where it runs: a cluster's workers, not the machine that submits, are
    described (and key their cache entries). With ``records`` (the sweep's cache), numeric
    settings that would need torch imported come from a record when they can
    (:func:`numerics`)."""
    from pytest_graphnetz.runner import determinism

    resolved = resolve_device(device)
    if determinism.applies(resolved):
        determinism.prepare_cublas(deterministic)  # before device_info starts CUDA
    info = device_info(resolved)
    gpu = determinism.gpu_protocol(resolved)
    found = versions()
    numerics = None if not in_process else {
        **_numerics(resolved, deterministic, records), "scatter": scatter_backend()}
    return {"device": resolved, "info": info, "gpu": gpu, "versions": found,
            "numerics": numerics,
            "hardware": {"arch": platform.machine(), "cpu": _cpu_name(), "device": info["kind"],
                         "accelerator": None if info["kind"] == "cpu" else info["name"],
                         "torch": found["torch"], "cuda": None if gpu is None else gpu["cuda"]},
            "platform": platform.platform()}


# The prefixes of the environment variables torch (and the BLAS, OpenMP and CUDA libraries it
# loads) may read when imported: part of what a fresh import's settings depend on.
TORCH_VARIABLES = ("TORCH", "PYTORCH", "CUBLAS", "CUDNN", "CUDA", "NVIDIA", "OMP_", "MKL", "KMP_",
                   "DNNL", "ONEDNN", "GOMP", "OPENBLAS")


def _numerics(device: str, mode: str, records: TripleCache | None) -> dict[str, Any]:
    """:func:`~.determinism.numerics` of ``device`` under ``mode``, without importing torch
    where it is not imported yet: torch's flags are then those of a fresh import, a function
    of the interpreter, torch's installed files and the environment variables it reads
    (:func:`fresh_torch`), so they are read once, recorded in ``records`` under that, and
    read back while it is unchanged. Once torch is imported (by anyone), its flags are read."""
    import sys

    from pytest_graphnetz.runner import determinism
    from pytest_graphnetz.runner.cache import make_key

    if records is None or "torch" in sys.modules or (
            determinism.applies(device) and mode != "off"):  # pinned: torch not asked
        return determinism.numerics(device, mode)
    key = make_key({"numerics_of": fresh_torch(), "device": device, "mode": mode})
    record = records.get_record(key)
    if record is not None and isinstance(record.get("numerics"), dict):
        return record["numerics"]
    with environment_kept():
        found = determinism.numerics(device, mode)   # imports torch: a fresh import's flags
    records.put_record(key, {"numerics": found})
    return found


def fresh_torch() -> dict[str, Any]:
    """What a fresh ``import torch`` here depends on, known without importing it: the
    interpreter, torch's version and the stamp (size, mtime) of its package's top files, and
    the environment variables of :data:`TORCH_VARIABLES`."""
    import importlib.machinery
    import importlib.util
    import sys

    spec = importlib.util.find_spec("torch")
    files = []
    for name in ("__init__.py", "version.py", "_C" + importlib.machinery.EXTENSION_SUFFIXES[0],
                 os.path.join("lib", "libtorch_cpu.so")):
        if spec is not None and spec.submodule_search_locations:
            path = os.path.join(list(spec.submodule_search_locations)[0], name)
            with contextlib.suppress(OSError):
                st = os.stat(path)
                files.append([name, st.st_size, st.st_mtime_ns])
    return {"python": [sys.executable, sys.version], "torch": installed_version("torch"),
            "files": files, "environment": {name: value for name, value in os.environ.items()
                                            if name.startswith(TORCH_VARIABLES)}}


def scatter_backend() -> dict[str, str | None]:
    """Which scatter and sparse kernels PyG picks up: the version of each optional package it
    prefers when installed (``torch_scatter``, ``torch_sparse``, ``pyg_lib``), None where
    absent (then torch's own ``scatter_reduce``). Found from the installed metadata, nothing
    imported."""
    import importlib.util

    return {name: installed_version(name) if importlib.util.find_spec(name) else None
            for name in ("torch_scatter", "torch_sparse", "pyg_lib")}


def key_context(machine: dict[str, Any], deterministic: str) -> dict[str, Any]:
    """What of ``machine`` enters every cache key: the device, the versions, the numeric
    settings and scatter backend (when the triples train in this process) and, on CUDA, the
    GPU and the determinism mode (CPU keys leave the mode out: it changes no number there)."""
    context: dict[str, Any] = {"device": machine.get("info"), "versions": machine.get("versions")}
    if machine.get("numerics") is not None:
        context["numerics"] = machine["numerics"]
    if machine.get("gpu") is not None:
        context.update(gpu=machine["gpu"], deterministic=deterministic)
    return context


def one_machine(machines: list[dict[str, Any]]) -> dict[str, Any]:
    """The machine an executor's triples described (:func:`machine`, one per triple); an error
    when they ran on machines whose cache keys differ (each entry is kept under its own)."""
    import json

    found: dict[str, dict[str, Any]] = {}
    for machine in machines:
        # A command task's triples describe no numerics (their scripts set their own).
        hardware = {**machine, "numerics": None}
        found.setdefault(json.dumps(key_context(hardware, ""), sort_keys=True), machine)
    if len(found) > 1:
        kinds = "; ".join(f"{m['info']['kind']} {m['info']['name']!r} (versions "
                          f"{m['versions']})" for m in found.values())
        raise RuntimeError(
            f"the executor's workers ran this sweep's triples on different machines: {kinds}. "
            "A report must come from one kind of machine (the last digits differ between "
            "them); send the run to one kind (a Slurm partition or constraint, Dask worker "
            "resources) and rerun: what each machine trained stays cached under its own key")
    return next((m for m in machines if m.get("numerics") is not None),
                next(iter(found.values())))


def check_worker(device: str, expected: dict[str, str]) -> None:
    """Refuse to train on a worker whose device is not the one the sweep was described on
    (``expected``: the sweep's ``device_info``): a cluster of mixed machines gives a report
    that no one machine reproduces, under a cache key that names another device."""
    here = device_info(device)
    if here != expected:
        raise DeviceError(
            f"this worker ({platform.node()}) trains on {here['kind']} {here['name']!r}, but the "
            f"sweep's other triples ran on {expected.get('kind')} {expected.get('name')!r}: its "
            "report would mix hardware that changes the last digits. Send the run to one kind "
            "of machine (a Slurm partition or constraint, Dask worker resources)")


@functools.cache
def _cpu_name() -> str:
    try:
        with open("/proc/cpuinfo", encoding="utf-8") as fh:
            for line in fh:
                if line.startswith("model name"):
                    return line.partition(":")[2].strip()
    except OSError:
        pass
    return platform.processor() or platform.machine()


def versions() -> dict[str, str]:
    """The library versions in the cache key and the report's protocol, read from the installed
    packages' metadata: importing torch and PyG (4 s) only to read ``__version__`` would make a
    session whose triples are all cache hits pay for libraries it never runs. The metadata
    spells the version as ``__version__`` does (``2.13.0+cpu`` included; a test compares them)."""
    return {"python": platform.python_version(), "torch": installed_version("torch"),
            "torch_geometric": installed_version("torch_geometric"),
            "numpy": installed_version("numpy"),
            "pytest_graphnetz": installed_version("pytest_graphnetz")}


def installed_version(package: str) -> str:
    """``package``'s version from its metadata; from ``package.__version__`` where it has no
    metadata (a source checkout on the path)."""
    import importlib
    import importlib.metadata

    try:
        return importlib.metadata.version(package)
    except importlib.metadata.PackageNotFoundError:
        return str(importlib.import_module(package).__version__)

