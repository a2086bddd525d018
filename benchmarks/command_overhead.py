"""Per-triple overhead of a command task's script run: warm (forked from the fork server that
imported torch and PyG once) against cold (a fresh interpreter), and whether both give the
same values bit for bit.

The script imports torch and torch_geometric, reseeds, trains a linear layer on a small random
graph for a few epochs (``--epochs``) and records test, val and train loss: almost all of a
cold run is the interpreter's start and the imports. Each triple is timed from the runner's
side (``CommandExecutor.run``: tracing, process group, metrics file). Warm and cold triples
alternate (``_timing.interleaved``), so load drift on a shared machine hits both alike.

    nice -n 10 .venv/bin/python benchmarks/command_overhead.py   # 6 triples each, 1 epoch
    .venv/bin/python benchmarks/command_overhead.py --triples 20 --epochs 50
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))
from _timing import interleaved  # noqa: E402

SCRIPT = '''
import argparse
import torch
from torch_geometric.data import Data
from torch_geometric.nn import GCNConv
import pytest_graphnetz.script as graphnetz

parser = argparse.ArgumentParser()
parser.add_argument("--epochs", type=int, default=5)
args = parser.parse_args()
graphnetz.seed()
x, y = torch.randn(200, 16), torch.randint(0, 4, (200,))
edge_index = torch.randint(0, 200, (2, 800))
conv = GCNConv(16, 4)
opt = torch.optim.Adam(conv.parameters(), lr=0.01)
for epoch in range(args.epochs):
    opt.zero_grad()
    out = conv(x, edge_index)
    loss = torch.nn.functional.cross_entropy(out[:100], y[:100])
    loss.backward()
    opt.step()
    pred = conv(x, edge_index).argmax(1)
    graphnetz.record(test=float((pred[150:] == y[150:]).float().mean()),
                     val=float((pred[100:150] == y[100:150]).float().mean()),
                     train_loss=float(loss))
'''


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--triples", type=int, default=6, help="triples per variant")
    parser.add_argument("--epochs", type=int, default=1,
                        help="epochs the script trains (1: the run is almost all overhead)")
    parser.add_argument("--out", default=str(Path(__file__).with_name(
        "command_overhead_results.md")))
    opts = parser.parse_args()

    from pytest_graphnetz.runner.command import Command
    from pytest_graphnetz.runner.command import warm as command_warm
    from pytest_graphnetz.runner.command.run import CommandExecutor

    imports = time.perf_counter()
    subprocess.run([sys.executable, "-c", "import torch, torch_geometric"], check=True)
    import_seconds = time.perf_counter() - imports

    with tempfile.TemporaryDirectory() as tmp, CommandExecutor() as commands:
        Path(tmp, "train.py").write_text(SCRIPT)
        cmd = Command([sys.executable, "train.py", "--epochs", str(opts.epochs)], cwd=tmp)
        run = dict(task="t", model="m", metric="accuracy", device="cpu", threads=1,
                   deterministic="off")
        start = time.perf_counter()
        commands.run(cmd, seed=999, **run)   # a first run: cold, shows the script imports torch
        first = time.perf_counter() - start
        start = time.perf_counter()
        commands.run(cmd, seed=998, **run)   # starts the server (its imports, once)
        server_start = time.perf_counter() - start
        values: dict[str, list] = {"warm": [], "cold": []}
        seeds = {"warm": iter(range(opts.triples)), "cold": iter(range(opts.triples))}

        def variant(name: str):
            def go() -> None:
                if name == "cold":
                    os.environ[command_warm.WARM_ENV] = "0"
                try:
                    values[name].append(commands.run(cmd, seed=next(seeds[name]), **run))
                finally:
                    os.environ.pop(command_warm.WARM_ENV, None)
            return go

        wall, _ = interleaved({"warm": variant("warm"), "cold": variant("cold")},
                              opts.triples)
        servers = commands.servers.running()

    identical = [h.to_dict() for h in values["warm"]] == [h.to_dict() for h in values["cold"]]
    warm, cold = statistics.median(wall["warm"]), statistics.median(wall["cold"])
    lines = [
        "# Command task: per-triple overhead, warm against cold",
        "",
        f"`{' '.join(['python', 'benchmarks/command_overhead.py', *sys.argv[1:]])}` "
        f"({opts.triples} triples each, {opts.epochs} epoch(s), interleaved; "
        f"{os.cpu_count()} CPUs, shared machine)",
        "",
        "| | median s per triple | min | max |",
        "|---|---|---|---|",
        f"| warm (forked) | {warm:.3f} | {min(wall['warm']):.3f} | {max(wall['warm']):.3f} |",
        f"| cold (fresh interpreter) | {cold:.3f} | {min(wall['cold']):.3f} | "
        f"{max(wall['cold']):.3f} |",
        "",
        f"- cold / warm: {cold / warm:.1f}×; saved per triple: {cold - warm:.2f} s",
        f"- `python -c 'import torch, torch_geometric'` alone: {import_seconds:.2f} s here",
        f"- first run of the script (cold, tells the runner it imports torch): {first:.2f} s; "
        f"the run that started the server (its imports, once per worker): {server_start:.2f} s",
        f"- warm runs forked from a server: {'yes' if servers else 'NO'}",
        f"- values bit-identical warm and cold (every series of every triple): "
        f"{'yes' if identical else 'NO'}",
    ]
    text = "\n".join(lines) + "\n"
    print(text)
    Path(opts.out).write_text(text)
    if not identical or not servers:
        raise SystemExit(1)


if __name__ == "__main__":
    main()
