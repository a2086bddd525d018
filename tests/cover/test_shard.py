"""Sharding by triple: the split every shard job computes alike, balanced by expected cost; a
cache-only run that refuses a missing triple by name; bad shard specs. The whole CI flow (4
shards, then a cache-only gate, against one local run) is below, marked slow."""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path

import pytest

import pytest_graphnetz.gates  # noqa: F401
import pytest_graphnetz.runner  # noqa: F401
import pytest_graphnetz.runner.tasks.synthetic  # noqa: F401
import pytest_graphnetz.runner.training.node  # noqa: F401
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
from tests.helpers.servers import TINY_PROJECT
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


# -- costs seconds each (marked slow) ----------------------------------------------------------
# The CI flow of docs/distributed.md through real pytest sessions: `graphnetz plan`, four shard
# jobs each with its own local cache writing a shared remote (``file://`` on a second
# directory), then a gate job on a fresh checkout's cache that reads the remote and trains
# nothing. Its verdicts and saved reports are bit for bit those of one local run, and no triple
# is trained twice.


MODELS = TINY_PROJECT + """

def sage(in_channels, out_channels):
    from torch_geometric.nn import GraphSAGE

    return GraphSAGE(in_channels, 16, 2, out_channels)


# cells 4x apart in cost
TASKS = {"long": Task("long", tiny, epochs=8), "short": Task("short", tiny, epochs=2)}
MODELS = {"GCN": gcn, "SAGE": sage}
"""


GATE = """
from shard_models import MODELS, TASKS

from pytest_graphnetz import assert_not_worse


def test_gate(graphnetz_run, graphnetz_baseline):
    assert_not_worse(graphnetz_run(TASKS, MODELS), graphnetz_baseline())
"""


SEEDS = "--graphnetz-seeds=4"


def _files(directory: Path) -> dict[str, bytes]:
    return {str(p.relative_to(directory)): p.read_bytes()
            for p in sorted(directory.rglob("*")) if p.is_file()}


@pytest.mark.slow
def test_plan_shards_then_a_cache_only_gate_equal_one_local_run(pytester: pytest.Pytester,
                                                                tmp_path: Path) -> None:
    pytester.makepyfile(shard_models=MODELS, test_gate=GATE)
    pytester.makeini("[pytest]\ngraphnetz_seeds = 4\n")  # the schedule's first look
    pytester.syspathinsert()
    data = f"--graphnetz-cache-dir={tmp_path / 'refresh'}"
    pytester.runpytest(SEEDS, data, "--graphnetz-update-baselines").assert_outcomes(passed=1)

    local = pytester.runpytest(SEEDS, f"--graphnetz-cache-dir={tmp_path / 'local'}",
                               f"--graphnetz-json={tmp_path / 'local.json'}",
                               f"--graphnetz-report-dir={tmp_path / 'local-reports'}")
    local.assert_outcomes(passed=1)

    remote = (tmp_path / "bucket").as_uri()
    plan = subprocess.run(
        [sys.executable, "-m", "pytest_graphnetz.cli", "plan", "--shards", "4", SEEDS,
         f"--graphnetz-cache-dir={tmp_path / 'planner'}", f"--graphnetz-remote-cache={remote}",
         "-p", "no:cacheprovider"],
        cwd=pytester.path, capture_output=True, text=True, check=False)
    assert plan.returncode == 0, plan.stderr
    planned = json.loads(plan.stdout)
    assert planned["count"] == 16
    assert planned["matrix"] == {"shard": ["1/4", "2/4", "3/4", "4/4"]}

    trained = {}
    for shard in planned["matrix"]["shard"]:
        index = shard.split("/")[0]
        result = pytester.runpytest(SEEDS, f"--graphnetz-cache-dir={tmp_path / f's{index}'}",
                                    f"--graphnetz-remote-cache={remote}",
                                    "--graphnetz-remote-cache-write",
                                    f"--graphnetz-shard={shard}", "-rs")
        result.assert_outcomes(skipped=1)
        said = re.search(rf"shard {index} of 4: trained (\d+) triples", result.stdout.str())
        assert said is not None, result.stdout.str()
        trained[shard] = int(said.group(1))
    assert sum(trained.values()) == 16, f"every triple trained once: {trained}"
    costs = [8 if m["task"] == "long" else 2 for m in planned["missing"]]
    loads = {s: sum(c for c, m in zip(costs, planned["missing"], strict=True)
                    if f"{m['shard']}/4" == s) for s in trained}
    assert max(loads.values()) <= 1.15 * sum(costs) / 4
    assert len(list((tmp_path / "bucket" / "triples").glob("*.json"))) == 16

    gate = pytester.runpytest(SEEDS, f"--graphnetz-cache-dir={tmp_path / 'gate'}",
                              f"--graphnetz-remote-cache={remote}", "--graphnetz-cache-only",
                              f"--graphnetz-json={tmp_path / 'gate.json'}",
                              f"--graphnetz-report-dir={tmp_path / 'gate-reports'}")
    gate.assert_outcomes(passed=1)
    ours, theirs = (json.loads((tmp_path / f"{n}.json").read_text()) for n in ("gate", "local"))
    # what each run did differs by design: the gate trained none, the local run all 16
    assert (ours.pop("triples"), theirs.pop("triples")) == (
        {"trained": 0, "cached": 16, "saved": 0}, {"trained": 16, "cached": 0, "saved": 0})
    assert ours == theirs
    assert _files(tmp_path / "gate-reports") == _files(tmp_path / "local-reports")
    assert len(list((tmp_path / "bucket" / "triples").glob("*.json"))) == 16, "read only"

    again = subprocess.run(
        [sys.executable, "-m", "pytest_graphnetz.cli", "plan", "--shards", "4", SEEDS,
         f"--graphnetz-cache-dir={tmp_path / 'planner'}", f"--graphnetz-remote-cache={remote}",
         "-p", "no:cacheprovider"],
        cwd=pytester.path, capture_output=True, text=True, check=False)
    assert json.loads(again.stdout) == {"count": 0, "missing": [], "matrix": {"shard": []}}


