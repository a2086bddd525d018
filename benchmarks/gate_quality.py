"""Gate quality: how often each regression gate raises a false alarm, and how often it catches
a real regression, measured on real GNN training.

Every simulated pull request compares a baseline model with a candidate on its own fresh block
of S seeds (the same S seeds on both sides, so the sides pair by seed). Candidates are either
*innocent* (they change the random streams but not the model's quality) or *regressions* whose
true effect is measured first, on every seed of the pool. Each gate sees the same trials.

Cost control: each (variant, seed) is trained once, over a pool of P seeds; the trials at seed
count S are the disjoint blocks ``pool[k*S:(k+1)*S]``, so trials at one S share no run. The
S = 5, 10 and 20 trials are nested in the same pool, and every candidate is compared with the
same baseline runs (so rates of two candidates are correlated; each rate on its own is a rate
over independent trials). Runs go through ``run_benchmark``'s per-triple cache, so a rerun or
a resumed crash trains nothing twice.

    python benchmarks/gate_quality.py --quick     # small pools: a smoke run of a few minutes
    python benchmarks/gate_quality.py             # the measurement behind docs/why-paired.md

Besides the REGRESSED rates of each gate, it measures the verdicts of ``assert_not_worse`` with
δ = ``min_effect`` = 1 point at S = 10 seeds: how often innocent changes read NOT WORSE, each
regression REGRESSED, and regressions larger than δ (wrongly) NOT WORSE. The same verdicts
come from three designs on the same 20-seed trials: adaptive seeds 5..20 (the
library's default group-sequential design) against fixed 10 and fixed 20 seeds, with the
candidate seed-trainings each spends per cell.

Writes the tables and findings to ``benchmarks/gate_quality_results.md`` (``--out``); a
``--quick`` run writes ``.graphnetz/gate_quality_quick.md`` instead, so a smoke run never
overwrites the committed results.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import math
import sys
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np

ALPHA = 0.05
SEED_COUNTS = (5, 10, 20)
POINT = 0.01  # one accuracy point: metrics are fractions in [0, 1]
PAIRED_TESTS = ("paired-t", "wilcoxon", "permutation")
POINT_GAPS = (0, 1, 2)  # point-gap gates: fail when the mean drops by more than this many points
MIN_EFFECT = POINT  # δ of assert_not_worse's verdict table: one accuracy point
VERDICT_S = 10  # seeds per side of the verdict table
# Random S-seed subsets of the pool, for the verdict shares it implies: 100 per disjoint block,
# at most 2,000 (each is a real gate call, ~2 ms).
RESAMPLED_TRIALS = 2000
VERDICTS = ("REGRESSED", "NOT WORSE", "BETTER", "INCONCLUSIVE")
# assert_not_worse's seed designs compared on the same trials: (name, MIN, MAX).
# A one-look design (MIN = MAX) is the fixed paired t test at that many seeds.
DESIGNS = (("adaptive 5..20", 5, 20), ("fixed 10", 10, 10), ("fixed 20", 20, 20))
DESIGN_S = 20  # seeds per trial of the design table: the largest MAX

# The gates compared on every trial, in table order.
GATE_NAMES = (
    *(f"paired {t}" for t in PAIRED_TESTS),
    "Welch (unpaired)",
    *(f"gap > {g} pt" for g in POINT_GAPS),
    "single seed",
)


# -- models: the baseline, two innocent changes, one narrower (regressed) model --------------

HIDDEN = 16
NARROW_HIDDEN = 4


def _gcn(in_channels: int, out_channels: int, *, hidden: int = HIDDEN, reverse: bool = False):
    """A 2-layer GCN (dropout 0.5). ``reverse`` builds the second layer first (an innocent
    change: the initialisation draws land on other layers, the architecture is the same)."""
    import torch
    from torch_geometric.nn import GCNConv

    class GCN(torch.nn.Module):
        def __init__(self) -> None:
            super().__init__()
            if reverse:
                self.conv2 = GCNConv(hidden, out_channels, cached=True)
                self.conv1 = GCNConv(in_channels, hidden, cached=True)
            else:
                self.conv1 = GCNConv(in_channels, hidden, cached=True)
                self.conv2 = GCNConv(hidden, out_channels, cached=True)

        def forward(self, x, edge_index):
            x = torch.nn.functional.dropout(x, p=0.5, training=self.training)
            x = self.conv1(x, edge_index).relu()
            x = torch.nn.functional.dropout(x, p=0.5, training=self.training)
            return self.conv2(x, edge_index)

    return GCN()


def make_base(in_channels: int, out_channels: int):
    return _gcn(in_channels, out_channels)


def make_extra_draw(in_channels: int, out_channels: int):
    """Innocent: three extra draws from torch's generator before initialisation."""
    import torch

    torch.rand(3)
    return _gcn(in_channels, out_channels)


