"""The plugin's settings: every ``--graphnetz-*`` option (:mod:`.options`) read and validated
once at session start into a :class:`Settings` that cannot change.

A bad value is a usage error that names where it came from: the option when it was given on
the command line, the ini key (and its file) when it came from there (:func:`~.options.named`),
so the user is sent to the place to fix it. The files the session will write and a pinned
device are checked here too, before any test runs; :func:`header_line` says what is in effect.

Standard library and pytest only at import: pytest loads the plugin on every run.
"""

from __future__ import annotations

import os
from pathlib import Path
from types import SimpleNamespace
from typing import TYPE_CHECKING, Any

import pytest

from pytest_graphnetz.plugin.keys import STEP_SUMMARY_ENV
from pytest_graphnetz.plugin.options import (
    DEFAULT_ALPHA,
    DEFAULT_SEEDS,
    MIN_ALPHA,
    RESOLVABLE,
    converted,
    getter,
    named,
    parse_adaptive,
    parse_seeds,
    path_value,
    refuse_command_line_only,
)

if TYPE_CHECKING:
    from collections.abc import Callable

    Get = Callable[[str, Any], Any]   # options.getter's: the option's value, else a default


class Settings(SimpleNamespace):
    """The session's graphnetz settings: each option from the command line, else the ini file.

    Every field is given (:meth:`from_config`), none can be set afterwards. A namespace with
    annotated fields, not a NamedTuple or a frozen dataclass: pytest defines this class on
    every run, where typing compiles each of a NamedTuple's 22 annotations and a dataclass
    compiles the methods it generates: 3.5 and 11 million instructions, against 0.6 million for
    this class (benchmarks/plugin_overhead.py counts what a run pays)."""

    seeds: tuple[int, ...]
    min_seeds: int | None      # adaptive seeds (MIN..MAX): MIN; None for fixed seeds
    device: str
    workers: int
    cache_dir: Path | None     # None: no cache (--graphnetz-no-cache)
    verify_cache: int | None   # cached seeds per cell retrained to check (None: per kind)
    baseline_dir: Path
    update_baselines: bool
    force: bool
    alpha: float
    strict: bool
    summary: Path | None
    report_dir: Path | None
    cli_baseline_dir: str | None  # as typed on the command line, for the commands we print
    deterministic: str         # on | warn | off (determinism.py)
    # None: each metric's default (gates.default_min_effect); "resolvable": what the seeds
    # resolve, from the calibration beside each baseline (calibration/)
    min_effect: float | str | None
    comment: Path | None       # the pull-request comment (Markdown)
    json: Path | None          # the JSON verdict file
    fail_unused: bool          # baseline cells no gate used fail the run
    accept: frozenset[str]     # TASK/MODEL cells whose loss a refresh accepts
    add_missing: bool          # --graphnetz-add-missing: write only the cells a baseline lacks
    calibrate: bool            # --graphnetz-calibrate (calibration/)
    baseline_replicates: int   # R: runs per seed a refresh trains (replicates.py)
    single_run: bool           # --graphnetz-single-run: every run judged alone at α
    executor: str | None       # --graphnetz-executor: the factory's `module:function`
    accept_hardware: bool      # --graphnetz-accept-hardware: another kind of hardware noted
    # The schedule's first look (seeds): the ini's graphnetz_seeds (its N, or MIN of MIN..MAX),
    # else MIN of adaptive seeds on the command line, else 10 (stats.DEFAULT_FIRST_LOOK).
    first_look: int
    remote_cache: str | None   # --graphnetz-remote-cache: an fsspec URL, checked
    remote_cache_write: bool   # --graphnetz-remote-cache-write
    shard: str | None          # --graphnetz-shard: "I/N", checked (runner/shard.py)
    cache_only: bool           # --graphnetz-cache-only: train nothing
    plan: Path | None          # --graphnetz-plan: the missing triples' JSON file
    # --graphnetz-mlflow: the tracking URI ("default": MLFLOW_TRACKING_URI); None: no export
    mlflow: str | None
    mlflow_series: bool        # the export sends the per-epoch series
    # report_dir is a temporary folder the export reads the seeds from (removed after it)
    report_dir_temporary: bool

    def __init__(self, **fields: Any) -> None:
        declared = type(self).__annotations__.keys()
        if fields.keys() != declared:
            raise TypeError(f"Settings: missing {sorted(declared - fields.keys())}, unknown "
                            f"{sorted(fields.keys() - declared)}")
        super().__init__(**fields)

    def __setattr__(self, name: str, value: object) -> None:
        raise AttributeError(f"Settings are read once, at session start: {name} cannot be set")

    def __delattr__(self, name: str) -> None:
        raise AttributeError(f"Settings are read once, at session start: {name} cannot be "
                             "deleted")

    def run_arguments(self) -> dict[str, Any]:
        """``run_benchmark``'s arguments from these settings: seeds, device, workers, the
        caches (local and remote), the determinism mode, the shard and what may train."""
        found: dict[str, Any] = {
            "seeds": self.seeds, "device": self.device, "workers": self.workers,
            "cache_dir": self.cache_dir, "deterministic": self.deterministic,
            "verify_cache": self.verify_cache, "cache_only": self.cache_only,
            "plan": self.plan is not None}
        if self.remote_cache is not None:
            found.update(remote_cache=self.remote_cache,
                         remote_cache_write=self.remote_cache_write)
        if self.shard is not None:
            found["shard"] = self.shard
        return found

    @property
    def rerun_safe(self) -> bool:
        """Whether this session's not-worse gates walk the schedule (so a rerun with more seeds
        keeps the error rates): not with ``--graphnetz-single-run``."""
        return not self.single_run

    @classmethod
    def from_config(cls, config: pytest.Config) -> Settings:
        """Read and validate every option, group by group (what trains, what decides, the
        baselines, the files written); a bad value is a usage error naming the option."""
        refuse_command_line_only(config)
        get = getter(config)
        return cls(**_training_fields(config, get), **_decision_fields(config, get),
                   **_baseline_fields(config, get), **_output_fields(config, get))


