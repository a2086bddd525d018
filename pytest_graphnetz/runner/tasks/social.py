"""Category ``social``: Zachary's karate club (PyG ``KarateClub``), a seconds-long smoke test.

34 members, 78 friendships, 4 communities (13/12/4/5 members), one-hot identity features.
Each seed draws a stratified 50/25/25 train/val/test split (8 test nodes): far too few for a
precise gate, which is the point of a smoke test — it shows whether the pipeline runs.
"""

from __future__ import annotations

from typing import Any

from pytest_graphnetz.runner.tasks.base import Task
from pytest_graphnetz.runner.tasks.splits import stratified_masks


def load_karate(root: str, *, seed: int) -> Any:
    """The karate-club graph with a seeded stratified split.

    Returns a ``Data`` with ``x [34, 34]``, ``edge_index [2, 156]``, ``y [34]`` and boolean
    ``train_mask``/``val_mask``/``test_mask [34]``. The graph ships inside PyG (no download),
    so nothing is cached under ``root``.
    """
    from torch_geometric.data import Data
    from torch_geometric.datasets import KarateClub

    graph = KarateClub()[0]
    train, val, test = stratified_masks(graph.y, seed=seed)
    return Data(x=graph.x, edge_index=graph.edge_index, y=graph.y,
                train_mask=train, val_mask=val, test_mask=test)


def karate() -> Task:
    return Task("karate", load_karate, kind="node", epochs=200, lr=0.01, weight_decay=5e-4,
                category="social")


TASKS = {"karate": karate}
