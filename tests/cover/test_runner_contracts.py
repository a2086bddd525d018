"""Contract checks before training: data or code a task cannot train with is
refused, naming the fix, before the first training step."""

from __future__ import annotations

import pytest

from pytest_graphnetz import Task, run_benchmark
from pytest_graphnetz.runner import TripleError
from pytest_graphnetz.runner.training import ContractError, KindMismatchError
from tests.helpers.tiny import gcn, tiny_csbm, tiny_task

TRAINED: list[str] = []


def hetero(root: str):
    import torch
    from torch_geometric.data import HeteroData

    data = HeteroData()
    data["paper"].x = torch.randn(6, 4)
    data["paper"].y = torch.tensor([0, 1, 0, 1, 0, 1])
    data["author"].x = torch.randn(3, 2)
    data["author", "writes", "paper"].edge_index = torch.tensor([[0, 1, 2], [0, 2, 4]])
    return data


def recording_trainer(model, data, *, task, device):
    TRAINED.append(task.name)
    return {"test": [0.5] * task.epochs}


def run(task: Task, factory=gcn, root: str = "unused") -> TripleError:
    TRAINED.clear()
    with pytest.raises(TripleError) as info:
        run_benchmark({task.name: task}, {"M": factory}, seeds=[0], device="cpu", root=root)
    assert TRAINED == [], "the check must come before training"
    return info.value


def test_heterodata_on_a_builtin_trainer_names_the_fix(root):
    error = run(Task("het", hetero, epochs=2), root=root)
    assert isinstance(error.__cause__, ContractError)
    message = str(error)
    assert "HeteroData" in message and "'paper'" in message
    assert "trainer=" in message and "to_homogeneous()" in message


def test_heterodata_without_channels_names_the_fix(root):
    error = run(Task("het", hetero, epochs=2, trainer=recording_trainer), root=root)
    assert isinstance(error.__cause__, ContractError)
    assert "in_channels" in str(error) and "out_channels" in str(error)
    # With both given, the task trains.
    report = run_benchmark(
        {"het": Task("het", hetero, epochs=2, trainer=recording_trainer, in_channels=-1,
                     out_channels=2)}, {"M": gcn}, seeds=[0], device="cpu", root=root)
    assert TRAINED == ["het"] and report.values("het", "M").tolist() == [0.5]


def encode_decode(in_channels: int, out_channels: int):
    import torch

    class EncodeDecode(torch.nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.lin = torch.nn.Linear(in_channels, out_channels)

        def encode(self, x, edge_index):
            return self.lin(x)

        def decode(self, z, pairs):
            return (z[pairs[0]] * z[pairs[1]]).sum(-1)

    return EncodeDecode()


def test_a_model_without_forward_is_refused_for_a_builtin_trainer(root):
    error = run(tiny_task(loader=tiny_csbm, epochs=2), factory=encode_decode, root=root)
    assert isinstance(error.__cause__, KindMismatchError)
    message = str(error)
    assert "has no `forward`" in message and "decode, encode" in message
    assert "def forward(self, x, edge_index)" in message and "`trainer`" in message


def neighbor_trainer(model, data, *, task, device):
    from torch_geometric.loader import NeighborLoader

    TRAINED.append(task.name)
    if task.options.get("sample"):
        NeighborLoader(data, num_neighbors=[2], batch_size=4)
    return {"test": [0.5] * task.epochs}


def test_neighbor_sampling_without_its_backend_is_refused(root, monkeypatch):
    import torch_geometric.typing

    monkeypatch.setattr(torch_geometric.typing, "WITH_PYG_LIB", False)
    monkeypatch.setattr(torch_geometric.typing, "WITH_TORCH_SPARSE", False)
    error = run(tiny_task(loader=tiny_csbm, epochs=2, trainer=neighbor_trainer), root=root)
    assert isinstance(error.__cause__, ContractError)
    message = str(error)
    assert "NeighborLoader" in message and "pyg-lib" in message and "pip install" in message
    # With a backend the check passes (this trainer samples nothing unless asked).
    monkeypatch.setattr(torch_geometric.typing, "WITH_PYG_LIB", True)
    run_benchmark({"t": tiny_task(loader=tiny_csbm, epochs=2, trainer=neighbor_trainer)},
                  {"M": gcn}, seeds=[0], device="cpu", root=root)
    assert TRAINED == ["t"]
