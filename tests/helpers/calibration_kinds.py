"""What tests/fast/test_calibration_kinds.py and tests/slow/test_calibration_kinds_slow.py share."""

from __future__ import annotations

import json

import pytest

from pytest_graphnetz.gates.calibration.resolution import Calibration
from pytest_graphnetz.gates.calibration.store import read_calibration

COMMON = ["--override-ini=graphnetz_seeds=4", "--graphnetz-device=cpu", "-p", "no:cacheprovider",
          "-p", "no:randomly"]


def calibrate(pytester: pytest.Pytester, test: str) -> tuple[Calibration, str]:
    pytester.runpytest_inprocess(*COMMON, "--graphnetz-update-baselines").assert_outcomes(
        passed=1)
    result = pytester.runpytest_inprocess(*COMMON, "--graphnetz-calibrate")
    assert result.ret == 0, result.stdout.str()
    assert "TypeError" not in result.stdout.str()
    path = pytester.path / "baselines" / test.replace("::", "/")
    path = path.with_name(path.name + ".calibration.json")
    assert f"calibration written to {path}" in result.stdout.str()
    return read_calibration(path), result.stdout.str()


def verdict_rows(pytester: pytest.Pytester, *args: str) -> dict[str, dict]:
    out = pytester.runpytest_inprocess(*COMMON, "--graphnetz-json=verdicts.json", *args)
    assert out.ret == 0, out.stdout.str()
    return {r["cell"]: r for r in json.loads((pytester.path / "verdicts.json").read_text())["rows"]}
