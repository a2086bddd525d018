"""Report size with and without per-example test outcomes.

One benchmark of the catalogue task ``csbm_homophilous`` (1,600 nodes, 960 of them test nodes)
× 3 models × 10 seeds at the task's own 200 epochs, trained once. Printed: the report JSON
with the outcomes the built-in trainer records (final and best-val epoch), the same report
with them stripped (what a report was before), the outcomes written as plain JSON lists of
0/1 instead of packed base64 bits, and the committed-baseline form (which keeps none).

Run: ``python benchmarks/outcome_size.py [--out benchmarks/outcome_size.txt]``.
"""

from __future__ import annotations

import argparse
import copy
import gzip
import tempfile
from pathlib import Path

from pytest_graphnetz import run_benchmark
from pytest_graphnetz.report.codec import dumps


def gcn(i: int, o: int):
    from torch_geometric.nn import GCN

    return GCN(i, 32, 2, o)


def sage(i: int, o: int):
    from torch_geometric.nn import GraphSAGE

    return GraphSAGE(i, 32, 2, o)


def mlp(i: int, o: int):
    from torch_geometric.nn import MLP

    class Node(MLP):
        def forward(self, x, edge_index):  # ignores the graph: a features-only baseline
            return super().forward(x)

    return Node([i, 32, o])


def sizes(report) -> dict[str, int]:
    with_outcomes = report.to_dict()
    stripped = copy.deepcopy(with_outcomes)
    as_lists = copy.deepcopy(with_outcomes)
    n_outcomes = 0
    for t, by_model in with_outcomes["histories"].items():
        for m, by_seed in by_model.items():
            for s, hist in by_seed.items():
                stripped["histories"][t][m][s].pop("outcomes", None)
                lists = {}
                for epoch in hist.get("outcomes", {}):
                    n_outcomes += 1
                    out = report.histories[(t, m, int(s))].outcomes[int(epoch)]
                    lists[epoch] = {"metric": out.metric,
                                    "correct": [int(v) for v in out.values]}
                as_lists["histories"][t][m][s]["outcomes"] = lists
    out = {"outcome records (triples × selected epochs)": n_outcomes}
    for name, doc in (("report before (no outcomes)", stripped),
                      ("report with outcomes (base64 bits)", with_outcomes),
                      ("report with outcomes as JSON 0/1 lists", as_lists),
                      ("committed baseline (values only)", report.to_values_dict())):
        text = dumps(doc).encode()
        out[f"{name}: bytes"] = len(text)
        out[f"{name}: gzip bytes"] = len(gzip.compress(text, 9))
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, default=None)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as root:
        report = run_benchmark(["csbm_homophilous"], {"GCN": gcn, "SAGE": sage, "MLP": mlp},
                               seeds=range(10), device="cpu", root=root)
    found = sizes(report)
    before = found["report before (no outcomes): bytes"]
    after = found["report with outcomes (base64 bits): bytes"]
    lines = ["csbm_homophilous (1,600 nodes, 960 test nodes) × 3 models × 10 seeds, "
             f"{report.histories[report.triples()[0]].n_epochs} epochs"]
    lines += [f"{k}: {v:,}" for k, v in found.items()]
    lines.append(f"ratio with/without outcomes: {after / before:.3f}")
    lines.append(f"ratio JSON-lists/base64 outcomes: "
                 f"{found['report with outcomes as JSON 0/1 lists: bytes'] / after:.3f}")
    text = "\n".join(lines)
    print(text)
    if args.out:
        args.out.write_text(text + "\n")


if __name__ == "__main__":
    main()
