"""``run_benchmark``: every (task, model, seed) triple, reseeded, on a pinned device, cached.

The guarantees (DESIGN.md, "Runner guarantees"): before every triple — not once per sweep —
:func:`_reseed` reseeds ``random``, ``numpy``, ``torch`` and ``torch.cuda``, and torch's thread
count is pinned; so the same seeds on the same stack and hardware give bit-for-bit the same
report whatever the order of the models dict, the number of workers or the cache state.

One triple (:func:`_run_triple`, a picklable top-level function so any executor can run it):

0. with a cache, a full hit without the loader: the load record of the task and seed (data
   fingerprint and channels from the loader's last run, trusted while its data files are
   unchanged) and the freshly built model's fingerprint give the key; its entry, when there
   is one, is the outcome (:func:`_cached_without_loading`);
1. reseed (with the seed; with 0 for a loader that takes no seed, so its data is the same
   for every seed), load the task data; refuse data a task cannot train with;
2. reseed again, build the model (so loading — from disk or freshly generated — never shifts
   the initialisation draws); refuse a model or code the trainer cannot run;
3. fingerprint data and model; look the triple up in the cache, else move model and data to
   the device and train with the task's trainer (custom) or the built-in one of its kind —
   on CUDA under the run's determinism mode (:mod:`~pytest_graphnetz.determinism`).

The cache key's code parts (:func:`_code_identities`: the trainer, the project code, the
loader) are computed once per sweep, in the calling process.
"""

from __future__ import annotations

import contextlib
import dataclasses
import math
import os
import platform
import re
import sys
import threading
import time
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from . import determinism
from .cache import TripleCache
from .fingerprint import model_fingerprint
from .history import History, MetricSpec
from .report import BenchmarkReport
from .tasks import resolve_tasks
from .tasks.base import Task
from .tasks.command import Command
from .text import check_name

DEFAULT_ROOT = "data/benchmark"
ROOT_ENV = "GRAPHNETZ_ROOT"

Progress = Callable[[str, str, int, str, float], None]


class TripleError(RuntimeError):
    """A (task, model, seed) triple failed; the original exception is its ``__cause__``."""

    def __init__(self, task: str, model: str, seed: int, error: BaseException) -> None:
        self.task, self.model, self.seed = task, model, seed
        super().__init__(
            f"training task {task!r} × model {model!r} × seed {seed} failed: "
            f"{type(error).__name__}: {error}"
        )


class WorkerCrashError(TripleError):
    """A worker process died abruptly (killed by the OS, a crash in native code, ``os._exit``).

    The pool cannot say which triple the dead process was running: ``suspects`` are the
    triples that were running in the pool when it broke (``task``, ``model`` and ``seed`` name
    the first of them).
    """

    def __init__(self, suspects: list[tuple[str, str, int]], finished: int,
                 error: BaseException) -> None:
        self.suspects = suspects
        self.task, self.model, self.seed = suspects[0]
        names = "; ".join(f"task {t!r} × model {m!r} × seed {s}" for t, m, s in suspects[:5])
        more = f" and {len(suspects) - 5} more" if len(suspects) > 5 else ""
        RuntimeError.__init__(
            self,
            f"a worker process died abruptly ({type(error).__name__}: killed by the OS, e.g. "
            f"out of memory, or a crash in native code) while training "
            f"{'one of: ' if len(suspects) > 1 else ''}{names}{more}. The {finished} finished "
            "triple(s) are kept in the cache; rerun with workers=1 to see which triple fails",
        )


class DeviceError(RuntimeError):
    """A pinned device that this machine does not have (never silently replaced)."""


# -- imports, seeding and device ----------------------------------------------------------------

def _import_torch_geometric() -> None:
    """Import torch_geometric (and torch) with their import-time DeprecationWarnings silenced.

    PyG 2.8 calls ``torch.jit.script`` while importing, which torch >= 2.10 deprecates: warnings
    that are not the user's doing would fill their pytest warnings summary and fail a
    ``-W error`` run. Only the import is silenced; once cached, later imports cost nothing.
    """
    import warnings

    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)
        import torch_geometric  # noqa: F401



def _reseed(seed: int) -> None:
    """Reseed every RNG training code can reach: Python, NumPy, torch CPU and all CUDA devices."""
    import random

    import numpy as np
    import torch

    random.seed(seed)
    np.random.seed(seed)
    torch.manual_seed(seed)
    torch.cuda.manual_seed_all(seed)


