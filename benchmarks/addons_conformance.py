"""Each statistical add-on against what it promises, measured on the real code: one row per
promise (what it promises, what it delivers in its worst measured setting with a 95% Wilson
interval, and whether that meets the promise).

The measurements are those of the add-ons' own benchmarks, run smaller here; each row names
the benchmark whose committed results file holds the full run:

- replicates (``refreshing/replicates.py``; ``baseline_replicates.py``): at R = 2 and 3, detection
  of a drop that R = 1 detects about 80% of the time is at least R = 1's, whether the candidate
  shares the baseline run's stream (correlation 0.8) or not; false REGRESSED ≤ α; the same
  through the gate's own sequential walk (looks 10 → 80: false REGRESSED with 80 seeds held,
  detection in the rerun chain), the sampler the invariant harness's rows take
  (``baseline_replicates.replicate_sampler``);
- the leak guard (``gates/verdicts/leak.py``; ``baseline_replicates.py``): a genuine gain of
  7.5 seed sds without validation flagged ≤ 5% at 5, 10 and 20 seeds; a +5-point leak with
  validation flat flagged ≥ 99%;
- calibrate (``gates/calibration/``; ``calibrate_budget.py``): the budget named delivers power
  ≥ 0.8 on fresh seeds in ≥ 80% of the calibrations that name one, with the true power
  crossing 0.8 between two budgets (noise correlated 0.5 and 0.9 across budgets); the salted
  self-check warns in ≤ α of innocent 10-cell calibrations;
- the reuse ledger (``cli/history/ledger.py``; ``ledger_reuse.py``): the last read of an
  adaptive analyst who reads a split only through verdicts overfits it past τ at the bits
  charged in ≤ β of trials, in both verdict regimes.

A row passes when its measured rate's interval does not lie wholly on the wrong side of the
promise (a "≤" promise fails when the interval's low end is above it; a "≥" promise when its
high end is below it; "at least R = 1's" when R's interval lies wholly below R = 1's).
``--quick`` (the test ``tests/quality/test_addons_conformance.py``) uses fewer trials.

    python benchmarks/addons_conformance.py            # writes addons_conformance_results.md
    python benchmarks/addons_conformance.py --quick --out -
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
from _tables import table, wilson  # noqa: E402

ALPHA = 0.05


@dataclass(frozen=True)
class Rate:
    """``hits`` of ``trials``, with its 95% Wilson interval."""

    hits: int
    trials: int

    @property
    def interval(self) -> tuple[float, float]:
        text = wilson(self.hits, self.trials, 4)
        low, high = text.split("[")[1].rstrip("]").split(", ")
        return float(low), float(high)

    def __str__(self) -> str:
        return wilson(self.hits, self.trials, 4)


@dataclass(frozen=True)
class Row:
    """One promise: the add-on, what it promises, its worst measured setting and rate, and
    whether the rate meets the promise (``bound``: the promised rate; ``at_most``: a ceiling,
    else a floor)."""

    addon: str
    promise: str
    setting: str
    rate: Rate
    bound: float
    at_most: bool
    benchmark: str

    @property
    def met(self) -> bool:
        low, high = self.rate.interval
        return low <= self.bound if self.at_most else high >= self.bound


def replicate_rows(trials: int) -> list[Row]:
    import baseline_replicates as br

    within = 0.0061     # the Cora pool's within-seed sd (`final`), baseline_replicates_results
    rows = []
    for shared, name in ((0.8, "same stream (correlation 0.8)"), (0.0, "independent")):
        from scipy import stats as st

        sd1 = within * np.sqrt(2 - 2 * shared)
        hard = sd1 * (st.t.ppf(1 - ALPHA, 9) + st.norm.ppf(0.8)) / np.sqrt(10)
        power = {r: br.stream_rates(shared, r, hard, within, 10, trials, seed=7)[1]
                 for r in (1, 2, 3)}
        worst = min((2, 3), key=lambda r: power[r])
        rows.append(Row("replicates", "R = 2, 3 detect a drop at least as often as R = 1",
                        f"{name}, R = {worst} (R = 1: "
                        f"{Rate(round(power[1] * trials), trials)})",
                        Rate(round(power[worst] * trials), trials),
                        Rate(round(power[1] * trials), trials).interval[0], False,
                        "baseline_replicates.py"))
        alphas = {r: br.stream_rates(shared, r, 0.0, within, 10, trials, seed=8)[0]
                  for r in (1, 2, 3)}
        worst = max(alphas, key=lambda r: alphas[r])
        rows.append(Row("replicates", "false REGRESSED ≤ α = 0.05", f"{name}, R = {worst}",
                        Rate(round(alphas[worst] * trials), trials), ALPHA, True,
                        "baseline_replicates.py"))
    return rows


def replicate_schedule_rows(paths: int) -> list[Row]:
    """Replicates through the gate's own sequential walk (``stats.sequential.run_schedule``,
    looks 10 → 20 → 40 → 80, δ 1 point, the skew guard on): false REGRESSED of a run holding
    80 seeds (every look read) ≤ α, and detection of a drop in the rerun chain at R = 2, 3 at
    least R = 1's, in both regimes."""
    import baseline_replicates as br

    from pytest_graphnetz.stats.boundaries import design
    from pytest_graphnetz.stats.sequential import run_schedule

    plan = design(10, 80)

    def rate(shared: float, r: int, shift: float, every_look: bool, seed: int) -> Rate:
        D = br.replicate_sampler(shared, r)(np.random.default_rng(seed), paths, shift)
        verdicts = run_schedule(D, plan, margin=0.0, min_effect=1.0, every_look=every_look)[0]
        return Rate(int(sum(str(v) == "REGRESSED" for v in verdicts)), paths)

    rows = []
    for shared, name in ((0.8, "same stream (correlation 0.8)"), (0.0, "independent")):
        null = {r: rate(shared, r, 0.0, True, 90 + r) for r in (1, 2, 3)}
        worst = max(null, key=lambda r: null[r].hits)
        rows.append(Row("replicates", "false REGRESSED ≤ α = 0.05 through the gate's schedule "
                        "(80 seeds held, every look read)", f"{name}, R = {worst}", null[worst],
                        ALPHA, True, "baseline_replicates.py"))
        drop = 0.2 if shared else 0.45   # within δ: R = 1 detects it in 40-50% of chains
        power = {r: rate(shared, r, -drop, False, 7) for r in (1, 2, 3)}
        worst = min((2, 3), key=lambda r: power[r].hits)
        rows.append(Row("replicates", "R = 2, 3 detect a drop in the rerun chain at least as "
                        "often as R = 1", f"{name}, −{drop} pt, R = {worst} (R = 1: "
                        f"{power[1]})", power[worst], power[1].interval[0], False,
                        "baseline_replicates.py"))
    return rows


