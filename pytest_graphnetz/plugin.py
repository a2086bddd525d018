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
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest

if TYPE_CHECKING:
    from .baselines import BaselineHandle
    from .report import BenchmarkReport

# Set from benchmarks/gate_quality_results.md: on the 1,600-node block model the paired t-test
# at 10 seeds detects a 0.7-point regression 75% of the time (45% at 5 seeds) with no false
# alarms on innocent changes; its minimum detectable effect is 0.67 points (1.07 at 5 seeds).
DEFAULT_SEEDS = "10"
DEFAULT_ALPHA = 0.05
GATE_PROPERTY = "graphnetz_gate"        # user_properties entry: one gate row (JSON text)
TRIPLES_PROPERTY = "graphnetz_triples"  # user_properties entry: {"trained": n, "cached": m}


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
    _Option("update-baselines", "gates given a baseline write the candidate there and pass",
            flag=True),
    _Option("force", "with --graphnetz-update-baselines: replace even a regressed or unreadable "
            "baseline", flag=True),
    _Option("alpha", f"significance level of the gates (default {DEFAULT_ALPHA})", metavar="A"),
    _Option("strict", "an INCONCLUSIVE gate fails too", flag=True),
    _Option("summary", "also write the gate table as Markdown to PATH", metavar="PATH"),
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


def parse_seeds(text: str) -> tuple[int, ...]:
    """``"10"`` → 0..9; ``"3-7"`` → 3..7 (inclusive); ``"1,4,7"`` → those seeds, in that order;
    ``"5..20"`` (adaptive) → 0..19, all the seeds the schedule may use."""
    text = str(text).strip()
    adaptive = parse_adaptive(text)
    if adaptive is not None:
        return tuple(range(adaptive[1]))
    try:
        if "," in text:
            seeds = tuple(int(part) for part in text.split(",") if part.strip())
        elif "-" in text.lstrip("-"):
            low, high = (int(part) for part in text.split("-", 1))
            seeds = tuple(range(low, high + 1))
        else:
            seeds = tuple(range(int(text)))
    except ValueError:
        seeds = ()
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
    cli_baseline_dir: str | None  # as typed on the command line, for the commands we print

    @classmethod
    def from_config(cls, config: pytest.Config) -> Settings:
        """Read and validate every option; a bad value is a usage error naming the option."""
        get = _getter(config)
        try:
            workers = int(get("workers", "1"))
            alpha = float(get("alpha", str(DEFAULT_ALPHA)))
            seeds = parse_seeds(get("seeds", DEFAULT_SEEDS))
            adaptive = parse_adaptive(get("seeds", DEFAULT_SEEDS))
        except ValueError as exc:
            raise pytest.UsageError(f"graphnetz: {exc}") from None
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
            cache_dir = Path(cache.mkdir("graphnetz")) if cache is not None else None
        baseline_dir = (_path(config, "baseline-dir") if get("baseline-dir", None) is not None
                        else config.rootpath / "baselines")
        return cls(
            seeds=seeds, min_seeds=adaptive[0] if adaptive else None,
            device=str(get("device", "auto")), workers=workers, cache_dir=cache_dir,
            baseline_dir=baseline_dir, update_baselines=bool(get("update-baselines", False)),
            force=bool(get("force", False)), alpha=alpha, strict=bool(get("strict", False)),
            summary=_path(config, "summary") if get("summary", None) else None,
            cli_baseline_dir=config.getoption("graphnetz_baseline_dir"),
        )


