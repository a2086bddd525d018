"""Command tasks' process hygiene: each run in its own process group, which nothing survives.

Tiny scripts that start ``sleep 300`` grandchildren and write their process ids to a file; the
test then checks through /proc that none of them lives on after a timeout, SIGINT, SIGTERM, a
normal exit or a SIGKILL of pytest during a warm run (the fork server too), and that a
grandchild holding the script's stdout and stderr open does not make the run wait for it.
Output and metrics files past their bounds are refused by name.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
from pathlib import Path

import pytest

from pytest_graphnetz.runner.command import Command, CommandError
from pytest_graphnetz.runner.command.run import CommandExecutor

pytestmark = pytest.mark.skipif(not Path("/proc/self/stat").exists(),
                                reason="reads process states from /proc")

from tests.helpers.commands import (  # noqa: E402
    BOUND,  # noqa: E402
    RUN,
    SPAWNER,
    alive,
    gone,
    wait_for,
)


def spawner(tmp_path: Path, mode: str, timeout: float | None = None) -> tuple[Command, Path]:
    (tmp_path / "spawn.py").write_text(SPAWNER)
    pids = tmp_path / "pids.json"
    return Command([sys.executable, "spawn.py", str(pids), mode, "{output}"], cwd=tmp_path,
                   timeout=timeout), pids


def test_a_timeout_kills_the_script_and_its_grandchildren(tmp_path, commands) -> None:
    cmd, pids = spawner(tmp_path, "sleep", timeout=3)
    with pytest.raises(CommandError, match="ran past its timeout of 3 s"):
        commands.run(cmd, **RUN)
    assert gone(wait_for(pids)), "a process of the timed-out run survived"


def test_a_grandchild_holding_the_output_open_does_not_delay_the_run(tmp_path, commands) -> None:
    # The script exits at once; its `sleep 300` keeps stdout and stderr open. Pipes would make
    # the run wait for it until its timeout (a CommandError, not 0.5); files do not, and the
    # group is killed.
    cmd, pids = spawner(tmp_path, "exit", timeout=120)
    history = commands.run(cmd, **RUN)
    assert history.test == (0.5,)
    assert gone(wait_for(pids)), "the grandchild outlived its run"


def test_output_past_the_bound_stops_the_run_and_says_so(tmp_path) -> None:
    (tmp_path / "loud.py").write_text(
        "import sys, time\nfor _ in range(64):\n    sys.stdout.write('x' * 65536)\n"
        "sys.stdout.flush()\ntime.sleep(300)\n")
    # Not stopped for its output, it would sleep until its timeout: another message.
    cmd = Command([sys.executable, "loud.py"], cwd=tmp_path, timeout=120)
    with pytest.raises(CommandError, match=r"loud\.py.*more than 1 MiB to its stdout \(the "
                       r"bound: CommandExecutor\(max_output_bytes=\.\.\.\), by default "
                       r"pytest_graphnetz\.runner\.command\.process\.MAX_OUTPUT_BYTES\)"
                       r".*print less"), \
            CommandExecutor(max_output_bytes=2**20) as commands:
        commands.run(cmd, **RUN)


def test_a_long_stderr_keeps_only_its_tail(tmp_path, commands) -> None:
    (tmp_path / "fail.py").write_text(
        "import sys\nfor i in range(200000):\n    print('line', i, file=sys.stderr)\n"
        "sys.exit(3)\n")
    cmd = Command([sys.executable, "fail.py"], cwd=tmp_path)
    with pytest.raises(CommandError, match="exited with code 3") as info:
        commands.run(cmd, **RUN)
    assert "line 199999" in str(info.value) and "line 0\n" not in str(info.value)
    assert len(str(info.value)) < 2000


def test_a_metrics_file_past_the_bound_is_refused_by_name(tmp_path) -> None:
    (tmp_path / "big.py").write_text(
        "import json, sys\njson.dump({'metric': 'accuracy', 'test': [0.5] * 400000}, "
        "open(sys.argv[1], 'w'))\n")
    cmd = Command([sys.executable, "big.py", "{output}"], cwd=tmp_path)
    with pytest.raises(CommandError, match=r"metrics file .*metrics\.json holds [0-9.]+ MiB, "
                       r"more than the 1 MiB .*MAX_METRICS_BYTES.*once per epoch"), \
            CommandExecutor(max_metrics_bytes=2**20) as commands:
        commands.run(cmd, **RUN)


def test_a_3_mb_stderr_line_without_a_newline_shows_its_tail(tmp_path, commands) -> None:
    (tmp_path / "fail.py").write_text(
        "import sys\nsys.stderr.write('x' * 3_000_000 + 'THE END')\nsys.exit(3)\n")
    cmd = Command([sys.executable, "fail.py"], cwd=tmp_path)
    with pytest.raises(CommandError, match="exited with code 3") as info:
        commands.run(cmd, **RUN)
    message = str(info.value)
    assert "no stderr" not in message
    assert message.endswith("xxxxxTHE END") and len(message) < 2000


def test_a_process_that_makes_its_own_session_outlives_the_run_as_documented(tmp_path,
                                                                           commands) -> None:
    # docs/command-tasks.md says so: it left the run's process group, which is what is killed.
    (tmp_path / "daemon.py").write_text(
        "import json, subprocess, sys\n"
        "d = subprocess.Popen(['sleep', '300'], start_new_session=True)\n"
        "json.dump([d.pid], open(sys.argv[1], 'w'))\n"
        "json.dump({'metric': 'accuracy', 'test': [0.5]}, open(sys.argv[2], 'w'))\n")
    pids = tmp_path / "pids.json"
    cmd = Command([sys.executable, "daemon.py", str(pids), "{output}"], cwd=tmp_path)
    assert commands.run(cmd, **RUN).test == (0.5,)
    (daemon,) = json.loads(pids.read_text())
    try:
        assert alive(daemon)
    finally:
        os.kill(daemon, signal.SIGKILL)


# Programs of their own, run by path in the user's interpreter (one run, or one fork server,
# per process): what they hold at module level is that process's, never the runner's.
PROGRAMS = ("child.py", "server.py")
MUTABLE_CALLS = {"list", "dict", "set", "defaultdict", "OrderedDict", "Counter", "deque",
                 "local", "WeakValueDictionary", "WeakKeyDictionary", "WeakSet"}


def module_state(source: str) -> list[str]:
    """The module-level names ``source`` binds to a mutable container, and its ``global``
    statements (``line: what``)."""
    import ast

    tree = ast.parse(source)
    found = [f"{node.lineno}: global {', '.join(node.names)}" for node in ast.walk(tree)
             if isinstance(node, ast.Global)]
    for node in tree.body:
        targets = node.targets if isinstance(node, ast.Assign) else \
            [node.target] if isinstance(node, ast.AnnAssign) and node.value is not None else []
        value = getattr(node, "value", None)
        call = value.func if isinstance(value, ast.Call) else None
        called = call.attr if isinstance(call, ast.Attribute) else \
            call.id if isinstance(call, ast.Name) else None
        names = [ast.unparse(t) for t in targets]
        displays = (ast.List, ast.Dict, ast.Set, ast.ListComp, ast.DictComp, ast.SetComp)
        if names and names != ["__all__"] and (isinstance(value, displays)
                                               or called in MUTABLE_CALLS):
            found.append(f"{node.lineno}: {', '.join(names)}")
    return found


def test_the_runner_side_of_command_tasks_holds_no_module_level_state() -> None:
    package = Path(__file__).parents[2] / "pytest_graphnetz" / "runner" / "command"
    found = {path.name: module_state(path.read_text(encoding="utf-8"))
             for path in sorted(package.glob("*.py")) if path.name not in PROGRAMS}
    assert len(found) >= 6, found   # the package's modules were scanned
    assert {name: state for name, state in found.items() if state} == {}, \
        "module-level mutable state: it belongs on the CommandExecutor"
    # The check finds what it looks for.
    assert module_state("A = {}\nB: set[int] = set()\nC = (1,)\n"
                        "def f():\n    global D\n") == ["5: global D", "1: A", "2: B"]


# -- costs seconds each (marked slow): fresh interpreters, subprocess sessions or killed
# processes (the slow tier, tests/README.md) ------------------------------------------------


DRIVER = '''
import sys
from pytest_graphnetz.runner.command import Command
from pytest_graphnetz.runner.command.run import CommandExecutor
cmd = Command([sys.executable, "spawn.py", sys.argv[1], "sleep", "{output}"], cwd=sys.argv[2])
with CommandExecutor() as commands:
    commands.run(cmd, task="t", model="m", metric="accuracy", seed=0, device="cpu", threads=1,
                 deterministic="off")
'''


@pytest.mark.slow
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


@pytest.mark.slow
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


@pytest.mark.slow
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


@pytest.mark.slow
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
