"""`graphnetz calibrate`: the salted rerun, the resolvable δ (against statsmodels), the file
beside the baseline, and the gate's warning when δ is finer than the seeds resolve."""

from __future__ import annotations

import itertools
import json
import math

import numpy as np
import pytest

torch = pytest.importorskip("torch")
pytest.importorskip("torch_geometric.nn")
import pytest_graphnetz.gates  # noqa: E402,F401
import pytest_graphnetz.runner  # noqa: E402,F401
import pytest_graphnetz.runner.training.node  # noqa: E402,F401
from pytest_graphnetz import BenchmarkReport, Task, run_benchmark  # noqa: E402
from pytest_graphnetz.base.text import ceil_significant  # noqa: E402
from pytest_graphnetz.gates.calibration.annotation import (  # noqa: E402
    RESOLUTION_TABLE_NOTE,
    resolution_note,
)
from pytest_graphnetz.gates.calibration.resolution import (  # noqa: E402
    Calibration,
    CalibrationError,
    CellCalibration,
    resolvable_min_effect,
)
from pytest_graphnetz.gates.calibration.salted_run import calibrate, calibrate_reports  # noqa: E402
from pytest_graphnetz.gates.calibration.salting import salted_models  # noqa: E402
from pytest_graphnetz.gates.calibration.store import (  # noqa: E402
    SCHEMA,
    calibration_path,
    read_calibration,
    write_calibration,
)
from pytest_graphnetz.stats.planning import seeds_for_min_effect  # noqa: E402

# -- the resolvable δ: planning, checked against statsmodels' power of the one-sided t test -------


@pytest.mark.parametrize(("sd", "n", "alpha_reg"), [(0.008, 10, 0.05), (0.09, 10, 0.025),
                                                    (0.02, 5, 0.05), (1.0, 30, 0.05)])
def test_resolvable_min_effect_is_the_smallest_delta_n_seeds_resolve(sd, n, alpha_reg):
    from statsmodels.stats.power import TTestPower

    delta = resolvable_min_effect(sd, n, alpha=0.05, alpha_regressed=alpha_reg)
    assert seeds_for_min_effect(sd, delta, alpha=0.05, alpha_regressed=alpha_reg) <= n
    assert seeds_for_min_effect(sd, delta * 0.998, alpha=0.05, alpha_regressed=alpha_reg) > n
    power = TTestPower()
    # REGRESSED on a true drop of δ: a one-sided one-sample t test at the REGRESSED level.
    assert power.power(effect_size=delta / sd, nobs=n, alpha=alpha_reg,
                       alternative="larger") >= 0.8 - 1e-6
    # NOT WORSE on no change: the lower bound above −δ is the one-sided test of mean <= −δ
    # rejecting; REGRESSED winning only lowers that chance, so statsmodels' power bounds it.
    assert power.power(effect_size=delta / sd, nobs=n, alpha=0.05,
                       alternative="larger") >= 0.8 - 1e-6


def test_resolvable_min_effect_scales_with_the_sd_and_is_zero_without_noise():
    assert resolvable_min_effect(0.0, 10) == 0.0
    one = resolvable_min_effect(1.0, 10)
    assert resolvable_min_effect(0.05, 10) == pytest.approx(0.05 * one, rel=1e-3)
    with pytest.raises(ValueError, match="n_seeds"):
        resolvable_min_effect(1.0, 1)


def _calibration(sd: float, n: int = 10, cells: int = 1) -> Calibration:
    rng = np.random.default_rng(0)
    made = {}
    for k in range(cells):
        base = 0.8 + 0.02 * rng.standard_normal(n)
        noise = rng.standard_normal(n)
        noise = (noise - noise.mean()) / noise.std(ddof=1) * sd  # sd exactly `sd`
        made[("t", f"m{k}")] = CellCalibration("t", f"m{k}", "accuracy", tuple(range(n)),
                                               tuple(base), tuple(base + noise))
    return Calibration(made)


