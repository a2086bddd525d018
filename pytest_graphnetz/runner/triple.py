"""One (task, model, seed) triple: load, build, fingerprint, then fetch from the cache or train.

:func:`run_triple` is a picklable top-level function, so any executor can run it:

0. with a cache, a full hit without the loader: the load record of the task and seed (data
   fingerprint and channels from the loader's last run, trusted while its data files are
   unchanged) and the model's fingerprint (from its record while its code and environment are
   unchanged, :mod:`.model_record`; else freshly built) give the key; its entry, when there
   is one, is the outcome (:func:`_cached_without_loading`), torch not imported unless built;
1. reseed (with the seed; with 0 for a loader that takes no seed, so its data is the same
   for every seed), load the task data; refuse data a task cannot train with;
2. reseed again, build the model (so loading — from disk or freshly generated — never shifts
   the initialisation draws); refuse a model or code the trainer cannot run;
3. fingerprint data and model; look the triple up in the cache, else move model and data to
   the device and train with the task's trainer (custom) or the built-in one of its kind —
   on CUDA under the run's determinism mode (:mod:`~pytest_graphnetz.runner.determinism`).

The cache key's code parts (:func:`code_identities`: the trainer, the project code, the
loader) are computed once per sweep, in the calling process. A command task's triple is its
executor's (:mod:`~pytest_graphnetz.runner.command.keyed`: its key, derived files, the check
of a hit's reads); here it is only dispatched.
"""

from __future__ import annotations

import contextlib
import dataclasses
import math
import threading
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, TypeGuard, cast

from pytest_graphnetz.report.epochs import History
from pytest_graphnetz.runner import determinism, environment, model_record
from pytest_graphnetz.runner.cache import TripleCache
from pytest_graphnetz.runner.command import Command
from pytest_graphnetz.runner.fingerprint import model_fingerprint
from pytest_graphnetz.runner.tasks.base import Task

if TYPE_CHECKING:
    from pytest_graphnetz.runner.command.keyed import CommandTriple
    from pytest_graphnetz.runner.command.run import CommandExecutor
    from pytest_graphnetz.runner.environment import SeedMap
    from pytest_graphnetz.runner.remote import RemoteSettings


@dataclass(frozen=True)
class Job:
    """Everything one triple needs; pickled to worker processes."""

    task: Task
    model: str
    factory: Callable[[int, int], Any]
    seed: int
    device: str
    threads: int
    root: str
    cache_dir: str | None
    # device info and versions (+ GPU and mode): part of the cache key; None: the machine the
    # triple runs on describes itself (an executor's worker, environment.machine), and the
    # outcome says what it found
    context: Mapping[str, Any] | None
    deterministic: str = determinism.DEFAULT_MODE
    # The code identities of the cache keys (see code_identities), computed once per sweep in
    # the parent process; None without a cache.
    code: Mapping[str, Any] | None = None
    cache_read_only: bool = False   # a cache directory that is read, never written
    remote: RemoteSettings | None = None  # the remote tier of the cache (runner/remote.py)
    # "train" a miss; "cache-only" or "plan": a miss is not trained (shard.MODES)
    mode: str = "train"
    seed_map: SeedMap | None = None  # the seed a command task's script receives instead

    def key_context(self) -> Mapping[str, Any]:
        """``context``, which :func:`run_triple` has filled in before any key is made."""
        if self.context is None:
            raise RuntimeError(f"{self.task.name}/{self.model}/{self.seed}: no machine context "
                               "for the cache key (run it through run_triple)")
        return self.context

    def cache(self) -> TripleCache | None:
        """The triple cache this job reads (and writes), or None."""
        if self.cache_dir is None:
            return None
        remote = None
        if self.remote is not None:
            from pytest_graphnetz.runner.remote import open_remote

            remote = open_remote(self.remote)
        return TripleCache(self.cache_dir, read_only=self.cache_read_only, remote=remote)


@dataclass(frozen=True)
class Outcome:
    """What one triple gave: its history, fingerprints, whether it came from the cache."""

    history: History
    data_fp: str
    model_fp: str
    cached: bool
    seconds: float
    model_info: dict[str, Any]    # what the model was: its repr and parameter count
    key: str | None = None        # the cache key of the triple's entry (None: no cache)
    machine: dict[str, Any] | None = None  # where it ran, for a job that had no context
    # Not in the cache, in a run that must not train (`mode`): the history is a placeholder.
    missing: bool = False


