"""The ``graphnetz`` subcommands: one function per subcommand, from parsed arguments to an
exit code.

Each ``cmd_*`` takes the :class:`argparse.Namespace` that
:func:`pytest_graphnetz.cli.main.build_parser`
made and returns :data:`EXIT_OK`, :data:`EXIT_FAILED` (a gate failed: ``compare``'s failing
cell, ``history``'s drift, ``bisect`` stopped undecided, ``next-seeds`` with none to take) or
:data:`EXIT_UNUSABLE` (a refusal); an error they raise is turned into one line and exit 2 by
:func:`pytest_graphnetz.cli.main`. Heavy imports stay inside the functions.
"""

from __future__ import annotations

import argparse
import signal
import sys
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING

from pytest_graphnetz.base.text import code_block, fmt_num, inline_code

if TYPE_CHECKING:
    import pytest

    from pytest_graphnetz.gates.verdicts.values import CellVerdict
    from pytest_graphnetz.plugin.usage import BaselineUsage
    from pytest_graphnetz.report import BenchmarkReport
    from pytest_graphnetz.stats.boundaries import LookSchedule

EXIT_OK, EXIT_FAILED, EXIT_UNUSABLE = 0, 1, 2
GATES = {"not-worse": "not_worse", "better": "better", "equivalent": "equivalent"}


def cmd_show(args: argparse.Namespace) -> int:
    """Print a report's per-cell summary table (mean, interval, spread, seeds)."""
    from pytest_graphnetz.report.model import load_report

    report = load_report(args.report, args.ci)
    print(f"{args.report}: {report!r}")
    print(report.summary())
    diverged = report.diverged()
    if diverged:
        print(f"diverged triples (NaN, kept): {diverged}")
    return EXIT_OK


# What the gate options default to when neither the command line nor the report says.
GATE_DEFAULTS = {"gate": "not-worse", "test": "paired", "margin": 0.0, "min_effect": None,
                 "alpha": 0.05, "strict": False, "first_look": 10, "single_run": False}


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
              candidate: BenchmarkReport, bound: LookSchedule | None = None
              ) -> list[CellVerdict]:
    from pytest_graphnetz.gates import compare_reports
    from pytest_graphnetz.gates.comparing.compare import TESTS
    from pytest_graphnetz.gates.comparing.pairing import refuse_other_hardware

    taken = gate_settings(args, candidate)
    if taken:
        shown = ", ".join(f"{k.replace('_', ' ')} {getattr(args, k)}" for k in taken)
        print(f"gate settings recorded in {args.report}: {shown}", file=sys.stderr)
    if args.gate == "equivalent" and not args.margin > 0:
        raise ValueError("--gate equivalent needs the equivalence bound --margin > 0")
    # `plot` draws a comparison without gating it: another kind of hardware is only noted.
    refuse_other_hardware(candidate, baseline, args.baseline,
                          accept=getattr(args, "accept_hardware", True))
    # As a gate in pytest: only the canonical seeds decide (a seed set off the schedule is
    # refused, one line and exit 2) unless --single-run judges them alone at alpha.
    return compare_reports(candidate, baseline, gate=GATES[args.gate], test=TESTS[args.test],
                           margin=args.margin, min_effect=args.min_effect, alpha=args.alpha,
                           strict=getattr(args, "strict", False), source=args.baseline,
                           rerun_safe=not args.single_run, first_look=args.first_look,
                           canonical=True, alone_reason=ALONE, bound=bound)


def _load_pair(args: argparse.Namespace
               ) -> tuple[BenchmarkReport, BenchmarkReport, LookSchedule]:
    """The baseline, the candidate and the schedule the baseline binds (``--first-look`` and
    ``--alpha`` other than it are refused unless ``--single-run``)."""
    from pytest_graphnetz.gates.refreshing.baselines import read_baseline
    from pytest_graphnetz.report import BenchmarkReport

    stored = read_baseline(args.baseline)
    return stored.report, BenchmarkReport.from_json(args.report), stored.schedule