def test_resolution_note_says_the_seeds_delta_needs_and_the_delta_to_raise_to(tmp_path):
    cal = _calibration(sd=0.09)
    assert cal.cells[("t", "m0")].sd_paired == pytest.approx(0.09)
    note = resolution_note(("t", "m0"), 0.01, 10, cal)
    needed = seeds_for_min_effect(0.09, 0.01)
    resolved = resolvable_min_effect(0.09, 10)
    assert f"δ 0.01 needs about {needed} seeds here" in note
    assert 0.07 < resolved < 0.08  # rounded up to two digits: a δ that still resolves
    assert (f"raise δ to {math.ceil(resolved * 1000) / 1000:g} (what 10 seeds resolve) or "
            "accept INCONCLUSIVE") in note
    assert resolution_note(("t", "m0"), 0.09, 10, cal) is None       # δ resolved
    assert resolution_note(("t", "other"), 0.01, 10, cal) is None    # not calibrated
    assert resolution_note(("t", "m0"), 0.01, 10, None) is None


def test_a_family_plans_regressed_at_the_holm_level():
    single, family = _calibration(sd=0.02), _calibration(sd=0.02, cells=4)
    key = ("t", "m0")
    assert family.family == 4
    assert family.seeds_needed(key, 0.01) == seeds_for_min_effect(
        0.02, 0.01, alpha=0.05, alpha_regressed=0.05 / 4)
    assert family.resolvable(key) > single.resolvable(key)


def test_the_file_round_trips_and_a_bad_one_names_itself(tmp_path):
    cal = _calibration(sd=0.01, cells=2)
    path = write_calibration(cal, calibration_path(tmp_path / "mod" / "test_x.json"),
                             {("t", "m0"): 0.01, ("t", "m1"): 0.01})
    assert path == tmp_path / "mod" / "test_x.calibration.json"
    back = read_calibration(path)
    assert back == cal and back.path == path
    data = json.loads(path.read_text())
    entry = data["cells"][0]
    assert entry["seeds_for_min_effect"] == seeds_for_min_effect(0.01, 0.01, alpha_regressed=0.025)
    assert entry["sd_paired"] == pytest.approx(0.01, rel=1e-5)
    path.write_text('{"schema": "other"}')
    with pytest.raises(CalibrationError, match=r"test_x\.calibration\.json.*graphnetz calibrate"):
        read_calibration(path)


# -- the salted rerun on real training -------------------------------------------------------------


def _load(root, *, seed):
    from torch_geometric.data import Data

    gen = torch.Generator().manual_seed(seed)
    y = torch.arange(3).repeat_interleave(20)
    x = torch.nn.functional.one_hot(y, 3).float() + 1.2 * torch.randn(60, 3, generator=gen)
    src = torch.randint(0, 60, (200,), generator=gen)
    dst = torch.where(torch.rand(200, generator=gen) < 0.8,
                      y[src] * 20 + torch.randint(0, 20, (200,), generator=gen),
                      torch.randint(0, 60, (200,), generator=gen))
    perm = torch.randperm(60, generator=gen)
    masks = [torch.zeros(60, dtype=torch.bool) for _ in range(3)]
    for mask, part in zip(masks, (perm[:20], perm[20:35], perm[35:]), strict=True):
        mask[part] = True
    return Data(x=x, edge_index=torch.stack([src, dst]), y=y, train_mask=masks[0],
                val_mask=masks[1], test_mask=masks[2])


class _Net(torch.nn.Module):
    def __init__(self, in_channels, out_channels):
        super().__init__()
        from torch_geometric.nn import GCNConv

        self.conv1 = GCNConv(in_channels, 8)
        self.conv2 = GCNConv(8, out_channels)

    def forward(self, x, edge_index):
        x = torch.nn.functional.dropout(x, p=0.5, training=self.training)
        return self.conv2(self.conv1(x, edge_index).relu(), edge_index)


TASK = {"toy": Task("toy", _load, epochs=8)}


