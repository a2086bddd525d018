"""The pytest plugin: options, ini keys, the ``graphnetz`` marker, fixtures and the gate summary.

Loaded by pytest on every run (``pytest11`` entry point), so at import time this module touches
only pytest and the standard library: the runner, the gates and the statistics (torch, PyG,
scipy) are imported inside the functions that use them. Hooks are a few lines each; the work
lives in :class:`GraphnetzSession`, kept in ``config.stash``.

Under pytest-xdist every worker trains through the same on-disk triple cache (file locks make
one worker wait for another's triple instead of training it twice), and gate results travel to
the controller in the test reports' ``user_properties``, which xdist serialises.
"""

from __future__ import annotations

import json
import os
import shlex
import sys
import time
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest

from .outputs import STEP_SUMMARY_ENV  # standard library only, like this module

if TYPE_CHECKING:
    from .baselines import BaselineHandle
    from .progress import TerminalProgress
    from .report import BenchmarkReport
    from .summary import GateSummary

# Set from benchmarks/gate_quality_results.md: on the 1,600-node block model the paired t-test
# at 10 seeds detects a 0.7-point regression 75% of the time (45% at 5 seeds) with no false
# alarms on innocent changes; its minimum detectable effect is 0.67 points (1.07 at 5 seeds).
DEFAULT_SEEDS = "10"
MARKER = "graphnetz"                    # the marker of gate tests (-m graphnetz)
DEFAULT_ALPHA = 0.05
GATE_PROPERTY = "graphnetz_gate"        # user_properties entry: one gate row (JSON text)
TRIPLES_PROPERTY = "graphnetz_triples"  # user_properties entry: {"trained", "cached", "seconds"}
# With --graphnetz-update-baselines only (what finding unused baselines needs):
USES_PROPERTY = "graphnetz_baseline"          # user_properties entry: a baseline file used
USER_PROPERTY = "graphnetz_baseline_user"     # on every report of a test that asks for one
SEEN_PROPERTY = "graphnetz_seen_modules"      # xdist workeroutput: modules collected, not skipped
REPORT_PROPERTY = "graphnetz_report"    # user_properties entry: a saved candidate report's path
GRAPHNETZ_TEST = "graphnetz_test"      # user_properties entry: this test uses our fixtures/marker
BASELINE_FILE = "graphnetz_baseline_file"  # user_properties entry: a baseline handed to the test
CALIBRATION_PROPERTY = "graphnetz_calibration"  # user_properties entry: calibrated cells (JSON)


@dataclass(frozen=True)
class _Option:
    name: str            # --graphnetz-<name>, ini key graphnetz_<name with _>
    help: str
    flag: bool = False
    metavar: str | None = None
    repeat: bool = False  # may be given more than once (a list)

    @property
    def dest(self) -> str:
        return "graphnetz_" + self.name.replace("-", "_")


_OPTIONS = (
    _Option("seeds",
            f"seeds to run: N (0..N-1), A-B (inclusive), 1,4,7, or adaptive MIN..MAX (each cell "
            f"starts with MIN seeds and takes more, up to MAX, only while undecided) "
            f"(default {DEFAULT_SEEDS})",
            metavar="N|A-B|LIST|MIN..MAX"),
    _Option("device", "device for training: auto, cpu, cuda, cuda:i or mps (default auto)",
            metavar="DEVICE"),
    _Option("workers", "processes training triples in parallel (default 1; at most the CPU "
            "count)", metavar="N"),
    _Option("cache-dir", "per-triple result cache (default: graphnetz/ under pytest's cache dir)",
            metavar="DIR"),
    _Option("no-cache", "train every triple, reading and writing no cache", flag=True),
    _Option("baseline-dir", "where baselines live (default: baselines/ under the rootdir)",
            metavar="DIR"),
    _Option("update-baselines", "gates given a baseline write the candidate there and pass, "
            "unless the ratchet refuses; a full run deletes baselines no test used", flag=True),
    _Option("force", "with --graphnetz-update-baselines: write even what the ratchet refuses, "
            "or over an unreadable baseline; resets the anchors of the cells written", flag=True),
    _Option("alpha", f"significance level of the gates (default {DEFAULT_ALPHA})", metavar="A"),
    _Option("min-effect", "the smallest regression that matters (δ, metric units; default 0.01 "
            "for metrics in [0, 1], none for MAE/RMSE/loss)", metavar="DELTA"),
    _Option("strict", "an INCONCLUSIVE gate fails too", flag=True),
    _Option("summary", "also write the gate table as Markdown to PATH", metavar="PATH"),
    _Option("comment", "write the concise pull-request comment (Markdown: one headline, the "
            "rows that are not IDENTICAL, failing first, under 10,000 characters) to PATH",
            metavar="PATH"),
    _Option("json", "write every gate row with its numbers (Δ, interval, p, n, level, margin, "
            "δ, verdict) as JSON to PATH (docs/verdicts-json.md)", metavar="PATH"),
    _Option("fail-unused", "fail the run when a baseline holds cells no gate used (after a "
            "run of the whole test; never after a partial run)", flag=True),
    _Option("accept", "with --graphnetz-update-baselines: accept this cell's loss (TASK/MODEL, "
            "repeatable or comma-separated): the ratchet lets it through and resets its anchor; "
            "every other cell keeps its anchor", metavar="TASK/MODEL", repeat=True),
    _Option("report-dir", "save each gated test's candidate report (full JSON, histories "
            "included) under DIR, e.g. for CI artifacts", metavar="DIR"),
    _Option("deterministic", "deterministic CUDA algorithms per triple: on, warn (let an "
            "operation without one run, with a warning) or off (default on)",
            metavar="on|warn|off"),
    _Option("calibrate", "also train each graphnetz_run's models under salted seeds (same "
            "data and splits) and write, beside each baseline, what δ its seeds resolve "
            "(<test>.calibration.json; see docs/calibrate.md)", flag=True),
)


# -- settings ----------------------------------------------------------------------------------


def parse_adaptive(text: str) -> tuple[int, int] | None:
    """``"5..20"`` → ``(5, 20)`` (adaptive seeds: MIN..MAX, seeds 0..MAX-1); None for a fixed
    seed spec."""
    text = str(text).strip()
    if ".." not in text:
        return None
    low, _, high = text.partition("..")
    try:
        bounds = (int(low), int(high))
    except ValueError:
        bounds = (0, 0)
    if not 2 <= bounds[0] < bounds[1]:
        raise ValueError(
            f"`--graphnetz-seeds` / `graphnetz_seeds`: adaptive seeds are MIN..MAX with "
            f"2 <= MIN < MAX (e.g. 5..20), got {text!r}")
    return bounds


