"""``Task(..., folds=k)``: seeds index folds; paired tests and gates use the corrected t test."""

from __future__ import annotations

import math
from dataclasses import replace

import numpy as np
import pytest

from pytest_graphnetz import BenchmarkReport, Task
from pytest_graphnetz.stats.heldout import corrected_resampled_ttest
from pytest_graphnetz.stats.paired import fold_corrected
from tests.helpers.tiny import gcn, sage, tiny_task

torch = pytest.importorskip("torch")

from pytest_graphnetz import run_benchmark  # noqa: E402


def test_node_folds_partition_every_node_once_per_repeat_stratified(root):
    task = tiny_task(folds=5)
    k = 5
    for repeat in (0, 1):
        tested = []
        for seed in range(repeat * k, repeat * k + k):
            data = task.load(root, seed)
            train, val, test = data.train_mask, data.val_mask, data.test_mask
            assert not (train & val).any() and not (train & test).any() and not (val & test).any()
            assert bool((train | val | test).all())
            # Stratified: each class's share of the test fold is within one node of 1/k.
            for c in data.y.unique():
                in_class = data.y == c
                assert abs(int((test & in_class).sum()) - int(in_class.sum()) / k) <= 1
            # The validation fold is the next fold's test fold.
            nxt = task.load(root, repeat * k + (seed + 1) % k)
            assert torch.equal(val, nxt.test_mask)
            tested.append(test)
        counts = torch.stack(tested).sum(0)
        assert bool((counts == 1).all())  # every node tested exactly once per repeat
    # Two repeats draw two partitions.
    assert not torch.equal(task.load(root, 0).test_mask, task.load(root, k).test_mask)


def test_graph_folds_pool_the_loaders_split(root):
    from pytest_graphnetz.runner.tasks import catalogue

    task = replace(catalogue()["motifs"](), folds=4)
    pooled = task.loader(root) if not task.seeded else task.loader(root, seed=0)
    n = sum(len(part) for part in pooled)
    seen = []
    for seed in range(4):
        train, val, test = task.load(root, seed)
        assert len(train) + len(val) + len(test) == n
        seen += [repr(g.x.sum().item()) + repr(g.edge_index.shape) for g in test]
    assert len(seen) == n


@pytest.mark.parametrize("bad", [2, 1, True, 2.5])
def test_folds_are_validated(bad):
    with pytest.raises(ValueError, match="`folds` must be an integer >= 3"):
        tiny_task(folds=bad)
    with pytest.raises(ValueError, match="on a node or graph task"):
        Task("l", lambda root: None, kind="link", folds=5)


@pytest.fixture(scope="module")
def fold_report(tmp_path_factory):
    root = str(tmp_path_factory.mktemp("data"))
    return run_benchmark({"tiny": tiny_task(epochs=6, folds=5)}, {"GCN": gcn, "SAGE": sage},
                         seeds=range(5), device="cpu", root=root)


def test_pairwise_on_folds_is_the_corrected_t_test(fold_report):
    from scipy import stats

    assert fold_report.folds("tiny") == 5
    table = fold_report.pairwise()  # asked for the plain paired t: gets the corrected one
    (row,) = table.rows
    a, b = fold_report.values("tiny", "GCN"), fold_report.values("tiny", "SAGE")
    d = a - b
    j, k = d.size, 5
    # The formula, by hand: t = mean / sqrt((1/J + n_test/n_train) s^2), J - 1 df.
    se = math.sqrt((1 / j + 1 / (k - 2)) * d.var(ddof=1))  # 1 test fold, k - 2 training
    p = 2 * stats.t.sf(abs(d.mean() / se), j - 1)
    assert row.test == "corrected-t (folds)"
    assert row.p_value == pytest.approx(p, rel=1e-9)
    half = stats.t.ppf(0.975, j - 1) * se
    assert (row.ci_low, row.ci_high) == (pytest.approx(d.mean() - half),
                                         pytest.approx(d.mean() + half))
    assert any("5-fold cross-validation" in n and "Nadeau" in n for n in table.notes)
    summary = fold_report.summary()
    assert all(r.method == "fold spread: mean ± std, not a CI" for r in summary.rows)
    assert "fold variability, not a confidence interval" in str(summary)


