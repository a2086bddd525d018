"""How many triples a pull request that removes one model retrains in a team-shaped project.

The shape: a ``team_models`` package with eleven models, one per submodule, all re-exported by
the package's ``__init__`` (with ``__all__``), and a ``layers`` module of helpers. GAT, one of
the eleven, uses ``layers.attention``. The pull request deletes ``gat.py``, its import and its
``__all__`` entry, and leaves ``from .layers import attention`` in ``__init__``, used by nothing.

The keys are the cache's own (``project_code_key`` of each model class, in a fresh interpreter
per state, as a pytest session computes them); a model whose key changed retrains all its seeds.
No training: the count of retrained triples is the count of changed keys times the seeds.

    PYTHONPATH=$PWD .venv/bin/python benchmarks/team_shape.py [--seeds 10]
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path

NAMES = ["GCN", "SAGE", "GAT", "GIN", "MLP", "APPNP", "SGC", "Cheb", "TAG", "ARMA", "GCN2"]

LAYERS = '''
import torch


def act(x):
    return torch.relu(x)


def attention(x):
    return torch.softmax(x, dim=-1) * x
'''

MODEL = '''
import torch

from .layers import {helper}

WIDTH = {width}


class {name}(torch.nn.Module):
    def __init__(self, in_channels, out_channels):
        super().__init__()
        self.a = torch.nn.Linear(in_channels, WIDTH)
        self.b = torch.nn.Linear(WIDTH, out_channels)

    def forward(self, x, edge_index):
        return self.b({helper}(self.a(x)))
'''

KEYS = '''
import json, sys
import team_models
from pytest_graphnetz.runner.fingerprint import project_code_key
print(json.dumps({n: project_code_key([getattr(team_models, n)]) for n in sys.argv[1:]}))
'''


def write(where: Path, names: list[str]) -> None:
    package = where / "team_models"
    package.mkdir(exist_ok=True)
    for old in package.glob("*.py"):
        old.unlink()
    (package / "layers.py").write_text(LAYERS)
    lines = [f"from .{n.lower()} import {n}\n" for n in names] + \
        ["from .layers import attention\n", f"__all__ = {[*names, 'attention']!r}\n"]
    (package / "__init__.py").write_text("".join(lines))
    for name in names:
        helper = "attention" if name == "GAT" else "act"
        (package / f"{name.lower()}.py").write_text(
            MODEL.format(name=name, helper=helper, width=8 + NAMES.index(name)))


def keys(where: Path, names: list[str]) -> dict[str, str]:
    out = subprocess.run([sys.executable, "-c", KEYS, *names], cwd=where, check=True,
                         capture_output=True, text=True, env={**os.environ,
                                                              "PYTHONDONTWRITEBYTECODE": "1"})
    return json.loads(out.stdout)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seeds", type=int, default=10)
    args = parser.parse_args()
    import pytest_graphnetz

    with tempfile.TemporaryDirectory() as tmp:
        where = Path(tmp)
        write(where, NAMES)
        before = keys(where, NAMES)
        remaining = [n for n in NAMES if n != "GAT"]
        write(where, remaining)
        after = keys(where, remaining)
    changed = [n for n in remaining if after[n] != before[n]]
    print(f"pytest_graphnetz from {os.path.dirname(pytest_graphnetz.__file__)}")
    print(f"models whose key changed: {len(changed)} of {len(remaining)} "
          f"({', '.join(changed) or 'none'})")
    print(f"triples retrained at {args.seeds} seeds: {len(changed) * args.seeds} of "
          f"{len(remaining) * args.seeds} (the suite held {len(NAMES) * args.seeds})")


if __name__ == "__main__":
    main()