def resolve_device(device: str = "auto") -> str:
    """The torch device string for ``device``: ``auto``, ``cpu``, ``cuda``, ``cuda:i`` or ``mps``.

    ``auto`` picks CUDA, then MPS, then CPU. A pinned device that is absent raises
    :class:`DeviceError`; it is never replaced by another one.
    """
    import torch

    spec = str(device).strip().lower()
    mps = getattr(torch.backends, "mps", None)
    has_mps = bool(mps is not None and mps.is_available())
    if spec == "auto":
        if torch.cuda.is_available():
            return "cuda:0"
        return "mps" if has_mps else "cpu"
    if spec == "cpu":
        return "cpu"
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


def _device_info(device: str) -> dict[str, str]:
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


def _cpu_name() -> str:
    try:
        with open("/proc/cpuinfo", encoding="utf-8") as fh:
            for line in fh:
                if line.startswith("model name"):
                    return line.partition(":")[2].strip()
    except OSError:
        pass
    return platform.processor() or platform.machine()


def _versions() -> dict[str, str]:
    import numpy
    import torch
    import torch_geometric

    from . import __version__

    return {"python": platform.python_version(), "torch": torch.__version__,
            "torch_geometric": torch_geometric.__version__, "numpy": numpy.__version__,
            "pytest_graphnetz": __version__}


# -- one triple --------------------------------------------------------------------------------

@dataclass(frozen=True)
class _Job:
    """Everything one triple needs; pickled to worker processes."""

    task: Task
    model: str
    factory: Callable[[int, int], Any]
    seed: int
    device: str
    threads: int
    root: str
    cache_dir: str | None
    context: Mapping[str, Any]  # device info and versions (+ GPU and mode): part of the cache key
    deterministic: str = determinism.DEFAULT_MODE
    # The code identities of the cache keys (see _code_identities), computed once per sweep in
    # the parent process; None without a cache.
    code: Mapping[str, Any] | None = None


@dataclass(frozen=True)
class _Outcome:
    history: History
    data_fp: str
    model_fp: str
    cached: bool
    seconds: float
    model_info: dict[str, Any]    # what the model was: its repr and parameter count


def _trainer_identity(task: Task, trainer: Callable[..., Any] | None) -> Any:
    """What identifies the training loop in the cache key (its code, not only its name)."""
    from . import metrics
    from .fingerprint import callable_identity
    from .training import builtin, common

    if trainer is not None:
        return callable_identity(trainer)
    # Whole modules, not just `train`: an edit to any helper or metric of the built-in loop
    # must invalidate cached results (a stale hit hiding a change is the worst failure).
    return [callable_identity(module) for module in (builtin(task.kind), common, metrics)]


# Seeds and torch's thread count are process-wide: two triples in threads of one process (a
# Dask worker with several threads, say) would interleave their RNG draws, so they take turns.
_ONE_TRIPLE_PER_PROCESS = threading.Lock()


def _run_triple(job: _Job) -> _Outcome:
    """Load, build, fingerprint, then fetch from the cache or train one (task, model, seed)."""
    with _ONE_TRIPLE_PER_PROCESS:
        return _run_triple_alone(job)