def _trainer_identity(task: Task, trainer: Callable[..., Any] | None) -> Any:
    """What identifies the training loop in the cache key (its code, not only its name)."""
    from pytest_graphnetz.base import metrics
    from pytest_graphnetz.runner.fingerprint import callable_identity
    from pytest_graphnetz.runner.training import builtin, common

    if trainer is not None:
        return callable_identity(trainer)
    # Whole modules, not just `train`: an edit to any helper or metric of the built-in loop
    # must invalidate cached results (a stale hit hiding a change is the worst failure).
    return [callable_identity(module) for module in (builtin(task.kind), common, metrics)]


# Seeds and torch's thread count are process-wide: two triples in threads of one process (a
# Dask worker with several threads, say) would interleave their RNG draws, so they take turns.
_ONE_TRIPLE_PER_PROCESS = threading.Lock()


def run_triple(job: Job, commands: CommandExecutor | None = None) -> Outcome:
    """Load, build, fingerprint, then fetch from the cache or train one (task, model, seed).

    A command task's script runs on ``commands`` (the sweep's executor: its warm servers and
    process groups); None, on one opened for this triple and closed after it."""
    with _ONE_TRIPLE_PER_PROCESS:
        if job.context is not None:
            # the machine the sweep was described on, which its cache key names
            environment.check_worker(job.device, job.context["device"])
            return _run_or_miss(job, commands)
        machine = environment.machine(job.device, job.deterministic,
                                      in_process=job.task.kind != "command")
        job = dataclasses.replace(job, device=machine["device"],
                                  context=environment.key_context(machine, job.deterministic))
        return dataclasses.replace(_run_or_miss(job, commands), machine=machine)


def _run_or_miss(job: Job, commands: CommandExecutor | None) -> Outcome:
    """:func:`_run_one`, or, where the job may not train (its ``mode``) and the cache lacks
    it, an outcome that says it is missing."""
    from pytest_graphnetz.runner.shard import NotCached

    try:
        return _run_one(job, commands)
    except NotCached:
        return Outcome(History(test=(math.nan,)), "", "", False, 0.0, {}, missing=True)


def _may_train(job: Job) -> None:
    """Refuse to train in a run that only reads the cache (``mode`` other than train)."""
    if job.mode != "train":
        from pytest_graphnetz.runner.shard import NotCached

        raise NotCached


def _run_one(job: Job, commands: CommandExecutor | None) -> Outcome:
    """One triple on its machine: a command task's script on ``commands`` (or on an executor
    opened for this triple alone), any other task in this process."""
    if job.task.kind != "command":
        return _run_triple_alone(job)
    if commands is not None:
        return _run_command(job, commands)
    from pytest_graphnetz.runner.command.run import CommandExecutor

    with CommandExecutor() as own:
        return _run_command(job, own)


def _run_triple_alone(job: Job) -> Outcome:
    start = time.perf_counter()
    cache = job.cache()
    load_key = _load_key(job)
    if cache is not None and load_key is not None:
        hit = _cached_without_loading(job, cache, load_key)
        if hit is not None:
            return dataclasses.replace(hit, seconds=time.perf_counter() - start)
    import torch

    from pytest_graphnetz.runner import training
    from pytest_graphnetz.runner.cache import make_key
    from pytest_graphnetz.runner.fingerprint import (
        data_files_stamp,
        data_fingerprint,
        files_under,
        recording_opened_files,
    )
    from pytest_graphnetz.runner.training.common import to_device

    environment.import_torch_geometric()  # a spawned or remote worker imports it here first
    task = job.task
    trainer = task.trainer_for(job.model)
    torch.set_num_threads(job.threads)
    # An unseeded loader is reseeded with one fixed value: its data is then the same for every
    # seed (DESIGN: "constant across seeds"), even when it draws random numbers.
    environment.reseed(job.seed if task.seeded else 0)
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
    model, model_fp, model_info = _built(job, cache, [in_channels, out_channels])
    if trainer is None:
        training.check_fits(model, kind=task.kind, task=task.name, model_name=job.model)
    training.check_backends(task, job.factory, model_name=job.model)

    def train() -> History:
        _may_train(job)
        device = torch.device(job.device)
        with determinism.deterministic_scope(job.deterministic, job.device):
            moved = model.to(device)
            on_device = to_device(data, device)
            if trainer is not None:
                result = trainer(moved, on_device, task=task, device=device)
                return training.as_history(result, where=f"trainer of task {task.name!r}",
                                           metric=task.metric_name)
            return training.builtin(task.kind).train(moved, on_device, task=task, device=device)

    key = None
    if cache is None:
        history, cached = train(), False
    else:
        fields = _triple_fields(job, data_fp, [in_channels, out_channels], model_fp)
        key = make_key(fields)
        history, cached = cache.get_or_compute(key, train, fields,
                                               check=_entry_check(task, trainer))
    return Outcome(history, data_fp, model_fp, cached, time.perf_counter() - start,
                    model_info, key)


