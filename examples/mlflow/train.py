"""A plain PyG training script that logs to MLflow, as a team's own code would.

No pytest-graphnetz here: a two-layer GCN on a fixed two-class block-model graph (800 nodes,
features drawn once), trained per seed, logging ``val_acc`` and ``test_acc`` at every epoch
(``step`` = epoch) and the params ``version``, ``seed``, ``model`` and ``dataset``. Three
versions of the code:

- ``v1``: the baseline;
- ``v2-regression``: evaluates without ``model.eval()`` (dropout stays on at test time: a real
  bug that costs accuracy on every seed);
- ``v2-refactor``: the same computation written differently (an innocent change).

    python examples/mlflow/train.py --version v1 --tracking-uri sqlite:///mlflow.db
    python examples/mlflow/train.py --version v2-regression --tracking-uri sqlite:///mlflow.db
    graphnetz compare --mlflow "pyg-example:params.version = 'v1'" \\
        "pyg-example:params.version = 'v2-regression'" --tracking-uri sqlite:///mlflow.db \\
        --metric test_acc --best-by val_acc --task-param dataset --model-param model

docs/mlflow.md walks through it.
"""

from __future__ import annotations

import argparse
import random

import mlflow
import numpy as np
import torch
import torch.nn.functional as F
from torch_geometric.nn import GCNConv
from torch_geometric.utils import stochastic_blockmodel_graph

VERSIONS = ("v1", "v2-regression", "v2-refactor")
EPOCHS = 60


def block_model(n: int = 800, features: int = 16) -> tuple[torch.Tensor, ...]:
    """The dataset: drawn once from a fixed seed, the same for every run."""
    generator = torch.Generator().manual_seed(2024)
    torch.manual_seed(2024)
    edges = stochastic_blockmodel_graph([n // 2, n // 2], [[0.02, 0.006], [0.006, 0.02]])
    y = torch.arange(n) >= n // 2
    x = torch.randn(n, features, generator=generator) + 0.35 * (2 * y.float() - 1)[:, None]
    order = torch.randperm(n, generator=generator)
    train, val, test = order[:80], order[80:240], order[240:]
    return x, edges, y.long(), train, val, test


class GCN(torch.nn.Module):
    def __init__(self, features: int, hidden: int = 16, refactor: bool = False) -> None:
        super().__init__()
        self.conv1, self.conv2 = GCNConv(features, hidden), GCNConv(hidden, 2)
        self.refactor = refactor

    def forward(self, x: torch.Tensor, edges: torch.Tensor) -> torch.Tensor:
        x = F.dropout(x, 0.5, self.training)
        hidden = self.conv1(x, edges)
        # v2-refactor: the same ReLU through another spelling
        x = hidden.clamp(min=0) if self.refactor else F.relu(hidden)
        x = F.dropout(x, 0.5, self.training)
        return self.conv2(x, edges)


def train(seed: int, version: str, data: tuple[torch.Tensor, ...]) -> None:
    x, edges, y, train_idx, val_idx, test_idx = data
    random.seed(seed)
    np.random.seed(seed)
    torch.manual_seed(seed)
    model = GCN(x.shape[1], refactor=version == "v2-refactor")
    optimiser = torch.optim.Adam(model.parameters(), lr=0.01, weight_decay=5e-4)
    with mlflow.start_run(run_name=f"{version}-seed{seed}"):
        mlflow.log_params({"version": version, "seed": seed, "model": "GCN",
                           "dataset": "block-model"})
        for epoch in range(EPOCHS):
            model.train()
            optimiser.zero_grad()
            F.cross_entropy(model(x, edges)[train_idx], y[train_idx]).backward()
            optimiser.step()
            if version != "v2-regression":   # the bug: no model.eval() before evaluating
                model.eval()
            with torch.no_grad():
                predicted = model(x, edges).argmax(-1)
            mlflow.log_metrics({
                "val_acc": (predicted[val_idx] == y[val_idx]).float().mean().item(),
                "test_acc": (predicted[test_idx] == y[test_idx]).float().mean().item()},
                step=epoch)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--version", choices=VERSIONS, required=True)
    parser.add_argument("--seeds", type=int, default=10)
    parser.add_argument("--tracking-uri", default=None)
    parser.add_argument("--experiment", default="pyg-example")
    args = parser.parse_args()
    torch.set_num_threads(1)
    if args.tracking_uri:
        mlflow.set_tracking_uri(args.tracking_uri)
    mlflow.set_experiment(args.experiment)
    data = block_model()
    for seed in range(args.seeds):
        train(seed, args.version, data)


if __name__ == "__main__":
    main()
