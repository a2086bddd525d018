"""The example project's models: three standard PyG architectures behind one factory signature.

Each factory is ``factory(in_channels, out_channels) -> torch.nn.Module`` and builds a model
called as ``model(x, edge_index) -> logits [num_nodes, out_channels]`` (what the built-in node
trainer expects). Widths and dropout live here, so a change to any of them is a model change
the triple cache sees (it fingerprints the built model, not only this file's text).
"""

from __future__ import annotations

from typing import Any

HIDDEN = 16
DROPOUT = 0.5
GAT_HEADS = 4


def gcn(in_channels: int, out_channels: int) -> Any:
    """Two-layer GCN (Kipf & Welling), ``HIDDEN`` units, dropout between the layers."""
    from torch_geometric.nn.models import GCN

    return GCN(in_channels, HIDDEN, num_layers=2, out_channels=out_channels, dropout=DROPOUT)


def sage(in_channels: int, out_channels: int) -> Any:
    """Two-layer GraphSAGE with mean aggregation."""
    from torch_geometric.nn.models import GraphSAGE

    return GraphSAGE(in_channels, HIDDEN, num_layers=2, out_channels=out_channels,
                     dropout=DROPOUT)


def gat(in_channels: int, out_channels: int) -> Any:
    """Two-layer GAT: ``GAT_HEADS`` concatenated heads of ``HIDDEN // GAT_HEADS`` units each."""
    from torch_geometric.nn.models import GAT

    return GAT(in_channels, HIDDEN, num_layers=2, out_channels=out_channels, dropout=DROPOUT,
               heads=GAT_HEADS)


MODELS = {"GCN": gcn, "GraphSAGE": sage, "GAT": gat}
