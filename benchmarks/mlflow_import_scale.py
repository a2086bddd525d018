"""Reading a large MLflow experiment into a report: time and peak memory against run count.

Logs ``--runs`` runs (default 10,000: 1,000 datasets × 10 seeds, one model, one ``test_acc``
value each) into a fresh local file store, then times ``BenchmarkReport.from_mlflow`` over
the first 100 datasets (1,000 runs) and over all of them, with Python's peak traced memory
(``tracemalloc``) during each read. Bounded memory means the peak grows with what the report
keeps (a few numbers per run), not with the pages MLflow returns: the read goes a page (1,000
runs) at a time. Printed and written to ``benchmarks/mlflow_import_scale_results.md``.

    .venv/bin/python benchmarks/mlflow_import_scale.py               # 10,000 runs
    .venv/bin/python benchmarks/mlflow_import_scale.py --runs 2000   # quick
"""

from __future__ import annotations

import argparse
import os
import tempfile
import time
import tracemalloc
from pathlib import Path

RESULTS = Path(__file__).with_name("mlflow_import_scale_results.md")
SEEDS = 10


def log(uri: str, runs: int) -> float:
    from mlflow.entities import Metric, Param
    from mlflow.tracking import MlflowClient

    client = MlflowClient(uri)
    exp = client.create_experiment("scale")
    start = time.perf_counter()
    for k in range(runs):
        run = client.create_run(exp).info.run_id
        client.log_batch(run, metrics=[Metric("test_acc", 0.5 + (k % 97) / 1000, 0, 0)],
                         params=[Param("dataset", f"d{k // SEEDS:05d}"),
                                 Param("seed", str(k % SEEDS))])
        client.set_terminated(run)
    return time.perf_counter() - start


def read(uri: str, filter_string: str) -> tuple[float, float, int]:
    """Seconds, peak traced MiB, runs read."""
    from pytest_graphnetz import BenchmarkReport

    tracemalloc.start()
    start = time.perf_counter()
    report = BenchmarkReport.from_mlflow("scale", metric="test_acc", tracking_uri=uri,
                                         filter_string=filter_string, task_param="dataset")
    seconds = time.perf_counter() - start
    peak = tracemalloc.get_traced_memory()[1] / 2**20
    tracemalloc.stop()
    return seconds, peak, len(report.tasks) * len(report.seeds)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=10_000)
    args = parser.parse_args()
    os.environ["MLFLOW_ALLOW_FILE_STORE"] = "true"
    with tempfile.TemporaryDirectory() as tmp:
        uri = (Path(tmp) / "mlruns").as_uri()
        logging = log(uri, args.runs)
        rows = []
        # the first 100 datasets (1,000 runs), then every run
        for label, filter_string in (("d000*", "params.dataset LIKE 'd000%'"), ("all", "")):
            seconds, peak, runs = read(uri, filter_string)
            rows.append(f"| {label} | {runs:,} | {seconds:.1f} | {peak:.1f} | "
                        f"{peak * 2**20 / runs / 1024:.1f} |")
            print(rows[-1], flush=True)
    lines = ["# Reading an MLflow experiment of many runs", "",
             f"`{Path(__file__).name} --runs {args.runs}`: {args.runs:,} runs logged to a local "
             f"file store in {logging:.0f} s, then read with `BenchmarkReport.from_mlflow` "
             "(pages of 1,000 runs). Peak: Python's traced memory during the read.", "",
             "| read | runs | seconds | peak MiB | KiB per run |", "|---|---|---|---|---|",
             *rows, "",
             "Shared 2-core machine under load: the seconds are wall time under that load."]
    RESULTS.write_text("\n".join(lines) + "\n")
    print("\n".join(lines))


if __name__ == "__main__":
    main()
