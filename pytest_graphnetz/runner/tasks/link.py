"""Link prediction tasks, generated offline per seed.

- ``sbm_link``: a 4-block stochastic block model (200 nodes, edge probability 0.2 inside a
  block, 0.01 across) whose node features are a weak block signal in Gaussian noise. Edges are
  split 70/10/20 by a seeded ``RandomLinkSplit`` (undirected; validation and test splits carry
  as many sampled non-edges as edges). Which block a pair shares is informative but far from
  decisive, so a 2-layer GNN encoder lands well above chance and below a perfect AUC.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from pytest_graphnetz.runner.tasks.base import Task
from pytest_graphnetz.runner.tasks.splits import fixed_rng


def split_links(data: Any, *, seed: int, num_val: float = 0.1, num_test: float = 0.2) -> tuple:
    """``(train, val, test)`` of an undirected graph by ``RandomLinkSplit``, drawn from ``seed``.

    ``train.edge_index`` holds the training edges (message passing and positives);
    ``val``/``test`` carry ``edge_label_index`` [2, n] and ``edge_label`` [n] (1 = edge,
    0 = sampled non-edge) and pass messages over the train (val) or train+val (test) edges.
    """
    from torch_geometric.transforms import RandomLinkSplit

    split = RandomLinkSplit(num_val=num_val, num_test=num_test, is_undirected=True,
                            add_negative_train_samples=False)
    with fixed_rng(seed):
        return split(data)


def sbm_link(root: str, *, seed: int, block_size: int = 50, num_blocks: int = 4,
             p_in: float = 0.2, p_out: float = 0.01, num_features: int = 16,
             signal: float = 1.0) -> tuple:
    """A seeded SBM with noisy block features, split for link prediction (see module doc)."""
    import torch
    from torch_geometric.data import Data
    from torch_geometric.utils import stochastic_blockmodel_graph

    probs = torch.full((num_blocks, num_blocks), p_out)
    probs.fill_diagonal_(p_in)
    with fixed_rng(seed):
        edge_index = stochastic_blockmodel_graph([block_size] * num_blocks, probs)
        block = torch.arange(num_blocks).repeat_interleave(block_size)
        centres = torch.randn(num_blocks, num_features)
        centres = signal * centres / centres.norm(dim=1, keepdim=True)
        x = centres[block] + torch.randn(num_blocks * block_size, num_features)
    data = Data(x=x, edge_index=edge_index, num_nodes=num_blocks * block_size)
    return split_links(data, seed=seed)


TASKS: dict[str, Callable[[], Task]] = {
    "sbm_link": lambda: Task("sbm_link", sbm_link, kind="link", category="link", epochs=100,
                             lr=0.01, weight_decay=0.0),
}
