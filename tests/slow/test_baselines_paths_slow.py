"""The tests of tests/fast/test_baselines_paths.py's unit that cost seconds each: fresh
interpreters, subprocess sessions or killed processes (the slow tier, tests/README.md)."""

from __future__ import annotations

from pathlib import Path

import pytest

# In-process pytester runs drop modules first imported inside them, and scipy's extensions do
# not survive a second import: load the gates (and the scipy they use) here, once.
pytest.importorskip("scipy.stats")
pytest.importorskip("scipy.optimize")
import pytest_graphnetz.gates  # noqa: E402,F401

# -- a killed write --------------------------------------------------------------------------------


WRITE_AND_DIE = """
import os, signal, sys
from pathlib import Path

from pytest_graphnetz import BenchmarkReport
from pytest_graphnetz.gates.refreshing.baselines import write_baseline

def die(src, dst):  # the temp file is whole and synced: die before the rename
    os.kill(os.getpid(), signal.SIGKILL)

os.replace = die
report = BenchmarkReport.from_arrays([[[0.5, 0.6]]], tasks=["t"], models=["m"], seeds=[0, 1],
                                     metric="accuracy")
write_baseline(Path(sys.argv[1]), report, {})
"""


def test_a_killed_baseline_write_leaves_nothing_git_add_commits(tmp_path: Path) -> None:
    import os
    import shutil
    import signal
    import subprocess
    import sys

    if shutil.which("git") is None:
        pytest.skip("needs git")
    project = tmp_path / "project"
    target = project / "baselines" / "test_m" / "test_a.json"
    env = {**os.environ, "PYTHONPATH": str(Path(__file__).parents[2])}
    died = subprocess.run([sys.executable, "-c", WRITE_AND_DIE, str(target)], env=env,
                          timeout=600)
    assert died.returncode == -signal.SIGKILL
    leftovers = [p for p in target.parent.rglob("*.tmp")]
    assert len(leftovers) == 1 and leftovers[0].stat().st_size > 0  # a complete, killed write
    subprocess.run(["git", "init", "-q", str(project)], check=True)
    subprocess.run(["git", "-C", str(project), "add", "-A"], check=True)
    staged = subprocess.run(["git", "-C", str(project), "ls-files"], check=True, text=True,
                            capture_output=True).stdout.split()
    assert staged == [], staged
