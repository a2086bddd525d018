"""The test-set reuse ledger of `graphnetz history`: distinct gate reads per split fingerprint
across commits, each charged by what its verdict reveals (1 bit when it repeats the cell's last
verdict); the bound (Dwork et al. 2015's description-length bound, against scipy's binomial
tail and an independent root solve); PAST BUDGET only when the reuse term exceeds a share of
δ, and a split too small for δ from the first read named as such. By simulation, that an
analyst who reads a split through verdicts overfits it within the bound at the bits charged:
tests/quality/test_ledger_budget.py."""

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
from pytest_graphnetz.stats.comparison import Verdict

N_TEST = 200   # test examples of the split


def report(values: dict[str, list[float]], *, split: str, delta: float | None = 0.1,
           n: int = N_TEST) -> BenchmarkReport:
    """A report of task "t" on split ``split`` (its data fingerprint), one model per entry,
    whose histories carry per-example outcomes on ``n`` examples; ``delta``: the gate's
    recorded δ."""
    X = np.array([values[m] for m in values])[None, :, :]
    seeds = list(range(X.shape[2]))
    out = BenchmarkReport.from_arrays(X, tasks=["t"], models=list(values), seeds=seeds,
                                      metric="accuracy")
    for key, history in list(out.histories.items()):
        right = round(history.test[-1] * n)
        correct = np.arange(n) < right
        out.histories[key] = dataclasses.replace(history, outcomes={
            history.n_epochs - 1: TestOutcomes("accuracy", correct)})
    out.fingerprints["data"] = {"t": {s: f"{split}{s}" for s in seeds}}
    if delta is not None:
        out.protocol["gates"] = [{"gate": "not_worse", "min_effect": delta}]
    return out


def write(root, commits: list[dict[str, BenchmarkReport]],
          verdicts: list[dict[str, str]] | None = None):
    """One folder per commit; ``verdicts``: per commit, model -> the verdict of test_a's
    cell ("t", model), written as --graphnetz-json writes it."""
    for i, reports in enumerate(commits):
        folder = root / f"{i:03d}"
        for name, rep in reports.items():
            (folder / "reports" / "test_m").mkdir(parents=True, exist_ok=True)
            rep.to_json(folder / "reports" / "test_m" / f"{name}.json")
        if verdicts is not None:
            rows = [{"test": "test_m.py::test_a", "task": "t", "model": m, "verdict": v}
                    for m, v in verdicts[i].items()]
            (folder / "graphnetz-verdicts.json").write_text(json.dumps({"rows": rows}))
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
    assert [(s.fingerprint, s.commits, s.reads, s.n, s.delta) for s in splits] == [
        ("old0", 3, 4, N_TEST, 0.1), ("new0", 1, 2, N_TEST, 0.1)]
    old = splits[0]
    # no verdict file: each read is charged a whole verdict, log2 7 bits
    assert old.bits == pytest.approx(4 * math.log2(7))
    assert old.tolerance == pytest.approx(
        math.sqrt((4 * math.log(7) + math.log(40)) / (2 * N_TEST)))
    assert old.reuse == pytest.approx(old.tolerance - math.sqrt(math.log(40) / (2 * N_TEST)))


def test_a_read_costs_what_its_verdict_reveals() -> None:
    """The code is a prefix code fixed in advance (Kraft's sum is 1 whatever came before): a
    verdict that repeats the cell's last (NOT WORSE for a first read) costs 1 bit."""
    rule = ReuseBudget()
    verdicts = [str(v) for v in Verdict]
    for previous in (None, *verdicts):
        assert sum(2 ** -rule.cost(v, previous) for v in verdicts) == pytest.approx(1.0)
    assert rule.cost("NOT WORSE", None) == rule.cost("BETTER", "BETTER") == 1.0
    assert rule.cost("REGRESSED", "NOT WORSE") == pytest.approx(1 + math.log2(6))
    assert rule.cost(None, "NOT WORSE") == pytest.approx(math.log2(7))


@pytest.mark.parametrize(("share", "beta", "n", "delta"), [(0.5, 0.05, 1000, 0.05),
                                                           (0.25, 0.01, 50_000, 0.01),
                                                           (1.0, 0.2, 2_200_000, 0.01)])
def test_the_bound_and_the_budget_solve_the_description_length_inequality(
        share, beta, n, delta) -> None:
    """Solved independently (scipy's brentq): τ(b) is the τ at which 2^b·2·exp(−2τ²n) = β,
    and the budget the b at which τ(b) − τ(0) = share·δ."""
    from scipy.optimize import brentq

    rule = ReuseBudget(share=share, beta=beta)

    def tau(b: float) -> float:
        return brentq(lambda t: b * math.log(2) + math.log(2) - 2 * t * t * n - math.log(beta),
                      0.0, 10.0)
    for b in (0.0, 1.0, 7.5, 40.0):
        assert rule.tolerance(b, n) == pytest.approx(tau(b), rel=1e-9)
    budget = rule.budget_bits(n, delta)
    assert tau(budget) - tau(0) == pytest.approx(share * delta, rel=1e-6)
    assert rule.examples_for(delta) == math.ceil(brentq(
        lambda m: 2 * math.exp(-2 * delta * delta * m) - beta, 1, 1e9))


