"""The probes of ``graphnetz bisect`` and the command itself: each probed commit checked out in a
git worktree that bisect owns (:class:`Workspace`), pytest run there on the probe's seeds
(:class:`GitProbe`, in a warm interpreter, :mod:`.probe_server`, where it can), and
:func:`run_bisect`, which runs :func:`~pytest_graphnetz.cli.bisection.search.bisect_commits` over
them.

Nothing is left behind: the worktrees, the temporary folder and the probe's processes go at
exit, on SIGTERM and SIGINT too; after a SIGKILL, the next bisect in the repository sweeps what
the killed one left. Bisect's worktrees are marked in git itself (locked, with the reason
``graphnetz bisect pid N work DIR``), so a sweep touches only worktrees a bisect made whose
process is gone, never the user's.
"""

from __future__ import annotations

import contextlib
import dataclasses
import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from typing import IO, cast

from pytest_graphnetz.cli.bisection.probe_server import tie_to_parent
from pytest_graphnetz.cli.bisection.search import (
    BisectRefusal,
    BisectResult,
    Reports,
    SearchSettings,
    bisect_commits,
)
from pytest_graphnetz.report import BenchmarkReport

PYTEST_EXIT = {2: "interrupted or errors during collection", 3: "internal error",
               4: "usage error", 5: "no tests collected"}
LOCK_REASON = "graphnetz bisect pid"   # how a bisect's worktrees are known: "... N work DIR"
WORK_PREFIX = "graphnetz-bisect-"
EXIT_NOTHING_REGRESSED = 3


def git(repo: Path, *args: str) -> str:
    """``git -C repo args``' output; a failure is a :class:`BisectRefusal` with git's words."""
    proc = subprocess.run(["git", "-C", str(repo), *args], capture_output=True, text=True,
                          check=False)
    if proc.returncode != 0:
        raise BisectRefusal(f"`git {' '.join(args)}` failed: "
                            f"{' '.join(proc.stderr.split()) or proc.returncode}")
    return proc.stdout.strip()


def commit_range(repo: Path, good: str, bad: str) -> list[str]:
    """GOOD, then every commit after it up to BAD along BAD's first parents (12-digit ids)."""
    ids = []
    for role, rev in (("GOOD", good), ("BAD", bad)):
        try:
            ids.append(git(repo, "rev-parse", "--verify", "--quiet", f"{rev}^{{commit}}"))
        except BisectRefusal:
            raise BisectRefusal(f"{role} {rev!r} is not a commit of {repo} (a commit id, tag "
                                "or branch)") from None
    good_id, bad_id = ids
    if subprocess.run(["git", "-C", str(repo), "merge-base", "--is-ancestor", good_id, bad_id],
                      check=False).returncode != 0:
        raise BisectRefusal(f"GOOD {good} is not an ancestor of BAD {bad}: give GOOD first, "
                            "an older commit on BAD's history")
    after = git(repo, "rev-list", "--reverse", "--first-parent", "--ancestry-path",
                f"{good_id}..{bad_id}").split()
    if not after:
        raise BisectRefusal(f"GOOD {good} and BAD {bad} are the same commit")
    return [c[:12] for c in (good_id, *after)]


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


class Workspace:
    """Bisect's temporary folder and the worktrees it checks out there, each registered in git
    locked with :data:`LOCK_REASON` (this process's id and the folder)."""

    def __init__(self, repo: Path) -> None:
        self.repo = repo
        self.root = Path(tempfile.mkdtemp(prefix=WORK_PREFIX))
        (self.root / "owner").write_text(str(os.getpid()))
        self.reason = f"{LOCK_REASON} {os.getpid()} work {self.root}"
        self.trees: list[Path] = []

    def add(self, name: str, commit: str) -> Path:
        tree = self.root / name
        self.trees.append(tree)
        git(self.repo, "worktree", "add", "--detach", "--quiet", "--lock", "--reason",
            self.reason, str(tree), commit)
        return tree

    def remove(self, tree: Path) -> None:
        with contextlib.suppress(BisectRefusal):
            git(self.repo, "worktree", "remove", "--force", "--force", str(tree))
        if tree in self.trees:
            self.trees.remove(tree)

    def close(self) -> None:
        for tree in list(self.trees):
            self.remove(tree)
        shutil.rmtree(self.root, ignore_errors=True)


