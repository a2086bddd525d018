"""Faults: dead parents, killed writes, read-only and occupied paths, corrupt cache entries.

Process-level faults go through real processes (``kill -9``, a second interpreter); a read-only
directory is real too: as root, the session runs without the capability that lets root write
anywhere (``setpriv``), so the permission bits apply.
"""

from __future__ import annotations

import json
import stat
import sys
import time
from pathlib import Path

import pytest

from tests.helpers.faults import BASELINE_GATE, run_pytest, sweep, unprivileged


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
sys.path.insert(0, {tests!r})
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
    script = READ_ONLY_RUN.format(tests=str(Path(__file__).parents[1]), root=str(root),
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
