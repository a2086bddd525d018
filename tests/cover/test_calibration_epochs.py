"""`graphnetz calibrate` per training budget and its self-check: the value a run trained for e
epochs reports, read from a longer run's per-epoch record (final, best_val, early stopping); the
paired sd per budget and the cheapest budget resolving δ; the paired test of the salted
rerun's mean (against scipy) and its warning; and, in real sessions, the per-budget table, a
shifted salted rerun warned about in the table and the file, the figure of `-o`, and exit 0
when the calibration was written though the baseline is missing."""

from __future__ import annotations

import json
import re

import numpy as np
import pytest

# Pytester's in-process runs drop modules first imported inside them, and torch's cannot be
# imported twice in one process: everything heavy is imported here, once.
torch = pytest.importorskip("torch")
pytest.importorskip("torch_geometric.nn")
import pytest_graphnetz.gates  # noqa: E402,F401
import pytest_graphnetz.runner  # noqa: E402,F401
import pytest_graphnetz.runner.training.node  # noqa: E402,F401
from pytest_graphnetz.base.text import ceil_significant  # noqa: E402
from pytest_graphnetz.cli.main import main  # noqa: E402
from pytest_graphnetz.gates.calibration.resolution import (  # noqa: E402
    Calibration,
    CellCalibration,
    EpochCurve,
    resolvable_min_effect,
    value_at_budget,
)
from pytest_graphnetz.gates.calibration.store import (  # noqa: E402
    read_calibration,
    read_min_effects,
    write_calibration,
)
from pytest_graphnetz.gates.calibration.terminal import budget_line, shown_budgets  # noqa: E402
from pytest_graphnetz.report.epochs import History, MetricSpec  # noqa: E402

ACC = MetricSpec.from_name("accuracy")

# -- the value at a budget, from a longer run's record ----------------------------------------


def test_the_value_at_a_budget_is_what_a_shorter_run_reports():
    h = History(test=[0.1, 0.2, 0.3, 0.4, 0.5], val=[0.5, 0.9, 0.7, 0.9, 0.95])
    assert [value_at_budget(h, b, "final", ACC, 4) for b in range(1, 6)] == [
        0.1, 0.2, 0.3, 0.4, 0.5]
    # best_val within the first b epochs, the first best on ties
    assert [value_at_budget(h, b, "best_val", ACC, 4) for b in range(1, 6)] == [
        0.1, 0.2, 0.2, 0.2, 0.5]
    # a validation loss: its minimum; NaN is never best
    loss = History(test=[0.1, 0.2, 0.3], val=[float("nan"), 2.0, 3.0], val_metric="loss")
    assert value_at_budget(loss, 2, "best_val", ACC, 1) == 0.2
    # past the run's length (it stopped early): the run itself, at the epoch its rule chose
    assert value_at_budget(h, 9, "best_val", ACC, 4) == 0.5
    stopped = History(test=[0.1, 0.2, 0.3], restored_epoch=1)
    assert value_at_budget(stopped, 3, "final", ACC, 1) == 0.2


def test_the_curve_is_the_paired_sd_per_budget_and_the_cheapest_budget_holds_from_there_on():
    from scipy import stats

    rng = np.random.default_rng(1)
    base = rng.normal(0.8, 0.02, (6, 10))
    noise = rng.standard_normal((6, 10)) * np.array([0.05, 0.004, 0.03, 0.01, 0.004, 0.003])[:,
                                                                                          None]
    salted = base + noise
    salted[2, 3] = np.nan   # a diverged seed is left out of that budget
    curve = EpochCurve.from_values((1, 2, 3, 4, 5, 6), base, salted)
    assert curve.n == (10, 10, 9, 10, 10, 10)
    assert curve.sd_paired[0] == pytest.approx(np.std(noise[0], ddof=1))
    keep = np.isfinite(salted[2])
    assert curve.sd_paired[2] == pytest.approx(np.std((salted[2] - base[2])[keep], ddof=1))
    assert curve.mean[5] == pytest.approx(base[5].mean())
    cell = CellCalibration("t", "m", "accuracy", tuple(range(10)), tuple(base[-1]),
                           tuple(salted[-1]), curve=curve)
    cal = Calibration({("t", "m"): cell})
    resolved = [cal.resolvable_at(("t", "m"), i, 10) for i in range(6)]
    assert resolved[1] == pytest.approx(resolvable_min_effect(curve.sd_paired[1], 10))
    # the budget is planned from the paired sd's one-sided 90% upper bound (χ², scipy)
    bound = [cal.resolvable_at(("t", "m"), i, 10, bound=True) for i in range(6)]
    upper = curve.sd_paired[1] * np.sqrt(9 / stats.chi2.ppf(0.10, 9))
    assert bound[1] == pytest.approx(resolvable_min_effect(upper, 10), rel=1e-6)
    delta = max(bound[3:]) * 1.001
    assert bound[1] <= delta < bound[2]   # budget 2 resolves, but 3 does not
    assert cal.cheapest_budget(("t", "m"), delta) == 4
    # a δ the estimates resolve from budget 4 on: the bound, allowing for the sd's error,
    # names 5
    tight = max(resolved[3:]) * 1.001
    assert resolved[3] <= tight < bound[3] and bound[4] <= tight
    assert cal.cheapest_budget(("t", "m"), tight) == 5
    line = budget_line(cal, ("t", "m"), delta)
    assert line.startswith(f"6 epochs: 10 seeds resolve {ceil_significant(100 * resolved[5]):.2g} "
                           "pt; 1 epoch: ")
    assert (" resolved from 4 epochs on, planned from each budget's 90% upper bound of the "
            "paired sd (mean ") in line


