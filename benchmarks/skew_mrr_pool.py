"""A real per-seed MRR pool for the skew benchmark (``skew_candidates.py``): the catalogue's
link task (``sbm_link``, MRR as the metric) trained per seed by a 2-layer GCN encoder, the
baseline and an innocent change (the same model after one extra draw from torch's generator
before it is built: other initial weights, the same data, splits and negatives), 20 seeds,
40 epochs, CPU, one thread. Writes ``skew_mrr_values.json`` (per seed: both sides' test MRR).

    nice -n 10 python benchmarks/skew_mrr_pool.py [--seeds 20] [--epochs 40]
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from dataclasses import replace
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

OUT = Path(__file__).with_name("skew_mrr_values.json")


def gcn(in_channels: int, out_channels: int):
    from torch_geometric.nn import GCN

    return GCN(in_channels, 64, num_layers=2, out_channels=out_channels)


def gcn_extra_draw(in_channels: int, out_channels: int):
    import torch

    torch.rand(1)   # an innocent change: the same model, other initial weights
    return gcn(in_channels, out_channels)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seeds", type=int, default=20)
    parser.add_argument("--epochs", type=int, default=40)
    args = parser.parse_args()
    import tempfile

    from pytest_graphnetz import run_benchmark
    from pytest_graphnetz.runner.tasks import catalogue

    task = replace(catalogue()["sbm_link"](), metric="mrr", epochs=args.epochs)
    start = time.time()
    with tempfile.TemporaryDirectory() as root:
        report = run_benchmark({"sbm_link": task}, {"baseline": gcn, "extra draw": gcn_extra_draw},
                               seeds=range(args.seeds), device="cpu", root=root)
    values = {m: report.values("sbm_link", m).tolist() for m in report.models}
    OUT.write_text(json.dumps({
        "meta": {"task": "sbm_link", "metric": report.metric("sbm_link").name,
                 "epochs": args.epochs, "seeds": args.seeds,
                 "seconds": round(time.time() - start, 1)},
        "values": values}, indent=1) + "\n", encoding="utf-8")
    print(OUT, values)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
