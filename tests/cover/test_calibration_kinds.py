"""`graphnetz calibrate` on every task kind: a command task (the script receives a
salted seed, the data stays), and a task with a trainer per model; the resolvable δ reaches the
file beside the baseline and the gate's row, and `--graphnetz-min-effect=resolvable` gates at it,
saying so. Real pytest sessions (pytester).
"""

from __future__ import annotations

import pytest

torch = pytest.importorskip("torch")
pytest.importorskip("torch_geometric.nn")
import pytest_graphnetz.gates  # noqa: E402,F401
import pytest_graphnetz.runner  # noqa: E402,F401
import pytest_graphnetz.runner.training.node  # noqa: E402,F401
from tests.cover.test_trainer_per_model import GATES as TRAINER_GATES  # noqa: E402
from tests.cover.test_trainer_per_model import PROJECT as TRAINER_PROJECT  # noqa: E402
from tests.helpers.sessions import CALIBRATION_ARGS, calibrate, verdict_rows  # noqa: E402


def test_calibrate_on_a_trainer_per_model_task(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(project=TRAINER_PROJECT.format(gat_epochs=30, shift=0),
                        test_model=TRAINER_GATES)
    cal, _ = calibrate(pytester, "test_model::test_models")
    assert set(cal.cells) == {("tiny", "GCN"), ("tiny", "GAT")}
    for cell in cal.cells.values():
        assert cell.n == 4 and cell.sd_paired > 0
    rows = verdict_rows(pytester)
    for cell in ("tiny/GCN", "tiny/GAT"):
        assert "seeds resolve δ ≥ " in rows[cell]["note"], rows[cell]


def test_resolvable_without_a_calibration_is_refused_naming_the_file_and_command(
        pytester: pytest.Pytester) -> None:
    pytester.makepyfile(project=TRAINER_PROJECT.format(gat_epochs=3, shift=0),
                        test_model=TRAINER_GATES)
    pytester.runpytest_inprocess(*CALIBRATION_ARGS, "--graphnetz-update-baselines").assert_outcomes(
        passed=1)
    out = pytester.runpytest_inprocess(*CALIBRATION_ARGS, "--graphnetz-min-effect=resolvable")
    out.assert_outcomes(failed=1)
    text = out.stdout.str()
    assert "REFUSED" in text
    assert "test_models.calibration.json, but there is no readable calibration" in text
    assert "--graphnetz-calibrate" in text