def _decision_fields(config: pytest.Config, get: Get) -> dict[str, Any]:
    """What the gates decide with: the seeds and the schedule's first look, α, δ, strict and
    single-run."""
    alpha = converted(config, "alpha", get("alpha", str(DEFAULT_ALPHA)), float, "a number")
    min_effect = get("min-effect", None)
    if min_effect is not None and str(min_effect).strip() == RESOLVABLE:
        min_effect = RESOLVABLE
    elif min_effect is not None:
        min_effect = converted(config, "min-effect", min_effect, float,
                               f"a number or `{RESOLVABLE}`")
    try:
        seeds = parse_seeds(get("seeds", DEFAULT_SEEDS))
        adaptive = parse_adaptive(get("seeds", DEFAULT_SEEDS))
        first_look = _first_look(config, adaptive)
    except ValueError as exc:
        raise pytest.UsageError(f"graphnetz: {exc}") from None
    if isinstance(min_effect, float) and not 0.0 < min_effect < float("inf"):
        raise pytest.UsageError(
            f"graphnetz: {named(config, 'min-effect')} must be a number > 0 (the smallest "
            f"regression that matters, in metric units), got {min_effect}")
    if not 0.0 < alpha < 0.5:
        raise pytest.UsageError(
            f"graphnetz: {named(config, 'alpha')} must lie in (0, 0.5), got {alpha}")
    if alpha < MIN_ALPHA:
        raise pytest.UsageError(
            f"graphnetz: {named(config, 'alpha')} {alpha!r} is below {MIN_ALPHA:g}, the "
            "smallest α a gate takes (no seed count a CI can afford decides at it, and α "
            "split over cells would lose its digits); use e.g. 0.001")
    return dict(seeds=seeds, min_seeds=adaptive[0] if adaptive else None, alpha=alpha,
                min_effect=min_effect, first_look=first_look,
                strict=bool(get("strict", False)), single_run=bool(get("single-run", False)))


