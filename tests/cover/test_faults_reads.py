"""Faults in what is read: a JSON name given twice (a merge that kept both sides), and a path
that holds no regular file (a FIFO, a device); the sessions that meet them through a baseline
are below, marked slow.

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

from tests.helpers.fault_injection import BASELINE_GATE, dangling_link_at, fifo_at, zero_link_at


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


# -- costs seconds each (marked slow) ----------------------------------------------------------
# Faults in what is read, met in pytest sessions: a baseline with a JSON name given twice or
# with lines of two refreshes (merges that keep a file valid JSON), and a baseline path that
# holds no regular file (every reader's share is above).


GATE = """
import numpy as np
from pytest_graphnetz import BenchmarkReport, assert_not_worse

VALUES = {values!r}

def test_gcn(graphnetz_baseline):
    report = BenchmarkReport.from_arrays(np.array([[VALUES]]), tasks=["karate"],
                                         models=["GCN"], seeds=range(len(VALUES)),
                                         metric="accuracy")
    assert_not_worse(report, graphnetz_baseline())
"""


BEFORE = [0.81, 0.83, 0.80, 0.82, 0.81, 0.84, 0.80, 0.83, 0.82, 0.81]


# five points worse, give or take a few tenths of a point per seed
AFTER = [round(b - 0.05 + d, 4) for b, d in zip(
    BEFORE, [0.004, -0.003, 0.002, 0.0, -0.002, 0.001, 0.003, -0.001, 0.002, -0.004], strict=True)]


def _run(pytester: pytest.Pytester, *args: str) -> pytest.RunResult:
    return pytester.runpytest_subprocess("-p", "no:cacheprovider", *args)


def _duplicate_final(baseline: Path, values: list[float]) -> int:
    """Add a second ``"final"`` line holding ``values`` after the cell's real one, as an
    editor's "accept both changes" does; returns the real line's number."""
    lines = baseline.read_text().splitlines()
    real = max(i for i, line in enumerate(lines) if line.strip().startswith('"final"'))
    indent = lines[real][:len(lines[real]) - len(lines[real].lstrip())]
    lines[real] += ","
    lines.insert(real + 1, f'{indent}"final": {json.dumps(values)}')
    baseline.write_text("\n".join(lines) + "\n")
    return real + 1


@pytest.mark.slow
def test_a_merged_baseline_with_a_second_final_line_does_not_turn_red_green(pytester):
    pytester.makepyfile(test_model=GATE.format(values=BEFORE))
    _run(pytester, "--graphnetz-update-baselines").assert_outcomes(passed=1)
    baseline = pytester.path / "baselines" / "test_model" / "test_gcn.json"
    pytester.makepyfile(test_model=GATE.format(values=AFTER))
    regressed = _run(pytester)
    regressed.assert_outcomes(failed=1)
    assert "REGRESSED" in regressed.stdout.str()

    line = _duplicate_final(baseline, AFTER)
    # what any JSON reader makes of the file: the candidate's own values, so IDENTICAL
    plain = json.loads(baseline.read_text())
    assert plain["models"]["GCN"]["tasks"]["karate"]["values"]["final"] == AFTER
    doctored = baseline.read_bytes()

    result = _run(pytester)
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines([
        f"*baseline baselines/test_model/test_gcn.json cannot be read: *the name 'final' "
        f"appears twice in models/GCN/tasks/karate/values (lines {line} and {line + 1})*"
        "resolve the merge*--graphnetz-force*"])
    assert "IDENTICAL" not in result.stdout.str()
    # the suggested refresh (without --graphnetz-force) refuses the file too, leaving it as is
    _run(pytester, "--graphnetz-update-baselines").assert_outcomes(failed=1)
    assert baseline.read_bytes() == doctored


def _cell(data: dict) -> dict:
    return data["models"]["GCN"]["tasks"]["karate"]


def _other_side(data: dict) -> None:
    """The values of a branch that refreshed, under the anchor and record of one that added
    the cell (a rebase that resolved the values' conflict alone)."""
    _cell(data)["values"]["final"] = AFTER


# Merges that leave a baseline valid JSON, without a duplicated name, and wrong.
MIXED = {
    "a rule spelled otherwise": lambda d: _cell(d)["values"].update(Final=AFTER),
    "an anchor naming a seed twice": lambda d: _cell(d)["anchor"].update(
        seeds=[0, *range(len(BEFORE) - 1)]),
    "a stale anchor": _other_side,
}


REFUSED = {
    "a rule spelled otherwise": r"`values` holds \['Final'\], which is not an epoch rule",
    "an anchor naming a seed twice": "anchor `seeds` names a seed twice",
    "a stale anchor": r"cell karate/GCN: its `refresh` record \(\{'verdict': 'NEW'\}\) says its "
                      r"anchor was reset .* differs from `values` at seed\(s\) \[0, 1, 2,",
}


@pytest.mark.slow
def test_merges_that_leave_a_baseline_valid_json_and_wrong_are_refused(pytester):
    from pytest_graphnetz.gates.refreshing.baselines import BaselineFormatError, read_baseline

    pytester.makepyfile(test_model=GATE.format(values=BEFORE))
    _run(pytester, "--graphnetz-update-baselines").assert_outcomes(passed=1)
    baseline = pytester.path / "baselines" / "test_model" / "test_gcn.json"
    written = json.loads(baseline.read_text())
    read_baseline(baseline)   # as written: read
    for fault, mix in MIXED.items():
        data = json.loads(json.dumps(written))
        mix(data)
        baseline.write_text(json.dumps(data, indent=2))
        with pytest.raises(BaselineFormatError, match=REFUSED[fault]):
            read_baseline(baseline)
    # and in a session: the stale anchor's cell is an error, not a verdict against either side
    pytester.makepyfile(test_model=GATE.format(values=AFTER))
    result = _run(pytester)
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines(["*BaselineFormatError: baseline baselines/test_model/"
                                 "test_gcn.json cannot be read: cell karate/GCN*"])
    assert "IDENTICAL" not in result.stdout.str()


@pytest.mark.slow
@pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="FIFOs are POSIX")
@pytest.mark.parametrize("plant", [fifo_at, dangling_link_at, zero_link_at],
                         ids=["FIFO", "dangling link", "link to /dev/zero"])
