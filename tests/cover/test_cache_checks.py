"""Keys that waste nothing: in real pytest sessions sharing one cache, a change retrains only the
triples whose inputs it changed, and an input changed and changed back is a hit again.

The team shape: a ``team_models`` package whose ``__init__`` re-exports GCN, SAGE and GAT from
their submodules, one gate per model. A pull request removes GAT (its file, its import, its
gate) and leaves ``from .layers import attention`` in ``__init__``, now used by nothing; the
two remaining models must come from the cache. The trainings are counted from the session's
own summary line (``triples: N trained, M from cache``).
"""

from __future__ import annotations

import pytest

# Pytester's in-process runs drop modules first imported inside them; torch cannot be imported
# twice in one process, so everything heavy is imported here, once.
torch = pytest.importorskip("torch")
pytest.importorskip("torch_geometric")
import torch_geometric.data  # noqa: E402,F401

import pytest_graphnetz.runner  # noqa: E402,F401
import pytest_graphnetz.runner.training.node  # noqa: E402,F401
from tests.helpers.projects import (  # noqa: E402
    DIRECT,
    command_counts,
    command_project,
    counts,
    edit,
)


def test_removing_a_model_retrains_nothing_else(team: pytest.Pytester) -> None:
    assert counts(team, passed=3) == (6, 0)
    assert counts(team, passed=3) == (0, 6)
    # The pull request: GAT's file, its import and its gate go; `attention`, which only GAT
    # used, stays imported in __init__, and __all__ still names GAT (a dangling name).
    (team.path / "team_models" / "gat.py").unlink()
    (team.path / "test_gat.py").unlink()
    edit(team.path / "team_models" / "__init__.py", "from .gat import GAT\n", "")
    assert counts(team, passed=2) == (0, 4)
    # The follow-up that tidies __all__ changes nothing either.
    edit(team.path / "team_models" / "__init__.py", '"GAT", ', "")
    assert counts(team, passed=2) == (0, 4)
# Reach the script cannot show: the function is looked up by a name computed at run time.
BY_NAME = ("import team_lib\nname = 'sc' + 'ore'", "getattr(team_lib, name)")


def test_a_script_keys_the_modules_it_imports_by_the_definitions_it_reaches(
        pytester: pytest.Pytester, no_bytecode: None) -> None:
    command_project(pytester, *DIRECT)
    lib = pytester.path / "team_lib.py"
    assert command_counts(pytester) == (2, 0)
    edit(lib, "return x", "return x + 1")              # a function the script never reaches
    assert command_counts(pytester) == (0, 2)
    edit(lib, "0.0001 * total", "0.0002 * total")      # the one it calls
    assert command_counts(pytester) == (2, 0)
    edit(lib, "def unrelated", "print('imported')\n\n\ndef unrelated")   # runs at import
    assert command_counts(pytester) == (2, 0)


def test_a_script_whose_reach_cannot_be_seen_keys_the_module_whole(
        pytester: pytest.Pytester, no_bytecode: None) -> None:
    command_project(pytester, *BY_NAME)
    assert command_counts(pytester) == (2, 0)
    assert command_counts(pytester) == (0, 2)
    edit(pytester.path / "team_lib.py", "return x", "return x + 1")
    assert command_counts(pytester) == (2, 0)


# -- costs seconds each (marked slow): fresh interpreters, subprocess sessions or killed
# processes (the slow tier, tests/README.md) ------------------------------------------------


@pytest.mark.slow
def test_an_init_binding_a_model_reaches_still_counts(team: pytest.Pytester) -> None:
    assert counts(team, passed=3) == (6, 0)
    # The helper every model imports through `.layers`: GCN and SAGE call `act`, GAT does not.
    edit(team.path / "team_models" / "layers.py", "torch.relu(x)", "torch.relu(x) * 2")
    assert counts(team, passed=3) == (4, 2)
    # The re-exported `attention`, edited: only GAT reaches it.
    edit(team.path / "team_models" / "layers.py", "* x\n", "* x * 2\n")
    assert counts(team, passed=3) == (2, 4)
    # A statement that runs when the package is imported counts for every model under it.
    edit(team.path / "team_models" / "gat.py", "WIDTH = 8\n", "WIDTH = 8\ntorch.manual_seed(1)\n")
    assert counts(team, passed=3) == (6, 0)


