"""Category ``synthetic``: contextual stochastic block models (CSBM), generated per seed.

A CSBM has ``num_classes`` equal blocks of nodes; an edge joins two nodes of the same class with
probability ``p_in`` and of different classes with ``p_out``; node features are the node's
class mean plus Gaussian noise (class means drawn per seed). Homophily — the share of a node's
edges that stay in its class — is about ``p_in·n / (p_in·n + p_out·(N−n))``.

- ``csbm_homophilous``: homophily ≈ 0.6; averaging neighbours denoises the features, so
  message passing clearly helps over the features alone.
- ``csbm_heterophilous``: homophily ≈ 0.1 with four classes: a neighbourhood average mostly mixes
  the *other* classes' means, which a GCN's self-loop-weighted average cannot undo.

Everything (graph, features, split) is drawn from generators derived from the benchmark seed,
never from the global RNG, and cached per seed under the task root as ``seed_<s>.pt``.
"""

from __future__ import annotations

import math
import warnings
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from pytest_graphnetz.runner.tasks.base import Task
from pytest_graphnetz.runner.tasks.splits import derive_seed, fixed_rng, stratified_masks

# Bump when the generator changes in a way the parameters do not show (invalidates disk caches).
GENERATOR_VERSION = 1


@dataclass(frozen=True)
class CSBM:
    """Parameters of one contextual stochastic block model."""

    name: str
    num_classes: int
    nodes_per_class: int
    p_in: float
    p_out: float
    num_features: int
    mean_norm: float  # Euclidean norm of each class mean (signal), noise is N(0, I)
    split: tuple[float, float, float] = (0.2, 0.2, 0.6)


HOMOPHILOUS = CSBM("csbm_homophilous", num_classes=4, nodes_per_class=400, p_in=0.012,
                   p_out=0.0027, num_features=32, mean_norm=1.0)
HETEROPHILOUS = CSBM("csbm_heterophilous", num_classes=4, nodes_per_class=400, p_in=0.002,
                     p_out=0.006, num_features=32, mean_norm=1.0)


def generate(params: CSBM, seed: int) -> dict[str, Any]:
    """Draw one CSBM: ``x [N, F]``, ``edge_index [2, E]`` (undirected), ``y [N]`` and boolean
    ``train_mask``/``val_mask``/``test_mask [N]``, with ``N = num_classes·nodes_per_class``.
    """
    import torch
    from torch_geometric.utils import stochastic_blockmodel_graph

    c = params.num_classes
    probs = torch.full((c, c), params.p_out)
    probs.fill_diagonal_(params.p_in)
    # stochastic_blockmodel_graph draws from torch's global RNG: under fixed_rng the graph
    # depends on the benchmark seed alone and the caller's RNG stream is left untouched.
    with fixed_rng(derive_seed(seed, params.name, "graph")):
        edge_index = stochastic_blockmodel_graph([params.nodes_per_class] * c, probs)
    gen = torch.Generator().manual_seed(derive_seed(seed, params.name, "features"))
    means = torch.randn(c, params.num_features, generator=gen)
    means = means / means.norm(dim=1, keepdim=True) * params.mean_norm
    y = torch.arange(c).repeat_interleave(params.nodes_per_class)
    x = means[y] + torch.randn(y.numel(), params.num_features, generator=gen)
    train, val, test = stratified_masks(y, seed=derive_seed(seed, params.name, "split"),
                                        fractions=params.split)
    return {"x": x, "edge_index": edge_index, "y": y,
            "train_mask": train, "val_mask": val, "test_mask": test}


def _header(params: CSBM, seed: int) -> str:
    return repr(sorted({**asdict(params), "seed": seed, "version": GENERATOR_VERSION}.items()))


def load_csbm(params: CSBM, root: str, seed: int) -> Any:
    """The CSBM of ``seed`` as a ``Data``, from ``<root>/seed_<seed>.pt`` when valid.

    A cache file that cannot be read, was written for other parameters or has inconsistent
    shapes is regenerated (with a warning), so a half-written file is never sticky.
    """
    import torch
    from torch_geometric.data import Data

    from pytest_graphnetz.report.files import atomic_file

    path = Path(root) / f"seed_{seed}.pt"
    header = _header(params, seed)
    tensors = None
    if path.exists():
        try:
            stored = torch.load(path, weights_only=True)
            if stored.get("header") != header:
                raise ValueError("written for other parameters")
            tensors = stored["tensors"]
            _check(tensors, params)
        except Exception as exc:  # any unreadable cache file is regenerated
            warnings.warn(f"regenerating dataset cache {path}: {exc}", stacklevel=2)
            tensors = None
    if tensors is None:
        tensors = generate(params, seed)
        with atomic_file(path, binary=True) as fh:
            torch.save({"header": header, "tensors": tensors}, fh)
    return Data(**tensors)


def _check(tensors: dict[str, Any], params: CSBM) -> None:
    n = params.num_classes * params.nodes_per_class
    expected = {"x": (n, params.num_features), "y": (n,), "train_mask": (n,),
                "val_mask": (n,), "test_mask": (n,)}
    for key, shape in expected.items():
        if tuple(tensors[key].shape) != shape:
            raise ValueError(f"`{key}` has shape {tuple(tensors[key].shape)}, expected {shape}")
    ei = tensors["edge_index"]
    if ei.dim() != 2 or ei.size(0) != 2 or (ei.numel() and int(ei.max()) >= n):
        raise ValueError("`edge_index` is not a valid [2, E] index into the nodes")


def load_homophilous(root: str, *, seed: int) -> Any:
    """``csbm_homophilous`` for ``seed`` (see :data:`HOMOPHILOUS`)."""
    return load_csbm(HOMOPHILOUS, root, seed)


def load_heterophilous(root: str, *, seed: int) -> Any:
    """``csbm_heterophilous`` for ``seed`` (see :data:`HETEROPHILOUS`)."""
    return load_csbm(HETEROPHILOUS, root, seed)


def homophily(params: CSBM) -> float:
    """Expected share of a node's edges inside its own class."""
    n = params.nodes_per_class
    inside = params.p_in * (n - 1)
    outside = params.p_out * n * (params.num_classes - 1)
    return inside / (inside + outside) if inside + outside else math.nan


TASKS = {
    "csbm_homophilous": lambda: Task("csbm_homophilous", load_homophilous, kind="node",
                                     category="synthetic"),
    "csbm_heterophilous": lambda: Task("csbm_heterophilous", load_heterophilous, kind="node",
                                       category="synthetic"),
}