# More seeds than this is a typo, not a benchmark (each seed trains every task × model), and
# `range(4294967296)` would exhaust memory before anything could say so.
MAX_SEEDS = 10_000
SEED_LIMIT = 2**32  # numpy's seed range: seeds are 0 <= seed < 2**32


def parse_seeds(text: str) -> tuple[int, ...]:
    """``"10"`` → 0..9; ``"3-7"`` → 3..7 (inclusive); ``"1,4,7"`` → those seeds, in that order;
    ``"5..20"`` (adaptive) → 0..19, every seed the schedule may use.

    At most :data:`MAX_SEEDS` seeds, each in ``[0, 2**32)``: checked before a range is built.
    """
    text = str(text).strip()
    adaptive = parse_adaptive(text)
    if adaptive is not None:
        text = str(adaptive[1])  # every seed the schedule may use: 0..MAX-1
    listed: list[int] | None = None
    try:
        if "," in text:
            listed = [int(part) for part in text.split(",") if part.strip()]
            count, high = len(listed), max(listed, default=-1)
        elif "-" in text.lstrip("-"):
            low, high = (int(part) for part in text.split("-", 1))
            count = high - low + 1
        else:
            low, high = 0, int(text) - 1
            count = high + 1
    except ValueError:
        listed, count, high = [], 0, -1
    if count > MAX_SEEDS:
        raise ValueError(f"`--graphnetz-seeds` / `graphnetz_seeds`: {text!r} asks for {count} "
                         f"seeds; at most {MAX_SEEDS} are allowed")
    if high >= SEED_LIMIT:
        raise ValueError(f"`--graphnetz-seeds` / `graphnetz_seeds`: {text!r} has seed {high}; "
                         f"seeds must be below 2**32 = {SEED_LIMIT} (numpy's seed range)")
    seeds = tuple(listed if listed is not None else range(low, high + 1))
    if not seeds or len(set(seeds)) != len(seeds) or min(seeds) < 0:
        raise ValueError(
            f"`--graphnetz-seeds` / `graphnetz_seeds`: expected N (seeds 0..N-1), A-B or a list "
            f"like 1,4,7 of distinct non-negative seeds, got {text!r}"
        )
    return seeds


@dataclass(frozen=True)
class Settings:
    """The session's graphnetz settings: each option from the command line, else the ini file."""

    seeds: tuple[int, ...]
    min_seeds: int | None      # adaptive seeds (MIN..MAX): MIN; None for fixed seeds
    device: str
    workers: int
    cache_dir: Path | None     # None: no cache (--graphnetz-no-cache)
    baseline_dir: Path
    update_baselines: bool
    force: bool
    alpha: float
    strict: bool
    summary: Path | None
    report_dir: Path | None
    cli_baseline_dir: str | None  # as typed on the command line, for the commands we print
    deterministic: str         # on | warn | off (determinism.py)
    min_effect: float | None = None  # None: each metric's default (gates.default_min_effect)
    comment: Path | None = None      # the pull-request comment (Markdown)
    json: Path | None = None         # the JSON verdict file
    fail_unused: bool = False        # baseline cells no gate used fail the run
    accept: frozenset[str] = frozenset()  # TASK/MODEL cells whose loss a refresh accepts
    calibrate: bool = False    # --graphnetz-calibrate (calibration.py)

    @classmethod
    def from_config(cls, config: pytest.Config) -> Settings:
        """Read and validate every option; a bad value is a usage error naming the option."""
        from .determinism import DEFAULT_MODE, check_mode  # stdlib only at import

        get = _getter(config)
        workers = _convert(config, "workers", get("workers", "1"), int,
                           "a whole number of processes")
        alpha = _convert(config, "alpha", get("alpha", str(DEFAULT_ALPHA)), float, "a number")
        min_effect = get("min-effect", None)
        if min_effect is not None:
            min_effect = _convert(config, "min-effect", min_effect, float, "a number")
        try:
            deterministic = check_mode(get("deterministic", DEFAULT_MODE),
                                       name=named(config, "deterministic"))
            seeds = parse_seeds(get("seeds", DEFAULT_SEEDS))
            adaptive = parse_adaptive(get("seeds", DEFAULT_SEEDS))
        except ValueError as exc:
            raise pytest.UsageError(f"graphnetz: {exc}") from None
        if min_effect is not None and not 0.0 < min_effect < float("inf"):
            raise pytest.UsageError(
                f"graphnetz: {named(config, 'min-effect')} must be a number > 0 (the smallest "
                f"regression that matters, in metric units), got {min_effect}")
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
        if not 0.0 < alpha < 0.5:
            raise pytest.UsageError(
                f"graphnetz: {named(config, 'alpha')} must lie in (0, 0.5), got {alpha}")
        if get("no-cache", False):
            cache_dir = None
        elif get("cache-dir", None) is not None:
            cache_dir = _path(config, "cache-dir")
        else:
            # Under pytest's cache dir; with the cacheprovider plugin off (-p no:cacheprovider),
            # the user asked for no cache on disk, so none.
            cache = getattr(config, "cache", None)
            try:
                cache_dir = Path(cache.mkdir("graphnetz")) if cache is not None else None
            except OSError as exc:  # a read-only checkout, say: run, but without the cache
                config.issue_config_time_warning(pytest.PytestConfigWarning(
                    f"graphnetz: cannot create the triple cache under pytest's cache directory "
                    f"({exc}); training without the cache this run. Make it writable, or "
                    "choose a directory with --graphnetz-cache-dir"), stacklevel=2)
                cache_dir = None
        baseline_dir = (_path(config, "baseline-dir") if get("baseline-dir", None) is not None
                        else config.rootpath / "baselines")
        report_dir = _path(config, "report-dir") if get("report-dir", None) else None
        return cls(
            seeds=seeds, min_seeds=adaptive[0] if adaptive else None,
            device=str(get("device", "auto")), workers=workers, cache_dir=cache_dir,
            baseline_dir=baseline_dir, update_baselines=bool(get("update-baselines", False)),
            force=bool(get("force", False)), alpha=alpha, strict=bool(get("strict", False)),
            summary=_path(config, "summary") if get("summary", None) else None,
            report_dir=report_dir,
            cli_baseline_dir=config.getoption("graphnetz_baseline_dir"),
            deterministic=deterministic, min_effect=min_effect,
            comment=_path(config, "comment") if get("comment", None) else None,
            json=_path(config, "json") if get("json", None) else None,
            fail_unused=bool(get("fail-unused", False)), accept=_accepted(config),
            calibrate=bool(get("calibrate", False)),
        )