# Why `compare --single-run` judges alone, as its rows and messages say; and the line it prints
# above its verdicts.
ALONE = "not rerun-safe (--single-run)"
SINGLE_RUN = f"judged alone at α: {ALONE}"


def cmd_compare(args: argparse.Namespace) -> int:
    """The chosen gate of REPORT against BASELINE: every cell's verdict; exit 1 on a failure."""
    from pytest_graphnetz.gates.verdicts.formatting import gate_table

    if args.mlflow:
        from pytest_graphnetz.cli.mlflow_commands import load_mlflow_pair

        # runs in a tracker store no schedule: they bind none, as a report in memory
        (baseline, candidate), bound = load_mlflow_pair(args), None
    else:
        baseline, candidate, bound = _load_pair(args)
    verdicts = _verdicts(args, baseline, candidate, bound)
    failed = [v for v in verdicts if v.failed]
    if args.json:
        from pytest_graphnetz.cli.mlflow_commands import write_verdicts_json

        write_verdicts_json(args.json, verdicts,
                            test=f"graphnetz compare {args.baseline} {args.report}")
    if args.markdown:
        print(compare_markdown(verdicts, args), end="")
    else:
        if args.single_run:
            print(SINGLE_RUN)
        print(gate_table(verdicts))
        for verdict in failed:
            print()
            print(verdict.message())
    return EXIT_FAILED if failed else EXIT_OK


def cmd_export(args: argparse.Namespace) -> int:
    """``export mlflow FILE``: a session's gate calls and their seeds as MLflow runs."""
    from pytest_graphnetz.cli.mlflow_commands import export_mlflow

    return export_mlflow(args)


def compare_markdown(verdicts: Sequence[CellVerdict], args: argparse.Namespace) -> str:
    """``compare --markdown``: a headline, the verdict table and each failing cell's message."""
    from pytest_graphnetz.gates.verdicts.formatting import gate_table

    failed = [v for v in verdicts if v.failed]
    gate = (f"{args.gate} gate ({verdicts[0].comparison.evidence.test}, alpha "
            f"{fmt_num(args.alpha)}, margin {fmt_num(args.margin)})")
    headline = (f"**{len(failed)} of {len(verdicts)} cell(s) failed the {gate}**" if failed
                else f"All {len(verdicts)} cell(s) pass the {gate}.")
    if args.single_run:
        headline += f" {SINGLE_RUN}."
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


class UnusedCells:
    """A pytest plugin object for ``graphnetz prune``: after the session, the baseline cells no
    gate used (the plugin's own :class:`~.plugin.usage.BaselineUsage` finds them) as absolute
    paths, and whether the run could tell."""

    def __init__(self) -> None:
        self.cells: dict[Path, list[tuple[str, str]]] = {}
        self.checked = False
        self.usage: BaselineUsage | None = None  # the session's, once it starts

    def pytest_sessionstart(self, session: pytest.Session) -> None:
        from pytest_graphnetz.plugin import session_of

        self.usage = session_of(session.config).usage  # a run of plain tests too: it can tell

    def pytest_unconfigure(self, config: pytest.Config) -> None:
        if (usage := self.usage) is None:
            return
        self.checked = usage.cells_checked
        for file, cell in usage.unused_cells:
            path = Path(file) if Path(file).is_absolute() else config.rootpath / file
            task, _, model = cell.partition("/")
            self.cells.setdefault(path, []).append((task, model))


