"""The ``graphnetz`` command: look at a report, gate one outside pytest, refresh baselines.

    graphnetz show REPORT [--ci t|bootstrap]
    graphnetz compare BASELINE REPORT [--test paired] [--margin 0] [--min-effect D]
                      [--alpha 0.05] [--strict]
    graphnetz refresh [PYTEST ARGS...]
    graphnetz plot REPORT -o FILE.png [--ci t|bootstrap]
    graphnetz latex REPORT [-o FILE.tex] [--ci t|bootstrap]
    graphnetz markdown REPORT [-o FILE.md] [--ci t|bootstrap]

One small function per subcommand, registered in :func:`build_parser`. Exit codes: 0 success,
1 a gate failed (``compare``: a REGRESSED cell), 2 a file or a comparison that cannot be used
(missing, malformed, newer schema, a refused pairing). Heavy imports stay inside the functions.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence

EXIT_OK, EXIT_FAILED, EXIT_UNUSABLE = 0, 1, 2


def cmd_show(args: argparse.Namespace) -> int:
    """Print a report's per-cell summary table (mean, interval, spread, seeds)."""
    from .export import load_report

    report = load_report(args.report, args.ci)
    print(f"{args.report}: {report!r}")
    print(report.summary())
    diverged = report.diverged()
    if diverged:
        print(f"diverged triples (NaN, kept): {diverged}")
    return EXIT_OK


def cmd_compare(args: argparse.Namespace) -> int:
    """The not-worse gate of REPORT against BASELINE: every cell's verdict; exit 1 on a failure."""
    from .baselines import load_baseline
    from .gates import TESTS, compare_reports, gate_table
    from .report import BenchmarkReport

    candidate = BenchmarkReport.from_json(args.report)
    verdicts = compare_reports(candidate, load_baseline(args.baseline), gate="not_worse",
                               test=TESTS[args.test], margin=args.margin,
                               min_effect=args.min_effect, alpha=args.alpha,
                               strict=args.strict, source=args.baseline)
    print(gate_table(verdicts))
    failed = [v for v in verdicts if v.failed]
    for verdict in failed:
        print()
        print(verdict.message())
    return EXIT_FAILED if failed else EXIT_OK


def cmd_refresh(args: argparse.Namespace) -> int:
    """Run pytest with ``--graphnetz-update-baselines`` (and the given pytest arguments)."""
    import pytest

    return int(pytest.main([*args.pytest_args, "--graphnetz-update-baselines"]))


def cmd_plot(args: argparse.Namespace) -> int:
    """Write a report's forest plot (PNG, or any format matplotlib infers from the suffix)."""
    from .plots import plot_command

    try:
        return plot_command(args.report, args.output, ci_method=args.ci)
    except ImportError as exc:  # matplotlib is the optional `plot` extra
        print(f"graphnetz plot: {exc}", file=sys.stderr)
        return EXIT_UNUSABLE


def cmd_latex(args: argparse.Namespace) -> int:
    """Print (or write with -o) a report's booktabs LaTeX table."""
    from .export import latex_command

    return latex_command(args.report, ci_method=args.ci, output=args.output)


def cmd_markdown(args: argparse.Namespace) -> int:
    """Print (or write with -o) a report's Markdown table and findings."""
    from .export import markdown_command

    return markdown_command(args.report, ci_method=args.ci, output=args.output)


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="graphnetz", description="Statistically aware regression testing of GNNs.")
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")

    show = sub.add_parser("show", help="summary table of a report")
    show.add_argument("report", help="a report JSON file")
    show.add_argument("--ci", choices=("t", "bootstrap"), default=None,
                      help="interval method (default: the report's)")
    show.set_defaults(func=cmd_show)

    compare = sub.add_parser("compare", help="gate REPORT against BASELINE (exit 1 on REGRESSED)")
    compare.add_argument("baseline", help="the baseline report JSON file")
    compare.add_argument("report", help="the candidate report JSON file")
    compare.add_argument("--test", default="paired",
                         choices=("paired", "paired-t", "wilcoxon", "permutation", "bootstrap"))
    compare.add_argument("--margin", type=float, default=0.0,
                         help="tolerated loss, in metric units (default 0)")
    compare.add_argument("--min-effect", type=float, default=None,
                         help="the smallest regression that matters (default 0.01 for metrics "
                              "in [0, 1], none for MAE/RMSE/loss)")
    compare.add_argument("--alpha", type=float, default=0.05, help="significance level")
    compare.add_argument("--strict", action="store_true", help="INCONCLUSIVE fails too")
    compare.set_defaults(func=cmd_compare)

    for name, func, text in (("plot", cmd_plot, "forest plot of a report"),
                             ("latex", cmd_latex, "booktabs LaTeX table of a report"),
                             ("markdown", cmd_markdown, "Markdown table and findings")):
        view = sub.add_parser(name, help=text)
        view.add_argument("report", help="a report JSON file")
        view.add_argument("-o", "--output", required=name == "plot",
                          help="file to write" + ("" if name == "plot" else " (default: stdout)"))
        view.add_argument("--ci", choices=("t", "bootstrap"), default=None,
                          help="interval method (default: the report's)")
        view.set_defaults(func=func)

    refresh = sub.add_parser(
        "refresh", help="rewrite baselines: pytest --graphnetz-update-baselines [PYTEST ARGS]")
    refresh.add_argument("pytest_args", nargs=argparse.REMAINDER,
                         help="passed to pytest (e.g. tests/test_models.py --graphnetz-seeds=10)")
    refresh.set_defaults(func=cmd_refresh)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    parser = build_parser()
    args, unknown = parser.parse_known_args(argv)
    if args.command == "refresh":
        # Everything after `refresh` is pytest's, in order (-k, -x, --graphnetz-seeds ...).
        args.pytest_args = argv[argv.index("refresh") + 1:]
    elif unknown:
        parser.error(f"unrecognized arguments: {' '.join(unknown)}")
    if args.command == "compare" and args.min_effect is not None \
            and not args.min_effect > args.margin:
        parser.error(f"--min-effect ({args.min_effect:g}) must be larger than --margin "
                     f"({args.margin:g}): δ is the smallest regression that matters")
    from .baselines import BaselineError
    from .gates import GateRefusal
    from .report import ReportFormatError

    try:
        return args.func(args)
    except (FileNotFoundError, ReportFormatError, BaselineError, GateRefusal) as exc:
        print(f"graphnetz {args.command}: {exc}", file=sys.stderr)
        return EXIT_UNUSABLE


if __name__ == "__main__":
    sys.exit(main())