def sweep(repo: Path) -> int:
    """Remove the worktrees (and folders) that a bisect no longer running left in ``repo``:
    those locked with :data:`LOCK_REASON` whose process is gone. Returns how many."""
    common = Path(git(repo, "rev-parse", "--path-format=absolute", "--git-common-dir"))
    swept = 0
    for admin in sorted((common / "worktrees").glob("*")):
        try:
            reason = (admin / "locked").read_text().strip()
            words = reason.removeprefix(LOCK_REASON).split(" work ", 1)
            pid, work = int(words[0]), Path(words[1])
        except (OSError, ValueError, IndexError):
            continue   # not locked by a bisect: the user's
        if not reason.startswith(LOCK_REASON) or _alive(pid):
            continue
        try:
            tree = Path((admin / "gitdir").read_text().strip()).parent
        except OSError:
            tree = None
        if tree is not None and tree.exists():
            with contextlib.suppress(BisectRefusal):
                git(repo, "worktree", "remove", "--force", "--force", str(tree))
        shutil.rmtree(admin, ignore_errors=True)   # what `git worktree prune` does for one
        if work.name.startswith(WORK_PREFIX):
            shutil.rmtree(work, ignore_errors=True)
        swept += 1
    for work in Path(tempfile.gettempdir()).glob(f"{WORK_PREFIX}*"):
        # a folder whose bisect ended before it registered a worktree
        with contextlib.suppress(OSError, ValueError):
            if not _alive(int((work / "owner").read_text())):
                shutil.rmtree(work, ignore_errors=True)
    return swept


class WarmServer:
    """The warm interpreter (:mod:`.probe_server`): one probe's pytest session at a time, in a
    fork of a server that keeps the installed modules earlier probes imported."""

    def __init__(self, env: dict[str, str], cwd: Path) -> None:
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "pytest_graphnetz.cli.bisection.probe_server"],
            stdin=subprocess.PIPE, stdout=subprocess.PIPE, env=env, cwd=cwd, text=True)
        self.child: int | None = None

    def run(self, cwd: Path, argv: Sequence[str], env: dict[str, str], log: Path) -> int:
        assert self.proc.stdin is not None and self.proc.stdout is not None
        self.proc.stdin.write(json.dumps({"cwd": str(cwd), "argv": list(argv), "env": env,
                                          "log": str(log)}) + "\n")
        self.proc.stdin.flush()
        self.child = int(_answer(self.proc.stdout)["pid"])
        with _guarded(self.child):
            rc = int(_answer(self.proc.stdout)["rc"])
        self.child = None   # only once it has ended: close() kills one still running
        return rc

    def close(self) -> None:
        """End the running probe's process group, then the server."""
        _kill_group(self.child)
        self.child = None
        with contextlib.suppress(OSError):
            if self.proc.stdin is not None:
                self.proc.stdin.close()
        try:
            self.proc.wait(timeout=30)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()


def failed_tests(log: Path, most: int = 5) -> list[str]:
    """The ``FAILED``/``ERROR`` lines of pytest's short summary in ``log`` (each names the test
    and its exception), at most ``most`` of them, the count of the rest after."""
    try:
        text = log.read_text(errors="replace")
    except OSError:
        return []
    lines = [line.strip() for line in text.splitlines()
             if line.startswith(("FAILED ", "ERROR "))]
    return lines[:most] + ([f"... and {len(lines) - most} more"] if len(lines) > most else [])


def _answer(stream: IO[str]) -> dict:
    line = stream.readline()
    if not line:
        raise OSError("the warm interpreter ended")
    return json.loads(line)


@contextlib.contextmanager
def _guarded(group: int) -> Iterator[None]:
    """While the block runs, a guard process (:func:`.probe_server.guard`) kills process group
    ``group`` should this process end, even by SIGKILL; at the block's end the guard kills
    what is left in the group (a process a probed test started and left running) and ends."""
    guard = subprocess.Popen([sys.executable, "-m", "pytest_graphnetz.cli.bisection.probe_server",
                              "--guard", str(group), str(os.getpid())],
                             stdin=subprocess.DEVNULL, env=_package_env())
    try:
        yield
    finally:
        guard.terminate()
        guard.wait()


def _package_env() -> dict[str, str]:
    """This environment with the folder holding this package first on PYTHONPATH, so a process
    started with ``-m pytest_graphnetz...`` imports this very checkout."""
    env = dict(os.environ)
    here = str(Path(cast(str, sys.modules["pytest_graphnetz"].__file__)).resolve().parents[1])
    env["PYTHONPATH"] = os.pathsep.join(
        [here, *([env["PYTHONPATH"]] if env.get("PYTHONPATH") else [])])
    return env


def _kill_group(pid: int | None) -> None:
    if pid is not None:
        with contextlib.suppress(OSError):
            os.killpg(pid, signal.SIGKILL)


