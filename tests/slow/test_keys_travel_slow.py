"""Keys travel: the same project copied to another directory and run under another HOME (and,
where this machine lets another user run this interpreter, as another user) computes the same
keys, so it trains nothing that a first checkout wrote to a shared remote cache (``file://``
on a second directory, as a team's mount)."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest

from tests.helpers.servers import TINY_PROJECT

ROOT = Path(__file__).resolve().parents[2]

MODELS = TINY_PROJECT + '''

TASKS = {"tiny": Task("tiny", tiny, epochs=3)}
'''

TEST = '''
from models import TASKS, gcn


def test_run(graphnetz_run):
    graphnetz_run(TASKS, {"GCN": gcn})
'''


def _project(where: Path) -> Path:
    where.mkdir(parents=True)
    (where / "models.py").write_text(MODELS)
    (where / "test_run.py").write_text(TEST)
    (where / "tox.ini").write_text("[pytest]\ngraphnetz_seeds = 3\n")
    return where


def _session(project: Path, home: Path, remote: str, *extra: str, user: int | None = None
             ) -> tuple[int, int]:
    """``(trained, cached)`` of a fresh pytest session in ``project`` under ``home``."""
    env = {"PATH": os.environ.get("PATH", ""), "HOME": str(home), "PYTHONPATH": str(ROOT),
           "PYTHONDONTWRITEBYTECODE": "1"}
    out = subprocess.run(
        [sys.executable, "-m", "pytest", "-p", "no:randomly", "-p", "no:xdist", "-q",
         f"--graphnetz-remote-cache={remote}", *extra],
        cwd=project, env=env, capture_output=True, text=True, check=False, user=user,
        timeout=300)
    assert out.returncode == 0, out.stdout + out.stderr
    said = re.search(r"triples: (\d+) trained, (\d+) from cache", out.stdout)
    assert said is not None, out.stdout
    return int(said.group(1)), int(said.group(2))


@pytest.fixture
def shared() -> Path:
    """A directory every user of this machine can use (the pytest tmp_path is root's alone)."""
    path = Path(tempfile.mkdtemp(prefix="graphnetz-travel-"))
    path.chmod(0o777)
    yield path
    shutil.rmtree(path, ignore_errors=True)


def test_another_path_and_home_hit_what_the_first_checkout_wrote(shared: Path) -> None:
    remote = (shared / "mount").as_uri()
    first = _project(shared / "ci" / "checkout")
    assert _session(first, shared / "home-ci", remote, "--graphnetz-remote-cache-write") \
        == (3, 0)
    objects = sorted((shared / "mount" / "triples").glob("*.json"))
    second = _project(shared / "laptop" / "elsewhere" / "clone")
    assert _session(second, shared / "home-laptop", remote) == (0, 3)
    assert sorted((shared / "mount" / "triples").glob("*.json")) == objects


def test_another_user_hits_too(shared: Path) -> None:
    nobody = 65534
    if os.getuid() != 0:
        pytest.skip("running as another user needs root")
    try:
        probe = subprocess.run([sys.executable, "-c", "import torch"], user=nobody,
                               capture_output=True, check=False)
        why = probe.stderr.decode()[-200:] if probe.returncode else None
    except PermissionError as exc:
        why = str(exc)
    if why is not None:
        pytest.skip(f"user {nobody} cannot run this interpreter ({sys.executable}): {why}")
    remote = (shared / "mount").as_uri()
    first = _project(shared / "ci" / "checkout")
    _session(first, shared / "home-ci", remote, "--graphnetz-remote-cache-write")
    other = _project(shared / "other" / "clone")
    for path in (other, *other.rglob("*"), shared / "mount", *(shared / "mount").rglob("*")):
        path.chmod(0o777 if path.is_dir() else 0o666)
    home = shared / "home-other"
    home.mkdir(mode=0o777)
    assert _session(other, home, remote, user=nobody) == (0, 3)