def _run_triple_alone(job: _Job) -> _Outcome:
    import torch

    from . import training
    from .cache import TripleCache, make_key
    from .fingerprint import (
        data_files_stamp,
        data_fingerprint,
        files_under,
        recording_opened_files,
    )
    from .training.common import to_device

    start = time.perf_counter()
    _import_torch_geometric()  # a spawned or remote worker imports it here first
    task = job.task
    if task.kind == "command":
        return _run_command(job, start)
    trainer = task.trainer_for(job.model)
    torch.set_num_threads(job.threads)
    cache = None if job.cache_dir is None else TripleCache(job.cache_dir)
    load_key = _load_key(job)
    if cache is not None and load_key is not None:
        hit = _cached_without_loading(job, cache, load_key)
        if hit is not None:
            return dataclasses.replace(hit, seconds=time.perf_counter() - start)
    # An unseeded loader is reseeded with one fixed value: its data is then the same for every
    # seed (DESIGN: "constant across seeds"), even when it draws random numbers.
    _reseed(job.seed if task.seeded else 0)
    with recording_opened_files() if load_key is not None else contextlib.nullcontext(()) \
            as opened:
        data = task.load(job.root, job.seed)
    data_fp = data_fingerprint(data)
    in_channels, out_channels = training.channels(task, data)
    if cache is not None and load_key is not None:
        # The files the loader opened; when it opened none that way (C code reading by itself),
        # every file under its root.
        files, walked = data_files_stamp(opened), False
        if not files:
            files, walked = data_files_stamp(files_under(job.root)), True
        cache.put_record(load_key, {"data": data_fp, "channels": [in_channels, out_channels],
                                    "files": files, "walked_root": walked})
    _reseed(job.seed)
    model = job.factory(in_channels, out_channels)
    if trainer is None:
        training.check_fits(model, kind=task.kind, task=task.name, model_name=job.model)
    training.check_backends(task, job.factory, model_name=job.model)
    model_fp = model_fingerprint(model, job.factory)

    def train() -> History:
        device = torch.device(job.device)
        with determinism.deterministic_scope(job.deterministic, job.device):
            moved = model.to(device)
            on_device = to_device(data, device)
            if trainer is not None:
                result = trainer(moved, on_device, task=task, device=device)
                return training.as_history(result, where=f"trainer of task {task.name!r}",
                                           metric=task.metric_name)
            return training.builtin(task.kind).train(moved, on_device, task=task, device=device)

    if cache is None:
        history, cached = train(), False
    else:
        fields = _triple_fields(job, data_fp, [in_channels, out_channels], model_fp)
        history, cached = cache.get_or_compute(make_key(fields), train, fields,
                                               check=_entry_check(task, trainer))
    return _Outcome(history, data_fp, model_fp, cached, time.perf_counter() - start,
                    _model_info(model))


def _model_info(model: Any) -> dict[str, Any]:
    """What the model was, as reports and baselines keep it: its repr and parameter count
    (lazy parameters, sized at the first forward, do not count: they have no size yet)."""
    from torch.nn.parameter import UninitializedParameter

    return {"repr": repr(model), "parameters": sum(
        p.numel() for p in model.parameters() if not isinstance(p, UninitializedParameter))}


def _triple_fields(job: _Job, data_fp: str, channels: list[int], model_fp: str) -> dict:
    """Everything a triple's result depends on: its cache key's fields."""
    code = job.code or {}
    return {
        "task": {"data": data_fp, "config": job.task.config(), "trainer": code.get("trainer"),
                 "channels": channels},
        "model": model_fp, "code": code.get("project"), "seed": job.seed,
        "threads": job.threads, **job.context,
    }


def _code_identities(task: Task, model: str, factory: Callable[..., Any],
                     per_task: dict[str, dict[str, Any]]) -> dict[str, Any]:
    """The code parts of a triple's cache keys, for ``task`` × ``model`` built by ``factory``:

    - ``trainer``: the training loop's identity (:func:`_trainer_identity`);
    - ``project``: :func:`~pytest_graphnetz.fingerprint.project_code_key` of the factory, the
      trainer and the loader (every project module they import, whole);
    - ``loader``: what the loader's result depends on besides its files and arguments (its
      identity, the values it carries, its project code), or None when a value it carries has
      no stable text (then the loader runs on every triple, as it must).

    ``per_task`` memoises the parts that do not depend on the model.
    """
    from . import training
    from .fingerprint import callable_identity, callable_state, project_code_key

    own = task.trainer_for(model)
    trainer = own if own is not None else training.builtin(task.kind)
    if task.name not in per_task:
        try:
            state = callable_state(task.loader)
        except Exception:  # noqa: BLE001 - a value whose repr or attributes fail: not keyable
            state = None
        per_task[task.name] = {
            "loader": None if state is None else {
                "identity": callable_identity(task.loader), "state": state,
                "project": project_code_key([task.loader])},
        }
    return {**per_task[task.name], "trainer": _trainer_identity(task, own),
            "project": project_code_key([factory, trainer, task.loader])}