def _training_fields(config: pytest.Config, get: Get) -> dict[str, Any]:
    """What trains, where and how: workers or an executor, the device, determinism, the
    caches (local, remote, verified), a shard, and whether anything trains at all."""
    workers = converted(config, "workers", get("workers", "1"), int,
                        "a whole number of processes")
    try:
        deterministic = _deterministic(config, get("deterministic", None))
    except ValueError as exc:
        raise pytest.UsageError(f"graphnetz: {exc}") from None
    verify_cache = get("verify-cache", None)
    if verify_cache is not None:
        verify_cache = converted(config, "verify-cache", verify_cache, int,
                                 "a whole number of seeds per cell (0: off)")
        if verify_cache < 0:
            raise pytest.UsageError(
                f"graphnetz: {named(config, 'verify-cache')} must be >= 0 (cached seeds "
                f"per cell to retrain and compare; 0: off), got {verify_cache}")
    if workers < 1:
        raise pytest.UsageError(
            f"graphnetz: {named(config, 'workers')} must be >= 1, got {workers}")
    cpus = os.cpu_count() or 1
    if workers > cpus:
        # Each triple trains on one thread: processes beyond the CPUs only queue for them.
        config.issue_config_time_warning(pytest.PytestConfigWarning(
            f"graphnetz: {named(config, 'workers')} asks for {workers} processes but this "
            f"machine has {cpus} CPU(s); using {cpus}"), stacklevel=2)
        workers = cpus
    device = config.getoption("graphnetz_device")
    if device is not None and not str(device).strip():
        raise pytest.UsageError(
            "graphnetz: `--graphnetz-device=` is empty: give auto, cpu, cuda, cuda:i or mps "
            "(or leave the option out for auto)")
    cache_dir = _cache_dir(config, get)
    cache_only = bool(get("cache-only", False))
    return dict(
        workers=workers, device=str(get("device", "auto")), deterministic=deterministic,
        verify_cache=verify_cache, cache_dir=cache_dir,
        executor=_executor(config, get("executor", None)),
        remote_cache=_remote_cache(config, get("remote-cache", None), cache_dir),
        remote_cache_write=bool(get("remote-cache-write", False)),
        shard=_shard(config, get("shard", None), cache_only), cache_only=cache_only,
        plan=_written_file(config, get, "plan"))


def _cache_dir(config: pytest.Config, get: Get) -> Path | None:
    """The triple cache: none, the one named, else one under pytest's cache dir."""
    if get("no-cache", False):
        return None
    if get("cache-dir", None) is not None:
        return path_value(config, "cache-dir")
    # Under pytest's cache dir; with the cacheprovider plugin off (-p no:cacheprovider), the
    # user asked for no cache on disk, so none.
    cache = getattr(config, "cache", None)
    try:
        return Path(cache.mkdir("graphnetz")) if cache is not None else None
    except OSError as exc:  # a read-only checkout, say: run, but without the cache
        config.issue_config_time_warning(pytest.PytestConfigWarning(
            f"graphnetz: cannot create the triple cache under pytest's cache directory "
            f"({exc}); training without the cache this run. Make it writable, or "
            "choose a directory with --graphnetz-cache-dir"), stacklevel=2)
        return None


def _baseline_fields(config: pytest.Config, get: Get) -> dict[str, Any]:
    """Where the baselines live and what a refresh may do: update, force, accept cells, add
    the missing ones, calibrate, replicate, accept other hardware, fail unused cells."""
    replicates = converted(config, "baseline-replicates", get("baseline-replicates", "1"),
                           int, "a whole number of runs per seed")
    if replicates < 1:
        raise pytest.UsageError(
            f"graphnetz: {named(config, 'baseline-replicates')} must be >= 1 (1: one run "
            f"per seed, no salted reruns), got {replicates}")
    return dict(
        baseline_dir=(path_value(config, "baseline-dir") if get("baseline-dir", None)
                      is not None else config.rootpath / "baselines"),
        cli_baseline_dir=config.getoption("graphnetz_baseline_dir"),
        update_baselines=bool(get("update-baselines", False)),
        force=bool(get("force", False)), fail_unused=bool(get("fail-unused", False)),
        accept=_accepted(config), add_missing=bool(get("add-missing", False)),
        calibrate=bool(get("calibrate", False)), baseline_replicates=replicates,
        accept_hardware=bool(get("accept-hardware", False)))


