"""Deterministic CUDA algorithms for each triple: ``deterministic="on" | "warn" | "off"``.

PyG aggregates with scatter operations whose CUDA kernels add with atomics in whatever order
the threads finish, so two runs of one seed differ in the last bits; cuBLAS does the same unless
its workspace is pinned. With ``torch.use_deterministic_algorithms(True)`` and
``CUBLAS_WORKSPACE_CONFIG=:4096:8`` those switch to deterministic kernels, and the few
operations that have none raise instead of silently varying.

- ``on`` (the default): deterministic algorithms for each CUDA triple; an operation without a
  deterministic implementation fails the triple, naming it and the option that relaxes it.
- ``warn``: the same kernels, but such an operation runs (non-deterministically) with torch's
  warning.
- ``off``: torch's non-deterministic defaults (faster on some models; reruns vary).

The numeric settings a run trains under (:func:`numerics`: the float32 matmul precision, both
TF32 flags, ``cudnn.benchmark`` and the deterministic-algorithms state) enter every cache key
and the report's protocol, on CPU too: a ``conftest.py`` that sets the matmul precision changes
the key. On CUDA, ``on`` and ``warn`` pin them (:data:`PINNED`) for each triple, whatever the
user's code set, so a key read on another machine means the same numbers.

On CPU and MPS the mode changes nothing: the CPU kernels the built-in trainers use are already
deterministic at the pinned thread count, and torch's flag would only switch a few CPU ops to
other kernels (and fill every ``torch.empty`` with NaN) — changing CPU numbers and costs for no
gain. So a CPU run is the same whatever the mode, and shares its cache entries across modes.

Only this module touches torch's determinism flags; torch is imported inside the functions.
"""

from __future__ import annotations

import contextlib
import os
import warnings
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

MODES = ("on", "warn", "off")
DEFAULT_MODE = "on"
OPTION = "--graphnetz-deterministic"
CUBLAS_ENV = "CUBLAS_WORKSPACE_CONFIG"
CUBLAS_VALUE = ":4096:8"
_CUBLAS_DETERMINISTIC = (":4096:8", ":16:8")  # the two values torch accepts
# What `on` and `warn` pin on CUDA for each triple (deterministic_scope): full float32 matmuls,
# no TF32 (its 10-bit mantissa changes values), no cuDNN benchmarking (it may pick another
# convolution algorithm per run).
PINNED: dict[str, Any] = {"float32_matmul_precision": "highest", "cuda_matmul_tf32": False,
                          "cudnn_tf32": False, "cudnn_benchmark": False}
# How torch words the error of an operation that has no deterministic implementation.
_NO_DETERMINISTIC = " does not have a deterministic implementation"


class DeterminismError(RuntimeError):
    """Deterministic CUDA algorithms cannot be honoured (the message says why and the fix)."""


def check_mode(mode: Any, *, name: str = "`deterministic`") -> str:
    """``mode`` as one of :data:`MODES`; anything else raises ``ValueError`` naming the option
    (``name``: the argument, or the plugin's option or ini key where the value came from)."""
    text = str(mode).strip().lower()
    if text not in MODES:
        raise ValueError(f"{name}: expected one of on, warn, off, got {mode!r}")
    return text


def applies(device: str) -> bool:
    """Whether the mode acts on ``device`` (a resolved torch device string): CUDA only."""
    return device.partition(":")[0] == "cuda"


def gpu_protocol(device: str) -> dict[str, Any] | None:
    """``{"name", "cuda", "cudnn"}`` of a CUDA device (GPU name, CUDA and cuDNN versions);
    None on CPU and MPS."""
    if not applies(device):
        return None
    import torch

    cudnn = torch.backends.cudnn.version() if torch.backends.cudnn.is_available() else None
    return {"name": torch.cuda.get_device_name(int(device.partition(":")[2] or 0)),
            "cuda": torch.version.cuda, "cudnn": cudnn}


def numerics(device: str, mode: str) -> dict[str, Any]:
    """The numeric settings a triple on ``device`` trains under in ``mode``: on CUDA under
    ``on`` or ``warn``, the pinned ones (:data:`PINNED`, and the mode's deterministic
    algorithms); otherwise torch's flags as this process holds them now
    (:func:`current_numerics`)."""
    if applies(device) and mode != "off":
        return {**PINNED, "deterministic_algorithms": mode}
    return current_numerics()


def current_numerics() -> dict[str, Any]:
    """torch's process-wide numeric flags now: ``float32_matmul_precision`` (highest, high,
    medium: ``medium`` also lets oneDNN multiply in bfloat16 on CPU), ``cuda_matmul_tf32``,
    ``cudnn_tf32``, ``cudnn_benchmark`` and ``deterministic_algorithms`` (on, warn or off).

    Code that set the precision through both of torch's APIs (``set_float32_matmul_precision``
    and the per-backend ``fp32_precision``) leaves the first three unreadable: they then read
    ``mixed`` and ``fp32_precision`` holds every backend's setting."""
    import torch

    algorithms = "off"
    if torch.are_deterministic_algorithms_enabled():
        algorithms = "warn" if torch.is_deterministic_algorithms_warn_only_enabled() else "on"
    found: dict[str, Any] = {"cudnn_benchmark": bool(torch.backends.cudnn.benchmark),
                             "deterministic_algorithms": algorithms}
    try:
        found.update(float32_matmul_precision=torch.get_float32_matmul_precision(),
                     cuda_matmul_tf32=bool(torch.backends.cuda.matmul.allow_tf32),
                     cudnn_tf32=bool(torch.backends.cudnn.allow_tf32))
    except RuntimeError:
        found.update(float32_matmul_precision="mixed", cuda_matmul_tf32="mixed",
                     cudnn_tf32="mixed", fp32_precision={
                         name: backend.fp32_precision for name, backend in _backends()})
    return found