def cmd_prune(args: argparse.Namespace) -> int:
    """Run the gates (pytest with the given arguments), then list the baseline cells no gate
    used, and with ``--yes`` remove them from their files (docs/baselines.md). A cell is
    unused when a run of whole test modules passed and none of the tests handed its file gated
    it; a partial or failing run finds none, and prune says so. Exit 0 when it listed or
    removed them (or found none), pytest's exit code when the gates did not pass, 2 for
    arguments prune cannot take."""
    import pytest

    from pytest_graphnetz.gates.refreshing.ratchet import drop_cells
    from pytest_graphnetz.report.session_files import shown

    pytest_args = [a for a in args.pytest_args if a != "--"]
    if any(a.startswith(("--graphnetz-update-baselines", "--graphnetz-force")) for a in
           pytest_args):
        print("graphnetz prune: runs the gates as they are; refresh with `graphnetz refresh` "
              "first, then prune", file=sys.stderr)
        return EXIT_UNUSABLE
    found = UnusedCells()
    status = int(pytest.main(pytest_args, plugins=[found]))
    if status != 0:
        print(f"graphnetz prune: the gates did not pass (pytest exit {status}); a cell is "
              "unused only when a full run passes: nothing removed")
        return status
    if not found.checked:
        print("graphnetz prune: this run cannot tell which cells are unused (a -k, a node id, "
              "--lf, or a skipped test that uses a baseline): run the whole test modules; "
              "nothing removed")
        return EXIT_UNUSABLE
    if not found.cells:
        print("graphnetz prune: every cell of every baseline the tests use is gated; nothing "
              "to remove")
        return EXIT_OK
    verb = "removed" if args.yes else "would remove"
    for path, cells in sorted(found.cells.items()):
        dropped, kept = drop_cells(path, cells, write=args.yes)
        name = shown(path, Path.cwd())
        if dropped:
            print(f"graphnetz prune: {name}: {verb} {', '.join(f'{t}/{m}' for t, m in dropped)}")
        if kept:
            print(f"graphnetz prune: {name}: kept {', '.join(f'{t}/{m}' for t, m in kept)} "
                  "(unused, but its task and its model still have gated cells, or the file "
                  "would be left empty: a baseline is a task × model grid)")
    if not args.yes:
        print("graphnetz prune: nothing written; rerun with --yes to remove them, then "
              "commit the diff")
    return EXIT_OK


def cmd_calibrate(args: argparse.Namespace) -> int:
    """Run pytest with ``--graphnetz-calibrate``: each gated test's models are trained again
    under salted seeds, and what δ its seeds resolve, per training budget too, is printed and
    stored beside its baseline (see docs/calibrate.md). ``-o FILE`` first: also the figure of
    the budgets (:func:`~.calibration.figure.plot_budgets`). Exit 0 when every test that failed
    had written its calibration (a missing baseline is reported, not a failure of calibrate);
    else pytest's exit code."""
    import pytest

    figure, pytest_args = figure_option(args.pytest_args)
    outcome = CalibrateOutcome()
    code = int(pytest.main([*pytest_args, "--graphnetz-calibrate"], plugins=[outcome]))
    if figure is not None:
        if outcome.files:
            _plot_calibrations(outcome.files, figure)
        else:
            print(f"graphnetz calibrate: no figure written to {figure}: no calibration file "
                  "was written", file=sys.stderr)
    calibrated_failures = [n for n in outcome.failed if n in outcome.calibrated]
    for nodeid in calibrated_failures:
        print(f"graphnetz calibrate: {nodeid}: calibration written; the test itself failed "
              f"({outcome.failed[nodeid]}), which is not a failure of calibrate",
              file=sys.stderr)
    if code == pytest.ExitCode.TESTS_FAILED and outcome.failed \
            and len(calibrated_failures) == len(outcome.failed):
        return EXIT_OK
    return code


def figure_option(argv: Sequence[str]) -> tuple[str | None, list[str]]:
    """``graphnetz calibrate -o FILE [PYTEST ARGS]``: the figure's file and pytest's arguments.
    Only a leading ``-o FILE`` / ``--output FILE`` / ``--output=FILE`` is the figure's; pytest's
    own ``-o NAME=VALUE`` (an ini override) has an ``=`` and stays pytest's."""
    argv = list(argv)
    if argv and argv[0].startswith("--output="):
        return argv[0].removeprefix("--output="), argv[1:]
    if len(argv) > 1 and argv[0] in ("-o", "--output") and "=" not in argv[1]:
        return argv[1], argv[2:]
    return None, argv


