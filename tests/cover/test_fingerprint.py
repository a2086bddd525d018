"""The cache key sees the normalised code: docstrings, comments and formatting do not count;
names, numbers, statements and the same-module helpers and constants the code uses do."""

from __future__ import annotations

import importlib
import linecache
import sys

import pytest

from pytest_graphnetz import run_benchmark
from pytest_graphnetz.runner.fingerprint import callable_identity
from tests.helpers.tiny import tiny_task

MODELS = '''
import torch
import torch.nn.functional as F

HIDDEN = 16
DROPOUT = 0.5


def act(x):
    return torch.relu(x)


class Net(torch.nn.Module):
    """A two-layer MLP."""

    def __init__(self, i, o):
        super().__init__()
        self.a, self.b = torch.nn.Linear(i, HIDDEN), torch.nn.Linear(HIDDEN, o)

    def forward(self, x, edge_index):
        h = act(self.a(x))
        return self.b(F.dropout(h, p=DROPOUT, training=self.training))


def make(in_channels, out_channels):
    """Build the net."""
    return Net(in_channels, out_channels)
'''

# (description, old text, new text, whether the identity may stay the same)
EDITS = [
    ("edit a docstring", '"""Build the net."""', '"""Build the network (two layers)."""', True),
    ("remove a docstring", '    """A two-layer MLP."""\n', "", True),
    ("add a comment", "        h = act(self.a(x))", "        h = act(self.a(x))  # hidden", True),
    ("reformat a call", "return Net(in_channels, out_channels)",
     "return Net(\n        in_channels,\n        out_channels,\n    )", True),
    ("change a number", "p=DROPOUT", "p=0.4", False),
    ("rename a local (conservative)", "h = act(self.a(x))\n        return self.b(F.dropout(h,",
     "z = act(self.a(x))\n        return self.b(F.dropout(z,", False),
    ("change a helper forward calls", "return torch.relu(x)", "return torch.tanh(x)", False),
    ("change a constant forward reads", "DROPOUT = 0.5", "DROPOUT = 0.3", False),
]


def load(tmp_path, name: str, text: str):
    """Import ``text`` as module ``name`` (fresh, even when a module of that name was loaded)."""
    path = tmp_path / f"{name}.py"
    path.write_text(text)
    sys.modules.pop(name, None)
    linecache.checkcache(str(path))
    importlib.invalidate_caches()
    sys.path.insert(0, str(tmp_path))
    try:
        return importlib.import_module(name)
    finally:
        sys.path.remove(str(tmp_path))


@pytest.mark.parametrize("what, old, new, same", EDITS, ids=[e[0] for e in EDITS])
def test_identity_ignores_docstrings_comments_and_formatting_only(tmp_path, what, old, new, same):
    name = "gnz_models_" + "_".join(what.split())
    assert old in MODELS
    before = callable_identity(load(tmp_path, name, MODELS).make)
    after_module = load(tmp_path, name, MODELS.replace(old, new))
    after = callable_identity(after_module.make)
    assert before["name"] == after["name"]
    assert (before == after) is same, what
    # The model class (hashed on its own for the model fingerprint) follows the same rule.
    net_same = callable_identity(load(tmp_path, name, MODELS).Net) == \
        callable_identity(after_module.Net)
    assert net_same or not same


def test_identity_of_unreadable_code_is_none():
    assert callable_identity(len)["code"] is None


def test_docstring_edit_does_not_retrain(tmp_path, root):
    """A docstring and a comment added to a factory: every triple comes from the cache."""
    cache, statuses = tmp_path / "cache", []
    progress = lambda task, model, seed, status, seconds: statuses.append(status)  # noqa: E731
    name = "gnz_models_docstring"

    def sweep(text: str) -> list[str]:
        statuses.clear()
        models = {"Net": load(tmp_path, name, text).make}
        run_benchmark({"tiny": tiny_task(epochs=2)}, models, seeds=[0, 1], device="cpu",
                      root=root, cache_dir=cache, progress=progress)
        return list(statuses)

    assert sweep(MODELS) == ["trained", "trained"]
    edited = MODELS.replace('"""Build the net."""', '"""Build the net.\n\n    Longer."""')
    edited = edited.replace("h = act(self.a(x))", "h = act(self.a(x))  # why: ...")
    assert sweep(edited) == ["cached", "cached"]
    assert sweep(MODELS.replace("HIDDEN = 16", "HIDDEN = 8")) == ["trained", "trained"]


def test_a_source_is_parsed_once_per_object_and_file_version(tmp_path, monkeypatch):
    """A class's source costs a parse of its whole file (inspect), for every triple that names
    it: it is kept per live object while the file's mtime and size stay, and read anew after an
    edit, as inspect would."""
    import importlib
    import os

    from pytest_graphnetz.runner.fingerprint import code

    path = tmp_path / "gnz_parse_once.py"
    path.write_text("class Model:\n    def forward(self, x):\n        return x + 1\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    module = importlib.import_module("gnz_parse_once")
    parses = []
    real = code.parse_now
    monkeypatch.setattr(code, "parse_now", lambda obj: parses.append(obj) or real(obj))
    first = callable_identity(module.Model)
    assert callable_identity(module.Model) == first and parses == [module.Model]
    path.write_text("class Model:\n    def forward(self, x):\n        return x + 2  # edited\n")
    os.utime(path, ns=(1, 1))   # a new stamp even on a coarse clock
    assert callable_identity(module.Model) != first and len(parses) == 2
