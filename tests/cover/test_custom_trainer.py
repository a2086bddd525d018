"""Custom training loops (``Task(..., trainer=fn)``) under the runner's seeding, cache and gates.

The main example is deliberately not PyG: numpy data, a plain ``nn.Sequential`` and a
mini-batch loop that draws its shuffles and dropout masks from the global torch RNG, so only
the runner's per-triple reseeding can make it reproducible.
"""

from __future__ import annotations

import numpy as np
import pytest

torch = pytest.importorskip("torch")

from pytest_graphnetz import History, Task, assert_not_worse, run_benchmark  # noqa: E402
from pytest_graphnetz.report.codec import dumps  # noqa: E402
from pytest_graphnetz.runner import TripleError  # noqa: E402
from tests.helpers.tiny import gcn, tiny_task  # noqa: E402


def blobs(root: str, *, seed: int) -> dict:
    """Two overlapping Gaussian blobs in 4-D as numpy arrays, split 60/20/20 (not PyG data)."""
    rng = np.random.default_rng(seed)
    y = rng.integers(2, size=200)
    x = rng.normal(size=(200, 4)) + 0.8 * y[:, None]
    return {"x": x.astype(np.float32), "y": y, "split": np.repeat([0, 1, 2], [120, 40, 40])}


def mlp(in_channels: int, out_channels: int) -> torch.nn.Module:
    return torch.nn.Sequential(torch.nn.Linear(in_channels, 16), torch.nn.ReLU(),
                               torch.nn.Dropout(0.3), torch.nn.Linear(16, out_channels))


def wide_mlp(in_channels: int, out_channels: int) -> torch.nn.Module:
    return torch.nn.Sequential(torch.nn.Linear(in_channels, 64), torch.nn.ReLU(),
                               torch.nn.Linear(64, out_channels))


def minibatch_loop(model, data, *, task, device) -> dict:
    """A team's own loop: shuffled mini-batches, accuracy on val and test per epoch."""
    assert isinstance(device, torch.device)
    x = torch.as_tensor(data["x"], device=device)
    y = torch.as_tensor(data["y"], device=device)
    split = torch.as_tensor(data["split"], device=device)
    train = (split == 0).nonzero().view(-1)
    optimizer = torch.optim.SGD(model.parameters(), lr=task.lr)
    out: dict = {"test": [], "val": [], "train_loss": []}
    for _ in range(task.epochs):
        model.train()
        for batch in train[torch.randperm(train.numel(), device=device)].split(16):
            optimizer.zero_grad()
            loss = torch.nn.functional.cross_entropy(model(x[batch]), y[batch])
            loss.backward()
            optimizer.step()
        model.eval()
        with torch.no_grad():
            correct = model(x).argmax(-1) == y
        out["train_loss"].append(float(loss.detach()))
        out["val"].append(float(correct[split == 1].float().mean()))
        out["test"].append(float(correct[split == 2].float().mean()))
    return out


TASK = Task("blobs", blobs, kind="node", trainer=minibatch_loop, in_channels=4, out_channels=2,
            epochs=5, lr=0.1)
MODELS = {"mlp": mlp, "wide": wide_mlp}


def _run(root, models=MODELS, **kw):
    return run_benchmark({"blobs": TASK}, models, seeds=[0, 1, 2], device="cpu", root=root, **kw)


def test_custom_trainer_report_is_bit_for_bit_reproducible(root, tmp_path):
    first = _run(root)
    second = _run(root, models=dict(reversed(MODELS.items())))  # model order changes nothing
    assert second.models == ("wide", "mlp")
    assert dumps(first.to_dict()) == dumps(second.subset(models=first.models).to_dict())
    # Not trivially equal: seeds give different runs (the loop draws from the torch RNG).
    assert first.histories[("blobs", "mlp", 0)] != first.histories[("blobs", "mlp", 1)]
    assert first.histories[("blobs", "mlp", 0)] != first.histories[("blobs", "wide", 0)]
    assert first.protocol["tasks"]["blobs"]["trainer"] == "custom"

    statuses: list[str] = []
    cache = tmp_path / "cache"
    fresh = _run(root, cache_dir=cache, progress=lambda *a: statuses.append(a[3]))
    cached = _run(root, cache_dir=cache, progress=lambda *a: statuses.append(a[3]))
    assert statuses == ["trained"] * 6 + ["cached"] * 6
    assert dumps(fresh.to_dict()) == dumps(cached.to_dict()) == dumps(first.to_dict())


def test_custom_trainer_feeds_histories_and_gates(root):
    report = _run(root)
    hist = report.histories[("blobs", "wide", 2)]
    assert hist.n_epochs == 5 and hist.val is not None and len(hist.train_loss) == 5
    assert np.all(report.values("blobs", "wide") > 0.6)  # learned the blobs (chance 0.5)
    assert report.epoch_selection_support() == {"blobs": True}
    verdicts = assert_not_worse(_run(root), report, first_look=3)
    assert {v.verdict for v in verdicts} == {"IDENTICAL"}


def pyg_loop(model, data, *, task, device) -> History:
    """A custom loop over a PyG node task returning a History with an extra series."""
    optimizer = torch.optim.Adam(model.parameters(), lr=0.01)
    test, loss_series, margin = [], [], []
    for _ in range(task.epochs):
        model.train()
        optimizer.zero_grad()
        logits = model(data.x, data.edge_index)
        loss = torch.nn.functional.cross_entropy(logits[data.train_mask], data.y[data.train_mask])
        loss.backward()
        optimizer.step()
        pred = logits.argmax(-1)
        test.append(float((pred[data.test_mask] == data.y[data.test_mask]).float().mean()))
        loss_series.append(float(loss.detach()))
        margin.append(float(logits.detach().max(-1).values.mean()))
    return History(test=test, train_loss=loss_series, extra={"test_margin": margin})


def test_custom_pyg_trainer_returning_a_history(root):
    task = tiny_task(trainer=pyg_loop)
    report = run_benchmark({"tiny": task}, {"GCN": gcn}, seeds=[0, 1], device="cpu", root=root)
    hist = report.histories[("tiny", "GCN", 0)]
    assert list(hist.extra) == ["test_margin"] and hist.val is None
    assert report.epoch_selection_support() == {"tiny": False}  # no val series: final only


def broken_loop(model, data, *, task, device):
    return [0.5, 0.6]


def test_a_trainer_returning_the_wrong_type_is_named(root):
    task = tiny_task(trainer=broken_loop)
    with pytest.raises(TripleError, match="trainer of task 'tiny': a trainer must return a "
                                          "History or a mapping"):
        run_benchmark({"tiny": task}, {"GCN": gcn}, seeds=[0], device="cpu", root=root)
