"""What the plugin declares to pytest on every run, as data: every ``--graphnetz-*`` option and
its ini key (``graphnetz_<name>``), declared once (:data:`OPTIONS`) and registered
(:func:`add_options`); whether a session sets any of them (:func:`any_given`); the marker and
the fixtures that make a test a graphnetz test (:func:`is_graphnetz_test`).

The entry module and this one are all that a session without graphnetz work loads of the
package: the reading and validating of the values (:mod:`.options`, :mod:`.settings`) and the
session load only when a session uses them (each module pytest loads costs a run about a
million instructions: benchmarks/plugin_overhead.py).

Standard library and pytest only at import: pytest loads the plugin on every run.
"""

from __future__ import annotations

import sys
from typing import Any

import pytest

MARKER = "graphnetz"                    # the marker of gate tests (-m graphnetz)
# The fixtures that make a test a graphnetz test (as the marker does).
FIXTURES = frozenset({"graphnetz_run", "graphnetz_baseline"})

# Set from benchmarks/gate_quality_results.md: on the 1,600-node block model the paired t-test
# at 10 seeds detects a 0.7-point regression 70% of the time (45% at 5 seeds) with no false
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


class Option:
    """One option, ``--graphnetz-<name>``, and its ini key ``graphnetz_<name with _>``.

    A plain class, not a NamedTuple or a frozen dataclass: pytest defines it on every run,
    where typing compiles each annotation of a NamedTuple and a dataclass compiles the methods
    it generates (benchmarks/plugin_overhead.py counts what a run pays)."""

    __slots__ = ("name", "help", "flag", "metavar", "repeat", "command_line_only", "const")

    def __init__(self, name: str, help: str, *, flag: bool = False,  # noqa: A002 (argparse's)
                 metavar: str | None = None, repeat: bool = False,
                 command_line_only: bool = False, const: str | None = None) -> None:
        self.name = name
        self.help = help
        self.flag = flag
        self.metavar = metavar
        self.repeat = repeat  # may be given more than once (a list)
        # Command line only: its ini key exists so that setting it is refused with the reason
        # (:func:`.options.refuse_command_line_only`), not ignored as an unknown key.
        self.command_line_only = command_line_only
        # The value of the option given without one (``--graphnetz-mlflow``); None: it needs one.
        self.const = const

    def __repr__(self) -> str:
        return f"Option({self.name!r})"

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
    Option("verify-cache", "per cell, retrain N of the seeds read from the cache and compare "
            "bit for bit; one that differs retrains the cell (default: 1 for command tasks, 0 "
            "for in-process models; 0: off)", metavar="N"),
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
            "rows a reviewer must read, failing first, IDENTICAL rows and widths within their "
            "max counted; under 10,000 characters) to PATH", metavar="PATH"),
    Option("json", "write every gate row with its numbers (Δ, interval, p, n, level, margin, "
            "δ, verdict) as JSON to PATH (docs/verdicts-json.md)", metavar="PATH"),
    Option("fail-unused", "fail the run when a baseline holds cells no gate used (after a "
            "run of the whole test; never after a partial run)", flag=True),
    Option("add-missing", "gates given a baseline write only the cells it lacks (a new model "
            "or task) and compare every other cell as usual (command line only)", flag=True,
            command_line_only=True),
    Option("accept", "with --graphnetz-update-baselines: accept this cell's loss (TASK/MODEL, "
            "repeatable or comma-separated): the ratchet lets it through and resets its anchor; "
            "every other cell keeps its anchor (command line only)", metavar="TASK/MODEL",
            repeat=True, command_line_only=True),
    Option("report-dir", "save each gated test's candidate report (full JSON, histories "
            "included) under DIR, e.g. for CI artifacts", metavar="DIR"),
    Option("deterministic", "deterministic CUDA algorithms per triple: on, warn (let an "
            "operation without one run, with a warning) or off (default on)",
            metavar="on|warn|off"),
    Option("calibrate", "also train each graphnetz_run's models under salted seeds (same "
            "data and splits) and write, beside each baseline, what δ its seeds resolve "
            "(<test>.calibration.json; see docs/calibrate.md)", flag=True),
    Option("executor", "train the triples on the executor this factory gives: "
            "`module:function` returning (or yielding) a concurrent.futures.Executor, e.g. a "
            "Dask client's, or a submitit executor (Slurm job arrays); docs/distributed.md",
            metavar="MODULE:FACTORY"),
    Option("accept-hardware", "pair a candidate with a baseline made on another kind of "
            "hardware (architecture, device, accelerator model): noted on each verdict instead "
            "of refused", flag=True),
    Option("baseline-replicates", "with --graphnetz-update-baselines: train each baseline "
            "seed R times (its run and R-1 salted reruns: same data and split) and pair every "
            "candidate seed with their mean (default 1; docs/gates.md)", metavar="R"),
    Option("remote-cache", "a team's shared triple cache beside the local one: any fsspec URL "
            "(s3://bucket/prefix, gs://..., file:///shared/mount); read on a local miss, "
            "written only with --graphnetz-remote-cache-write (docs/cache.md)", metavar="URL"),
    Option("remote-cache-write", "also write what this run trains to the remote cache "
            "(create-only; for CI, docs/cache.md)", flag=True),
    Option("shard", "train only shard I of N's share of the triples (counted from 1: 1/4 .. "
            "4/4), balanced by expected cost, and gate nothing: each graphnetz test is skipped "
            "with what it trained (docs/distributed.md)", metavar="I/N"),
    Option("cache-only", "train nothing: a triple the cache (local or remote) lacks fails its "
            "test, named (the gate job after the shard jobs)", flag=True),
    Option("plan", "train nothing: write the triples the caches lack as JSON to PATH (what "
            "`graphnetz plan` prints); a test whose triples are missing is skipped, one whose "
            "triples are all cached is gated (an adaptive gate then plans its next look)",
            metavar="PATH"),
    Option("mlflow", "export every gate call to MLflow at the session's end: a parent run per "
            "call, a run per cell, a run per seed (docs/mlflow.md); TRACKING_URI, or none: "
            "MLFLOW_TRACKING_URI (ini: a URI, or `default`)", metavar="TRACKING_URI",
            const="default"),
    Option("mlflow-no-series", "with --graphnetz-mlflow: do not send the per-epoch series "
            "(they can be large)", flag=True),
)



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
            optional = {} if option.const is None else {"nargs": "?", "const": option.const}
            group.addoption(flag, default=None, dest=option.dest, metavar=option.metavar,
                            help=option.help, action="append" if option.repeat else "store",
                            **optional)
            parser.addini(option.dest, option.help, default=None)