def leak_rows(trials: int) -> list[Row]:
    """At the committed Cora pool's seed sd and paired test/validation covariance."""
    import json

    import baseline_replicates as br

    from pytest_graphnetz.gates.verdicts.leak import leak_suspicion

    pool = br.arrays(json.loads(br.DEFAULT_VALUES.read_text()))
    base, cand = pool["salt 0"], pool[f"salt {br.CANDIDATE_SALT}"]
    cov = np.cov(np.vstack([cand["test"]["final"] - base["test"]["final"],
                            cand["val"]["final"] - base["val"]["final"]]))
    sigma = float(np.std(base["test"]["final"], ddof=1))
    rng = np.random.default_rng(55)
    worst: tuple[int, int] | None = None
    for n in (5, 10, 20):
        draws = rng.multivariate_normal([7.5 * sigma, 0.0], cov, size=(trials, n))
        ref = rng.normal(0.8, sigma, (trials, n))
        flags = sum(leak_suspicion(x[:, 0], None, base_test=b) is not None
                    for x, b in zip(draws, ref, strict=True))
        if worst is None or flags > worst[1]:
            worst = (n, flags)
    assert worst is not None
    rows = [Row("leak guard", "a genuine +7.5 seed sds without validation flagged ≤ 5%",
                f"{worst[0]} seeds (worst of 5, 10, 20)", Rate(worst[1], trials), 0.05, True,
                "baseline_replicates.py")]
    draws = rng.multivariate_normal([0.05, 0.0], cov, size=(trials, 5))
    ref = rng.normal(0.8, sigma, (trials, 5))
    caught = sum(leak_suspicion(x[:, 0], x[:, 1], base_test=b) is not None
                 for x, b in zip(draws, ref, strict=True))
    rows.append(Row("leak guard", "a +5-point leak, validation flat, flagged ≥ 99%",
                    "5 seeds (the hardest of 5, 10, 20)", Rate(caught, trials), 0.99, False,
                    "baseline_replicates.py"))
    return rows