def _backends() -> list[tuple[str, Any]]:
    """torch's per-backend float32 precision settings (``fp32_precision``), by name."""
    import torch

    found = []
    for name in ("cuda.matmul", "cudnn.conv", "cudnn.rnn", "mkldnn.matmul", "mkldnn.conv",
                 "mkldnn.rnn"):
        backend: Any = torch.backends
        for part in name.split("."):
            backend = getattr(backend, part)
        found.append((name, backend))
    return found


@contextmanager
def _numerics_pinned() -> Iterator[None]:
    """:data:`PINNED`'s precision and TF32 flags for the block, through the API the process
    used (torch refuses to read the legacy flags once both were used); restored after."""
    import torch

    cudnn = torch.backends.cudnn
    try:
        legacy = (torch.get_float32_matmul_precision(), cudnn.allow_tf32)
    except RuntimeError:
        saved = [(backend, backend.fp32_precision) for _, backend in _backends()]
        for backend, _ in saved:
            backend.fp32_precision = "ieee"
        try:
            yield
        finally:
            for backend, value in saved:
                backend.fp32_precision = value
        return
    torch.set_float32_matmul_precision(PINNED["float32_matmul_precision"])
    cudnn.allow_tf32 = PINNED["cudnn_tf32"]
    try:
        yield
    finally:
        torch.set_float32_matmul_precision(legacy[0])
        cudnn.allow_tf32 = legacy[1]


def prepare_cublas(mode: str) -> None:
    """Pin cuBLAS's workspace (``CUBLAS_WORKSPACE_CONFIG``) before CUDA initialises.

    cuBLAS reads the variable when CUDA starts in the process, so setting it later would pass
    torch's check and still leave matrix products non-deterministic: in that case ``on``
    refuses with the line to add and ``warn`` warns with it. A value the user set (``:16:8``
    also works) is kept. The variable stays set afterwards: cuBLAS has read it by then.
    """
    if mode == "off" or os.environ.get(CUBLAS_ENV) in _CUBLAS_DETERMINISTIC:
        return
    import torch

    if not torch.cuda.is_initialized():
        os.environ[CUBLAS_ENV] = CUBLAS_VALUE
        return
    now = os.environ.get(CUBLAS_ENV)
    message = (
        f"CUDA was initialised in this process with {CUBLAS_ENV} "
        f"{'unset' if now is None else f'= {now!r}'}, so cuBLAS matrix products are not "
        "deterministic (cuBLAS reads the variable when CUDA starts). Add the line\n"
        f'    os.environ["{CUBLAS_ENV}"] = "{CUBLAS_VALUE}"\n'
        "before anything touches CUDA (top of conftest.py or of your script), or run "
        f"`export {CUBLAS_ENV}={CUBLAS_VALUE}` before pytest; or accept non-deterministic "
        f"results with {OPTION}=warn (run_benchmark(deterministic='warn'))"
    )
    if mode == "on":
        raise DeterminismError(message)
    warnings.warn(message, RuntimeWarning, stacklevel=2)


def nondeterministic_operation(error: BaseException) -> str | None:
    """The operation torch named in ``error`` when it has no deterministic implementation."""
    text = str(error)
    if not isinstance(error, RuntimeError) or _NO_DETERMINISTIC not in text:
        return None
    return text.partition(_NO_DETERMINISTIC)[0].strip().splitlines()[-1]


@contextmanager
def deterministic_scope(mode: str, device: str) -> Iterator[None]:
    """Apply ``mode`` to torch's process-wide flags for one triple on ``device``; restore them.

    On CUDA: ``torch.use_deterministic_algorithms`` (``warn_only`` for ``warn``; off for
    ``off``) and, unless ``off``, the :data:`PINNED` numerics (no TF32, full float32 matmuls,
    no cuDNN benchmarking). The previous flags come back afterwards, also when the triple
    raises. An operation without a deterministic implementation is re-raised as
    :class:`DeterminismError` naming it and the option that relaxes it. Elsewhere: nothing.
    """
    if not applies(device):
        yield
        return
    import torch

    prepare_cublas(mode)
    cudnn = torch.backends.cudnn
    previous = (torch.are_deterministic_algorithms_enabled(),
                torch.is_deterministic_algorithms_warn_only_enabled(), cudnn.benchmark)
    torch.use_deterministic_algorithms(mode != "off", warn_only=mode == "warn")
    if mode != "off":
        cudnn.benchmark = PINNED["cudnn_benchmark"]
    try:
        with _numerics_pinned() if mode != "off" else contextlib.nullcontext():
            yield
    except RuntimeError as exc:
        operation = nondeterministic_operation(exc)
        if operation is None or mode != "on":
            raise
        raise DeterminismError(
            f"{operation} has no deterministic CUDA implementation, and deterministic "
            f"algorithms are on ({OPTION}=on, the default). Rerun with {OPTION}=warn "
            "(run_benchmark(deterministic='warn')) to let it run non-deterministically with a "
            "warning — reruns of a seed may then differ in the last digits — or replace the "
            "operation in the model or trainer"
        ) from exc
    finally:
        torch.use_deterministic_algorithms(previous[0], warn_only=previous[1])
        cudnn.benchmark = previous[2]


__all__ = ["MODES", "DEFAULT_MODE", "PINNED", "DeterminismError", "check_mode", "current_numerics",
           "deterministic_scope", "numerics"]
