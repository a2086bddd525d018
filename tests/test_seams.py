"""The seams between the gate and its surroundings (issue 22, items 2, 5, 7 and 8).

Each test here failed on the code before the fix: values checked where they enter, file names
and paths, output paths checked at session start, refreshes that prune only what they saw,
killed writes, planted cache entries and truncated downloads.
"""

from __future__ import annotations

import json
import warnings
from pathlib import Path

import pytest

from pytest_graphnetz import BenchmarkReport
from pytest_graphnetz.baselines import BaselineFormatError, read_baseline, write_baseline

# In-process pytester runs drop modules first imported inside them, and scipy's extensions do
# not survive a second import: load the gates (and the scipy they use) here, once.
pytest.importorskip("scipy.stats")
pytest.importorskip("scipy.optimize")
import pytest_graphnetz.gates  # noqa: E402,F401


def _report(values: list[float], metric: str = "accuracy") -> BenchmarkReport:
    return BenchmarkReport.from_arrays([[values]], tasks=["karate"], models=["GCN"],
                                       seeds=range(len(values)), metric=metric)


# -- 7. values checked where they enter -----------------------------------------------------------


def test_from_arrays_refuses_a_percent_accuracy_naming_the_cell() -> None:
    with pytest.raises(ValueError) as info:
        _report([0.75, 75.3, 0.74])
    assert str(info.value) == (
        "cell karate/GCN, seed 1: accuracy 75.3 at epoch 0 lies outside [0, 1]: it looks like "
        "a percent; give fractions (0.753), not percents (a metric that is not a proportion "
        "needs another name, e.g. Task(metric=...))")
    _report([0.0, 1.0, float("nan")])  # the bounds themselves and a diverged seed are fine
    _report([75.3, 80.1], metric="mae")  # an unbounded metric takes any value


def test_a_custom_trainer_returning_percents_is_refused_before_it_is_cached(root, tmp_path
                                                                          ) -> None:
    pytest.importorskip("torch")
    from conftest import gcn, tiny_task

    from pytest_graphnetz import run_benchmark
    from pytest_graphnetz.runner import TripleError

    task = tiny_task(trainer=percent_trainer)
    cache = tmp_path / "cache"
    with pytest.raises(TripleError, match=r"trainer of task 'tiny': accuracy 75\.3 at epoch 1 "
                                          r"lies outside \[0, 1\]: it looks like a percent"):
        run_benchmark({"tiny": task}, {"GCN": gcn}, seeds=[0], device="cpu", root=root,
                      cache_dir=cache)
    assert not list(cache.glob("*.json"))  # nothing stored: a fixed trainer is not served this


def percent_trainer(model, data, *, task, device) -> dict:
    return {"test": [0.5, 75.3]}


def _baseline_file(tmp_path: Path, **cell: object) -> Path:
    path = write_baseline(tmp_path / "baselines" / "test_m" / "test_a.json",
                          _report([0.5, 0.75, 0.25]), {})
    data = json.loads(path.read_text())
    data["models"]["GCN"]["tasks"]["karate"]["values"].update(cell)
    path.write_text(json.dumps(data))
    return path


@pytest.mark.parametrize(("cell", "message"), [
    ({"final": [0.5, "0.9", 0.25]}, "`final` must be a list of numbers"),
    ({"final": [0.5, 1e39, 0.25], "float32": True}, "`final` 1e+39 does not fit a float32"),
    ({"final": [0.5, 75.3, 0.25], "float32": False},
     "accuracy 75.3 at epoch 0 lies outside [0, 1]"),
])
def test_baselines_refuse_what_reports_refuse_in_one_line(tmp_path: Path, cell: dict,
                                                          message: str) -> None:
    path = _baseline_file(tmp_path, **cell)
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # numpy's overflow RuntimeWarning was printed before
        with pytest.raises(BaselineFormatError) as info:
            read_baseline(path)
    assert message in str(info.value)
    assert "\n" not in str(info.value)


def test_a_history_value_beyond_float32_is_a_format_error() -> None:
    from pytest_graphnetz.report import history_from_json

    with warnings.catch_warnings():
        warnings.simplefilter("error")
        with pytest.raises(ValueError, match=r"a history value 1e\+39 does not fit a float32"):
            history_from_json({"test": [0.5, 1e39], "float32": True})


# -- 2. a full refresh prunes only the modules it saw ---------------------------------------------

GATED = """
import pytest
from pytest_graphnetz import BenchmarkReport, assert_not_worse
{head}

def test_{name}(graphnetz_baseline):
    report = BenchmarkReport.from_arrays([[[0.80, 0.82, 0.79]]], tasks=["karate"],
                                         models=["GCN"], seeds=range(3), metric="accuracy")
    assert_not_worse(report, graphnetz_baseline())
"""


