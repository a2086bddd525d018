"""Faults: dead parents, killed writes, read-only and occupied paths, corrupt cache entries.

Process-level faults go through real processes (``kill -9``, a second interpreter); a read-only
directory is real too: as root, the session runs without the capability that lets root write
anywhere (``setpriv``), so the permission bits apply.
"""

from __future__ import annotations

import contextlib
import json
import os
import signal
import stat
import subprocess
import sys
import time
from pathlib import Path

import pytest

from tests.helpers.fault_injection import BASELINE_GATE, run_pytest, sweep, unprivileged


def read_only(directory: Path) -> None:
    directory.mkdir(parents=True, exist_ok=True)
    directory.chmod(stat.S_IRUSR | stat.S_IXUSR)


@pytest.mark.parametrize("earlier", [False, True], ids=["empty", "after a refresh"])
def test_a_read_only_baseline_directory_names_itself(pytester: pytest.Pytester, earlier) -> None:
    from pytest_graphnetz.gates.refreshing.baselines import TEMP_DIR

    pytester.makepyfile(test_model=BASELINE_GATE)
    folder = pytester.path / "baselines" / "test_model"
    if earlier:   # a baseline, and the temp folder older versions kept beside it (`chmod -R`)
        run_pytest(pytester, "--graphnetz-update-baselines").assert_outcomes(passed=1)
        (folder / TEMP_DIR).mkdir(exist_ok=True)
        (folder / TEMP_DIR / ".gitignore").write_text("*\n")
        read_only(folder / TEMP_DIR)
    before = {p.name: p.read_bytes() for p in folder.glob("*") if p.is_file()}
    read_only(folder)
    try:
        result = run_pytest(pytester, "--graphnetz-update-baselines")
    finally:
        for directory in (folder, folder / TEMP_DIR):
            if directory.is_dir():
                directory.chmod(0o755)
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines(["*cannot write baseline baselines/test_model/test_gcn.json: no "
                                 "permission to write in baselines/test_model "
                                 "*--graphnetz-baseline-dir*"])
    result.stdout.no_fnmatch_line("*.tmp*")
    result.stdout.no_fnmatch_line("*.lock*")   # the lock is not filelock's error in the folder
    assert {p.name: p.read_bytes() for p in folder.glob("*") if p.is_file()} == before


# -- the triple cache ----------------------------------------------------------------------------

def _entry(directory: Path) -> Path:
    (entry,) = directory.glob("*.json")
    return entry


def _replace_history(entry: Path, **changes) -> str:
    data = json.loads(entry.read_text())
    data["history"].update(changes)
    return json.dumps(data)


def _nested(depth: int) -> str:
    return "[" * depth + "]" * depth


