"""A scratch git history of a gated project: a test script whose numbers each commit sets."""

from __future__ import annotations

import subprocess

SCRIPT = '''
import numpy as np
from pytest_graphnetz import BenchmarkReport, assert_not_worse

SHIFT, STREAM, NOISE = {shift}, {stream}, {noise}  {comment}


def test_model(pytestconfig, graphnetz_baseline):
    n = int(pytestconfig.getoption("graphnetz_seeds"))
    values = [0.8 + SHIFT + NOISE * np.random.default_rng([STREAM, s]).standard_normal()
              for s in range(n)]
    report = BenchmarkReport.from_arrays(np.array(values)[None, None, :], tasks=["t"],
                                         models=["GCN"], seeds=range(n), metric="accuracy")
    assert_not_worse(report, graphnetz_baseline())
'''


def commit(path, message: str, **script: object) -> str:
    values = {"shift": 0.0, "stream": 0, "noise": 0.003, "comment": "", **script}
    (path / "test_model.py").write_text(SCRIPT.format(**values))
    subprocess.run(["git", "add", "-A"], cwd=path, check=True)
    subprocess.run(["git", "-c", "user.name=t", "-c", "user.email=t@t", "commit", "-q", "-m",
                    message], cwd=path, check=True)
    return subprocess.run(["git", "rev-parse", "HEAD"], cwd=path, check=True,
                          capture_output=True, text=True).stdout.strip()