class GitProbe:
    """``probe(commit, n)`` for :func:`~pytest_graphnetz.cli.bisection.search.bisect_commits`:
    ``commit``
    checked out in a worktree of ``workspace`` (removed afterwards), pytest run there with the
    given arguments on seeds ``0..n-1``, every probe sharing one triple cache (``cache_dir``),
    and the candidate reports it saved (``--graphnetz-report-dir``) read back by their path
    under the report dir. A pytest run that errors (exit status other than 0, or 1 for failed
    tests: a regressed commit fails its gate) is a :class:`BisectRefusal`.

    ``warm`` (where ``os.fork`` exists): each session runs in a fork of the warm interpreter,
    which keeps what earlier probes imported from installed code (pytest, torch, PyG), so a
    probe costs its own collection and training, not an interpreter start and torch's import;
    should the server end, the remaining probes run cold. Cold: ``python -m pytest``, a new
    process group. Either way the process imports this same pytest-graphnetz (its folder first
    on PYTHONPATH), so every probe is judged by one version of the plugin.
    """

    def __init__(self, workspace: Workspace, prefix: str, pytest_args: Sequence[str], *,
                 cache_dir: Path, log: Callable[[str], None], warm: bool = True) -> None:
        self.workspace, self.prefix, self.pytest_args = workspace, prefix, list(pytest_args)
        self.cache_dir, self.log = cache_dir, log
        self.runs = 0
        self.env = _package_env()   # each probe imports this very checkout
        self.server = (WarmServer(self.env, workspace.root) if warm and hasattr(os, "fork")
                       else None)
        self.cold: subprocess.Popen[bytes] | None = None
        self.failures: tuple[str, list[str]] = ("", [])   # the last probe's failed tests

    def __call__(self, commit: str, n: int) -> Reports:
        self.runs += 1
        out = self.workspace.root / f"reports-{self.runs}"
        log = self.workspace.root / f"probe-{self.runs}.log"
        self.log(f"probe {commit}: pytest on {n} seeds")
        args = [*self.pytest_args, f"--graphnetz-seeds={n}", f"--graphnetz-report-dir={out}",
                f"--graphnetz-cache-dir={self.cache_dir}", "-q", "-p", "no:cacheprovider"]
        tree = self.workspace.add(f"tree-{self.runs}", commit)
        try:
            rc = self._pytest(tree / self.prefix, args, log)
        finally:
            self.workspace.remove(tree)
        if rc not in (0, 1):
            text = log.read_text(errors="replace") if log.exists() else ""
            tail = "\n".join(text.strip().splitlines()[-15:])
            raise BisectRefusal(
                f"{commit}: the probe cannot be built: pytest exited {rc} "
                f"({PYTEST_EXIT.get(rc, 'error')}) with "
                f"`pytest {' '.join(self.pytest_args)}`; its output ends:\n{tail}")
        self.failures = (commit, failed_tests(log))
        reports = {p.relative_to(out).as_posix().removesuffix(".json"):
                   BenchmarkReport.from_json(p) for p in sorted(out.rglob("*.json"))}
        if not reports:
            raise BisectRefusal(
                f"{commit}: pytest saved no candidate report (no gate ran on a graphnetz run)"
                + (f"; its tests failed before a gate ran:\n{self.failure_lines()}"
                   if self.failures[1] else
                   "; give pytest arguments that select gated tests"))
        return reports

    def failure_lines(self) -> str:
        """The last probe's failed tests with their exceptions, as pytest summarised them."""
        return "\n".join(f"  {line}" for line in self.failures[1])

    def _pytest(self, cwd: Path, args: list[str], log: Path) -> int:
        if self.server is not None:
            try:
                return self.server.run(cwd, args, self.env, log)
            except OSError as exc:
                self.log(f"bisect: {exc}; the remaining probes run cold")
                self.server.close()
                self.server = None
        with log.open("wb") as sink:
            self.cold = subprocess.Popen([sys.executable, "-m", "pytest", *args], cwd=cwd,
                                         env=self.env, stdin=subprocess.DEVNULL, stdout=sink,
                                         stderr=subprocess.STDOUT, start_new_session=True,
                                         preexec_fn=tie_to_parent)
            with _guarded(self.cold.pid):
                rc = self.cold.wait()
            self.cold = None   # only once it has ended: close() kills one still running
            return rc

    def close(self) -> None:
        """End the running probe's process group and the warm interpreter."""
        if self.cold is not None:
            _kill_group(self.cold.pid)
            self.cold.wait()
        if self.server is not None:
            self.server.close()


