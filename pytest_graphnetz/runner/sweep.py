"""The sweep: :func:`run_benchmark`, the public keyword form, resolves the task set and builds a
:class:`SweepSpec`; :func:`sweep` checks the models and the spec, fixes the run's context
(device, versions, determinism mode), builds one job per (task, model, seed), runs them
(:mod:`.workers`) and assembles the report."""

from __future__ import annotations

import os
import platform
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

from pytest_graphnetz.base.text import check_name
from pytest_graphnetz.report import BenchmarkReport
from pytest_graphnetz.report.epochs import MetricSpec
from pytest_graphnetz.runner import determinism, environment
from pytest_graphnetz.runner.cache import TripleCache
from pytest_graphnetz.runner.command import Command
from pytest_graphnetz.runner.engines import as_executor
from pytest_graphnetz.runner.tasks import resolve_tasks
from pytest_graphnetz.runner.tasks.base import Task
from pytest_graphnetz.runner.triple import Job, Outcome, check_commands, code_identities
from pytest_graphnetz.runner.verify import CacheCheck, verify_hits
from pytest_graphnetz.runner.workers import Progress, execute

if TYPE_CHECKING:
    from pytest_graphnetz.runner.command.run import CommandExecutor
    from pytest_graphnetz.runner.environment import SeedMap

ROOT_ENV = "GRAPHNETZ_ROOT"


def default_root() -> Path:
    """Where datasets are cached when neither ``root=`` nor ``$GRAPHNETZ_ROOT`` says:
    ``pytest-graphnetz/data`` under the user's cache directory (``$XDG_CACHE_HOME``, else
    ``~/.cache``; ``~/Library/Caches`` on macOS, ``%LOCALAPPDATA%`` on Windows). Outside every
    project, so a ``git add -A`` never commits a downloaded dataset, and shared by a user's
    projects (the catalogue's auditor checks each task's files before use)."""
    if os.environ.get("XDG_CACHE_HOME"):
        base = Path(os.environ["XDG_CACHE_HOME"])
    elif os.name == "nt" and os.environ.get("LOCALAPPDATA"):
        base = Path(os.environ["LOCALAPPDATA"])
    elif platform.system() == "Darwin":
        base = Path.home() / "Library" / "Caches"
    else:
        base = Path.home() / ".cache"
    return base / "pytest-graphnetz" / "data"


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
    verify_cache: int | None = None,
    commands: CommandExecutor | None = None,
    remote_cache: str | None = None,
    remote_cache_write: bool = False,
    shard: str | None = None,
    cache_only: bool = False,
    plan: bool = False,
    seed_map: SeedMap | None = None,
) -> BenchmarkReport:
    """Train every model on every task under every seed; the per-seed, per-epoch report.

    The public keyword form: it resolves the task set (with the run's task overrides) and
    gathers the rest into a :class:`SweepSpec` for :func:`sweep`, the internal entry.

    - ``tasks``: a catalogue category (``"social"``), a list of catalogue task names, or
      ``{name: Task | loader}`` (custom tasks, category ``custom``).
    - ``models``: ``{name: factory}``, ``factory(in_channels, out_channels) -> nn.Module``.
    - the settings (``seeds``, ``device``, ``root``, ``workers``, ``executor``, ``threads``,
      ``cache_dir``, ``deterministic``, ``verify_cache``, ``remote_cache[_write]``,
      ``shard``, ``cache_only``, ``plan``, ``seed_map``): the fields of :class:`SweepSpec`, which
      says what each means.
    - ``epochs``, ``lr``, ``weight_decay``, ``batch_size``: replace that setting of every task
      of this run (catalogue or custom); ``options``: merged into each task's ``options``
      (``hidden``, ``hits_k``...). They are part of each task's config, so of the cache key
      and the report's protocol. For one task only, pass ``{name: dataclasses.replace(task,
      epochs=...)}`` with ``task = pytest_graphnetz.runner.tasks.get_task(name)``.
    - ``progress``: ``progress(task, model, seed, status, seconds)``, status ``"trained"`` or
      ``"cached"``, called in this process as each triple finishes; ``started(task, model,
      seed)``: called just before each triple when the triples run in this process
      (``workers=1``, no executor), so a display can say which one is training.
    - ``commands``: the :class:`~pytest_graphnetz.runner.command.run.CommandExecutor` that runs
      command tasks' scripts, so its warm servers serve several runs (the pytest session's);
      None: one opened for this call and closed at its end.

    Returns a :class:`BenchmarkReport` with ``X[task, model, seed]`` in the order of ``tasks``,
    ``models`` and ``seeds``, every history, data/model fingerprints and the run's protocol.
    A failing triple raises :class:`TripleError` naming it (finished triples stay cached); a
    worker process that dies outright raises :class:`WorkerCrashError` naming the suspects.
    """
    task_map = _tuned(resolve_tasks(tasks), epochs=epochs, lr=lr, weight_decay=weight_decay,
                      batch_size=batch_size, options=options)
    spec = SweepSpec(
        seeds=tuple(_check_seeds(seeds)), device=device,
        root=Path(root if root is not None else os.environ.get(ROOT_ENV) or default_root()),
        workers=workers, executor=executor, threads=threads,
        cache_dir=None if cache_dir is None else Path(cache_dir), deterministic=deterministic,
        verify_cache=verify_cache, remote_cache=remote_cache,
        remote_cache_write=remote_cache_write, shard=shard, cache_only=cache_only, plan=plan,
        seed_map=seed_map)
    return sweep(task_map, models, spec, progress=progress, started=started, commands=commands)


