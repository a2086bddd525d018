"""What checking cache hits costs: a fully cached session with the verify sample on against off.

A generated project holds two gates over one small graph (500 nodes, GCN and GraphSAGE,
``--epochs`` epochs, ``--seeds`` seeds): an in-process task (``Task(loader)``) and a command task
(a training script per model, importing torch and PyG). A cold session fills a new cache; then
fully cached sessions run with ``--graphnetz-verify-cache=0`` and ``=1`` (one seed per cached
cell retrained without the cache and compared bit for bit), interleaved (``_timing``), each a
fresh pytest process. Printed per task kind: the whole process and the ``graphnetz_run`` call
alone, medians, and the ratio on / off; what importing torch and PyG costs in a fresh process;
and what the cold session paid to train every seed (the check retrains 1 of ``--seeds``).

    nice -n 10 .venv/bin/python benchmarks/verify_cost.py             # 10 seeds, 2 rounds
    .venv/bin/python benchmarks/verify_cost.py --quick                # 5 seeds, 1 round
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

sys.path.insert(0, str(Path(__file__).parent))
from _timing import interleaved, paired_ratio  # noqa: E402

REPO = Path(__file__).resolve().parent.parent

GRAPH = '''
import torch
from torch_geometric.data import Data


def load(root, seed):
    """A 500-node, 4-class block graph drawn from the seed."""
    g = torch.Generator().manual_seed(seed)
    y = torch.arange(500) % 4
    x = torch.randn(500, 16, generator=g) + torch.nn.functional.one_hot(y, 16).float()
    src, dst = torch.randint(0, 500, (2, 4000), generator=g)
    keep = (y[src] == y[dst]) | (torch.rand(4000, generator=g) < 0.2)
    perm = torch.randperm(500, generator=g)
    masks = [torch.zeros(500, dtype=torch.bool) for _ in range(3)]
    for mask, part in zip(masks, (perm[:250], perm[250:350], perm[350:]), strict=True):
        mask[part] = True
    return Data(x=x, y=y, edge_index=torch.stack([src[keep], dst[keep]]),
                train_mask=masks[0], val_mask=masks[1], test_mask=masks[2])


def gcn(in_channels, out_channels):
    from torch_geometric.nn import GCN

    return GCN(in_channels, 32, 2, out_channels, dropout=0.5)


def sage(in_channels, out_channels):
    from torch_geometric.nn import GraphSAGE

    return GraphSAGE(in_channels, 32, 2, out_channels, dropout=0.5)
'''

TRAIN = '''
import sys
import torch
import pytest_graphnetz.script as graphnetz
import graph

graphnetz.seed()
data = graph.load(None, graphnetz.data_seed())
model = (graph.gcn if sys.argv[1] == "GCN" else graph.sage)(16, 4)
opt = torch.optim.Adam(model.parameters(), lr=0.01)
for epoch in range({epochs}):
    model.train()
    opt.zero_grad()
    out = model(data.x, data.edge_index)
    loss = torch.nn.functional.cross_entropy(out[data.train_mask], data.y[data.train_mask])
    loss.backward()
    opt.step()
    model.eval()
    with torch.no_grad():
        pred = model(data.x, data.edge_index).argmax(1)
    graphnetz.record(test=float((pred[data.test_mask] == data.y[data.test_mask]).float().mean()),
                     train_loss=float(loss))
'''

GATES = '''
import json
import sys
import time
from pathlib import Path

import graph
from pytest_graphnetz import Task
from pytest_graphnetz.runner.command import Command, DataFiles

HERE = Path(__file__).parent


def timed(name, call):
    start = time.perf_counter()
    call()
    (HERE / f"{{name}}_seconds.json").write_text(json.dumps(time.perf_counter() - start))


def test_inproc(graphnetz_run):
    timed("inproc", lambda: graphnetz_run({{"g": Task("g", graph.load, epochs={epochs})}},
                                          {{"GCN": graph.gcn, "SAGE": graph.sage}}))


def test_command(graphnetz_run):
    timed("command", lambda: graphnetz_run(
        {{"g": Task("g", DataFiles(), kind="command")}},
        {{m: Command([sys.executable, "train.py", m], cwd=HERE) for m in ("GCN", "SAGE")}}))
'''


def session(project: Path, cache: Path, kind: str, seeds: int, verify: int | None
            ) -> tuple[float, float, str]:
    """Wall seconds of one fresh pytest process running the ``kind`` gate, of its
    ``graphnetz_run`` call alone, and its triple-count line."""
    cmd = [sys.executable, "-m", "pytest", "test_gates.py", "-q", "-k", kind, "-p",
           "no:cacheprovider", "-p", "no:randomly", f"--graphnetz-cache-dir={cache}",
           f"--graphnetz-seeds={seeds}", "--graphnetz-device=cpu"]
    if verify is not None:
        cmd.append(f"--graphnetz-verify-cache={verify}")
    start = time.perf_counter()
    done = subprocess.run(cmd, cwd=project, capture_output=True, text=True,
                          env={**os.environ, "PYTHONPATH": str(REPO)})
    seconds = time.perf_counter() - start
    if done.returncode != 0:
        raise SystemExit(f"{' '.join(cmd)} failed:\n{done.stdout[-3000:]}\n{done.stderr[-3000:]}")
    counts = [line for line in done.stdout.splitlines() if line.startswith("triples:")]
    inside = json.loads((project / f"{kind}_seconds.json").read_text())
    return seconds, inside, counts[-1] if counts else "triples: ?"


def measure(project: Path, cache: Path, kind: str, seeds: int, repeats: int) -> None:
    """A cold session of the ``kind`` gate, then fully cached ones with the check off and on."""
    cold, cold_inside, counts = session(project, cache, kind, seeds, 0)
    print(f"{kind}: cold session {cold:.2f} s (graphnetz_run {cold_inside:.2f} s; {counts}); "
          f"per seed-training about {cold_inside / (2 * seeds):.2f} s", flush=True)
    # A first cached session, untimed: any triple the cold one left stale is retrained here,
    # so each timed session below is fully cached (checked).
    print(f"  untimed first cached session: {session(project, cache, kind, seeds, 0)[2]}")
    inside: dict[str, list[float]] = {"off": [], "on": []}

    def variant(name: str, verify: int) -> None:
        seconds, call, line = session(project, cache, kind, seeds, verify)
        if not line.startswith("triples: 0 trained"):
            raise SystemExit(f"a cached {kind} session trained something: {line}")
        inside[name].append(call)
        print(f"  {name}: {seconds:.2f} s, graphnetz_run {call:.2f} s ({line})", flush=True)

    wall, _ = interleaved({"off": lambda: variant("off", 0), "on": lambda: variant("on", 1)},
                          repeats)
    for name in ("off", "on"):
        print(f"  {name}: median {statistics.median(wall[name]):.2f} s per process, "
              f"graphnetz_run {statistics.median(inside[name]):.2f} s")
    print(f"  ratio on / off, whole pytest process: {paired_ratio(wall, 'on', 'off'):.2f}; "
          f"the graphnetz_run call: {paired_ratio(inside, 'on', 'off'):.2f}; the check adds "
          f"{statistics.median(inside['on']) - statistics.median(inside['off']):.2f} s per "
          "session (2 cells, 1 seed each)", flush=True)


def import_seconds() -> float:
    code = ("import time; t = time.perf_counter(); import torch, torch_geometric; "
            "print(time.perf_counter() - t)")
    return float(subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                                check=True).stdout)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seeds", type=int, default=10)
    parser.add_argument("--epochs", type=int, default=100)
    parser.add_argument("--repeats", type=int, default=2)
    parser.add_argument("--quick", action="store_true", help="5 seeds, 1 round")
    parser.add_argument("--kinds", nargs="+", choices=("inproc", "command"),
                        default=["inproc", "command"])
    args = parser.parse_args()
    if args.quick:
        args.seeds, args.repeats = 5, 1
    imports = import_seconds()
    with tempfile.TemporaryDirectory() as tmp:
        project, cache = Path(tmp) / "project", Path(tmp) / "cache"
        project.mkdir()
        (project / "graph.py").write_text(GRAPH)
        (project / "train.py").write_text(TRAIN.format(epochs=args.epochs))
        (project / "test_gates.py").write_text(GATES.format(epochs=args.epochs))
        print(f"verify cost: GCN + GraphSAGE × {args.seeds} seeds × {args.epochs} epochs, "
              f"fresh pytest processes, {args.repeats} round(s); import torch + "
              f"torch_geometric alone: {imports:.2f} s", flush=True)
        for kind in args.kinds:
            measure(project, cache, kind, args.seeds, args.repeats)


if __name__ == "__main__":
    main()
