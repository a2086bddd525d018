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

import html
import json
import os
import re
import shlex
import sys
import time
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest

if TYPE_CHECKING:
    from .baselines import BaselineHandle
    from .progress import TerminalProgress
    from .report import BenchmarkReport

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
REPORT_PROPERTY = "graphnetz_report"    # user_properties entry: a saved candidate report's path
CALIBRATION_PROPERTY = "graphnetz_calibration"  # user_properties entry: calibrated cells (JSON)
FAILED_MARK = "✗ FAIL"                  # the table's Build column for rows that failed the build


@dataclass(frozen=True)
class _Option:
    name: str            # --graphnetz-<name>, ini key graphnetz_<name with _>
    help: str
    flag: bool = False
    metavar: str | None = None

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
    _Option("workers", "processes training triples in parallel (default 1)", metavar="N"),
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
    calibrate: bool = False    # --graphnetz-calibrate (calibration.py)

    @classmethod
    def from_config(cls, config: pytest.Config) -> Settings:
        """Read and validate every option; a bad value is a usage error naming the option."""
        from .determinism import DEFAULT_MODE, check_mode  # stdlib only at import

        get = _getter(config)
        workers = _convert("workers", get("workers", "1"), int, "a whole number of processes")
        alpha = _convert("alpha", get("alpha", str(DEFAULT_ALPHA)), float, "a number")
        min_effect = get("min-effect", None)
        if min_effect is not None:
            min_effect = _convert("min-effect", min_effect, float, "a number")
        try:
            deterministic = check_mode(get("deterministic", DEFAULT_MODE))
            seeds = parse_seeds(get("seeds", DEFAULT_SEEDS))
            adaptive = parse_adaptive(get("seeds", DEFAULT_SEEDS))
        except ValueError as exc:
            raise pytest.UsageError(f"graphnetz: {exc}") from None
        if min_effect is not None and not 0.0 < min_effect < float("inf"):
            raise pytest.UsageError(
                f"graphnetz: `--graphnetz-min-effect` must be a number > 0 (ini key "
                f"`graphnetz_min_effect`; the smallest regression that matters, in metric "
                f"units), got {min_effect}")
        if workers < 1:
            raise pytest.UsageError(
                f"graphnetz: `--graphnetz-workers` must be >= 1, got {workers}")
        if not 0.0 < alpha < 0.5:
            raise pytest.UsageError(
                f"graphnetz: `--graphnetz-alpha` must lie in (0, 0.5), got {alpha}")
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
        if report_dir is not None and report_dir.exists() and not report_dir.is_dir():
            raise pytest.UsageError(
                f"graphnetz: `--graphnetz-report-dir` (ini key `graphnetz_report_dir`) is a "
                f"file, not a directory: {report_dir}; name a directory (it is created when "
                "missing)")
        return cls(
            seeds=seeds, min_seeds=adaptive[0] if adaptive else None,
            device=str(get("device", "auto")), workers=workers, cache_dir=cache_dir,
            baseline_dir=baseline_dir, update_baselines=bool(get("update-baselines", False)),
            force=bool(get("force", False)), alpha=alpha, strict=bool(get("strict", False)),
            summary=_path(config, "summary") if get("summary", None) else None,
            report_dir=report_dir,
            cli_baseline_dir=config.getoption("graphnetz_baseline_dir"),
            deterministic=deterministic, min_effect=min_effect,
            calibrate=bool(get("calibrate", False)),
        )