def _accepted(config: pytest.Config) -> frozenset[str]:
    """``--graphnetz-accept`` (repeatable, comma-separated; also the ini key): TASK/MODEL cells."""
    given = config.getoption("graphnetz_accept") or [config.getini("graphnetz_accept") or ""]
    cells = frozenset(c.strip() for text in given for c in str(text).split(",") if c.strip())
    bad = sorted(c for c in cells if c.count("/") < 1 or c.startswith("/") or c.endswith("/"))
    if bad:
        raise pytest.UsageError(
            f"graphnetz: `--graphnetz-accept` / `graphnetz_accept` takes cells as TASK/MODEL "
            f"(e.g. csbm_homophilous/GAT), got {', '.join(map(repr, bad))}")
    if cells and not bool(config.getoption("graphnetz_update_baselines")
                          or config.getini("graphnetz_update_baselines")):
        raise pytest.UsageError(
            "graphnetz: `--graphnetz-accept` accepts a cell's loss in a refresh: use it with "
            "--graphnetz-update-baselines (or `graphnetz refresh NODEID --accept TASK/MODEL`)")
    return cells


def named(config: pytest.Config, name: str) -> str:
    """How a message names option ``name``: where its value came from, the command line
    (``--graphnetz-workers``) or the ini file (``the ini key `graphnetz_workers` in
    tox.ini``), so the user is sent to the place to fix."""
    option = _option(name)
    if config.getoption(option.dest) is not None:
        return f"`--graphnetz-{name}`"
    where = f" in {config.inipath.name}" if config.inipath else ""
    return f"the ini key `{option.dest}`{where}"


def header_line(settings: Settings, root: Path) -> str:
    """The session header's line of the settings in effect (as pytest-randomly shows its
    seed): ``graphnetz: seeds 0-9 (10), α 0.05, δ 0.01 for [0, 1] metrics, device auto,
    workers 1, cache .pytest_cache/d/graphnetz``."""
    from .outputs import shown

    seeds = settings.seeds
    if settings.min_seeds is not None:
        which = f"{settings.min_seeds}..{len(seeds)} adaptive"
    elif seeds == tuple(range(seeds[0], seeds[0] + len(seeds))):
        which = f"{seeds[0]}-{seeds[-1]} ({len(seeds)})" if len(seeds) > 1 else str(seeds[0])
    else:
        which = ",".join(map(str, seeds))
    # 0.01: gates.DEFAULT_MIN_EFFECT (not imported here: gates load scipy; a test pins it).
    effect = (f"{settings.min_effect:g}" if settings.min_effect is not None
              else "0.01 for [0, 1] metrics")
    cache = "off" if settings.cache_dir is None else shown(settings.cache_dir, root)
    return (f"graphnetz: seeds {which}, α {settings.alpha:g}, δ {effect}, device "
            f"{settings.device}, workers {settings.workers}, cache {cache}"
            + (", updating baselines" if settings.update_baselines else ""))


def _convert(config: pytest.Config, name: str, text: Any, convert: Callable[[str], Any],
             expected: str) -> Any:
    try:
        return convert(str(text).strip())
    except ValueError:
        raise pytest.UsageError(
            f"graphnetz: {named(config, name)} must be {expected}, got {text!r}") from None


def _getter(config: pytest.Config) -> Callable[[str, Any], Any]:
    """``get(name, default)``: the command-line value, else the ini value, else ``default``."""
    def get(name: str, default: Any) -> Any:
        option = _option(name)
        value = config.getoption(option.dest)
        if value is None:
            try:
                value = config.getini(option.dest)
            except (ValueError, pytest.UsageError) as exc:  # a flag's value: not a truth value
                raise pytest.UsageError(
                    f"graphnetz: the ini key `{option.dest}` must be true or false (also "
                    f"1/0, yes/no, on/off): {exc}") from None
        return default if value in (None, "", False) else value
    return get


def _option(name: str) -> _Option:
    return next(o for o in _OPTIONS if o.name == name)


def _path(config: pytest.Config, name: str) -> Path:
    """A path option: relative to the invocation directory (command line) or the ini file."""
    dest = _option(name).dest
    value = config.getoption(dest)
    if value is not None:
        return (config.invocation_params.dir / value).resolve()
    base = config.inipath.parent if config.inipath else config.rootpath
    return (base / config.getini(dest)).resolve()


# -- the session object: where the hooks' work lives ---------------------------------------------