def _load_key(job: _Job) -> str | None:
    """The key of the load record of ``job``'s task and seed: the loader's code and the values
    it carries, its arguments (root, and seed for a seeded loader), the task's settings and
    the library versions; None when the loader cannot be keyed (it then always runs)."""
    from .cache import make_key

    loader = None if job.code is None else job.code.get("loader")
    if loader is None:
        return None
    task = job.task
    return make_key({
        "load": loader, "root": job.root, "seed": job.seed if task.seeded else None,
        "task": {"name": task.name, "category": task.category, "config": task.config(),
                 "channels": [task.in_channels, task.out_channels]},
        **job.context,
    })


def _cached_without_loading(job: _Job, cache: TripleCache, load_key: str) -> _Outcome | None:
    """The cached outcome of ``job`` found without running its loader, or None.

    The load record (written when the loader last ran) gives the data fingerprint and the
    channels; it is trusted only while the stamp (size, mtime) of the loader's data files is
    unchanged: the files it opened or wrote, or, when it opened none through Python, every
    file under the task's root. The model is built as usual
    (reseeded, so its initial weights and fingerprint are the cold run's); a triple entry
    under the resulting key is the hit.
    """
    from .cache import make_key
    from .fingerprint import data_files_stamp, files_under

    record = cache.get_record(load_key)
    if not _usable_record(record):
        return None
    paths = files_under(job.root) if record["walked_root"] else \
        [path for path, _, _ in record["files"]]
    if data_files_stamp(paths) != record["files"]:
        return None
    _reseed(job.seed)
    model = job.factory(*record["channels"])
    model_fp = model_fingerprint(model, job.factory)
    key = make_key(_triple_fields(job, record["data"], record["channels"], model_fp))
    if not cache.path(key).exists():
        return None
    history = cache.get(key, _entry_check(job.task, job.task.trainer_for(job.model)))
    if history is None:
        return None
    return _Outcome(history, record["data"], model_fp, True, 0.0, _model_info(model))


def _usable_record(record: Any) -> bool:
    """Whether a load record has the fields :func:`_cached_without_loading` reads."""
    return (isinstance(record, dict) and isinstance(record.get("data"), str)
            and isinstance(record.get("channels"), list) and len(record["channels"]) == 2
            and all(type(c) is int for c in record["channels"])
            and isinstance(record.get("files"), list) and type(record.get("walked_root")) is bool
            and all(isinstance(f, list) and len(f) == 3 and isinstance(f[0], str)
                    for f in record["files"]))


def _run_command(job: _Job, start: float) -> _Outcome:
    """One triple of a command task: fingerprint the data its loader names, then fetch the run
    from the cache or run the script (reseeding is the script's job: see tasks/command.py)."""
    from .cache import make_key
    from .fingerprint import data_fingerprint
    from .tasks import command

    task, script = job.task, job.factory
    _reseed(job.seed if task.seeded else 0)
    data_fp = data_fingerprint(task.load(job.root, job.seed))
    settings = {"seed": job.seed, "device": job.device, "threads": job.threads,
                "deterministic": job.deterministic, "metric": task.metric_name}

    def train() -> History:
        return command.run(script, task=task.name, model=job.model, **settings)

    if job.cache_dir is None:
        history, cached = train(), False
    else:
        fields = {"task": {"data": data_fp, "config": task.config()},
                  "command": script.identity(), "environment": command.environment(**settings),
                  "seed": job.seed, "threads": job.threads, **job.context}
        history, cached = TripleCache(job.cache_dir).get_or_compute(make_key(fields), train,
                                                                    fields)
    return _Outcome(history, data_fp, script.fingerprint(), cached, time.perf_counter() - start,
                    {"repr": str(script), "parameters": None})


def _check_commands(jobs: list[_Job], outcomes: list[_Outcome]) -> None:
    """Rerun, uncached, the first seed of every command model that asks for it
    (``Command(check_determinism=True)``); a script whose two runs differ is refused."""
    from .tasks import command

    checked = set()
    for job, outcome in zip(jobs, outcomes, strict=True):
        script = job.factory
        if not (isinstance(script, Command) and script.check_determinism) or \
                (job.task.name, job.model) in checked:
            continue
        checked.add((job.task.name, job.model))
        command.check_rerun(script, outcome.history, task=job.task.name, model=job.model,
                            seed=job.seed, device=job.device, threads=job.threads,
                            deterministic=job.deterministic, metric=job.task.metric_name)