@dataclass(frozen=True)
class SweepSpec:
    """How one sweep runs, beside what it trains (a task set and the models): the settings of
    :func:`run_benchmark`, its keyword form, other than the task overrides and the callbacks.

    - ``seeds``: the seed labels, in the order the report keeps (non-negative ints < 2**32;
      :func:`run_benchmark` checks them).
    - ``device``: ``auto`` (CUDA, then MPS, then CPU), ``cpu``, ``cuda``, ``cuda:i``, ``mps``.
    - ``root``: dataset directory (:func:`run_benchmark`'s default: ``$GRAPHNETZ_ROOT``, else
      :func:`default_root`, in the user's cache directory, outside the project); task data
      lives in ``<root>/<category>/<task>/``, the directory its loader receives.
    - ``workers``: triples run in this many processes (fork where available, CPU only);
      ``executor``: any ``concurrent.futures.Executor`` instead (e.g. a Dask client's
      ``client.get_executor(pure=False)``; see docs/distributed.md).
    - ``threads``: torch intra-op threads per triple (the thread count changes the bits).
    - ``cache_dir``: a :class:`~pytest_graphnetz.runner.cache.TripleCache` directory (None: no
      cache).
    - ``deterministic``: ``on`` (default), ``warn`` or ``off``: deterministic CUDA algorithms
      per triple (see :mod:`~pytest_graphnetz.runner.determinism`; no effect on CPU and MPS).
    - ``verify_cache``: per cell, how many of the seeds read from the cache to retrain and
      compare bit for bit (0: none); a result that differs retrains the cell and the report's
      ``protocol["cache"]`` names it. None: one for a command task, none for an in-process
      model (:mod:`~pytest_graphnetz.runner.verify`).
    - ``remote_cache``: an fsspec URL (``s3://bucket/prefix``, ``file:///mnt/shared``) of a
      team's shared triple cache beside ``cache_dir`` (which it needs): read on a local miss,
      written only with ``remote_cache_write`` (:mod:`~pytest_graphnetz.runner.remote`).
    - ``shard``: ``"I/N"``: train only shard I's share of the triples (1-based; the share is
      the same in every shard job: :mod:`~pytest_graphnetz.runner.shard`) and return no report:
      raises :class:`~pytest_graphnetz.runner.shard.ShardTrained` saying what it trained.
    - ``cache_only``: train nothing; a triple the cache lacks raises
      :class:`~pytest_graphnetz.runner.shard.MissingTriplesError` naming every one (the
      verify sample is the shards' job then: nothing is retrained).
    - ``plan``: train nothing; when triples are missing, raise
      :class:`~pytest_graphnetz.runner.shard.Planned` listing them (with their shard of
      ``shard``'s N, when given); when none are, the report, from the cache (so an adaptive
      gate asks for its next look, which is then planned).
    - ``seed_map``: the seed a command task's script receives for each benchmark seed (a
      calibration's salted run: :class:`~pytest_graphnetz.runner.environment.SeedMap`); the
      data stays at the benchmark seed. In-process models are salted by their factory.
    """

    seeds: tuple[int, ...] = tuple(range(10))
    device: str = "auto"
    root: Path = field(default_factory=default_root)
    workers: int = 1
    executor: Any = None
    threads: int = 1
    cache_dir: Path | None = None
    deterministic: str = determinism.DEFAULT_MODE
    verify_cache: int | None = None
    remote_cache: str | None = None
    remote_cache_write: bool = False
    shard: str | None = None
    cache_only: bool = False
    plan: bool = False
    seed_map: SeedMap | None = None

    @property
    def triple_mode(self) -> str:
        """What a triple the cache lacks does: ``train``, ``plan`` or ``cache-only``."""
        return "plan" if self.plan else "cache-only" if self.cache_only else "train"


