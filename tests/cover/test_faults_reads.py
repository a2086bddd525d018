"""Faults in what is read: a JSON name given twice (a merge that kept both sides), and a path
that holds no regular file (a FIFO, a device); the sessions that meet them through a baseline
are in tests/slow/test_faults_reads_slow.py.

Every reader of the package is listed in READERS and meets both faults; a FIFO read would block
forever, so each read runs in a thread whose join timeout only detects a hang (the reads
themselves end at once).
"""

from __future__ import annotations

import contextlib
import io
import json
import os
import subprocess
import sys
import threading
import warnings
from collections.abc import Callable
from pathlib import Path

import pytest

from tests.helpers.faults import fifo_at, zero_link_at


def test_a_duplicated_name_is_refused_at_any_depth_naming_its_path_and_lines():
    from pytest_graphnetz.report.codec import DuplicateNameError, parse_json

    text = ('{\n  "models": {\n    "GCN": {"tasks": [1, {"final": [0.5],\n'
            '      "final": [0.4]}]}\n  },\n  "models": {}\n}\n')
    json.loads(text)   # valid JSON: the json module keeps the last copy of each name
    with pytest.raises(DuplicateNameError) as refused:
        parse_json(text, "f.json")
    # the first duplicate in reading order: the inner one (the outer object closes later)
    assert refused.value.path == ("models", "GCN", "tasks", 1, "final")
    lines = text.splitlines()
    assert [i + 1 for i, s in enumerate(lines) if '"final"' in s] == [3, 4]
    assert refused.value.lines == (3, 4)
    assert "in models/GCN/tasks[1] (lines 3 and 4)" in str(refused.value)
    with pytest.raises(DuplicateNameError, match=r"'models' appears twice at the top level "
                                                 r"\(lines 2 and 6\)"):
        parse_json(text.replace('"final": [0.4]', '"best_val": [0.4]'), "f.json")
    # names that differ only once escapes are read are the same name
    with pytest.raises(DuplicateNameError, match="'A' appears twice"):
        parse_json('{"A": 1, "\\u0041": 2}', "f.json")


# -- every reader meets both faults ---------------------------------------------------------------

def _duplicate(path: Path) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text('{"schema": "pytest-graphnetz/baseline", "rows": [], "rows": []}\n')


def _report(path: Path) -> None:
    from pytest_graphnetz import BenchmarkReport

    BenchmarkReport.from_arrays([[[0.5, 0.6]]], tasks=["t"], models=["m"], seeds=[0, 1],
                                metric="accuracy").to_json(path)


def _refusal(call: Callable[[], object]) -> str:
    """The message ``call`` refused with: its exception's, or its warnings' when it went on."""
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        try:
            call()
        except Exception as exc:  # noqa: BLE001  (what it raised is the result)
            return f"{type(exc).__name__}: {exc}"
    return " | ".join(str(w.message) for w in caught)


def read_report(tmp: Path, plant) -> str:
    from pytest_graphnetz import BenchmarkReport

    plant(tmp / "report.json")
    return _refusal(lambda: BenchmarkReport.from_json(tmp / "report.json"))


def read_baseline_file(tmp: Path, plant) -> str:
    from pytest_graphnetz.gates.refreshing.baselines import read_baseline

    plant(tmp / "baselines" / "m" / "t.json")
    return _refusal(lambda: read_baseline(tmp / "baselines" / "m" / "t.json"))


def read_calibration_file(tmp: Path, plant) -> str:
    from pytest_graphnetz.gates.calibration.store import read_calibration, read_min_effects

    plant(tmp / "t.calibration.json")
    return _refusal(lambda: read_calibration(tmp / "t.calibration.json")) + _refusal(
        lambda: read_min_effects(tmp / "t.calibration.json"))


def read_cache_entry(tmp: Path, plant) -> str:
    from pytest_graphnetz.runner.cache import TripleCache

    cache = TripleCache.open(tmp / "cache")
    key = "a" * 64
    plant(cache.path(key))
    message = _refusal(lambda: cache.get(key))
    assert not os.path.lexists(cache.path(key))   # removed: the next write replaces it
    return message


def read_cache_record(tmp: Path, plant) -> str:
    from pytest_graphnetz.runner.cache import TripleCache

    cache = TripleCache.open(tmp / "cache")
    key = "b" * 64
    plant(cache.record_path(key))
    return _refusal(lambda: cache.get_record(key))


def _commit(folder: Path, manifest: bool = True) -> None:
    if manifest:
        (folder / "commit.json").parent.mkdir(parents=True, exist_ok=True)
        (folder / "commit.json").write_text(
            '{"commit": "abc", "date": "2026-12-01T10:00:00+00:00"}')
    _report(folder / "reports" / "test_m" / "test_t.json")


def read_history_commit(tmp: Path, plant) -> str:
    from pytest_graphnetz.cli.history.trend import load_runs

    _commit(tmp / "runs" / "c1", manifest=False)
    plant(tmp / "runs" / "c1" / "commit.json")
    return _refusal(lambda: load_runs(tmp / "runs"))


def read_history_verdicts(tmp: Path, plant) -> str:
    from pytest_graphnetz.cli.history.trend import load_runs

    _commit(tmp / "runs" / "c1")
    plant(tmp / "runs" / "c1" / "graphnetz-verdicts.json")
    return _refusal(lambda: load_runs(tmp / "runs"))


def read_history_report(tmp: Path, plant) -> str:
    from pytest_graphnetz.cli.history.trend import load_runs

    _commit(tmp / "runs" / "c1")
    plant(tmp / "runs" / "c1" / "reports" / "test_m" / "test_u.json")
    return _refusal(lambda: load_runs(tmp / "runs"))