def test_fold_corrected_values_turn_the_paired_t_into_the_corrected_one():
    from pytest_graphnetz.stats.paired import paired_test

    rng = np.random.default_rng(0)
    a, b = rng.normal(0.8, 0.02, size=10), rng.normal(0.79, 0.02, size=10)
    plain_on_corrected = paired_test(fold_corrected(a, b, k=10), b, test="paired-t")
    corrected = corrected_resampled_ttest(a, b, n_train=8, n_test=1)
    assert plain_on_corrected.p_value == pytest.approx(corrected.p_value, rel=1e-9)
    assert plain_on_corrected.mean_diff == pytest.approx(corrected.mean_diff)


def test_gate_on_fold_data_uses_the_corrected_test_and_says_so(fold_report):
    from pytest_graphnetz.gates import compare_reports

    # A candidate 0.02 worse on every fold, with fold noise: the plain paired t would
    # call this decisively; the corrected test is wider.
    values = fold_report.to_array()
    rng = np.random.default_rng(1)
    worse = values.copy()
    worse[0, 1] = values[0, 0] - 0.02 + rng.normal(0, 0.02, size=5)
    cand = BenchmarkReport.from_arrays(worse, tasks=["tiny"], models=["GCN", "SAGE"],
                                       seeds=range(5), metric="accuracy")
    cand.protocol = dict(fold_report.protocol)
    base = BenchmarkReport.from_arrays(np.repeat(values[:, :1], 2, axis=1), tasks=["tiny"],
                                       models=["GCN", "SAGE"], seeds=range(5),
                                       metric="accuracy")
    verdicts = compare_reports(cand, base, gate="not_worse")
    sage_cell = verdicts[1].comparison
    d = worse[0, 1] - values[0, 0]
    expected = corrected_resampled_ttest(worse[0, 1], values[0, 0], n_train=3, n_test=1)
    assert sage_cell.evidence.mean_diff == pytest.approx(d.mean())
    # One-sided p of the corrected test (H0: mean d >= 0) is half its two-sided p here.
    assert sage_cell.evidence.p_value == pytest.approx(expected.p_value / 2, rel=1e-6)
    assert any("corrected resampled t" in n for n in sage_cell.notes)


FOLD_PROJECT = '''
import torch
from torch_geometric.data import Data
from torch_geometric.nn import GCNConv
from torch_geometric.utils import stochastic_blockmodel_graph

from pytest_graphnetz import Task, assert_not_worse

LR = {lr}


def load(root):
    gen = torch.Generator().manual_seed(0)
    y = torch.arange(3).repeat_interleave(30)
    x = torch.nn.functional.one_hot(y, 3).float() + 1.5 * torch.randn(90, 3, generator=gen)
    edge_index = stochastic_blockmodel_graph(  # the runner reseeds an unseeded loader
        [30, 30, 30], [[0.2, 0.01, 0.01], [0.01, 0.2, 0.01], [0.01, 0.01, 0.2]])
    return Data(x=x, edge_index=edge_index, y=y)


class GCN(torch.nn.Module):
    def __init__(self, in_channels, out_channels):
        super().__init__()
        self.conv1 = GCNConv(in_channels, 16)
        self.conv2 = GCNConv(16, out_channels)

    def forward(self, x, edge_index):
        return self.conv2(self.conv1(x, edge_index).relu(), edge_index)


def test_folds(graphnetz_run, graphnetz_baseline):
    report = graphnetz_run({{"toy": Task("toy", load, epochs=30, lr=LR, folds=4)}},
                           {{"GCN": GCN}})
    assert report.folds("toy") == 4
    assert_not_worse(report, graphnetz_baseline())
'''


def test_a_gate_on_fold_data_names_the_corrected_test(pytester):
    pytester.makepyfile(test_fold_gate=FOLD_PROJECT.format(lr=0.05))
    pytester.runpytest("-o", "graphnetz_seeds=8", "--graphnetz-update-baselines").assert_outcomes(
        passed=1)
    pytester.makepyfile(test_fold_gate=FOLD_PROJECT.format(lr=0.0))  # never trains
    result = pytester.runpytest("-o", "graphnetz_seeds=8")
    text = result.stdout.str()
    result.assert_outcomes(failed=1)
    assert "REGRESSED" in text
    assert "4-fold cross-validation" in text and "corrected resampled t test" in text
