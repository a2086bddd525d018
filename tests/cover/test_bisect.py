"""The paired bisect: the search over a probe (pure, from_arrays reports) and `graphnetz bisect`
in a scratch git repository (each probe a git worktree and a pytest run)."""

from __future__ import annotations

import math
import subprocess
import sys

import numpy as np
import pytest

from pytest_graphnetz import BenchmarkReport
from pytest_graphnetz.base.text import fmt_num
from pytest_graphnetz.cli.bisection.search import (
    DEFAULT_MAX_SEEDS,
    REGRESSED,
    SAME,
    BisectRefusal,
    NothingRegressed,
    bisect_commits,
    look_alphas,
    seed_schedule,
)
from pytest_graphnetz.cli.main import main
from tests.helpers.git_history import commit

SEEDS = np.arange(100)


def noise(stream: int, n: int, sd: float = 0.005) -> np.ndarray:
    """Per-seed values of one RNG stream: seed s's value never depends on n (prefixes)."""
    return np.array([sd * np.random.default_rng([stream, s]).standard_normal() for s in range(n)])


class History:
    """commit i -> (shift, stream) per model; probes counted."""

    def __init__(self, commits: list[dict[str, tuple[float, int]]]) -> None:
        self.commits = commits
        self.calls: list[tuple[str, int]] = []

    def probe(self, commit: str, n: int) -> dict[str, BenchmarkReport]:
        self.calls.append((commit, n))
        spec = self.commits[int(commit)]
        X = np.array([[0.8 + shift + noise(stream, n) for shift, stream in spec.values()]])
        return {"test_m/test_a": BenchmarkReport.from_arrays(
            X, tasks=["t"], models=list(spec), seeds=range(n), metric="accuracy")}


def linear(n: int, culprit: int, shift: float = -0.03, restream: tuple[int, ...] = ()) -> History:
    commits, stream = [], 0
    for i in range(n):
        stream += i in restream
        commits.append({"GCN": (shift if i >= culprit else 0.0, stream)})
    return History(commits)


def test_culprit_named_with_the_evidence_of_each_step() -> None:
    h = linear(16, culprit=11, restream=(3, 9, 13))
    result = bisect_commits([str(i) for i in range(16)], h.probe, min_effect=0.01)
    (finding,) = result.findings
    assert finding.culprit == "11" and finding.last_same == "10"
    assert result.resolved
    # every step touching the cell is in the finding, with its verdict and numbers
    verdicts = {s.commit: s.evidence[0].verdict for s in finding.steps}
    assert verdicts["15"] == REGRESSED
    assert all(v == (REGRESSED if int(c) >= 11 else SAME) for c, v in verdicts.items())
    text = "\n".join(result.lines())
    assert "culprit 11" in text and "paired Δ" in text and "Bonferroni" in text
    # the level each step prints is the level its look's decision used
    levels = dict(zip(result.seed_counts, result.look_alphas, strict=True))
    for step in finding.steps:
        ev = step.evidence[0]
        if ev.alpha is not None:
            assert ev.alpha == levels[ev.seeds]
            assert f"alpha {fmt_num(ev.alpha)}" in ev.detail
            assert f"{ev.seeds} seeds at {fmt_num(ev.alpha)}" in text


def test_bit_identical_neighbour_decides_without_a_test() -> None:
    # no stream changes: every commit before the culprit is GOOD bit for bit, every one after BAD
    h = linear(8, culprit=5)
    result = bisect_commits([str(i) for i in range(8)], h.probe, min_effect=0.01)
    assert result.findings[0].culprit == "5"
    details = [s.evidence[0].detail for s in result.steps[1:]]
    assert details and all("bit for bit" in d and "no test" in d for d in details)
    assert all(n == 10 for _, n in h.calls)   # nothing took more seeds


def test_unknown_takes_more_seeds_up_to_the_budget() -> None:
    # the culprit at -δ with noise that 10 seeds cannot resolve: later looks double the seeds
    h = linear(4, culprit=2, shift=-0.01, restream=(1, 2, 3))
    result = bisect_commits(["0", "1", "2", "3"], lambda c, n: _noisy(h, c, n, 0.01),
                            seeds=10, max_seeds=80, min_effect=0.01)
    assert {n for _, n in h.calls} > {10}
    assert max(ev.seeds for s in result.steps for ev in s.evidence) > 10
    assert result.findings[0].culprit == "2"


def _noisy(h: History, commit: str, n: int, sd: float) -> dict[str, BenchmarkReport]:
    h.calls.append((commit, n))
    shift, stream = h.commits[int(commit)]["GCN"]
    X = (0.8 + shift + noise(stream, n, sd))[None, None, :]
    return {"r": BenchmarkReport.from_arrays(X, tasks=["t"], models=["GCN"], seeds=range(n),
                                             metric="accuracy")}


