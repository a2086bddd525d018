"""Baseline replicates (``--graphnetz-baseline-replicates=R``): at refresh each seed of a cell
is trained R times, its own run and R − 1 reruns under ``graphnetz calibrate``'s salts (the same
data and split, other initialisation and training draws), and the gate pairs each candidate
seed with a weighted mean of the seed's R runs: weight w on its own run, 1 − w on the mean of
the R − 1 salted reruns.

Why those weights. Per seed, every run shares the seed's data and split; beyond that, run k
carries draw noise e_k of variance v. A candidate trained under the same seed draws noise that
correlates ρ with the own run's (a learning-rate or loss tweak keeps the initialisation and the
dropout masks: ρ near 0.8; another architecture: ρ = 0). In units of v,

    var(cand − w·own − (1 − w)·salted mean) = 1 + w² + (1 − w)²/(R − 1) − 2ρw,

against 2 − 2ρ when pairing with the own run alone (R = 1). The plain mean (w = 1/R) wins when
ρ = 0 and loses badly when ρ = 0.8 (0.7v against 0.4v at R = 2). The weight that is best at
ρ* = SHARED_STREAM, w = (1 + ρ*(R − 1))/R, is below R = 1's variance for every ρ < 0.9 at every
R (the difference is (w − 1)(w + 1 − (1 − w)/(R − 1) − 2ρ), negative while
ρ < (1 + ρ*)/2 = 0.9): replicates cost no power in either case, and gain where the candidate is
independent of the own run (``benchmarks/baseline_replicates_results.md``). The weights are
fixed before any candidate is seen, so the d_s stay independent across seeds and the paired t
test holds as it is.

:class:`Replicates` is one cell's salted runs as the baseline file keeps them (per seed one line
of R − 1 values, and the weighted mean used); :class:`ReplicatedReport` a candidate that carries
them to the refresh; :func:`paired_report` the baseline a gate pairs with.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

import numpy as np

from pytest_graphnetz.report import BenchmarkReport
from pytest_graphnetz.report.codec import values_to_json
from pytest_graphnetz.report.values_form import rule_validation, rule_values

Cell = tuple[str, str]  # (task, model)

#: The correlation of a same-seed candidate's draw noise with the own run's that the pairing
#: weights are chosen for; below (1 + it)/2 = 0.9, R >= 2 is never worse than R = 1 (module
#: docstring; ``benchmarks/baseline_replicates.py`` simulates 0, 0.8 and 0.95).
SHARED_STREAM = 0.8


def own_weight(count: int) -> float:
    """The weight of a seed's own run in its paired value when the seed holds ``count`` runs:
    (1 + ρ(R − 1))/R at ρ = :data:`SHARED_STREAM` (1 at R = 1)."""
    return (1 + SHARED_STREAM * (count - 1)) / count


@dataclass(frozen=True)
class Replicates:
    """A cell's salted reruns at refresh (``--graphnetz-baseline-replicates=R``): per seed,
    R − 1 runs under calibrate's salts 1..R−1 (the same data and split, other training
    randomness), beside the cell's own run; the gate pairs each candidate seed with the
    weighted mean of the R (:func:`own_weight`).

    ``seeds``: their order; ``runs[rule]``: shape [n_seeds, R − 1], the test values under each
    epoch rule; ``validation[rule]``: the same for the validation series (absent without)."""

    seeds: tuple[int, ...]
    runs: Mapping[str, np.ndarray]
    validation: Mapping[str, np.ndarray] = field(default_factory=dict)

    @property
    def count(self) -> int:
        """R: the cell's own run and its salted reruns."""
        return 1 + next(iter(self.runs.values())).shape[1]

    @classmethod
    def of(cls, salted: Sequence[BenchmarkReport], task: str, model: str) -> Replicates:
        """The cell's replicates from the salted reports (salts 1..R−1, one report each)."""
        first = salted[0]
        rules = rule_values(first, task, model)
        runs = {r: np.column_stack([rule_values(x, task, model)[r] for x in salted])
                for r in rules}
        vals = [rule_validation(x, task, model) for x in salted]
        validation = ({r: np.column_stack([v[r] for v in vals]) for r in rules}
                      if all(vals) else {})
        return cls(first.seeds, runs, validation)

    def means(self, own: Mapping[str, np.ndarray]) -> dict[str, np.ndarray]:
        """Per rule the per-seed value a candidate pairs with: ``own`` (the cell's own run,
        shape [n_seeds]) weighted :func:`own_weight`, the salted runs' mean the rest."""
        return _weighted(own, self.runs, self.count)

    def validation_means(self, own: Mapping[str, np.ndarray]) -> dict[str, np.ndarray]:
        """:meth:`means` of the validation series."""
        return _weighted(own, self.validation, self.count)

    def to_json(self, own: Mapping[str, np.ndarray]) -> dict:
        """``salts``, one line of R − 1 values per seed and rule, the weighted mean the gate
        uses (for the reader; recomputed on reading) and the own run's ``weight`` in it."""
        out: dict = {"seeds": list(self.seeds), "salts": list(range(1, self.count)),
                     "runs": {r: [[float(x) for x in row] for row in vec]
                              for r, vec in self.runs.items()},
                     "mean": values_to_json(self.means(own)),
                     "weight": round(own_weight(self.count), 6)}
        if self.validation:
            out["validation"] = {r: [[float(x) for x in row] for row in vec]
                                 for r, vec in self.validation.items()}
        return out

    @classmethod
    def from_json(cls, d: Mapping, what: str) -> Replicates:
        seeds = d["seeds"]
        if not isinstance(seeds, list) or any(type(s) is not int for s in seeds):
            raise ValueError(f"{what}: replicate `seeds` must be a list of integers")
        width = len(d["salts"])
        parts: dict[str, dict[str, np.ndarray]] = {}
        for key in ("runs", "validation"):
            parts[key] = {}
            for rule, rows in (d.get(key) or {}).items():
                vec = np.array(rows, dtype=float)
                if width < 1 or vec.shape != (len(seeds), width):
                    raise ValueError(f"{what}: replicate `{key}.{rule}` must hold {width} "
                                     f"values per seed for {len(seeds)} seeds")
                parts[key][rule] = vec
        if not parts["runs"]:
            raise ValueError(f"{what}: replicates without `runs`")
        return cls(tuple(seeds), parts["runs"], parts["validation"])