class GraphnetzSession:
    """Runs benchmarks for fixtures, hands baselines out, and gathers every gate's row."""

    def __init__(self, config: pytest.Config, settings: Settings) -> None:
        self.config = config
        self.settings = settings
        self.rows: list[dict[str, str]] = []
        self.failures: dict[str, str] = {}   # nodeid -> what failed it (the crash message)
        self.reports: list[str] = []         # candidate reports saved (--graphnetz-report-dir)
        self.trained = 0
        self.cached = 0
        self.saved = 0  # adaptive seeds: seed-trainings not needed against fixed MAX
        # (nodeid, module stem, default name) of each collected test that asks for a baseline
        # (on the xdist controller: gathered from the workers).
        self.baseline_users: list[tuple[str, str, str]] = []
        self.used_baselines: set[str] = set()
        self.unfinished: set[str] = set()   # baseline users that failed or were skipped
        self.unused_lines: list[str] = []
        self.graphnetz_tests: set[str] = set()  # tests that use our fixtures, marker or gates
        # baseline file -> the tests handed it, and the cells their gates compared
        self.baseline_tests: dict[str, set[str]] = {}
        self.gated_cells: dict[str, set[str]] = {}   # nodeid -> "task/model" cells gated
        self.passed: set[str] = set()
        self.ran: set[str] = set()       # tests with a report (selected, not deselected)
        self.unused_cells: list[tuple[str, str]] = []
        # nodeid -> saved report path -> the gate calls that judged it (--graphnetz-report-dir)
        self.gate_calls: dict[str, dict[str, list[dict[str, Any]]]] = {}
        # Test modules collected and not skipped: a refresh prunes only their baselines.
        self.seen_modules: list[str] = []
        # Checked at session start (pytest_configure): None when unset or unwritable.
        self.step_summary: str | None = os.environ.get(STEP_SUMMARY_ENV) or None
        self.calibration_rows: list[dict[str, str]] = []
        if self.is_xdist_worker:  # sent to the controller when the worker finishes
            config.workeroutput[USER_PROPERTY] = self.baseline_users  # type: ignore[attr-defined]
            config.workeroutput[SEEN_PROPERTY] = self.seen_modules  # type: ignore[attr-defined]

    @property
    def is_xdist_worker(self) -> bool:
        return hasattr(self.config, "workerinput")

    @property
    def is_xdist_controller(self) -> bool:
        return self.config.pluginmanager.has_plugin("dsession")

    # fixtures

    def run(self, item: pytest.Item, tasks: Any, models: Any, **kwargs: Any) -> BenchmarkReport:
        """``run_benchmark`` with the session's seeds, device, workers, cache; ``kwargs`` win.
        With adaptive seeds (and no ``seeds`` given), the first look of the schedule, as a
        report the gates extend through this same method."""
        __tracebackhide__ = True
        from .runner import run_benchmark

        s = self.settings
        if s.min_seeds is not None and "seeds" not in kwargs:
            from .adaptive import run_adaptive

            def runner(tasks: Any, models: Any, **more: Any) -> BenchmarkReport:
                return self.run(item, tasks, models, **{**kwargs, **more})

            return run_adaptive(tasks, models, seeds=s.seeds, min_seeds=s.min_seeds,
                                runner=runner)
        kwargs.setdefault("seeds", s.seeds)
        kwargs.setdefault("device", s.device)
        kwargs.setdefault("workers", s.workers)
        kwargs.setdefault("cache_dir", s.cache_dir)
        kwargs.setdefault("deterministic", s.deterministic)
        counts: dict[str, float] = {"trained": 0, "cached": 0}
        user_progress = kwargs.pop("progress", None)
        with self._uncaptured():  # its first line (0/N) is written at once
            live = self._live_progress(tasks, models, kwargs["seeds"])

        def progress(task: str, model: str, seed: int, status: str, seconds: float) -> None:
            counts[status] = counts.get(status, 0) + 1
            if live is not None:
                with self._uncaptured():
                    live.update(task, model, seed, status)
            if user_progress is not None:
                user_progress(task, model, seed, status, seconds)

        user_started = kwargs.pop("started", None)

        def started(task: str, model: str, seed: int) -> None:
            if live is not None:
                with self._uncaptured():
                    live.start(task, model, seed)
            if user_started is not None:
                user_started(task, model, seed)

        start = time.monotonic()
        try:
            return run_benchmark(tasks, models, progress=progress, started=started, **kwargs)
        finally:
            if live is not None:
                with self._uncaptured():
                    live.finish()
            counts["seconds"] = round(time.monotonic() - start, 3)
            item.user_properties.append((TRIPLES_PROPERTY, json.dumps(counts, sort_keys=True)))

    def _live_progress(self, tasks: Any, models: Any, seeds: Any) -> TerminalProgress | None:
        """The live progress display of one run; None under ``-q``, on an xdist worker (whose
        output nobody sees: the controller prints per-test counts) or without a terminal."""
        from .progress import RunProgress, TerminalProgress

        reporter = self.config.pluginmanager.get_plugin("terminalreporter")
        if reporter is None or self.is_xdist_worker or self.config.get_verbosity() < 0:
            return None

        def rewrite(line: str) -> None:
            reporter.ensure_newline()
            reporter.rewrite(line, erase=True)

        return TerminalProgress(
            RunProgress(_count_triples(tasks, models, seeds)), write=reporter.write_line,
            rewrite=rewrite, end=lambda: reporter.line(""), tty=bool(reporter.isatty),
            every_triple=self.config.get_verbosity() > 0)

    def baseline(self, item: pytest.Item, name: str | None = None) -> BaselineHandle:
        """The baseline handle of ``item``: ``<baseline dir>/<module>/<name or test>.json``
        (``<Class>.<test>`` for a test in a class)."""
        from .baselines import BaselineError, BaselineHandle, default_path

        s = self.settings
        path = default_path(s.baseline_dir, Path(str(item.path)).stem,
                            _test_name(item) if name is None else name)
        if name is None:
            others = self._sharing(item.nodeid)
            if others:
                raise BaselineError(
                    f"tests {item.nodeid} and {', '.join(others)} would share the baseline file "
                    f"{self.shown(path)} (a file name keeps only the module's name, and some "
                    "file systems ignore case), so one would be compared with the other's "
                    "numbers. Give each its own baseline: graphnetz_baseline(\"<unique name>\")"
                )
        if s.update_baselines:
            item.user_properties.append((USES_PROPERTY, str(path)))
        item.user_properties.append((BASELINE_FILE, str(path)))
        if s.calibrate:
            item.stash.setdefault(CALIBRATION_KEY, Calibrating()).baselines.append(path)
        command = ["pytest", item.nodeid, "--graphnetz-update-baselines"]
        if s.cli_baseline_dir is not None:
            command.append(f"--graphnetz-baseline-dir={s.cli_baseline_dir}")
        return BaselineHandle(path, update=s.update_baselines, force=s.force,
                              update_command=shlex.join(command), accept=s.accept,
                              root=self.config.rootpath)

    def _sharing(self, nodeid: str) -> list[str]:
        """Other collected tests whose default baseline is the same file as ``nodeid``'s."""
        from .baselines import default_path

        keys = {n: str(default_path(self.settings.baseline_dir, stem, name)).casefold()
                for n, stem, name in self.baseline_users}
        mine = keys.get(nodeid)
        return [n for n, key in keys.items() if key == mine and n != nodeid]

    # baselines no test used (--graphnetz-update-baselines)

    @pytest.hookimpl(wrapper=True)
    def pytest_pycollect_makeitem(self, collector: Any, name: str, obj: Any) -> Any:
        """Note every test that asks for ``graphnetz_baseline`` as its module is collected:
        a module makes all its tests, also those that ``-k``, ``-m`` or a node id then leave
        out (their baselines are not unused). A hook: the session is registered as a plugin."""
        made = yield
        for item in made if isinstance(made, list) else [made]:
            if isinstance(item, pytest.Item) and \
                    "graphnetz_baseline" in getattr(item, "fixturenames", ()):
                self.baseline_users.append(
                    (item.nodeid, Path(str(item.path)).stem, _test_name(item)))
                if self.settings.update_baselines:
                    item.user_properties.append((USER_PROPERTY, item.nodeid))
        return made

    @pytest.hookimpl(wrapper=True)
    def pytest_make_collect_report(self, collector: pytest.Collector) -> Any:
        """Note each test module collected without a skip (a module-level ``pytest.skip``, an
        ``importorskip`` or an import error leave it out): a refresh deletes baselines only in
        the directories of modules it saw."""
        report = yield
        if isinstance(collector, pytest.Module) and report.passed:
            stem = Path(str(collector.path)).stem
            if stem not in self.seen_modules:
                self.seen_modules.append(stem)
        return report

    @pytest.hookimpl(optionalhook=True)
    def pytest_testnodedown(self, node: Any, error: Any) -> None:
        """xdist controller: every worker collected the same tests; take one worker's list."""
        output = getattr(node, "workeroutput", {})
        users = output.get(USER_PROPERTY)
        if users and not self.baseline_users:
            self.baseline_users = [tuple(u) for u in users]
        for stem in output.get(SEEN_PROPERTY) or ():
            if stem not in self.seen_modules:
                self.seen_modules.append(stem)

    def partial_reasons(self, exitstatus: int) -> list[str]:
        """Why this run cannot tell which baselines are unused (empty: a full, passing run)."""
        config, option = self.config, self.config.option
        reasons = [flag for flag, used in (
            ("-k", getattr(option, "keyword", "")), ("-m", getattr(option, "markexpr", "")),
            ("--deselect", getattr(option, "deselect", None)),
            ("--lf", getattr(option, "lf", False)), ("--sw", getattr(option, "stepwise", False)),
            ("paths or node ids", config.args_source == pytest.Config.ArgsSource.ARGS),
        ) if used]
        if exitstatus != 0:
            reasons.append("the run did not pass")
        elif self.unfinished:
            reasons.append(f"tests that use baselines were skipped: "
                           f"{', '.join(sorted(self.unfinished))}")
        return reasons

    def find_unused(self, exitstatus: int) -> None:
        """After a refresh: delete the baselines no test used, or (a partial run) list them."""
        if not self.settings.update_baselines or self.is_xdist_worker:
            return
        from .ratchet import prune_unused

        reasons = self.partial_reasons(exitstatus)
        self.unused_lines = prune_unused(
            self.settings.baseline_dir, used=self.used_baselines, users=self.baseline_users,
            delete=not reasons, why_kept=", ".join(reasons), seen_modules=self.seen_modules,
            show=self.shown)

    @pytest.hookimpl(tryfirst=True)
    def pytest_runtest_setup(self, item: pytest.Item) -> None:
        """Mark a test that uses our fixtures or marker (a hook: the session is a plugin): if
        it fails before any gate, the summary still gives it a row."""
        if {"graphnetz_run", "graphnetz_baseline"} & set(getattr(item, "fixturenames", ())) \
                or item.get_closest_marker(MARKER) is not None:
            item.user_properties.append((GRAPHNETZ_TEST, "1"))

    def find_unused_cells(self, exitstatus: int) -> None:
        """Baseline cells no gate used: for each baseline file handed to tests, its cells that
        none of those tests gated. Only when the run selected whole modules (no -k, -m, node
        ids, --lf, ...; ``-m`` only when it left out no test that asks for a baseline) and every
        test handed the file passed: a test that stopped at a failing gate, or that did not
        run, would make its later cells look unused."""
        if self.is_xdist_worker or self.settings.update_baselines:
            return
        if [r for r in self.partial_reasons(0) if r not in ("paths or node ids", "-m")] or any(
                "::" in str(a) for a in self.config.args):
            return
        if any(nodeid not in self.ran for nodeid, _, _ in self.baseline_users):
            return
        if not self.baseline_tests:
            return  # no baseline handed out: nothing to read (and numpy not to pay for)
        from .baselines import BaselineError, read_baseline

        unused = []
        for path, tests in sorted(self.baseline_tests.items()):
            if not tests <= self.passed or not Path(path).is_file():
                continue
            gated = set().union(*(self.gated_cells.get(t, set()) for t in tests))
            try:
                stored = read_baseline(Path(path)).report
            except BaselineError:
                continue   # the gates said so already
            shown = self.shown(Path(path).resolve())
            unused += [(shown, f"{t}/{m}") for t in stored.tasks for m in stored.models
                       if f"{t}/{m}" not in gated]
        self.unused_cells = unused

    def observer(self, item: pytest.Item) -> Any:
        """What the gates called inside ``item`` report to (session alpha/strict, the rows)."""
        from .gates import GateObserver

        saved: list[Any] = []   # the reports this test's gates saw, each written once
        # --graphnetz-report-dir: the paths of the report the gate now running judges, and per
        # path the settings of the gates that judged it (gate_calls, written after the test).
        current: list[str] = []
        calls = self.gate_calls.setdefault(item.nodeid, {})

        def record(row: dict[str, Any]) -> None:
            item.user_properties.append((GATE_PROPERTY, json.dumps({"test": item.nodeid, **row})))

        def verdict(row: dict[str, str], v: Any) -> dict[str, Any]:
            """A verdict's row with its numbers; its gate's settings noted for the reports."""
            from .summary import gate_call, verdict_stats

            call = gate_call(v, strict=self.settings.strict)
            if call is not None and not self.settings.update_baselines:
                for path in current:
                    _add_cell(calls.setdefault(path, []), call, v.cell)
            return {**row, "stats": verdict_stats(v)}

        def candidate(report: BenchmarkReport,
                      further: Sequence[BenchmarkReport] = ()) -> list[str]:
            if not further and any(r is report for r in saved):
                k = next(i for i, r in enumerate(saved) if r is report)
                current[:] = [str(self._report_path(item, k + 1))]
                return []
            saved.append(report)
            try:
                return _save(report, further)
            except OSError as exc:
                # Checked writable at session start; a disk that fills up since must not
                # replace the gate's verdicts with an OSError.
                import warnings

                warnings.warn(f"graphnetz: the candidate report of {item.nodeid} was not saved "
                              f"under {self.shown(self.settings.report_dir)}: "
                              f"{type(exc).__name__}: {exc.strerror or exc}", stacklevel=2)
                return []

        def _save(report: BenchmarkReport, further: Sequence[BenchmarkReport]) -> list[str]:
            paths = [report.to_json(self._report_path(item, len(saved)))]
            for part in further:  # an adaptive gate's cells that took more seeds
                label = f"{len(part.seeds)}-seeds"
                if len(report.tasks) > 1:
                    label = f"{part.tasks[0]}.{label}"
                path = self._report_path(item, len(saved), label)
                # Two cells of a task can hold as many seeds but different ones (a baseline
                # seed diverged): keep their files apart.
                k = 1
                while path in paths:
                    k += 1
                    path = self._report_path(item, len(saved), f"{label}-{k}")
                paths.append(part.to_json(path))
            item.user_properties += [(REPORT_PROPERTY, str(p)) for p in paths]
            current[:] = [str(p) for p in paths]
            return [str(p) for p in paths]

        def uses(path: str) -> None:
            item.user_properties.append((USES_PROPERTY, path))

        return GateObserver(alpha=self.settings.alpha, strict=self.settings.strict, record=record,
                            min_effect=self.settings.min_effect,
                            uses=uses if self.settings.update_baselines else None,
                            candidate=candidate if self.settings.report_dir else None,
                            verdict=verdict)

    def record_gate_settings(self, item: pytest.Item) -> None:
        """After a test: write into each candidate report it saved the settings of the gates
        that judged it (gate, test, margin, δ, α, strict, the cells of the call: its Holm
        family), so ``graphnetz compare BASE CAND`` reproduces the verdicts without flags."""
        calls = self.gate_calls.pop(item.nodeid, {})
        if not calls:
            return
        from .report import BenchmarkReport

        for path, gates in calls.items():
            try:
                report = BenchmarkReport.from_json(path)
                report.protocol["gates"] = gates
                report.to_json(path)
            except (OSError, ValueError) as exc:   # the verdicts stand; the file lacks them
                import warnings

                warnings.warn(f"graphnetz: could not record the gate settings in {path}: {exc}",
                              stacklevel=2)

    def _report_path(self, item: pytest.Item, k: int, label: str | None = None) -> Path:
        """``<report dir>/<module>/<test>.json`` (laid out as the baselines are, so a CI job can
        run ``graphnetz compare`` on the pair); a test's k-th distinct report adds ``-k``, and
        the part of it an adaptive gate trained further adds ``.<label>`` (``.10-seeds``)."""
        from .baselines import default_path

        assert self.settings.report_dir is not None
        name = _test_name(item) + (f"-{k}" if k > 1 else "") + (f".{label}" if label else "")
        return default_path(self.settings.report_dir, Path(str(item.path)).stem, name)

    # collection (reports come from this process or, on the xdist controller, from workers)

    def pytest_runtest_logreport(self, report: pytest.TestReport) -> None:
        """Gather gate rows, failures and triple counts (registered as a plugin: a hook)."""
        if report.failed and report.nodeid not in self.failures:
            self.failures[report.nodeid] = _crash_message(report)
        self.ran.add(report.nodeid)
        if report.when == "call" and report.passed:
            self.passed.add(report.nodeid)
        for name, value in report.user_properties:
            if name == USER_PROPERTY and (report.failed or report.skipped):
                self.unfinished.add(value)
        # user_properties accumulate over setup/call/teardown; the teardown report has them all.
        if report.when != "teardown":
            return
        runs = []
        for name, value in report.user_properties:
            if name == USES_PROPERTY:
                self.used_baselines.add(value)
            elif name == GRAPHNETZ_TEST:
                self.graphnetz_tests.add(report.nodeid)
            elif name == BASELINE_FILE:
                self.baseline_tests.setdefault(value, set()).add(report.nodeid)
            elif name == GATE_PROPERTY:
                self.rows.append(json.loads(value))
                self.saved += int(self.rows[-1].get("saved", 0))
                self.graphnetz_tests.add(report.nodeid)
                self.gated_cells.setdefault(report.nodeid, set()).add(self.rows[-1].get("cell"))
            elif name == REPORT_PROPERTY:
                self.reports.append(value)
            elif name == CALIBRATION_PROPERTY:
                self.calibration_rows += json.loads(value)
            elif name == TRIPLES_PROPERTY:
                runs.append(json.loads(value))
                self.trained += runs[-1].get("trained", 0)
                self.cached += runs[-1].get("cached", 0)
        if runs and self.is_xdist_controller and self.config.get_verbosity() >= 0:
            # Workers' output is not shown: their live progress becomes one line per test.
            self._write_line(_test_counts(report.nodeid, runs))

    # the summary

    def summary(self, exitstatus: int | None = None) -> GateSummary:
        """The session's rows as a :class:`~pytest_graphnetz.summary.GateSummary` value."""
        from .summary import GateSummary

        return GateSummary(rows=self.rows, failures=self.failures,
                           graphnetz_tests=sorted(self.graphnetz_tests), exitstatus=exitstatus,
                           trained=self.trained, cached=self.cached, saved=self.saved,
                           unused=self.unused_cells)

    def write_outputs(self, summary: GateSummary) -> list[str]:
        """Write the Markdown summary (``--graphnetz-summary`` and ``$GITHUB_STEP_SUMMARY``),
        the pull-request comment (``--graphnetz-comment``) and the JSON verdict file
        (``--graphnetz-json``); a line for each. A file that cannot be written is a line too:
        it must not turn the verdicts into a traceback or change the exit status."""
        if not (summary.rows or self.trained or self.cached):
            return []
        # Imported only now: report imports numpy (~0.3 s), which a session without gates or
        # triples must not pay for.
        from .outputs import write_summaries
        from .report import write_text_atomic

        s, lines = self.settings, []
        text = summary.markdown()
        for path, option, content in (
                (s.comment, "comment", lambda: summary.comment()),
                (s.json, "json", lambda: json.dumps(summary.to_json(), indent=1) + "\n")):
            if not path:
                continue
            try:
                write_text_atomic(path, content())
            except OSError as exc:
                lines.append(f"graphnetz: the {option} file was not written to {self.shown(path)} "
                             f"({type(exc).__name__}: {exc.strerror or exc})")
            else:
                lines.append(f"graphnetz: {option} written to {self.shown(path)}")
        written, failed = write_summaries(text, s.summary, self.step_summary, show=self.shown)
        lines += [f"graphnetz: Markdown summary written to {self.shown(path)}" for path in written]
        return lines + failed

    def shown(self, path: str | os.PathLike | None) -> str:
        """``path`` as messages print it: relative to the rootdir when inside it."""
        from .outputs import shown

        return shown(path, self.config.rootpath) if path is not None else ""

    def _write_line(self, line: str) -> None:
        reporter = self.config.pluginmanager.get_plugin("terminalreporter")
        if reporter is not None:
            with self._uncaptured():
                reporter.write_line(line)

    @contextmanager
    def _uncaptured(self) -> Iterator[None]:
        """Inside a test, output is captured; progress is for the person watching."""
        capture = self.config.pluginmanager.get_plugin("capturemanager")
        if capture is None:
            yield
            return
        with capture.global_and_fixture_disabled():
            yield