def _entry_check(task: Task, trainer: Callable[..., Any] | None,
                 ) -> Callable[[History], str | None] | None:
    """What a cached history must satisfy to stand for a run of ``task`` (else it is retrained).

    A built-in trainer records exactly ``task.epochs`` epochs (NaN after a divergence), its
    metrics bounded in [0, 1] (accuracy, AUC...) lie there and its per-example outcomes
    recompute the test value recorded at their epoch. A custom trainer's history is only
    checked for its value types (it may record any epochs, and in any units).
    """
    from .history import in_unit_interval
    from .outcomes import outcomes_problem

    if trainer is not None:
        return None
    epochs = task.epochs
    bounded = in_unit_interval(task.metric_name)

    def check(history: History) -> str | None:
        if history.n_epochs != epochs:
            return f"{history.n_epochs} epoch(s) recorded, the task trains {epochs}"
        if history.outcomes:
            problem = outcomes_problem(history, task.metric_name)
            if problem is not None:
                return problem
        if bounded:
            for name, series in (("test", history.test), ("val", history.val or ())):
                outside = [v for v in series if not (0.0 <= v <= 1.0 or math.isnan(v))]
                if outside:
                    return (f"{task.metric_name} {outside[0]!r} in `{name}` lies outside [0, 1]")
        return None

    return check


# -- the sweep ---------------------------------------------------------------------------------