def test_the_salt_moves_every_draw_but_not_the_data(tmp_path):
    kw = {"seeds": range(4), "device": "cpu", "root": str(tmp_path)}
    base = run_benchmark(TASK, {"Net": _Net}, **kw)
    salted = run_benchmark(TASK, salted_models({"Net": _Net}), **kw)
    again = run_benchmark(TASK, salted_models({"Net": _Net}), **kw)
    other = run_benchmark(TASK, salted_models({"Net": _Net}, salt=2), **kw)
    assert salted.fingerprints["data"] == base.fingerprints["data"]
    for s in range(4):
        assert salted.fingerprints["model"]["Net"][s] != base.fingerprints["model"]["Net"][s]
    assert np.array_equal(salted.values("toy", "Net"), again.values("toy", "Net"))
    assert not np.array_equal(salted.values("toy", "Net"), base.values("toy", "Net"))
    assert not np.array_equal(salted.values("toy", "Net"), other.values("toy", "Net"))
    cal = calibrate_reports(base, salted)
    cell = cal.cells[("toy", "Net")]
    diff = salted.values("toy", "Net") - base.values("toy", "Net")
    assert cell.sd_paired == pytest.approx(float(np.std(diff, ddof=1)))
    assert cell.sd_seed == pytest.approx(float(np.std(base.values("toy", "Net"), ddof=1)))
    with pytest.raises(ValueError, match="salt"):
        salted_models({"Net": _Net}, salt=0)


_CALLS = itertools.count()


def _drifting(root, *, seed):
    """A loader whose data changes from call to call (a source the runner does not seed)."""
    data = _load(root, seed=seed)
    data.x = data.x + next(_CALLS)
    return data


def test_a_salt_that_reaches_the_data_is_refused(tmp_path):
    with pytest.raises(CalibrationError, match=r"task 'drift', seed 0: the salted rerun loaded "
                                               r"other data"):
        calibrate({"drift": Task("drift", _drifting, epochs=2)}, {"Net": _Net}, seeds=range(2),
                  device="cpu", root=str(tmp_path))


def test_calibrate_refuses_reports_that_do_not_pair():
    X = np.full((1, 1, 3), 0.5)
    a = BenchmarkReport.from_arrays(X, tasks=["t"], models=["m"], seeds=range(3),
                                    metric="accuracy")
    b = BenchmarkReport.from_arrays(X, tasks=["t"], models=["m"], seeds=[0, 1, 5],
                                    metric="accuracy")
    with pytest.raises(CalibrationError, match="same order"):
        calibrate_reports(a, b)


# -- in pytest: `graphnetz calibrate`, the file beside the baseline, the gate's warning ----------

PROJECT = '''
import torch
from torch_geometric.data import Data
from torch_geometric.nn import GCNConv

from pytest_graphnetz import Task, assert_not_worse


def load(root, *, seed):
    gen = torch.Generator().manual_seed(seed)
    y = torch.arange(3).repeat_interleave(20)
    x = torch.nn.functional.one_hot(y, 3).float() + 1.2 * torch.randn(60, 3, generator=gen)
    edge_index = torch.randint(0, 60, (2, 200), generator=gen)
    perm = torch.randperm(60, generator=gen)
    masks = [torch.zeros(60, dtype=torch.bool) for _ in range(3)]
    for mask, part in zip(masks, (perm[:20], perm[20:35], perm[35:])):
        mask[part] = True
    return Data(x=x, edge_index=edge_index, y=y, train_mask=masks[0], val_mask=masks[1],
                test_mask=masks[2])


class Net(torch.nn.Module):
    def __init__(self, in_channels, out_channels):
        super().__init__()
        self.conv1 = GCNConv(in_channels, 8)
        self.conv2 = GCNConv(8, out_channels)

    def forward(self, x, edge_index):
        x = torch.nn.functional.dropout(x, p=0.5, training=self.training)
        return self.conv2(self.conv1(x, edge_index).relu(), edge_index)


def test_gate(graphnetz_run, graphnetz_baseline):
    report = graphnetz_run({"toy": Task("toy", load, epochs=6)}, {"Net": Net})
    assert_not_worse(report, graphnetz_baseline())
'''


