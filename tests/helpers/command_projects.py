"""Scratch projects of command tasks: the repository's training script and the graphs it
reads, a project whose script reads inputs through Python, the scripts' gate tests, and a
second virtual environment at another path."""

from __future__ import annotations

import subprocess
import sys
import sysconfig
from pathlib import Path

import numpy as np

SCRIPT = Path(__file__).parents[1] / "scripts" / "gcn.py"


def write_graph(path: Path, seed: int) -> None:
    """A 120-node, 3-class block-model graph with weak class-mean features, and its split."""
    rng = np.random.default_rng(seed)
    y = np.repeat(np.arange(3), 40)
    n = len(y)
    x = (0.3 * rng.normal(size=(3, 16))[y] + rng.normal(size=(n, 16))).astype(np.float32)
    upper = np.triu(rng.random((n, n)) < np.where(y[:, None] == y[None, :], 0.08, 0.01), 1)
    src, dst = np.nonzero(upper | upper.T)
    split = np.full(n, 2)
    order = rng.permutation(n)
    split[order[:30]], split[order[30:60]] = 0, 1
    np.savez(path, x=x, y=y, edges=np.stack([src, dst]), train=split == 0, val=split == 1,
             test=split == 2)


SCRIPT_GATES = """
from pytest_graphnetz import assert_not_worse

import project


def test_scripts(graphnetz_run, graphnetz_baseline):
    assert_not_worse(graphnetz_run(project.TASKS, project.MODELS), graphnetz_baseline())
"""


SEEDED_TRAIN = '''
import json, os, random, sys
random.seed(int(os.environ["GRAPHNETZ_SEED"]))
shift = float(sys.argv[3]) if len(sys.argv) > 3 else 0.0
test = [0.5 + shift + 0.1 * random.random() for _ in range(3)]
json.dump({"metric": "accuracy", "test": test}, open(sys.argv[1], "w"))
'''


COMMAND_PROJECT = '''
import sys
from pathlib import Path

from pytest_graphnetz import Task
from pytest_graphnetz.runner.command import Command, DataFiles

HERE = Path(__file__).parent
TASKS = {"t": Task("t", DataFiles(), kind="command")}
MODELS = {"A": Command([sys.executable, "train.py", "{output}"], cwd=HERE)}
'''


DROP_TRAIN = '''
import json, os, random, sys
{imports}
random.seed(int(os.environ["GRAPHNETZ_SEED"]))
test = [0.8 - DROP + 0.01 * random.random() for _ in range(3)]
json.dump({{"metric": "accuracy", "test": test}}, open(sys.argv[1], "w"))
'''


def second_venv(where: Path) -> Path:
    """A virtual environment at another path with this one's packages (no pip of its own: a
    ``.pth`` adds this environment's site-packages as a site directory); its python."""
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(where)], check=True)
    python = where / "bin" / "python"
    site = subprocess.run([str(python), "-c", "import sysconfig; print(sysconfig.get_paths()"
                           "['purelib'])"], capture_output=True, text=True, check=True)
    mine = sysconfig.get_paths()["purelib"]
    Path(site.stdout.strip(), "graphnetz_test_parent.pth").write_text(
        f"import site; site.addsitedir({mine!r})\n")
    return python