def run_benchmark(
    tasks: str | list[str] | Mapping[str, Any],
    models: Mapping[str, Callable[[int, int], Any]],
    *,
    seeds: Iterable[int] = range(10),
    device: str = "auto",
    root: str | os.PathLike | None = None,
    workers: int = 1,
    executor: Any = None,
    threads: int = 1,
    cache_dir: str | os.PathLike | None = None,
    progress: Progress | None = None,
    started: Callable[[str, str, int], None] | None = None,
    epochs: int | None = None,
    lr: float | None = None,
    weight_decay: float | None = None,
    batch_size: int | None = None,
    options: Mapping[str, Any] | None = None,
    deterministic: str = determinism.DEFAULT_MODE,
) -> BenchmarkReport:
    """Train every model on every task under every seed; the per-seed, per-epoch report.

    - ``tasks``: a catalogue category (``"social"``), a list of catalogue task names, or
      ``{name: Task | loader}`` (custom tasks, category ``custom``).
    - ``models``: ``{name: factory}``, ``factory(in_channels, out_channels) -> nn.Module``.
    - ``seeds``: the seed labels, in the order the report keeps (non-negative ints < 2**32).
    - ``device``: ``auto`` (CUDA, then MPS, then CPU), ``cpu``, ``cuda``, ``cuda:i``, ``mps``.
    - ``root``: dataset directory (default ``$GRAPHNETZ_ROOT`` or ``data/benchmark``); task
      data lives in ``<root>/<category>/<task>/``, the directory its loader receives.
    - ``workers``: triples run in this many processes (fork where available, CPU only);
      ``executor``: any ``concurrent.futures.Executor`` instead (e.g. a Dask client's
      ``client.get_executor(pure=False)``; see docs/distributed.md).
    - ``threads``: torch intra-op threads per triple (the thread count changes the bits).
    - ``cache_dir``: a :class:`~pytest_graphnetz.cache.TripleCache` directory (None: no cache).
    - ``progress``: ``progress(task, model, seed, status, seconds)``, status ``"trained"`` or
      ``"cached"``, called in this process as each triple finishes; ``started(task, model,
      seed)``: called just before each triple when the triples run in this process
      (``workers=1``, no executor), so a display can say which one is training.
    - ``epochs``, ``lr``, ``weight_decay``, ``batch_size``: replace that setting of every task
      of this run (catalogue or custom); ``options``: merged into each task's ``options``
      (``hidden``, ``hits_k``...). They are part of each task's config, so of the cache key
      and the report's protocol. For one task only, pass ``{name: dataclasses.replace(task,
      epochs=...)}`` with ``task = pytest_graphnetz.tasks.get_task(name)``.
    - ``deterministic``: ``on`` (default), ``warn`` or ``off``: deterministic CUDA algorithms
      per triple (see :mod:`~pytest_graphnetz.determinism`; no effect on CPU and MPS).

    Returns a :class:`BenchmarkReport` with ``X[task, model, seed]`` in the order of ``tasks``,
    ``models`` and ``seeds``, every history, data/model fingerprints and the run's protocol.
    A failing triple raises :class:`TripleError` naming it (finished triples stay cached); a
    worker process that dies outright raises :class:`WorkerCrashError` naming the suspects.
    """
    _import_torch_geometric()
    task_map = _tuned(resolve_tasks(tasks), epochs=epochs, lr=lr, weight_decay=weight_decay,
                      batch_size=batch_size, options=options)
    seed_list = _check_seeds(seeds)
    if not isinstance(models, Mapping) or not models:
        raise TypeError("`models` must be a non-empty dict {name: factory(in_channels, "
                        f"out_channels) -> torch.nn.Module}}, got {models!r}")
    for name, factory in models.items():
        check_name("model", name)
        if not callable(factory) and not isinstance(factory, Command):
            raise TypeError(f"model {name!r}: the factory must be callable, got {factory!r}")
        for task in task_map.values():
            task.trainer_for(name)  # a per-model trainer mapping must name every model
            if (task.kind == "command") != isinstance(factory, Command):
                raise TypeError(
                    f"model {name!r} on task {task.name!r}: a command task runs models that are "
                    "`Command`s (a training script each) and other tasks build models from "
                    f"factories; got {type(factory).__name__} on a {task.kind!r} task. Gate "
                    "them in separate runs")
    if int(threads) < 1:
        raise ValueError(f"`threads` must be >= 1, got {threads!r}")
    if int(workers) < 1:
        raise ValueError(f"`workers` must be >= 1, got {workers!r}")
    mode = determinism.check_mode(deterministic)
    device_str = resolve_device(device)
    if determinism.applies(device_str):
        determinism.prepare_cublas(mode)  # before _device_info starts CUDA
    info = _device_info(device_str)
    gpu = determinism.gpu_protocol(device_str)
    versions = _versions()
    base = Path(root if root is not None else os.environ.get(ROOT_ENV) or DEFAULT_ROOT)
    opened = None if cache_dir is None else TripleCache.open(Path(cache_dir).resolve())
    cache = None if opened is None else str(opened.directory)
    context: dict[str, Any] = {"device": info, "versions": versions}
    if gpu is not None:
        # CPU keys stay as they were: there the mode changes no number (see determinism.py).
        context.update(gpu=gpu, deterministic=mode)

    per_task: dict[str, dict[str, Any]] = {}
    code = {} if cache is None else {
        (task.name, model): _code_identities(task, model, models[model], per_task)
        for task in task_map.values() if task.kind != "command" for model in models}
    jobs = [
        _Job(task=task, model=model, factory=models[model], seed=seed, device=device_str,
             threads=int(threads), root=str((base / task.category / task.name).resolve()),
             cache_dir=cache, context=context, deterministic=mode,
             code=code.get((task.name, model)))
        for task in task_map.values() for model in models for seed in seed_list
    ]
    # More processes than triples would only sit idle (24 workers for 2 triples).
    outcomes = _execute(jobs, workers=max(1, min(int(workers), len(jobs))), executor=executor,
                        device=device_str, progress=progress, started=started)
    _check_commands(jobs, outcomes)
    return _assemble(task_map, list(models), seed_list, jobs, outcomes,
                     protocol={"device": info, "threads": int(threads), "versions": versions,
                               "deterministic": mode, "gpu": gpu,
                               "platform": platform.platform(),
                               "tasks": {t.name: _task_protocol(t) for t in task_map.values()}})


def _tuned(task_map: dict[str, Task], *, options: Mapping[str, Any] | None,
           **settings: Any) -> dict[str, Task]:
    """Every task with the run's overrides (``None``: keep the task's own setting)."""
    from dataclasses import replace

    changes = {name: value for name, value in settings.items() if value is not None}
    if not changes and not options:
        return task_map
    if options is not None and not isinstance(options, Mapping):
        raise TypeError(f"`options` must be a dict of trainer settings, got {options!r}")
    return {name: replace(task, **changes, options={**task.options, **(options or {})})
            for name, task in task_map.items()}


