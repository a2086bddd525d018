"""Small fabricated Planetoid raw files (the format of ``ind.<name>.*``) for offline tests."""

from __future__ import annotations

import pickle
from pathlib import Path

import numpy as np

PARTS = ("x", "tx", "allx", "y", "ty", "ally", "graph", "test.index")


def fake_planetoid(name: str = "cora", *, seed: int = 0, num_classes: int = 3,
                   num_features: int = 12, labelled: int = 30, num_test: int = 100) -> dict:
    """``{file name: bytes}`` of a Planetoid-format graph with a learnable class signal.

    ``allx`` covers the ``labelled`` training nodes plus the 500 validation nodes the public
    split expects; ``tx`` the ``num_test`` test nodes, listed shuffled in ``test.index``.
    """
    import scipy.sparse as sp

    rng = np.random.default_rng(seed)
    n_all = labelled + 500
    n = n_all + num_test
    y = rng.integers(num_classes, size=n)
    feats = (rng.random((n, num_features)) < 0.15).astype(np.float32)
    feats[np.arange(n), y] = 1.0  # a class-indicative word per node, among noise words
    onehot = np.eye(num_classes, dtype=np.int64)[y]
    test_index = rng.permutation(np.arange(n_all, n))
    # Planetoid stores test rows in file order and reorders them by sorted test.index.
    tx_rows = test_index
    graph = {i: [] for i in range(n)}
    for i in range(n):
        same = np.flatnonzero(y == y[i])
        for j in rng.choice(same, size=3, replace=False):
            if j != i:
                graph[i].append(int(j))
                graph[int(j)].append(i)
    parts = {
        "x": sp.csr_matrix(feats[:labelled]), "allx": sp.csr_matrix(feats[:n_all]),
        "tx": sp.csr_matrix(feats[tx_rows]), "y": onehot[:labelled], "ally": onehot[:n_all],
        "ty": onehot[tx_rows], "graph": graph,
    }
    files = {f"ind.{name}.{k}": pickle.dumps(v, protocol=2) for k, v in parts.items()}
    files[f"ind.{name}.test.index"] = "".join(f"{i}\n" for i in test_index).encode()
    return files


def write_files(files: dict, folder: Path) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    for fname, blob in files.items():
        (folder / fname).write_bytes(blob)
    return folder