def _written_file(config: pytest.Config, get: Get, name: str) -> Path | None:
    """A file the session writes, named by option ``name`` (its link, if any, not followed);
    None where the option is not given."""
    return path_value(config, name, follow=False) if get(name, None) else None


def _output_fields(config: pytest.Config, get: Get) -> dict[str, Any]:
    """The files the session writes: the summary, the reports, the PR comment, the JSON
    verdicts, and the MLflow export (which keeps the reports it reads)."""
    report_dir = path_value(config, "report-dir") if get("report-dir", None) else None
    mlflow = _mlflow(config, get("mlflow", None))
    if mlflow is not None and report_dir is None:
        # The export's per-seed runs come from the candidate reports: keep them for it.
        import tempfile

        report_dir = Path(tempfile.mkdtemp(prefix="graphnetz-mlflow-"))
    return dict(
        summary=_written_file(config, get, "summary"),
        report_dir=report_dir,
        comment=_written_file(config, get, "comment"),
        json=_written_file(config, get, "json"),
        mlflow=mlflow, mlflow_series=not get("mlflow-no-series", False),
        report_dir_temporary=mlflow is not None and not get("report-dir", None))


def _mlflow(config: pytest.Config, uri: str | None) -> str | None:
    """``--graphnetz-mlflow``'s tracking URI, refused when it is a test path that the optional
    value swallowed (``pytest --graphnetz-mlflow tests/``: argparse reads ``tests/`` as the
    URI)."""
    if uri is None or "://" in str(uri):
        return uri
    path = config.invocation_params.dir / str(uri)
    if "::" in str(uri) or path.is_file() or (path.is_dir() and any(path.glob("*.py"))):
        raise pytest.UsageError(
            f"graphnetz: {named(config, 'mlflow')} took {uri!r}, a test path, as its tracking "
            "URI; write `--graphnetz-mlflow=URI` (or the option alone after the paths)")
    return str(uri).strip()


def _deterministic(config: pytest.Config, given: str | None) -> str:
    """``--graphnetz-deterministic`` checked; unset: ``"on"`` (``determinism.DEFAULT_MODE``, not
    imported for the default: a run of plain tests need not load it; a test pins it)."""
    if given is None:
        return "on"
    from pytest_graphnetz.runner.determinism import check_mode

    return check_mode(given, name=named(config, "deterministic"))


def _executor(config: pytest.Config, spec: str | None) -> str | None:
    """``--graphnetz-executor`` checked now (its module imports, it names a callable), so a
    typo is one usage error at session start; the factory itself is called at the first
    training (:meth:`~.session.GraphnetzSession.executor`)."""
    if spec is None:
        return None
    from pytest_graphnetz.runner.engines import ExecutorFactoryError, load_factory

    try:
        load_factory(str(spec), option=named(config, "executor"))
    except ExecutorFactoryError as exc:
        raise pytest.UsageError(f"graphnetz: {exc}") from None
    return str(spec).strip()


def _remote_cache(config: pytest.Config, url: str | None, cache_dir: Path | None
                  ) -> str | None:
    """``--graphnetz-remote-cache`` checked now (a URL fsspec can open, its package
    installed), so a typo or a missing extra is one usage error at session start."""
    if url is None:
        return None
    from pytest_graphnetz.runner.remote import RemoteCacheError, check_url

    option = named(config, "remote-cache")
    if cache_dir is None:
        raise pytest.UsageError(
            f"graphnetz: {option} needs the local cache to copy its hits into; drop "
            "--graphnetz-no-cache (or -p no:cacheprovider), or name one with "
            "--graphnetz-cache-dir")
    try:
        return check_url(str(url), option=option)
    except RemoteCacheError as exc:
        raise pytest.UsageError(f"graphnetz: {exc}") from None


