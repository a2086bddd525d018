"""A graph-level model factory for the graph tasks: a 2-layer GIN with a sum readout. Imports
torch and PyG: for the test files that skip without them."""

from __future__ import annotations

import torch
from torch_geometric.nn import GIN, global_add_pool


class PooledGIN(torch.nn.Module):
    """2-layer GIN, sum readout, linear head: ``forward(x, edge_index, batch)``."""

    def __init__(self, in_channels: int, out_channels: int) -> None:
        super().__init__()
        self.gin = GIN(in_channels, 32, 2)
        self.head = torch.nn.Linear(32, out_channels)

    def forward(self, x, edge_index, batch):
        return self.head(global_add_pool(self.gin(x, edge_index).relu(), batch))


def pooled_gin(in_channels: int, out_channels: int) -> torch.nn.Module:
    return PooledGIN(in_channels, out_channels)
