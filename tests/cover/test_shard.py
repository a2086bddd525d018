"""Sharding by triple: the split every shard job computes alike, balanced by expected cost; a
cache-only run that refuses a missing triple by name; bad shard specs. The whole CI flow (4
shards, then a cache-only gate, against one local run) is tests/slow/test_shard_slow.py."""

from __future__ import annotations

import pytest

from pytest_graphnetz import run_benchmark
from pytest_graphnetz.runner.shard import (
    MissingTriplesError,
    Planned,
    Shard,
    ShardTrained,
    assign,
    parse_shard,
    triple_label,
)
from tests.helpers.tiny import gcn, tiny_task


@pytest.mark.parametrize(("text", "shard"), [("1/4", Shard(1, 4)), (" 4 / 4 ", Shard(4, 4)),
                                             ("1/1", Shard(1, 1))])
def test_shards_count_from_one(text, shard):
    assert parse_shard(text) == shard


@pytest.mark.parametrize(("text", "says"), [
    ("3/2", "shard 3 of 2 does not exist"), ("0/4", "shards count from 1"),
    ("1/0", "does not exist"), ("a/b", "expected I/N"), ("2", "expected I/N"),
    ("-1/4", "expected I/N"), ("", "expected I/N")])
def test_bad_shards_are_refused(text, says):
    with pytest.raises(ValueError, match=r"^`--graphnetz-shard`") as err:
        parse_shard(text)
    assert says in str(err.value)


def _cells(cost_a=40.0, cost_b=10.0, seeds=20):
    labels, costs = [], []
    for task, cost in (("A", cost_a), ("B", cost_b)):
        for model in ("GCN", "SAGE", "GAT"):
            for seed in range(seeds):
                labels.append(triple_label(task, model, seed))
                costs.append(cost)
    return labels, costs


@pytest.mark.parametrize("count", [2, 3, 4, 7])
def test_cells_4x_apart_split_within_15_percent(count):
    labels, costs = _cells()
    shard_of = assign(labels, costs, count)
    loads = [sum(c for c, s in zip(costs, shard_of, strict=True) if s == k)
             for k in range(1, count + 1)]
    assert sorted(set(shard_of)) == list(range(1, count + 1))
    assert max(loads) <= 1.15 * sum(costs) / count


def test_the_split_ignores_order_and_cache_state():
    labels, costs = _cells()
    first = dict(zip(labels, assign(labels, costs, 4), strict=True))
    backwards = dict(zip(labels[::-1], assign(labels[::-1], costs[::-1], 4), strict=True))
    assert first == backwards


def test_a_shard_trains_its_share_and_returns_no_report(root, tmp_path):
    trained: dict[int, list[int]] = {}
    for index in (1, 2, 3):
        seen: list[int] = []
        with pytest.raises(ShardTrained, match=rf"^shard {index} of 3: trained \d+ triples"
                           ) as done:
            run_benchmark({"tiny": tiny_task()}, {"GCN": gcn}, seeds=range(6), device="cpu",
                          root=root, cache_dir=tmp_path / "c", shard=f"{index}/3",
                          progress=lambda t, m, s, status, secs, seen=seen: seen.append(s))
        trained[index] = seen
        assert done.value.trained == len(seen)
    assert sorted(s for seen in trained.values() for s in seen) == list(range(6))
    assert all(len(seen) == 2 for seen in trained.values())


def test_cache_only_names_every_missing_triple(root, tmp_path):
    run_benchmark({"tiny": tiny_task()}, {"GCN": gcn}, seeds=[0], device="cpu", root=root,
                  cache_dir=tmp_path / "c")
    with pytest.raises(MissingTriplesError) as err:
        run_benchmark({"tiny": tiny_task()}, {"GCN": gcn}, seeds=[0, 1, 2], device="cpu",
                      root=root, cache_dir=tmp_path / "c", cache_only=True)
    assert err.value.missing == ["tiny/GCN/1", "tiny/GCN/2"]
    assert str(err.value).startswith("--graphnetz-cache-only: 2 triple(s) are not in the cache")
    assert len(list((tmp_path / "c").glob("*.json"))) == 1


def test_the_plan_lists_the_missing_triples_with_their_shards(root, tmp_path):
    run_benchmark({"tiny": tiny_task()}, {"GCN": gcn}, seeds=[0], device="cpu", root=root,
                  cache_dir=tmp_path / "c")
    with pytest.raises(Planned) as planned:
        run_benchmark({"tiny": tiny_task()}, {"GCN": gcn}, seeds=[0, 1, 2], device="cpu",
                      root=root, cache_dir=tmp_path / "c", plan=True, shard="1/2")
    missing = planned.value.missing
    assert [(m["seed"], m["cost"]) for m in missing] == [(1, 5.0), (2, 5.0)]
    assert {m["shard"] for m in missing} <= {1, 2} and planned.value.total == 3


@pytest.mark.parametrize(("args", "says"), [
    (("--graphnetz-shard=3/2",), "shard 3 of 2 does not exist"),
    (("--graphnetz-shard=0/4",), "shards count from 1"),
    (("--graphnetz-shard=x",), "expected I/N"),
    (("--graphnetz-shard=1/2", "--graphnetz-cache-only"), "trains nothing"),
])
def test_bad_shard_options_are_usage_errors(pytester, args, says):
    pytester.makepyfile("def test_nothing():\n    pass\n")
    result = pytester.runpytest(*args)
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    assert says in result.stderr.str()


def test_a_plan_with_nothing_missing_returns_the_cached_report(root, tmp_path):
    """So an adaptive gate judges its look and asks for the next one, which is then planned."""
    done = run_benchmark({"tiny": tiny_task()}, {"GCN": gcn}, seeds=[0, 1], device="cpu",
                         root=root, cache_dir=tmp_path / "c")
    again = run_benchmark({"tiny": tiny_task()}, {"GCN": gcn}, seeds=[0, 1], device="cpu",
                          root=root, cache_dir=tmp_path / "c", plan=True, shard="2/2")
    assert again.values("tiny", "GCN").tolist() == done.values("tiny", "GCN").tolist()


CALLS = {"left": 0}   # trainings before the "kill" (a raise standing in for a killed job)


def dies_after(model, data, *, task, device):
    from pytest_graphnetz.runner.training import builtin

    if CALLS["left"] == 0:
        raise KeyboardInterrupt("the job was cancelled")
    CALLS["left"] -= 1
    return builtin(task.kind).train(model, data, task=task, device=device)


def test_a_shard_killed_mid_run_reruns_only_its_missing_triples(root, tmp_path):
    task = tiny_task(trainer=dies_after)
    args = dict(seeds=range(4), device="cpu", root=root, cache_dir=tmp_path / "c", shard="1/1")
    CALLS["left"] = 2
    with pytest.raises(KeyboardInterrupt):
        run_benchmark({"tiny": task}, {"GCN": gcn}, **args)
    assert len(list((tmp_path / "c").glob("*.json"))) == 2
    CALLS["left"] = 2   # exactly the two missing ones may train now
    with pytest.raises(ShardTrained) as done:
        run_benchmark({"tiny": task}, {"GCN": gcn}, **args)
    assert (done.value.trained, done.value.cached) == (2, 2)