def _two_modules(pytester: pytest.Pytester, *, skip_b: bool = False) -> None:
    pytester.makeini("[pytest]\n")
    for name in ("a", "b"):
        head = 'pytest.skip("needs a GPU", allow_module_level=True)' \
            if name == "b" and skip_b else ""
        (pytester.path / name).mkdir(exist_ok=True)
        (pytester.path / name / f"test_{name}.py").write_text(GATED.format(name=name, head=head))


def _baselines(pytester: pytest.Pytester) -> list[str]:
    root = pytester.path / "baselines"
    return sorted(str(p.relative_to(root)) for p in root.glob("*/*.json"))


@pytest.mark.parametrize("unseen", ["--ignore=b", "subdirectory", "module-level skip",
                                    "module-level skip under xdist"])
def test_a_full_refresh_deletes_no_baseline_of_a_module_it_did_not_see(
        pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch, unseen: str) -> None:
    _two_modules(pytester)
    pytester.runpytest("--graphnetz-update-baselines").assert_outcomes(passed=2)
    stale = pytester.path / "baselines" / "test_a" / "test_renamed.json"
    stale.write_bytes((pytester.path / "baselines" / "test_a" / "test_a.json").read_bytes())
    assert _baselines(pytester) == ["test_a/test_a.json", "test_a/test_renamed.json",
                                    "test_b/test_b.json"]
    args = ["--graphnetz-update-baselines"]
    if unseen == "--ignore=b":
        args.append("--ignore=b")
    elif unseen == "subdirectory":
        monkeypatch.chdir(pytester.path / "a")
    else:
        _two_modules(pytester, skip_b=True)
    if unseen.endswith("xdist"):  # the workers tell the controller what they collected
        args += ["-n", "2"]
    result = pytester.runpytest(*args)
    assert result.ret == 0
    # test_a was seen: its stale file goes; test_b was not: its baseline stays, listed.
    assert _baselines(pytester) == ["test_a/test_a.json", "test_b/test_b.json"]
    result.stdout.fnmatch_lines([
        "graphnetz: deleted 1 baseline(s) that no test used*",
        "  baselines/test_a/test_renamed.json",
        "graphnetz: 1 baseline(s) of test modules this run did not collect, or skipped, kept*",
        "  baselines/test_b/test_b.json",
    ])


def test_pruning_finds_the_folder_of_a_module_whose_name_was_shortened(tmp_path: Path) -> None:
    from pytest_graphnetz.baselines import default_path
    from pytest_graphnetz.ratchet import prune_unused

    stem = "test_" + "m" * 200  # its folder name is shortened with a hash
    stale = write_baseline(default_path(tmp_path, stem, "test_old"), _report([0.5, 0.6]), {})
    lines = prune_unused(tmp_path, used=set(), users=[], delete=True, seen_modules=[stem])
    assert lines[0].startswith("graphnetz: deleted 1 baseline(s)") and not stale.exists()


# -- 5. output paths checked at session start -----------------------------------------------------

PASSING = """
import os
import shutil

from pytest_graphnetz import BenchmarkReport, assert_not_worse


def report():
    return BenchmarkReport.from_arrays([[[0.80, 0.82, 0.79]]], tasks=["karate"],
                                       models=["GCN"], seeds=range(3), metric="accuracy")


def test_gate():
    for blocked in {blocked!r}:  # a path that became a file after the session started
        shutil.rmtree(blocked, ignore_errors=True)
        open(blocked, "w").close()
    assert_not_worse(report(), report())
"""


@pytest.mark.parametrize(("option", "message"), [
    ("--graphnetz-report-dir=blocker/reports",
     "graphnetz: `--graphnetz-report-dir` cannot be written: blocker is a file, not a "
     "directory; name a writable path"),
    ("--graphnetz-summary=blocker/gates.md",
     "graphnetz: `--graphnetz-summary` cannot be written: blocker is a file, not a directory; "
     "name a writable path"),
    ("--graphnetz-summary=.",
     "graphnetz: `--graphnetz-summary` cannot be written: . is a directory, not a file; name a "
     "writable path"),
])
def test_an_unwritable_output_path_is_a_usage_error_before_any_test(
        pytester: pytest.Pytester, option: str, message: str) -> None:
    pytester.makepyfile(PASSING.format(blocked=[]))
    (pytester.path / "blocker").write_text("a file")
    result = pytester.runpytest(option)
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    assert message in result.stderr.str()


