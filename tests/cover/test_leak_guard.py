"""The leak guard: a BETTER whose test gain validation does not share is suspect in every
output, and a refresh that would keep it needs ``--graphnetz-accept``.

The planted leak: a tiny node task (noise features, a weak class signal) whose candidate model
trains on the test nodes' labels as well as the training nodes': its test accuracy jumps, its
validation accuracy does not. On real Cora (the committed pools of ``benchmarks/``) the guard
must stay quiet on innocent and improved runs and flag the GCN trained on its test labels.
Its false-flag rates by simulation: tests/quality/test_leak_guard_rates.py.
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from pytest_graphnetz.gates.verdicts.leak import SPREAD_SDS, leak_suspicion

# imported once here: the in-process sessions below reuse these modules
torch = pytest.importorskip("torch")
pytest.importorskip("torch_geometric.nn")
import pytest_graphnetz.gates  # noqa: E402,F401
import pytest_graphnetz.runner  # noqa: E402,F401
import pytest_graphnetz.runner.training.node  # noqa: E402,F401
from tests.helpers.sessions import LEAKY_PROJECT  # noqa: E402

BENCHMARKS = Path(__file__).resolve().parents[2] / "benchmarks"


def test_an_sgc_like_leak_is_flagged_and_a_genuine_gain_is_not() -> None:
    rng = np.random.default_rng(0)
    base = rng.normal(0.80, 0.01, 10)
    noise = rng.normal(0, 0.005, (2, 10))
    noise -= noise.mean(axis=1, keepdims=True)   # the means are exactly the gains named
    # sgc.py trained on its test nodes: +10.25 test points, validation barely moved
    leak = leak_suspicion(0.1025 + noise[0], 0.001 + noise[1], base_test=base)
    assert leak is not None and leak.rule == "validation"
    assert leak.describe("accuracy").startswith("suspect: test +10.2 pt, validation +0.")
    assert leak.describe("accuracy").endswith("check for test leakage before refreshing")
    # a genuine gain moves validation too
    assert leak_suspicion(0.03 + noise[0], 0.03 + noise[1], base_test=base) is None
    # a large gain that validation shares is genuine
    assert leak_suspicion(SPREAD_SDS * 0.02 + noise[0], SPREAD_SDS * 0.02 + noise[1],
                          base_test=base) is None
    # without validation, only a gain far beyond the seeds' spread is suspect
    assert leak_suspicion(0.03 + noise[0], None, base_test=base) is None
    far = leak_suspicion(SPREAD_SDS * 0.02 + noise[0], None, base_test=base)
    assert far is not None and far.rule == "spread"


def _pool(name: str) -> dict:
    return json.loads((BENCHMARKS / name).read_text())


def test_the_guard_is_quiet_on_the_committed_cora_pools() -> None:
    """Innocent and genuinely improved Cora runs (per-seed test accuracies, no validation
    series kept: the spread rule alone): salted reruns, and the GCN against its own weaker
    variants (0.3 times the learning rate; dropout left on at evaluation, a +12-point fix)."""
    pools = _pool("gate_quality_cora_values.json")["values"]
    decisive = _pool("decisive_cora_values.json")
    def guard(model: str, cand: str, ref: str, rule: str):
        c = np.asarray(pools[model][cand][rule], dtype=float)
        r = np.asarray(pools[model][ref][rule], dtype=float)
        return leak_suspicion(c - r, None, base_test=r)

    for rule in ("final", "best_val"):
        assert guard("GCN", "salted", "baseline", rule) is None
        assert guard("GAT", "salted", "baseline", rule) is None
        assert guard("GCN", "baseline", "lr x 0.3", rule) is None
        assert guard("GCN", "baseline", "dropout on in eval", rule) is None
    for pool in decisive.values():
        base = np.asarray(pool["baseline"], dtype=float)
        assert leak_suspicion(np.asarray(pool["salted"]) - base, None, base_test=base) is None


def test_the_guard_flags_the_cora_test_leak_and_not_the_salted_reruns() -> None:
    """The replicates pool: the GCN trained on the test nodes' labels as well (validation
    series kept), against four salted reruns of the same GCN."""
    pool = _pool("baseline_replicates_values.json")["values"]
    n = min(len(v["test"]["final"]) for v in pool.values())

    def arr(variant: str, part: str, rule: str) -> np.ndarray:
        return np.asarray(pool[variant][part][rule][:n], dtype=float)

    def guard(cand: str, rule: str):
        return leak_suspicion(arr(cand, "test", rule) - arr("salt 0", "test", rule),
                              arr(cand, "val", rule) - arr("salt 0", "val", rule),
                              base_test=arr("salt 0", "test", rule))

    for rule in ("final", "best_val"):
        for salt in range(1, 5):
            assert guard(f"salt {salt}", rule) is None, (rule, salt)
        assert guard("test leak", rule) is not None, rule


# -- a planted label leak through real pytest sessions ---------------------------------------


@pytest.fixture
def leaky(pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch) -> pytest.Pytester:
    pytester.makepyfile(test_leak=LEAKY_PROJECT)
    monkeypatch.setenv("PLANT_LEAK", "0")
    pytester.runpytest("--graphnetz-update-baselines", "-o", "graphnetz_seeds=5",
                       "--graphnetz-no-cache").assert_outcomes(passed=1)
    monkeypatch.setenv("PLANT_LEAK", "1")
    return pytester


def test_a_planted_label_leak_reads_suspect_and_its_refresh_needs_accept(
        leaky: pytest.Pytester) -> None:
    path = leaky.path / "baselines" / "test_leak" / "test_mlp.json"
    honest = path.read_bytes()
    verdicts = leaky.path / "verdicts.json"
    summary = leaky.path / "summary.md"
    result = leaky.runpytest("-o", "graphnetz_seeds=5", "--graphnetz-no-cache",
                             f"--graphnetz-json={verdicts}", f"--graphnetz-summary={summary}")
    result.assert_outcomes(passed=1)    # BETTER passes
    result.stdout.fnmatch_lines(["*noisy/MLP*BETTER *suspect: test +*, validation *: check for "
                                 "test leakage before refreshing*"])
    assert "refresh baseline" not in result.stdout.str()
    rows = [r for r in json.loads(verdicts.read_text())["rows"] if r["cell"] == "noisy/MLP"]
    assert rows and rows[0]["verdict"].startswith("BETTER")
    assert rows[0]["note"].startswith("suspect: test +")
    assert "check for test leakage" in summary.read_text()

    refused = leaky.runpytest("--graphnetz-update-baselines", "-o", "graphnetz_seeds=5",
                              "--graphnetz-no-cache")
    refused.assert_outcomes(failed=1)
    refused.stdout.fnmatch_lines(["*refusing to update baseline*", "*suspect*",
                                  "*noisy/MLP: the gain is suspect; check for test leakage*"
                                  "--graphnetz-accept=noisy/MLP*"])
    assert path.read_bytes() == honest
    accepted = leaky.runpytest("--graphnetz-update-baselines", "-o", "graphnetz_seeds=5",
                               "--graphnetz-no-cache", "--graphnetz-accept=noisy/MLP")
    accepted.assert_outcomes(passed=1)
    assert path.read_bytes() != honest


def test_the_baseline_file_keeps_the_validation_values(leaky: pytest.Pytester) -> None:
    data = json.loads((leaky.path / "baselines" / "test_leak" / "test_mlp.json").read_text())
    cell = data["models"]["MLP"]["tasks"]["noisy"]
    assert set(cell["validation"]) - {"float32"} == {"final", "best_val"}
    assert len(cell["validation"]["final"]) == 5
