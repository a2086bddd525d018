"""The ``graphnetz`` command: look at a report, gate one outside pytest, refresh baselines.

    graphnetz show REPORT [--ci t|bootstrap]
    graphnetz compare BASELINE REPORT [--gate not-worse|better|equivalent] [--test paired]
                      [--margin 0] [--min-effect D] [--alpha 0.05] [--strict] [--markdown]
    graphnetz refresh [PYTEST ARGS...] [--accept TASK/MODEL]
    graphnetz calibrate [PYTEST ARGS...]
    graphnetz plot REPORT [CANDIDATE] -o FILE.png [--ci t|bootstrap] [--gate ...] [--margin]
    graphnetz latex REPORT [-o FILE.tex] [--ci t|bootstrap]
    graphnetz markdown REPORT [-o FILE.md] [--ci t|bootstrap]
    graphnetz history DIR -o OUTDIR [--anchor COMMIT] [--alpha 0.05]
    graphnetz bisect GOOD BAD [--seeds 10] [--max-seeds 40] [--min-effect D] [--alpha 0.05]
                     [--cache-dir DIR] -- [PYTEST ARGS...]
    graphnetz next-seeds VERDICTS.json --budget N [--current N]

One small function per subcommand, registered in :func:`build_parser`. Exit codes: 0 success,
1 a gate failed (``compare``: a failing cell; ``history``: a cell drifts; ``bisect``: a search
stopped undecided) and nothing else, 2 a usage or input error (a bad argument, a file that is
missing, malformed or a directory, a refused pairing or bisect), said in one line. Heavy imports
stay inside the functions (``history`` and ``bisect`` live in :mod:`.trend`, :mod:`.trendpage`
and :mod:`.bisection`).
"""

from __future__ import annotations

import argparse
import math
import sys
import traceback
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING

from .text import code_block, fmt_num, inline_code

if TYPE_CHECKING:
    from .report import BenchmarkReport
    from .verdicts.values import CellVerdict

EXIT_OK, EXIT_FAILED, EXIT_UNUSABLE = 0, 1, 2
GATES = {"not-worse": "not_worse", "better": "better", "equivalent": "equivalent"}


# -- argument types: a bad value is a usage error (exit 2) naming the argument -------------------

