"""The test-set reuse ledger of `graphnetz history`: distinct gate reads per split fingerprint
across commits, the budget (Dwork et al. 2015's description-length bound, against scipy's
binomial tail), and by simulation that an analyst who reads a split through verdicts overfits
it within the bound while a fresh split shows no bias."""

from __future__ import annotations

import dataclasses
import json
import math

import numpy as np
import pytest
from scipy import stats as sps

from pytest_graphnetz import BenchmarkReport
from pytest_graphnetz.base.outcomes import TestOutcomes
from pytest_graphnetz.cli.history.ledger import ReuseBudget, ledger_lines, reuse_ledger
from pytest_graphnetz.cli.history.trend import load_runs
from pytest_graphnetz.cli.main import main

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


def test_reads_count_per_split_across_commits_and_only_what_is_new(tmp_path) -> None:
    root = write(tmp_path / "h", [
        {"test_a": report({"GCN": A, "GAT": B}, split="old")},     # 2 reads
        {"test_a": report({"GCN": A, "GAT": B2}, split="old"),     # GCN unchanged: 1 read
         "test_b": report({"GCN": B}, split="old")},               # another test, same split: 1
        {"test_a": report({"GCN": A, "GAT": B2}, split="old")},    # nothing new: 0 reads
        {"test_a": report({"GCN": A, "GAT": B}, split="new")},     # new data: its own split
    ])
    splits = reuse_ledger(load_runs(root))
    assert [(s.fingerprint, s.commits, s.reads, s.n) for s in splits] == [
        ("old0", 3, 4, N_TEST), ("new0", 1, 2, N_TEST)]
    assert all(s.budget == ReuseBudget().reads == 6 for s in splits)
    assert not any(s.over_budget for s in splits)
    old = splits[0]
    assert old.looseness == pytest.approx(math.sqrt(1 + 3 * math.log(7) / math.log(40)))
    assert old.tolerance == pytest.approx(
        math.sqrt((3 * math.log(7) + math.log(40)) / (2 * N_TEST)))


@pytest.mark.parametrize(("factor", "beta", "answers"), [(2.0, 0.05, 7), (1.5, 0.05, 5),
                                                         (3.0, 0.01, 7), (1.1, 0.2, 2)])
def test_the_budget_is_the_last_read_whose_bound_stays_within_factor_of_a_fresh_one(
        factor, beta, answers) -> None:
    """Solved independently: the k-th read's τ is the smallest with 2^b·P(|p̂ − p| > τ) ≤ β under
    Hoeffding, b = (k − 1)·log₂ K; the budget is the last k whose τ is within ``factor`` of
    the first's (for every n)."""
    rule = ReuseBudget(factor=factor, beta=beta, answers=answers)
    for n in (200, 1000, 50_000):
        def tau(k: int, n: int = n) -> float:
            return math.sqrt((math.log(2 * answers ** (k - 1)) - math.log(beta)) / (2 * n))
        within = [k for k in range(1, 500) if tau(k) <= factor * tau(1) * (1 + 1e-12)]
        assert rule.reads == max(within)
        assert rule.tolerance(rule.reads, n) <= factor * rule.tolerance(1, n)
        assert rule.tolerance(rule.reads + 1, n) > factor * rule.tolerance(1, n)


def test_a_fresh_reads_bound_covers_the_binomial_tail() -> None:
    """τ(0) is Hoeffding's: scipy's exact binomial tail at the worst p = 1/2 stays below β."""
    rule = ReuseBudget()
    for n in (200, 1000, 4000):
        tau = rule.tolerance(1, n)
        tail = sps.binom.sf(math.floor(n * (0.5 + tau)), n, 0.5) * 2
        assert tail <= rule.beta