def _convert(name: str, text: Any, convert: Callable[[str], Any], expected: str) -> Any:
    try:
        return convert(str(text).strip())
    except ValueError:
        raise pytest.UsageError(
            f"graphnetz: `--graphnetz-{name}` / `graphnetz_{name.replace('-', '_')}` must be "
            f"{expected}, got {text!r}") from None


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
        self.calibration_rows: list[dict[str, str]] = []
        if self.is_xdist_worker:  # sent to the controller when the worker finishes
            config.workeroutput[USER_PROPERTY] = self.baseline_users  # type: ignore[attr-defined]

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
                    f"{path} (a file name keeps only the module's name, and some file systems "
                    "ignore case), so one would be compared with the other's numbers. Give "
                    "each its own baseline: graphnetz_baseline(\"<unique name>\")"
                )
        if s.update_baselines:
            item.user_properties.append((USES_PROPERTY, str(path)))
        if s.calibrate:
            item.stash.setdefault(CALIBRATION_KEY, Calibrating()).baselines.append(path)
        command = ["pytest", item.nodeid, "--graphnetz-update-baselines"]
        if s.cli_baseline_dir is not None:
            command.append(f"--graphnetz-baseline-dir={s.cli_baseline_dir}")
        return BaselineHandle(path, update=s.update_baselines, force=s.force,
                              update_command=shlex.join(command))

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

    @pytest.hookimpl(optionalhook=True)
    def pytest_testnodedown(self, node: Any, error: Any) -> None:
        """xdist controller: every worker collected the same tests; take one worker's list."""
        users = getattr(node, "workeroutput", {}).get(USER_PROPERTY)
        if users and not self.baseline_users:
            self.baseline_users = [tuple(u) for u in users]

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
            delete=not reasons, why_kept=", ".join(reasons))

    def observer(self, item: pytest.Item) -> Any:
        """What the gates called inside ``item`` report to (session alpha/strict, the rows)."""
        from .gates import GateObserver

        def record(row: dict[str, str]) -> None:
            item.user_properties.append((GATE_PROPERTY, json.dumps({"test": item.nodeid, **row})))

        saved: list[Any] = []   # the reports this test's gates saw, each written once

        def candidate(report: BenchmarkReport,
                      further: Sequence[BenchmarkReport] = ()) -> list[str]:
            if not further and any(r is report for r in saved):
                return []
            saved.append(report)
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
            return [str(p) for p in paths]

        def uses(path: str) -> None:
            item.user_properties.append((USES_PROPERTY, path))

        return GateObserver(alpha=self.settings.alpha, strict=self.settings.strict, record=record,
                            min_effect=self.settings.min_effect,
                            uses=uses if self.settings.update_baselines else None,
                            candidate=candidate if self.settings.report_dir else None)

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
            elif name == GATE_PROPERTY:
                self.rows.append(json.loads(value))
                self.saved += int(self.rows[-1].get("saved", 0))
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

    def failed_build(self, row: dict[str, str]) -> bool:
        """Did this row fail the build: a failing cell in a test that failed?"""
        return bool(row.get("failed")) and row.get("test", "") in self.failures

    def headline(self) -> str:
        failing = [r for r in self.rows if self.failed_build(r)]
        if not failing:
            return f"{len(self.rows)} gate row(s), none failed the build"
        tests = {r.get("test") for r in failing}
        return (f"{len(failing)} of {len(self.rows)} gate row(s) failed the build "
                f"({FAILED_MARK}), in {len(tests)} test(s)")

    def summary_lines(self) -> Iterator[str]:
        """The terminal table of every gate, then the triple counts (nothing when unused)."""
        from .text import format_table, seed_trainings

        if self.rows:
            yield from format_table(*self._table()).splitlines()
            yield self.headline()
        if self.trained or self.cached:
            yield f"triples: {self.trained} trained, {self.cached} from cache"
        if self.saved:
            yield f"adaptive seeds: {seed_trainings(self.saved)} saved against fixed MAX"

    def markdown(self) -> str:
        """The Markdown summary: headline, the table, and each failing test's message."""
        from .text import markdown_table, seed_trainings

        parts = ["### graphnetz gates", ""]
        if self.rows:
            failing = [r for r in self.rows if self.failed_build(r)]
            headline = self.headline()
            parts += [f"**{headline}**" if failing else headline, "",
                      markdown_table(*self._table())]
            for test in dict.fromkeys(r["test"] for r in failing):
                message = _clip(self.failures[test])
                # A fence longer than any backtick run inside, so a message cannot end it.
                fence = "`" * max(3, 1 + max(map(len, re.findall("`+", message)), default=0))
                parts += ["", f"<details><summary>{FAILED_MARK} <code>{html.escape(test)}"
                              "</code></summary>", "", f"{fence}text", message, fence, "",
                          "</details>"]
        else:
            parts.append("No gates ran.")
        if self.trained or self.cached:
            parts += ["", f"Triples: {self.trained} trained, {self.cached} from cache."]
        if self.saved:
            parts += ["", f"Adaptive seeds: {seed_trainings(self.saved)} saved against fixed MAX."]
        return "\n".join(parts) + "\n"

    def _table(self) -> tuple[Sequence[str], list[list[str]]]:
        """Headers and cells of the session table: the gate table with the test in front, and
        which rows failed the build and why (the Note: a refusal's or an error's reason)."""
        from .gates import TABLE_COLUMNS, TABLE_HEADERS  # loaded already: the rows came from it

        at = TABLE_COLUMNS.index("verdict") + 1
        headers = ["Test", *TABLE_HEADERS]
        headers[at + 1:at + 1] = ["Build"]
        body = []
        for r in self.rows:
            cells = [_short_test(r.get("test", "")), *(r.get(c, "") for c in TABLE_COLUMNS)]
            cells[at + 1:at + 1] = [FAILED_MARK if self.failed_build(r) else "pass"]
            body.append([*cells, r.get("note", "")])
        return [*headers, "Note"], body

    def write_markdown(self) -> list[Path]:
        """Write the Markdown summary to ``--graphnetz-summary`` and ``$GITHUB_STEP_SUMMARY``."""
        if not (self.rows or self.trained or self.cached):
            return []
        # Imported only now: report imports numpy (~0.3 s), which a session without gates or
        # triples must not pay for.
        from .report import write_text_atomic

        text, written = self.markdown(), []
        if self.settings.summary is not None:
            write_text_atomic(self.settings.summary, text)
            written.append(self.settings.summary)
        step_summary = os.environ.get("GITHUB_STEP_SUMMARY")
        if step_summary:
            # GitHub collects the whole step's summary from this file: append, never replace.
            with open(step_summary, "a", encoding="utf-8") as fh:
                fh.write(text)
            written.append(Path(step_summary))
        return written

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


