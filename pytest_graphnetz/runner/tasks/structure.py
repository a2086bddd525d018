"""Structure tasks: every label is a property of graph structure, generated offline per seed.

- ``motifs`` (graph classification): a Barabási-Albert tree with one motif attached, a house
  (class 0) or a 5-cycle (class 1). Nodes carry one-hot degree features (degree 1..``MAX_DEGREE``,
  the last slot for larger degrees), which a 2-layer GCN or GIN needs: both motifs have 5 nodes,
  and the signal is where the degree-3 nodes sit relative to each other.
- ``triangles`` (graph regression): Erdős-Rényi graphs of 12-24 nodes and edge probability
  0.1-0.35; the target is the number of triangles (which message passing cannot count exactly,
  only estimate from degrees and neighbourhoods). Features: one-hot degree.
- ``ba_shapes`` (node classification): PyG's ``ExplainerDataset`` with a BA base graph and house
  motifs; the label is a node's structural role (base, house top, middle, bottom), features are
  one-hot degree, split 80/10/10 per seed.

Each loader takes ``seed`` and generates its data in a forked RNG seeded with it: the data
depends on the seed only, never on what the caller drew from the global RNG before.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from pytest_graphnetz.runner.tasks.base import Task
from pytest_graphnetz.runner.tasks.splits import fixed_rng

MAX_DEGREE = 8  # one-hot width of the degree features; larger degrees share the last slot


def degree_features(edge_index: Any, num_nodes: int) -> Any:
    """One-hot node degree [num_nodes, MAX_DEGREE]; degree 0 or 1 is slot 0."""
    import torch
    from torch_geometric.utils import degree

    deg = degree(edge_index[0], num_nodes, dtype=torch.long)
    return torch.nn.functional.one_hot((deg - 1).clamp(0, MAX_DEGREE - 1), MAX_DEGREE).float()


def _split(items: list, fractions: tuple[float, float]) -> tuple[list, list, list]:
    """``items`` cut in order into train / val / test of the given val and test fractions."""
    n_val, n_test = (round(f * len(items)) for f in fractions)
    n_train = len(items) - n_val - n_test
    return items[:n_train], items[n_train:n_train + n_val], items[n_train + n_val:]


def motif_graphs(root: str, *, seed: int, num_graphs: int = 300,
                 min_base: int = 15, max_base: int = 35) -> tuple:
    """``(train, val, test)`` lists of BA trees with a house (y=0) or 5-cycle (y=1) attached.

    Classes alternate before a seeded shuffle, so they are balanced; split 60/20/20.
    """
    import torch
    from torch_geometric.data import Data
    from torch_geometric.datasets import ExplainerDataset
    from torch_geometric.datasets.graph_generator import BAGraph
    from torch_geometric.datasets.motif_generator import CycleMotif, HouseMotif

    motifs = (HouseMotif(), CycleMotif(5), CycleMotif(6))
    graphs = []
    with fixed_rng(seed):
        for i in range(num_graphs):
            label = i % len(motifs)
            # A random base size, so the node count says nothing about the motif.
            n = int(torch.randint(min_base, max_base + 1, ()))
            g = ExplainerDataset(BAGraph(n, 2), motifs[label], num_motifs=1)[0]
            x = degree_features(g.edge_index, g.num_nodes)
            graphs.append(Data(x=x, edge_index=g.edge_index, y=torch.tensor([label])))
        order = torch.randperm(len(graphs)).tolist()
    return _split([graphs[i] for i in order], (0.2, 0.2))


def triangle_graphs(root: str, *, seed: int, num_graphs: int = 300) -> tuple:
    """``(train, val, test)`` lists of random graphs whose target ``y`` is their triangle count."""
    import numpy as np
    import torch
    from torch_geometric.data import Data
    from torch_geometric.utils import erdos_renyi_graph, to_dense_adj

    graphs = []
    with fixed_rng(seed):
        for _ in range(num_graphs):
            n = int(torch.randint(12, 25, ()))
            p = float(torch.empty(()).uniform_(0.1, 0.35))
            edge_index = erdos_renyi_graph(n, p)
            adj = to_dense_adj(edge_index, max_num_nodes=n)[0].long().numpy()
            # Each triangle is 6 closed walks of length 3. (Integer numpy: exact, no BLAS.)
            triangles = float(np.trace(adj @ adj @ adj)) / 6
            graphs.append(Data(x=degree_features(edge_index, n), edge_index=edge_index,
                               y=torch.tensor([triangles])))
    return _split(graphs, (0.2, 0.2))


def ba_shapes(root: str, *, seed: int) -> Any:
    """One BA-Shapes graph (300 base nodes, 80 houses) with role labels and seeded masks."""
    import torch
    from torch_geometric.data import Data
    from torch_geometric.datasets import ExplainerDataset
    from torch_geometric.datasets.graph_generator import BAGraph

    with fixed_rng(seed):
        g = ExplainerDataset(BAGraph(300, 5), "house", num_motifs=80)[0]
        order = torch.randperm(g.num_nodes)
    n = g.num_nodes
    n_val = n_test = n // 10
    masks = {}
    for name, idx in (("train_mask", order[n_val + n_test:]), ("val_mask", order[:n_val]),
                      ("test_mask", order[n_val:n_val + n_test])):
        masks[name] = torch.zeros(n, dtype=torch.bool)
        masks[name][idx] = True
    return Data(x=degree_features(g.edge_index, n), edge_index=g.edge_index, y=g.y, **masks)


TASKS: dict[str, Callable[[], Task]] = {
    "motifs": lambda: Task("motifs", motif_graphs, kind="graph", category="structure",
                           epochs=100, lr=0.01, batch_size=32),
    "triangles": lambda: Task("triangles", triangle_graphs, kind="graph_reg",
                              category="structure", epochs=100, lr=0.01, batch_size=32),
    "ba_shapes": lambda: Task("ba_shapes", ba_shapes, kind="node", category="structure",
                              epochs=200, lr=0.01),
}
