"""`graphnetz calibrate` on every task kind: a command task (the script receives a
salted seed, the data stays), and a task with a trainer per model; the resolvable δ reaches the
file beside the baseline and the gate's row, and `--graphnetz-min-effect=resolvable` gates at it,
saying so. Real pytest sessions (pytester).
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys

import pytest

torch = pytest.importorskip("torch")
pytest.importorskip("torch_geometric.nn")

import pytest_graphnetz.gates  # noqa: E402,F401
import pytest_graphnetz.runner  # noqa: E402,F401
import pytest_graphnetz.runner.training.node  # noqa: E402,F401
from pytest_graphnetz.base.text import ceil_significant  # noqa: E402
from pytest_graphnetz.gates.calibration.annotation import RESOLUTION_TABLE_NOTE  # noqa: E402
from pytest_graphnetz.gates.calibration.salting import salted_seed  # noqa: E402
from tests.helpers.command_projects import SCRIPT, write_graph  # noqa: E402
from tests.helpers.sessions import (  # noqa: E402
    CALIBRATION_ARGS,
    TRAINER_GATES,  # noqa: E402
    TRAINER_PROJECT,  # noqa: E402
    calibrate,
    verdict_rows,
)


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


# -- costs seconds each (marked slow): fresh interpreters, subprocess sessions or killed
# processes (the slow tier, tests/README.md) ------------------------------------------------


COMMAND_PROJECT = '''
import sys
from pathlib import Path

from pytest_graphnetz import Task
from pytest_graphnetz.runner.command import Command, DataFiles

HERE = Path(__file__).parent
TASKS = {"graph": Task("graph", DataFiles([HERE / "graph.npz"]), kind="command")}
MODELS = {"GCN": Command([sys.executable, "gcn.py", "--epochs", "8"], cwd=HERE)}
'''


@pytest.mark.slow
def test_calibrate_on_a_command_task_salts_the_seed_the_script_receives(
        pytester: pytest.Pytester) -> None:
    pytester.makepyfile(project=COMMAND_PROJECT, test_scripts='''
from pytest_graphnetz import assert_not_worse

import project


def test_script(graphnetz_run, graphnetz_baseline):
    assert_not_worse(graphnetz_run(project.TASKS, project.MODELS), graphnetz_baseline())
''')
    shutil.copy(SCRIPT, pytester.path / "gcn.py")
    write_graph(pytester.path / "graph.npz", seed=0)
    cal, text = calibrate(pytester, "test_scripts::test_script")
    cell = cal.cells[("graph", "GCN")]
    assert cell.n == 4 and cell.seeds == (0, 1, 2, 3) and cell.sd_paired > 0
    # per training budget, from the metrics file the script writes per epoch
    assert cell.curve is not None and cell.curve.budgets == tuple(range(1, 9))
    assert cell.curve.sd_paired[-1] == pytest.approx(cell.sd_paired, rel=1e-5)
    assert "graph/GCN per training budget" in text
    assert re.search(r"graph/GCN: 8 epochs: 4 seeds resolve \S+ pt; 2 epochs: \S+ pt; "
                     r"(no budget up to 8 epochs resolves δ = 1 pt|"
                     r"δ = 1 pt resolved from \d+ epochs? on)",
                     text), text
    # The salted value of seed 1 is the script run by hand with the salted seed
    out = pytester.path / "by-hand.json"
    env = {**os.environ, "GRAPHNETZ_SEED": str(salted_seed(1, cal.salt)),
           "GRAPHNETZ_OUTPUT": str(out), "GRAPHNETZ_THREADS": "1", "OMP_NUM_THREADS": "1",
           "MKL_NUM_THREADS": "1", "OPENBLAS_NUM_THREADS": "1", "PYTHONHASHSEED": "0"}
    subprocess.run([sys.executable, "gcn.py", "--epochs", "8"], cwd=pytester.path, env=env,
                   check=True, capture_output=True)
    assert json.loads(out.read_text())["test"][-1] == cell.salted[1]
    assert cell.salted != cell.baseline

    # the gate's row says what the seeds resolve
    row = verdict_rows(pytester)["graph/GCN"]
    resolved = cal.resolvable(("graph", "GCN"), 4, alpha=row["stats"]["alpha"])
    assert "seeds resolve δ ≥ " in row["note"]
    shown = float(row["note"].split("seeds resolve δ ≥ ")[1].split(" point")[0]) / 100
    assert resolved <= shown <= resolved * 1.1

    # opt-in: gate at what the seeds resolve, stated in the row
    row = verdict_rows(pytester, "--graphnetz-min-effect=resolvable")["graph/GCN"]
    assert row["stats"]["min_effect"] == pytest.approx(
        ceil_significant(cal.resolvable(("graph", "GCN"), 4)))
    assert "δ = what the seeds resolve (--graphnetz-min-effect=resolvable)" in row["note"]
    # one δ on the row: no second figure of what the seeds resolve, no warning that it is finer
    assert "seeds resolve δ ≥" not in row["note"] and RESOLUTION_TABLE_NOTE not in row["note"]
