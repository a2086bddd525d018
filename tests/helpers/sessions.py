"""Scratch projects run as real pytest sessions, and what is read from their output: the toy
node task that logs what it trains, a passing gate, the tiny project with live progress,
calibration runs, and the ``graphnetz gates`` table."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import TYPE_CHECKING

import pytest

from tests.helpers import tiny

if TYPE_CHECKING:
    from pytest_graphnetz.gates.calibration.resolution import Calibration

def gates_table(output: str) -> str:
    """The gate table alone: from its header to the next ``====`` separator line.

    The failure messages also name verdicts, and under ``CI=true`` pytest prints them whole in
    the short test summary, so the table must be cut out, not just everything after it.
    """
    match = re.search(r"=+ graphnetz gates =+\n(.*?)(?:^=+|\Z)", output, re.S | re.M)
    return match.group(1) if match else ""


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


PASSING = """
import os
import shutil

from pytest_graphnetz import BenchmarkReport, assert_not_worse


def report():
    return BenchmarkReport.from_arrays([[[0.80, 0.82, 0.79]]], tasks=["karate"],
                                       models=["GCN"], seeds=range(3), metric="accuracy")


def test_gate():
    for blocked in {blocked!r}:  # a path that became a file after the session started
        shutil.rmtree(blocked, ignore_errors=True)
        open(blocked, "w").close()
    assert_not_worse(report(), report(), first_look=3)
"""


OUTPUTS = ("json", "summary", "comment")


PROJECT = '''
from scratch_tiny import gcn, tiny_task


def test_trains(graphnetz_run):
    report = graphnetz_run({"tiny": tiny_task(epochs=2)}, {"GCN": gcn})
    assert list(report.seeds) == [0, 1, 2]
'''

LIVE = re.compile(r"graphnetz: (\d+)/(\d+) triples \((\d+) trained, (\d+) from cache\)")


@pytest.fixture
def project(pytester: pytest.Pytester) -> pytest.Pytester:
    pytester.makepyfile(scratch_tiny=Path(tiny.__file__).read_text(), test_p=PROJECT)
    return pytester


def live_lines(output: str) -> list[tuple[int, ...]]:
    return [tuple(int(g) for g in m.groups()) for m in LIVE.finditer(output)]


CALIBRATION_ARGS = ["--override-ini=graphnetz_seeds=4", "--graphnetz-device=cpu",
                    "-p", "no:cacheprovider", "-p", "no:randomly"]


def calibrate(pytester: pytest.Pytester, test: str) -> tuple[Calibration, str]:
    from pytest_graphnetz.gates.calibration.store import read_calibration

    pytester.runpytest_inprocess(*CALIBRATION_ARGS, "--graphnetz-update-baselines").assert_outcomes(
        passed=1)
    result = pytester.runpytest_inprocess(*CALIBRATION_ARGS, "--graphnetz-calibrate")
    assert result.ret == 0, result.stdout.str()
    assert "TypeError" not in result.stdout.str()
    path = pytester.path / "baselines" / test.replace("::", "/")
    path = path.with_name(path.name + ".calibration.json")
    assert f"calibration written to {path}" in result.stdout.str()
    return read_calibration(path), result.stdout.str()


def verdict_rows(pytester: pytest.Pytester, *args: str) -> dict[str, dict]:
    out = pytester.runpytest_inprocess(*CALIBRATION_ARGS, "--graphnetz-json=verdicts.json", *args)
    assert out.ret == 0, out.stdout.str()
    return {r["cell"]: r for r in json.loads((pytester.path / "verdicts.json").read_text())["rows"]}


TRAINER_GATES = """
from pytest_graphnetz import assert_not_worse

import project


def test_models(graphnetz_run, graphnetz_baseline):
    assert_not_worse(graphnetz_run(project.TASKS, project.MODELS), graphnetz_baseline())
