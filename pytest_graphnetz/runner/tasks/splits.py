"""Seeded node splits, seed derivation and a seeded RNG block shared by catalogue loaders."""

from __future__ import annotations

import contextlib
import zlib
from collections.abc import Iterator
from typing import Any


def derive_seed(seed: int, *labels: str) -> int:
    """A 63-bit seed for one purpose (``labels``) of benchmark seed ``seed``.

    Splits, graphs and model initialisation all start from the same benchmark seed; deriving a
    separate stream per purpose keeps them from sharing (and correlating) random draws.
    """
    import numpy as np

    words = [int(seed)] + [zlib.crc32(label.encode()) for label in labels]
    return int(np.random.SeedSequence(words).generate_state(1, dtype=np.uint64)[0] >> 1)


def stratified_masks(
    y: Any, *, seed: int, fractions: tuple[float, float, float] = (0.5, 0.25, 0.25)
) -> tuple[Any, Any, Any]:
    """Boolean ``(train, val, test)`` masks, each ``[num_nodes]``, stratified by class ``y``.

    Per class (``y`` is ``[num_nodes]`` of class ids), the nodes are permuted with a generator
    seeded from ``seed`` and cut by ``fractions`` (val and test rounded, at least one node
    each; train gets the rest and at least one). Needs 3 nodes in every class.
    """
    import torch

    if abs(sum(fractions) - 1.0) > 1e-9 or min(fractions) <= 0:
        raise ValueError(
            f"`fractions` must be three positive numbers summing to 1, got {fractions}"
        )
    gen = torch.Generator().manual_seed(derive_seed(seed, "stratified_masks"))
    masks = [torch.zeros(y.numel(), dtype=torch.bool) for _ in range(3)]
    for c in torch.unique(y).tolist():
        idx = (y == c).nonzero().view(-1)
        if idx.numel() < 3:
            raise ValueError(f"class {c} has {idx.numel()} node(s); a stratified "
                             "train/val/test split needs at least 3 per class")
        idx = idx[torch.randperm(idx.numel(), generator=gen)]
        n_val = max(1, round(idx.numel() * fractions[1]))
        n_test = max(1, round(idx.numel() * fractions[2]))
        n_train = idx.numel() - n_val - n_test
        if n_train < 1:
            n_val, n_train = n_val - 1, 1
        masks[0][idx[:n_train]] = True
        masks[1][idx[n_train:n_train + n_val]] = True
        masks[2][idx[n_train + n_val:]] = True
    return masks[0], masks[1], masks[2]


@contextlib.contextmanager
def fixed_rng(seed: int) -> Iterator[None]:
    """Run a block under torch's CPU RNG and Python's ``random`` seeded with ``seed``.

    The caller's RNG states are restored afterwards, so generated data depends on ``seed``
    only and drawing it shifts no later draw. (PyG's negative sampling uses ``random``.)
    """
    import random

    import torch

    state = random.getstate()
    try:
        with torch.random.fork_rng(devices=[]):
            torch.manual_seed(seed)
            random.seed(seed)
            yield
    finally:
        random.setstate(state)
