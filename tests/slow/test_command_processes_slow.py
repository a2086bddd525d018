"""The tests of tests/fast/test_command_processes.py's unit that cost seconds each: fresh
interpreters, subprocess sessions or killed processes (the slow tier, tests/README.md)."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from pathlib import Path

import pytest

from pytest_graphnetz.runner.command import Command

pytestmark = pytest.mark.skipif(not Path("/proc/self/stat").exists(),
                                reason="reads process states from /proc")
from tests.helpers.commands import BOUND, RUN, SPAWNER, alive, gone, wait_for  # noqa: E402

DRIVER = '''
import sys
from pytest_graphnetz.runner.command import Command
from pytest_graphnetz.runner.command.run import CommandExecutor
cmd = Command([sys.executable, "spawn.py", sys.argv[1], "sleep", "{output}"], cwd=sys.argv[2])
with CommandExecutor() as commands:
    commands.run(cmd, task="t", model="m", metric="accuracy", seed=0, device="cpu", threads=1,
                 deterministic="off")
'''


@pytest.mark.parametrize("signum", [signal.SIGTERM, signal.SIGINT])
def test_sigterm_and_sigint_to_the_runner_end_the_whole_group(tmp_path, signum) -> None:
    (tmp_path / "spawn.py").write_text(SPAWNER)
    (tmp_path / "driver.py").write_text(DRIVER)
    pids = tmp_path / "pids.json"
    env = {**os.environ, "PYTHONPATH": str(Path(__file__).parents[2])}
    driver = subprocess.Popen([sys.executable, "driver.py", str(pids), str(tmp_path)],
                              cwd=tmp_path, env=env, stdout=subprocess.DEVNULL,
                              stderr=subprocess.PIPE)
    try:
        script_and_child = wait_for(pids)
        driver.send_signal(signum)
        _, err = driver.communicate(timeout=BOUND)
    finally:
        driver.kill()
    assert driver.returncode != 0
    if signum == signal.SIGINT:
        assert b"KeyboardInterrupt" in err
    else:
        assert driver.returncode == -signal.SIGTERM
    assert gone(script_and_child), f"a process survived {signal.Signals(signum).name}"


def _parent(pid: int) -> int:
    return int(Path(f"/proc/{pid}/stat").read_text().rpartition(")")[2].split()[1])


WARM_SPAWNER = '''
import json, os, subprocess, sys, time
import torch
import pytest_graphnetz.script as graphnetz

if os.environ["GRAPHNETZ_SEED"] == "1":   # the second run, forked from the warm server
    child = subprocess.Popen(["sleep", "300"])
    with open({pids!r} + ".tmp", "w") as fh:
        json.dump([os.getppid(), os.getpid(), child.pid], fh)
    os.replace({pids!r} + ".tmp", {pids!r})
    time.sleep(300)
graphnetz.record(test=0.5)
'''

WARM_SESSION = '''
import sys
from pathlib import Path

from pytest_graphnetz import Task
from pytest_graphnetz.runner.command import Command, DataFiles

HERE = Path(__file__).parent


def test_script(graphnetz_run):
    graphnetz_run({"t": Task("t", DataFiles(), kind="command")},
                  {"A": Command([sys.executable, "train.py"], cwd=HERE)})
'''


def test_sigkill_of_pytest_during_a_warm_run_leaves_no_process(tmp_path) -> None:
    pytest.importorskip("torch")
    if not sys.platform.startswith("linux"):
        pytest.skip("warm runs fork: Linux only")
    pids = tmp_path / "pids.json"
    (tmp_path / "train.py").write_text(WARM_SPAWNER.format(pids=str(pids)))
    (tmp_path / "test_warm.py").write_text(WARM_SESSION)
    env = {**os.environ, "PYTHONPATH": str(Path(__file__).parents[2])}
    env.pop("GRAPHNETZ_WARM_SCRIPTS", None)
    session = subprocess.Popen(
        [sys.executable, "-m", "pytest", "-p", "no:randomly", "-p", "no:cacheprovider",
         "-o", "graphnetz_seeds=2", "--graphnetz-device=cpu", "--graphnetz-no-cache",
         "test_warm.py"], cwd=tmp_path, env=env, stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL)
    try:
        server, script, grandchild = wait_for(pids)
        assert b"command/server.py" in Path(f"/proc/{server}/cmdline").read_bytes(), \
            "the run was not forked from the warm server"
        assert _parent(server) == session.pid
    finally:
        session.kill()   # SIGKILL: no code of pytest runs
        session.wait()
    assert gone([server, script, grandchild]), \
        f"alive after SIGKILL of pytest: {[p for p in (server, script, grandchild) if alive(p)]}"


KILLS_ITS_SERVER = '''
import os, signal, sys
import torch
import pytest_graphnetz.script as graphnetz

parent = os.getppid()
with open(f"/proc/{parent}/cmdline", "rb") as fh:
    if b"command/server.py" in fh.read():   # forked warm: end the server, never a cold parent
        os.kill(parent, signal.SIGKILL)
graphnetz.record(test=0.25 + 0.01 * int(os.environ["GRAPHNETZ_SEED"]))
'''


def test_a_killed_fork_server_falls_back_to_cold_runs_with_one_warning(tmp_path,
                                                                       commands) -> None:
    pytest.importorskip("torch")
    if not sys.platform.startswith("linux"):
        pytest.skip("warm runs fork: Linux only")
    from pytest_graphnetz.runner.command import warm as command_warm

    (tmp_path / "train.py").write_text(KILLS_ITS_SERVER)
    cmd = Command([sys.executable, "train.py"], cwd=tmp_path)
    first = commands.run(cmd, **RUN)   # cold: shows that it imports torch
    with pytest.warns(command_warm.WarmServerWarning) as caught:
        later = [commands.run(cmd, **{**RUN, "seed": s}) for s in (1, 2, 3)]
    assert [first.test, *(h.test for h in later)] == [(0.25,), (0.26,), (0.27,), (0.28,)]
    said = [str(w.message) for w in caught if w.category is command_warm.WarmServerWarning]
    assert len(said) == 1, said
    assert "warm script server" in said[0] and "later script runs start cold" in said[0]
    assert commands.servers.running() == []


SESSION_END = '''
import sys
from pathlib import Path

from pytest_graphnetz import Task
from pytest_graphnetz.runner.command import Command, DataFiles

HERE = Path(__file__).parent


def test_script(graphnetz_run):
    graphnetz_run({"t": Task("t", DataFiles(), kind="command")},
                  {"A": Command([sys.executable, "train.py"], cwd=HERE)})
'''

RECORDS_ITS_PARENT = '''
import os
import torch
import pytest_graphnetz.script as graphnetz

with open("parents.txt", "a") as fh:
    fh.write(f"{os.getppid()}\\n")
graphnetz.record(test=0.5)
'''


def test_a_session_ends_its_fork_servers_when_it_ends(pytester: pytest.Pytester,
                                                      monkeypatch) -> None:
    pytest.importorskip("torch")
    if not sys.platform.startswith("linux"):
        pytest.skip("warm runs fork: Linux only")
    monkeypatch.delenv("GRAPHNETZ_WARM_SCRIPTS", raising=False)
    pytester.makepyfile(test_session=SESSION_END)
    (pytester.path / "train.py").write_text(RECORDS_ITS_PARENT)
    # In this process: no exit handler runs after the session, so only its end can close them.
    result = pytester.runpytest_inprocess("-p", "no:randomly", "-p", "no:cacheprovider",
                                          "-o", "graphnetz_seeds=3", "--graphnetz-device=cpu",
                                          "--graphnetz-no-cache")
    result.assert_outcomes(passed=1)
    parents = [int(p) for p in (pytester.path / "parents.txt").read_text().split()]
    assert parents[0] == os.getpid(), "the first run is cold"
    server = parents[-1]
    assert server != os.getpid(), "the later runs were not forked warm"
    assert gone([server]), "the session's fork server outlived the session"