def _getter(config: pytest.Config) -> Callable[[str, Any], Any]:
    """``get(name, default)``: the command-line value, else the ini value, else ``default``."""
    def get(name: str, default: Any) -> Any:
        option = _option(name)
        value = config.getoption(option.dest)
        if value is None:
            value = config.getini(option.dest)
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
        self.trained = 0
        self.cached = 0
        self.saved = 0  # adaptive seeds: seed-trainings not needed against fixed MAX

    @property
    def is_xdist_worker(self) -> bool:
        return hasattr(self.config, "workerinput")

    # fixtures

    def run(self, item: pytest.Item, tasks: Any, models: Any, **kwargs: Any) -> BenchmarkReport:
        """``run_benchmark`` with the session's seeds, device, workers, cache; ``kwargs`` win.
        With adaptive seeds (and no ``seeds`` given), the first look of the schedule, as a
        report the gates extend through this same method."""
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
        counts = {"trained": 0, "cached": 0}
        user_progress = kwargs.pop("progress", None)

        def progress(task: str, model: str, seed: int, status: str, seconds: float) -> None:
            counts[status] = counts.get(status, 0) + 1
            if status == "trained" and self.config.get_verbosity() > 0:
                self._write_line(
                    f"graphnetz: trained {task}/{model} seed {seed} in {seconds:.2f} s")
            if user_progress is not None:
                user_progress(task, model, seed, status, seconds)

        try:
            return run_benchmark(tasks, models, progress=progress, **kwargs)
        finally:
            item.user_properties.append((TRIPLES_PROPERTY, json.dumps(counts, sort_keys=True)))

    def baseline(self, item: pytest.Item, name: str | None = None) -> BaselineHandle:
        """The baseline handle of ``item``: ``<baseline dir>/<module>/<name or test>.json``
        (``<Class>.<test>`` for a test in a class)."""
        from .baselines import BaselineHandle, default_path

        s = self.settings
        if name is None:
            # Two classes of one module may both have a `test_x`: keep their baselines apart.
            cls = getattr(item, "cls", None)
            name = f"{cls.__name__}.{item.name}" if cls is not None else item.name
        path = default_path(s.baseline_dir, Path(str(item.path)).stem, name)
        command = ["pytest", item.nodeid, "--graphnetz-update-baselines"]
        if s.cli_baseline_dir is not None:
            command.append(f"--graphnetz-baseline-dir={s.cli_baseline_dir}")
        return BaselineHandle(path, update=s.update_baselines, force=s.force,
                              update_command=shlex.join(command))

    def observer(self, item: pytest.Item) -> Any:
        """What the gates called inside ``item`` report to (session alpha/strict, the rows)."""
        from .gates import GateObserver

        def record(row: dict[str, str]) -> None:
            item.user_properties.append((GATE_PROPERTY, json.dumps({"test": item.nodeid, **row})))

        return GateObserver(alpha=self.settings.alpha, strict=self.settings.strict, record=record)

    # collection (reports come from this process or, on the xdist controller, from workers)

    def pytest_runtest_logreport(self, report: pytest.TestReport) -> None:
        """Gather gate rows and triple counts (registered as a plugin: this is a hook)."""
        # user_properties accumulate over setup/call/teardown; the teardown report has them all.
        if report.when != "teardown":
            return
        for name, value in report.user_properties:
            if name == GATE_PROPERTY:
                self.rows.append(json.loads(value))
                self.saved += int(self.rows[-1].get("saved", 0))
            elif name == TRIPLES_PROPERTY:
                counts = json.loads(value)
                self.trained += counts.get("trained", 0)
                self.cached += counts.get("cached", 0)

    # the summary

    def summary_lines(self) -> Iterator[str]:
        """The terminal table of every gate, then the triple counts (nothing when unused)."""
        from .text import format_table

        if self.rows:
            headers, rows = _table(self.rows)
            yield from format_table(headers, rows).splitlines()
        if self.trained or self.cached:
            yield f"triples: {self.trained} trained, {self.cached} from cache"
        if self.saved:
            yield f"adaptive seeds: {self.saved} seed-trainings saved against fixed MAX"

    def markdown(self) -> str:
        from .text import markdown_table

        parts = ["### graphnetz gates", ""]
        if self.rows:
            parts.append(markdown_table(*_table(self.rows)))
        else:
            parts.append("No gates ran.")
        if self.trained or self.cached:
            parts += ["", f"Triples: {self.trained} trained, {self.cached} from cache."]
        if self.saved:
            parts += ["", f"Adaptive seeds: {self.saved} seed-trainings saved against fixed MAX."]
        return "\n".join(parts) + "\n"

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
        capture = self.config.pluginmanager.get_plugin("capturemanager")
        if reporter is None:
            return
        if capture is None:
            reporter.write_line(line)
            return
        # Inside a test, output is captured; the progress line is for the person watching.
        with capture.global_and_fixture_disabled():
            reporter.write_line(line)


def _table(rows: Sequence[dict[str, str]]) -> tuple[Sequence[str], list[list[str]]]:
    """Headers and cells of the session table: the gate table with the test in front."""
    from .gates import TABLE_COLUMNS, TABLE_HEADERS  # loaded already: the rows came from it

    body = [[_short_test(r.get("test", "")), *(r.get(c, "") for c in TABLE_COLUMNS)]
            for r in rows]
    return ("Test", *TABLE_HEADERS), body


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
        "markers", "graphnetz: a multi-seed GNN benchmark gate (select with -m graphnetz)"
    )
    session = GraphnetzSession(config, Settings.from_config(config))
    config.stash[STASH_KEY] = session
    # Registered as a plugin so it receives every test report, on the controller those that
    # xdist workers send over too.
    config.pluginmanager.register(session, "graphnetz-session")


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


# -- fixtures ------------------------------------------------------------------------------------


@pytest.fixture
def graphnetz_run(request: pytest.FixtureRequest) -> Callable[..., BenchmarkReport]:
    """``graphnetz_run(tasks, models, **kwargs)`` → a report from ``run_benchmark``.

    Seeds, device, workers and cache come from the session's options; ``kwargs`` (anything
    ``run_benchmark`` takes) override them for this call.
    """
    session = request.config.stash[STASH_KEY]

    def run(tasks: Any, models: Any, **kwargs: Any) -> BenchmarkReport:
        return session.run(request.node, tasks, models, **kwargs)

    return run


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