def _shard(config: pytest.Config, text: str | None, cache_only: bool) -> str | None:
    """``--graphnetz-shard`` checked now (``I/N`` with 1 <= I <= N), as ``"I/N"``."""
    if text is None:
        return None
    from pytest_graphnetz.runner.shard import parse_shard

    try:
        shard = parse_shard(text, option=named(config, "shard"))
    except ValueError as exc:
        raise pytest.UsageError(f"graphnetz: {exc}") from None
    if cache_only:
        raise pytest.UsageError(
            f"graphnetz: {named(config, 'shard')} trains its share and "
            f"{named(config, 'cache-only')} trains nothing: a shard job gives the first, the "
            "gate job after the shards the second")
    return str(shard)


def _accepted(config: pytest.Config) -> frozenset[str]:
    """``--graphnetz-accept`` (repeatable, comma-separated; command line only): TASK/MODEL
    cells."""
    given = config.getoption("graphnetz_accept") or []
    cells = frozenset(c.strip() for text in given for c in str(text).split(",") if c.strip())
    bad = sorted(c for c in cells if c.count("/") < 1 or c.startswith("/") or c.endswith("/"))
    if bad:
        raise pytest.UsageError(
            f"graphnetz: `--graphnetz-accept` takes cells as TASK/MODEL "
            f"(e.g. csbm_homophilous/GAT), got {', '.join(map(repr, bad))}")
    if cells and not config.getoption("graphnetz_update_baselines"):
        raise pytest.UsageError(
            "graphnetz: `--graphnetz-accept` accepts a cell's loss in a refresh: use it with "
            "--graphnetz-update-baselines (or `graphnetz refresh NODEID --accept TASK/MODEL`)")
    return cells


def _first_look(config: pytest.Config, adaptive: tuple[int, int] | None) -> int:
    """The schedule's first look: declared by the project (the ini key ``graphnetz_seeds``: N,
    or MIN of MIN..MAX), so that a rerun with more seeds on the command line walks the same
    looks; else MIN of adaptive seeds on the command line; else 10 (the default seed count,
    ``stats.boundaries.DEFAULT_FIRST_LOOK``; not imported here: stats loads numpy)."""
    declared = config.getini("graphnetz_seeds")
    if declared:
        ini = parse_adaptive(str(declared))
        return ini[0] if ini else len(parse_seeds(str(declared)))
    return adaptive[0] if adaptive else 10


def header_line(settings: Settings, root: Path) -> str:
    """The session header's line of the settings in effect (as pytest-randomly shows its
    seed): ``graphnetz: seeds 0-9 (10), α 0.05, looks 10→20→40→… (look 1 decides at 0.0425),
    δ 0.01 for [0, 1] metrics, device auto, workers 1, cache .pytest_cache/d/graphnetz``."""
    from pytest_graphnetz.report.session_files import shown

    seeds = settings.seeds
    if settings.min_seeds is not None:
        which = f"{settings.min_seeds}..{len(seeds)} adaptive"
    elif seeds == tuple(range(seeds[0], seeds[0] + len(seeds))):
        which = f"{seeds[0]}-{seeds[-1]} ({len(seeds)})" if len(seeds) > 1 else str(seeds[0])
    else:
        which = ",".join(map(str, seeds))
    # 0.01: gates.DEFAULT_MIN_EFFECT (not imported here: gates load scipy; a test pins it).
    effect = ("0.01 for [0, 1] metrics" if settings.min_effect is None
              else "what the seeds resolve (calibration)" if settings.min_effect == RESOLVABLE
              else f"{settings.min_effect:g}")
    cache = "off" if settings.cache_dir is None else shown(settings.cache_dir, root)
    # 0.85: stats.boundaries.DEFAULT_RHO, the share of α the schedule's first look spends (not
    # imported here: stats loads numpy; a test pins it).
    alpha = f"{settings.alpha:g}"
    first = settings.first_look
    alone = " (single run: judged alone at α: not rerun-safe)"
    if settings.update_baselines:
        # the ratchet judges each refresh alone at α, whatever the schedule
        alpha += (alone if not settings.rerun_safe else "")
        alpha += " (refresh: each baseline judged alone at α)"
    elif settings.rerun_safe:
        alpha += (f", looks {first}→{2 * first}→{4 * first}→… (look 1 decides at "
                  f"{0.85 * settings.alpha:.3g})")
    else:
        alpha += alone
    # Command tasks' scripts fork from a warm interpreter unless this says why not (a device
    # that `auto` resolves to CUDA is known only once torch is imported: cold then, unsaid).
    from pytest_graphnetz.script import warm_mode

    device = str(settings.device)
    cold = warm_mode("cpu" if device == "auto" else device)
    where = f"executor {settings.executor}" if settings.executor else \
        f"workers {settings.workers}"
    return (f"graphnetz: seeds {which}, α {alpha}, δ {effect}, device "
            f"{settings.device}, {where}, cache {cache}"
            + (f", remote cache {settings.remote_cache} ("
               f"{'read, write' if settings.remote_cache_write else 'read only'})"
               if settings.remote_cache else "")
            + (", updating baselines" if settings.update_baselines else "")
            + (f", scripts run cold ({cold})" if cold else ""))