def test_graphnetz_calibrate_writes_beside_the_baseline_and_the_gate_warns(pytester):
    pytester.makepyfile(test_toy=PROJECT)
    # the project declares its schedule's first look at 4 seeds (the ini key)
    common = ["-p", "no:cacheprovider", "-o", "graphnetz_seeds=4", "--graphnetz-device=cpu",
              "-p", "no:randomly"]
    pytester.runpytest_inprocess(*common, "--graphnetz-update-baselines").assert_outcomes(
        passed=1)
    # `graphnetz calibrate ARGS` is `pytest ARGS --graphnetz-calibrate` (the next test): run in
    # this process, as a second interpreter's torch import costs more than the calibration.
    result = pytester.runpytest_inprocess(*common, "--graphnetz-calibrate")
    assert result.ret == 0, result.stdout.str()
    path = pytester.path / "baselines" / "test_toy" / "test_gate.calibration.json"
    assert path.is_file()
    cal = read_calibration(path)
    cell = cal.cells[("toy", "Net")]
    assert cell.n == 4 and cell.seeds == (0, 1, 2, 3) and cell.sd_paired > 0
    text = result.stdout.str()
    assert "graphnetz calibration" in text and "seeds δ needs" in text
    assert f"calibration written to {path}" in text

    fine = cell.sd_paired / 100
    out = pytester.runpytest_inprocess(*common, f"--graphnetz-min-effect={fine:.3g}")
    out.assert_outcomes(passed=1)
    # planned at the level the run decides at: the schedule's first look spends ρα (0.0425)
    from pytest_graphnetz.stats.boundaries import spending

    first = spending(4, 4, alpha=0.05)
    assert first == pytest.approx(0.0425)
    assert cal.alpha == pytest.approx(first)   # the table's "seeds δ needs" is planned there too
    needed = cal.seeds_needed(("toy", "Net"), float(f"{fine:.3g}"), alpha=first)
    out.stdout.fnmatch_lines([f"*toy/Net: δ {float(f'{fine:.3g}'):g} needs about {needed} "
                              "seeds here*raise δ to*or accept INCONCLUSIVE*"])
    resolved = cal.resolvable(("toy", "Net"), alpha=first)
    coarse = pytester.runpytest_inprocess(*common, f"--graphnetz-min-effect={1.01 * resolved}")
    coarse.assert_outcomes(passed=1)
    assert "needs about" not in coarse.stdout.str()


def test_the_calibrate_command_is_pytest_with_the_calibrate_flag(monkeypatch):
    from pytest_graphnetz.cli.main import main

    calls = []

    def fake_main(args, plugins=()):
        calls.append(args)
        return pytest.ExitCode.TESTS_FAILED

    monkeypatch.setattr(pytest, "main", fake_main)
    assert main(["calibrate", "tests/test_toy.py", "-k", "gate", "--graphnetz-seeds=4"]) == 1
    assert calls == [["tests/test_toy.py", "-k", "gate", "--graphnetz-seeds=4",
                      "--graphnetz-calibrate"]]


# -- a broken calibration file: advice, so it never decides nor breaks a gate ----------------------

CALIBRATED_GATE = """
import numpy as np
from pytest_graphnetz import BenchmarkReport, assert_not_worse

SHIFT = {shift}

def test_gcn(graphnetz_baseline):
    X = 0.8 + SHIFT + np.array([[[0.01, 0.03, 0.0, 0.02, 0.01, 0.04, 0.02, 0.03]]])
    X[0, 0, ::2] += SHIFT / 4  # the gain varies by seed: paired evidence of BETTER
    report = BenchmarkReport.from_arrays(X, tasks=["karate"], models=["GCN"], seeds=range(8),
                                         metric="accuracy")
    assert_not_worse(report, graphnetz_baseline(), first_look=8)
"""

_VALID_CELL = ('{"task": "karate", "model": "GCN", "metric": "accuracy", '
               '"seeds": [0, 1], "baseline": [0.8, 0.81], "salted": [0.81, %s]}')


