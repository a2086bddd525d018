"""Remote cache overhead: a fully remote-cached session against a fully local-cached one, on
loopback (a moto S3 server in this process, driven through s3fs as a user's bucket).

A generated project (two tiny CSBM tasks, 8 and 2 epochs, GCN and GraphSAGE) is trained once
with ``--graphnetz-remote-cache-write``. Then, per round, alternating:

- local: a fresh pytest process whose local cache already holds every triple;
- remote: a fresh pytest process on an empty local cache, every triple read from the bucket
  (fetched, verified, copied locally).

Printed: the median wall of each and the paired ratio remote / local (target <= 1.5), and the
same for the ``run_benchmark`` call alone in this process (no interpreter start or imports:
the cache path's own cost). Results: ``remote_cache_results.md``.

    .venv/bin/python benchmarks/remote_cache.py               # 10 seeds, 3 rounds
    .venv/bin/python benchmarks/remote_cache.py --quick       # 3 seeds, 1 round
"""

from __future__ import annotations

import argparse
import os
import shutil
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
BUCKET = "bench"

PROJECT = {
    "models.py": '''
from pytest_graphnetz import Task
from pytest_graphnetz.runner.tasks.synthetic import CSBM, load_csbm


def tiny(root, *, seed):
    return load_csbm(CSBM("tiny", num_classes=3, nodes_per_class=20, p_in=0.2, p_out=0.03,
                          num_features=8, mean_norm=1.0), root, seed)


def gcn(in_channels, out_channels):
    from torch_geometric.nn import GCN

    return GCN(in_channels, 16, 2, out_channels)


def sage(in_channels, out_channels):
    from torch_geometric.nn import GraphSAGE

    return GraphSAGE(in_channels, 16, 2, out_channels)


TASKS = {"long": Task("long", tiny, epochs=8), "short": Task("short", tiny, epochs=2)}
MODELS = {"GCN": gcn, "SAGE": sage}
''',
    "test_run.py": '''
from models import MODELS, TASKS


def test_run(graphnetz_run):
    graphnetz_run(TASKS, MODELS)
''',
}


def start_server() -> str:
    import logging

    from moto.server import ThreadedMotoServer

    logging.getLogger("werkzeug").setLevel(logging.ERROR)   # one line per request otherwise
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    ThreadedMotoServer(ip_address="127.0.0.1", port=port, verbose=False).start()
    endpoint = f"http://127.0.0.1:{port}"
    os.environ.update(AWS_ACCESS_KEY_ID="bench", AWS_SECRET_ACCESS_KEY="bench",
                      AWS_DEFAULT_REGION="us-east-1", AWS_ENDPOINT_URL=endpoint)
    import boto3

    boto3.client("s3", endpoint_url=endpoint).create_bucket(Bucket=BUCKET)
    return endpoint


def session(project: Path, cache: Path, seeds: int, *extra: str) -> float:
    cmd = [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-p", "no:randomly",
           f"--graphnetz-seeds={seeds}", f"--graphnetz-cache-dir={cache}", *extra]
    start = time.perf_counter()
    done = subprocess.run(cmd, cwd=project, capture_output=True, text=True,
                          env={**os.environ, "PYTHONPATH": str(REPO)})
    wall = time.perf_counter() - start
    if done.returncode != 0 or f"0 trained, {4 * seeds} from cache" not in done.stdout \
            and "--graphnetz-remote-cache-write" not in extra:
        raise SystemExit(f"{' '.join(cmd)}:\n{done.stdout[-3000:]}\n{done.stderr[-2000:]}")
    return wall


def in_process(project: Path, cache: Path, seeds: int, url: str | None) -> float:
    sys.path.insert(0, str(project))
    from models import MODELS, TASKS

    from pytest_graphnetz import run_benchmark
    from pytest_graphnetz.runner import remote

    remote.open_remote.cache_clear()
    start = time.perf_counter()
    run_benchmark(TASKS, MODELS, seeds=range(seeds), device="cpu", cache_dir=cache,
                  remote_cache=url, root=str(project / "data"))
    return time.perf_counter() - start


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--seeds", type=int, default=10)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--quick", action="store_true", help="3 seeds, 1 round")
    args = parser.parse_args()
    seeds, repeats = (3, 1) if args.quick else (args.seeds, args.repeats)
    start_server()
    url = f"s3://{BUCKET}/graphnetz"
    with tempfile.TemporaryDirectory(prefix="graphnetz-remote-bench-") as scratch:
        work = Path(scratch)
        project = work / "project"
        project.mkdir()
        for name, text in PROJECT.items():
            (project / name).write_text(text)
        warm = work / "warm"
        session(project, warm, seeds, f"--graphnetz-remote-cache={url}",
                "--graphnetz-remote-cache-write")
        in_process(project, work / "imports", seeds, url)   # untimed: imports, first calls
        walls: dict[str, list[float]] = {"local": [], "remote": [], "local call": [],
                                         "remote call": []}
        for round_ in range(repeats):
            for kind in (("local", "remote") if round_ % 2 == 0 else ("remote", "local")):
                cache = work / f"{kind}-{round_}"
                if kind == "local":
                    shutil.copytree(warm, cache)
                walls[kind].append(session(project, cache, seeds,
                                           f"--graphnetz-remote-cache={url}"))
            for kind in ("local call", "remote call"):
                cache = work / f"{kind.replace(' ', '-')}-{round_}"
                if kind == "local call":
                    shutil.copytree(warm, cache)
                walls[kind].append(in_process(project, cache, seeds, url))
    med = {k: statistics.median(v) for k, v in walls.items()}
    ratios = [r / lo for r, lo in zip(walls["remote"], walls["local"], strict=True)]
    calls = [r / lo for r, lo in zip(walls["remote call"], walls["local call"], strict=True)]
    print(f"{4 * seeds} triples (2 tasks x 2 models x {seeds} seeds), {repeats} round(s), moto "
          "S3 on loopback through s3fs")
    print(f"session wall: local-cached {med['local']:.2f} s, remote-cached {med['remote']:.2f} s;"
          f" ratio remote/local {statistics.median(ratios):.2f} (target <= 1.5)")
    print(f"run_benchmark call: local {med['local call']:.3f} s, remote "
          f"{med['remote call']:.3f} s; ratio {statistics.median(calls):.2f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
