"""Layer 4 of 7: running benchmarks: ``run_benchmark`` and every part a triple runs
through (tasks, trainers, command tasks, fingerprints, the cache, progress). May import report,
stats and base, and torch and PyG (lazily where an import would cost a session without them).

``run_benchmark``: every (task, model, seed) triple, reseeded, on a pinned device, cached.

The guarantees (DESIGN.md, "Runner guarantees"): before every triple — not once per sweep —
:func:`~.environment.reseed` reseeds ``random``, ``numpy``, ``torch`` and ``torch.cuda``, and
torch's thread count is pinned; so the same seeds on the same stack and hardware give bit-for-bit
the same report whatever the order of the models dict, the number of workers or the cache state.

One module per concept: :mod:`.sweep` (``run_benchmark``: arguments, the run's context, the
jobs, the report), :mod:`.triple` (one triple: load, build, fingerprint, cache or train; a
command task's through :mod:`.command.keyed`),
:mod:`.workers` (in this process, a process pool or a user's executor; the triple errors) and
:mod:`.environment` (seeding, device, versions).
"""

from __future__ import annotations

from pytest_graphnetz.runner.environment import DeviceError, resolve_device
from pytest_graphnetz.runner.sweep import ROOT_ENV, default_root, run_benchmark
from pytest_graphnetz.runner.workers import Progress, TripleError, WorkerCrashError

__all__ = ["run_benchmark", "resolve_device", "DeviceError", "TripleError", "WorkerCrashError",
           "ROOT_ENV", "Progress", "default_root"]