def sweep(task_map: Mapping[str, Task], models: Mapping[str, Callable[[int, int], Any]],
          spec: SweepSpec, *, progress: Progress | None = None,
          started: Callable[[str, str, int], None] | None = None,
          commands: CommandExecutor | None = None) -> BenchmarkReport:
    """:func:`run_benchmark` on a resolved task set: every model on every task under every seed
    of ``spec``; ``progress``, ``started`` and ``commands`` as there."""
    in_process = any(task.kind != "command" for task in task_map.values())
    if in_process and int(spec.workers) > 1:
        # Imported once here, so forked workers start with it. In this process a triple imports
        # them when it builds or trains: a sweep whose triples and models are all found in the
        # cache never imports torch or PyG (docs/cache.md, "The model record").
        environment.import_torch_geometric()
    _check_models(task_map, models)
    if int(spec.threads) < 1:
        raise ValueError(f"`threads` must be >= 1, got {spec.threads!r}")
    if int(spec.workers) < 1:
        raise ValueError(f"`workers` must be >= 1, got {spec.workers!r}")
    mode = determinism.check_mode(spec.deterministic)
    from pytest_graphnetz.runner import shard as sharding

    split = None if spec.shard is None else sharding.parse_shard(spec.shard, option="`shard`")
    # With an executor, each triple is described where it runs (its worker resolves `auto`
    # and keys its cache entry by its own device); here, once for the sweep.
    executor = None if spec.executor is None else as_executor(spec.executor)
    opened = None if spec.cache_dir is None else TripleCache.open(spec.cache_dir.resolve())
    here = None if executor is not None else environment.machine(
        spec.device, mode, in_process=in_process, records=opened)
    verify = spec.verify_cache
    if verify is not None and (isinstance(verify, bool) or int(verify) < 0):
        raise ValueError(f"`verify_cache` must be a whole number >= 0 (seeds per cached cell "
                         f"to retrain and compare; 0: none), got {verify!r}")
    jobs = _jobs(task_map, models, spec, here, mode, opened)
    shard_of: list[int | None] = [None] * len(jobs)
    if split is not None:
        shard_of = list(sharding.assign(
            [sharding.triple_label(j.task.name, j.model, j.seed) for j in jobs],
            [float(j.task.epochs or 1) for j in jobs], split.count))
    total = len(jobs)
    if split is not None and not spec.plan:
        jobs = [job for job, s in zip(jobs, shard_of, strict=True) if s == split.index]
    own = None
    if commands is None and any(task.kind == "command" for task in task_map.values()):
        from pytest_graphnetz.runner.command.run import CommandExecutor

        commands = own = CommandExecutor()
    # More processes than triples would only sit idle (24 workers for 2 triples).
    pool = max(1, min(int(spec.workers), len(jobs)))
    try:
        outcomes = execute(jobs, workers=pool, executor=executor, device=_device(spec, here),
                           progress=progress, started=started, commands=commands)
        _refuse_missing(jobs, outcomes, spec, shard_of, total)
        jobs, outcomes, checked, here = _checked(jobs, outcomes, spec, executor, here, mode,
                                                 commands)
    finally:
        if own is not None:
            own.close()
    if split is not None and not spec.plan:
        trained = sum(not out.cached for out in outcomes)
        raise sharding.ShardTrained(split, trained=trained, cached=len(outcomes) - trained)
    protocol = {"device": here["info"], "threads": int(spec.threads),
                "versions": here["versions"], "deterministic": mode, "gpu": here["gpu"],
                "platform": here["platform"], "hardware": here["hardware"],
                "numerics": here.get("numerics"),
                "tasks": {t.name: _task_protocol(t) for t in task_map.values()}}
    if checked.protocol() is not None:
        protocol["cache"] = checked.protocol()
    return _assemble(task_map, list(models), list(spec.seeds), jobs, outcomes,
                     protocol=protocol)


def _check_models(task_map: Mapping[str, Task], models: Any) -> None:
    """``models`` a non-empty ``{name: factory}``, each factory of the kind its tasks run."""
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