def test_what_is_not_a_baseline_at_its_path_is_refused_and_never_refreshed_over(pytester, plant):
    pytester.makepyfile(test_model=BASELINE_GATE)
    path = pytester.path / "baselines" / "test_model" / "test_gcn.json"
    plant(path)
    result = _run(pytester)
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines(["*baseline baselines/test_model/test_gcn.json *not a regular "
                                 "file*"])
    result.stdout.no_fnmatch_line("*no baseline at*")
    # the refresh a missing baseline would suggest does not write past the ratchet either
    refresh = _run(pytester, "--graphnetz-update-baselines")
    refresh.assert_outcomes(failed=1)
    refresh.stdout.fnmatch_lines(["*baseline baselines/test_model/test_gcn.json *not a regular "
                                  "file*"])
    assert os.path.lexists(path) and not path.is_file()


@pytest.mark.slow
def test_a_refresh_leaves_nothing_but_baselines_in_the_baseline_folder(pytester):
    pytester.makepyfile(test_model=BASELINE_GATE,
                        test_other=BASELINE_GATE.replace("0.01, 0.03", "0.02, 0.03"))
    _run(pytester, "--graphnetz-update-baselines").assert_outcomes(passed=2)
    folder = pytester.path / "baselines"
    assert sorted(p.relative_to(folder).as_posix() for p in folder.rglob("*")) == [
        "test_model", "test_model/test_gcn.json", "test_other", "test_other/test_gcn.json"]