def test_an_unwritable_step_summary_is_one_warning_and_the_run_passes(
        pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch) -> None:
    pytester.makepyfile(PASSING.format(blocked=[]))
    (pytester.path / "summary-dir").mkdir()
    monkeypatch.setenv("GITHUB_STEP_SUMMARY", str(pytester.path / "summary-dir"))
    result = pytester.runpytest()
    assert result.ret == 0
    result.assert_outcomes(passed=1, warnings=1)
    result.stdout.fnmatch_lines([
        "*graphnetz: $GITHUB_STEP_SUMMARY (*summary-dir) cannot be written: summary-dir is a "
        "directory, not a file; this run's gate table is not added to the job summary"])
    assert "Traceback" not in result.stdout.str() + result.stderr.str()


def test_outputs_that_fail_after_the_start_warn_and_keep_the_verdict(
        pytester: pytest.Pytester) -> None:
    """The report dir and the summary's directory turn into files during the run (a full
    disk behaves the same): the gate still passes, each loss is one line."""
    pytester.makepyfile(PASSING.format(blocked=["reports", "out"]))
    result = pytester.runpytest("--graphnetz-report-dir=reports", "--graphnetz-summary=out/g.md")
    assert result.ret == 0
    result.assert_outcomes(passed=1, warnings=1)
    result.stdout.fnmatch_lines([
        "*graphnetz: the candidate report of test_outputs_that_fail_after_the_start_warn_and_"
        "keep_the_verdict.py::test_gate was not saved under reports: *",
        "graphnetz: the Markdown summary was not written to out/g.md (*Error: *)"])
    assert "Traceback" not in result.stdout.str() + result.stderr.str()


# -- 8. the smaller seams ------------------------------------------------------------------------

SHOW_WORKERS = """
def test_settings(pytestconfig):
    from pytest_graphnetz.plugin import STASH_KEY

    print("WORKERS=%d" % pytestconfig.stash[STASH_KEY].settings.workers)
"""


def test_workers_beyond_the_cpus_are_clamped_with_a_note(pytester: pytest.Pytester) -> None:
    import os

    pytester.makepyfile(SHOW_WORKERS)
    result = pytester.runpytest("-s", "--graphnetz-workers=100000")
    result.assert_outcomes(passed=1, warnings=1)
    cpus = os.cpu_count() or 1
    result.stdout.fnmatch_lines([
        f"*WORKERS={cpus}",
        f"*graphnetz: `--graphnetz-workers` asks for 100000 processes but this machine has "
        f"{cpus} CPU(s); using {cpus}"])


def test_run_benchmark_starts_no_more_processes_than_triples(root, monkeypatch) -> None:
    pytest.importorskip("torch")
    from conftest import gcn, tiny_task

    from pytest_graphnetz import run_benchmark
    from pytest_graphnetz.runner import workers as pool_module

    sizes = []

    def pool(workers, device, jobs):
        sizes.append(workers)
        raise RuntimeError("stop here")

    monkeypatch.setattr(pool_module, "_process_pool", pool)
    with pytest.raises(RuntimeError, match="stop here"):
        run_benchmark({"tiny": tiny_task()}, {"GCN": gcn}, seeds=[0, 1], device="cpu",
                      root=root, workers=24)
    assert sizes == [2]


@pytest.mark.parametrize(("ini", "message"), [
    ("graphnetz_workers = 0",
     "graphnetz: the ini key `graphnetz_workers` in tox.ini must be >= 1, got 0"),
    ("graphnetz_alpha = 0.7",
     "graphnetz: the ini key `graphnetz_alpha` in tox.ini must lie in (0, 0.5), got 0.7"),
    ("graphnetz_deterministic = maybe",
     "graphnetz: the ini key `graphnetz_deterministic` in tox.ini: expected one of on, warn, "
     "off, got 'maybe'"),
])
def test_bad_ini_values_are_named_by_their_ini_key(pytester: pytest.Pytester, ini: str,
                                                   message: str) -> None:
    pytester.makeini(f"[pytest]\n{ini}\n")
    pytester.makepyfile("def test_x(): pass")
    result = pytester.runpytest()
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    assert message in result.stderr.str()


def test_a_device_index_in_superscript_is_a_usage_error(pytester: pytest.Pytester) -> None:
    pytest.importorskip("torch")
    pytester.makepyfile("def test_x(): pass")
    result = pytester.runpytest_subprocess("--graphnetz-device=cuda:²")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(["ERROR: graphnetz: `--graphnetz-device` / `graphnetz_device`: "
                                 "device='cuda:²' is not a device; use 'cuda' or 'cuda:<index>'"])
    assert "INTERNALERROR" not in result.stdout.str() + result.stderr.str()


