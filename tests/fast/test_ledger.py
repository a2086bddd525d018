"""The test-set reuse ledger of `graphnetz history`: distinct gate reads per split fingerprint,
the budget floor(n·τ²) and its source checked by simulating Blum & Hardt's boosting attack."""

from __future__ import annotations

import dataclasses
import json
import math

import numpy as np
import pytest

from pytest_graphnetz import BenchmarkReport
from pytest_graphnetz.cli import main
from pytest_graphnetz.ledger import ledger_lines, reuse_ledger
from pytest_graphnetz.outcomes import TestOutcomes
from pytest_graphnetz.trend import load_runs

N_TEST = 200   # test examples of the split


def report(values: dict[str, list[float]], *, split: str, delta: float | None = 0.1
           ) -> BenchmarkReport:
    """A report of task "t" on split ``split`` (its data fingerprint), one model per entry,
    whose histories carry per-example outcomes on ``N_TEST`` examples; ``delta``: the gate's
    recorded δ."""
    X = np.array([values[m] for m in values])[None, :, :]
    seeds = list(range(X.shape[2]))
    out = BenchmarkReport.from_arrays(X, tasks=["t"], models=list(values), seeds=seeds,
                                      metric="accuracy")
    for key, history in list(out.histories.items()):
        right = round(history.test[-1] * N_TEST)
        correct = np.arange(N_TEST) < right
        out.histories[key] = dataclasses.replace(history, outcomes={
            history.n_epochs - 1: TestOutcomes("accuracy", correct)})
    out.fingerprints["data"] = {"t": {s: f"{split}{s}" for s in seeds}}
    if delta is not None:
        out.protocol["gates"] = [{"gate": "not_worse", "min_effect": delta}]
    return out


def write(root, commits: list[dict[str, BenchmarkReport]]):
    for i, reports in enumerate(commits):
        folder = root / f"{i:03d}"
        for name, rep in reports.items():
            (folder / "reports" / "test_m").mkdir(parents=True, exist_ok=True)
            rep.to_json(folder / "reports" / "test_m" / f"{name}.json")
        (folder / "commit.json").write_text(json.dumps(
            {"commit": f"{i:02d}" + "cd" * 19, "date": f"2026-11-{i + 1:02d}T12:00:00Z"}))
    return root


A, B, B2 = [0.8, 0.81, 0.79], [0.7, 0.72, 0.71], [0.705, 0.715, 0.7]


def test_reads_count_per_split_and_only_what_is_new(tmp_path) -> None:
    root = write(tmp_path / "h", [
        {"test_a": report({"GCN": A, "GAT": B}, split="old")},     # 2 reads
        {"test_a": report({"GCN": A, "GAT": B2}, split="old")},    # GCN unchanged: 1 read
        {"test_a": report({"GCN": A, "GAT": B2}, split="old")},    # nothing new: 0 reads
        {"test_a": report({"GCN": A, "GAT": B}, split="new")},     # new data: its own split
    ])
    splits = reuse_ledger(load_runs(root))
    assert [(s.fingerprint, s.commits, s.reads, s.n, s.tolerance) for s in splits] == [
        ("old0", 3, 3, N_TEST, 0.1), ("new0", 1, 2, N_TEST, 0.1)]
    old = splits[0]
    assert old.budget == math.floor(N_TEST * 0.1 ** 2) == 2
    assert old.over_budget and old.overfit_bound == pytest.approx(math.sqrt(3 / N_TEST))
    assert not splits[1].over_budget


def test_history_prints_the_ledger_and_names_a_split_past_its_budget(tmp_path, capsys) -> None:
    root = write(tmp_path / "h", [
        {"test_a": report({"GCN": [0.8 + i / 1000, 0.81, 0.79]}, split="s")} for i in range(3)])
    assert main(["history", str(root), "-o", str(tmp_path / "page")]) == 0
    out = capsys.readouterr().out
    assert "test-set reuse" in out and "PAST BUDGET" in out
    assert ("t (split s0) has had 3 gate reads, past its budget of 2 for 200 test examples "
            "at τ 0.1") in out


def test_without_outcomes_or_a_bounded_metric_the_budget_is_unknown(tmp_path) -> None:
    X = np.full((1, 1, 3), 0.5)
    plain = BenchmarkReport.from_arrays(X, tasks=["t"], models=["m"], seeds=range(3),
                                        metric="mae")
    plain.fingerprints["data"] = {"t": {0: "z0", 1: "z1", 2: "z2"}}
    root = write(tmp_path / "h", [{"test_a": plain}])
    (split,) = reuse_ledger(load_runs(root))
    assert (split.n, split.tolerance, split.budget, split.over_budget) == (None, None, None,
                                                                            False)
    assert any("?" in line for line in ledger_lines(load_runs(root)))


def boosting_attack(n: int, k: int, rng: np.random.Generator) -> float:
    """Blum & Hardt's boosting attack on a holdout of ``n`` random ±1 labels: read the exact
    holdout accuracy of ``k`` random classifiers, majority-vote those above 1/2. Its true
    accuracy is 1/2, so its holdout accuracy minus 1/2 is pure overfit."""
    y = rng.integers(0, 2, n) * 2 - 1
    guesses = rng.integers(0, 2, (k, n)) * 2 - 1
    kept = guesses[(guesses == y).mean(axis=1) > 0.5]
    vote = np.where(kept.sum(axis=0) >= 0, 1, -1)
    return float((vote == y).mean() - 0.5)


def test_the_overfit_of_adaptive_reads_grows_as_sqrt_k_over_n_and_the_budget_bounds_it() -> None:
    """The attack's overfit is c·√(k/n) with c ≈ 0.22 at every (n, k) (so √(k/n) is the rate
    and the budget's constant 1 is conservative), stays under τ at the budget floor(n·τ²), and
    passes τ at 25 times the budget: the budget is within a factor of about 20 of a real attack."""
    rng = np.random.default_rng(0)
    ratios = []
    for n, k in ((1000, 100), (4000, 400)):
        bias = np.mean([boosting_attack(n, k, rng) for _ in range(100)])
        ratios.append(bias / math.sqrt(k / n))
    assert all(0.18 < r < 0.27 for r in ratios), ratios
    n, tau = 2000, 0.05
    budget = math.floor(n * tau ** 2)
    assert np.mean([boosting_attack(n, budget, rng) for _ in range(100)]) < tau
    assert np.mean([boosting_attack(n, 25 * budget, rng) for _ in range(50)]) > tau