@pytest.mark.slow
def test_a_cache_only_gate_with_a_missing_triple_fails_naming_it(pytester: pytest.Pytester,
                                                                  tmp_path: Path) -> None:
    pytester.makepyfile(shard_models=MODELS, test_gate=GATE)
    pytester.syspathinsert()
    result = pytester.runpytest(SEEDS, f"--graphnetz-cache-dir={tmp_path / 'empty'}",
                                "--graphnetz-cache-only")
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines(["*--graphnetz-cache-only: 16 triple(s) are not in the cache: "
                                 "long/GCN/0, long/GCN/1*"])


ADAPTIVE_MODELS = MODELS.replace("GCN(in_channels, 16, 2, out_channels)",
                                 "GCN(in_channels, int(os.environ.get('HIDDEN', 16)), 2, "
                                 "out_channels)").replace("from pytest_graphnetz import Task",
                                                          "import os\n\nfrom pytest_graphnetz "
                                                          "import Task")


@pytest.mark.slow
def test_an_adaptive_plan_lists_the_next_look_of_undecided_cells(pytester: pytest.Pytester,
                                                                  tmp_path: Path,
                                                                  monkeypatch) -> None:
    pytester.makepyfile(shard_models=ADAPTIVE_MODELS, test_gate=GATE.replace(
        "graphnetz_run(TASKS, MODELS)", 'graphnetz_run({"short": TASKS["short"]}, '
        '{"GCN": MODELS["GCN"]})'))
    pytester.makeini("[pytest]\ngraphnetz_seeds = 3..6\n")
    pytester.syspathinsert()
    cache = f"--graphnetz-cache-dir={tmp_path / 'cache'}"
    pytester.runpytest(cache, "--graphnetz-update-baselines").assert_outcomes(passed=1)
    monkeypatch.setenv("HIDDEN", "17")   # the pull request: another width
    plan = tmp_path / "plan.json"
    pytester.runpytest(cache, f"--graphnetz-plan={plan}").assert_outcomes(skipped=1)
    first = json.loads(plan.read_text())["missing"]
    assert [m["seed"] for m in first] == [0, 1, 2], "the first look"
    pytester.runpytest(cache, "--graphnetz-shard=1/1").assert_outcomes(skipped=1)
    gate = pytester.runpytest(cache, "--graphnetz-cache-only")
    gate.assert_outcomes(failed=1)   # undecided at look 1: its next look is not cached
    gate.stdout.fnmatch_lines(["*not in the cache: short/GCN/3, short/GCN/4, short/GCN/5*"])
    pytester.runpytest(cache, f"--graphnetz-plan={plan}").assert_outcomes(skipped=1)
    assert [m["seed"] for m in json.loads(plan.read_text())["missing"]] == [3, 4, 5]