@pytest.mark.slow   # 9-29 s on an idle core: over the fast tier's budget
def test_the_self_check_is_one_test_per_calibration_holm_over_its_cells():
    """The salted-mean check is Holm-adjusted over the calibration's cells (statsmodels'
    ``multipletests`` as the reference), so 10 innocent cells warn in at most α of
    calibrations (400 simulated; the per-cell rule warns in about 40%)."""
    from statsmodels.stats.multitest import multipletests

    rng = np.random.default_rng(7)
    per_cell = holm = 0
    trials = 400
    for k in range(trials):
        base = rng.normal(0.8, 0.02, (10, 10))
        salted = base + rng.normal(0, 0.01, (10, 10))
        cal = Calibration({(f"t{i}", "m"): CellCalibration(
            f"t{i}", "m", "accuracy", tuple(range(10)), tuple(base[i]), tuple(salted[i]))
            for i in range(10)})
        if k < 20:
            ps = [c.shift_p for c in cal.cells.values()]
            reference = multipletests(ps, method="holm")[1]
            assert [cal.shift_p_adjusted(key) for key in cal.cells] == pytest.approx(reference)
        per_cell += any(c.shift_p < 0.05 for c in cal.cells.values())
        holm += any(cal.shifted(key) for key in cal.cells)
    assert holm / trials <= 0.05 + 3 * np.sqrt(0.05 * 0.95 / trials)
    assert per_cell / trials > 0.3


def test_shown_budgets_spread_over_the_run_with_the_cheapest_among_them():
    assert shown_budgets(list(range(1, 7))) == [1, 2, 3, 4, 5, 6]
    shown = shown_budgets(list(range(1, 201)), 137)
    assert shown == [25, 50, 75, 100, 125, 137, 150, 175, 200]


def test_the_shift_check_is_the_paired_t_test_and_the_file_keeps_curve_and_warning(tmp_path):
    from scipy import stats

    rng = np.random.default_rng(2)
    base = rng.normal(0.8, 0.02, 10)
    calm = base + rng.normal(0, 0.01, 10)
    moved = calm - 0.025
    for salted, shifted in ((calm, False), (moved, True)):
        cell = CellCalibration("t", "m", "accuracy", tuple(range(10)), tuple(base),
                               tuple(salted), curve=EpochCurve.from_values(
                                   (1, 2), np.stack([base, base]), np.stack([salted, salted])))
        cal = Calibration({("t", "m"): cell})
        assert cell.shift_p == pytest.approx(stats.ttest_rel(salted, base).pvalue, rel=1e-9)
        assert cal.shifted(("t", "m")) is shifted
        path = write_calibration(cal, tmp_path / f"{shifted}.calibration.json",
                                 {("t", "m"): 0.01})
        entry = json.loads(path.read_text())["cells"][0]
        assert ("warning" in entry) is shifted
        assert entry["epochs"]["budgets"] == [1, 2] and "cheapest_budget" in entry
        back = read_calibration(path).cells[("t", "m")]
        assert back.curve is not None and back.curve.n == (10, 10)
        assert back.curve.sd_paired[1] == pytest.approx(cell.sd_paired, rel=1e-5)
        assert read_min_effects(path) == {("t", "m"): 0.01}
    assert "the salt moved the split or the data" in entry["warning"]
    assert "not deterministic" in entry["warning"]


# -- in pytest: the table per budget, the warning, the figure, the exit code --------------------

PROJECT = '''
import math

import torch

from pytest_graphnetz import Task, assert_not_worse

SHIFT = {shift}


def load(root, *, seed):
    return {{"seed": torch.tensor([seed])}}


def scripted(model, data, *, task, device):
    # Draws from torch's RNG, so the salted rerun draws others; the noise falls with training.
    noise = torch.rand(task.epochs).tolist()
    salted = getattr(model, "graphnetz_calibration_salt", 0)
    curve = [0.6 + 0.2 * (1 - math.exp(-e / 3)) + 0.2 * noise[e] / (e + 1) ** 2
             + (SHIFT if salted else 0.0) for e in range(task.epochs)]
    return {{"test": curve, "val": curve}}


def net(in_channels, out_channels):
    return torch.nn.Linear(in_channels, out_channels)


TASKS = {{"toy": Task("toy", load, trainer=scripted, epochs=12, in_channels=2, out_channels=2)}}


def test_gate(graphnetz_run, graphnetz_baseline):
    assert_not_worse(graphnetz_run(TASKS, {{"Net": net}}), graphnetz_baseline())
'''

