"""The tests of tests/fast/test_bisect.py's unit that cost seconds each: fresh
interpreters, subprocess sessions or killed processes (the slow tier, tests/README.md)."""

from __future__ import annotations

import subprocess
import sys

import pytest

from pytest_graphnetz.base.text import fmt_num
from pytest_graphnetz.cli.main import main
from tests.helpers.git_history import commit

# -- `graphnetz bisect` in a scratch git repository ------------------------------------------------

class Repo:
    def __init__(self, path) -> None:
        self.path = path


@pytest.fixture
def repo(tmp_path, monkeypatch) -> Repo:
    """A scratch git repository as the working directory. Not pytester's: its snapshot of
    sys.modules would drop what the in-process `main` imports (scipy's C extensions cannot load
    twice). The probes' pytest sessions load no hypothesis plugin (as tests/conftest.py's
    pytester): PYTEST_ADDOPTS reaches them through the environment."""
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("PYTEST_ADDOPTS", "-p no:hypothesispytest")
    subprocess.run(["git", "init", "-q"], cwd=tmp_path, check=True)
    return Repo(tmp_path)


def test_bisect_names_the_culprit_exit_0(repo, capsys) -> None:
    good = commit(repo.path, "good")
    commit(repo.path, "a comment", comment="# nothing changes")
    culprit = commit(repo.path, "the culprit", shift=-0.03, comment="# nothing changes")
    bad = commit(repo.path, "new RNG stream", shift=-0.03, stream=1)
    assert main(["bisect", good, bad, "--min-effect", "0.01", "--", "-q"]) == 0
    out, err = capsys.readouterr()
    assert f"culprit {culprit[:12]}" in out and "the culprit" in out
    assert "bit for bit" in out          # the comment-only commit took no test
    assert "probe" in err
    listed = subprocess.run(["git", "worktree", "list"], cwd=repo.path, check=True,
                            capture_output=True, text=True).stdout
    assert len(listed.strip().splitlines()) == 1   # every probe's worktree is gone


def test_bisect_undecided_exit_1(repo, capsys) -> None:
    good = commit(repo.path, "good")
    noisy = commit(repo.path, "noisy and a little worse", shift=-0.01, stream=2, noise=0.03)
    bad = commit(repo.path, "bad", shift=-0.05, stream=1)
    assert main(["bisect", good, bad, "--seeds", "4", "--max-seeds", "4", "--min-effect",
                 "0.02", "--", "-q"]) == 1
    out = capsys.readouterr().out
    assert "UNRESOLVED" in out
    # the hint names the δ these seeds resolve, larger than the δ asked for
    resolved = float(out.split("resolves δ ≥ ")[1].split()[0])
    assert resolved > 0.02 and f"rerun with --min-effect {fmt_num(resolved)}" in out
    # BAD itself undecided against GOOD: exit 1 too (not 3: nothing is known to be fine)
    assert main(["bisect", good, noisy, "--seeds", "4", "--max-seeds", "4", "--min-effect",
                 "0.02", "--", "-q"]) == 1
    err = capsys.readouterr().err
    assert "undecided" in err and "whether it regressed is not decided" in err
    assert "rerun with --min-effect" in err


def test_bisect_nothing_regressed_exit_3(repo, capsys) -> None:
    good = commit(repo.path, "good")
    same = commit(repo.path, "a comment", comment="# nothing changes")
    assert main(["bisect", good, same, "--min-effect", "0.01", "--", "-q"]) == 3
    err = capsys.readouterr().err
    assert "nothing regressed" in err and "does not read REGRESSED" in err
    assert "refused" not in err


def test_bisect_refusals_exit_2(repo, capsys) -> None:
    good = commit(repo.path, "good")
    same = commit(repo.path, "a comment", comment="# nothing changes")
    (repo.path / "conftest.py").write_text("this is not python\n")
    commit(repo.path, "broken", shift=-0.03)
    (repo.path / "conftest.py").unlink()
    bad = commit(repo.path, "bad", shift=-0.03)
    assert main(["bisect", same, bad, "--min-effect", "0.01", "--", "-q"]) == 2
    err = capsys.readouterr().err
    assert "cannot be built" in err and "pytest exited" in err
    assert main(["bisect", bad, good, "--", "-q"]) == 2
    assert "not an ancestor" in capsys.readouterr().err
    assert main(["bisect", good, "nope", "--", "-q"]) == 2
    assert "not a commit" in capsys.readouterr().err
    assert main(["bisect", good, bad, "--", "--graphnetz-seeds=3"]) == 2
    assert "sets the seeds" in capsys.readouterr().err