def _test_counts(nodeid: str, runs: list[dict[str, float]]) -> str:
    """``graphnetz: test_m.py::test_a: 30 triples (27 trained, 3 from cache) in 0:41``."""
    from .progress import duration

    trained = sum(int(r.get("trained", 0)) for r in runs)
    cached = sum(int(r.get("cached", 0)) for r in runs)
    seconds = sum(float(r.get("seconds", 0.0)) for r in runs)
    return (f"graphnetz: {_short_test(nodeid)}: {trained + cached} triples ({trained} trained, "
            f"{cached} from cache) in {duration(seconds)}")


def _count_triples(tasks: Any, models: Any, seeds: Any) -> int | None:
    """How many (task, model, seed) triples ``run_benchmark`` will run (None: it will refuse
    the arguments itself, with its own message)."""
    from .tasks import resolve_tasks

    try:
        return len(resolve_tasks(tasks)) * len(models) * len(seeds)
    except (KeyError, TypeError, ValueError):
        return None


def _test_name(item: pytest.Item) -> str:
    # Two classes of one module may both have a `test_x`: keep their files apart.
    cls = getattr(item, "cls", None)
    return f"{cls.__name__}.{item.name}" if cls is not None else item.name


def _crash_message(report: pytest.TestReport) -> str:
    """What failed the test: the exception's message (the gate's verdict text), else the
    whole failure text."""
    crash = getattr(report.longrepr, "reprcrash", None)
    message = getattr(crash, "message", None)
    return str(message) if message else report.longreprtext