@pytest.mark.slow
def test_an_input_changed_and_changed_back_is_a_hit(pytester: pytest.Pytester,
                                                    no_bytecode: None,
                                                    monkeypatch: pytest.MonkeyPatch) -> None:
    command_project(pytester, *DIRECT)
    config = pytester.path / "config.json"
    data = pytester.path / "processed" / "features.txt"
    assert command_counts(pytester) == (2, 0)
    # A config: edited (retrains), reverted (the first runs again).
    config.write_text('{"hidden": 32}')
    assert command_counts(pytester) == (2, 0)
    config.write_text('{"hidden": 16}')
    assert command_counts(pytester) == (0, 2)
    # An environment variable: set, then unset.
    monkeypatch.setenv("TEAM_SCALE", "2")
    assert command_counts(pytester) == (2, 0)
    monkeypatch.delenv("TEAM_SCALE")
    assert command_counts(pytester) == (0, 2)
    # Processed data: rewritten with other values, then with the first ones (a new mtime).
    data.write_text("4 5 6\n")
    assert command_counts(pytester) == (2, 0)
    data.write_text("1 2 3\n")
    assert command_counts(pytester) == (0, 2)
    # Each changed input once more: all of them are kept, each is a hit.
    config.write_text('{"hidden": 32}')
    assert command_counts(pytester) == (0, 2)


# An in-process task whose model reads a config file and an environment variable, and whose
# loader reads a processed data file: each counts through what it changes in the built model
# or the data, which are keyed by content.
IN_PROCESS = '''
import json
import os

import torch
from torch_geometric.data import Data

from pytest_graphnetz import Task

HERE = os.path.dirname(os.path.abspath(__file__))


def load(root, *, seed):
    with open(os.path.join(HERE, "processed", "offset.txt")) as fh:
        offset = float(fh.read())
    g = torch.Generator().manual_seed(seed)
    y = torch.arange(2).repeat_interleave(20)
    x = torch.nn.functional.one_hot(y, 2).float() + offset + torch.randn(40, 2, generator=g)
    mask = torch.arange(40) % 2 == 0
    return Data(x=x, y=y, edge_index=torch.randint(0, 40, (2, 60), generator=g),
                train_mask=mask, val_mask=~mask, test_mask=~mask)


class Net(torch.nn.Module):
    def __init__(self, in_channels, out_channels):
        super().__init__()
        with open(os.path.join(HERE, "config.json")) as fh:
            width = json.load(fh)["width"]
        self.a = torch.nn.Linear(in_channels, width)
        self.drop = torch.nn.Dropout(float(os.environ.get("TEAM_DROPOUT", "0.5")))
        self.b = torch.nn.Linear(width, out_channels)

    def forward(self, x, edge_index):
        return self.b(self.drop(torch.relu(self.a(x))))


TASKS = {"toy": Task("toy", load, epochs=3, lr=0.05)}
'''


IN_PROCESS_GATE = '''
import team_net


def test_net(graphnetz_run):
    report = graphnetz_run(team_net.TASKS, {"Net": team_net.Net})
    assert report.values("toy", "Net").shape == (2,)
'''


@pytest.mark.slow
def test_an_in_process_input_changed_and_changed_back_is_a_hit(
        pytester: pytest.Pytester, no_bytecode: None, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("TEAM_DROPOUT", raising=False)
    pytester.makepyfile(team_net=IN_PROCESS, test_net=IN_PROCESS_GATE)
    pytester.makeini("[pytest]\ngraphnetz_seeds = 2\n")
    pytester.syspathinsert()
    config, data = pytester.path / "config.json", pytester.path / "processed" / "offset.txt"
    config.write_text('{"width": 8}')
    data.parent.mkdir()
    data.write_text("0.0")
    assert counts(pytester, passed=1) == (2, 0)
    config.write_text('{"width": 9}')
    assert counts(pytester, passed=1) == (2, 0)
    config.write_text('{"width": 8}')
    assert counts(pytester, passed=1) == (0, 2)
    monkeypatch.setenv("TEAM_DROPOUT", "0.25")
    assert counts(pytester, passed=1) == (2, 0)
    monkeypatch.delenv("TEAM_DROPOUT")
    assert counts(pytester, passed=1) == (0, 2)
    data.write_text("1.0")   # the same size: the loader runs again for its new mtime
    assert counts(pytester, passed=1) == (2, 0)
    data.write_text("0.0")
    assert counts(pytester, passed=1) == (0, 2)