def _check_seeds(seeds: Iterable[int]) -> list[int]:
    out = []
    for s in seeds:
        if isinstance(s, bool) or int(s) != s or not 0 <= int(s) < 2**32:
            raise ValueError(f"seed {s!r} is not an integer in [0, 2**32) (numpy's seed range)")
        out.append(int(s))
    if not out:
        raise ValueError("`seeds` is empty; give at least one seed (two or more for statistics)")
    if len(set(out)) != len(out):
        raise ValueError(f"`seeds` has duplicates: {out}")
    return out


def _task_protocol(task: Task) -> dict[str, Any]:
    import json

    from .cache import canonical_json

    protocol = {"category": task.category, "seeded": task.seeded,
                "config": json.loads(canonical_json(task.config())),
                "trainer": "builtin" if task.trainer is None else "custom"}
    if task.kind == "command":
        protocol.update(trainer="command", reseeding=(
            "the script's: the runner passes the seed (GRAPHNETZ_SEED, {seed}) and pins threads "
            "and device through the environment; the script must call graphnetz.seed()"))
    return protocol


def _execute(jobs: list[_Job], *, workers: int, executor: Any, device: str,
             progress: Progress | None,
             started: Callable[[str, str, int], None] | None = None) -> list[_Outcome]:
    """Run ``jobs``; outcomes in ``jobs`` order whatever order they complete in."""
    if executor is None and workers == 1:
        import torch

        previous = torch.get_num_threads()
        try:
            outcomes = []
            for job in jobs:
                if started is not None:
                    started(job.task.name, job.model, job.seed)
                outcomes.append(_guarded(job))
                _report_progress(progress, job, outcomes[-1])
            return outcomes
        finally:
            torch.set_num_threads(previous)

    from concurrent.futures import ThreadPoolExecutor, as_completed, wait

    if isinstance(executor, ThreadPoolExecutor):
        raise TypeError(
            "executor: a ThreadPoolExecutor's threads would interleave the draws of torch's "
            "process-wide RNG between triples, so seeds would not reproduce; use workers=N "
            "(processes) or a process-based executor"
        )
    own = executor is None
    if own:
        executor = _process_pool(workers, device, jobs)

    try:
        futures = {executor.submit(_run_triple, job): i for i, job in enumerate(jobs)}
        results: list[_Outcome | None] = [None] * len(jobs)
        try:
            for future in as_completed(futures):
                i = futures[future]
                try:
                    results[i] = future.result()
                except BaseException as exc:
                    raise _triple_error(jobs, results, i, exc, workers if own else None) from exc
                _report_progress(progress, jobs[i], results[i])
        except BaseException:
            # Let running triples finish (they land in the cache), drop the queued ones. Wait
            # only on the futures that refused to cancel: a cancelled one counts as done for
            # wait() only once its executor notices, and a Dask ClientExecutor whose task had
            # already failed never does (wait() would hang for good).
            wait([future for future in futures if not future.cancel()])
            raise
        return results  # type: ignore[return-value]
    finally:
        if own:
            executor.shutdown(wait=True, cancel_futures=True)


def _triple_error(jobs: list[_Job], results: list[_Outcome | None], i: int, exc: BaseException,
                  pool_size: int | None) -> TripleError:
    """The error for failed future ``i``: its triple, or the suspects of a dead worker process.

    A dead process breaks the whole pool, so every unfinished future fails, not only its own.
    The pool starts triples in submission order, so the ones running were the first
    ``pool_size`` unfinished ones (all unfinished ones when the pool size is unknown).
    """
    from concurrent.futures.process import BrokenProcessPool

    if not isinstance(exc, BrokenProcessPool):
        job = jobs[i]
        return TripleError(job.task.name, job.model, job.seed, exc)
    unfinished = [(j.task.name, j.model, j.seed) for j, r in zip(jobs, results, strict=True)
                  if r is None]
    suspects = unfinished[:pool_size] if pool_size else unfinished
    return WorkerCrashError(suspects, len(jobs) - len(unfinished), exc)


def _guarded(job: _Job) -> _Outcome:
    try:
        return _run_triple(job)
    except Exception as exc:
        raise TripleError(job.task.name, job.model, job.seed, exc) from exc


def _report_progress(progress: Progress | None, job: _Job, outcome: _Outcome) -> None:
    if progress is not None:
        progress(job.task.name, job.model, job.seed, "cached" if outcome.cached else "trained",
                 outcome.seconds)