def _seed_count(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a whole number of seeds, got {text!r}") \
            from None
    if value < 2:
        raise argparse.ArgumentTypeError(f"must be at least 2 seeds, got {value}")
    return value


def _alpha(text: str) -> float:
    alpha = _float(text)
    if not 0.0 < alpha < 0.5:
        raise argparse.ArgumentTypeError(f"must lie in (0, 0.5), got {text}")
    return alpha


def _margin(text: str) -> float:
    margin = _float(text)
    if not margin >= 0.0:
        raise argparse.ArgumentTypeError(
            f"must be >= 0 (a tolerated loss in metric units), got {text}")
    return margin


def _positive(text: str) -> float:
    value = _float(text)
    if not value > 0.0:
        raise argparse.ArgumentTypeError(f"must be > 0, got {text}")
    return value


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


class _Parser(argparse.ArgumentParser):
    """argparse, but a usage error is one line (and exit code 2), not the usage block."""

    def error(self, message: str) -> None:  # type: ignore[override]
        self.exit(EXIT_UNUSABLE, f"{self.prog}: error: {message} (see `{self.prog} -h`)\n")


# -- subcommands ---------------------------------------------------------------------------------

def cmd_show(args: argparse.Namespace) -> int:
    """Print a report's per-cell summary table (mean, interval, spread, seeds)."""
    from .report.model import load_report

    report = load_report(args.report, args.ci)
    print(f"{args.report}: {report!r}")
    print(report.summary())
    diverged = report.diverged()
    if diverged:
        print(f"diverged triples (NaN, kept): {diverged}")
    return EXIT_OK


# What the gate options default to when neither the command line nor the report says.
GATE_DEFAULTS = {"gate": "not-worse", "test": "paired", "margin": 0.0, "min_effect": None,
                 "alpha": 0.05, "strict": False}


def gate_settings(args: argparse.Namespace, candidate: BenchmarkReport) -> list[str]:
    """Fill the gate options not given on the command line from the gate that judged
    ``candidate`` in pytest (a report saved by --graphnetz-report-dir records its gate's
    settings in ``protocol["gates"]``), else from :data:`GATE_DEFAULTS`. Returns the options
    taken from the report, so that ``graphnetz compare BASE CAND`` gives the gate's verdicts."""
    calls = [c for c in candidate.protocol.get("gates") or [] if isinstance(c, dict)]
    recorded = dict(calls[0]) if calls else {}
    if len({c.get("min_effect") for c in calls}) > 1:
        # One call's cells with different δ: each metric's default (0.01 for accuracy, none
        # for MAE), which is what None gives again.
        recorded["min_effect"] = None
    if "gate" in recorded:
        recorded["gate"] = {v: k for k, v in GATES.items()}.get(recorded["gate"])
    taken = []
    for key, default in GATE_DEFAULTS.items():
        if getattr(args, key, None) is not None:
            continue   # given on the command line: it wins
        value = recorded.get(key)
        setattr(args, key, default if value is None else value)
        if key in recorded and (value is not None or key == "min_effect"):
            taken.append(key)
    return taken


def _verdicts(args: argparse.Namespace, baseline: BenchmarkReport,
              candidate: BenchmarkReport) -> list[CellVerdict]:
    from .gates import compare_reports
    from .gates.compare import TESTS

    taken = gate_settings(args, candidate)
    if taken:
        shown = ", ".join(f"{k.replace('_', ' ')} {getattr(args, k)}" for k in taken)
        print(f"gate settings recorded in {args.report}: {shown}", file=sys.stderr)
    if args.gate == "equivalent" and not args.margin > 0:
        raise ValueError("--gate equivalent needs the equivalence bound --margin > 0")
    return compare_reports(candidate, baseline, gate=GATES[args.gate], test=TESTS[args.test],
                           margin=args.margin, min_effect=args.min_effect, alpha=args.alpha,
                           strict=getattr(args, "strict", False), source=args.baseline)


def _load_pair(args: argparse.Namespace) -> tuple[BenchmarkReport, BenchmarkReport]:
    from .baselines import load_baseline
    from .report import BenchmarkReport

    return load_baseline(args.baseline), BenchmarkReport.from_json(args.report)


def cmd_compare(args: argparse.Namespace) -> int:
    """The chosen gate of REPORT against BASELINE: every cell's verdict; exit 1 on a failure."""
    from .verdicts.formatting import gate_table

    baseline, candidate = _load_pair(args)
    verdicts = _verdicts(args, baseline, candidate)
    failed = [v for v in verdicts if v.failed]
    if args.markdown:
        print(compare_markdown(verdicts, args), end="")
    else:
        print(gate_table(verdicts))
        for verdict in failed:
            print()
            print(verdict.message())
    return EXIT_FAILED if failed else EXIT_OK


def compare_markdown(verdicts: Sequence[CellVerdict], args: argparse.Namespace) -> str:
    """``compare --markdown``: a headline, the verdict table and each failing cell's message."""
    from .verdicts.formatting import gate_table

    failed = [v for v in verdicts if v.failed]
    gate = f"{args.gate} gate ({verdicts[0].comparison.test}, alpha {fmt_num(args.alpha)}, " \
           f"margin {fmt_num(args.margin)})"
    headline = (f"**{len(failed)} of {len(verdicts)} cell(s) failed the {gate}**" if failed
                else f"All {len(verdicts)} cell(s) pass the {gate}.")
    parts = [f"### graphnetz compare: {inline_code(args.report)} against "
             f"{inline_code(args.baseline)}", "", headline, "",
             gate_table(verdicts, markdown=True)]
    if failed:
        # A fence longer than any backtick run in the messages (a model named a```b).
        parts += ["", "<details><summary>Why it failed</summary>", "",
                  code_block("\n\n".join(v.message() for v in failed)), "", "</details>"]
    return "\n".join(parts) + "\n"


def cmd_refresh(args: argparse.Namespace) -> int:
    """Run pytest with ``--graphnetz-update-baselines`` (and the given pytest arguments)."""
    import pytest

    return int(pytest.main([*accept_options(args.pytest_args), "--graphnetz-update-baselines"]))


def accept_options(argv: Sequence[str]) -> list[str]:
    """``--accept TASK/MODEL`` (or ``--accept=TASK/MODEL``) as pytest's
    ``--graphnetz-accept=TASK/MODEL``: accept that cell's loss, every other anchor kept."""
    out, items = [], iter(argv)
    for arg in items:
        if arg == "--accept":
            out.append(f"--graphnetz-accept={next(items, '')}")
        elif arg.startswith("--accept="):
            out.append("--graphnetz-accept=" + arg.removeprefix("--accept="))
        else:
            out.append(arg)
    return out


def cmd_calibrate(args: argparse.Namespace) -> int:
    """Run pytest with ``--graphnetz-calibrate``: each gated test's models are trained again
    under salted seeds, and what δ its seeds resolve is printed and stored beside its baseline
    (see docs/calibrate.md)."""
    import pytest

    return int(pytest.main([*args.pytest_args, "--graphnetz-calibrate"]))


def cmd_next_seeds(args: argparse.Namespace) -> int:
    """Print the seed count of the next look a CI job takes while a cell is INCONCLUSIVE
    (the most any open row's next look asks for, capped at ``--budget``) and exit 0; print
    nothing and exit 1 when there is none (every row decided, the budget reached); say why on
    stderr either way (docs/ci.md)."""
    import json

    from .nextlook import next_look

    with open(args.verdicts, encoding="utf-8") as fh:
        try:
            data = json.load(fh)
        except json.JSONDecodeError as exc:
            raise ValueError(f"{args.verdicts}: not JSON ({exc})") from None
    try:
        look = next_look(data, budget=args.budget, current=args.current)
    except ValueError as exc:
        raise ValueError(f"{args.verdicts}: {exc}") from None
    print(f"graphnetz next-seeds: {look.why}", file=sys.stderr)
    if look.seeds is None:
        return EXIT_FAILED
    print(look.seeds)
    return EXIT_OK


def cmd_plot(args: argparse.Namespace) -> int:
    """REPORT: its forest plot. REPORT CANDIDATE: the paired comparison of CANDIDATE against
    REPORT as the baseline (per-cell Δ with its interval, per-seed dots, verdicts marked)."""
    from .plots import plot_comparison, plot_forest
    from .report.model import load_report

    if args.candidate is None:
        plot_forest(load_report(args.report, args.ci), path=args.output)
        return EXIT_OK
    args.baseline, args.report = args.report, args.candidate
    baseline, candidate = _load_pair(args)
    plot_comparison(_verdicts(args, baseline, candidate), path=args.output,
                    reports=(baseline, candidate))
    return EXIT_OK


def cmd_latex(args: argparse.Namespace) -> int:
    """Print (or write with -o) a report's booktabs LaTeX table."""
    from .export import to_latex

    return _write_view(to_latex, args)


def cmd_markdown(args: argparse.Namespace) -> int:
    """Print (or write with -o) a report's Markdown table and findings."""
    from .export import to_markdown

    return _write_view(to_markdown, args)


def _write_view(render: Callable[[BenchmarkReport], str], args: argparse.Namespace) -> int:
    """Print the view ``render`` makes of REPORT, or write it atomically to ``-o``."""
    from pathlib import Path

    from .report.files import write_text_atomic
    from .report.model import load_report

    text = render(load_report(args.report, args.ci))
    if args.output is None:
        sys.stdout.write(text)
    else:
        write_text_atomic(Path(args.output), text)
    return EXIT_OK


def cmd_history(args: argparse.Namespace) -> int:
    """Each cell's trajectory across the commit folders of DIR, a page and figures, and the
    drift check against the anchor (exit 1 when a cell drifts); see docs/history-bisect.md."""
    from .trendpage import run_history

    return run_history(args.directory, args.output, anchor=args.anchor, alpha=args.alpha)


def cmd_bisect(args: argparse.Namespace) -> int:
    """The first commit between GOOD and BAD that regressed each cell BAD regressed on (exit 1:
    a search stopped undecided; 2: a refusal); see docs/history-bisect.md."""
    from .bisection import BisectRefusal, run_bisect

    try:
        return run_bisect(args.good, args.bad, args.pytest_args, seeds=args.seeds,
                          max_seeds=args.max_seeds, alpha=args.alpha,
                          min_effect=args.min_effect, margin=args.margin or 0.0,
                          cache_dir=args.cache_dir)
    except BisectRefusal as exc:
        print(f"graphnetz bisect: refused: {exc}", file=sys.stderr)
        return EXIT_UNUSABLE


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


def build_parser() -> argparse.ArgumentParser:
    parser = _Parser(
        prog="graphnetz", description="Statistically aware regression testing of GNNs.")
    from . import __version__  # (the package is loaded already: this module is in it)

    parser.add_argument("--version", action="version",
                        version=f"graphnetz (pytest-graphnetz) {__version__}")
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")

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
    compare.set_defaults(func=cmd_compare)

    plot = sub.add_parser("plot", help="forest plot of REPORT, or the paired comparison of "
                                       "CANDIDATE against REPORT")
    plot.add_argument("report", type=_report_file, help="a report (the baseline, with CANDIDATE)")
    plot.add_argument("candidate", type=_report_file, nargs="?", default=None,
                      help="a candidate report: draw the paired comparison")
    plot.add_argument("-o", "--output", required=True, help="file to write (PNG, SVG, PDF...)")
    plot.add_argument("--ci", choices=("t", "bootstrap"), default=None,
                      help="forest plot: interval method (default: the report's)")
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

    refresh = sub.add_parser(
        "refresh", help="rewrite baselines: pytest --graphnetz-update-baselines [PYTEST ARGS]")
    refresh.add_argument("pytest_args", nargs=argparse.REMAINDER,
                         help="passed to pytest (e.g. tests/test_models.py --graphnetz-seeds=10)")
    refresh.set_defaults(func=cmd_refresh)

    calibrate = sub.add_parser(
        "calibrate", help="what δ each cell's seeds resolve, from a rerun under salted seeds: "
                          "pytest --graphnetz-calibrate [PYTEST ARGS]")
    calibrate.add_argument("pytest_args", nargs=argparse.REMAINDER,
                           help="passed to pytest (e.g. tests/test_models.py "
                                "--graphnetz-seeds=10 --graphnetz-min-effect=0.02)")
    calibrate.set_defaults(func=cmd_calibrate)

    history = sub.add_parser("history", help="each cell across commits: an HTML page, figures "
                                             "and a drift check (exit 1 on drift)")
    history.add_argument("directory", help="one folder per commit (commit.json, reports/)")
    history.add_argument("-o", "--output", required=True, help="folder for index.html and the "
                                                               "PNG figures")
    history.add_argument("--anchor", help="the commit (id or prefix) to check drift against "
                                          "(default: the oldest)")
    history.add_argument("--alpha", type=_alpha, default=0.05,
                         help="family-wise level of the drift check (default 0.05)")
    history.set_defaults(func=cmd_history)

    bisect = sub.add_parser("bisect", help="the commit that regressed a cell: GOOD BAD -- "
                                           "[PYTEST ARGS]")
    bisect.add_argument("good", help="a commit that does not have the regression")
    bisect.add_argument("bad", help="a later commit that does")
    bisect.add_argument("--seeds", type=_seed_count, default=10,
                        help="seeds per probe (default 10)")
    bisect.add_argument("--max-seeds", type=_seed_count, default=40,
                        help="an undecided probe doubles its seeds up to this (default 40)")
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
    return parser


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
    elif unknown:
        parser.error(f"unrecognized arguments: {' '.join(unknown)}")
    if getattr(args, "gate", None) == "equivalent" and args.margin is not None \
            and not args.margin > 0:
        parser.error("argument --margin: --gate equivalent needs the equivalence bound "
                     "--margin > 0")
    if getattr(args, "min_effect", None) is not None and args.margin is not None \
            and not args.min_effect > args.margin:
        parser.error(f"argument --min-effect: δ ({fmt_num(args.min_effect)}) must be larger "
                     f"than --margin ({fmt_num(args.margin)}): it is the smallest regression "
                     "that matters")
    from .baselines import BaselineError
    from .verdicts.values import GateRefusal

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


def _one_line(exc: BaseException) -> str:
    text = " ".join(str(exc).split())
    if isinstance(exc, OSError) and exc.filename is not None and exc.strerror:
        text = f"{exc.filename}: {exc.strerror}"
    return text or type(exc).__name__


if __name__ == "__main__":
    sys.exit(main())
