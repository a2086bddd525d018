"""The ``graphnetz`` command: look at a report, gate one outside pytest, refresh baselines
(``graphnetz -h``; docs/outside-pytest.md, docs/history-bisect.md, docs/distributed.md).

This module is the command line: the argument types (a bad value is a usage error naming the
argument), the parser (:func:`build_parser`) and :func:`main`, which runs one small function
per subcommand (:mod:`.subcommands`). Exit codes: 0 success, 1 a gate failed (``compare``: a
failing cell; ``history``: a cell drifts; ``bisect``: a search stopped undecided) and nothing
else, 2 a usage or input error (a bad argument, a file that is missing, malformed or a
directory, a refused pairing or bisect), said in one line, 3 ``bisect`` found nothing
regressed. Heavy imports stay inside the functions.
"""

from __future__ import annotations

import argparse
import math
import sys
import traceback
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from pytest_graphnetz.base.text import exception_line, fmt_num
from pytest_graphnetz.cli.subcommands import (
    EXIT_UNUSABLE,
    GATES,
    cmd_bisect,
    cmd_calibrate,
    cmd_compare,
    cmd_export,
    cmd_history,
    cmd_latex,
    cmd_markdown,
    cmd_next_seeds,
    cmd_plot,
    cmd_prune,
    cmd_refresh,
    cmd_show,
)

# -- argument types: a bad value is a usage error (exit 2) naming the argument -------------------