def read_next_seeds_verdicts(tmp: Path, plant) -> str:
    from pytest_graphnetz.cli.main import main

    plant(tmp / "verdicts.json")
    with contextlib.redirect_stderr(io.StringIO()) as err:
        assert main(["next-seeds", str(tmp / "verdicts.json"), "--budget", "40"]) == 2
    return err.getvalue()


def read_metrics_file(tmp: Path, plant) -> str:
    from pytest_graphnetz.runner.command.output import read_metrics_file, read_output

    plant(tmp / "metrics.json")
    return _refusal(lambda: read_output(read_metrics_file(tmp / "metrics.json", where="run"),
                                        metric="accuracy"))


def read_command_reads(tmp: Path, plant) -> str:
    from pytest_graphnetz.runner.command.reads import reads_record

    plant(tmp / "reads.json")
    # a record only saves work: an unusable one is None (the run is treated as unknown)
    assert reads_record(tmp / "reads.json", cwd=str(tmp), ignore_env=set()) is None
    return ""


def read_dataset_manifest(tmp: Path, plant) -> str:
    from pytest_graphnetz.runner.tasks.audit import MANIFEST, verify

    (tmp / "data").mkdir()
    (tmp / "data" / "x.pt").write_bytes(b"data")
    plant(tmp / "data" / MANIFEST)
    # a manifest that does not read has nothing to check against: the file is then parsed
    assert verify(tmp / "data" / "x.pt")
    return ""


READERS = {f.__name__: f for f in (
    read_report, read_baseline_file, read_calibration_file, read_cache_entry, read_cache_record,
    read_history_commit, read_history_verdicts, read_history_report, read_next_seeds_verdicts,
    read_metrics_file, read_command_reads, read_dataset_manifest)}
SILENT = {"read_command_reads", "read_dataset_manifest"}   # what they read only saves work


def _without_hanging(read: Callable[[], str]) -> str:
    out: list[str] = []
    errors: list[BaseException] = []

    def target() -> None:
        try:
            out.append(read())
        except BaseException as exc:  # noqa: BLE001  (re-raised in the test's thread)
            errors.append(exc)

    worker = threading.Thread(target=target, daemon=True)
    worker.start()
    worker.join(timeout=120)   # a hang detector: every read here ends at once
    assert not worker.is_alive(), "the reader blocked on a FIFO"
    if errors:
        raise errors[0]
    return out[0]


@pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="FIFOs and /dev/zero are POSIX")
@pytest.mark.parametrize("plant", [fifo_at, zero_link_at], ids=["FIFO", "link to /dev/zero"])
@pytest.mark.parametrize("reader", list(READERS))
def test_every_reader_refuses_a_fifo_or_a_device_without_blocking(tmp_path, reader, plant):
    message = _without_hanging(lambda: READERS[reader](tmp_path, plant))
    if reader not in SILENT:
        assert "not a regular file" in message, message


@pytest.mark.parametrize("reader", sorted(set(READERS) - SILENT))
def test_every_reader_refuses_a_duplicated_name(tmp_path, reader):
    message = READERS[reader](tmp_path, _duplicate)
    assert "appears twice" in message, message


# -- the cache -------------------------------------------------------------------------------------

def test_a_cache_entry_replaced_by_a_directory_is_healed_once(tmp_path):
    from pytest_graphnetz import History
    from pytest_graphnetz.runner.cache import CacheWarning, TripleCache

    cache = TripleCache.open(tmp_path / "cache")
    key, runs = "c" * 64, []

    def train() -> History:
        runs.append(1)
        return History(test=[0.5, 0.6])

    cache.get_or_compute(key, train)
    entry = cache.path(key)
    entry.unlink()
    (entry / "inside").mkdir(parents=True)
    (entry / "inside" / "file").write_text("x")
    with pytest.warns(CacheWarning, match=f"discarding corrupt graphnetz cache entry .*"
                                          f"{entry.name} .*is a directory"):
        assert cache.get_or_compute(key, train) == (History(test=[0.5, 0.6]), False)
    assert entry.is_file() and len(runs) == 2
    with warnings.catch_warnings():
        warnings.simplefilter("error")   # healed: no warning, no training
        assert cache.get_or_compute(key, train) == (History(test=[0.5, 0.6]), True)
    assert len(runs) == 2


# -- graphnetz history on Ctrl-C -------------------------------------------------------------------

INTERRUPTED_HISTORY = """
import os, signal, sys
from pytest_graphnetz.cli.history import trend
from pytest_graphnetz.cli.main import main

read = trend.read_json

def interrupted(*args, **kwargs):  # a real SIGINT, delivered while the folder is read
    os.kill(os.getpid(), signal.SIGINT)
    return read(*args, **kwargs)

trend.read_json = interrupted
sys.exit(main(["history", sys.argv[1], "--output", sys.argv[2]]))
"""


def test_history_on_sigint_ends_with_one_line(tmp_path):
    _commit(tmp_path / "runs" / "c1")
    done = subprocess.run([sys.executable, "-c", INTERRUPTED_HISTORY, str(tmp_path / "runs"),
                           str(tmp_path / "page")], capture_output=True, text=True, timeout=120)
    assert done.returncode == 130
    assert done.stderr.startswith("graphnetz history: interrupted"), done.stderr
    assert len(done.stderr.splitlines()) == 1 and "Traceback" not in done.stderr
    assert not (tmp_path / "page").exists()
