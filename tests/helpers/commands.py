"""Command runs under a real ``CommandExecutor``: the executor fixture, a script that spawns a
child and reports both pids, and waits on processes and files bounded only against a hang."""

from __future__ import annotations

import json
import time
from pathlib import Path

import pytest

from pytest_graphnetz.runner.command.run import CommandExecutor

SPAWNER = '''
import json, os, subprocess, sys, time
child = subprocess.Popen(["sleep", "300"])
with open(sys.argv[1] + ".tmp", "w") as fh:
    json.dump([os.getpid(), child.pid], fh)
os.replace(sys.argv[1] + ".tmp", sys.argv[1])
if sys.argv[2] == "exit":
    json.dump({"metric": "accuracy", "test": [0.5]}, open(sys.argv[3], "w"))
    sys.exit(0)
time.sleep(300)
'''

RUN = dict(task="t", model="m", metric="accuracy", seed=0, device="cpu", threads=1,
           deterministic="off")
UNSEEDED_RUN = {key: value for key, value in RUN.items() if key != "seed"}


@pytest.fixture
def commands():
    """An executor of command runs for one test, closed after it (its servers end)."""
    with CommandExecutor() as executor:
        yield executor


def alive(pid: int) -> bool:
    """Whether ``pid`` runs (a zombie, killed and waiting for its reaper, does not)."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except (FileNotFoundError, ProcessLookupError):
        return False
    return stat.rpartition(")")[2].split()[0] not in ("Z", "X")


# Waits are on events (a file written, a process gone), polled up to BOUND seconds: a bound
# only a hang reaches, never a timing claim (a loaded machine may take minutes for either).
BOUND = 600.0


def gone(pids: list[int], within: float = BOUND) -> bool:
    end = time.monotonic() + within
    while time.monotonic() < end:
        if not any(alive(p) for p in pids):
            return True
        time.sleep(0.05)
    return False


def wait_for(path: Path, within: float = BOUND) -> list[int]:
    end = time.monotonic() + within
    while time.monotonic() < end:
        if path.exists():
            return json.loads(path.read_text())
        time.sleep(0.05)
    raise AssertionError(f"{path} never appeared")