def _short_test(nodeid: str) -> str:
    from .summary import short_test  # stdlib only

    return short_test(nodeid)


def _add_cell(calls: list[dict[str, Any]], call: dict[str, Any], cell: str) -> None:
    """Add ``cell`` to the call with ``call``'s settings (a new call when none has them)."""
    for known in calls:
        if all(known.get(k) == v for k, v in call.items()):
            if cell not in known["cells"]:
                known["cells"].append(cell)
            return
    calls.append({**call, "cells": [cell]})


# -- hooks ---------------------------------------------------------------------------------------

STASH_KEY = pytest.StashKey[GraphnetzSession]()


def pytest_addoption(parser: pytest.Parser) -> None:
    group = parser.getgroup("graphnetz", "graphnetz: statistically aware GNN regression gates")
    for option in _OPTIONS:
        flag = f"--graphnetz-{option.name}"
        if option.flag:
            group.addoption(flag, action="store_true", default=None, dest=option.dest,
                            help=option.help)
            parser.addini(option.dest, option.help, type="bool", default=False)
        else:
            group.addoption(flag, default=None, dest=option.dest, metavar=option.metavar,
                            help=option.help, action="append" if option.repeat else "store")
            parser.addini(option.dest, option.help, default=None)


def pytest_report_header(config: pytest.Config) -> str:
    return header_line(config.stash[STASH_KEY].settings, config.rootpath)


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line(
        "markers", f"{MARKER}: a multi-seed GNN benchmark gate (select with -m {MARKER})"
    )
    # PyG calls torch.jit.script while importing, which torch >= 2.10 deprecates: noise in every
    # session that imports PyG (a user's model module does, before our runner can silence it),
    # and a failure under -W error. The warning is raised inside torch, whoever called.
    config.addinivalue_line(
        "filterwarnings", r"ignore:`torch\.jit\.script` is deprecated:DeprecationWarning")
    settings = Settings.from_config(config)
    _check_device(settings.device)
    session = GraphnetzSession(config, settings)
    if not session.is_xdist_worker:  # the controller checks for everyone
        session.step_summary = _check_outputs(config, settings, session.step_summary)
    config.stash[STASH_KEY] = session
    # Registered as a plugin so it receives every test report, on the controller those that
    # xdist workers send over too.
    config.pluginmanager.register(session, "graphnetz-session")


