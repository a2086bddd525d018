"""The tiny seeded node task and model factories every unit trains, and a sweep over them.

Free of module-level imports of the package or torch: scratch projects copy this file
(``scratch_tiny``) and some check what their session imports.
Factories are module-level functions so worker processes can unpickle them.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from pytest_graphnetz import BenchmarkReport

TINY_EPOCHS = 5


def tiny_csbm(root: str, *, seed: int) -> Any:
    """A 60-node, 3-class CSBM drawn from ``seed`` (cached under ``root``)."""
    from pytest_graphnetz.runner.tasks.synthetic import CSBM, load_csbm

    params = CSBM("tiny", num_classes=3, nodes_per_class=20, p_in=0.2, p_out=0.03,
                  num_features=8, mean_norm=1.0)
    return load_csbm(params, root, seed)


def tiny_task(name: str = "tiny", epochs: int = TINY_EPOCHS, **kwargs: Any):
    from pytest_graphnetz import Task

    return Task(name, kwargs.pop("loader", tiny_csbm), epochs=epochs, **kwargs)


def gcn(in_channels: int, out_channels: int) -> Any:
    """2-layer GCN with dropout (training draws from the RNG, so reseeding matters)."""
    from torch_geometric.nn import GCN

    return GCN(in_channels, 16, 2, out_channels, dropout=0.5)


def sage(in_channels: int, out_channels: int) -> Any:
    from torch_geometric.nn import GraphSAGE

    return GraphSAGE(in_channels, 16, 2, out_channels, dropout=0.5)


MODELS = {"GCN": gcn, "SAGE": sage}


def run(root, models=MODELS, seeds=(0, 1), device="cpu", **kw):
    """The tiny task swept over ``models`` on the CPU."""
    from pytest_graphnetz import run_benchmark

    return run_benchmark({"tiny": tiny_task()}, models, seeds=seeds, device=device, root=root,
                         **kw)


def text(report: BenchmarkReport) -> str:
    """Canonical text of everything in a report (NaN-safe bit-for-bit comparison)."""
    from pytest_graphnetz.report.codec import dumps

    return dumps(report.to_dict())
