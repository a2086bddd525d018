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
