"""The cache key covers the code of the user's project: every module the model factory, the
trainer and the loader import, transitively, module-level statements included.

Tried where a user meets it: a scratch project of two modules (a training module with an
argparse default, and a helper module with the activation and the loss), gated twice through
real pytest sessions sharing one cache directory.
"""

from __future__ import annotations

import json
import sys

import pytest

# Pytester's in-process runs drop modules first imported inside them; torch cannot be imported
# twice in one process, so everything heavy is imported here, once.
torch = pytest.importorskip("torch")
import torch_geometric.data  # noqa: E402,F401

import pytest_graphnetz.runner  # noqa: E402,F401
from pytest_graphnetz.runner.fingerprint import is_project_file, project_code_key  # noqa: E402

HELPERS = '''
"""Helpers the model and the training loop call."""
import torch
import torch.nn.functional as F


def act(x):
    return torch.relu(x)


def loss(out, y):
    return F.cross_entropy(out, y)
'''

TRAINING = '''
"""A PyG-example-style training module: settings in argparse defaults, helpers elsewhere."""
import argparse

import torch

from helpers import act, loss

parser = argparse.ArgumentParser()
parser.add_argument("--lr", type=float, default=0.05)
args = parser.parse_args([])  # a script would parse sys.argv here


class Net(torch.nn.Module):
    def __init__(self, in_channels, out_channels):
        super().__init__()
        self.lin0 = torch.nn.Linear(in_channels, 16)
        self.lin1 = torch.nn.Linear(16, out_channels)

    def forward(self, x, edge_index):
        return self.lin1(act(self.lin0(x)))


def make(in_channels, out_channels):
    return Net(in_channels, out_channels)


def load(root, seed):
    from torch_geometric.data import Data

    g = torch.Generator().manual_seed(seed)
    x = torch.randn(40, 4, generator=g)
    y = (x[:, 0] + 0.5 * x[:, 1] > 0).long()
    mask = torch.arange(40) < 25
    return Data(x=x, y=y, edge_index=torch.randint(0, 40, (2, 80), generator=g),
                train_mask=mask, test_mask=~mask)


def train(model, data, *, task, device):
    optimizer = torch.optim.SGD(model.parameters(), lr=args.lr)
    test = []
    for _ in range(task.epochs):
        model.train()
        optimizer.zero_grad()
        out = model(data.x, data.edge_index)
        loss(out[data.train_mask], data.y[data.train_mask]).backward()
        optimizer.step()
        pred = model(data.x, data.edge_index).argmax(-1)
        test.append(float((pred[data.test_mask] == data.y[data.test_mask]).float().mean()))
    return {"test": test}
'''

GATE = '''
import json

from training import load, make, train

from pytest_graphnetz import Task, run_benchmark


def test_gate(tmp_path):
    statuses = []
    report = run_benchmark(
        {"scratch": Task("scratch", load, trainer=train, epochs=3)}, {"Net": make},
        seeds=[0, 1], device="cpu", root=str(tmp_path / "data"), cache_dir="cache",
        progress=lambda t, m, s, status, secs: statuses.append(status))
    with open("outcome.json", "w") as fh:
        json.dump({"statuses": statuses, "values": list(report.values("scratch", "Net"))}, fh)
'''

# (what, file, old text, new text, whether it must retrain)
EDITS = [
    ("comment and docstring edit in the helper module", "helpers.py",
     "    return torch.relu(x)", "    # the activation of every hidden layer\n"
     "    return torch.relu(x)", False),
    ("edit of a module nothing imports", "unused.py", "VALUE = 1", "VALUE = 2", False),
    ("argparse default", "training.py", "default=0.05", "default=0.015", True),
    ("activation in the helper module", "helpers.py", "torch.relu(x)", "F.elu(x)", True),
    ("loss helper gains label smoothing", "helpers.py", "F.cross_entropy(out, y)",
     "F.cross_entropy(out, y, label_smoothing=0.1)", True),
]


@pytest.fixture
def scratch(pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch) -> pytest.Pytester:
    # Python's bytecode cache trusts a file's mtime in whole seconds and its size: an edit
    # within the same second that keeps the size would run stale bytecode.
    monkeypatch.setattr(sys, "dont_write_bytecode", True)
    pytester.makepyfile(helpers=HELPERS, training=TRAINING, unused="VALUE = 1\n",
                        test_gate=GATE)
    pytester.syspathinsert()
    return pytester


def gate(pytester: pytest.Pytester) -> dict:
    result = pytester.runpytest("-q", "-p", "no:cacheprovider")
    result.assert_outcomes(passed=1)
    return json.loads((pytester.path / "outcome.json").read_text())