class CalibrateOutcome:
    """A pytest plugin object for ``graphnetz calibrate``: per test, whether it failed (and the
    first line of why) and whether it wrote a calibration, and the files written; it reads the
    reports' ``user_properties``, so it works under pytest-xdist too."""

    def __init__(self) -> None:
        self.failed: dict[str, str] = {}
        self.calibrated: set[str] = set()
        self.files: list[str] = []

    def pytest_runtest_logreport(self, report: pytest.TestReport) -> None:
        import json
        import re

        from pytest_graphnetz.base.text import first_line
        from pytest_graphnetz.plugin.keys import CALIBRATION_PROPERTY

        if report.failed and report.nodeid not in self.failed:
            crash = getattr(report.longrepr, "reprcrash", None)
            why = first_line(str(getattr(crash, "message", None) or report.longreprtext
                                 or report.when))
            # "pytest_graphnetz...BaselineMissingError: no baseline at ...": the words
            self.failed[report.nodeid] = re.sub(r"^[\w.]+\.\w+: ", "", why)
        if report.when != "teardown":
            return
        for name, value in report.user_properties:
            if name != CALIBRATION_PROPERTY:
                continue
            files = [f for row in json.loads(str(value)) for f in row["files"]]
            if files:
                self.calibrated.add(report.nodeid)
            self.files += [f for f in files if f not in self.files]


def _plot_calibrations(files: Sequence[str], figure: str) -> None:
    """The figure of the calibrations in ``files``, or one line on stderr saying why not."""
    from pytest_graphnetz.gates.calibration.figure import plot_budgets
    from pytest_graphnetz.gates.calibration.store import read_calibration, read_min_effects

    deltas: dict[tuple[str, str], float | None] = {}
    for file in files:
        deltas.update(read_min_effects(file))
    try:
        plot_budgets([read_calibration(f) for f in files], figure, min_effect=deltas)
    except (ImportError, ValueError) as exc:
        print(f"graphnetz calibrate: no figure written to {figure}: {exc}", file=sys.stderr)
        return
    print(f"graphnetz calibrate: figure of the training budgets written to {figure}")


def cmd_next_seeds(args: argparse.Namespace) -> int:
    """Print the seed count of the next look a CI job takes while a cell is INCONCLUSIVE
    (the most any open row's next look asks for, capped at ``--budget``) and exit 0; print
    nothing and exit 1 when there is none (every row decided, the budget reached); say why on
    stderr either way (docs/ci.md)."""
    from pytest_graphnetz.cli.nextlook import next_look
    from pytest_graphnetz.report.codec import read_json

    data = read_json(Path(args.verdicts), what="verdict file")
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
    from pytest_graphnetz.report.model import load_report
    from pytest_graphnetz.report.plots import plot_comparison, plot_forest

    if args.tuning:
        return plot_tuning_curves(args)
    if args.candidate is None:
        plot_forest(load_report(args.report, args.ci), path=args.output)
        return EXIT_OK
    args.baseline, args.report = args.report, args.candidate
    baseline, candidate, _ = _load_pair(args)   # a figure, not a gate: not bound
    plot_comparison(_verdicts(args, baseline, candidate), path=args.output,
                    reports=(baseline, candidate))
    return EXIT_OK


def plot_tuning_curves(args: argparse.Namespace) -> int:
    """``plot --tuning REPORT [CANDIDATE]``: each tuned report's expected-max curve (its search
    record: a saved report's, or the summary a committed baseline keeps)."""
    from pytest_graphnetz.gates.refreshing.baselines import load_baseline
    from pytest_graphnetz.report.plots import plot_tuning
    from pytest_graphnetz.report.trials import record_of

    arms = {"baseline": args.report} if args.candidate is not None else {"report": args.report}
    if args.candidate is not None:
        arms["candidate"] = args.candidate
    records = {}
    for arm, path in arms.items():
        record = record_of(load_baseline(path).protocol)
        if record is None:
            raise ValueError(f"{path}: no tuning record (not a report from tune()); "
                             "drop --tuning to draw its forest plot")
        records[arm] = record
    plot_tuning(records, path=args.output)
    return EXIT_OK


