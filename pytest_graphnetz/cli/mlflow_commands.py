"""``graphnetz compare --mlflow`` and ``graphnetz export mlflow``: the command's side of MLflow.

``compare --mlflow BASELINE CANDIDATE`` reads each side's runs into a report
(``BenchmarkReport.from_mlflow``) and hands the two reports to the one ``compare`` path: the
same table, exit codes and JSON as two report files give. ``export mlflow FILE`` sends a
session's gate calls (a JSON verdict file and the candidate reports it saved, or one saved
report) to MLflow through :mod:`pytest_graphnetz.plugin.mlflow_export`, as
``--graphnetz-mlflow`` does at a session's end.
"""

from __future__ import annotations

import argparse
import json
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from pytest_graphnetz.gates.verdicts.values import CellVerdict
    from pytest_graphnetz.report import BenchmarkReport


def load_mlflow_pair(args: argparse.Namespace) -> tuple[BenchmarkReport, BenchmarkReport]:
    """The baseline and candidate reports of ``compare --mlflow`` (each side
    ``EXPERIMENT[:FILTER]``); runs whose seed the other side lacks are refused by name."""
    from pytest_graphnetz.report import BenchmarkReport
    from pytest_graphnetz.report.mlflow_runs import (
        MlflowInputError,
        MlflowRunsError,
        RunSelection,
        unpaired_runs,
    )

    pair_by = args.pair_by or "seed"
    if args.direction is None:
        from pytest_graphnetz.report.epochs import MetricSpec

        try:
            MetricSpec.from_name(args.metric)
        except ValueError:
            raise ValueError(f"--metric {args.metric}: its direction cannot be told from its "
                             "name; add --direction higher or --direction lower") from None
    reports = []
    for option, text in (("BASELINE", args.baseline), ("CANDIDATE", args.report)):
        side = RunSelection.parse(text)
        if not side.experiment:
            raise ValueError(f"{option} {text!r}: give EXPERIMENT[:FILTER], an experiment name "
                             "or id and an optional MLflow filter string")
        try:
            reports.append(BenchmarkReport.from_mlflow(
                side.experiment, metric=args.metric, filter_string=side.filter_string,
                tracking_uri=args.tracking_uri, best_by=args.best_by, pair_by=pair_by,
                task_param=args.task_param, model_param=args.model_param,
                higher_is_better=None if args.direction is None
                else args.direction == "higher"))
        except (MlflowInputError, MlflowRunsError) as exc:
            raise type(exc)(f"{option} {text!r}: {exc}") from None
    baseline, candidate = reports
    unpaired = unpaired_runs(baseline.protocol["mlflow"]["runs"],
                             candidate.protocol["mlflow"]["runs"], pair_by)
    if unpaired:
        raise MlflowRunsError("; ".join(unpaired) + " (log the missing runs, or filter the "
                                                    "extra ones out)")
    return baseline, candidate


def write_verdicts_json(path: str, verdicts: Sequence[CellVerdict], *, test: str) -> None:
    """``compare --json PATH``: the verdicts as the plugin's JSON verdict file, ``test`` in
    place of a node id (docs/verdicts-json.md)."""
    from pytest_graphnetz.plugin.summary import GateSummary, verdict_stats
    from pytest_graphnetz.report.files import write_text_atomic

    rows = [{"test": test, **v.row(), "stats": verdict_stats(v)} for v in verdicts]
    failed = any(v.failed for v in verdicts)
    summary = GateSummary(rows=rows, failures={test: "a gate failed"} if failed else {},
                          exitstatus=1 if failed else 0)
    write_text_atomic(Path(path), json.dumps(summary.to_json(), indent=1) + "\n")


def export_mlflow(args: argparse.Namespace) -> int:
    """``graphnetz export mlflow FILE``: a JSON verdict file's gate calls (with ``--reports``:
    the per-seed runs from the reports saved there), or one saved report's recorded calls."""
    from pytest_graphnetz.base.text import exception_line
    from pytest_graphnetz.plugin.mlflow_export import MlflowTracker
    from pytest_graphnetz.plugin.tracker import gate_calls, git_commit
    from pytest_graphnetz.report import BenchmarkReport
    from pytest_graphnetz.report.codec import read_json
    from pytest_graphnetz.report.mlflow_runs import MlflowInputError

    data = read_json(Path(args.file))
    is_verdicts = data.get("schema") == "pytest-graphnetz/verdicts"
    if args.reports and not (is_verdicts and Path(args.reports).is_dir()):
        raise ValueError(f"--reports {args.reports}: give the folder --graphnetz-report-dir "
                         "wrote, with the session's JSON verdict file (a saved report holds "
                         "its seeds itself)")
    if is_verdicts:
        reports = [BenchmarkReport.from_json(p)
                   for p in sorted(Path(args.reports).rglob("*.json"))] if args.reports else []
        verdicts = data
    else:
        report = BenchmarkReport.from_json(args.file)
        reports, verdicts = [report], {"rows": _report_rows(report, args.file)}
    calls = gate_calls(verdicts, reports, git_commit(Path.cwd()))
    tracker = MlflowTracker(args.tracking_uri)
    from mlflow.exceptions import MlflowException

    try:
        done = tracker.export(calls, series=not args.no_series)
    except (MlflowException, OSError) as exc:   # a store that is down or refuses
        raise MlflowInputError(f"--tracking-uri {tracker.client.tracking_uri}: the export "
                               f"failed ({exception_line(exc, 300)}); start the "
                               "server, or give --tracking-uri (or MLFLOW_TRACKING_URI) of a "
                               "store that is up; exporting again adds only what is "
                               "missing") from None
    print(f"{len(calls)} gate call(s) exported to {tracker.where}: {done.created} run(s) "
          f"created, {done.existing} already there")
    return 0


def _report_rows(report: BenchmarkReport, source: str) -> list[dict[str, object]]:
    """A saved report's gate calls as rows without verdicts (the report holds the seeds and
    the call's settings, not the baseline): one row per cell each call judged."""
    calls = [c for c in report.protocol.get("gates") or [] if isinstance(c, dict)]
    if not calls:
        raise ValueError(f"{source}: the report records no gate call (save it with "
                         "--graphnetz-report-dir), so there is nothing to export; export the "
                         "session's JSON verdict file (--graphnetz-json) with --reports")
    return [{"test": c.get("node", source), "cell": cell, "gate": c.get("gate"),
             "verdict": "NOT COMPARED",
             "note": "the report holds the seeds, not the verdict: export the session's JSON "
                     "verdict file (--graphnetz-json) for it",
             "stats": {k: c.get(k) for k in ("alpha", "margin", "min_effect")}}
            for c in calls for cell in c.get("cells") or []]