"""


TRAINER_PROJECT = '''
import torch
import torch.nn.functional as F
from torch_geometric.nn import GAT, GCN

from pytest_graphnetz import Task
from pytest_graphnetz.runner.tasks.synthetic import CSBM, load_csbm

GAT_EPOCHS = {gat_epochs}
SHIFT = {shift}


def load(root, *, seed):
    params = CSBM("tiny", num_classes=3, nodes_per_class=20, p_in=0.2, p_out=0.03,
                  num_features=8, mean_norm=1.0)
    return load_csbm(params, root, seed)


def fit(model, data, optimizer, epochs):
    out = {{"test": [], "val": [], "optimizer": type(optimizer).__name__}}
    for _ in range(epochs):
        model.train()
        optimizer.zero_grad()
        logits = model(data.x, data.edge_index)
        F.cross_entropy(logits[data.train_mask], data.y[data.train_mask]).backward()
        optimizer.step()
        model.eval()
        with torch.no_grad():
            pred = model(data.x, data.edge_index).argmax(-1)
        for split in ("val", "test"):
            mask = data[split + "_mask"]
            out[split].append(float((pred[mask] == data.y[mask]).float().mean()))
    assert out.pop("optimizer") == ("Adam" if isinstance(model, GCN) else "SGD")
    return out


def train_gcn(model, data, *, task, device):
    if SHIFT:
        torch.rand(1)  # an innocent change: the dropout draws shift
    return fit(model, data, torch.optim.Adam(model.parameters(), lr=0.01, weight_decay=5e-4), 30)


def train_gat(model, data, *, task, device):
    optimizer = torch.optim.SGD(model.parameters(), lr=0.05, momentum=0.9)
    return fit(model, data, optimizer, GAT_EPOCHS)


def gcn(in_channels, out_channels):
    return GCN(in_channels, 16, 2, out_channels, dropout=0.5)


def gat(in_channels, out_channels):
    return GAT(in_channels, 16, 2, out_channels, dropout=0.5, heads=2)


TASKS = {{"tiny": Task("tiny", load, trainer={{"GCN": train_gcn, "GAT": train_gat}})}}
MODELS = {{"GCN": gcn, "GAT": gat}}
'''


LEAKY_PROJECT = '''
import os

import numpy as np
import torch
from pytest_graphnetz import Task, assert_not_worse


def noisy_classes(root, *, seed):
    """300 nodes, 32 noise features and a weak class signal; split 100/100/100 per seed."""
    rng = np.random.default_rng(seed)
    y = rng.integers(2, size=300)
    x = rng.normal(size=(300, 32))
    x[:, 0] += 0.7 * y
    return {"x": x.astype(np.float32), "y": y, "split": rng.permutation(
        np.repeat([0, 1, 2], 100))}


def full_batch(model, data, *, task, device):
    x = torch.as_tensor(data["x"])
    y = torch.as_tensor(data["y"])
    split = torch.as_tensor(data["split"])
    # the planted leak: the test nodes' labels in the training loss
    fit = (split == 0) | (split == 2) if getattr(model, "leak", False) else split == 0
    optimizer = torch.optim.Adam(model.parameters(), lr=0.02)
    out = {"test": [], "val": [], "train_loss": []}
    for _ in range(task.epochs):
        model.train()
        optimizer.zero_grad()
        loss = torch.nn.functional.cross_entropy(model(x[fit]), y[fit])
        loss.backward()
        optimizer.step()
        model.eval()
        with torch.no_grad():
            correct = model(x).argmax(-1) == y
        out["train_loss"].append(float(loss))
        out["val"].append(float(correct[split == 1].float().mean()))
        out["test"].append(float(correct[split == 2].float().mean()))
    return out


TASK = Task("noisy", noisy_classes, kind="node", trainer=full_batch, in_channels=32,
            out_channels=2, epochs=60)


def mlp(i, o):
    model = torch.nn.Sequential(torch.nn.Linear(i, 64), torch.nn.ReLU(),
                                torch.nn.Linear(64, o))
    model.leak = os.environ.get("PLANT_LEAK") == "1"
    return model


def test_mlp(graphnetz_run, graphnetz_baseline):
    report = graphnetz_run({"noisy": TASK}, {"MLP": mlp})
    assert_not_worse(report, graphnetz_baseline())
'''


GATE_TEST = """
from pytest_graphnetz import assert_not_worse

import toy


def test_gcn(graphnetz_run, graphnetz_baseline):
    report = graphnetz_run(toy.TASKS, toy.MODELS)
    assert_not_worse(report, graphnetz_baseline())
"""


def suite_conftest() -> str:
    """tests/conftest.py without its ``pytest_plugins``: the suite's hooks and profile for a
    scratch session, which cannot import ``tests.helpers``."""
    text = (Path(__file__).resolve().parents[1] / "conftest.py").read_text(encoding="utf-8")
    return re.sub(r"(?ms)^pytest_plugins = \[.*?^\]\n", "", text)