def calibrate_rows(trials: int) -> list[Row]:
    import calibrate_budget as cb

    from pytest_graphnetz.gates.calibration.resolution import BUDGET_LEVEL

    rng = np.random.default_rng(61)
    worst: tuple[str, int, int] | None = None
    for at_150 in (1.084, 1.01):
        ratio = dict(zip(cb.BUDGETS, cb.ratios(at_150), strict=True))
        for rho in (0.5, 0.9):
            picks = cb.named_budgets(rho, at_150, trials, [BUDGET_LEVEL], rng)[BUDGET_LEVEL]
            some = [b for b in picks if b is not None]
            ok = sum(ratio[b] <= 1 for b in some)
            if some and (worst is None or ok / len(some) < worst[1] / worst[2]):
                worst = (f"correlation {rho}, true sd / σ* {at_150} at 150 epochs", ok,
                         len(some))
    assert worst is not None
    rows = [Row("calibrate", "the budget named delivers power ≥ 0.8 in ≥ 80% of the "
                "calibrations that name one", worst[0], Rate(worst[1], worst[2]), 0.8, False,
                "calibrate_budget.py")]
    _, hits = cb.warn_counts(10, trials, rng)
    rows.append(Row("calibrate", "the salted self-check warns in ≤ α = 0.05 of innocent "
                    "calibrations", "10 cells", Rate(hits, trials), ALPHA, True,
                    "calibrate_budget.py"))
    return rows


def ledger_rows(trials: int) -> list[Row]:
    import ledger_reuse as lr

    from pytest_graphnetz.cli.history.ledger import ReuseBudget

    rng = np.random.default_rng(20261203)
    rows = []
    for regime, cuts in lr.REGIMES.items():
        rule = ReuseBudget(answers=len(cuts) + 1)
        past = 0
        for analyst in (lr.boosting, lr.selection):
            runs = np.array([analyst(500, 60, cuts, rule, rng) for _ in range(trials)])
            past = max(past, int(sum(r[0] > rule.tolerance(r[2], 500) for r in runs)))
        rows.append(Row("reuse ledger", "an adaptive analyst's last read overfits past τ at "
                        "the bits charged in ≤ β = 0.05 of trials",
                        f"{regime}, n = 500, 60 reads (worst of boosting, feature selection)",
                        Rate(past, trials), 0.05, True, "ledger_reuse.py"))
    return rows


MEASURES: dict[str, Callable[[int], list[Row]]] = {
    "replicates": replicate_rows, "replicates, schedule": replicate_schedule_rows,
    "leak guard": leak_rows, "calibrate": calibrate_rows, "reuse ledger": ledger_rows}


def all_rows(quick: bool) -> list[Row]:
    trials = {"replicates": 4000 if quick else 20_000,
              "replicates, schedule": 2000 if quick else 20_000,
              "leak guard": 500 if quick else 4000, "calibrate": 300 if quick else 2000,
              "reuse ledger": 60 if quick else 300}
    return [row for name, measure in MEASURES.items() for row in measure(trials[name])]


def render(rows: Sequence[Row], argv: Sequence[str]) -> str:
    body = [[r.addon, r.promise, r.setting, str(r.rate), "met" if r.met else "NOT MET",
             f"`{r.benchmark}`"] for r in rows]
    return "\n".join([
        "# Each add-on against what it promises", "",
        f"Written by `{' '.join(['python benchmarks/addons_conformance.py', *argv])}`. Measured on "
        "the real code in each add-on's worst measured setting; rates with 95% Wilson "
        "intervals; the last column names the benchmark whose results file holds the full "
        "run.", "",
        *table(["add-on", "promises", "worst setting measured", "delivers", "", "benchmark"],
               body), ""])


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true")
    parser.add_argument("--out", default=str(HERE / "addons_conformance_results.md"))
    args = parser.parse_args(argv)
    rows = all_rows(args.quick)
    text = render(rows, list(sys.argv[1:] if argv is None else argv))
    print(text)
    if args.out != "-":
        Path(args.out).write_text(text, encoding="utf-8")
    return 0 if all(r.met for r in rows) else 1


if __name__ == "__main__":
    raise SystemExit(main())
