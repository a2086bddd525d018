"""What the MLflow export adds to the example gates' session (docs/mlflow.md).

Runs ``pytest examples`` once with a fresh triple cache (the session's own time, training
included), keeping its JSON verdict file and candidate reports; then exports that session to
a fresh MLflow store the way ``--graphnetz-mlflow`` does at a session's end (the same
:func:`~pytest_graphnetz.plugin.tracker.export_session`), with and without the per-epoch series,
and once more into the same store (a re-export: it must create 0 runs). Each export is timed
on the SQLite backend and on the local file store, ``--repeats`` times each (fresh store each
time). Printed and written to ``benchmarks/mlflow_export_results.md``.

    .venv/bin/python benchmarks/mlflow_export.py               # 3 repeats
    .venv/bin/python benchmarks/mlflow_export.py --repeats 1   # quick
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
RESULTS = Path(__file__).with_name("mlflow_export_results.md")


def session(work: Path) -> float:
    """``pytest examples`` with a fresh cache; its wall seconds."""
    start = time.perf_counter()
    subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:randomly", "examples",
                    f"--graphnetz-cache-dir={work / 'cache'}",
                    f"--graphnetz-json={work / 'v.json'}",
                    f"--graphnetz-report-dir={work / 'reports'}"], cwd=ROOT, check=False,
                   capture_output=True)
    return time.perf_counter() - start


def export(work: Path, uri: str, *, series: bool) -> tuple[float, str]:
    from pytest_graphnetz.plugin.mlflow_export import MlflowTracker
    from pytest_graphnetz.plugin.tracker import export_session

    verdicts = json.loads((work / "v.json").read_text())
    reports = sorted((work / "reports").rglob("*.json"))
    start = time.perf_counter()
    line = export_session(verdicts, reports, MlflowTracker(uri), root=ROOT, series=series)
    return time.perf_counter() - start, line


def _create_store(uri: str) -> None:
    from mlflow.tracking import MlflowClient

    MlflowClient(uri).search_experiments()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=3)
    args = parser.parse_args()
    os.environ["MLFLOW_ALLOW_FILE_STORE"] = "true"
    with tempfile.TemporaryDirectory() as tmp:
        work = Path(tmp)
        own = session(work)
        verdicts = json.loads((work / "v.json").read_text())
        lines = ["# MLflow export: what it adds to the example gates' session", "",
                 f"`{Path(__file__).name} --repeats {args.repeats}`; `pytest examples` (fresh "
                 f"cache, {len(verdicts['rows'])} gate rows): **{own:.1f} s** wall.", "",
                 "| store | series | export (median s) | min..max | re-export (s) | runs created |",
                 "|---|---|---|---|---|---|"]
        for kind in ("sqlite", "file"):
            for series in (True, False):
                times, again, said = [], [], ""
                for k in range(args.repeats):
                    uri = (f"sqlite:///{work}/{kind}-{series}-{k}.db" if kind == "sqlite"
                           else (work / f"{kind}-{series}-{k}").as_uri())
                    _create_store(uri)   # MLflow's migrations: once per store, not timed
                    seconds, said = export(work, uri, series=series)
                    times.append(seconds)
                    again_seconds, again_said = export(work, uri, series=series)
                    again.append(again_seconds)
                    assert "0 run(s) created" in again_said, again_said
                runs = said.rsplit(": ", 1)[-1].split(" run(s)")[0]   # "60 run(s) created"
                lines.append(f"| {kind} | {'yes' if series else 'no'} | "
                             f"{statistics.median(times):.2f} | {min(times):.2f}..{max(times):.2f}"
                             f" | {statistics.median(again):.2f} | {runs} |")
                print(lines[-1], flush=True)
        lines += ["", "Each store is created (MLflow's table migrations for SQLite) before the "
                  "timed export; `re-export` is the same session sent again (0 runs created: "
                  "idempotent). The machine is shared (2 cores, 8 users): times are wall "
                  "seconds under that load."]
    RESULTS.write_text("\n".join(lines) + "\n")
    print("\n".join(lines))


if __name__ == "__main__":
    main()