def test_the_test_column_keeps_a_slash_inside_a_parameter_id(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(test_ids="""
import pytest
from pytest_graphnetz import BenchmarkReport, assert_not_worse


@pytest.mark.parametrize("variant", ["a/b"])
def test_p(variant):
    report = BenchmarkReport.from_arrays([[[0.80, 0.82, 0.79]]], tasks=["karate"],
                                         models=["GCN"], seeds=range(3), metric="accuracy")
    assert_not_worse(report, report)
""")
    result = pytester.runpytest()
    result.assert_outcomes(passed=1)
    result.stdout.fnmatch_lines(["test_ids.py::test_p[[]a/b[]]*karate/GCN*IDENTICAL*"])


def test_a_long_parametrized_id_gets_a_short_file_name(pytester: pytest.Pytester) -> None:
    from pytest_graphnetz.baselines import MAX_STEM_BYTES, short_stem

    pytester.makepyfile(test_long="""
import pytest
from pytest_graphnetz import BenchmarkReport, assert_not_worse


@pytest.mark.parametrize("config", [1, 2], ids=["x" * 250 + "-a", "x" * 250 + "-b"])
def test_cfg(config, graphnetz_baseline):
    report = BenchmarkReport.from_arrays([[[0.80, 0.82, 0.79]]], tasks=["karate"],
                                         models=["GCN"], seeds=range(3), metric="accuracy")
    assert_not_worse(report, graphnetz_baseline())
""")
    pytester.runpytest("--graphnetz-update-baselines").assert_outcomes(passed=2)
    names = sorted(p.name for p in (pytester.path / "baselines" / "test_long").glob("*.json"))
    assert len(names) == 2  # two ids that share their first 250 characters: two files
    assert all(len(n.encode()) <= MAX_STEM_BYTES + len(".json") for n in names)
    assert names == sorted(f"{short_stem(f'test_cfg[{c}]')}.json"
                           for c in ("x" * 250 + "-a", "x" * 250 + "-b"))
    pytester.runpytest().assert_outcomes(passed=2)  # and the gates find them again


def test_short_stems_keep_escapes_whole_and_names_distinct() -> None:
    from pytest_graphnetz.baselines import MAX_STEM_BYTES, file_name, short_stem

    assert short_stem("test_a[1]") == "test_a[1]"
    long = file_name("t[" + "a/" * 100 + "]")  # every "/" is %2F: the cut must not split one
    short = short_stem(long)
    assert len(short.encode()) <= MAX_STEM_BYTES
    head = short.rsplit("~", 1)[0]
    assert long.startswith(head) and not head.endswith(("%", "%2"))
    assert short_stem(long + "x") != short


WRITE_AND_DIE = """
import os, signal, sys
from pathlib import Path

from pytest_graphnetz import BenchmarkReport
from pytest_graphnetz.baselines import write_baseline

def die(src, dst):  # the temp file is whole and synced: die before the rename
    os.kill(os.getpid(), signal.SIGKILL)

os.replace = die
report = BenchmarkReport.from_arrays([[[0.5, 0.6]]], tasks=["t"], models=["m"], seeds=[0, 1],
                                     metric="accuracy")
write_baseline(Path(sys.argv[1]), report, {})
"""


def test_a_killed_baseline_write_leaves_nothing_git_add_commits(tmp_path: Path) -> None:
    import os
    import shutil
    import signal
    import subprocess
    import sys

    if shutil.which("git") is None:
        pytest.skip("needs git")
    project = tmp_path / "project"
    target = project / "baselines" / "test_m" / "test_a.json"
    env = {**os.environ, "PYTHONPATH": str(Path(__file__).parents[1])}
    died = subprocess.run([sys.executable, "-c", WRITE_AND_DIE, str(target)], env=env,
                          timeout=120)
    assert died.returncode == -signal.SIGKILL
    leftovers = [p for p in target.parent.rglob("*.tmp")]
    assert len(leftovers) == 1 and leftovers[0].stat().st_size > 0  # a complete, killed write
    subprocess.run(["git", "init", "-q", str(project)], check=True)
    subprocess.run(["git", "-C", str(project), "add", "-A"], check=True)
    staged = subprocess.run(["git", "-C", str(project), "ls-files"], check=True, text=True,
                            capture_output=True).stdout.split()
    assert staged == [], staged


PLANTED = """
import sys, warnings
from pytest_graphnetz.cache import TripleCache, make_key

key = make_key({"planted": True})
warnings.simplefilter("always")
with warnings.catch_warnings(record=True) as caught:
    assert TripleCache(sys.argv[1]).get(key) is None
print("WARNED:", caught[0].message)
"""


@pytest.mark.parametrize("planted", ["fifo", "link to /dev/zero"])
def test_a_fifo_or_a_device_planted_in_the_cache_is_discarded(tmp_path: Path,
                                                              planted: str) -> None:
    """In a subprocess with a memory limit and a timeout: before the fix the FIFO blocked the
    read for ever and /dev/zero was read until memory ran out."""
    import os
    import resource
    import subprocess
    import sys

    from pytest_graphnetz.cache import TripleCache, make_key

    if not hasattr(os, "mkfifo") or not Path("/dev/zero").exists():
        pytest.skip("needs POSIX FIFOs and /dev/zero")
    cache = tmp_path / "cache"
    cache.mkdir()
    entry = TripleCache(cache).path(make_key({"planted": True}))
    if planted == "fifo":
        os.mkfifo(entry)
    else:
        entry.symlink_to("/dev/zero")

    def limit_memory() -> None:
        resource.setrlimit(resource.RLIMIT_AS, (2 << 30, 2 << 30))

    env = {**os.environ, "PYTHONPATH": str(Path(__file__).parents[1])}
    run = subprocess.run([sys.executable, "-c", PLANTED, str(cache)], env=env, text=True,
                         capture_output=True, timeout=60, preexec_fn=limit_memory)
    assert run.returncode == 0, run.stderr
    assert f"WARNED: discarding corrupt graphnetz cache entry {entry} (NotARegularFileError: " \
        in run.stdout
    assert not entry.exists() and not entry.is_symlink()  # removed: the next run recomputes


def test_a_download_cut_short_without_content_length_is_not_trusted(tmp_path: Path) -> None:
    import http.server
    import threading

    from pytest_graphnetz.tasks.audit import MANIFEST, download

    body = bytes(range(256)) * 64
    served = []

    class Handler(http.server.BaseHTTPRequestHandler):
        def do_GET(self) -> None:  # HTTP/1.0, no Content-Length: the body ends at the close
            served.append(self.path)
            self.send_response(200)
            self.end_headers()
            self.wfile.write(body[: len(body) // 3] if len(served) == 1 else body)

        def log_message(self, *args) -> None:
            pass

    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        path = download(f"http://127.0.0.1:{server.server_address[1]}/data.bin",
                        tmp_path / "data.bin")
    finally:
        server.shutdown()
        server.server_close()
        thread.join()
    assert path.read_bytes() == body  # the cut first response was refused, not recorded
    assert len(served) == 4  # cut + whole (differ: retry), then whole + whole (agree)
    assert json.loads((tmp_path / MANIFEST).read_text())["data.bin"]["size"] == len(body)


def test_a_missing_baseline_is_named_relative_to_the_rootdir(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(test_model=GATED.format(name="a", head=""))
    result = pytester.runpytest()
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines([
        "E*BaselineMissingError: no baseline at baselines/test_model/test_a.json: create it "
        "with `pytest test_model.py::test_a --graphnetz-update-baselines`"])


# -- issue 25: the settings in effect, in the session header ---------------------------------------


@pytest.mark.parametrize(("args", "line"), [
    ([], "graphnetz: seeds 0-9 (10), α 0.05, δ 0.01 for [[]0, 1[]] metrics, device auto, "
         "workers 1, cache .pytest_cache/d/graphnetz"),
    (["--graphnetz-seeds=5..20", "--graphnetz-alpha=0.01", "--graphnetz-min-effect=0.02",
      "--graphnetz-device=cpu", "--graphnetz-no-cache", "--graphnetz-update-baselines"],
     "graphnetz: seeds 5..20 adaptive, α 0.01, δ 0.02, device cpu, workers 1, cache off, "
     "updating baselines"),
    (["--graphnetz-seeds=1,4,7", "--graphnetz-cache-dir=ci-cache"],
     "graphnetz: seeds 1,4,7, α 0.05, δ 0.01 for [[]0, 1[]] metrics, device auto, workers 1, "
     "cache ci-cache"),
])
def test_the_session_header_shows_the_settings_in_effect(pytester: pytest.Pytester,
                                                         args: list[str], line: str) -> None:
    from pytest_graphnetz.gates import DEFAULT_MIN_EFFECT

    assert DEFAULT_MIN_EFFECT == 0.01  # the header's default, written out there
    pytester.makepyfile("def test_x(): pass")
    result = pytester.runpytest(*args)
    result.assert_outcomes(passed=1)
    result.stdout.fnmatch_lines([line])