def make_reordered(in_channels: int, out_channels: int):
    """Innocent: the same layers, built in the other order."""
    return _gcn(in_channels, out_channels, reverse=True)


def make_narrow(in_channels: int, out_channels: int):
    """Regression: a narrower hidden layer."""
    return _gcn(in_channels, out_channels, hidden=NARROW_HIDDEN)


class DropTrainLabels:
    """A loader bug: silently drops ``fraction`` of the training labels of ``loader``'s data.

    Which nodes lose their label is drawn from the benchmark seed (its own generator, so the
    global streams the runner reseeds are untouched).
    """

    def __init__(self, loader: Callable, fraction: float = 0.25) -> None:
        self.loader = loader
        self.fraction = fraction

    def __call__(self, root: str, *, seed: int):
        import torch

        data = self.loader(root, seed=seed)
        train = data.train_mask.nonzero().view(-1)
        gen = torch.Generator().manual_seed(10_007 + int(seed))
        n_drop = int(round(self.fraction * train.numel()))
        dropped = train[torch.randperm(train.numel(), generator=gen)[:n_drop]]
        data.train_mask = data.train_mask.clone()
        data.train_mask[dropped] = False
        return data


# -- the plan: which task, how many seeds, which candidates -----------------------------------


@dataclass(frozen=True)
class Candidate:
    """A simulated change: a model factory and the task it is trained on (``None``: the base)."""

    name: str
    innocent: bool
    model: Callable
    task_change: str | None = None  # "drop_labels" or "epochs=<n>"


CANDIDATES = (
    Candidate("extra draws", True, make_extra_draw),
    Candidate("layers reordered", True, make_reordered),
    # regressions, smallest first (sizes measured: see the results file)
    Candidate("labels -25%", False, make_base, "drop_labels"),
    Candidate("fewer epochs", False, make_base, "fewer_epochs"),
    Candidate(f"hidden {NARROW_HIDDEN}", False, make_narrow),
)


@dataclass(frozen=True)
class Plan:
    """One measurement: a catalogue task, its epochs, the seed pool and the short-epoch count."""

    task: str
    epochs: int
    pool: int
    short_epochs: int
    seed_offset: int = 1000  # clear of the seeds 0..N-1 that tests and examples use


# csbm_homophilous at 100 epochs (test accuracy has plateaued by epoch ~70: 0.777 at 100 vs
# 0.780 at 200 over 16 seeds), half the cost of its 200-epoch default.
# Karate (the smoke case) at 100 epochs as well.
QUICK = (Plan("karate", epochs=100, pool=30, short_epochs=10),
         Plan("csbm_homophilous", epochs=100, pool=20, short_epochs=40))
FULL = (Plan("csbm_homophilous", epochs=100, pool=200, short_epochs=40),
        Plan("karate", epochs=100, pool=100, short_epochs=10))


# -- pure parts: trials, gates, rates ---------------------------------------------------------


