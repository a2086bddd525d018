"""The cache key at the grain of definitions: in a repository shaped like the team's (GCN, SAGE
and GAT in one models.py, a shared helper, module-level constants), an edit retrains exactly
the models whose code reaches it.

Each step edits models.py, reloads it (as a new pytest session would import it afresh) and
reruns the sweep on one cache; which models train is the test.
"""

from __future__ import annotations

import importlib
import sys
from pathlib import Path

import pytest

pytest.importorskip("torch_geometric")

from pytest_graphnetz import run_benchmark  # noqa: E402
from pytest_graphnetz.runner.fingerprint import project_code_key  # noqa: E402
from tests.helpers.tiny import tiny_task  # noqa: E402

MODELS = '''
"""The team's models, in one module."""
import torch
import torch.nn.functional as F
from torch_geometric.nn import GATConv, GCNConv, SAGEConv

import grain_helpers

HIDDEN = 8
GAT_HEADS = 2
SAGE_AGGR = "mean"

parser_defaults = {"dropout": 0.5}   # a module-level statement every model's import runs


def act(x):
    return torch.relu(x)


class GCN(torch.nn.Module):
    def __init__(self, i, o):
        super().__init__()
        self.c1, self.c2 = GCNConv(i, HIDDEN), GCNConv(HIDDEN, o)

    def forward(self, x, edge_index):
        return self.c2(act(self.c1(x, edge_index)), edge_index)


class SAGE(torch.nn.Module):
    def __init__(self, i, o):
        super().__init__()
        self.c1 = SAGEConv(i, HIDDEN, aggr=SAGE_AGGR)
        self.c2 = SAGEConv(HIDDEN, o, aggr=SAGE_AGGR)

    def forward(self, x, edge_index):
        return self.c2(grain_helpers.drop(act(self.c1(x, edge_index))), edge_index)


class GAT(torch.nn.Module):
    def __init__(self, i, o):
        super().__init__()
        self.c1 = GATConv(i, HIDDEN, heads=GAT_HEADS)
        self.c2 = GATConv(HIDDEN * GAT_HEADS, o)

    def forward(self, x, edge_index):
        return self.c2(F.elu(self.c1(x, edge_index)), edge_index)
'''

HELPERS = '''
import torch.nn.functional as F


def drop(x):
    return F.dropout(x, p=0.5, training=True)


def unused(x):
    return x
'''

GATE = '''
import grain_models as models

FACTORIES = {
    "GCN": lambda i, o: models.GCN(i, o),
    "SAGE": lambda i, o: models.SAGE(i, o),
    "GAT": lambda i, o: models.GAT(i, o),
}
'''


@pytest.fixture
def project(tmp_path, monkeypatch):
    for name, text in (("grain_models.py", MODELS), ("grain_helpers.py", HELPERS),
                       ("grain_gate.py", GATE)):
        (tmp_path / name).write_text(text)
    monkeypatch.syspath_prepend(str(tmp_path))
    for name in ("grain_models", "grain_helpers", "grain_gate"):
        monkeypatch.delitem(sys.modules, name, raising=False)
    yield tmp_path
    for name in ("grain_models", "grain_helpers", "grain_gate"):
        sys.modules.pop(name, None)


def trained(where: Path, cache: Path) -> set[str]:
    """The models that trained (the others came from the cache), after a fresh import."""
    for name in ("grain_helpers", "grain_models", "grain_gate"):
        if name in sys.modules:
            importlib.reload(sys.modules[name])
    gate = importlib.import_module("grain_gate")
    seen: set[str] = set()
    run_benchmark({"tiny": tiny_task(epochs=3)}, gate.FACTORIES, seeds=[0, 1], device="cpu",
                  cache_dir=cache, root=str(where / "data"),
                  progress=lambda task, model, seed, status, s: status == "trained"
                  and seen.add(model))
    return seen


def edit(path: Path, old: str, new: str) -> None:
    text = path.read_text()
    assert old in text
    path.write_text(text.replace(old, new))


