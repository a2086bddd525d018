"""The tests of tests/fast/test_plugin_settings.py's unit that cost seconds each: fresh
interpreters, subprocess sessions or killed processes (the slow tier, tests/README.md)."""

from __future__ import annotations

import pytest

# In-process pytester runs drop modules first imported inside them; scipy's extensions and torch
# do not survive a second import: load the gates and the runner (and what they use) here, once.
pytest.importorskip("scipy.stats")
pytest.importorskip("scipy.optimize")
pytest.importorskip("torch")
pytest.importorskip("torch_geometric.nn")
import pytest_graphnetz.gates  # noqa: E402,F401
import pytest_graphnetz.runner  # noqa: E402,F401


def test_a_device_index_in_superscript_is_a_usage_error(pytester: pytest.Pytester) -> None:
    pytest.importorskip("torch")
    pytester.makepyfile("def test_x(): pass")
    result = pytester.runpytest_subprocess("--graphnetz-device=cuda:²")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(["ERROR: graphnetz: `--graphnetz-device` / `graphnetz_device`: "
                                 "device='cuda:²' is not a device; use 'cuda' or 'cuda:<index>'"])
    assert "INTERNALERROR" not in result.stdout.str() + result.stderr.str()


# -- option values ---------------------------------------------------------------------------------


@pytest.mark.parametrize(("value", "message"), [
    ("4294967296", "*'4294967296' asks for 4294967296 seeds; at most 10000 are allowed*"),
    ("0-99999999", "*'0-99999999' asks for 100000000 seeds; at most 10000 are allowed*"),
    ("4294967296,1", "*'4294967296,1' has seed 4294967296; seeds must be below 2**32*"),
    ("4294967290-4294967296", "*has seed 4294967296; seeds must be below 2**32*"),
])
def test_huge_seed_counts_are_usage_errors_at_parse_time(pytester: pytest.Pytester, value: str,
                                                          message: str) -> None:
    pytester.makepyfile("def test_x(): pass")
    result = pytester.runpytest_subprocess(f"--graphnetz-seeds={value}")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines([f"ERROR: graphnetz: `--graphnetz-seeds`*{message}"])
    assert "INTERNALERROR" not in result.stderr.str() + result.stdout.str()


@pytest.mark.parametrize(("args", "ini", "message"), [
    (["--graphnetz-workers=abc"], "",
     "ERROR: graphnetz: `--graphnetz-workers` must be a whole number of processes, got 'abc'"),
    (["--graphnetz-alpha=five"], "",
     "ERROR: graphnetz: `--graphnetz-alpha` must be a number, got 'five'"),
    ([], "graphnetz_strict = maybe",
     "ERROR: graphnetz: the ini key `graphnetz_strict` must be true or false*maybe*"),
    ([], "graphnetz_workers = many",
     "ERROR: graphnetz: the ini key `graphnetz_workers` in tox.ini must be a whole number*"),
])
def test_bad_option_values_name_the_option(pytester: pytest.Pytester, args: list[str], ini: str,
                                           message: str) -> None:
    pytester.makeini(f"[pytest]\n{ini}\n")
    pytester.makepyfile("def test_x(): pass")
    result = pytester.runpytest_subprocess(*args)
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines([message])