def paired_report(report: BenchmarkReport, replicates: Mapping[Cell, Replicates],
                  candidate: BenchmarkReport) -> tuple[BenchmarkReport, str]:
    """The report a gate pairs ``candidate`` with, and what the gate's header says of it.

    Each cell with replicates pairs with the per-seed weighted mean of its R runs
    (:meth:`Replicates.means`), unless the
    candidate scored exactly the cell's own run on every shared seed (an unchanged model:
    IDENTICAL stays IDENTICAL). Without replicates: the file's report and ""."""
    cells = [c for c in _cells_of(candidate) if c in replicates
             and replicates[c].seeds == report.seeds
             and not _same_run(candidate, report, *c)]
    if not cells:
        return report, ""
    data = report.to_values_dict()
    counts = set()
    for task, model in cells:
        rep = replicates[(task, model)]
        cell = data["models"][model]["tasks"][task]
        cell["values"] = values_to_json(rep.means(rule_values(report, task, model)))
        own_val = rule_validation(report, task, model)
        if rep.validation and own_val:
            cell["validation"] = values_to_json(rep.validation_means(own_val))
        else:
            cell.pop("validation", None)
        counts.add(rep.count)
    weights = "; ".join(f"{own_weight(c):.2f} × its own run + {1 - own_weight(c):.2f} × the "
                        f"mean of its {c - 1} salted rerun{'s' if c > 2 else ''}"
                        for c in sorted(counts))
    return (BenchmarkReport.from_dict(data, source="the baseline's replicate means"),
            f" (each baseline seed: {weights})")



class ReplicatedReport(BenchmarkReport):
    """A candidate report that comes with salted reruns of its cells (what the
    ``graphnetz_run`` fixture returns under ``--graphnetz-update-baselines
    --graphnetz-baseline-replicates=R``): a refresh writes them beside each cell."""

    def __init__(self, report: BenchmarkReport, salted: Sequence[BenchmarkReport]) -> None:
        super().__init__(tasks=report.tasks, models=report.models, seeds=report.seeds,
                         metrics=report.metrics, histories=report.histories,
                         protocol=report.protocol, fingerprints=report.fingerprints,
                         settings=report.settings())
        self.replicates = {c: Replicates.of(salted, *c) for c in _cells_of(report)}


def replicates_of(report: BenchmarkReport) -> dict[Cell, Replicates]:
    """The replicates a candidate report carries (:class:`ReplicatedReport`; else none)."""
    return dict(getattr(report, "replicates", {}))


def _weighted(own: Mapping[str, np.ndarray], salted: Mapping[str, np.ndarray],
              count: int) -> dict[str, np.ndarray]:
    w = own_weight(count)
    return {r: w * own[r] + (1 - w) * salted[r].mean(axis=1) for r in salted if r in own}


def _cells_of(report: BenchmarkReport) -> list[Cell]:
    return [(t, m) for t in report.tasks for m in report.models]


def _same_run(candidate: BenchmarkReport, baseline: BenchmarkReport, task: str,
              model: str) -> bool:
    """Whether the candidate's cell equals the baseline's own run on every shared seed."""
    shared = [s for s in candidate.seeds if s in baseline.seeds]
    if not shared:
        return False
    cand = candidate.values(task, model, strict=False)
    base = baseline.values(task, model, strict=False)
    return np.array_equal(cand[[candidate.seeds.index(s) for s in shared]],
                          base[[baseline.seeds.index(s) for s in shared]], equal_nan=True)




__all__ = ["SHARED_STREAM", "ReplicatedReport", "Replicates", "own_weight", "paired_report",
           "replicates_of"]