def test_every_regressed_cell_gets_its_own_culprit() -> None:
    commits = []
    for i in range(10):
        commits.append({"GCN": (-0.03 if i >= 3 else 0.0, int(i >= 5)),
                        "GAT": (-0.03 if i >= 7 else 0.0, int(i >= 5)),
                        "MLP": (0.0, int(i >= 5))})
    h = History(commits)
    result = bisect_commits([str(i) for i in range(10)], h.probe, min_effect=0.01)
    got = {f.cell[2]: f.culprit for f in result.findings}
    assert got == {"GCN": "3", "GAT": "7"}   # MLP did not regress: not a target


def test_nothing_regressed_is_its_own_outcome() -> None:
    same = linear(5, culprit=99, restream=(2,))
    with pytest.raises(NothingRegressed, match="does not read REGRESSED") as info:
        bisect_commits([str(i) for i in range(5)], same.probe, min_effect=0.01)
    assert not info.value.undecided and "Every cell reads same" in str(info.value)


def test_an_undecided_probe_says_what_delta_its_seeds_resolve() -> None:
    """BAD at −δ under noise its budget cannot resolve: undecided, and the hint names the δ
    those seeds resolve (larger than the δ asked for) and the budget δ needs, never "a smaller
    --min-effect"; that δ, given back, decides the probe."""
    h = linear(3, culprit=2, shift=-0.004, restream=(2,))
    with pytest.raises(NothingRegressed) as info:
        bisect_commits(["0", "1", "2"], lambda c, n: _noisy(h, c, n, 0.02), seeds=10,
                       max_seeds=20, min_effect=0.005)
    err = info.value
    assert err.undecided
    (ev,) = err.evidence
    text = str(err)
    resolved = float(text.split("resolves δ ≥ ")[1].split()[0])
    assert resolved > 0.005 and "smaller --min-effect" not in text
    assert f"at power 0.8: rerun with --min-effect {fmt_num(resolved)}" in text
    need = int(text.split("needs about ")[1].split(" seeds")[0])
    budget = int(text.split("--max-seeds ")[1].split(",")[0])
    assert need > 20 and budget >= need and budget in (40, 80, 160, 320, 640, 1280)
    # an independent check of "resolves": the one-sided t power at that δ is at least 0.8
    from scipy import stats as st

    se = ev.sd_diff / math.sqrt(ev.seeds)
    crit = st.t.ppf(1 - ev.alpha, ev.seeds - 1)
    power = st.nct.sf(crit, ev.seeds - 1, resolved / se)
    assert power >= 0.79


def test_refusals() -> None:
    h = linear(5, culprit=2)

    def missing(commit: str, n: int) -> dict[str, BenchmarkReport]:
        return {} if commit == "2" else h.probe(commit, n)

    with pytest.raises(BisectRefusal, match="saved no report test_m/test_a"):
        bisect_commits([str(i) for i in range(5)], missing, min_effect=0.01)
    with pytest.raises(ValueError, match="max_seeds"):
        seed_schedule(10, 5)


def test_error_budget_is_split_over_steps_and_seed_counts() -> None:
    h = linear(32, culprit=20, restream=(4, 12, 25))
    result = bisect_commits([str(i) for i in range(32)], h.probe, min_effect=0.01,
                            alpha=0.05, seeds=10)
    assert DEFAULT_MAX_SEEDS == 160
    assert result.seed_counts == (10, 20, 40, 80, 160)   # the gate's schedule, doubling
    assert result.tests == math.ceil(math.log2(32)) + 2 == 7
    # Bonferroni over every gate call: each look of each probe, its share ∝ its seeds
    assert result.look_alphas == pytest.approx(
        tuple(0.05 / 7 * n / 310 for n in (10, 20, 40, 80, 160)))
    assert sum(result.look_alphas) * result.tests == pytest.approx(0.05)
    assert look_alphas(0.05, 4, (10, 20)) == pytest.approx((0.05 / 12, 0.05 / 6))
    # a cell is decided by at most `tests` probes
    assert len(result.findings[0].steps) <= result.tests