def _built(job: Job, cache: TripleCache | None, channels: list[int],
           ) -> tuple[Any, str, dict[str, Any]]:
    """``(model, fingerprint, description)`` of ``job``'s model, built (reseeded with its seed)
    and, with a cache, recorded for the sessions that find it unchanged (:mod:`.model_record`)."""
    environment.import_torch_geometric()   # before a factory's own import of PyG (its warnings)
    model, variables, files = model_record.build(job.factory, job.seed, channels)
    model_fp, info = model_fingerprint(model, job.factory), model_record.describe(model)
    key = None if cache is None else _record_key(job, channels)
    if cache is not None and key is not None:
        model_record.store(cache, key, model_fp, info, variables, files)
    return model, model_fp, info


def _record_key(job: Job, channels: list[int]) -> str | None:
    """The key of ``job``'s model record at ``channels`` (None: its model is built every run)."""
    code = job.code or {}
    return model_record.record_key(code.get("built"), code.get("project"), channels, job.seed,
                                   job.key_context())


def _triple_fields(job: Job, data_fp: str, channels: list[int], model_fp: str) -> dict:
    """Everything a triple's result depends on: its cache key's fields."""
    code = job.code or {}
    return {
        "task": {"data": data_fp, "config": job.task.config(), "trainer": code.get("trainer"),
                 "channels": channels},
        "model": model_fp, "code": code.get("project"), "seed": job.seed,
        "threads": job.threads, **job.key_context(),
    }


def code_identities(task: Task, model: str, factory: Callable[..., Any],
                     per_task: dict[str, dict[str, Any]]) -> dict[str, Any]:
    """The code parts of a triple's cache keys, for ``task`` × ``model`` built by ``factory``:

    - ``trainer``: the training loop's identity (:func:`_trainer_identity`);
    - ``project``: :func:`~pytest_graphnetz.runner.fingerprint.project_code_key` of the factory, the
      trainer and the loader (every project module they import, whole);
    - ``loader``: what the loader's result depends on besides its files and arguments (its
      identity, the values it carries, its project code), or None when a value it carries has
      no stable text (then the loader runs on every triple, as it must);
    - ``built``: the factory's part of its model record's key (:mod:`.model_record`): the
      values it carries and those the project modules it reaches hold now (None where one
      has no stable text: its model is then built every run).

    ``per_task`` memoises the parts that do not depend on the model.
    """
    from pytest_graphnetz.runner import training
    from pytest_graphnetz.runner.fingerprint import (
        callable_identity,
        callable_state,
        project_code_files,
        project_code_key,
    )

    own = task.trainer_for(model)
    trainer = own if own is not None else training.builtin(task.kind)
    try:
        state = callable_state(factory)
        modules = model_record.module_state(project_code_files([factory]))
    except Exception:  # noqa: BLE001 - a value whose repr or attributes fail: not recordable
        state = modules = None
    if task.name not in per_task:
        try:
            loader_state = callable_state(task.loader)
        except Exception:  # noqa: BLE001 - a value whose repr or attributes fail: not keyable
            loader_state = None
        per_task[task.name] = {
            "loader": None if loader_state is None else {
                "identity": callable_identity(task.loader), "state": loader_state,
                "project": project_code_key([task.loader])},
        }
    memo = per_task[task.name]
    if own is None and "builtin" not in memo:
        # The built-in loop's identity depends on the task alone (three whole modules, hashed
        # once per task, not once per model).
        memo["builtin"] = _trainer_identity(task, None)
    return {"loader": memo["loader"],
            "trainer": memo["builtin"] if own is None else _trainer_identity(task, own),
            "project": project_code_key([factory, trainer, task.loader]),
            "built": {"state": state, "modules": modules}}


def _load_key(job: Job) -> str | None:
    """The key of the load record of ``job``'s task and seed: the loader's code and the values
    it carries, its arguments (root, and seed for a seeded loader), the task's settings and
    the library versions; None when the loader cannot be keyed (it then always runs)."""
    from pytest_graphnetz.runner.cache import make_key

    loader = None if job.code is None else job.code.get("loader")
    if loader is None:
        return None
    task = job.task
    return make_key({
        "load": loader, "root": job.root, "seed": job.seed if task.seeded else None,
        "task": {"name": task.name, "category": task.category, "config": task.config(),
                 "channels": [task.in_channels, task.out_channels]},
        **job.key_context(),
    })


