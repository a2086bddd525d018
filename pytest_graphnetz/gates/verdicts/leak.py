"""The leak guard: a BETTER that should not be believed before a reviewer looks.

A model trained on its test labels (a mask mix-up, a split that leaks) reads BETTER, and the
advice "refresh baseline" would lock the leak in. A genuine improvement moves the test and the
validation metric alike (both are held-out samples of the same nodes or graphs); a leak moves
the test metric alone. Per BETTER cell, on its paired seeds, with d_s the test gain and v_s the
validation gain of seed s (+ = better, the validation series at the epoch the report's rule
selected), the cell is **suspect** when either

- *validation does not follow*: the one-sided paired t test of mean(d − v) > 0 rejects at
  :data:`LEVEL`, and mean(v) recovers less than :data:`RECOVERED` of mean(d); or
- *beyond the seeds' spread*, for a cell without validation series: mean(d) exceeds
  :data:`SPREAD_SDS` times the one-sided :data:`SPREAD_LEVEL` upper confidence bound of the
  baseline's seed-to-seed sd of the test metric (a gain no seed's luck comes near). The bound
  (χ² on n − 1 degrees of freedom), not the sample sd: at 5 seeds a sample sd is often half
  the true one, and a genuine gain of 7.5 sds then read as 15.

The first rule is a test at level :data:`LEVEL` of "validation gains what test gains", so a
genuine improvement is flagged at most that often (``benchmarks/baseline_replicates.py``
measures it on Cora, docs/gates.md has the table). Where validation follows the gain, a large
gain is a large genuine gain: the spread rule speaks only where there is no validation to ask.
A genuine gain of 7.5 seed sds is flagged by it at most P(χ²_{n−1} < 0.5625·χ²_{0.05, n−1}):
1.7% at 5 seeds, 0.7% at 10, under 0.2% at 20 (the benchmark simulates it).

What the guard cannot see: a leak that lifts validation with test. In transductive link
prediction, message passing over every edge (test edges included) lifts both (+5.9 / +5.2
points on PyG's ``link_pred.py``); such a cell reads an ordinary BETTER.
A suspect cell still reads BETTER (it passes); its Note says why, and a refresh that would keep
it is refused (:mod:`pytest_graphnetz.gates.refreshing.ratchet`) unless the cell is accepted
(``--graphnetz-accept=TASK/MODEL``).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, replace

import numpy as np

from pytest_graphnetz.gates.verdicts.values import CellVerdict
from pytest_graphnetz.report import BenchmarkReport
from pytest_graphnetz.report.epochs import in_unit_interval
from pytest_graphnetz.report.values_form import rule_validation
from pytest_graphnetz.stats import Verdict

# One-sided level of "test gains more than validation": at 0.005 a +5-point leak with flat
# validation was caught in 98.8% of 5-seed cells, at 0.01 in 99.9% (baseline_replicates.py).
LEVEL = 0.01
RECOVERED = 0.5     # validation must recover at least this share of the test gain
# A test gain beyond this many seed sds of the baseline is implausible: on Cora a genuine fix
# (dropout left on at evaluation, removed) gained 7.5 sds (gate_quality_cora's pool).
SPREAD_SDS = 10.0
SPREAD_LEVEL = 0.95  # the seed sd's one-sided upper confidence bound the spread rule uses
ADVICE = "check for test leakage before refreshing"


@dataclass(frozen=True)
class Suspicion:
    """Why a BETTER is suspect: the mean test gain, the mean validation gain (None: no
    validation series), the baseline's seed sd, and which rule fired (``"validation"`` or
    ``"spread"``)."""

    test_gain: float
    val_gain: float | None
    seed_sd: float
    rule: str

    def describe(self, metric: str = "accuracy") -> str:
        """"suspect: test +10.2 pt, validation +0.1 pt: check for test leakage before
        refreshing" (points for metrics in [0, 1], metric units otherwise)."""
        amount = _amount(metric)
        if self.rule == "validation":
            what = f"test {amount(self.test_gain)}, validation {amount(self.val_gain or 0.0)}"
        else:
            what = (f"test {amount(self.test_gain)}, {self.test_gain / self.seed_sd:.1f}× the "
                    f"seeds' sd {amount(self.seed_sd, signed=False)}")
        return f"suspect: {what}: {ADVICE}"

    @property
    def reason(self) -> str:
        return self.describe()


