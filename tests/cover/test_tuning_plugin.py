"""Tune, then confirm inside a real pytest session (pytester): ``tune(..., runner=graphnetz_run)``
confirms on the session's seeds, a refresh keeps the search's summary in the baseline, the
report dir keeps every trial × seed, a search given ``incumbent=graphnetz_baseline()`` keeps
the baseline's winner, and a search on another budget is refused."""

from __future__ import annotations

import json

import pytest

torch = pytest.importorskip("torch")
pytest.importorskip("torch_geometric.nn")
import pytest_graphnetz.gates  # noqa: E402,F401
import pytest_graphnetz.gates.tuning  # noqa: E402,F401
import pytest_graphnetz.runner  # noqa: E402,F401
import pytest_graphnetz.runner.training.node  # noqa: E402,F401
from tests.helpers.sessions import TOY  # noqa: E402

TUNED_TEST = """
import functools

import torch
from torch_geometric.nn import GCNConv

from pytest_graphnetz import assert_not_worse, grid, tune

import toy


class Net(torch.nn.Module):
    def __init__(self, in_channels, out_channels, *, hidden):
        super().__init__()
        self.conv1 = GCNConv(in_channels, hidden)
        self.conv2 = GCNConv(hidden, out_channels)

    def forward(self, x, edge_index):
        return self.conv2(self.conv1(x, edge_index).relu(), edge_index)


def build(config):
    return functools.partial(Net, hidden=config["hidden"])


def test_tuned(graphnetz_run, graphnetz_baseline):
    tuned = tune(toy.TASKS, {{"GCN": build}}, grid(hidden=[4, 16], lr=[0.05, 0.01]),
                 search_seeds={search}, runner=graphnetz_run, incumbent=graphnetz_baseline())
    assert tuned.report.seeds == (0, 1, 2, 3)
    assert_not_worse(tuned.report, graphnetz_baseline())
"""


def test_tune_in_a_session_refreshes_gates_and_refuses_another_budget(
        pytester: pytest.Pytester) -> None:
    pytester.makepyfile(toy=TOY.format(hidden=16, lr=0.05), test_tuned=TUNED_TEST.format(search=2))
    pytester.makeini("[pytest]\ngraphnetz_seeds = 4\n")
    pytester.runpytest("--graphnetz-update-baselines").assert_outcomes(passed=1)
    # 4 trials × 2 search seeds, then the winner on the session's 4 seeds
    assert len((pytester.path / "trained.log").read_text().splitlines()) == 4 * 2 + 4
    kept = json.loads((pytester.path / "baselines" / "test_tuned" / "test_tuned.json")
                      .read_text())["environment"]["tuning"]
    assert kept["record"] == "summary" and kept["budget"] == {"trials": 4, "seeds": 2}
    assert kept["confirmation"]["seeds"] == [0, 1, 2, 3]
    assert all(s >= 2**31 for s in kept["search_seeds"])
    assert kept["incumbent"] is None                 # no baseline yet: the best mean won

    again = pytester.runpytest("--graphnetz-report-dir=saved", "-v")
    again.assert_outcomes(passed=1)
    assert "IDENTICAL" in again.stdout.str()
    saved = json.loads((pytester.path / "saved" / "test_tuned" / "test_tuned.json").read_text())
    full = saved["protocol"]["tuning"]
    assert full["record"] == "full"
    assert [len(t["validation"]) for t in full["trials"]] == [2, 2, 2, 2]
    assert len(full["confirmation"]["validation"]) == 4
    # the search was given the baseline's winner, and kept it
    assert full["incumbent"]["trial"] == full["winner"] == kept["winner"]

    pytester.makepyfile(test_tuned=TUNED_TEST.format(search=3))
    refused = pytester.runpytest()
    refused.assert_outcomes(failed=1)
    assert "tuning budgets differ (candidate 4 trials × 3 seeds, baseline 4 trials × 2 seeds)" \
        in refused.stdout.str()
    # a refresh onto another budget is refused too, like a data change, unless forced
    pytester.runpytest("--graphnetz-update-baselines").assert_outcomes(failed=1)
    pytester.runpytest("--graphnetz-update-baselines", "--graphnetz-force").assert_outcomes(
        passed=1)
    kept = json.loads((pytester.path / "baselines" / "test_tuned" / "test_tuned.json")
                      .read_text())["environment"]["tuning"]
    assert kept["budget"] == {"trials": 4, "seeds": 3}
    pytester.runpytest().assert_outcomes(passed=1)