def _seed_count(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a whole number of seeds, got {text!r}") \
            from None
    if value < 2:
        raise argparse.ArgumentTypeError(
            f"must be at least 2 seeds (a paired test needs 2), got {value}")
    return value


def _checked(test: Callable[[float], bool], requirement: str) -> Callable[[str], float]:
    """An argument type: a finite number for which ``test`` holds, else "must {requirement}"."""
    def parse(text: str) -> float:
        value = _float(text)
        if not test(value):
            raise argparse.ArgumentTypeError(f"must {requirement}, got {text}")
        return value
    return parse


def _float(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a number, got {text!r}") from None
    if not math.isfinite(value):
        raise argparse.ArgumentTypeError(f"expected a finite number, got {text}")
    return value


def _report_file(text: str) -> str:
    if Path(text).is_dir():
        raise argparse.ArgumentTypeError(
            f"{text} is a directory; give a report JSON file (e.g. one that "
            "--graphnetz-report-dir or report.to_json wrote)")
    return text


_alpha = _checked(lambda v: 0.0 < v < 0.5, "lie in (0, 0.5)")
_margin = _checked(lambda v: v >= 0.0, "be >= 0 (a tolerated loss in metric units)")
_positive = _checked(lambda v: v > 0.0, "be > 0")


# The compare options that only --mlflow reads.
MLFLOW_ONLY = ("tracking_uri", "metric", "best_by", "pair_by", "task_param", "model_param",
               "direction")


class _Parser(argparse.ArgumentParser):
    """argparse, but a usage error is one line (and exit code 2), not the usage block."""

    def error(self, message: str) -> None:  # type: ignore[override]
        self.exit(EXIT_UNUSABLE, f"{self.prog}: error: {message} (see `{self.prog} -h`)\n")



def _gate_arguments(parser: argparse.ArgumentParser) -> None:
    # Defaults None: a gate option not given is read from the candidate report when the gate
    # that saved it recorded it (gate_settings), else GATE_DEFAULTS.
    recorded = "; default: the candidate report's gate (when recorded), else"
    parser.add_argument("--gate", choices=tuple(GATES), default=None,
                        help="not-worse (fails on REGRESSED), better (passes only on BETTER) or "
                             f"equivalent (TOST within ±margin){recorded} not-worse")
    parser.add_argument("--test", default=None,
                        choices=("paired", "paired-t", "wilcoxon", "permutation", "bootstrap"),
                        help=f"the paired test{recorded} paired (the t test)")
    parser.add_argument("--margin", type=_margin, default=None,
                        help=f"tolerated loss (equivalent: the ±bound), metric units{recorded} 0")
    parser.add_argument("--min-effect", type=_positive, default=None,
                        help="not-worse: the smallest regression that matters (δ > margin, metric "
                             f"units){recorded} 0.01 for metrics in [0, 1], none for "
                             "MAE/RMSE/loss")
    parser.add_argument("--alpha", type=_alpha, default=None,
                        help=f"one-sided significance level, in (0, 0.5){recorded} 0.05")
    parser.add_argument("--first-look", type=_seed_count, default=None,
                        help="the schedule's first look in seeds (the project's "
                             f"graphnetz_seeds): only the seeds 0..n-1, n >= it, decide{recorded} "
                             "10")
    parser.add_argument("--single-run", action="store_true", default=None,
                        help="judge these seeds alone at alpha, whatever they are (not "
                             "rerun-safe), as pytest's --graphnetz-single-run")


def _mlflow_arguments(parser: argparse.ArgumentParser) -> None:
    group = parser.add_argument_group(
        "runs logged to MLflow", "--mlflow: BASELINE and REPORT are EXPERIMENT[:FILTER], an "
        "experiment name or id and an optional MLflow filter string (docs/mlflow.md)")
    group.add_argument("--mlflow", action="store_true",
                       help="judge runs logged to MLflow instead of report files")
    _tracking_uri(group)
    group.add_argument("--metric", default=None,
                       help="the metric that gives each run's value (required with --mlflow)")
    group.add_argument("--best-by", default=None, metavar="VAL_METRIC",
                       help="take the metric at the epoch (step) this validation metric is "
                            "best (default: the metric's last value)")
    group.add_argument("--pair-by", default=None,
                       help="the whole-number param that pairs runs (default: seed)")
    group.add_argument("--task-param", default=None,
                       help="the param naming each run's task or dataset (default: one task)")
    group.add_argument("--model-param", default=None,
                       help="the param naming each run's model (default: one model)")
    group.add_argument("--direction", choices=("higher", "lower"), default=None,
                       help="which way the metric is better (default: detected from its name: "
                            "accuracy, AUC, MRR, Hits@K higher; MAE, RMSE, loss lower)")


def _tracking_uri(parser: Any) -> None:
    parser.add_argument("--tracking-uri", default=None,
                        help="the MLflow tracking store (default: MLFLOW_TRACKING_URI)")


def build_parser() -> argparse.ArgumentParser:
    parser = _Parser(
        prog="graphnetz", description="Statistically aware regression testing of GNNs.")
    from pytest_graphnetz import (
        __version__,  # (the package is loaded already: this module is in it)
    )

    parser.add_argument("--version", action="version",
                        version=f"graphnetz (pytest-graphnetz) {__version__}")
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")

    _add_report_commands(sub)
    _add_render_commands(sub)
    from pytest_graphnetz.cli.distributed import add_parsers

    add_parsers(sub)
    _add_pytest_commands(sub)
    _add_history_commands(sub)
    return parser


def _add_report_commands(sub: Any) -> None:
    """``show``, ``compare`` and ``export``: a report read, gated against a baseline, sent to
    a tracker."""
    show = sub.add_parser("show", help="summary table of a report")
    show.add_argument("report", type=_report_file, help="a report JSON file")
    show.add_argument("--ci", choices=("t", "bootstrap"), default=None,
                      help="interval method (default: the report's)")
    show.set_defaults(func=cmd_show)

    compare = sub.add_parser("compare", help="gate REPORT against BASELINE (exit 1 on a failure)")
    compare.add_argument("baseline", type=_report_file, help="the baseline report JSON file")
    compare.add_argument("report", type=_report_file, help="the candidate report JSON file")
    _gate_arguments(compare)
    compare.add_argument("--strict", action="store_true", default=None,
                         help="INCONCLUSIVE fails too")
    compare.add_argument("--markdown", action="store_true",
                         help="print GitHub Markdown (e.g. for a pull-request comment)")
    compare.add_argument("--accept-hardware", action="store_true",
                         help="pair reports made on different kinds of hardware (architecture, "
                              "device, accelerator model): noted on each verdict, not refused")
    compare.add_argument("--json", metavar="PATH", default=None,
                         help="also write the verdicts as the plugin's JSON verdict file "
                              "(docs/verdicts-json.md)")
    _mlflow_arguments(compare)
    compare.set_defaults(func=cmd_compare)

    export = sub.add_parser("export", help="send a session's gates to a tracker: export mlflow "
                                           "FILE")
    trackers = export.add_subparsers(dest="tracker", required=True, metavar="TRACKER")
    to_mlflow = trackers.add_parser(
        "mlflow", help="a parent run per gate call, a child per cell, a run per seed "
                       "(docs/mlflow.md); idempotent")
    to_mlflow.add_argument("file", type=_report_file,
                           help="a JSON verdict file (--graphnetz-json) or a saved report")
    to_mlflow.add_argument("--reports", default=None, metavar="DIR",
                           help="with a verdict file: the candidate reports the session saved "
                                "(--graphnetz-report-dir), for the per-seed runs")
    _tracking_uri(to_mlflow)
    to_mlflow.add_argument("--no-series", action="store_true",
                           help="do not send the per-epoch series (they can be large)")
    to_mlflow.set_defaults(func=cmd_export)


def _add_render_commands(sub: Any) -> None:
    """``plot``, ``latex`` and ``markdown``: a report drawn or written as a table."""
    plot = sub.add_parser("plot", help="forest plot of REPORT, or the paired comparison of "
                                       "CANDIDATE against REPORT")
    plot.add_argument("report", type=_report_file, help="a report (the baseline, with CANDIDATE)")
    plot.add_argument("candidate", type=_report_file, nargs="?", default=None,
                      help="a candidate report: draw the paired comparison")
    plot.add_argument("-o", "--output", required=True, help="file to write (PNG, SVG, PDF...)")
    plot.add_argument("--ci", choices=("t", "bootstrap"), default=None,
                      help="forest plot: interval method (default: the report's)")
    plot.add_argument("--tuning", action="store_true",
                      help="draw the expected-max tuning curves of the tuned reports instead")
    _gate_arguments(plot)
    plot.set_defaults(func=cmd_plot)

    for name, func, text in (("latex", cmd_latex, "booktabs LaTeX table of a report"),
                             ("markdown", cmd_markdown, "Markdown table and findings")):
        view = sub.add_parser(name, help=text)
        view.add_argument("report", type=_report_file, help="a report JSON file")
        view.add_argument("-o", "--output", help="file to write (default: stdout)")
        view.add_argument("--ci", choices=("t", "bootstrap"), default=None,
                          help="interval method (default: the report's)")
        view.set_defaults(func=func)


def _add_pytest_commands(sub: Any) -> None:
    """``refresh``, ``prune`` and ``calibrate``: pytest runs of the gates with one purpose each."""
    refresh = sub.add_parser(
        "refresh", help="rewrite baselines: pytest --graphnetz-update-baselines [PYTEST ARGS]")
    refresh.add_argument("pytest_args", nargs=argparse.REMAINDER,
                         help="passed to pytest (e.g. tests/test_models.py --graphnetz-seeds=10)")
    refresh.set_defaults(func=cmd_refresh)

    prune = sub.add_parser(
        "prune", help="list the baseline cells no gate used (a full passing run of the gates: "
                      "[--yes] [PYTEST ARGS]); --yes removes them from their files")
    prune.add_argument("--yes", action="store_true",
                       help="remove the cells listed (default: only list them)")
    prune.add_argument("pytest_args", nargs=argparse.REMAINDER,
                       help="passed to pytest (e.g. tests/ -m graphnetz)")
    prune.set_defaults(func=cmd_prune)

    calibrate = sub.add_parser(
        "calibrate", help="what δ each cell's seeds resolve, per training budget too, from a "
                          "rerun under salted seeds: [-o FIGURE] pytest --graphnetz-calibrate "
                          "[PYTEST ARGS]")
    calibrate.add_argument("pytest_args", nargs=argparse.REMAINDER,
                           help="passed to pytest (e.g. tests/test_models.py "
                                "--graphnetz-seeds=10 --graphnetz-min-effect=0.02)")
    calibrate.set_defaults(func=cmd_calibrate)


def _add_history_commands(sub: Any) -> None:
    """``history``, ``bisect`` and ``next-seeds``: a cell across commits, the commit that
    regressed it, and the CI loop's next look."""
    history = sub.add_parser("history", help="each cell across commits: an HTML page, figures "
                                             "and a drift check (exit 1 on drift)")
    history.add_argument("directory", help="one folder per commit (commit.json, reports/)")
    history.add_argument("-o", "--output", required=True, help="folder for index.html and the "
                                                               "SVG figures")
    history.add_argument("--anchor", help="the commit (id or prefix) to check drift against "
                                          "(default: the oldest)")
    history.add_argument("--alpha", type=_alpha, default=0.05,
                         help="family-wise level of the drift check (default 0.05)")
    history.add_argument("--reuse-share", type=_positive, default=0.5,
                         help="test-set reuse budget: the share of δ the next read's reuse "
                              "term may take (default 0.5)")
    history.add_argument("--reuse-delta", type=_positive, default=None,
                         help="test-set reuse budget: δ in metric units (default: the gates' "
                              "recorded min_effect, else 0.01 for a metric in [0, 1])")
    history.add_argument("--reuse-beta", type=_alpha, default=0.05,
                         help="test-set reuse budget: the guarantee's failure probability "
                              "(default 0.05)")
    history.set_defaults(func=cmd_history)

    bisect = sub.add_parser(
        "bisect", help="the commit that regressed a cell: GOOD BAD -- [PYTEST ARGS]",
        usage="graphnetz bisect GOOD BAD [options] -- [PYTEST ARGS ...]",
        description="Probe commits between GOOD and BAD (a git worktree and a pytest run each; "
                    "what follows `--` is each probe's pytest command line) and name, per cell "
                    "BAD regressed on, the first commit that regressed it.",
        epilog="exit status: 0 every culprit named; 1 a search stopped undecided (the output "
               "says what δ its seeds resolve); 2 a refusal (bad input, a probe that cannot be "
               "built); 3 nothing regressed (BAD reads same against GOOD on every cell). See "
               "docs/history-bisect.md.")
    bisect.add_argument("good", help="a commit that does not have the regression")
    bisect.add_argument("bad", help="a later commit that does")
    bisect.add_argument("--seeds", type=_seed_count, default=10,
                        help="seeds per probe (default 10)")
    bisect.add_argument("--max-seeds", type=_seed_count, default=None,
                        help="the budget: an undecided probe takes the next look of the "
                             "schedule (twice the seeds) up to this (default 160: 10 → 20 → 40 "
                             "→ 80 → 160)")
    bisect.add_argument("--min-effect", type=_positive, default=None,
                        help="δ, the smallest regression that matters (default: the metric's)")
    bisect.add_argument("--margin", type=_margin, default=None, help="tolerated loss (default 0)")
    bisect.add_argument("--alpha", type=_alpha, default=0.05,
                        help="error level of the whole search (default 0.05)")
    bisect.add_argument("--cache-dir", default=None,
                        help="the triple cache every probe shares (default: a temporary one)")
    bisect.set_defaults(func=cmd_bisect)

    nxt = sub.add_parser(
        "next-seeds", help="the seed count of the next look while a gate row is INCONCLUSIVE "
                           "(exit 0 and print it; exit 1 and print nothing: none to take)")
    nxt.add_argument("verdicts", help="the JSON verdict file of the run (--graphnetz-json)")
    nxt.add_argument("--budget", type=_seed_count, required=True,
                     help="the most seeds a pull request may run (the baselines must hold them)")
    nxt.add_argument("--current", type=_seed_count, default=None,
                     help="the seeds the run used (default: the most any row used)")
    nxt.set_defaults(func=cmd_next_seeds)



def main(argv: Sequence[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    parser = build_parser()
    pytest_tail: list[str] = []
    if "--" in argv and "bisect" in argv[:argv.index("--")]:
        # bisect GOOD BAD -- PYTEST ARGS: what follows `--` is each probe's pytest command line.
        at = argv.index("--")
        argv, pytest_tail = argv[:at], argv[at + 1:]
    args, unknown = parser.parse_known_args(argv)
    if args.command == "bisect":
        args.pytest_args = pytest_tail
    if args.command in ("refresh", "calibrate"):
        # Everything after the command is pytest's, in order (-k, -x, --graphnetz-seeds ...).
        args.pytest_args = argv[argv.index(args.command) + 1:]
    elif args.command == "plan":
        from pytest_graphnetz.cli.distributed import plan_arguments

        try:
            args.shards, args.pytest_args = plan_arguments(argv[argv.index("plan") + 1:])
        except ValueError as exc:
            parser.error(str(exc))
    elif args.command == "prune":
        rest = argv[argv.index(args.command) + 1:]
        args.yes, args.pytest_args = "--yes" in rest, [a for a in rest if a != "--yes"]
    elif unknown:
        parser.error(f"unrecognized arguments: {' '.join(unknown)}")
    if args.command == "compare":
        _check_mlflow_arguments(parser, args)
    if getattr(args, "gate", None) == "equivalent" and args.margin is not None \
            and not args.margin > 0:
        parser.error("argument --margin: --gate equivalent needs the equivalence bound "
                     "--margin > 0")
    if getattr(args, "min_effect", None) is not None and args.margin is not None \
            and not args.min_effect > args.margin:
        parser.error(f"argument --min-effect: δ ({fmt_num(args.min_effect)}) must be larger "
                     f"than --margin ({fmt_num(args.margin)}): it is the smallest regression "
                     "that matters")
    from pytest_graphnetz.gates.refreshing.baselines import BaselineError
    from pytest_graphnetz.gates.verdicts.values import GateRefusal

    try:
        return args.func(args)
    except GateRefusal as exc:
        # Not a verdict but not a bare error either: the refusal says why, and for a data
        # change what it did, unpaired.
        print(f"graphnetz {args.command}: refused: {exc}", file=sys.stderr)
        return EXIT_UNUSABLE
    except (OSError, ValueError, BaselineError, ImportError) as exc:
        # A missing, unreadable or malformed file (ReportFormatError is a ValueError), or the
        # optional matplotlib: one line, never a traceback, never exit 1 (a failed gate).
        print(f"graphnetz {args.command}: {_one_line(exc)}", file=sys.stderr)
        return EXIT_UNUSABLE
    except (RecursionError, MemoryError) as exc:
        print(f"graphnetz {args.command}: the input is too large or too deeply nested to read "
              f"({type(exc).__name__})", file=sys.stderr)
        return EXIT_UNUSABLE
    except Exception:
        # A bug of ours: the traceback helps the report, and exit 1 would read as a failed gate.
        traceback.print_exc()
        print(f"graphnetz {args.command}: internal error (please report it with the traceback "
              "above)", file=sys.stderr)
        return EXIT_UNUSABLE


def _check_mlflow_arguments(parser: argparse.ArgumentParser, args: argparse.Namespace) -> None:
    given = [f"--{k.replace('_', '-')}" for k in MLFLOW_ONLY if getattr(args, k) is not None]
    if not args.mlflow and given:
        parser.error(f"argument {given[0]}: it reads runs logged to MLflow; add --mlflow")
    if args.mlflow and args.metric is None:
        parser.error("argument --mlflow: name the metric that gives each run's value, e.g. "
                     "--metric test_acc")


def _one_line(exc: BaseException) -> str:
    if isinstance(exc, OSError) and exc.filename is not None and exc.strerror:
        return f"{exc.filename}: {exc.strerror}"
    return exception_line(exc)

