"""Catalogue categories `social` and `synthetic`: splits, seeding, disk cache, and a full sweep."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from pytest_graphnetz import run_benchmark
from pytest_graphnetz.runner.tasks import resolve_tasks
from pytest_graphnetz.runner.tasks import synthetic as syn
from pytest_graphnetz.runner.tasks.social import load_karate
from pytest_graphnetz.runner.tasks.splits import stratified_masks

SMALL = syn.CSBM("small", num_classes=3, nodes_per_class=30, p_in=0.15, p_out=0.02,
                 num_features=4, mean_norm=1.0)


def gcn16(in_channels: int, out_channels: int):
    """Kipf & Welling's GCN: 2 layers, 16 hidden units, dropout 0.5."""
    from torch_geometric.nn import GCN

    return GCN(in_channels, 16, 2, out_channels, dropout=0.5)


def _edge_homophily(data) -> float:
    src, dst = data.edge_index
    return float((data.y[src] == data.y[dst]).float().mean())


def test_categories_resolve_to_node_tasks():
    social = resolve_tasks("social")
    synthetic = resolve_tasks("synthetic")
    assert list(social) == ["karate"]
    assert list(synthetic) == ["csbm_homophilous", "csbm_heterophilous"]
    for task in [*social.values(), *synthetic.values()]:
        assert task.kind == "node" and task.seeded
        assert task.category in ("social", "synthetic")


def test_karate_split_is_stratified_disjoint_and_seeded(tmp_path):
    data = load_karate(str(tmp_path), seed=0)
    assert (data.num_nodes, int(data.y.max()) + 1, data.edge_index.size(1)) == (34, 4, 156)
    masks = torch.stack([data.train_mask, data.val_mask, data.test_mask])
    assert (masks.sum(0) == 1).all()  # every node in exactly one split
    for mask in masks:
        assert set(data.y[mask].tolist()) == {0, 1, 2, 3}  # every class in every split
    assert int(data.test_mask.sum()) == 8
    again = load_karate(str(tmp_path), seed=0)
    other = load_karate(str(tmp_path), seed=1)
    assert torch.equal(again.test_mask, data.test_mask)
    assert not torch.equal(other.test_mask, data.test_mask)


def test_stratified_masks_refuse_tiny_classes():
    with pytest.raises(ValueError, match="class 1 has 2 node"):
        stratified_masks(torch.tensor([0, 0, 0, 1, 1]), seed=0)


@pytest.mark.parametrize("params, low, high", [(syn.HOMOPHILOUS, 0.5, 0.7),
                                               (syn.HETEROPHILOUS, 0.05, 0.15)])
def test_csbm_has_the_intended_size_and_homophily(tmp_path, params, low, high):
    data = syn.load_csbm(params, str(tmp_path), seed=0)
    assert data.num_nodes == 1600 and data.num_features == 32
    assert low < _edge_homophily(data) < high
    assert low < syn.homophily(params) < high
    from torch_geometric.utils import is_undirected

    assert is_undirected(data.edge_index, num_nodes=data.num_nodes)
    assert int(data.test_mask.sum()) == 960  # 60% of each class: enough for a useful gate


def test_csbm_depends_on_the_seed_only_not_the_global_rng(tmp_path):
    torch.manual_seed(123)
    state = torch.get_rng_state()
    a = syn.generate(SMALL, seed=5)
    assert torch.equal(torch.get_rng_state(), state)  # the caller's stream is untouched
    torch.manual_seed(999)
    b = syn.generate(SMALL, seed=5)
    c = syn.generate(SMALL, seed=6)
    for key in a:
        assert torch.equal(a[key], b[key]), key
    assert not torch.equal(a["edge_index"], c["edge_index"])
    assert not torch.equal(a["x"], c["x"])
    assert not torch.equal(a["test_mask"], c["test_mask"])


def test_csbm_disk_cache_is_used_and_a_corrupt_file_is_regenerated(tmp_path, monkeypatch):
    first = syn.load_csbm(SMALL, str(tmp_path), seed=2)
    path = tmp_path / "seed_2.pt"
    assert path.exists()

    def no_generation(params, seed):
        raise AssertionError("regenerated although the cache file is valid")

    with monkeypatch.context() as m:
        m.setattr(syn, "generate", no_generation)
        cached = syn.load_csbm(SMALL, str(tmp_path), seed=2)
    assert torch.equal(cached.x, first.x) and torch.equal(cached.edge_index, first.edge_index)

    path.write_bytes(path.read_bytes()[:100])  # a half-written file
    with pytest.warns(UserWarning, match="seed_2.pt"):
        again = syn.load_csbm(SMALL, str(tmp_path), seed=2)
    assert torch.equal(again.x, first.x)
    syn.load_csbm(SMALL, str(tmp_path), seed=2)  # and the rewritten file is valid: no warning


def test_csbm_cache_of_other_parameters_is_not_reused(tmp_path):
    syn.load_csbm(SMALL, str(tmp_path), seed=0)
    bigger = syn.CSBM("small", num_classes=3, nodes_per_class=31, p_in=0.15, p_out=0.02,
                      num_features=4, mean_norm=1.0)
    with pytest.warns(UserWarning, match="other parameters"):
        data = syn.load_csbm(bigger, str(tmp_path), seed=0)
    assert data.num_nodes == 93


@pytest.mark.slow   # 9-29 s on an idle core: over the fast tier's budget
def test_whole_social_and_synthetic_catalogue_two_seeds(tmp_path):
    """The acceptance run: every node task, 2 seeds (the fewest that show the split is drawn per
    seed), default epochs (200). Its speed is a benchmark's business (benchmarks/), not a timed
    assertion that flakes on a loaded machine."""
    report = run_benchmark(["karate", "csbm_homophilous", "csbm_heterophilous"], {"GCN": gcn16},
                           seeds=range(2), device="cpu", root=tmp_path / "data")
    assert report.diverged() == []
    assert all(h.n_epochs == 200 for h in report.histories.values())
    homo = report.values("csbm_homophilous", "GCN")
    hetero = report.values("csbm_heterophilous", "GCN")
    # Neither trivial nor hopeless, and heterophily clearly harder for a GCN (chance is 0.25).
    assert 0.65 < homo.mean() < 0.92, homo
    assert hetero.mean() < homo.mean() - 0.2, (homo, hetero)
    assert hetero.mean() > 0.2
    assert np.isfinite(report.values("karate", "GCN")).all()
    for task in report.tasks:
        fps = {report.data_fingerprint(task, s) for s in report.seeds}
        assert len(fps) == 2, task  # every task's data/split is drawn from the seed