def _cached_without_loading(job: Job, cache: TripleCache, load_key: str) -> Outcome | None:
    """The cached outcome of ``job`` found without running its loader, or None.

    The load record (written when the loader last ran) gives the data fingerprint and the
    channels; it is trusted only while the stamp (size, mtime) of the loader's data files is
    unchanged: the files it opened or wrote, or, when it opened none through Python, every
    file under the task's root. The model's fingerprint comes from its record
    (:mod:`.model_record`) when its code and environment are unchanged, else the model is built
    as usual (reseeded, so its initial weights and fingerprint are the cold run's); a triple
    entry under the resulting key is the hit.
    """
    from pytest_graphnetz.runner.cache import make_key
    from pytest_graphnetz.runner.fingerprint import data_files_stamp, files_under

    record = cache.get_record(load_key)
    if not _usable_record(record):
        return None
    paths = files_under(job.root) if record["walked_root"] else \
        [path for path, _, _ in record["files"]]
    if data_files_stamp(paths) != record["files"]:
        return None
    channels = record["channels"]
    record_key = _record_key(job, channels)
    described = None if record_key is None else model_record.recorded(cache, record_key)
    model_fp, info = described if described is not None else _built(job, cache, channels)[1:]
    key = make_key(_triple_fields(job, record["data"], channels, model_fp))
    if not cache.has(key):
        return None
    history = cache.get(key, _entry_check(job.task, job.task.trainer_for(job.model)))
    if history is None:
        return None
    return Outcome(history, record["data"], model_fp, True, 0.0, info, key)


def _usable_record(record: Any) -> TypeGuard[dict[str, Any]]:
    """Whether a load record has the fields :func:`_cached_without_loading` reads."""
    return (isinstance(record, dict) and isinstance(record.get("data"), str)
            and isinstance(record.get("channels"), list) and len(record["channels"]) == 2
            and all(type(c) is int for c in record["channels"])
            and isinstance(record.get("files"), list) and type(record.get("walked_root")) is bool
            and all(isinstance(f, list) and len(f) == 3 and isinstance(f[0], str)
                    for f in record["files"]))


def command_triple(job: Job) -> CommandTriple:
    """``job`` as its command task's executor runs and keys it."""
    from pytest_graphnetz.runner.command.keyed import CommandTriple

    # run_benchmark admits only Commands as the models of a command task.
    return CommandTriple(job.task, job.model, cast(Command, job.factory), job.seed, job.device,
                         job.threads, job.deterministic, job.root, job.seed_map)


def _run_command(job: Job, commands: CommandExecutor) -> Outcome:
    """One triple of a command task, on ``commands`` (:func:`.command.keyed.run_triple`)."""
    from pytest_graphnetz.runner.command.keyed import run_triple

    start = time.perf_counter()
    triple = command_triple(job)
    ran = run_triple(commands, triple, cache=job.cache(), context=job.key_context(),
                     may_train=lambda: _may_train(job))
    return Outcome(ran.history, ran.data_fp, triple.fingerprint(), ran.cached,
                   time.perf_counter() - start, triple.model_info(), ran.key)


def check_commands(jobs: list[Job], outcomes: list[Outcome], commands: CommandExecutor) -> None:
    """The determinism rerun of the sweep's command models that ask for it
    (:func:`.command.keyed.check_determinism`)."""
    from pytest_graphnetz.runner.command.keyed import check_determinism

    check_determinism(commands, [(command_triple(job), outcome.history) for job, outcome
                                 in zip(jobs, outcomes, strict=True)
                                 if isinstance(job.factory, Command)])


def _entry_check(task: Task, trainer: Callable[..., Any] | None,
                 ) -> Callable[[History], str | None] | None:
    """What a cached history must satisfy to stand for a run of ``task`` (else it is retrained).

    A built-in trainer records exactly ``task.epochs`` epochs (NaN after a divergence), its
    metrics bounded in [0, 1] (accuracy, AUC...) lie there and its per-example outcomes
    recompute the test value recorded at their epoch. A custom trainer's history is only
    checked for its value types (it may record any epochs, and in any units).
    """
    from pytest_graphnetz.report.epochs import in_unit_interval, outcomes_problem

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