@pytest.mark.parametrize("content", [
    # a 400-digit number: float() overflows
    ('{"schema": "graphnetz-calibration/1", "salt": 1, "alpha": 0.05, "power": 0.8, '
     '"epoch_selection": "final", "cells": [' + _VALID_CELL % ("1" + "0" * 400) + "]}"
     ).encode(),
    b'{"schema": "\xff\xfe calibration"}',                      # not UTF-8
    b"[" * 100_000 + b"]" * 100_000,                             # nested past the recursion limit
], ids=["400-digits", "bad-utf8", "deep-json"])
def test_a_broken_calibration_file_warns_naming_it_and_leaves_the_verdict(
        pytester: pytest.Pytester, content: bytes) -> None:
    assert SCHEMA == "graphnetz-calibration/1"  # the planted file has the schema's name
    pytester.makepyfile(test_model=CALIBRATED_GATE.format(shift=0.0))
    args = ("-p", "no:cacheprovider", "-p", "no:randomly", "-W", "error::RuntimeWarning")
    pytester.runpytest_inprocess(*args, "--graphnetz-update-baselines").assert_outcomes(passed=1)
    calibration = pytester.path / "baselines" / "test_model" / "test_gcn.calibration.json"
    calibration.write_bytes(content)
    pytester.makepyfile(test_model=CALIBRATED_GATE.format(shift=0.04))
    result = pytester.runpytest_inprocess(*args)
    result.assert_outcomes(passed=1)   # BETTER, as without the file
    text = result.stdout.str()
    assert "BETTER" in text
    result.stdout.fnmatch_lines(["*graphnetz: calibration ignored: *test_gcn.calibration.json: *"
                                 "rewrite it with `graphnetz calibrate`*"])


def test_resolvable_shows_one_delta_and_never_warns_it_is_finer_than_the_seeds_resolve(
        pytester: pytest.Pytester) -> None:
    """A calibration planned at another level than the look the row is decided at (a later look
    of the schedule is stricter; here the file says α 0.1 and the gate decides at 0.05): the δ
    the gate takes from it is the row's only δ, with no second figure and no warning."""
    pytester.makepyfile(test_model=CALIBRATED_GATE.format(shift=0.0).replace(
        "graphnetz_baseline(), first_look=8)",
        "graphnetz_baseline(), first_look=8, min_effect=\"resolvable\")"))
    args = ("-p", "no:cacheprovider", "-p", "no:randomly", "--graphnetz-json=verdicts.json")
    pytester.runpytest_inprocess(*args, "--graphnetz-update-baselines").assert_outcomes(passed=1)
    rng = np.random.default_rng(3)
    base = 0.8 + 0.01 * rng.standard_normal(8)
    cal = Calibration({("karate", "GCN"): CellCalibration(
        "karate", "GCN", "accuracy", tuple(range(8)), tuple(base),
        tuple(base + 0.004 * rng.standard_normal(8)))}, alpha=0.1)
    write_calibration(cal, pytester.path / "baselines" / "test_model" /
                      "test_gcn.calibration.json")
    pytester.makepyfile(test_model=CALIBRATED_GATE.format(shift=0.002).replace(
        "graphnetz_baseline(), first_look=8)",
        "graphnetz_baseline(), first_look=8, min_effect=\"resolvable\")"))
    result = pytester.runpytest_inprocess(*args)
    result.assert_outcomes(passed=1)
    row = json.loads((pytester.path / "verdicts.json").read_text())["rows"][0]
    delta = row["stats"]["min_effect"]
    assert delta == pytest.approx(ceil_significant(cal.resolvable(("karate", "GCN"), 8)))
    # planned at α 0.1, so finer than what 8 seeds resolve at the gate's 0.05
    assert delta < cal.resolvable(("karate", "GCN"), 8, alpha=0.05)
    assert "δ = what the seeds resolve (--graphnetz-min-effect=resolvable)" in row["note"]
    assert "seeds resolve δ ≥" not in row["note"]
    assert RESOLUTION_TABLE_NOTE not in row["note"]
    assert "needs about" not in result.stdout.str()