def test_a_fresh_reads_bound_covers_the_binomial_tail() -> None:
    """τ(0) is Hoeffding's: scipy's exact binomial tail at the worst p = 1/2 stays below β."""
    rule = ReuseBudget()
    for n in (200, 1000, 4000):
        tau = rule.tolerance(0, n)
        tail = sps.binom.sf(math.floor(n * (0.5 + tau)), n, 0.5) * 2
        assert tail <= rule.beta


def test_history_speaks_only_when_it_matters(tmp_path, capsys) -> None:
    """A real `graphnetz history` run over three splits of the same ten commits: a large one
    (20,000 examples, δ 5 points) read ten times, every verdict NOT WORSE: ok; a 200-example
    one (δ 10 points) whose verdicts keep changing: PAST BUDGET, in red on the page; a
    120-example one: too small for δ from the first read, the remedy a larger test set."""
    commits = []
    for i in range(10):
        value = [0.8 + i / 1000, 0.81, 0.79]
        commits.append({"test_a": report({"GCN": value}, split="big", delta=0.05, n=20_000),
                        "test_b": report({"GCN": value}, split="mid", n=200),
                        "test_c": report({"GCN": value}, split="tiny", n=120)})
    changing = ["NOT WORSE", "BETTER", "INCONCLUSIVE", "REGRESSED"]
    root = write(tmp_path / "h", commits,
                 [{"GCN": "NOT WORSE"} for _ in range(10)])
    for i in range(10):   # test_b's verdicts (another test: its own rows)
        path = root / f"{i:03d}" / "graphnetz-verdicts.json"
        rows = json.loads(path.read_text())["rows"]
        rows.append({"test": "test_m.py::test_b", "task": "t", "model": "GCN",
                     "verdict": changing[i % 4]})
        path.write_text(json.dumps({"rows": rows}))
    assert main(["history", str(root), "-o", str(tmp_path / "page")]) == 0
    out = capsys.readouterr().out
    splits = {s.fingerprint: s for s in reuse_ledger(load_runs(root))}
    big, mid, tiny = splits["big0"], splits["mid0"], splits["tiny0"]
    assert (big.reads, big.bits, big.status) == (10, 10.0, "ok")
    assert big.budget == pytest.approx(ReuseBudget().budget_bits(20_000, 0.05))
    assert mid.bits == pytest.approx(1 + 9 * (1 + math.log2(6)))
    assert mid.status == "PAST BUDGET" and mid.reuse > 0.05
    assert tiny.status == "TOO SMALL FOR δ" and tiny.fresh_tolerance > 0.1 > big.reuse
    rows = {line.split()[1]: line.split() for line in out.splitlines() if line.startswith("t ")}
    assert rows["big0"][-1] == "ok" and rows["mid0"][-2:] == ["PAST", "BUDGET"]
    assert "mid0): 10 gate reads revealed 33 bits, past its budget of" in out
    assert "Rotate or refresh the test split" in out
    assert ("tiny0): 120 test examples bound even a fresh read only to ±0.124" in out
            and "The remedy is a larger test set (about 185 examples" in out)
    assert out.count("Rotate or refresh") == 1
    page = (tmp_path / "page" / "index.html").read_text()
    assert page.count('<span class="drift">PAST BUDGET</span>') == 1
    assert '<span class="muted">TOO SMALL FOR δ</span>' in page
    assert '<p class="muted">t (split tiny0): 120 test examples' in page
    assert '<p class="drift">t (split mid0): 10 gate reads' in page
    # a wider share lifts the budget; δ can be set for every split
    assert main(["history", str(root), "-o", str(tmp_path / "page2"), "--reuse-share", "3"]) == 0
    assert "PAST BUDGET" not in capsys.readouterr().out.split("docs/history-bisect.md):")[1]
    assert main(["history", str(root), "-o", str(tmp_path / "page3"),
                 "--reuse-delta", "0.5"]) == 0
    out = capsys.readouterr().out
    assert "TOO SMALL" not in out.split("docs/history-bisect.md):")[1]
    with pytest.raises(SystemExit):
        main(["history", str(root), "-o", str(tmp_path / "page4"), "--reuse-share", "0"])


def test_without_outcomes_the_bound_is_unknown_and_nothing_is_flagged(tmp_path) -> None:
    X = np.full((1, 1, 3), 0.5)
    plain = BenchmarkReport.from_arrays(X, tasks=["t"], models=["m"], seeds=range(3),
                                        metric="mae")
    plain.fingerprints["data"] = {"t": {0: "z0", 1: "z1", 2: "z2"}}
    root = write(tmp_path / "h", [{"test_a": plain}])
    (split,) = reuse_ledger(load_runs(root))
    assert (split.n, split.delta, split.tolerance, split.budget, split.over_budget) == (
        None, None, None, None, False)
    row = ledger_lines([split])[1].splitlines()[-1].split()
    assert row == ["t", "z0", "1", "1", "2.8", "—", "?", "?", "?", "?", "?", "?"]