COMMON = ["-p", "no:cacheprovider", "-p", "no:randomly", "--override-ini=graphnetz_seeds=6",
          "--graphnetz-device=cpu"]
FILE = ("baselines", "test_toy", "test_gate.calibration.json")


def test_calibrate_prints_each_budget_and_the_cheapest_resolving_delta(
        pytester: pytest.Pytester) -> None:
    pytester.makepyfile(test_toy=PROJECT.format(shift=0.0))
    pytester.runpytest_inprocess(*COMMON, "--graphnetz-update-baselines").assert_outcomes(
        passed=1)
    result = pytester.runpytest_inprocess(*COMMON, "--graphnetz-calibrate",
                                          "--graphnetz-min-effect=0.003")
    assert result.ret == 0, result.stdout.str()
    cal = read_calibration(pytester.path.joinpath(*FILE))
    cell = cal.cells[("toy", "Net")]
    assert cell.curve is not None and cell.curve.budgets == tuple(range(1, 13))
    assert cell.curve.sd_paired[-1] == pytest.approx(cell.sd_paired, rel=1e-5)
    assert cell.curve.sd_paired[0] > 10 * cell.curve.sd_paired[-1]   # noise falls with epochs
    cheapest = cal.cheapest_budget(("toy", "Net"), 0.003)
    assert cheapest is not None and 1 < cheapest < 12
    text = result.stdout.str()
    assert "toy/Net per training budget" in text
    result.stdout.fnmatch_lines([f"* {cheapest}  *← δ resolved from here on",
                                 "toy/Net: 12 epochs: 6 seeds resolve * pt; 3 epochs: * pt; "
                                 f"δ = 0.3 pt resolved from {cheapest} epochs on, planned from "
                                 "each budget's 90% upper bound of the paired sd *"])
    assert " yes" not in text and " no " not in text   # no per-budget verdict
    assert "WARNING" not in text and "moved" not in text


def test_a_shifted_salted_rerun_is_warned_about_and_calibrate_exits_0_without_a_baseline(
        pytester: pytest.Pytester, capsys: pytest.CaptureFixture[str]) -> None:
    pytester.makepyfile(test_toy=PROJECT.format(shift=0.03))
    pytester.chdir()
    # no baseline: the gate fails, the calibration is written beside where it will be
    code = main(["calibrate", "-o", "budgets.png", *COMMON])
    out, err = capsys.readouterr()
    assert code == 0, out + err
    assert "MISSING BASELINE" in out
    path = pytester.path.joinpath(*FILE)
    assert f"calibration written to {path}" in out
    assert ("test_toy.py::test_gate: calibration written; the test itself failed (no baseline "
            "at baselines/test_toy/test_gate.json") in err
    assert "which is not a failure of calibrate" in err
    # the salted mean moved by 0.03 on every seed: in the table, as a warning, and in the file
    assert ": moved" in out
    assert re.search(r"graphnetz: WARNING toy/Net: the salted rerun's mean moved by \+0\.0[23]\d* "
                     r"\(paired t, two-sided p = \S+ over 6 seeds; Holm over the calibration's "
                     r"1 cell: \S+ < 0\.0425\): an innocent change must not move it\. Chance "
                     r"alone warns in at most 4\.25% of innocent calibrations", out), out
    entry = json.loads(path.read_text())["cells"][0]
    assert entry["shift_p"] < 0.001 and "the salt moved the split or the data" in entry["warning"]
    pytest.importorskip("matplotlib")
    assert (pytester.path / "budgets.png").stat().st_size > 0
    assert "figure of the training budgets written to budgets.png" in out


def test_calibrate_fails_when_a_test_fails_before_calibrating(
        pytester: pytest.Pytester, capsys: pytest.CaptureFixture[str]) -> None:
    pytester.makepyfile(test_toy="def test_broken(graphnetz_run):\n    raise RuntimeError('x')\n")
    pytester.chdir()
    assert main(["calibrate", *COMMON]) == 1
    assert "not a failure of calibrate" not in capsys.readouterr().err


def test_the_figure_option_is_only_a_leading_one_without_an_equals_sign():
    from pytest_graphnetz.cli.subcommands import figure_option

    assert figure_option(["-o", "f.png", "tests", "-k", "x"]) == ("f.png", ["tests", "-k", "x"])
    assert figure_option(["--output=f.png", "tests"]) == ("f.png", ["tests"])
    assert figure_option(["-o", "graphnetz_seeds=4", "tests"]) == (
        None, ["-o", "graphnetz_seeds=4", "tests"])
    assert figure_option(["tests", "-o", "f.png"]) == (None, ["tests", "-o", "f.png"])