def check_outputs(config: pytest.Config, settings: Settings, step_summary: str | None
                   ) -> str | None:
    """The files the session will write, checked before any test runs (a verdict is never
    lost to them at the end): a report dir or summary the user named that cannot be written is
    a usage error; an unwritable ``$GITHUB_STEP_SUMMARY`` is one warning and is skipped (the
    step summary to write is returned: None for none)."""
    # A cache directory the user named (pytest's own is created, or warned about, above); one
    # that exists and can be read is served read-only when it cannot be written (a shared,
    # prefilled team cache: the runner warns once and saves nothing).
    named_cache = settings.cache_dir if getter(config)("cache-dir", None) else None
    if named_cache is not None and named_cache.is_dir() \
            and os.access(named_cache, os.R_OK | os.X_OK):
        named_cache = None
    if not (settings.report_dir or named_cache or settings.summary or settings.comment
            or settings.json or step_summary):
        return None  # nothing to write (and the module that checks need not load)
    from pytest_graphnetz.report.session_files import dir_problem, file_problem

    root = config.rootpath
    for name, path, problem, fix in (
            ("report-dir", settings.report_dir, dir_problem, "name a writable path"),
            ("cache-dir", named_cache, dir_problem,
             "name a writable directory, or train without the cache (--graphnetz-no-cache)"),
            ("summary", settings.summary, file_problem, "name a writable path"),
            ("comment", settings.comment, file_problem, "name a writable path"),
            ("json", settings.json, file_problem, "name a writable path")):
        why = None if path is None else problem(path, root)
        if why is not None:
            raise pytest.UsageError(f"graphnetz: {named(config, name)} cannot be written: "
                                    f"{why}; {fix}")
    why = None if not step_summary else file_problem(Path(step_summary), root)
    if why is not None:
        config.issue_config_time_warning(pytest.PytestConfigWarning(
            f"graphnetz: ${STEP_SUMMARY_ENV} ({step_summary}) cannot be written: {why}; this "
            "run's gate table is not added to the job summary"), stacklevel=2)
        return None
    return step_summary


def check_device(device: str) -> None:
    """A pinned device this machine lacks is one usage error now, not a failure in every test.

    ``auto`` and ``cpu`` always exist, so only a pinned accelerator pays for importing torch.
    """
    if device.strip().lower() in ("auto", "cpu"):
        return
    from pytest_graphnetz.runner import DeviceError, resolve_device

    try:
        resolve_device(device)
    except DeviceError as exc:
        raise pytest.UsageError(f"graphnetz: `--graphnetz-device` / `graphnetz_device`: {exc}")\
            from None


__all__ = ["Settings", "check_device", "check_outputs", "header_line"]