def _check_outputs(config: pytest.Config, settings: Settings, step_summary: str | None
                   ) -> str | None:
    """The files the session will write, checked before any test runs (a verdict is never
    lost to them at the end): a report dir or summary the user named that cannot be written is
    a usage error; an unwritable ``$GITHUB_STEP_SUMMARY`` is one warning and is skipped (the
    step summary to write is returned: None for none)."""
    from .outputs import dir_problem, file_problem

    root = config.rootpath
    for name, path, problem in (
            ("report-dir", settings.report_dir, dir_problem),
            ("summary", settings.summary, file_problem),
            ("comment", settings.comment, file_problem),
            ("json", settings.json, file_problem)):
        why = None if path is None else problem(path, root)
        if why is not None:
            raise pytest.UsageError(f"graphnetz: {named(config, name)} cannot be written: "
                                    f"{why}; name a writable path")
    why = None if not step_summary else file_problem(Path(step_summary), root)
    if why is not None:
        config.issue_config_time_warning(pytest.PytestConfigWarning(
            f"graphnetz: ${STEP_SUMMARY_ENV} ({step_summary}) cannot be written: {why}; this "
            "run's gate table is not added to the job summary"), stacklevel=2)
        return None
    return step_summary


def _check_device(device: str) -> None:
    """A pinned device this machine lacks is one usage error now, not a failure in every test.

    ``auto`` and ``cpu`` always exist, so only a pinned accelerator pays for importing torch.
    """
    if device.strip().lower() in ("auto", "cpu"):
        return
    from .runner import DeviceError, resolve_device

    try:
        resolve_device(device)
    except DeviceError as exc:
        raise pytest.UsageError(f"graphnetz: `--graphnetz-device` / `graphnetz_device`: {exc}")\
            from None


