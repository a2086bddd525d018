"""A full cache hit does not run the loader: the data fingerprint and channels come
from the load record, trusted while the loader's code, arguments and data files are unchanged.
"""

from __future__ import annotations

import functools
import os
import threading
from types import SimpleNamespace

import numpy as np
import pytest

from pytest_graphnetz import Task, run_benchmark
from pytest_graphnetz.report.codec import dumps
from tests.helpers.tiny import gcn, tiny_csbm, tiny_task

# Loader calls, counted in an object the cache key does not read (a plain list or int
# constant would be in the loader's identity and change the key as it counts).
CALLS = SimpleNamespace(n=0)


def counted_csbm(root: str, *, seed: int):
    CALLS.n += 1
    return tiny_csbm(root, seed=seed)


def from_file(root: str, *, path: str):
    """A loader reading a file outside its root (as a user's loader of ../data/cora.npz does)."""
    from torch_geometric.data import Data

    CALLS.n += 1
    x = np.load(path)
    import torch

    n = len(x)
    return Data(x=torch.tensor(x), y=torch.arange(n) % 2,
                edge_index=torch.stack([torch.arange(n), (torch.arange(n) + 1) % n]),
                train_mask=torch.arange(n) < n // 2, test_mask=torch.arange(n) >= n // 2)


def sweep(task: Task, root, cache, seeds=(0, 1)) -> tuple[object, list[str], int]:
    """(report, statuses, loader calls) of one run."""
    statuses, before = [], CALLS.n
    report = run_benchmark({task.name: task}, {"GCN": gcn}, seeds=list(seeds), device="cpu",
                           root=root, cache_dir=cache,
                           progress=lambda t, m, s, status, secs: statuses.append(status))
    return report, statuses, CALLS.n - before


def test_a_full_hit_runs_no_loader_and_gives_the_same_report(root, tmp_path):
    task = tiny_task(loader=counted_csbm)
    cold, statuses, calls = sweep(task, root, tmp_path / "cache")
    assert statuses == ["trained", "trained"] and calls == 2
    warm, statuses, calls = sweep(task, root, tmp_path / "cache")
    assert statuses == ["cached", "cached"] and calls == 0
    assert dumps(warm.to_dict()) == dumps(cold.to_dict())
    # A new seed loads its own data; the cached ones still do not.
    _, statuses, calls = sweep(task, root, tmp_path / "cache", seeds=(0, 1, 2))
    assert statuses == ["cached", "cached", "trained"] and calls == 1


def test_a_touched_data_file_under_the_root_runs_the_loader_again(root, tmp_path):
    task = tiny_task(loader=counted_csbm)
    sweep(task, root, tmp_path / "cache")
    data_file = next(p for p in (tmp_path / "data").rglob("seed_0.pt"))
    os.utime(data_file, ns=(1, 1))  # same bytes, another mtime: seed 0's loader runs
    _, statuses, calls = sweep(task, root, tmp_path / "cache")
    assert calls == 1
    assert statuses == ["cached", "cached"]  # it returned the same data: no retraining


def test_a_changed_data_file_outside_the_root_is_caught(root, tmp_path):
    path = tmp_path / "features.npy"
    np.save(path, np.linspace(0, 1, 24, dtype=np.float32).reshape(12, 2))
    task = Task("file", functools.partial(from_file, path=str(path)), epochs=2)
    first, _, _ = sweep(task, root, tmp_path / "cache")
    _, statuses, calls = sweep(task, root, tmp_path / "cache")
    assert (statuses, calls) == (["cached", "cached"], 0)
    np.save(path, np.linspace(0, 2, 24, dtype=np.float32).reshape(12, 2))
    second, statuses, calls = sweep(task, root, tmp_path / "cache")
    assert calls == 2 and statuses == ["trained", "trained"]
    assert second.fingerprints["data"] != first.fingerprints["data"]


def test_a_loader_carrying_a_value_without_stable_text_always_runs(root, tmp_path):
    lock = threading.Lock()  # no stable text: the loader cannot be keyed

    def loader(root: str, *, seed: int):
        with lock:
            return counted_csbm(root, seed=seed)

    task = tiny_task(loader=loader)
    sweep(task, root, tmp_path / "cache")
    _, statuses, calls = sweep(task, root, tmp_path / "cache")
    assert statuses == ["cached", "cached"] and calls == 2


@pytest.mark.parametrize("change", ["loader argument", "closure value"])
def test_a_loader_whose_arguments_change_runs_again(root, tmp_path, change):
    def make(nodes: int) -> Task:
        if change == "loader argument":
            return Task("args", functools.partial(sized, nodes=nodes), epochs=2)

        def closure(root: str, *, seed: int):
            return sized(root, seed=seed, nodes=nodes)

        return Task("args", closure, epochs=2)

    first, _, _ = sweep(make(30), root, tmp_path / "cache")
    second, statuses, calls = sweep(make(31), root, tmp_path / "cache")
    assert calls == 2 and statuses == ["trained", "trained"]
    assert second.fingerprints["data"] != first.fingerprints["data"]


def sized(root: str, *, seed: int, nodes: int):
    import torch
    from torch_geometric.data import Data

    CALLS.n += 1
    g = torch.Generator().manual_seed(seed)
    x = torch.randn(nodes, 3, generator=g)
    return Data(x=x, y=(x[:, 0] > 0).long(), edge_index=torch.randint(0, nodes, (2, 2 * nodes),
                                                                       generator=g),
                train_mask=torch.arange(nodes) < nodes // 2,
                test_mask=torch.arange(nodes) >= nodes // 2)