@pytest.mark.parametrize("what, file, old, new, retrains", EDITS, ids=[e[0] for e in EDITS])
def test_an_edit_retrains_exactly_when_project_code_the_run_imports_changed(
        scratch, what, file, old, new, retrains):
    first = gate(scratch)
    assert first["statuses"] == ["trained", "trained"]
    path = scratch.path / file
    assert old in path.read_text()
    path.write_text(path.read_text().replace(old, new))
    second = gate(scratch)
    assert second["statuses"] == (["trained"] * 2 if retrains else ["cached"] * 2), what
    if not retrains:
        assert second["values"] == first["values"]


def test_a_script_gets_the_closure_of_the_modules_it_imports(tmp_path):
    """What a command task passes: a script's path, resolved as a new process would."""
    (tmp_path / "util.py").write_text("def scale(x):\n    return 2 * x\n\n\n"
                                      "def unused(x):\n    return x\n")
    (tmp_path / "pkg").mkdir()
    (tmp_path / "pkg" / "__init__.py").write_text("")
    (tmp_path / "pkg" / "model.py").write_text("from . import layers\n"
                                               "WIDTH = 8 * layers.DEPTH\n")
    (tmp_path / "pkg" / "layers.py").write_text("DEPTH = 2\n")
    script = tmp_path / "train.py"
    script.write_text("import argparse\nimport numpy\nimport util\nfrom pkg import model\n"
                      "p = argparse.ArgumentParser()\np.add_argument('--lr', default=0.01)\n"
                      "print(util.scale(model.WIDTH))\n")
    base = project_code_key([script])

    def key_after(file: str, old: str, new: str) -> str:
        path = tmp_path / file
        text = path.read_text()
        path.write_text(text.replace(old, new))
        try:
            return project_code_key([str(script)])
        finally:
            path.write_text(text)

    assert key_after("train.py", "default=0.01", "default=0.01)  # lr\n#") == base
    assert key_after("train.py", "default=0.01", "default=0.02") != base
    assert key_after("util.py", "2 * x", "3 * x") != base
    assert key_after("pkg/model.py", "WIDTH = 8", "WIDTH = 9") != base
    assert key_after("pkg/layers.py", "DEPTH = 2", "DEPTH = 3") != base  # relative import
    assert key_after("pkg/__init__.py", "", "print()\n") != base  # the package runs too
    # At the grain of definitions: what the script does not reach is not in its key.
    assert key_after("util.py", "return x", "return x + 1") == base
    assert key_after("pkg/__init__.py", "", "X = 1\n") == base
    (tmp_path / "elsewhere.py").write_text("Y = 1\n")
    assert project_code_key([script]) == base


def test_library_code_is_not_project_code(tmp_path):
    import argparse

    import numpy

    assert not is_project_file(numpy.__file__)  # site-packages
    assert not is_project_file(argparse.__file__)  # the standard library
    (tmp_path / "mine.py").write_text("")
    assert is_project_file(tmp_path / "mine.py")


# -- costs seconds each (marked slow): fresh interpreters, subprocess sessions or killed
# processes (the slow tier, tests/README.md) ------------------------------------------------


KEY_OF = """
import sys
from pytest_graphnetz.runner.fingerprint import project_code_key
print(project_code_key([sys.argv[1]]), "xdist" in sys.modules)
"""


@pytest.mark.slow
def test_a_librarys_version_counts_whether_or_not_this_process_imported_it(tmp_path,
                                                                          monkeypatch):
    """A helper importing ``xdist`` (installed as pytest-xdist: the import name is not the
    distribution's) has one key in a process that imported xdist and in one that did not.
    Before, the first wrote ``xdist==3.8.0`` and the second ``xdist==?``: a worker and the
    test that reran its triple missed each other's cache entries."""
    import subprocess

    xdist = pytest.importorskip("xdist")
    script = tmp_path / "train.py"
    script.write_text("def scheduler():\n    from xdist.scheduler import LoadScheduling\n"
                      "    return LoadScheduling\n")
    here = project_code_key([script])
    assert "xdist" in sys.modules and xdist.__version__
    fresh = subprocess.run([sys.executable, "-c", KEY_OF, str(script)], capture_output=True,
                           text=True, check=True).stdout.split()
    assert fresh == [here, "False"]
    # Teeth: the version is in the key (a library upgrade retrains).
    from pytest_graphnetz.runner.fingerprint import project

    real = project.installed_version
    monkeypatch.setattr(project, "installed_version",
                        lambda top: "0.0" if top == "xdist" else real(top))
    assert project_code_key([script]) != here