@pytest.hookimpl(wrapper=True)
def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]
                                  ) -> Iterator[None]:
    """``-k`` matches marker names as keywords, so ``-k graph`` selected every test marked
    ``graphnetz`` (and ``-k "not graph"`` none of them). Here ``-k`` is applied without our
    marker's name, ``-m graphnetz`` still with it; ``-k graphnetz`` keeps pytest's meaning."""
    keyword = config.option.keyword or ""
    mark_plugin = config.pluginmanager.get_plugin("mark")
    select = getattr(mark_plugin, "pytest_collection_modifyitems", None)
    if not keyword.strip() or MARKER in keyword.lower() or select is None:
        return (yield)
    markexpr = config.option.markexpr
    hidden = _hide_marker(items)
    config.option.markexpr = ""
    try:
        select(items=items, config=config)  # pytest's own -k, blind to our marker
    finally:
        config.option.markexpr = markexpr
        for node, marks in hidden:
            node.own_markers[:] = marks
    config.option.keyword = ""  # already applied: pytest's pass below applies -m only
    try:
        return (yield)
    finally:
        config.option.keyword = keyword


def _hide_marker(items: list[pytest.Item]) -> list[tuple[pytest.Item | pytest.Collector, list]]:
    """Remove our marker from every node above ``items``; what to put back."""
    hidden, seen = [], set()
    for item in items:
        for node in item.listchain():
            if id(node) in seen or not any(m.name == MARKER for m in node.own_markers):
                continue
            seen.add(id(node))
            hidden.append((node, list(node.own_markers)))
            node.own_markers[:] = [m for m in node.own_markers if m.name != MARKER]
    return hidden


def pytest_sessionfinish(session: pytest.Session, exitstatus: int) -> None:
    gn = session.config.stash[STASH_KEY]
    gn.find_unused(int(exitstatus))
    gn.find_unused_cells(int(exitstatus))
    if gn.unused_cells and gn.settings.fail_unused and session.exitstatus == 0:
        session.exitstatus = pytest.ExitCode.TESTS_FAILED  # as syrupy does for unused snapshots


@pytest.hookimpl(wrapper=True)
def pytest_runtest_call(item: pytest.Item) -> Iterator[None]:
    # Gates report to an observer set for the test body. Only when the gates module is already
    # loaded (the test imported it) or the test uses our fixtures: otherwise importing it here
    # would make every unrelated test pay for numpy and scipy.
    uses_us = {"graphnetz_run", "graphnetz_baseline"} & set(getattr(item, "fixturenames", ()))
    if "pytest_graphnetz.gates" not in sys.modules and not uses_us:
        return (yield)
    from .gates import observing

    session = item.config.stash[STASH_KEY]
    try:
        with observing(session.observer(item)):
            return (yield)
    finally:
        session.record_gate_settings(item)


def pytest_terminal_summary(terminalreporter: Any, exitstatus: int,
                            config: pytest.Config) -> None:
    session = config.stash[STASH_KEY]
    if session.is_xdist_worker:
        return
    summary = session.summary(int(exitstatus))
    lines = list(summary.lines())
    if lines:
        terminalreporter.write_sep("=", "graphnetz gates")
        for line in lines:
            terminalreporter.write_line(line)
    if summary.unused and session.settings.fail_unused:
        terminalreporter.write_line(
            "graphnetz: --graphnetz-fail-unused: the run fails on the unused baseline cells "
            "above")
    for line in session.write_outputs(summary):
        terminalreporter.write_line(line)
    for line in session.unused_lines:
        terminalreporter.write_line(line)
    if session.calibration_rows:
        from .calibration import summary_table
        from .text import format_table

        terminalreporter.write_sep("=", "graphnetz calibration")
        for line in format_table(*summary_table(session.calibration_rows)).splitlines():
            terminalreporter.write_line(line)
        files = dict.fromkeys(f for row in session.calibration_rows for f in row["files"])
        for file in files:
            terminalreporter.write_line(f"graphnetz: calibration written to {file}")
        if not files:
            terminalreporter.write_line("graphnetz: no test used a baseline, so no calibration "
                                        "file was written")
    if session.reports:
        terminalreporter.write_line(
            f"graphnetz: {len(session.reports)} candidate report(s) saved under "
            f"{session.shown(session.settings.report_dir)}")


# -- fixtures ------------------------------------------------------------------------------------


@dataclass
class Calibrating:
    """One test's calibrations (``--graphnetz-calibrate``) and the baselines it asked for."""

    calibrations: list[Any] = field(default_factory=list)
    baselines: list[Path] = field(default_factory=list)


CALIBRATION_KEY = pytest.StashKey[Calibrating]()


@pytest.fixture
def graphnetz_run(request: pytest.FixtureRequest) -> Iterator[Callable[..., BenchmarkReport]]:
    """``graphnetz_run(tasks, models, **kwargs)`` → a report from ``run_benchmark``.

    Seeds, device, workers and cache come from the session's options; ``kwargs`` (anything
    ``run_benchmark`` takes) override them for this call. With ``--graphnetz-calibrate`` each
    call also trains its models under salted seeds (every configured seed, also under adaptive
    seeds), and after the test the calibration is written beside each baseline it used.
    """
    session = request.config.stash[STASH_KEY]
    settings = session.settings

    def run(tasks: Any, models: Any, **kwargs: Any) -> BenchmarkReport:
        __tracebackhide__ = True
        if not settings.calibrate:
            return session.run(request.node, tasks, models, **kwargs)
        from .calibration import calibrate

        kwargs.setdefault("seeds", settings.seeds)
        report = session.run(request.node, tasks, models, **kwargs)
        calibration = calibrate(
            tasks, models, baseline=report, alpha=settings.alpha,
            runner=lambda t, m, **more: session.run(request.node, t, m, **more), **kwargs)
        request.node.stash.setdefault(CALIBRATION_KEY, Calibrating()).calibrations.append(
            calibration)
        return report

    yield run
    pending = request.node.stash.get(CALIBRATION_KEY, None)
    if pending is not None and pending.calibrations:
        from .calibration import write_calibrations

        # Without a baseline there is nothing to store it beside: the table still shows it.
        rows = write_calibrations(pending.calibrations, pending.baselines,
                                  min_effect=settings.min_effect)
        request.node.user_properties.append((CALIBRATION_PROPERTY, json.dumps(rows)))


@pytest.fixture
def graphnetz_baseline(request: pytest.FixtureRequest) -> Callable[..., BaselineHandle]:
    """``graphnetz_baseline(name=None)`` → this test's baseline handle, for the gates.

    The file is ``<baseline dir>/<test module>/<test name>.json``; ``name`` replaces the test
    name (two tests sharing one baseline, or one test with several).
    """
    session = request.config.stash[STASH_KEY]

    def baseline(name: str | None = None) -> BaselineHandle:
        return session.baseline(request.node, name)

    return baseline