def seed_blocks(n_pool: int, S: int) -> list[slice]:
    """The disjoint trials of S seeds in a pool of ``n_pool``: ``[slice(0, S), slice(S, 2S)...]``
    (a remainder shorter than S is left out)."""
    if S < 1:
        raise ValueError(f"`S` must be >= 1, got {S}")
    return [slice(k * S, (k + 1) * S) for k in range(n_pool // S)]


def gate_fails(name: str, candidate: np.ndarray, baseline: np.ndarray) -> bool:
    """Whether gate ``name`` fails a PR whose per-seed values are ``candidate`` and
    ``baseline`` (both shape [S], paired by position, higher is better)."""
    from pytest_graphnetz import stats
    from pytest_graphnetz.stats.decisions import DecisionSettings, compare

    if name.startswith("paired "):
        settings = DecisionSettings(kind="not_worse", test=name.removeprefix("paired "),
                                    margin=0.0, alpha=ALPHA)
        result = compare(candidate, baseline, settings, higher_is_better=True, rng=0)
        return result.decision.verdict == stats.Verdict.REGRESSED
    if name == "Welch (unpaired)":
        settings = DecisionSettings(kind="not_worse", test="welch", margin=0.0, alpha=ALPHA)
        result = compare(candidate, baseline, settings, higher_is_better=True, rng=0)
        return result.decision.verdict == stats.Verdict.REGRESSED
    if name.startswith("gap > "):
        points = float(name.removeprefix("gap > ").removesuffix(" pt"))
        # the gap of means over the same seeds: what a CI threshold on the mean checks
        return float(np.mean(candidate) - np.mean(baseline)) < -points * POINT
    if name == "single seed":
        return bool(candidate[0] < baseline[0])
    raise KeyError(f"no gate {name!r}; gates: {GATE_NAMES}")


@dataclass(frozen=True)
class Rate:
    """``k`` of ``n`` trials failed the gate; ``low``/``high``: the 95% Wilson interval."""

    k: int
    n: int
    low: float
    high: float

    @property
    def rate(self) -> float:
        return self.k / self.n

    def __str__(self) -> str:
        return f"{100 * self.rate:.0f}% [{100 * self.low:.0f}, {100 * self.high:.0f}]"


def rate(k: int, n: int) -> Rate:
    """``k`` failures of ``n`` trials with its 95% Wilson interval."""
    from pytest_graphnetz.stats.heldout import wilson_interval

    ci = wilson_interval(k, n)
    return Rate(k, n, float(ci.low), float(ci.high))


def trial_rates(candidate: np.ndarray, baseline: np.ndarray, S: int,
                gates: Sequence[str] = GATE_NAMES) -> dict[str, Rate]:
    """Per gate, the failure rate over the disjoint S-seed trials of the pools ``candidate``
    and ``baseline`` (shape [P], paired by position)."""
    blocks = seed_blocks(len(candidate), S)
    return {g: rate(sum(gate_fails(g, candidate[b], baseline[b]) for b in blocks), len(blocks))
            for g in gates}


def variance_reduction(candidate: np.ndarray, baseline: np.ndarray) -> float:
    """var of the unpaired difference over var of the paired one: (var c + var b) / var(c - b)
    (arrays of shape [P], paired by position)."""
    paired = np.var(candidate - baseline, ddof=1)
    unpaired = np.var(candidate, ddof=1) + np.var(baseline, ddof=1)
    return float(unpaired / paired) if paired > 0 else math.inf


def verdict(candidate: np.ndarray, baseline: np.ndarray, *,
            min_effect: float = MIN_EFFECT) -> str:
    """The verdict of ``assert_not_worse`` (paired t, margin 0, δ = ``min_effect``, α) on one
    PR whose per-seed values are ``candidate`` and ``baseline`` (shape [S], paired by position,
    higher is better), judged alone at α: the one-look walk the gate takes, its skew guard
    included."""
    from pytest_graphnetz.stats.boundaries import single_look
    from pytest_graphnetz.stats.sequential import run_schedule

    d = (np.asarray(candidate, dtype=float) - np.asarray(baseline, dtype=float))[None, :]
    verdicts, _ = run_schedule(d, single_look(d.shape[1], alpha=ALPHA), margin=0.0,
                               min_effect=min_effect)
    return str(verdicts[0])


def resampled_trials(n_pool: int, S: int, n: int, seed: int = 0) -> list[np.ndarray]:
    """``n`` random S-seed subsets (without replacement within a subset) of a pool of ``n_pool``:
    overlapping trials, for the verdict shares the pool implies (no independence, so no CI)."""
    rng = np.random.default_rng(seed)
    return [rng.choice(n_pool, size=S, replace=False) for _ in range(n)]


def verdict_counts(candidate: np.ndarray, baseline: np.ndarray,
                   trials: Sequence[np.ndarray | slice]) -> dict[str, int]:
    """How many of ``trials`` (index arrays or slices into the pools ``candidate`` and
    ``baseline``, shape [P]) end in each verdict."""
    counts = dict.fromkeys(VERDICTS, 0)
    for idx in trials:
        name = verdict(candidate[idx], baseline[idx])
        counts[name] = counts.get(name, 0) + 1
    return counts


def passes_as_safe(counts: Mapping[str, int]) -> int:
    """Trials read as "not worse by δ": NOT WORSE, or BETTER (which implies it)."""
    return counts["NOT WORSE"] + counts["BETTER"]


def design_verdicts(candidate: np.ndarray, baseline: np.ndarray,
                    trials: Sequence[np.ndarray | slice], min_seeds: int,
                    max_seeds: int) -> tuple[np.ndarray, np.ndarray]:
    """Per trial (index arrays or slices into the pools ``candidate`` and ``baseline``, shape
    [P], each of at least ``max_seeds`` seeds in the order they would be trained): the verdict of
    ``assert_not_worse``'s design ``min_seeds..max_seeds`` (paired t, margin 0, δ = ``MIN_EFFECT``,
    α) and the candidate seeds it trained. Returns a :class:`Verdict` object array and an int
    array, both shape [trials]."""
    from pytest_graphnetz.stats.boundaries import design as schedule_design
    from pytest_graphnetz.stats.boundaries import single_look
    from pytest_graphnetz.stats.sequential import run_schedule

    D = np.stack([candidate[idx] - baseline[idx] for idx in trials])
    # a fixed design (MIN = MAX) is a run judged alone at α, the figures' reference
    design = (single_look(max_seeds, alpha=ALPHA) if min_seeds == max_seeds
              else schedule_design(min_seeds, max_seeds, alpha=ALPHA))
    return run_schedule(D, design, margin=0.0, min_effect=MIN_EFFECT)


@dataclass(frozen=True)
class DesignOutcome:
    """Over ``n`` trials of one candidate under one design: ``regressed`` ended REGRESSED,
    ``passed`` NOT WORSE or BETTER (not worse by δ), and ``seeds`` is the mean number of
    candidate seeds trained per cell (the baseline holds them all already)."""

    regressed: int
    passed: int
    n: int
    seeds: float


def design_outcomes(values: Mapping[str, Mapping[str, np.ndarray]],
                    trials: Sequence[np.ndarray | slice]) -> dict[str, dict[str, DesignOutcome]]:
    """``[design][candidate]``: each of :data:`DESIGNS` on the same ``trials`` (of
    ``DESIGN_S`` seeds each) of every candidate's final-epoch pool against the baseline's."""
    from pytest_graphnetz.stats import Verdict

    base = values["baseline"]["final"]
    out: dict[str, dict[str, DesignOutcome]] = {}
    for name, lo, hi in DESIGNS:
        out[name] = {}
        for c in CANDIDATES:
            v, seeds = design_verdicts(values[c.name]["final"], base, trials, lo, hi)
            passed = np.isin(v, [Verdict.NOT_WORSE, Verdict.BETTER])
            out[name][c.name] = DesignOutcome(int(np.sum(v == Verdict.REGRESSED)),
                                              int(np.sum(passed)), len(v), float(seeds.mean()))
    return out


# -- training: every (variant, seed) once, through the runner and its cache ----------------


def candidate_tasks(plan: Plan) -> dict[str | None, object]:
    """The Task each task change trains on: ``None`` is the catalogue task itself."""
    from pytest_graphnetz.runner.tasks import resolve_tasks

    base = dataclasses.replace(resolve_tasks([plan.task])[plan.task], epochs=plan.epochs)
    return {
        None: base,
        "drop_labels": dataclasses.replace(base, name=f"{plan.task}-drop-labels",
                                           loader=DropTrainLabels(base.loader)),
        "fewer_epochs": dataclasses.replace(base, name=f"{plan.task}-{plan.short_epochs}-epochs",
                                            epochs=plan.short_epochs),
    }


class Spent:
    """Counts the runs ``run_benchmark`` reports (its ``progress`` callback): trained here, or
    read from the cache; prints a line every ``every`` runs so a long sweep shows it is alive."""

    def __init__(self, every: int = 100) -> None:
        self.trained = self.cached = 0
        self.seconds = 0.0
        self.every = every

    def __call__(self, task: str, model: str, seed: int, status: str, seconds: float) -> None:
        if status == "trained":
            self.trained += 1
            self.seconds += seconds
        else:
            self.cached += 1
        if (self.trained + self.cached) % self.every == 0:
            print(f"  {self.trained} trained ({self.seconds:.0f} s of worker time), "
                  f"{self.cached} from the cache; last: {task} × {model} × seed {seed}",
                  flush=True)


def train_pool(plan: Plan, *, workers: int, cache_dir: str | None, spent: Spent,
               ) -> dict[str, dict[str, np.ndarray]]:
    """Per variant (``"baseline"`` and each candidate) and epoch selection (``"final"``,
    ``"best_val"``): the per-seed test metric over the pool, shape [P] (pool order)."""
    from pytest_graphnetz import run_benchmark

    seeds = list(range(plan.seed_offset, plan.seed_offset + plan.pool))
    tasks = candidate_tasks(plan)
    # one run_benchmark call per task, with the models that train on it
    groups: dict[str | None, dict[str, Callable]] = {None: {"baseline": make_base}}
    for c in CANDIDATES:
        groups.setdefault(c.task_change, {})[c.name] = c.model
    values: dict[str, dict[str, np.ndarray]] = {}
    for change, models in groups.items():
        task = tasks[change]
        report = run_benchmark({task.name: task}, models, seeds=seeds, device="cpu",
                               workers=workers, cache_dir=cache_dir, progress=spent)
        for model in models:
            values[model] = {sel: report.values(task.name, model, epoch_selection=sel)
                             for sel in ("final", "best_val")}
    return values


# -- analysis: true effects, rates per S, MDE, findings ----------------------------------


def _pts(x: float) -> str:
    return f"{x / POINT:+.2f}"


def effects_table(values: Mapping[str, Mapping[str, np.ndarray]]) -> list[list[str]]:
    """Rows: per candidate, its true effect (mean paired Δ over the whole pool, with its 95%
    CI, in points) under final and best-val epoch selection, the sd of the paired Δ and the
    variance-reduction factor of pairing."""
    from pytest_graphnetz.stats.paired import paired_test

    rows = []
    base = values["baseline"]
    for c in CANDIDATES:
        row = [c.name, "innocent" if c.innocent else "regression"]
        for sel in ("final", "best_val"):
            r = paired_test(values[c.name][sel], base[sel], test="paired-t")
            row.append(f"{_pts(r.mean_diff)} [{_pts(r.ci.low)}, {_pts(r.ci.high)}]")
        diff = values[c.name]["final"] - base["final"]
        row += [f"{np.std(diff, ddof=1) / POINT:.2f}",
                f"{variance_reduction(values[c.name]['final'], base['final']):.1f}x"]
        rows.append(row)
    return rows


def innocent_sd(values: Mapping[str, Mapping[str, np.ndarray]], selection: str) -> float:
    """The sd of the paired difference of the innocent candidates, pooled (their mean true
    effect is ~0, so the pooled sd of all their differences is the seed noise of a pair)."""
    diffs = [values[c.name][selection] - values["baseline"][selection]
             for c in CANDIDATES if c.innocent]
    return float(np.sqrt(np.mean([np.var(d, ddof=1) for d in diffs])))


def findings(rates: Mapping[int, Mapping[str, Mapping[str, Rate]]]) -> list[str]:
    """What would contradict the paired t-test as the default gate: a paired gate whose
    false-alarm rate exceeds α beyond sampling error, and a point-gap gate that, at no higher
    false-alarm rate than the paired t-test, detects more. ``rates[S][candidate][gate]``."""
    out = []
    innocent = [c.name for c in CANDIDATES if c.innocent]
    regressions = [c.name for c in CANDIDATES if not c.innocent]
    for S, by_cand in rates.items():
        for test in PAIRED_TESTS:
            gate = f"paired {test}"
            k = sum(by_cand[c][gate].k for c in innocent)
            n = sum(by_cand[c][gate].n for c in innocent)
            r = rate(k, n)
            if r.low > ALPHA:
                out.append(f"S={S}: {gate} false-alarm rate {r} exceeds α={ALPHA} "
                           "beyond sampling error")
        ref = "paired paired-t"
        fa_ref = sum(by_cand[c][ref].k for c in innocent)
        for g in POINT_GAPS:
            gate = f"gap > {g} pt"
            fa = sum(by_cand[c][gate].k for c in innocent)
            more = [c for c in regressions if by_cand[c][gate].k > by_cand[c][ref].k]
            fewer = [c for c in regressions if by_cand[c][gate].k < by_cand[c][ref].k]
            if fa <= fa_ref and more and not fewer:
                out.append(f"S={S}: `{gate}` raised {fa} false alarms (paired-t: {fa_ref}) and "
                           f"detected more of {more}")
    return out


def conclusion(plan: Plan, values: Mapping[str, Mapping[str, np.ndarray]],
               rates: Mapping[int, Mapping[str, Mapping[str, Rate]]], S: int = 10) -> str:
    """One line from the numbers of ``plan`` at ``S`` seeds: false alarms of the paired t-test
    against the point-gap and single-seed checks (innocent candidates pooled), and detection of
    the smallest regression by the paired t-test against Welch."""
    innocent = [c.name for c in CANDIDATES if c.innocent]
    smallest = next(c.name for c in CANDIDATES if not c.innocent)
    delta = float(np.mean(values[smallest]["final"] - values["baseline"]["final"]))

    def fa(gate: str) -> Rate:
        return rate(sum(rates[S][c][gate].k for c in innocent),
                    sum(rates[S][c][gate].n for c in innocent))

    return (f"**Conclusion** ({plan.task}, S = {S}): innocent changes failed the paired t-test "
            f"in {fa('paired paired-t')} of PRs, `gap > 0 pt` in {fa('gap > 0 pt')} and the "
            f"single-seed check in {fa('single seed')}; the smallest regression ({smallest}, "
            f"{_pts(delta)} pt) was caught by the paired t-test in "
            f"{rates[S][smallest]['paired paired-t']} and by unpaired Welch in "
            f"{rates[S][smallest]['Welch (unpaired)']}.")


def verdict_section(plan: Plan, values: Mapping[str, Mapping[str, np.ndarray]],
                    S: int = VERDICT_S) -> list[str]:
    """Markdown lines: the verdicts of ``assert_not_worse`` with δ = 1 point at S seeds per
    candidate, over the disjoint S-seed blocks (independent trials, Wilson intervals) and over
    up to ``RESAMPLED_TRIALS`` random S-seed subsets (the shares the pool implies), and the checks:
    innocent changes NOT WORSE (or BETTER) in >= 90%, REGRESSED in <= α; regressions beyond δ
    NOT WORSE (or BETTER) in <= α."""
    from pytest_graphnetz.base.text import markdown_table
    from pytest_graphnetz.stats import seeds_for_min_effect

    P = len(values["baseline"]["final"])
    if P // S < 2:
        return []
    base = values["baseline"]["final"]
    disjoint = seed_blocks(P, S)
    resampled = resampled_trials(P, S, min(RESAMPLED_TRIALS, 100 * len(disjoint)))
    counts = {}
    for c in CANDIDATES:
        cand = values[c.name]["final"]
        counts[c.name] = (verdict_counts(cand, base, disjoint),
                          verdict_counts(cand, base, resampled))
    true = {c.name: float(np.mean(values[c.name]["final"] - base)) for c in CANDIDATES}
    headers = ["candidate", "true Δ (pt)", *VERDICTS, "NOT WORSE or BETTER"]
    tables = []
    for which, n in ((0, len(disjoint)), (1, len(resampled))):
        rows = []
        for c in CANDIDATES:
            k = counts[c.name][which]
            cells = [rate(k[v], n) if which == 0 else f"{100 * k[v] / n:.1f}%" for v in VERDICTS]
            safe = passes_as_safe(k)
            rows.append([c.name, _pts(true[c.name]), *map(str, cells),
                         str(rate(safe, n)) if which == 0 else f"{100 * safe / n:.1f}%"])
        tables.append(markdown_table(headers, rows))

    innocent = [c.name for c in CANDIDATES if c.innocent]
    beyond = [c.name for c in CANDIDATES if not c.innocent and true[c.name] <= -MIN_EFFECT]

    def pooled(names: Sequence[str], count: Callable[[Mapping[str, int]], int]) -> str:
        k = sum(count(counts[m][0]) for m in names)
        share = sum(count(counts[m][1]) for m in names) / (len(names) * len(resampled))
        return f"{rate(k, len(names) * len(disjoint))} over disjoint blocks, {100 * share:.1f}% " \
               "resampled"

    sd = innocent_sd(values, "final")
    lines = [
        "", f"### Verdicts of `assert_not_worse` with δ = `min_effect` = 1 point, S = {S} seeds "
        f"(paired t, margin 0, α = {ALPHA}; final epoch)", "",
        f"Independent trials: the {len(disjoint)} disjoint {S}-seed blocks of the pool (rate "
        "[95% Wilson]):", "", tables[0], "",
        f"Resampled: {len(resampled)} random {S}-seed subsets of the {P}-seed pool (they overlap, "
        "so these are the shares the pool implies, without an interval):", "", tables[1], "",
        "Checks (innocent changes pooled):", "",
        f"- innocent changes read NOT WORSE or BETTER (target ≥ 90%): "
        f"{pooled(innocent, passes_as_safe)}",
        f"- innocent changes read REGRESSED (must stay ≤ α = {ALPHA}): "
        f"{pooled(innocent, lambda k: k['REGRESSED'])}",
    ]
    for name in beyond:
        lines.append(f"- {name} ({_pts(true[name])} pt, beyond δ) reads NOT WORSE or BETTER "
                     f"(must stay ≤ α): {pooled([name], passes_as_safe)}")
    lines.append(f"- seeds planned for δ at the innocent pairs' sd of Δ ({sd / POINT:.2f} pt): "
                 f"{seeds_for_min_effect(sd, MIN_EFFECT, alpha=ALPHA)} (no change reads NOT "
                 "WORSE and a 1-point drop REGRESSED, each with probability ≥ 0.8)")
    return lines


def design_section(values: Mapping[str, Mapping[str, np.ndarray]]) -> list[str]:
    """Markdown lines: the verdicts of ``assert_not_worse`` with δ = 1 point under each of
    :data:`DESIGNS` per candidate, and the seed-trainings each design spends, over the disjoint
    ``DESIGN_S``-seed blocks (independent trials, Wilson intervals) and over
    ``RESAMPLED_TRIALS`` random ordered ``DESIGN_S``-seed subsets (the shares the pool implies).
    Every design sees the same trials: adaptive takes a trial's seeds in order and stops at a
    look, fixed 10 uses its first 10."""
    from pytest_graphnetz.base.text import markdown_table

    base = values["baseline"]["final"]
    P = len(base)
    if P // DESIGN_S < 2:
        return []
    disjoint = seed_blocks(P, DESIGN_S)
    # run_schedule decides every trial at once, so the resampled trials cost milliseconds
    resampled = resampled_trials(P, DESIGN_S, RESAMPLED_TRIALS)
    true = {c.name: float(np.mean(values[c.name]["final"] - base)) for c in CANDIDATES}
    tables = []
    for trials, label, independent in (
            (disjoint, f"{len(disjoint)} disjoint {DESIGN_S}-seed blocks", True),
            (resampled, f"{len(resampled)} resampled {DESIGN_S}-seed subsets", False)):
        outcomes = design_outcomes(values, trials)
        mean_seeds = {d: float(np.mean([o.seeds for o in by_cand.values()]))
                      for d, by_cand in outcomes.items()}
        rows = []
        for name, by_cand in outcomes.items():
            cells = []
            for o in by_cand.values():
                if independent:
                    shares = f"R {rate(o.regressed, o.n)}; NW {100 * o.passed / o.n:.0f}%"
                else:
                    shares = f"R {100 * o.regressed / o.n:.1f}%; NW {100 * o.passed / o.n:.1f}%"
                cells.append(f"{shares}; {o.seeds:.1f} seeds")
            rows.append([name, *cells, f"{mean_seeds[name]:.2f}",
                         f"{mean_seeds[name] / mean_seeds['fixed 20']:.2f}",
                         f"{mean_seeds[name] / mean_seeds['fixed 10']:.2f}"])
        headers = [f"design ({label})",
                   *(f"{c.name} ({'innocent' if c.innocent else 'regression'}, "
                     f"{_pts(true[c.name])} pt)" for c in CANDIDATES),
                   "seeds per cell (mean over candidates)", "÷ fixed 20", "÷ fixed 10"]
        tables.append(markdown_table(headers, rows))
    return [
        "", "### Adaptive seeds 5..20 against fixed 10 and fixed 20: verdicts of "
        f"`assert_not_worse` with δ = 1 point (paired t, margin 0, α = {ALPHA}; final epoch)", "",
        "R = REGRESSED (a false alarm for an innocent change, a detection for a regression), "
        "NW = NOT WORSE or BETTER (not worse by δ: on a regression beyond δ, wrong), seeds = the "
        f"candidate's seed-trainings per cell (the baseline holds {DESIGN_S}). Every design sees "
        "the same trials: adaptive 5..20 takes a trial's seeds in order and stops at the first "
        "look (5, 10, 20) that decides, fixed 10 uses the trial's first 10 seeds, fixed 20 all.",
        "", f"Real-training trials, independent: the {len(disjoint)} disjoint {DESIGN_S}-seed "
        "blocks of the pool (R: rate [95% Wilson]):", "", tables[0], "",
        f"Resampled: {len(resampled)} random {DESIGN_S}-seed subsets of the {P}-seed pool, each "
        "in a random seed order (they overlap, so these are the shares the pool implies, without "
        "an interval):", "", tables[1],
    ]


def analyse(plan: Plan, values: Mapping[str, Mapping[str, np.ndarray]]) -> str:
    """The Markdown section of one plan: effects, rates per S, MDE, verdicts at S = 10 and
    per seed design, findings, conclusion."""
    from pytest_graphnetz.base.text import markdown_table
    from pytest_graphnetz.stats.planning import mde

    lines = [f"## {plan.task}: 2-layer GCN (hidden {HIDDEN}), {plan.epochs} epochs, pool of "
             f"{plan.pool} seeds (seeds {plan.seed_offset}..{plan.seed_offset + plan.pool - 1}); "
             f"'fewer epochs' trains {plan.short_epochs}",
             "",
             f"{(1 + len(CANDIDATES)) * plan.pool} training runs in all: "
             f"{1 + len(CANDIDATES)} variants × {plan.pool} seeds, "
             "each trained once; every S-seed trial reuses them (2·S runs per PR if done "
             "for real).", "",
             "True effects over the whole pool (Δ = candidate − baseline, accuracy points, "
             "95% paired-t CI); sd of the paired Δ and variance reduction from pairing "
             "(final epoch):", ""]
    lines.append(markdown_table(
        ["candidate", "kind", "Δ final", "Δ best-val", "sd paired Δ", "var(unpaired)/var(paired)"],
        effects_table(values)))
    rates: dict[int, dict[str, dict[str, Rate]]] = {}
    for S in SEED_COUNTS:
        if plan.pool // S < 2:
            continue
        rates[S] = {c.name: trial_rates(values[c.name]["final"], values["baseline"]["final"], S)
                    for c in CANDIDATES}
        n = plan.pool // S
        headers = [f"gate (S={S}, {n} trials each)"]
        headers += [f"{c.name}: {'false alarm' if c.innocent else 'detected'}"
                    for c in CANDIDATES]
        rows = [[g, *(str(rates[S][c.name][g]) for c in CANDIDATES)] for g in GATE_NAMES]
        lines += ["", f"### S = {S} seeds per side (final-epoch accuracy, α = {ALPHA} "
                  "one-sided; rate [95% Wilson])", "", markdown_table(headers, rows)]
    sd = {sel: innocent_sd(values, sel) for sel in ("final", "best_val")}
    lines += ["", "Minimum detectable effect of the paired t-test (α = 0.05 one-sided, power "
              "0.8) from the innocent pairs' sd of Δ:", ""]
    lines.append(markdown_table(
        ["epoch selection", "sd paired Δ (pt)", *(f"MDE S={S} (pt)" for S in SEED_COUNTS)],
        [[sel, f"{sd[sel] / POINT:.2f}",
          *(f"{mde(sd[sel], S, alpha=ALPHA) / POINT:.2f}" for S in SEED_COUNTS)]
         for sel in sd]))
    lines += verdict_section(plan, values)
    lines += design_section(values)
    found = findings(rates)
    lines += ["", "Findings: " + ("; ".join(found) if found else
                                  "none (no paired false-alarm rate above α beyond sampling "
                                  "error; no point-gap gate beat paired-t at no higher "
                                  "false-alarm rate)")]
    if 10 in rates:
        lines += ["", conclusion(plan, values, rates)]
    return "\n".join(lines)


RESULTS = Path(__file__).with_name("gate_quality_results.md")
QUICK_OUT = Path(".graphnetz/gate_quality_quick.md")  # relative to where it runs, like the cache


VALUES_SELECTIONS = ("final", "best_val")


def save_values(path: Path, pools: Mapping[str, Mapping[str, Mapping[str, np.ndarray]]]) -> None:
    """Write ``pools[task][variant][selection]`` (per-seed values, pool order) as JSON."""
    data = {task: {"values": {variant: {sel: [float(x) for x in by_sel[sel]]
                                        for sel in VALUES_SELECTIONS}
                              for variant, by_sel in pool.items()}}
            for task, pool in pools.items()}
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(data, indent=1) + "\n", encoding="utf-8")


def load_values(path: Path) -> dict[str, dict[str, dict[str, np.ndarray]]]:
    """The pools :func:`save_values` wrote: ``[task][variant][selection]`` -> array [P]."""
    data = json.loads(path.read_text(encoding="utf-8"))
    return {task: {variant: {sel: np.asarray(v, dtype=float) for sel, v in by_sel.items()}
                   for variant, by_sel in entry["values"].items()}
            for task, entry in data.items()}


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true",
                        help="small pools (karate 30 seeds, csbm_homophilous 20): a smoke run of a "
                             "few minutes whose rates are too coarse to quote")
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--cache-dir", default=".graphnetz/gate_quality_cache")
    parser.add_argument("--out", default=None,
                        help="where to write the results (default: gate_quality_results.md "
                             "beside this script; with --quick, .graphnetz/gate_quality_quick.md)")
    parser.add_argument("--values", default=None,
                        help="analyse the per-seed values a run saved (its VALUES file) instead "
                             "of training: the statistics are re-derived, nothing trains")
    args = parser.parse_args(argv)
    out = Path(args.out) if args.out else QUICK_OUT if args.quick else RESULTS

    plans = QUICK if args.quick else FULL
    command = "python benchmarks/gate_quality.py" + (" --quick" if args.quick else "")
    saved = load_values(Path(args.values)) if args.values else None
    sections, pools = [], {}
    spent = Spent()
    start = time.perf_counter()
    for plan in plans:
        if saved is not None:
            values = saved[plan.task]
        else:
            values = train_pool(plan, workers=args.workers, cache_dir=args.cache_dir, spent=spent)
        pools[plan.task] = values
        sections.append(analyse(plan, values))
        print(sections[-1], "\n", flush=True)
    elapsed = time.perf_counter() - start
    total = spent.trained + spent.cached
    values_file = out.with_name(out.stem.removesuffix("_results") + "_values.json")
    if saved is None:
        save_values(values_file, pools)
        origin = (f"Reproduce: `{command}` ({total} training runs, {spent.trained} of them "
                  f"trained by the invocation that wrote this file in {elapsed:.0f} s with "
                  f"{args.workers} workers, {spent.cached} read from the cache). The per-seed "
                  f"values are saved in `{values_file.name}`.")
    else:
        runs = sum((1 + len(CANDIDATES)) * plan.pool for plan in plans)
        origin = (f"Reproduce: `{command}` ({runs} training runs; it saves their per-seed values "
                  f"in `{values_file.name}`). This file was written by `{command} --values "
                  f"{args.values}`, which re-derives every statistic from such a file without "
                  "training.")
    text = "\n\n".join([
        "# Gate quality: false alarms and detection power"
        + (" (QUICK MODE: smoke figures)" if args.quick else ""),
        origin,
        *sections,
    ])
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(text + "\n", encoding="utf-8")
    print(f"written to {out}")
    print(f"{total} training runs ({spent.trained} trained, {spent.cached} cached) in "
          f"{elapsed:.0f} s; wrote {out}")
    return 0


if __name__ == "__main__":
    # Run as the module `gate_quality` (this script's folder is sys.path[0]), not `__main__`:
    # the model factories' qualified names enter the runner's cache key, so a run from the
    # command line and one from the test or an import share their cached training runs.
    import gate_quality

    sys.exit(gate_quality.main())