def _jobs(task_map: Mapping[str, Task], models: Mapping[str, Any], spec: SweepSpec,
          here: dict[str, Any] | None, mode: str, opened: TripleCache | None) -> list[Job]:
    """One job per (task, model, seed), in that order, over the cache ``opened`` (and the
    remote one): the code identities of their keys computed once."""
    remote = None
    if spec.remote_cache is not None:
        from pytest_graphnetz.runner.remote import RemoteSettings

        if spec.cache_dir is None:
            raise ValueError("`remote_cache` needs a local cache to copy its hits into: pass "
                             "`cache_dir` too (in pytest: not with --graphnetz-no-cache)")
        remote = RemoteSettings.from_environment(spec.remote_cache,
                                                 write=bool(spec.remote_cache_write))
    cache = None if opened is None else str(opened.directory)
    context = None if here is None else environment.key_context(here, mode)
    device = _device(spec, here)
    per_task: dict[str, dict[str, Any]] = {}
    code = {} if cache is None else {
        (task.name, model): code_identities(task, model, models[model], per_task)
        for task in task_map.values() if task.kind != "command" for model in models}
    return [
        Job(task=task, model=model, factory=models[model], seed=seed, device=device,
            threads=int(spec.threads), root=str((spec.root / task.category / task.name).resolve()),
            cache_dir=cache, context=context, deterministic=mode,
            code=code.get((task.name, model)),
            cache_read_only=opened is not None and opened.read_only,
            remote=None if opened is None else remote, mode=spec.triple_mode,
            seed_map=spec.seed_map)
        for task in task_map.values() for model in models for seed in spec.seeds
    ]


def _device(spec: SweepSpec, here: dict[str, Any] | None) -> str:
    """The device the jobs name: the one this machine resolved, else the one asked for."""
    return str(spec.device) if here is None else str(here["device"])


def _refuse_missing(jobs: list[Job], outcomes: list[Outcome], spec: SweepSpec,
                    shard_of: list[int | None], total: int) -> None:
    """A run that trains nothing (``plan``, ``cache_only``) and lacks triples raises, naming
    them: the plan of the ``total`` triples (with each missing one's shard), or the refusal."""
    from pytest_graphnetz.runner import shard as sharding

    missing = [sharding.triple_label(j.task.name, j.model, j.seed)
               for j, out in zip(jobs, outcomes, strict=True) if out.missing]
    if spec.plan and missing:
        raise sharding.Planned([
            {"task": j.task.name, "model": j.model, "seed": j.seed,
             "cost": float(j.task.epochs or 1), "shard": s}
            for j, out, s in zip(jobs, outcomes, shard_of, strict=True) if out.missing],
            total=total)
    if missing:
        raise sharding.MissingTriplesError(missing)


def _checked(jobs: list[Job], outcomes: list[Outcome], spec: SweepSpec, executor: Any,
             here: dict[str, Any] | None, mode: str, commands: CommandExecutor | None
             ) -> tuple[list[Job], list[Outcome], CacheCheck, dict[str, Any]]:
    """After the run: the machine (an executor's workers described theirs: one kind, the jobs
    then name it), the verify sample of the cache hits retrained, the command runs checked;
    the jobs, their outcomes, the sample's check and the machine."""
    if here is None:
        here = environment.one_machine([out.machine or {} for out in outcomes])
        context = environment.key_context(here, mode)
        jobs = [replace(job, device=here["device"], context=context) for job in jobs]
    checked = CacheCheck()
    if spec.cache_dir is not None and spec.triple_mode == "train":
        pool = max(1, min(int(spec.workers), len(jobs)))
        outcomes, checked = verify_hits(
            jobs, outcomes, per_cell=spec.verify_cache, run=lambda more: execute(
                more, workers=max(1, min(pool, len(more))), executor=executor,
                device=_device(spec, here), progress=None, started=None, commands=commands))
    if commands is not None:
        check_commands(jobs, outcomes, commands)
    return jobs, outcomes, checked, here


def _tuned(task_map: dict[str, Task], *, options: Mapping[str, Any] | None,
           **settings: Any) -> dict[str, Task]:
    """Every task with the run's overrides (``None``: keep the task's own setting)."""
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

    from pytest_graphnetz.runner.cache import canonical_json

    protocol = {"category": task.category, "seeded": task.seeded,
                "config": json.loads(canonical_json(task.config())),
                "trainer": "builtin" if task.trainer is None else "custom"}
    if task.kind == "command":
        protocol.update(trainer="command", reseeding=(
            "the script's: the runner passes the seed (GRAPHNETZ_SEED, {seed}) and pins threads "
            "and device through the environment; the script must call graphnetz.seed()"))
    return protocol


def _assemble(task_map: Mapping[str, Task], models: list[str], seeds: list[int],
              jobs: list[Job], outcomes: list[Outcome], protocol: dict) -> BenchmarkReport:
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