def cmd_latex(args: argparse.Namespace) -> int:
    """Print (or write with -o) a report's booktabs LaTeX table."""
    from pytest_graphnetz.report.export import to_latex

    return _write_view(to_latex, args)


def cmd_markdown(args: argparse.Namespace) -> int:
    """Print (or write with -o) a report's Markdown table and findings."""
    from pytest_graphnetz.report.export import to_markdown

    return _write_view(to_markdown, args)


def _write_view(render: Callable[[BenchmarkReport], str], args: argparse.Namespace) -> int:
    """Print the view ``render`` makes of REPORT, or write it atomically to ``-o``."""
    from pathlib import Path

    from pytest_graphnetz.report.files import write_text_atomic
    from pytest_graphnetz.report.model import load_report

    text = render(load_report(args.report, args.ci))
    if args.output is None:
        sys.stdout.write(text)
    else:
        write_text_atomic(Path(args.output), text)
    return EXIT_OK


def cmd_history(args: argparse.Namespace) -> int:
    """Each cell's trajectory across the commit folders of DIR, a page and figures, and the
    drift check against the anchor (exit 1 when a cell drifts); see docs/history-bisect.md."""
    from pytest_graphnetz.cli.history.ledger import ReuseBudget
    from pytest_graphnetz.cli.history.page import run_history

    try:
        return run_history(args.directory, args.output, anchor=args.anchor, alpha=args.alpha,
                           reuse=ReuseBudget(share=args.reuse_share, beta=args.reuse_beta,
                                             delta=args.reuse_delta))
    except KeyboardInterrupt:
        # Ctrl-C while it reads or draws: one line, not a traceback (each file it writes is
        # written whole or not at all).
        print("graphnetz history: interrupted; every file it wrote is whole, the page is "
              "updated only by a run that ends: run it again", file=sys.stderr)
        return 128 + signal.SIGINT


def cmd_bisect(args: argparse.Namespace) -> int:
    """The first commit between GOOD and BAD that regressed each cell BAD regressed on (exit 1:
    a search stopped undecided; 2: a refusal; 3: nothing regressed, BAD reads same against
    GOOD on every cell); see docs/history-bisect.md."""
    from pytest_graphnetz.cli.bisection import search
    from pytest_graphnetz.cli.bisection.probes import (
        EXIT_NOTHING_REGRESSED,
        Interrupted,
        run_bisect,
    )

    settings = search.SearchSettings(args.seeds, args.max_seeds or search.DEFAULT_MAX_SEEDS,
                                     args.alpha, args.min_effect, args.margin or 0.0)
    try:
        return run_bisect(args.good, args.bad, args.pytest_args, settings,
                          cache_dir=args.cache_dir)
    except search.BisectRefusal as exc:
        print(f"graphnetz bisect: refused: {exc}", file=sys.stderr)
        return EXIT_UNUSABLE
    except search.NothingRegressed as exc:
        print(f"graphnetz bisect: {'undecided' if exc.undecided else 'nothing regressed'}: "
              f"{exc}", file=sys.stderr)
        return EXIT_FAILED if exc.undecided else EXIT_NOTHING_REGRESSED
    except Interrupted as exc:
        print(f"graphnetz bisect: {exc}; its worktrees and probes are removed", file=sys.stderr)
        return 128 + exc.signum


__all__ = ["EXIT_FAILED", "EXIT_OK", "EXIT_UNUSABLE", "GATES", "GATE_DEFAULTS", "accept_options",
           "cmd_bisect", "cmd_calibrate", "cmd_compare", "cmd_history", "cmd_latex", "cmd_prune",
           "cmd_markdown", "cmd_next_seeds", "cmd_plot", "cmd_refresh", "cmd_show",
           "CalibrateOutcome", "compare_markdown", "figure_option", "gate_settings"]
