"""What tests/fast/test_plugin_gates.py and tests/slow/test_plugin_gates_slow.py share."""

from __future__ import annotations

import re

import pytest

from tests.gates_output import gates_table

TOY = '''
import os

import torch
from torch_geometric.data import Data
from torch_geometric.nn import GCNConv
from torch_geometric.utils import stochastic_blockmodel_graph

from pytest_graphnetz import Task

HIDDEN = {hidden}
LOG = os.path.join(os.path.dirname(os.path.abspath(__file__)), "trained.log")


def load(root, *, seed):
    gen = torch.Generator().manual_seed(seed)
    y = torch.arange(3).repeat_interleave(40)
    edge_index = stochastic_blockmodel_graph(
        [40, 40, 40], [[0.15, 0.01, 0.01], [0.01, 0.15, 0.01], [0.01, 0.01, 0.15]])
    x = torch.nn.functional.one_hot(y, 3).float() + 1.5 * torch.randn(120, 3, generator=gen)
    perm = torch.randperm(120, generator=gen)
    masks = [torch.zeros(120, dtype=torch.bool) for _ in range(3)]
    for mask, part in zip(masks, (perm[:30], perm[30:60], perm[60:])):
        mask[part] = True
    return Data(x=x, edge_index=edge_index, y=y, train_mask=masks[0], val_mask=masks[1],
                test_mask=masks[2])


def counting_train(model, data, *, task, device):
    from pytest_graphnetz.runner.training import builtin

    with open(LOG, "a") as fh:
        fh.write("trained\\n")
    return builtin("node").train(model, data, task=task, device=device)


class GCN(torch.nn.Module):
    def __init__(self, in_channels, out_channels):
        super().__init__()
        self.conv1 = GCNConv(in_channels, HIDDEN)
        self.conv2 = GCNConv(HIDDEN, out_channels)

    def forward(self, x, edge_index):
        return self.conv2(self.conv1(x, edge_index).relu(), edge_index)


TASKS = {{"toy": Task("toy", load, epochs=40, lr={lr}, trainer=counting_train)}}
MODELS = {{"GCN": GCN}}
'''

SEEDS = "--graphnetz-seeds=4"


def trained(pytester: pytest.Pytester) -> int:
    log = pytester.path / "trained.log"
    return len(log.read_text().splitlines()) if log.exists() else 0


def verdicts(output: str) -> list[str]:
    """The Verdict column of the session's gate table."""
    return re.findall(r"(IDENTICAL|NOT WORSE|BETTER|INCONCLUSIVE|REGRESSED|WRITTEN)",
                      gates_table(output))