class Interrupted(KeyboardInterrupt):
    """SIGTERM or SIGINT ended the run (after its cleanup); ``signum`` says which."""

    def __init__(self, signum: int) -> None:
        super().__init__(f"stopped by {signal.Signals(signum).name}")
        self.signum = signum


@contextlib.contextmanager
def _signals_end_the_run() -> Iterator[None]:
    """SIGTERM and SIGINT end the run with :class:`Interrupted`, so cleanup runs; the handlers
    are restored after."""
    def stop(signum: int, frame: object) -> None:
        raise Interrupted(signum)

    previous = {sig: signal.signal(sig, stop) for sig in (signal.SIGTERM, signal.SIGINT)}
    try:
        yield
    finally:
        for sig, handler in previous.items():
            signal.signal(sig, handler)


def run_bisect(good: str, bad: str, pytest_args: Sequence[str], settings: SearchSettings, *,
               cache_dir: str | None = None, warm: bool = True) -> int:
    """``graphnetz bisect``: 0 when every regressed cell's culprit is named, 1 when a search
    stopped undecided; raises :class:`BisectRefusal` (exit 2),
    :class:`~pytest_graphnetz.cli.bisection.search.NothingRegressed` (exit 3, or 1 when BAD stayed
    undecided) and :class:`Interrupted` (128 + the signal) for the command to print.
    ``settings``: the search's seeds, budget, level, δ and margin."""
    def log(line: str) -> None:
        print(line, file=sys.stderr, flush=True)

    for arg in pytest_args:
        if arg.startswith(("--graphnetz-seeds", "--graphnetz-report-dir",
                           "--graphnetz-cache-dir")):
            raise BisectRefusal(f"pytest argument {arg}: bisect sets the seeds, report dir and "
                                "cache dir of each probe itself (--seeds, --max-seeds, "
                                "--cache-dir); leave it out")
    repo, prefix, commits = _commits_to_search(good, bad, log)
    with _signals_end_the_run():
        workspace = Workspace(repo)
        probe = None
        try:
            cache = Path(cache_dir).resolve() if cache_dir else workspace.root / "cache"
            probe = GitProbe(workspace, prefix, pytest_args, cache_dir=cache, log=log,
                             warm=warm)
            result = bisect_commits(commits, probe, **dataclasses.asdict(settings))
        except BisectRefusal as exc:
            # a report or cell a probe lacks: show what its tests raised
            if probe is None or not probe.failures[1] or probe.failure_lines() in str(exc):
                raise
            raise BisectRefusal(f"{exc}\nThe last probe ({probe.failures[0]}) had failed "
                                f"tests:\n{probe.failure_lines()}") from None
        finally:
            if probe is not None:
                probe.close()
            workspace.close()
    _print_result(result, repo)
    return 0 if result.resolved else 1


def _commits_to_search(good: str, bad: str,
                       log: Callable[[str], None]) -> tuple[Path, str, list[str]]:
    """The repository around the working directory, the directory's path inside it and the
    commits from GOOD to BAD; warns of uncommitted changes (no probe has them) and sweeps the
    worktrees an earlier, killed bisect left."""
    try:
        repo = Path(git(Path.cwd(), "rev-parse", "--show-toplevel"))
    except BisectRefusal:
        raise BisectRefusal(f"{Path.cwd()} is not inside a git repository: run graphnetz "
                            "bisect from the project's checkout") from None
    prefix = git(Path.cwd(), "rev-parse", "--show-prefix")
    commits = commit_range(repo, good, bad)
    changed = git(repo, "diff", "--name-only", "HEAD").splitlines()   # staged or not
    if changed:
        names = ", ".join(changed[:3]) + (", ..." if len(changed) > 3 else "")
        log(f"bisect: warning: the work tree has uncommitted changes to {len(changed)} tracked "
            f"file(s) ({names}); each probe checks out a commit, so no probe includes them "
            "(commit them, or stash them, to bisect them)")
    swept = sweep(repo)
    if swept:
        log(f"bisect: removed {swept} worktree(s) an earlier bisect left (its process is gone)")
    log(f"bisect: {len(commits)} commits from GOOD {commits[0]} to BAD {commits[-1]}")
    return repo, prefix, commits


def _print_result(result: BisectResult, repo: Path) -> None:
    """The search's report, each culprit with its commit's subject, and what it cost."""
    for line in result.lines():
        print(line)
    for f in result.findings:
        if f.culprit is not None:
            print(f"\n{f.label}: culprit {git(repo, 'log', '-1', '--format=%h %s', f.culprit)}")
    trainings = sum(result.probed.values())
    print(f"\n{len(result.probed)} commits probed, {trainings} seed-runs requested "
          f"(the shared triple cache trains each (code, seed) once)")
