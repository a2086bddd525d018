"""Faults in what is read, met in pytest sessions: a baseline with a JSON name given twice or
with lines of two refreshes (merges that keep a file valid JSON), and a baseline path that
holds no regular file (tests/fast/test_faults_reads.py has every reader's share)."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from tests.helpers.faults import BASELINE_GATE, dangling_link_at, fifo_at, zero_link_at

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


# -- the baseline path: anything there but a baseline is refused, never "missing" ------------------

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


# -- what a refresh leaves beside the baselines ----------------------------------------------------

def test_a_refresh_leaves_nothing_but_baselines_in_the_baseline_folder(pytester):
    pytester.makepyfile(test_model=BASELINE_GATE,
                        test_other=BASELINE_GATE.replace("0.01, 0.03", "0.02, 0.03"))
    _run(pytester, "--graphnetz-update-baselines").assert_outcomes(passed=2)
    folder = pytester.path / "baselines"
    assert sorted(p.relative_to(folder).as_posix() for p in folder.rglob("*")) == [
        "test_model", "test_model/test_gcn.json", "test_other", "test_other/test_gcn.json"]