def any_given(config: pytest.Config) -> bool:
    """Whether this session sets any option of ours: on the command line, or as an ini key
    (``-o`` included) that holds another value than the one a session without it reads."""
    for option in OPTIONS:
        if config.getoption(option.dest) is not None:
            return True
        try:
            value = config.getini(option.dest)
        except (ValueError, pytest.UsageError):  # not a truth value: reading it says so
            return True
        unset = False if option.flag and not option.command_line_only else None
        if value is not unset:
            return True
    return False


def uses_fixtures(item: Any) -> bool:
    """Whether test ``item`` asks for one of our fixtures."""
    return not FIXTURES.isdisjoint(getattr(item, "fixturenames", ()))


def is_graphnetz_test(item: Any) -> bool:
    """Whether test ``item`` is a graphnetz test: it uses our fixtures or our marker."""
    return uses_fixtures(item) or item.get_closest_marker(MARKER) is not None


def gates_imported() -> bool:
    """Whether a module of this process imported the gates (a test module, at collection)."""
    return "pytest_graphnetz.gates" in sys.modules


__all__ = ["DEFAULT_ALPHA", "DEFAULT_SEEDS", "FIXTURES", "MARKER", "MIN_ALPHA", "OPTIONS",
           "RESOLVABLE", "Option", "add_options", "any_given", "gates_imported",
           "is_graphnetz_test", "uses_fixtures"]