def _process_pool(workers: int, device: str, jobs: list[_Job]) -> Any:
    """A process pool; ``fork`` (no re-import, ~2× faster start here) when safe.

    CUDA cannot be used in a forked child once the parent touched it, so a GPU run spawns.
    Jobs are pickled to the workers: a lambda or local function as factory, loader or trainer
    is refused up front with the fix, rather than failing inside the pool.
    """
    import multiprocessing
    import pickle
    from concurrent.futures import ProcessPoolExecutor

    for job in {(j.task.name, j.model): j for j in jobs}.values():
        try:
            pickle.dumps(job)
        except Exception as exc:
            raise TypeError(
                f"workers={workers}: task {job.task.name!r} × model {job.model!r} cannot be sent "
                f"to a worker process ({exc}). Define the model factory, loader and trainer at "
                "module level (lambdas and local functions cannot be pickled), or use workers=1"
            ) from exc
    method = "fork" if (device == "cpu" and "fork" in multiprocessing.get_all_start_methods()) \
        else "spawn"
    return ProcessPoolExecutor(max_workers=workers, mp_context=multiprocessing.get_context(method),
                               initializer=_exit_with_parent, initargs=(os.getpid(),))


def _exit_with_parent(parent: int) -> None:
    """Pool worker initializer: end this worker when ``parent`` dies (even by ``kill -9``).

    Otherwise an orphaned worker (hundreds of MB) waits for work forever. On Linux the kernel
    sends SIGKILL when the parent goes (``PR_SET_PDEATHSIG``); everywhere, a daemon thread
    checks once a second whether the process was re-parented.
    """
    if sys.platform.startswith("linux"):
        import ctypes
        import signal

        pr_set_pdeathsig = 1
        try:
            libc = ctypes.CDLL(None, use_errno=True)
            libc.prctl(pr_set_pdeathsig, int(signal.SIGKILL), 0, 0, 0)
        except (OSError, AttributeError):
            pass  # the thread below still covers it
    if os.getppid() != parent:  # the parent died before the line above took effect
        os._exit(1)

    def watch() -> None:
        while os.getppid() == parent:
            time.sleep(1.0)
        os._exit(1)

    threading.Thread(target=watch, name="graphnetz-parent-watch", daemon=True).start()


def _assemble(task_map: Mapping[str, Task], models: list[str], seeds: list[int],
              jobs: list[_Job], outcomes: list[_Outcome], protocol: dict) -> BenchmarkReport:
    import hashlib

    histories = {}
    data_fps: dict[str, dict[int, str]] = {}
    model_fps: dict[str, dict[int, dict[str, str]]] = {}
    model_info: dict[str, dict[str, dict]] = {}
    for job, out in zip(jobs, outcomes, strict=True):
        t = job.task.name
        histories[(t, job.model, job.seed)] = out.history
        known = data_fps.setdefault(t, {}).setdefault(job.seed, out.data_fp)
        if known != out.data_fp:
            raise RuntimeError(
                f"task {t!r}, seed {job.seed}: the loader returned different data for different "
                "models although it was reseeded before each load; it draws from a source the "
                "runner does not seed (time, os.urandom, a private generator?). Make it "
                "deterministic given `seed` — otherwise seeds cannot be paired"
            )
        model_fps.setdefault(job.model, {}).setdefault(job.seed, {})[t] = out.model_fp
        model_info.setdefault(job.model, {}).setdefault(t, out.model_info)
    # A model is built once per task (its channels differ), so its per-seed fingerprint
    # combines the per-task ones (sorted by task name: task order never changes it).
    combined = {
        m: {s: hashlib.sha256(repr(sorted(per_task.items())).encode()).hexdigest()
            for s, per_task in per_seed.items()}
        for m, per_seed in model_fps.items()
    }
    metrics = {t: MetricSpec.from_name(task.metric_name) for t, task in task_map.items()}
    # The model as a reviewer reads it (per task: its channels differ), kept in baselines.
    protocol = {**protocol, "models": {m: model_info[m] for m in models}}
    return BenchmarkReport(
        tasks=list(task_map), models=models, seeds=seeds, metrics=metrics, histories=histories,
        protocol=protocol, fingerprints={"data": data_fps, "model": combined},
    )


__all__ = ["run_benchmark", "resolve_device", "DeviceError", "TripleError", "WorkerCrashError"]