# Each makes the one entry of a trained triple unusable; the second string says how.
BAD_ENTRIES = {
    "not UTF-8": lambda e: b"\xff\xfe" + e.read_bytes(),
    "nested 200,000 deep": lambda e: _nested(200_000),
    "truncated": lambda e: e.read_text()[: len(e.read_text()) // 2],
    "version 99": lambda e: e.read_text().replace('"version": 1', '"version": 99'),
    "version true": lambda e: e.read_text().replace('"version": 1', '"version": true'),
    "1 epoch for a 5-epoch task": lambda e: _replace_history(
        e, test=[0.5], val=[0.5], train_loss=[1.0]),
    "accuracy 7.5": lambda e: _replace_history(
        e, test=[7.5] * len(json.loads(e.read_text())["history"]["test"])),
    "booleans": lambda e: _replace_history(
        e, test=[True] * len(json.loads(e.read_text())["history"]["test"])),
    "a string value": lambda e: _replace_history(
        e, test=["0.5"] * len(json.loads(e.read_text())["history"]["test"])),
}


@pytest.mark.parametrize("damage", list(BAD_ENTRIES))
def test_an_unusable_cache_entry_is_named_discarded_and_recomputed(root, tmp_path, damage):
    from pytest_graphnetz.report.codec import dumps
    from pytest_graphnetz.runner.cache import CacheWarning

    cache = tmp_path / "cache"
    first, _ = sweep(root, cache)
    entry = _entry(cache)
    bad = BAD_ENTRIES[damage](entry)
    (entry.write_bytes if isinstance(bad, bytes) else entry.write_text)(bad)
    named = f"discarding corrupt graphnetz cache entry .*{entry.name}"
    with pytest.warns(CacheWarning, match=named):
        second, statuses = sweep(root, cache)
    assert statuses == ["trained"]
    assert dumps(second.to_dict()) == dumps(first.to_dict())
    # rewritten whole, and used from then on
    _, statuses = sweep(root, cache)
    assert statuses == ["cached"]


def test_a_custom_trainer_may_record_any_number_of_epochs(root, tmp_path):
    from pytest_graphnetz import run_benchmark
    from tests.helpers.tiny import gcn, tiny_task

    task = tiny_task(trainer=_three_epoch_trainer)  # epochs=5 is the built-in loop's setting
    statuses = []
    for _ in range(2):
        run_benchmark({"tiny": task}, {"GCN": gcn}, seeds=[0], device="cpu", root=root,
                      cache_dir=tmp_path / "cache", progress=lambda *a: statuses.append(a[3]))
    assert statuses == ["trained", "cached"]


def _three_epoch_trainer(model, data, *, task, device):
    from pytest_graphnetz import History

    # 3 epochs: its business (a percent accuracy is not: refused, see test_report_validation.py)
    return History(test=[0.5, 0.6, 0.7])


def test_a_cache_dir_that_is_a_file_warns_once_and_trains(root, tmp_path):
    from pytest_graphnetz.runner.cache import CacheWarning

    occupied = tmp_path / "cache"
    occupied.write_text("not a directory")
    with pytest.warns(CacheWarning) as caught:
        report, statuses = sweep(root, occupied, seeds=(0, 1))
    assert statuses == ["trained", "trained"]
    assert [str(w.message) for w in caught if w.category is CacheWarning] == [
        f"graphnetz cache directory {occupied} is unusable: it is a file, not a directory; "
        "training without the cache this run. Fix the directory, or choose another with "
        "--graphnetz-cache-dir (run_benchmark(cache_dir=...))"]
    assert occupied.read_text() == "not a directory"


READ_ONLY_RUN = """
import sys, warnings
sys.path.insert(0, {repository!r})
from tests.helpers.tiny import gcn, tiny_task
from pytest_graphnetz import run_benchmark
for workers, cache in (1, {cache1!r}), (2, {cache2!r}):
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        statuses = []
        run_benchmark({{"tiny": tiny_task()}}, {{"GCN": gcn}}, seeds=[0, 1, 2], device="cpu",
                      root={root!r}, cache_dir=cache, workers=workers,
                      progress=lambda *a: statuses.append(a[3]))
    print(workers, "STATUSES", statuses)
    for w in caught:
        if w.category.__name__ == "CacheWarning":
            print(workers, "WARNING", w.message)
"""


def test_a_read_only_empty_cache_directory_warns_once_and_trains(pytester, tmp_path):
    # One interpreter runs serially, then with two worker processes (each cache directory is
    # new to it, so each run warns on its own).
    caches, root = [tmp_path / "cache1", tmp_path / "cache2"], tmp_path / "data"
    for cache in caches:
        read_only(cache)
    root.mkdir()
    script = READ_ONLY_RUN.format(repository=str(Path(__file__).parents[2]), root=str(root),
                                  cache1=str(caches[0]), cache2=str(caches[1]))
    try:
        result = pytester.run(*unprivileged(sys.executable, "-c", script))
    finally:
        for cache in caches:
            cache.chmod(0o755)
    assert result.ret == 0, result.stderr.str()
    for workers, cache in zip((1, 2), caches, strict=True):
        result.stdout.fnmatch_lines([f"{workers} STATUSES ['trained', 'trained', 'trained']"])
        warnings = [line for line in result.stdout.lines
                    if line.startswith(f"{workers} WARNING")]
        assert len(warnings) == 1, result.stdout.str()
        assert f"graphnetz cache directory {cache} is read-only (PermissionError" in warnings[0]
        assert "cached results are read, nothing is saved this run" in warnings[0]
        assert list(cache.iterdir()) == []


def test_a_read_only_pytest_cache_runs_without_the_cache(pytester: pytest.Pytester) -> None:
    pytester.makepyfile("def test_x(graphnetz_run): pass")
    locked = pytester.path / "locked"
    read_only(locked)
    try:
        result = run_pytest(pytester, "-o", f"cache_dir={locked / '.pytest_cache'}")
    finally:
        locked.chmod(0o755)
    assert result.ret == 0, result.stdout.str()
    result.stdout.fnmatch_lines(["*graphnetz: cannot create the triple cache under pytest's cache "
                                 "directory (*Permission denied*); training without the cache*"])
    assert "INTERNALERROR" not in result.stdout.str() + result.stderr.str()


def _compute_once(args: tuple[str, str, int]) -> bool:
    """In a worker process: get_or_compute one of two keys; computing appends to ``log``."""
    from pytest_graphnetz.report.epochs import History
    from pytest_graphnetz.runner.cache import TripleCache, make_key

    directory, log, which = args

    def compute() -> History:
        with open(log, "a") as fh:
            fh.write(f"computed {which}\n")
        time.sleep(0.3)
        return History(test=[0.25])

    return TripleCache(directory).get_or_compute(make_key({"key": which}), compute)[1]


def test_concurrent_processes_compute_each_key_once_and_leave_no_lock_files(tmp_path):
    import multiprocessing
    from concurrent.futures import ProcessPoolExecutor

    cache, log = tmp_path / "cache", tmp_path / "log.txt"
    jobs = [(str(cache), str(log), i % 2) for i in range(6)]
    with ProcessPoolExecutor(3, mp_context=multiprocessing.get_context("fork")) as pool:
        cached = list(pool.map(_compute_once, jobs))
    assert sorted(log.read_text().splitlines()) == ["computed 0", "computed 1"]
    assert sorted(cached) == [False, False, True, True, True, True]
    assert sorted(p.suffix for p in cache.iterdir()) == [".json", ".json"]


# -- costs seconds each (marked slow): fresh interpreters, subprocess sessions or killed
# processes (the slow tier, tests/README.md) ------------------------------------------------


@pytest.mark.slow
def test_a_baseline_path_that_is_a_directory_says_so(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(test_model=BASELINE_GATE)
    occupied = pytester.path / "baselines" / "test_model" / "test_gcn.json"
    occupied.mkdir(parents=True)
    result = pytester.runpytest_subprocess()
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines(["*baseline *test_gcn.json is a directory, not a report file*"])
    result.stdout.no_fnmatch_line("*no baseline at*")
    # the suggested refresh fails with the same clear reason, not an IsADirectoryError
    refresh = pytester.runpytest_subprocess("--graphnetz-update-baselines")
    refresh.assert_outcomes(failed=1)
    refresh.stdout.fnmatch_lines(["*baseline *test_gcn.json is a directory, not a report file*"])
    # and so does a forced one, which would replace an unreadable file
    forced = pytester.runpytest_subprocess("--graphnetz-update-baselines", "--graphnetz-force")
    forced.assert_outcomes(failed=1)
    forced.stdout.fnmatch_lines(["*cannot write baseline *test_gcn.json: it is a directory*"])
    refresh.stdout.no_fnmatch_line("*IsADirectoryError*")
    assert occupied.is_dir()


PREFILLED_GATES = """
import sys
sys.path.insert(0, {repository!r})
from tests.helpers.tiny import gcn, tiny_task

def test_first(graphnetz_run):
    graphnetz_run({{"tiny": tiny_task()}}, {{"GCN": gcn}})

def test_second(graphnetz_run):
    graphnetz_run({{"tiny": tiny_task()}}, {{"GCN": gcn}}, seeds=[0, 1, 2, 3])
"""


def _tree(directory: Path) -> dict[str, tuple[int, int]]:
    return {str(p.relative_to(directory)): (p.stat().st_size, p.stat().st_mtime_ns)
            for p in sorted(directory.rglob("*"))}


@pytest.mark.slow
def test_a_read_only_prefilled_cache_serves_its_hits_saves_nothing_and_warns_once(
        pytester: pytest.Pytester, tmp_path) -> None:
    # A team's shared cache: filled by one session, then read-only to the next, which gets
    # every hit (test_first), trains what is missing (test_second's seed 3) and saves nothing.
    pytester.makepyfile(test_gates=PREFILLED_GATES.format(repository=str(Path(__file__).parents[2])))
    cache = tmp_path / "team-cache"
    args = ["-o", "graphnetz_seeds=3", "--graphnetz-device=cpu", f"--graphnetz-cache-dir={cache}",
            "-p", "no:cacheprovider", "-k", "first"]
    run_pytest(pytester, *args).assert_outcomes(passed=1)
    before = _tree(cache)
    assert any(name.endswith(".json") for name in before)
    for path in [cache, *(p for p in cache.rglob("*") if p.is_dir())]:
        path.chmod(stat.S_IRUSR | stat.S_IXUSR)
    try:
        result = run_pytest(pytester, *args[:-2], "-W", "always")
    finally:
        for path in [cache, *(p for p in cache.rglob("*") if p.is_dir())]:
            path.chmod(0o755)
    result.assert_outcomes(passed=2)
    out = result.stdout.str()
    assert "triples: 1 trained, 6 from cache" in out, out
    warned = [line for line in result.stdout.lines if "is read-only" in line]
    assert len(warned) == 1, out
    assert f"graphnetz cache directory {cache} is read-only (PermissionError" in warned[0]
    assert warned[0].rstrip().endswith("cached results are read, nothing is saved this run")
    assert _tree(cache) == before, "a read-only cache was written"


ORPHAN_RUN = """
import os, sys, time
sys.path.insert(0, {repository!r})
from tests.helpers.tiny import gcn, tiny_task
from pytest_graphnetz import History, run_benchmark

def stuck(model, data, *, task, device):
    open(os.path.join({pids!r}, str(os.getpid())), "w").close()
    time.sleep(600)
    return History(test=[0.5])

if __name__ == "__main__":
    run_benchmark({{"tiny": tiny_task(trainer=stuck)}}, {{"GCN": gcn}}, seeds=[0, 1],
                  device="cpu", root={root!r}, workers=2)
"""


def _alive(pid: int) -> bool:
    """Whether ``pid`` runs (a zombie, dead but not yet reaped by its new parent, does not)."""
    try:
        status = Path(f"/proc/{pid}/status").read_text()
    except OSError:
        try:
            os.kill(pid, 0)
        except ProcessLookupError:
            return False
        return True
    return "\nState:\tZ" not in status


# Waits are on events (a file, a process gone), polled up to BOUND seconds: only a hang
# reaches it, never a timing claim (a loaded machine may take minutes).
BOUND = 600.0


def _wait_for(condition, timeout: float = BOUND) -> bool:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if condition():
            return True
        time.sleep(0.1)
    return condition()


@pytest.mark.slow
def test_pool_workers_exit_when_their_parent_is_killed(tmp_path):
    pids = tmp_path / "pids"
    pids.mkdir()
    script = tmp_path / "sweep.py"
    script.write_text(ORPHAN_RUN.format(repository=str(Path(__file__).parents[2]), pids=str(pids),
                                        root=str(tmp_path / "data")))
    parent = subprocess.Popen([sys.executable, str(script)])
    try:
        assert _wait_for(lambda: len(list(pids.iterdir())) == 2), \
            "the two workers never started training"
        workers = [int(p.name) for p in pids.iterdir()]
        assert all(_alive(pid) for pid in workers)
    finally:
        parent.kill()  # SIGKILL: no cleanup code of the parent runs
        parent.wait()
    try:
        assert _wait_for(lambda: not any(_alive(pid) for pid in workers)), \
            f"orphaned workers still alive: {[pid for pid in workers if _alive(pid)]}"
    finally:
        for pid in workers:
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGKILL)


KILLED_WRITE = """
import os, sys, time
sys.path.insert(0, {repository!r})

fsync = os.fsync

def hang(fd):  # a temp file under the target is written, not yet renamed: wait for the kill
    if os.path.dirname(os.readlink(f"/proc/self/fd/{{fd}}")) != {watch!r}:
        return fsync(fd)  # the dataset cache, or the cache's load records, say
    print("WRITING", flush=True)
    time.sleep(600)

os.fsync = hang
if {what!r} == "cache":
    from tests.helpers.tiny import gcn, tiny_task
    from pytest_graphnetz import run_benchmark
    run_benchmark({{"tiny": tiny_task()}}, {{"GCN": gcn}}, seeds=[0], device="cpu",
                  root={root!r}, cache_dir={target!r})
else:
    from pytest_graphnetz import BenchmarkReport
    BenchmarkReport.from_arrays([[[0.5, 0.6]]], tasks=["t"], models=["m"], seeds=[0, 1],
                                metric="accuracy").to_json({target!r})
"""


def _kill_during_write(tmp_path: Path, what: str, target: Path) -> None:
    """Run a write of ``what`` in a fresh interpreter and ``kill -9`` it before the rename."""
    script = KILLED_WRITE.format(repository=str(Path(__file__).parents[2]), what=what,
                                 root=str(tmp_path / "data"), target=str(target),
                                 watch=str(target if what == "cache" else target.parent))
    writer = subprocess.Popen([sys.executable, "-c", script], stdout=subprocess.PIPE, text=True)
    try:
        assert writer.stdout.readline().strip() == "WRITING"
    finally:
        writer.kill()
        writer.wait()
        writer.stdout.close()


def _age(path: Path, seconds: float) -> None:
    then = time.time() - seconds
    os.utime(path, (then, then))


@pytest.mark.slow
@pytest.mark.skipif(not Path("/proc/self/fd").is_dir(), reason="finds the file written via /proc")
def test_temp_files_of_a_killed_cache_write_are_cleaned_and_no_lock_files_stay(root, tmp_path):
    from pytest_graphnetz.report.files import STALE_TEMP_SECONDS

    cache = tmp_path / "cache"
    _kill_during_write(tmp_path, "cache", cache)
    (leftover,) = cache.glob(".*.json.*.tmp")
    _age(leftover, STALE_TEMP_SECONDS + 60)
    in_flight = cache / ".0123.json.abcdefgh.tmp"  # another process's write, in progress
    in_flight.write_text("{")
    _, statuses = sweep(root, cache, seeds=(0, 1))
    assert statuses == ["trained", "trained"]
    assert sorted(p.name for p in cache.iterdir()
                  if p.suffix != ".json" and p.name != "loads") == [in_flight.name]
    assert len(list(cache.glob("*.json"))) == 2
    assert {p.suffix for p in (cache / "loads").iterdir()} == {".json"}  # load records only


@pytest.mark.slow
@pytest.mark.skipif(not Path("/proc/self/fd").is_dir(), reason="finds the file written via /proc")
def test_temp_files_of_a_killed_baseline_write_are_cleaned_by_the_next_write(
        pytester: pytest.Pytester, tmp_path: Path) -> None:
    from pytest_graphnetz import BenchmarkReport
    from pytest_graphnetz.report.files import STALE_TEMP_SECONDS

    target = pytester.path / "baselines" / "test_model" / "test_gcn.json"
    _kill_during_write(tmp_path, "baseline", target)
    (leftover,) = target.parent.glob(".test_gcn.json.*.tmp")
    _age(leftover, STALE_TEMP_SECONDS + 60)
    other = target.parent / ".test_other.json.abcdefgh.tmp"  # not this file's: left alone
    other.write_text("{")
    _age(other, STALE_TEMP_SECONDS + 60)
    BenchmarkReport.from_arrays([[[0.5, 0.6]]], tasks=["t"], models=["m"], seeds=[0, 1],
                                metric="accuracy").to_json(target)
    assert sorted(p.name for p in target.parent.iterdir()) == [other.name, target.name]
    # a refresh sweeps every stale temp file of its baseline directory, and the git-ignored
    # temp directories of killed refreshes (and of older versions): only baselines stay
    target.unlink()
    from pytest_graphnetz.gates.refreshing.baselines import TEMP_DIR

    for killed in (TEMP_DIR, f"{TEMP_DIR}k1ll3d"):
        (target.parent / killed).mkdir()
        (target.parent / killed / ".gitignore").write_text("*\n")
        _age(target.parent / killed / ".gitignore", STALE_TEMP_SECONDS + 60)
    (target.parent / f"{TEMP_DIR}k1ll3d" / ".test_gcn.json.abcdefgh.tmp").write_text("{")
    _age(target.parent / f"{TEMP_DIR}k1ll3d" / ".test_gcn.json.abcdefgh.tmp",
         STALE_TEMP_SECONDS + 60)
    pytester.makepyfile(test_model=BASELINE_GATE)
    pytester.runpytest_subprocess("--graphnetz-update-baselines").assert_outcomes(passed=1)
    assert sorted(p.name for p in target.parent.iterdir()) == [target.name]


STOPPED_SESSION = """
import os, sys, time
sys.path.insert(0, {repository!r})
from tests.helpers.tiny import gcn, tiny_task
from pytest_graphnetz import History

def stuck(model, data, *, task, device):
    open({training!r}, "w").close()
    time.sleep(600)
    return History(test=[0.5])

def test_gate(graphnetz_run):
    graphnetz_run({{"tiny": tiny_task(trainer=stuck)}}, {{"GCN": gcn}})
"""


PREVIOUS = {"graphnetz-verdicts.json": '{"build_failed": false, "headline": "all green"}\n',
            "graphnetz-summary.md": "### graphnetz gates\n\nall green\n",
            "graphnetz-comment.md": "### graphnetz gates ✓\n\nall green\n"}


@pytest.mark.slow
@pytest.mark.parametrize("signum", [signal.SIGTERM, signal.SIGINT], ids=["SIGTERM", "SIGINT"])
def test_a_session_stopped_mid_training_leaves_no_stale_verdict(
        pytester: pytest.Pytester, signum: int) -> None:
    training = pytester.path / "training"
    pytester.makepyfile(test_stopped=STOPPED_SESSION.format(repository=str(Path(__file__).parents[2]),
                                                            training=str(training)))
    for name, text in PREVIOUS.items():   # the previous, green run's outputs
        (pytester.path / name).write_text(text)
    session = subprocess.Popen(
        [sys.executable, "-m", "pytest", "-p", "no:randomly", "-p", "no:cacheprovider",
         "--graphnetz-seeds=2", "--graphnetz-device=cpu",
         "--graphnetz-json=graphnetz-verdicts.json", "--graphnetz-summary=graphnetz-summary.md",
         "--graphnetz-comment=graphnetz-comment.md"],
        cwd=pytester.path, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    try:
        assert _wait_for(training.exists), "the session never started training"
        session.send_signal(signum)
        output, _ = session.communicate(timeout=BOUND)
    finally:
        session.kill()
        session.wait()
    assert session.returncode != 0, output
    for name, old in PREVIOUS.items():
        path = pytester.path / name
        # gone (SIGTERM: no code of the session runs), or this run's, saying it failed (SIGINT)
        assert not path.exists() or path.read_text() != old, (name, output)
    verdicts = pytester.path / "graphnetz-verdicts.json"
    if signum == signal.SIGTERM:
        assert not verdicts.exists()
    else:
        data = json.loads(verdicts.read_text())
        assert data["build_failed"] is True and data["exit_status"] == 2, output


@pytest.mark.slow
@pytest.mark.skipif(not Path("/proc/self/fd").is_dir(), reason="finds the file written via /proc")
def test_a_killed_writers_temp_file_is_swept_once_its_lock_is_free(tmp_path):
    """Not only after 15 minutes: a writer holds a lock on its temp file, which the kernel
    drops when kill -9 ends it, so the next run sweeps the leftover; a write in progress in
    another process (a pytest-xdist worker) holds its lock and is kept, however old."""
    import fcntl

    from pytest_graphnetz.report.files import UNLOCKED_TEMP_SECONDS
    from pytest_graphnetz.runner.cache import TripleCache

    cache = tmp_path / "cache"
    _kill_during_write(tmp_path, "cache", cache)
    (leftover,) = cache.glob(".*.json.*.tmp")
    _age(leftover, UNLOCKED_TEMP_SECONDS + 30)
    live = cache / ".live.json.abcdefgh.tmp"     # held by a writer still running
    live.write_text("{")
    _age(live, UNLOCKED_TEMP_SECONDS + 30)
    young = cache / ".young.json.abcdefgh.tmp"   # just created: its writer may not hold it yet
    young.write_text("{")
    with open(live) as held:
        fcntl.flock(held, fcntl.LOCK_EX)
        assert TripleCache.open(cache) is not None
    assert sorted(p.name for p in cache.glob(".*.tmp")) == [live.name, young.name]