def test_history_prints_the_ledger_and_names_a_split_past_its_budget(tmp_path, capsys) -> None:
    """A real `graphnetz history` run: nine commits each change the model on split s (nine
    distinct reads, past the default budget of 6); a wider factor lifts the budget; the page
    carries the same table."""
    root = write(tmp_path / "h", [
        *({"test_a": report({"GCN": [0.8 + i / 1000, 0.81, 0.79]}, split="s")} for i in range(9)),
        {"test_a": report({"GCN": A, "GAT": B}, split="fresh")}])   # new data: counted apart
    assert main(["history", str(root), "-o", str(tmp_path / "page")]) == 0
    out = capsys.readouterr().out
    assert "test-set reuse" in out and "PAST BUDGET" in out
    rows = {line.split()[1]: line.split()[2:5] + line.split()[-1:] for line in out.splitlines()
            if line.startswith("t ") and "x " in line}
    assert rows == {"s0": ["9", "9", "6", "BUDGET"], "fresh0": ["1", "2", "6", "ok"]}
    loose = ReuseBudget().looseness(9)
    assert (f"t (split s0): 9 gate reads, past its budget of 6: the latest read's guarantee is "
            f"{loose:.2f} times as loose as a fresh split's") in out
    assert "Rotate or refresh the test split" in out
    page = (tmp_path / "page" / "index.html").read_text()
    assert "<h2>Test-set reuse</h2>" in page and "PAST BUDGET" in page
    assert f"{loose:.2f}x" in page

    assert main(["history", str(root), "-o", str(tmp_path / "page2"),
                 "--reuse-factor", "3"]) == 0
    out = capsys.readouterr().out
    assert "PAST BUDGET" not in out and "budget 16 reads" in out
    with pytest.raises(SystemExit):
        main(["history", str(root), "-o", str(tmp_path / "page3"), "--reuse-factor", "1"])


def test_without_outcomes_the_budget_holds_and_the_tolerance_is_unknown(tmp_path) -> None:
    X = np.full((1, 1, 3), 0.5)
    plain = BenchmarkReport.from_arrays(X, tasks=["t"], models=["m"], seeds=range(3),
                                        metric="mae")
    plain.fingerprints["data"] = {"t": {0: "z0", 1: "z1", 2: "z2"}}
    root = write(tmp_path / "h", [{"test_a": plain}])
    (split,) = reuse_ledger(load_runs(root))
    assert (split.n, split.tolerance, split.budget, split.over_budget) == (None, None, 6, False)
    row = ledger_lines([split])[1].splitlines()[-1].split()
    assert row == ["t", "z0", "1", "1", "6", "1.00x", "?", "?", "?", "ok"]


CUTS = [-1.64, -0.5, 0.5, 1.64]   # five verdict-like levels of a z score


def verdict_attack(n: int, reads: int, rng: np.random.Generator) -> tuple[float, float]:
    """An analyst who reads a holdout of ``n`` random ±1 labels only through verdicts:
    ``reads`` − 1 random classifiers, each answered with one of five levels of its holdout z
    score; the last read is their vote weighted by level (Blum & Hardt's boosting attack,
    answered by verdicts). Every classifier's true accuracy is 1/2, so its accuracy minus 1/2
    is overfit: returned on the reused holdout and on a fresh one."""
    y, fresh = (rng.integers(0, 2, n) * 2 - 1 for _ in range(2))
    guesses = rng.integers(0, 2, (reads - 1, n)) * 2 - 1
    z = ((guesses == y).mean(axis=1) - 0.5) * 2 * math.sqrt(n)
    vote = np.where((np.digitize(z, CUTS) - 2) @ guesses >= 0, 1, -1)
    return float((vote == y).mean() - 0.5), float((vote == fresh).mean() - 0.5)


def test_an_analyst_reading_verdicts_overfits_a_reused_split_within_the_bound() -> None:
    """At the budget and well past it, the overfit of the k-th read stays under τ_k in at least
    1 − β of trials and reaches a quarter of it on average (the bound is not vacuous); past the
    budget the overfit exceeds what a fresh split allows (τ_1); on a fresh split the same
    classifier shows no bias."""
    rule, n, trials = ReuseBudget(answers=len(CUTS) + 1), 500, 200
    rng = np.random.default_rng(7)
    fresh_bound = rule.tolerance(1, n)
    for reads in (rule.reads, 60):
        runs = np.array([verdict_attack(n, reads, rng) for _ in range(trials)])
        reused, fresh = runs[:, 0], runs[:, 1]
        bound = rule.tolerance(reads, n)
        assert (reused > bound).mean() <= rule.beta
        assert reused.mean() >= 0.25 * bound
        assert abs(fresh.mean()) <= 3 * fresh.std(ddof=1) / math.sqrt(trials)
        assert (fresh > fresh_bound).mean() <= rule.beta
        if reads == rule.reads:
            assert np.quantile(reused, 0.95) <= rule.factor * fresh_bound
        else:
            assert reused.mean() > fresh_bound
