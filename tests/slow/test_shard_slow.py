"""The CI flow of docs/distributed.md through real pytest sessions: `graphnetz plan`, four shard
jobs each with its own local cache writing a shared remote (``file://`` on a second
directory), then a gate job on a fresh checkout's cache that reads the remote and trains
nothing. Its verdicts and saved reports are bit for bit those of one local run, and no triple
is trained twice."""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path

import pytest

# Imported before the in-process sessions, which drop the modules first imported inside them
# (a Task class from one session would not be the next session's).
import pytest_graphnetz.gates  # noqa: F401
import pytest_graphnetz.runner  # noqa: F401
import pytest_graphnetz.runner.tasks.synthetic  # noqa: F401
import pytest_graphnetz.runner.training.node  # noqa: F401
from tests.helpers.servers import TINY_PROJECT

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