# -- nothing left behind: signals, SIGKILL and the next bisect's sweep -------------------------

# Committed in the scratch repository: with BISECT_READY set, a probe's session tells the test
# its pid through one FIFO (the open blocks until the test reads: an event, no sleep) and then
# blocks on another FIFO that nobody writes, until it is killed.
HOLDING_CONFTEST = '''
import os


def pytest_sessionstart(session):
    ready = os.environ.get("BISECT_READY")
    if ready:
        with open(ready, "w") as fifo:
            fifo.write(str(os.getpid()))
        with open(os.environ["BISECT_HOLD"]) as never:
            never.read()
'''


def _worktrees(repo) -> list[str]:
    return subprocess.run(["git", "worktree", "list", "--porcelain"], cwd=repo.path, check=True,
                          capture_output=True, text=True).stdout.strip().split("\n\n")


def _holding_history(repo) -> tuple[str, str]:
    (repo.path / "conftest.py").write_text(HOLDING_CONFTEST)
    return commit(repo.path, "good"), commit(repo.path, "bad", shift=-0.03)


def _start_held_bisect(repo, tmp_path, good: str, bad: str
                       ) -> tuple[subprocess.Popen, list[int], str]:
    """`graphnetz bisect` in a fresh interpreter, held inside its first probe: the process,
    the pids the probe wrote (its own first) and the folder bisect works in (from its
    worktree's lock)."""
    import os
    import select

    fifos = tmp_path.parent / f"{tmp_path.name}-fifos"
    fifos.mkdir()
    ready, hold = fifos / "ready", fifos / "hold"
    os.mkfifo(ready)
    os.mkfifo(hold)
    env = {**os.environ, "BISECT_READY": str(ready), "BISECT_HOLD": str(hold)}
    proc = subprocess.Popen([sys.executable, "-m", "pytest_graphnetz.cli", "bisect", good, bad,
                             "--min-effect", "0.01", "--", "-q"], cwd=repo.path, env=env,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    fd = os.open(ready, os.O_RDONLY | os.O_NONBLOCK)   # no writer yet: not readable
    try:
        while not select.select([fd], [], [], 5)[0]:
            assert proc.poll() is None, proc.communicate()
        pids = [int(p) for p in os.read(fd, 64).split()]
    finally:
        os.close(fd)
    (locked,) = [w for w in _worktrees(repo) if "locked graphnetz bisect pid" in w]
    return proc, pids, locked.split(" work ")[1].strip()


def _wait_gone(pid: int) -> None:
    """Wait (on the kernel's exit event, bounded generously) for ``pid`` to end."""
    import os
    import select

    try:
        fd = os.pidfd_open(pid)
    except ProcessLookupError:
        return
    try:
        assert select.select([fd], [], [], 300)[0], f"process {pid} still runs"
    finally:
        os.close(fd)


@pytest.mark.parametrize("signum", ["SIGTERM", "SIGINT"])
def test_a_signal_to_bisect_removes_its_worktrees_and_probe(repo, tmp_path, signum) -> None:
    import os
    import signal

    proc, (probe_pid,), work = _start_held_bisect(repo, tmp_path, *_holding_history(repo))
    sig = getattr(signal, signum)
    proc.send_signal(sig)
    out, err = proc.communicate(timeout=300)
    assert proc.returncode == 128 + sig, err
    assert "worktrees and probes are removed" in err
    _wait_gone(probe_pid)
    assert len(_worktrees(repo)) == 1 and not os.path.exists(work)


def test_after_sigkill_the_next_bisect_sweeps_only_its_own_leftovers(repo, tmp_path, capsys
                                                                     ) -> None:
    """SIGKILL leaves the probe's worktree registered (nothing can run at a SIGKILL), and no
    probe alive; the next bisect removes that worktree and its folder, and leaves the user's
    own worktrees alone, a locked one included."""
    import os
    import signal

    good, bad = _holding_history(repo)
    user = tmp_path.parent / f"{tmp_path.name}-mine"
    subprocess.run(["git", "worktree", "add", "-q", "--detach", str(user)], cwd=repo.path,
                   check=True)
    away = tmp_path.parent / f"{tmp_path.name}-usb"
    subprocess.run(["git", "worktree", "add", "-q", "--detach", "--lock", "--reason",
                    "on a usb disk", str(away)], cwd=repo.path, check=True)
    proc, (probe_pid,), work = _start_held_bisect(repo, tmp_path, good, bad)
    proc.send_signal(signal.SIGKILL)
    proc.communicate(timeout=300)
    _wait_gone(probe_pid)   # the kernel ends the probe with its parents
    assert len(_worktrees(repo)) == 4 and os.path.exists(work)   # main, two of the user's, one
    assert main(["bisect", good, bad, "--min-effect", "0.01", "--", "-q"]) == 0
    assert "removed 1 worktree(s) an earlier bisect left" in capsys.readouterr().err
    left = _worktrees(repo)
    assert len(left) == 3 and not os.path.exists(work)
    assert any(str(user) in w for w in left)
    assert any(str(away) in w and "on a usb disk" in w for w in left)


def test_warm_probes_read_what_cold_ones_do_and_start_with_fresh_random_state(repo, monkeypatch
                                                                             ) -> None:
    """The same commit probed cold and three times warm: the same per-seed values bit for bit;
    a NumPy draw at import (the global state, which the warm interpreter holds once it has
    learned numpy) differs from probe to probe, as in fresh interpreters."""
    from pytest_graphnetz.cli.bisection.probes import GitProbe, Workspace

    (repo.path / "conftest.py").write_text(
        "import os\nimport numpy as np\n\n"
        "with open(os.environ['DRAWS'], 'a') as f:\n"
        "    f.write(f'{np.random.random()!r}\\n')\n")
    good = commit(repo.path, "good", noise=0.01)
    draws = repo.path.parent / f"{repo.path.name}-draws.txt"
    monkeypatch.setenv("DRAWS", str(draws))
    values = {}
    for kind in ("cold", "warm"):
        space = Workspace(repo.path)
        probe = GitProbe(space, "", ["-q"], cache_dir=space.root / "cache", log=lambda _: None,
                         warm=kind == "warm")
        try:
            for _ in range(1 if kind == "cold" else 3):
                (report,) = probe(good, 10).values()
                values.setdefault(kind, []).append(report.values("t", "GCN").tobytes())
        finally:
            probe.close()
            space.close()
        assert not space.root.exists()
    assert len(set(values["cold"] + values["warm"])) == 1
    got = draws.read_text().split()
    assert len(got) == 4 and len(set(got)) == 4


# -- what bisect says about the work tree and a probe's own failures ------------------------

def test_a_dirty_work_tree_is_named_before_the_search(repo, capsys) -> None:
    good = commit(repo.path, "good")
    bad = commit(repo.path, "bad", shift=-0.03)
    script = repo.path / "test_model.py"
    script.write_text(script.read_text().replace("SHIFT, STREAM", "SHIFT , STREAM"))
    assert main(["bisect", good, bad, "--min-effect", "0.01", "--", "-q"]) == 0
    err = capsys.readouterr().err
    assert "uncommitted changes to 1 tracked file(s) (test_model.py)" in err, err
    assert "no probe includes them" in err


def test_a_probed_test_that_raises_is_shown_with_its_exception(repo, capsys) -> None:
    good = commit(repo.path, "good")
    commit(repo.path, "a comment", comment="# nothing changes")
    script = repo.path / "test_model.py"
    script.write_text(script.read_text().replace(
        "    report = ", "    raise RuntimeError('the loader broke at seed 3')\n    report = "))
    subprocess.run(["git", "-c", "user.name=t", "-c", "user.email=t@t", "commit", "-qam",
                    "raises"], cwd=repo.path, check=True)
    bad = commit(repo.path, "bad", shift=-0.03)
    assert main(["bisect", good, bad, "--min-effect", "0.01", "--", "-q"]) == 2
    err = capsys.readouterr().err
    assert "no gate ran" in err and "RuntimeError: the loader broke at seed 3" in err, err


# The probed session starts a process of its own (as a command task's script or a loader's
# worker would), tells the test both pids through the FIFO, and holds.
SPAWNING_CONFTEST = '''
import os
import subprocess
import sys


def pytest_sessionstart(session):
    ready = os.environ.get("BISECT_READY")
    if ready:
        worker = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(600)"])
        with open(ready, "w") as fifo:
            fifo.write(f"{os.getpid()} {worker.pid}")
        with open(os.environ["BISECT_HOLD"]) as never:
            never.read()
'''


def test_sigkill_of_bisect_ends_what_the_probed_test_started(repo, tmp_path) -> None:
    import signal

    (repo.path / "conftest.py").write_text(SPAWNING_CONFTEST)
    good, bad = commit(repo.path, "good"), commit(repo.path, "bad", shift=-0.03)
    proc, (probe_pid, worker_pid), _ = _start_held_bisect(repo, tmp_path, good, bad)
    proc.send_signal(signal.SIGKILL)
    proc.communicate(timeout=300)
    _wait_gone(probe_pid)
    _wait_gone(worker_pid)   # before, it slept on, orphaned
