"""Every task kind trains end to end on its catalogue task through ``run_benchmark``.

Epochs are cut (``dataclasses.replace``) to keep the file fast; the ranges asserted are
"learned something" (clearly above chance / the constant predictor) and "not saturated".
"""

from __future__ import annotations

from dataclasses import replace

import numpy as np
import pytest

torch = pytest.importorskip("torch")

from torch_geometric.nn import GCN  # noqa: E402

from pytest_graphnetz import Task, run_benchmark  # noqa: E402
from pytest_graphnetz.runner.tasks import catalogue  # noqa: E402
from pytest_graphnetz.runner.training import graph as graph_training  # noqa: E402
from tests.helpers.graph_models import pooled_gin  # noqa: E402

SEEDS = (0, 1)


@pytest.fixture(autouse=True)
def one_thread():
    """Direct trainer calls run on one thread, as the runner pins them (and as fast here)."""
    before = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(before)


def gcn(in_channels: int, out_channels: int) -> torch.nn.Module:
    return GCN(in_channels, 32, 2, out_channels)


def _run(name: str, factory, root, *, epochs: int, **changes):
    task = replace(catalogue()[name](), epochs=epochs, **changes)
    report = run_benchmark({name: task}, {"model": factory}, seeds=SEEDS, device="cpu",
                           root=root)
    return report, report.values(name, "model")


def test_every_kind_is_in_the_catalogue():
    kinds = {name: make().kind for name, make in catalogue().items()}
    assert {kinds["motifs"], kinds["triangles"], kinds["ba_shapes"], kinds["sbm_link"]} == {
        "graph", "graph_reg", "node", "link"}
    assert {"cora", "cora_random", "citeseer", "pubmed_random"} <= set(kinds)


def test_graph_classification_motifs(root):
    report, acc = _run("motifs", pooled_gin, root, epochs=10)
    # Three balanced classes (chance 1/3); the 5- and 6-cycles are hard to tell apart.
    assert np.all(acc > 0.55), acc
    assert not np.all(acc == 1.0), acc
    hist = report.histories[("motifs", "model", 0)]
    assert hist.n_epochs == 10 and hist.val is not None and len(hist.train_loss) == 10
    assert hist.train_loss[-1] < hist.train_loss[0]


def test_graph_regression_triangles(root):
    report, mae = _run("triangles", pooled_gin, root, epochs=10)
    train, _, test = catalogue()["triangles"]().load(root, 0)
    target = torch.cat([g.y for g in test])
    constant = float((target - torch.cat([g.y for g in train]).median()).abs().mean())
    # Far better than the best constant predictor, far from exact (triangles are not countable
    # by message passing).
    assert np.all(mae < 0.5 * constant), (mae, constant)
    assert np.all(mae > 0.3), mae
    assert report.metric("triangles").higher_is_better is False
    hist = report.histories[("triangles", "model", 0)]
    assert set(hist.extra) == {"test_rmse", "val_rmse"}
    assert np.all(np.asarray(hist.extra["test_rmse"]) >= hist.test)  # RMSE >= MAE


def test_node_roles_ba_shapes(root):
    _, acc = _run("ba_shapes", gcn, root, epochs=60)
    # Majority class (base nodes) is 300/700 = 0.43.
    assert np.all(acc > 0.55), acc
    assert not np.all(acc == 1.0), acc


def test_link_prediction_sbm(root):
    report, auc = _run("sbm_link", gcn, root, epochs=40)
    assert np.all((auc > 0.65) & (auc < 0.98)), auc
    hist = report.histories[("sbm_link", "model", 0)]
    assert set(hist.extra) == {"test_hits@10", "test_mrr", "val_hits@10", "val_mrr"}
    assert 0.0 < hist.extra["test_mrr"][-1] < 1.0


def test_link_metric_hits_at_k_and_a_plain_data_loader(root):
    """A loader returning one Data is split by the trainer from the seed (same for all models)."""
    from pytest_graphnetz.runner.tasks.link import sbm_link

    def whole_graph(root: str, *, seed: int):
        train, _, _ = sbm_link(root, seed=seed)
        return train.__class__(x=train.x, edge_index=train.edge_index, num_nodes=train.num_nodes)

    task = Task("plain", whole_graph, kind="link", metric="hits@5", epochs=3)
    report = run_benchmark({"plain": task}, {"a": gcn, "b": gcn}, seeds=[0], device="cpu",
                           root=root)
    assert report.metric("plain").name == "hits@5" and report.metric("plain").higher_is_better
    hist = report.histories[("plain", "a", 0)]
    assert set(hist.extra) == {"test_auc", "test_mrr", "val_auc", "val_mrr"}
    # Same seed, same factory: the split and the negatives are the same, so the runs are too.
    assert hist == report.histories[("plain", "b", 0)]


def test_pair_loader_has_no_held_out_series():
    task = replace(catalogue()["triangles"](), epochs=2)
    train, val, _ = task.load("unused", 0)
    torch.manual_seed(0)
    hist = graph_training.train(pooled_gin(*graph_training.channels(task, (train, val))),
                                (train, val), task=task, device="cpu")
    assert hist.val is None and hist.n_epochs == 2


def test_wrong_metric_for_a_kind_names_the_fix():
    task = replace(catalogue()["triangles"](), metric="accuracy", epochs=1)
    data = task.load("unused", 0)
    with pytest.raises(ValueError, match="computes .*'mae'.*`metric='accuracy'`"):
        graph_training.train(pooled_gin(8, 1), data, task=task, device="cpu")


def test_graph_auc_matches_an_independent_computation():
    """Binary graph task with ``metric="auc"``: the last recorded test AUC is the Mann-Whitney
    U of the trained model's class-1 probabilities, recomputed here with scipy."""
    from scipy.stats import mannwhitneyu
    from torch_geometric.data import Batch

    from pytest_graphnetz.runner.tasks.structure import motif_graphs

    def house_or_5cycle(root: str, *, seed: int):
        return tuple([g for g in split if int(g.y) < 2]
                     for split in motif_graphs(root, seed=seed, num_graphs=90))

    task = Task("binary", house_or_5cycle, kind="graph", metric="auc", epochs=3)
    data = task.load("unused", 0)
    torch.manual_seed(0)
    model = pooled_gin(*graph_training.channels(task, data))
    hist = graph_training.train(model, data, task=task, device="cpu")
    test = Batch.from_data_list(data[2])
    with torch.no_grad():
        prob = model(test.x, test.edge_index, test.batch).softmax(-1)[:, 1].numpy()
    y = test.y.numpy()
    u = mannwhitneyu(prob[y == 1], prob[y == 0]).statistic
    assert hist.test[-1] == pytest.approx(u / ((y == 1).sum() * (y == 0).sum()))
    assert min(hist.test) >= 0.0 and max(hist.test) <= 1.0