def test_an_edit_retrains_only_the_models_that_reach_it(project) -> None:
    cache, models = project / "cache", project / "grain_models.py"
    assert trained(project, cache) == {"GCN", "SAGE", "GAT"}
    assert trained(project, cache) == set()

    # One model class: only its triples.
    edit(models, "GATConv(HIDDEN * GAT_HEADS, o)", "GATConv(HIDDEN * GAT_HEADS, o, heads=1)")
    assert trained(project, cache) == {"GAT"}
    # A constant one model uses: only that model.
    edit(models, 'SAGE_AGGR = "mean"', 'SAGE_AGGR = "max"')
    assert trained(project, cache) == {"SAGE"}
    # The helper two models share: both, not the third.
    edit(models, "return torch.relu(x)", "return torch.relu(x) * 1.0")
    assert trained(project, cache) == {"GCN", "SAGE"}
    # A helper in another module, used by one model; one nobody uses; a comment.
    edit(project / "grain_helpers.py", "p=0.5", "p=0.4")
    assert trained(project, cache) == {"SAGE"}
    edit(project / "grain_helpers.py", "return x", "return x + 0")
    edit(models, "class GAT(", "# attention\nclass GAT(")
    assert trained(project, cache) == set()
    # A module-level statement that is not a definition: every model importing the module.
    edit(models, '{"dropout": 0.5}', '{"dropout": 0.6}')
    edit(models, "parser_defaults = ", "parser_defaults = None\nprint()\nparser_defaults = ")
    assert trained(project, cache) == {"GCN", "SAGE", "GAT"}


def test_reach_that_cannot_be_seen_counts_the_whole_module(project) -> None:
    gate = importlib.import_module("grain_gate")
    models = project / "grain_models.py"
    gcn = gate.FACTORIES["GCN"]
    base = project_code_key([gcn])
    edit(models, "GATConv(HIDDEN * GAT_HEADS, o)", "GATConv(HIDDEN * GAT_HEADS, o, heads=1)")
    assert project_code_key([gcn]) == base   # GAT's edit: not GCN's code
    # A registry decorator (reach through a lookup we cannot follow): the whole module.
    edit(models, "class GAT(", "def register(cls):\n    return cls\n\n\n@register\nclass GAT(")
    dynamic = project_code_key([gcn])
    assert dynamic != base
    edit(models, "heads=1)", "heads=2)")
    assert project_code_key([gcn]) != dynamic
    # globals() lookups likewise.
    (project / "grain_models.py").write_text(MODELS + "\n\ndef by_name(n):\n"
                                             "    return globals()[n]\n")
    looked_up = project_code_key([gcn])
    edit(models, "GATConv(HIDDEN * GAT_HEADS, o)", "GATConv(HIDDEN * GAT_HEADS, o, heads=3)")
    assert project_code_key([gcn]) != looked_up


# A package re-exporting two models; each case changes how GAT is made or registered, and says
# whether an edit inside GAT's class must change the key of a script that builds only GCN.
ZOO_BASE = "REGISTRY = {}\n\n\nclass Base:\n    pass\n"
ZOO_GAT = "from .base import Base\n\n\nclass GAT(Base):\n    width = 8\n"
ZOO_CASES = {
    # An unused re-export: GAT's code is not GCN's.
    "re-export": ("", ZOO_GAT, False),
    # The registry fills itself as classes are created: a lookup by name may reach GAT.
    "__init_subclass__": ("    def __init_subclass__(cls, **kw):\n"
                          "        REGISTRY[cls.__name__] = cls\n", ZOO_GAT, True),
    # A definition that calls something at import runs whatever is used.
    "registered by a call": ("", "from . import base\n" + ZOO_GAT +
                             "\n\n_ = base.REGISTRY.setdefault('GAT', GAT)\n", True),
    "a metaclass": ("", ZOO_GAT.replace("(Base)", "(Base, metaclass=type)"), True),
    # A star import: what the package binds cannot be seen, so it counts whole.
    "star import": ("", ZOO_GAT, True),
}


@pytest.mark.parametrize("case", list(ZOO_CASES))
def test_an_unused_re_export_counts_only_what_its_module_runs(tmp_path, case) -> None:
    hook, gat, counts = ZOO_CASES[case]
    zoo = tmp_path / "zoo"
    zoo.mkdir()
    (zoo / "__init__.py").write_text("from .gcn import GCN\nfrom .gat import "
                                     f"{'*' if case == 'star import' else 'GAT'}\n"
                                     "__all__ = ['GCN', 'GAT']\n")
    (zoo / "base.py").write_text(ZOO_BASE + hook)
    (zoo / "gcn.py").write_text(ZOO_GAT.replace("GAT", "GCN"))
    (zoo / "gat.py").write_text(gat)
    script = tmp_path / "make.py"
    script.write_text("from zoo import GCN\nfrom zoo.base import REGISTRY\n"
                      "model = REGISTRY.get('GCN', GCN)()\n")
    base = project_code_key([script])
    edit(zoo / "gat.py", "width = 8", "width = 9")
    assert (project_code_key([script]) != base) is counts, case
    # Whatever the case, a statement gat.py runs at import counts for every model.
    before = project_code_key([script])
    edit(zoo / "gat.py", "class GAT", "print('gat')\n\n\nclass GAT")
    assert project_code_key([script]) != before
