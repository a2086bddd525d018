"""The plugin's settings: every ``--graphnetz-*`` option with its ini key, read and validated
once at session start into a frozen :class:`Settings`.

A bad value is a usage error that names where it came from: the option when it was given on
the command line, the ini key (and its file) when it came from there (:func:`named`), so the
user is sent to the place to fix it. The files the session will write and a pinned device are
checked here too, before any test runs.

Standard library and pytest only at import: pytest loads the plugin on every run.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from ..outputs import STEP_SUMMARY_ENV  # standard library only, like this module

# Set from benchmarks/gate_quality_results.md: on the 1,600-node block model the paired t-test
# at 10 seeds detects a 0.7-point regression 75% of the time (45% at 5 seeds) with no false
# alarms on innocent changes; its minimum detectable effect is 0.67 points (1.07 at 5 seeds).
DEFAULT_SEEDS = "10"
DEFAULT_ALPHA = 0.05
# The smallest α a gate takes. Below it no team could ever observe the false-alarm rate it
# buys (one in a million gate runs), the seeds a δ needs keep growing (z at 1e-6 is 4.75, 2.9
# times z at 0.05: 8 times the seeds), and α split over a family of cells heads into
# subnormal floats: 1e-320 keeps 3 significant digits, and α / cells may round to 0, a gate
# that can never fail.
MIN_ALPHA = 1e-6


# --graphnetz-min-effect=resolvable (calibration.RESOLVABLE; not imported here: stdlib only)
RESOLVABLE = "resolvable"


@dataclass(frozen=True)
class Option:
    name: str            # --graphnetz-<name>, ini key graphnetz_<name with _>
    help: str
    flag: bool = False
    metavar: str | None = None
    repeat: bool = False  # may be given more than once (a list)
    # Command line only: its ini key exists so that setting it is refused with the reason
    # (:func:`refuse_command_line_only`), not ignored as an unknown key.
    command_line_only: bool = False

    @property
    def dest(self) -> str:
        return "graphnetz_" + self.name.replace("-", "_")


OPTIONS = (
    Option("seeds",
            f"seeds to run: N (0..N-1), A-B (inclusive), 1,4,7, or adaptive MIN..MAX (each cell "
            f"starts with MIN seeds and takes more, up to MAX, only while undecided) "
            f"(default {DEFAULT_SEEDS})",
            metavar="N|A-B|LIST|MIN..MAX"),
    Option("device", "device for training: auto, cpu, cuda, cuda:i or mps (default auto)",
            metavar="DEVICE"),
    Option("workers", "processes training triples in parallel (default 1; at most the CPU "
            "count)", metavar="N"),
    Option("cache-dir", "per-triple result cache (default: graphnetz/ under pytest's cache dir)",
            metavar="DIR"),
    Option("no-cache", "train every triple, reading and writing no cache", flag=True),
    Option("baseline-dir", "where baselines live (default: baselines/ under the rootdir)",
            metavar="DIR"),
    Option("update-baselines", "gates given a baseline write the candidate there and pass, "
            "unless the ratchet refuses; a full run deletes baselines no test used (command "
            "line only)", flag=True, command_line_only=True),
    Option("force", "with --graphnetz-update-baselines: write even what the ratchet refuses, "
            "or over an unreadable baseline; resets the anchors of the cells written (command "
            "line only)", flag=True, command_line_only=True),
    Option("alpha", f"significance level of the gates (default {DEFAULT_ALPHA})", metavar="A"),
    Option("min-effect", "the smallest regression that matters (δ, metric units; default 0.01 "
            "for metrics in [0, 1], none for MAE/RMSE/loss); `resolvable`: what each gate's "
            "seeds resolve, from the calibration beside its baseline (graphnetz calibrate), "
            "stated in every row", metavar="DELTA|resolvable"),
    Option("strict", "an INCONCLUSIVE gate fails too", flag=True),
    Option("single-run", "judge each gate run alone at the full alpha, off the schedule of "
            "looks (for a team that never reruns a gate with more seeds after INCONCLUSIVE; by "
            "default every run walks the looks its seeds hold, docs/guarantees.md)", flag=True),
    Option("summary", "also write the gate table as Markdown to PATH", metavar="PATH"),
    Option("comment", "write the concise pull-request comment (Markdown: one headline, the "
            "rows that are not IDENTICAL, failing first, under 10,000 characters) to PATH",
            metavar="PATH"),
    Option("json", "write every gate row with its numbers (Δ, interval, p, n, level, margin, "
            "δ, verdict) as JSON to PATH (docs/verdicts-json.md)", metavar="PATH"),
    Option("fail-unused", "fail the run when a baseline holds cells no gate used (after a "
            "run of the whole test; never after a partial run)", flag=True),
    Option("accept", "with --graphnetz-update-baselines: accept this cell's loss (TASK/MODEL, "
            "repeatable or comma-separated): the ratchet lets it through and resets its anchor; "
            "every other cell keeps its anchor", metavar="TASK/MODEL", repeat=True),
    Option("report-dir", "save each gated test's candidate report (full JSON, histories "
            "included) under DIR, e.g. for CI artifacts", metavar="DIR"),
    Option("deterministic", "deterministic CUDA algorithms per triple: on, warn (let an "
            "operation without one run, with a warning) or off (default on)",
            metavar="on|warn|off"),
    Option("calibrate", "also train each graphnetz_run's models under salted seeds (same "
            "data and splits) and write, beside each baseline, what δ its seeds resolve "
            "(<test>.calibration.json; see docs/calibrate.md)", flag=True),
)


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
    if not text.isascii() or "_" in text:  # int() reads "1_000" and "٣" (Arabic-Indic 3)
        raise ValueError(f"`--graphnetz-seeds` / `graphnetz_seeds`: write seeds with the ASCII "
                         f"digits 0-9 (no `_` separators), got {text!r}")
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
    # None: each metric's default (gates.default_min_effect); "resolvable": what the seeds
    # resolve, from the calibration beside each baseline (calibration.py)
    min_effect: float | str | None = None
    comment: Path | None = None      # the pull-request comment (Markdown)
    json: Path | None = None         # the JSON verdict file
    fail_unused: bool = False        # baseline cells no gate used fail the run
    accept: frozenset[str] = frozenset()  # TASK/MODEL cells whose loss a refresh accepts
    calibrate: bool = False    # --graphnetz-calibrate (calibration.py)
    single_run: bool = False   # --graphnetz-single-run: every run judged alone at α
    # The schedule's first look (seeds): the ini's graphnetz_seeds (its N, or MIN of MIN..MAX),
    # else MIN of adaptive seeds on the command line, else 10 (stats.DEFAULT_FIRST_LOOK).
    first_look: int = 10

    @property
    def rerun_safe(self) -> bool:
        """Whether this session's not-worse gates walk the schedule (so a rerun with more seeds
        keeps the error rates): not with ``--graphnetz-single-run``."""
        return not self.single_run

    @classmethod
    def from_config(cls, config: pytest.Config) -> Settings:
        """Read and validate every option; a bad value is a usage error naming the option."""
        from ..determinism import DEFAULT_MODE, check_mode  # stdlib only at import

        refuse_command_line_only(config)
        get = _getter(config)
        workers = _convert(config, "workers", get("workers", "1"), int,
                           "a whole number of processes")
        alpha = _convert(config, "alpha", get("alpha", str(DEFAULT_ALPHA)), float, "a number")
        min_effect = get("min-effect", None)
        if min_effect is not None and str(min_effect).strip() == RESOLVABLE:
            min_effect = RESOLVABLE
        elif min_effect is not None:
            min_effect = _convert(config, "min-effect", min_effect, float,
                                  f"a number or `{RESOLVABLE}`")
        try:
            deterministic = check_mode(get("deterministic", DEFAULT_MODE),
                                       name=named(config, "deterministic"))
            seeds = parse_seeds(get("seeds", DEFAULT_SEEDS))
            adaptive = parse_adaptive(get("seeds", DEFAULT_SEEDS))
            first_look = _first_look(config, adaptive)
        except ValueError as exc:
            raise pytest.UsageError(f"graphnetz: {exc}") from None
        if isinstance(min_effect, float) and not 0.0 < min_effect < float("inf"):
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
        if alpha < MIN_ALPHA:
            raise pytest.UsageError(
                f"graphnetz: {named(config, 'alpha')} {alpha!r} is below {MIN_ALPHA:g}, the "
                "smallest α a gate takes (no seed count a CI can afford decides at it, and α "
                "split over cells would lose its digits); use e.g. 0.001")
        device = config.getoption("graphnetz_device")
        if device is not None and not str(device).strip():
            raise pytest.UsageError(
                "graphnetz: `--graphnetz-device=` is empty: give auto, cpu, cuda, cuda:i or mps "
                "(or leave the option out for auto)")
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
            single_run=bool(get("single-run", False)),
            summary=_path(config, "summary", follow=False) if get("summary", None) else None,
            report_dir=report_dir,
            cli_baseline_dir=config.getoption("graphnetz_baseline_dir"),
            deterministic=deterministic, min_effect=min_effect,
            comment=_path(config, "comment", follow=False) if get("comment", None) else None,
            json=_path(config, "json", follow=False) if get("json", None) else None,
            fail_unused=bool(get("fail-unused", False)), accept=_accepted(config),
            calibrate=bool(get("calibrate", False)), first_look=first_look,
        )


def refuse_command_line_only(config: pytest.Config) -> None:
    """A usage error for an ini key of a command-line-only option: refreshing baselines (and
    forcing past the ratchet) is a decision someone makes for one run; as a line in a
    committed pyproject.toml, a pull request could make CI rewrite the very baselines that
    gate it, and every later run would pass by writing its candidate."""
    for option in OPTIONS:
        if not option.command_line_only:
            continue
        try:
            present = config.getini(option.dest) is not None  # registered with default None
        except ValueError:  # set, to something that is not even a truth value
            present = True
        if present:
            where = f" in {config.inipath.name}" if config.inipath else ""
            raise pytest.UsageError(
                f"graphnetz: the ini key `{option.dest}`{where} is refused: "
                f"--graphnetz-{option.name} is command line only, so no committed "
                "configuration can make CI refresh the baselines that gate it; remove the key "
                f"and pass `--graphnetz-{option.name}` (or run `graphnetz refresh`) when you "
                "mean to")


def _accepted(config: pytest.Config) -> frozenset[str]:
    """``--graphnetz-accept`` (repeatable, comma-separated; also the ini key): TASK/MODEL cells."""
    given = config.getoption("graphnetz_accept") or [config.getini("graphnetz_accept") or ""]
    cells = frozenset(c.strip() for text in given for c in str(text).split(",") if c.strip())
    bad = sorted(c for c in cells if c.count("/") < 1 or c.startswith("/") or c.endswith("/"))
    if bad:
        raise pytest.UsageError(
            f"graphnetz: `--graphnetz-accept` / `graphnetz_accept` takes cells as TASK/MODEL "
            f"(e.g. csbm_homophilous/GAT), got {', '.join(map(repr, bad))}")
    if cells and not config.getoption("graphnetz_update_baselines"):
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
    from ..outputs import shown

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
    if settings.rerun_safe:
        alpha += (f", looks {first}→{2 * first}→{4 * first}→… (look 1 decides at "
                  f"{0.85 * settings.alpha:.3g})")
    else:
        alpha += " (single run: judged alone)"
    # Command tasks' scripts fork from a warm interpreter unless this says why not (a device
    # that `auto` resolves to CUDA is known only once torch is imported: cold then, unsaid).
    from ..script import warm_mode

    device = str(settings.device)
    cold = warm_mode("cpu" if device == "auto" else device)
    return (f"graphnetz: seeds {which}, α {alpha}, δ {effect}, device "
            f"{settings.device}, workers {settings.workers}, cache {cache}"
            + (", updating baselines" if settings.update_baselines else "")
            + (f", scripts run cold ({cold})" if cold else ""))


def _convert(config: pytest.Config, name: str, text: Any, convert: Callable[[str], Any],
             expected: str) -> Any:
    if not str(text).isascii() or "_" in str(text):  # int() and float() read "1_0" and "٣"
        raise pytest.UsageError(
            f"graphnetz: {named(config, name)} must be {expected} written with the ASCII "
            f"digits 0-9 (no `_` separators), got {text!r}")
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
        if value is None and not option.command_line_only:
            try:
                value = config.getini(option.dest)
            except (ValueError, pytest.UsageError) as exc:  # a flag's value: not a truth value
                raise pytest.UsageError(
                    f"graphnetz: the ini key `{option.dest}` must be true or false (also "
                    f"1/0, yes/no, on/off): {exc}") from None
        return default if value in (None, "", False) else value
    return get


def _option(name: str) -> Option:
    return next(o for o in OPTIONS if o.name == name)


def _path(config: pytest.Config, name: str, *, follow: bool = True) -> Path:
    """A path option: relative to the invocation directory (command line) or the ini file.
    ``follow=False`` (a file the session writes): made absolute without following a link at
    the end, so :func:`~pytest_graphnetz.outputs.file_problem` sees and refuses the link."""
    dest = _option(name).dest
    value = config.getoption(dest)
    if value is not None:
        path = config.invocation_params.dir / str(value)
    else:
        base = config.inipath.parent if config.inipath else config.rootpath
        path = base / str(config.getini(dest))
    return path.resolve() if follow else Path(os.path.abspath(path))


def add_options(parser: pytest.Parser) -> None:
    """Every option in one group, each also an ini key (``graphnetz_<name>``)."""
    group = parser.getgroup("graphnetz", "graphnetz: statistically aware GNN regression gates")
    for option in OPTIONS:
        flag = f"--graphnetz-{option.name}"
        if option.flag:
            group.addoption(flag, action="store_true", default=None, dest=option.dest,
                            help=option.help)
            # default None: a command-line-only key that is set at all can be refused
            parser.addini(option.dest, option.help, type="bool",
                          default=None if option.command_line_only else False)
        else:
            group.addoption(flag, default=None, dest=option.dest, metavar=option.metavar,
                            help=option.help, action="append" if option.repeat else "store")
            parser.addini(option.dest, option.help, default=None)


def check_outputs(config: pytest.Config, settings: Settings, step_summary: str | None
                   ) -> str | None:
    """The files the session will write, checked before any test runs (a verdict is never
    lost to them at the end): a report dir or summary the user named that cannot be written is
    a usage error; an unwritable ``$GITHUB_STEP_SUMMARY`` is one warning and is skipped (the
    step summary to write is returned: None for none)."""
    from ..outputs import dir_problem, file_problem

    root = config.rootpath
    # A cache directory the user named (pytest's own is created, or warned about, above).
    named_cache = settings.cache_dir if _getter(config)("cache-dir", None) else None
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
    from ..runner import DeviceError, resolve_device

    try:
        resolve_device(device)
    except DeviceError as exc:
        raise pytest.UsageError(f"graphnetz: `--graphnetz-device` / `graphnetz_device`: {exc}")\
            from None


__all__ = ["DEFAULT_ALPHA", "DEFAULT_SEEDS", "MAX_SEEDS", "MIN_ALPHA", "OPTIONS", "SEED_LIMIT",
           "Option", "Settings", "add_options", "check_device", "check_outputs", "header_line",
           "named", "parse_adaptive", "parse_seeds", "refuse_command_line_only"]