def test_wrong_culprits_are_rare_under_noise() -> None:
    """A simulation of the error claim: with the culprit at −2δ and noise the first look cannot
    resolve, a wrong commit is named in at most α of the searches (here far fewer: the union
    bound is loose)."""
    wrong, runs = 0, 30
    rng = np.random.default_rng(7)
    for trial in range(runs):
        culprit = int(rng.integers(1, 12))
        restream = tuple(int(i) for i in rng.choice(np.arange(1, 12), 4, replace=False))
        h = linear(12, culprit, shift=-0.02, restream=restream)
        for c in h.commits:
            shift, stream = c["GCN"]
            c["GCN"] = (shift, stream + 100 * trial)
        result = bisect_commits([str(i) for i in range(12)],
                                lambda c, n, h=h: _noisy(h, c, n, 0.012), min_effect=0.01)
        named = result.findings[0].culprit
        wrong += named is not None and named != str(culprit)
    assert wrong / runs <= 0.05


def test_bisect_help_shows_the_pytest_args_form_and_exit_codes(capsys) -> None:
    with pytest.raises(SystemExit) as exc:
        main(["bisect", "--help"])
    assert exc.value.code == 0
    out = " ".join(capsys.readouterr().out.split())
    assert "graphnetz bisect GOOD BAD [options] -- [PYTEST ARGS ...]" in out
    assert "3 nothing regressed" in out and f"default {DEFAULT_MAX_SEEDS}" in out


def test_the_command_exits_2_outside_a_git_repository(pytester: pytest.Pytester) -> None:
    """The installed command's exit status and message, from a fresh interpreter."""
    result = pytester.run(sys.executable, "-m", "pytest_graphnetz.cli", "bisect", "HEAD~1",
                          "HEAD", "--", "-q")
    assert result.ret == 2
    assert "not inside a git repository" in result.stderr.str()


def test_a_drift_is_told_from_a_step() -> None:
    """Five commits each lose 0.6 points (δ is 1 point, the total 3): no single commit carries
    the drop. The search says so, names the commits that moved and points to history, and
    stops there instead of taking look after look near the crossing. A single 3-point step in
    the same range still names its culprit."""
    drift = History([{"GCN": (-0.006 * min(i, 5), i)} for i in range(6)])
    result = bisect_commits([str(i) for i in range(6)], drift.probe, min_effect=0.01)
    (finding,) = result.findings
    assert finding.culprit is None and finding.drift and not result.resolved
    text = "\n".join(result.lines())
    assert "DRIFT, no single commit carries the drop" in text, text
    assert "the commits that moved" in text and "graphnetz history" in text
    assert max(n for _, n in drift.calls) < DEFAULT_MAX_SEEDS, drift.calls
    step = History([{"GCN": (-0.03 if i >= 3 else 0.0, i)} for i in range(6)])
    (found,) = bisect_commits([str(i) for i in range(6)], step.probe, min_effect=0.01).findings
    assert found.culprit == "3" and not found.drift


# -- costs seconds each (marked slow): fresh interpreters, subprocess sessions or killed
# processes (the slow tier, tests/README.md) ------------------------------------------------


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


@pytest.mark.slow
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


@pytest.mark.slow
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


@pytest.mark.slow
def test_bisect_nothing_regressed_exit_3(repo, capsys) -> None:
    good = commit(repo.path, "good")
    same = commit(repo.path, "a comment", comment="# nothing changes")
    assert main(["bisect", good, same, "--min-effect", "0.01", "--", "-q"]) == 3
    err = capsys.readouterr().err
    assert "nothing regressed" in err and "does not read REGRESSED" in err
    assert "refused" not in err


@pytest.mark.slow
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


@pytest.mark.slow
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


@pytest.mark.slow
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


@pytest.mark.slow
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


@pytest.mark.slow
def test_a_dirty_work_tree_is_named_before_the_search(repo, capsys) -> None:
    good = commit(repo.path, "good")
    bad = commit(repo.path, "bad", shift=-0.03)
    script = repo.path / "test_model.py"
    script.write_text(script.read_text().replace("SHIFT, STREAM", "SHIFT , STREAM"))
    assert main(["bisect", good, bad, "--min-effect", "0.01", "--", "-q"]) == 0
    err = capsys.readouterr().err
    assert "uncommitted changes to 1 tracked file(s) (test_model.py)" in err, err
    assert "no probe includes them" in err


@pytest.mark.slow
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


@pytest.mark.slow
def test_sigkill_of_bisect_ends_what_the_probed_test_started(repo, tmp_path) -> None:
    import signal

    (repo.path / "conftest.py").write_text(SPAWNING_CONFTEST)
    good, bad = commit(repo.path, "good"), commit(repo.path, "bad", shift=-0.03)
    proc, (probe_pid, worker_pid), _ = _start_held_bisect(repo, tmp_path, good, bad)
    proc.send_signal(signal.SIGKILL)
    proc.communicate(timeout=300)
    _wait_gone(probe_pid)
    _wait_gone(worker_pid)   # before, it slept on, orphaned
