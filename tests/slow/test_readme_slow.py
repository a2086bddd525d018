"""Every Python block and every command in README.md and docs/*.md runs as written.

The convention (for everyone editing the README or a page under docs/):

- Fenced ```` ```python ```` blocks and ```` ```bash ```` / ``sh`` / ``shell`` / ``console``
  blocks run, as a reader would run them, in a scratch project directory. Other fences (plain
  ```` ``` ```` for output, ``yaml``, ``toml``, ``text``...) are not run.
- A Python block whose first line is a comment naming a file (``# tests/test_models.py``) is
  written to that path instead of being run; every runnable block of a document sees the
  files its document's earlier file blocks wrote. Any other Python block runs in a fresh
  interpreter. Each command line of a shell block runs with ``bash -c`` (``\\`` continues a
  line; comments are fine) and must exit 0.
- Each runnable block is its own test, in a fresh copy of the scratch project, so the blocks
  spread over pytest-xdist's workers. A block that uses what an earlier block *made* by
  running (``report.json``, a baseline, a cache) is marked on the line right above its fence
  with ``<!-- continues -->`` (a reason may follow: ``<!-- continues: reads report.json -->``):
  it then runs in the same test and project as the runnable block before it in its document
  (a chain of such marks is one test).
- A block that cannot or should not run here (it installs packages, runs this test suite, is a
  signature or a sketch) is marked on the line right above its fence with
  ``<!-- fragment -->`` (a reason may follow: ``<!-- fragment: installs packages -->``). Other
  HTML comment lines may sit between a mark and the fence.
- The scratch project holds a copy of the repository's ``examples/models.py`` (for blocks
  that say "run from the repository root") and what a user's project would have:
  ``mypkg/models.py`` with ``gcn`` and ``sage`` factories (PyG's GCN and GraphSAGE, 16 hidden
  channels) and ``gin`` (a GIN pooled per graph, for graph tasks), and a ``pytest.ini``
  with ``pythonpath = .`` and ``graphnetz_seeds = 5``: the smallest seed count at which the
  documents' gates and interval widths still mean what the text says. A document that writes
  its own ``pyproject.toml`` (a ```` ```toml ```` block whose first line is
  ``# pyproject.toml``) configures pytest itself, as the README's "Gate your own model" does:
  the ``pytest.ini`` (which pytest would read first) is removed, so ``import mypkg`` works only
  if that block makes it work, and ``PYTEST_ADDOPTS=-o graphnetz_seeds=5`` sets the seeds.
  Datasets are shared through ``$GRAPHNETZ_ROOT`` (one directory per xdist worker, whose
  tests run one at a time); ``python``, ``pytest`` and ``graphnetz`` are this interpreter's.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from tests.helpers.documents import CHAINS, ROOT, Chain, commands

MYPKG = '''
import torch
from torch_geometric.nn import GCN, GIN, GraphSAGE, global_mean_pool


def gcn(in_channels, out_channels):
    return GCN(in_channels, 16, 2, out_channels, dropout=0.5)


def sage(in_channels, out_channels):
    return GraphSAGE(in_channels, 16, 2, out_channels, dropout=0.5)


class PooledGIN(torch.nn.Module):
    def __init__(self, in_channels, out_channels):
        super().__init__()
        self.gin = GIN(in_channels, 32, 3, 32)
        self.head = torch.nn.Linear(32, out_channels)

    def forward(self, x, edge_index, batch):
        return self.head(global_mean_pool(self.gin(x, edge_index), batch))


def gin(in_channels, out_channels):
    return PooledGIN(in_channels, out_channels)
'''

PYTEST_INI = """[pytest]
pythonpath = .
graphnetz_seeds = 5
"""


@pytest.fixture(scope="session")
def template(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The scratch project every test copies: a user's package, pytest.ini, examples/."""
    root = tmp_path_factory.mktemp("readme-template")
    (root / "mypkg").mkdir()
    (root / "mypkg" / "__init__.py").write_text("")
    (root / "mypkg" / "models.py").write_text(MYPKG)
    (root / "pytest.ini").write_text(PYTEST_INI)
    (root / "examples").mkdir()
    (root / "examples" / "models.py").write_text(
        (ROOT / "examples" / "models.py").read_text(encoding="utf-8"))
    return root


@pytest.fixture(scope="session")
def data_root(tmp_path_factory: pytest.TempPathFactory) -> Path:
    # One per session, i.e. per xdist worker: its tests run one at a time, so the catalogue's
    # generated datasets are built once per worker and never written by two processes at once.
    return tmp_path_factory.mktemp("readme-data")


def environment(data_root: Path, project: Path) -> dict[str, str]:
    env = dict(os.environ)
    env["PATH"] = os.pathsep.join([str(Path(sys.executable).parent), env.get("PATH", "")])
    env["PYTHONPATH"] = os.pathsep.join(p for p in (str(ROOT), env.get("PYTHONPATH")) if p)
    env["GRAPHNETZ_ROOT"] = str(data_root)
    env["MPLBACKEND"] = "Agg"
    for name in ("PYTEST_ADDOPTS", "PYTEST_XDIST_WORKER", "GITHUB_STEP_SUMMARY"):
        env.pop(name, None)
    if not (project / "pytest.ini").exists():   # the document's own pyproject.toml configures
        env["PYTEST_ADDOPTS"] = "-o graphnetz_seeds=5"   # the ini key, as pytest.ini sets it
    return env


def run(argv: list[str], project: Path, data_root: Path, where: str) -> None:
    done = subprocess.run(argv, cwd=project, env=environment(data_root, project),
                          capture_output=True, text=True, timeout=900)
    if done.returncode != 0:
        pytest.fail(f"{where} exits {done.returncode}:\n--- stdout\n{done.stdout[-6000:]}\n"
                    f"--- stderr\n{done.stderr[-6000:]}\n(a block that needs what an earlier "
                    "block made by running is marked <!-- continues --> above its fence)",
                    pytrace=False)


@pytest.mark.parametrize("chain", CHAINS, ids=[chain.id for chain in CHAINS])
def test_block_runs_as_written(chain: Chain, template: Path, data_root: Path,
                               tmp_path: Path) -> None:
    project = tmp_path / "project"
    shutil.copytree(template, project)
    if any(block.target == "pyproject.toml" for block in chain.steps):
        (project / "pytest.ini").unlink()   # pytest would read it before pyproject.toml
    for block in chain.steps:
        if block.target is not None:
            path = project / block.target
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(block.text)
        elif block.lang in ("python", "py"):
            script = project / f"block_line_{block.line}.py"
            script.write_text(block.text)
            run([sys.executable, script.name], project, data_root,
                f"{chain.document}: Python block at line {block.line}")
        else:
            for command in commands(block.text):
                run(["bash", "-c", command], project, data_root,
                    f"{chain.document}: command `{command}` (block at line {block.line})")
