"""Baseline files on disk: their names (long parametrized ids, short stems), what a full refresh
prunes, a killed write, a missing baseline named relative to the rootdir. Mostly through real
pytest sessions (pytester).
"""

from __future__ import annotations

from pathlib import Path

import pytest

from pytest_graphnetz import BenchmarkReport
from pytest_graphnetz.gates.refreshing.baselines import write_baseline

# In-process pytester runs drop modules first imported inside them, and scipy's extensions do
# not survive a second import: load the gates (and the scipy they use) here, once.
pytest.importorskip("scipy.stats")
pytest.importorskip("scipy.optimize")
import pytest_graphnetz.gates  # noqa: E402,F401


def _report(values: list[float], metric: str = "accuracy") -> BenchmarkReport:
    return BenchmarkReport.from_arrays([[values]], tasks=["karate"], models=["GCN"],
                                       seeds=range(len(values)), metric=metric)


# -- a full refresh prunes only the modules it saw -------------------------------------------------


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
    from pytest_graphnetz.gates.refreshing.baselines import default_path
    from pytest_graphnetz.gates.refreshing.ratchet import prune_unused

    stem = "test_" + "m" * 200  # its folder name is shortened with a hash
    stale = write_baseline(default_path(tmp_path, stem, "test_old"), _report([0.5, 0.6]), {})
    lines = prune_unused(tmp_path, used=set(), users=[], delete=True, seen_modules=[stem])
    assert lines[0].startswith("graphnetz: deleted 1 baseline(s)") and not stale.exists()


def test_a_missing_baseline_is_named_relative_to_the_rootdir(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(test_model=GATED.format(name="a", head=""))
    result = pytester.runpytest()
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines([
        "E*BaselineMissingError: no baseline at baselines/test_model/test_a.json: create it "
        "with `pytest test_model.py::test_a --graphnetz-update-baselines`"])


# -- file names ------------------------------------------------------------------------------------


def test_a_long_parametrized_id_gets_a_short_file_name(pytester: pytest.Pytester) -> None:
    from pytest_graphnetz.gates.refreshing.baselines import MAX_STEM_BYTES, short_stem

    pytester.makepyfile(test_long="""
import pytest
from pytest_graphnetz import BenchmarkReport, assert_not_worse


@pytest.mark.parametrize("config", [1, 2], ids=["x" * 250 + "-a", "x" * 250 + "-b"])
def test_cfg(config, graphnetz_baseline):
    report = BenchmarkReport.from_arrays([[[0.80, 0.82, 0.79]]], tasks=["karate"],
                                         models=["GCN"], seeds=range(3), metric="accuracy")
    assert_not_worse(report, graphnetz_baseline())
""")
    pytester.makeini("[pytest]\ngraphnetz_seeds = 3\n")  # the project's first look
    pytester.runpytest("--graphnetz-update-baselines").assert_outcomes(passed=2)
    names = sorted(p.name for p in (pytester.path / "baselines" / "test_long").glob("*.json"))
    assert len(names) == 2  # two ids that share their first 250 characters: two files
    assert all(len(n.encode()) <= MAX_STEM_BYTES + len(".json") for n in names)
    assert names == sorted(f"{short_stem(f'test_cfg[{c}]')}.json"
                           for c in ("x" * 250 + "-a", "x" * 250 + "-b"))
    pytester.runpytest().assert_outcomes(passed=2)  # and the gates find them again


def test_short_stems_keep_escapes_whole_and_names_distinct() -> None:
    from pytest_graphnetz.gates.refreshing.baselines import MAX_STEM_BYTES, file_name, short_stem

    assert short_stem("test_a[1]") == "test_a[1]"
    long = file_name("t[" + "a/" * 100 + "]")  # every "/" is %2F: the cut must not split one
    short = short_stem(long)
    assert len(short.encode()) <= MAX_STEM_BYTES
    head = short.rsplit("~", 1)[0]
    assert long.startswith(head) and not head.endswith(("%", "%2"))
    assert short_stem(long + "x") != short


# -- costs seconds each (marked slow): fresh interpreters, subprocess sessions or killed
# processes (the slow tier, tests/README.md) ------------------------------------------------


WRITE_AND_DIE = """
import os, signal, sys
from pathlib import Path

from pytest_graphnetz import BenchmarkReport
from pytest_graphnetz.gates.refreshing.baselines import write_baseline

def die(src, dst):  # the temp file is whole and synced: die before the rename
    os.kill(os.getpid(), signal.SIGKILL)

os.replace = die
report = BenchmarkReport.from_arrays([[[0.5, 0.6]]], tasks=["t"], models=["m"], seeds=[0, 1],
                                     metric="accuracy")
write_baseline(Path(sys.argv[1]), report, {})
"""


@pytest.mark.slow
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
    env = {**os.environ, "PYTHONPATH": str(Path(__file__).parents[2])}
    died = subprocess.run([sys.executable, "-c", WRITE_AND_DIE, str(target)], env=env,
                          timeout=600)
    assert died.returncode == -signal.SIGKILL
    leftovers = [p for p in target.parent.rglob("*.tmp")]
    assert len(leftovers) == 1 and leftovers[0].stat().st_size > 0  # a complete, killed write
    subprocess.run(["git", "init", "-q", str(project)], check=True)
    subprocess.run(["git", "-C", str(project), "add", "-A"], check=True)
    staged = subprocess.run(["git", "-C", str(project), "ls-files"], check=True, text=True,
                            capture_output=True).stdout.split()
    assert staged == [], staged