def leak_suspicion(test_gain: Sequence[float] | np.ndarray,
                   val_gain: Sequence[float] | np.ndarray | None, *,
                   base_test: Sequence[float] | np.ndarray) -> Suspicion | None:
    """The guard on one cell's paired seeds: ``test_gain`` d_s and ``val_gain`` v_s (+ =
    better, one per paired seed; None without validation series), ``base_test`` the
    baseline's test values on those seeds. None: nothing suspect (or too few finite seeds)."""
    from pytest_graphnetz.stats.intervals import sd_upper_bound
    from pytest_graphnetz.stats.paired import mean_above_zero_p

    d = np.asarray(test_gain, dtype=float)
    ok = np.isfinite(d)
    v = None if val_gain is None else np.asarray(val_gain, dtype=float)
    if v is not None:
        ok &= np.isfinite(v)
    base = np.asarray(base_test, dtype=float)
    ok &= np.isfinite(base)
    if ok.sum() < 3 or not d[ok].mean() > 0:
        return None
    d, base = d[ok], base[ok]
    gain = float(d.mean())
    sd = float(np.std(base, ddof=1))
    val_mean = None
    if v is not None:
        v = v[ok]
        val_mean = float(v.mean())
        if val_mean < RECOVERED * gain and mean_above_zero_p(d - v) < LEVEL:
            return Suspicion(gain, val_mean, sd, "validation")
    if v is None and sd > 0 \
            and gain > SPREAD_SDS * sd_upper_bound(sd, d.size, confidence_level=SPREAD_LEVEL):
        return Suspicion(gain, val_mean, sd, "spread")
    return None


def mark_suspects(verdicts: Sequence[CellVerdict], candidates: Sequence[BenchmarkReport],
                  baseline: BenchmarkReport) -> list[CellVerdict]:
    """``verdicts`` with every BETTER cell the guard flags marked ``suspect`` (its table Note,
    hence the summary, comment and JSON, and its message say why). ``candidates``: the
    reports that hold the candidate's seeds (an adaptive run's looks: the first report and
    its extensions); ``baseline``: the report the cells were paired with."""
    out = []
    for v in verdicts:
        suspicion = None
        if v.verdict is Verdict.BETTER and v.task in baseline.tasks \
                and v.model in baseline.models:
            suspicion = _cell_suspicion(v, candidates, baseline)
        if suspicion is None:
            out.append(v)
            continue
        out.append(replace(v, suspect=suspicion.describe(v.metric)))
    return out


def _cell_suspicion(v: CellVerdict, candidates: Sequence[BenchmarkReport],
                    baseline: BenchmarkReport) -> Suspicion | None:
    sign = 1.0 if v.higher_is_better else -1.0
    cand_test, cand_val = _per_seed(candidates, v.task, v.model, v.seeds)
    base_test, base_val = _per_seed([baseline], v.task, v.model, v.seeds)
    if cand_test is None or base_test is None:
        return None
    val = None
    if cand_val is not None and base_val is not None and _val_is_metric(candidates, v):
        val = sign * (cand_val - base_val)
    return leak_suspicion(sign * (cand_test - base_test), val, base_test=base_test)


def _per_seed(reports: Sequence[BenchmarkReport], task: str, model: str,
              seeds: Sequence[int]) -> tuple[np.ndarray | None, np.ndarray | None]:
    """Test and validation values of ``seeds`` (under each report's epoch rule) from the
    first report holding each seed; validation None where a report has no series."""
    test, val = {}, {}
    for report in reports:
        if task not in report.tasks or model not in report.models:
            continue
        rule = report.epoch_selection
        held = [s for s in seeds if s in report.seeds and s not in test]
        if not held:
            continue
        values = report.values(task, model, strict=False)
        validation = rule_validation(report, task, model).get(rule)
        for s in held:
            k = report.seeds.index(s)
            test[s] = float(values[k])
            val[s] = None if validation is None else float(validation[k])
    if any(s not in test for s in seeds):
        return None, None
    vals = [val[s] for s in seeds]
    return (np.array([test[s] for s in seeds]),
            None if any(x is None for x in vals) else np.array(vals, dtype=float))


def _val_is_metric(candidates: Sequence[BenchmarkReport], v: CellVerdict) -> bool:
    """Whether the candidate's validation series measures the task's metric (a validation
    loss has other units: its gain cannot be set against the test gain)."""
    for report in candidates:
        for s in v.seeds:
            key = (v.task, v.model, s)
            if key in report.histories:
                return report.histories[key].val_metric is None
    return False


def _amount(metric: str):   # noqa: ANN202 - a small formatter
    points = in_unit_interval(metric)

    def fmt(x: float, signed: bool = True) -> str:
        if points:
            return f"{100 * x:+.1f} pt" if signed else f"{100 * x:.1f} pt"
        return f"{x:+.4g}" if signed else f"{x:.4g}"

    return fmt


__all__ = ["ADVICE", "LEVEL", "RECOVERED", "SPREAD_LEVEL", "SPREAD_SDS", "Suspicion",
           "leak_suspicion", "mark_suspects"]