def _clip(text: str, lines: int = 60) -> str:
    kept = text.splitlines()
    if len(kept) <= lines:
        return "\n".join(kept)
    return "\n".join([*kept[:lines], f"... ({len(kept) - lines} more lines)"])


def _short_test(nodeid: str) -> str:
    return nodeid.rsplit("/", 1)[-1]


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
                            help=option.help)
            parser.addini(option.dest, option.help, default=None)


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
    config.stash[STASH_KEY] = session
    # Registered as a plugin so it receives every test report, on the controller those that
    # xdist workers send over too.
    config.pluginmanager.register(session, "graphnetz-session")


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
    session.config.stash[STASH_KEY].find_unused(int(exitstatus))


@pytest.hookimpl(wrapper=True)
def pytest_runtest_call(item: pytest.Item) -> Iterator[None]:
    # Gates report to an observer set for the test body. Only when the gates module is already
    # loaded (the test imported it) or the test uses our fixtures: otherwise importing it here
    # would make every unrelated test pay for numpy and scipy.
    uses_us = {"graphnetz_run", "graphnetz_baseline"} & set(getattr(item, "fixturenames", ()))
    if "pytest_graphnetz.gates" not in sys.modules and not uses_us:
        return (yield)
    from .gates import observing

    with observing(item.config.stash[STASH_KEY].observer(item)):
        return (yield)


def pytest_terminal_summary(terminalreporter: Any, config: pytest.Config) -> None:
    session = config.stash[STASH_KEY]
    if session.is_xdist_worker:
        return
    lines = list(session.summary_lines())
    if lines:
        terminalreporter.write_sep("=", "graphnetz gates")
        for line in lines:
            terminalreporter.write_line(line)
    for path in session.write_markdown():
        terminalreporter.write_line(f"graphnetz: Markdown summary written to {path}")
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
            f"{session.settings.report_dir}")


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
