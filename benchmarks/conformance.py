"""The conformance harness: every statistical rule of the not-worse gate against the design's
one invariant (DESIGN.md, "The one invariant of the statistics"): a look's verdict is a function
of that look's prefix (seeds 0..n_k−1) and of the schedule stored in the baseline, nothing else.

Two parts.

*Invariants* (``--quick`` runs only these; ``tests/quality/test_conformance.py`` runs them on a
fixed seed and asserts that none fails). Constructed reports go through the real gate
(``compare_reports``, ``assert_not_worse`` on a baseline file); every check is exact:

- *chain = one call on the largest prefix*: a cell that a run of N seeds reports NOT WORSE or
  BETTER at look k reads the same verdict with the same Δ, p and interval in the run of exactly
  n_k seeds and in every run between (a longer run only adds looks); a one-cell call reports
  every verdict, REGRESSED included, as the run ending at its look does; a cell INCONCLUSIVE
  on N seeds is INCONCLUSIVE on every prefix;
- *REGRESSED stays REGRESSED*: in every longer run, and whatever the seeds past its look hold
  (replaced by large gains: the verdict, Δ, p and interval at that look do not move);
- *canonical seeds only*: fresh seeds, a dropped seed and a run below the first look are
  refused;
- *schedule bound*: against a baseline file refreshed under first look 10 and α 0.05, another
  first look or α is refused naming both, and judged alone only on request.

Each invariant runs again on the schedules whose first look is below 10
(:data:`FIRST_LOOKS_BELOW_10`, a baseline bound to each).

*Rates* (the default run): per row, paths of paired differences walked through the schedule
10 → 20 → 40 → 80 by ``stats.sequential.run_schedule``, the walk the gate takes
(``tests/cover/test_stats_design.py`` and ``tests/cover/test_stats_skew.py`` check that it decides
every cell as ``compare_reports`` does), vectorised, 100,000 paths per row:

- *false REGRESSED, chain*: at no change, the rerun chain 10 → 20 → 40 → 80 that stops at its
  first decision (an adaptive run; what a team rerunning after INCONCLUSIVE meets);
- *false REGRESSED, 80 held*: at no change, a run holding 80 seeds, reading every look (the
  worst case over when a team stops: REGRESSED at any look);
- *wrong pass*: at a drop of δ, the chain's first decision is NOT WORSE or BETTER;
- *detection*: at a drop of δ, the chain reads REGRESSED; beside it the plain paired t's (the
  gate with its skew guard off) on the same paths.

Rows named ``first look N`` walk the schedule N → 2N → … up to 80 seeds instead (normal and
discrete differences; their plain t on the same looks).

Each rate comes with its 95% Wilson interval; a row's target is ≤ α (normal, t(3), discrete)
or ≤ 2α (skewed shapes) for the three error rates, met when the interval's upper end is under
it, and detection within 5 points of the plain t's. The rows promised ≤ α whose rates sit
near it (:data:`SETTLE`) run again on 10⁶ paths per shift and their own draws (``--settle``,
``--settle-paths``), where an interval is a tenth of a point wide.

The statistical add-ons (replicates, the leak guard, calibrate, the reuse ledger) have their
own section (:func:`addon_lines`, from ``addons_conformance.py``): their promises are not all
rates of the gate's walk. How to add a row of the walk: write a sampler
``draw(rng, paths, shift) -> D`` (paths, 80) of paired differences in points (candidate −
baseline, + = better; ``shift`` is the true mean), and, if the rule changes how a look decides,
a ``walk(D, delta, every_look) -> codes`` that decides as the gate does with the rule (prove it
with a test that ``compare_reports`` decides cell by cell as the walk); then append
``Row(name, draw, target, walk=...)`` to ``ROWS``. For an invariant, add a function to
``INVARIANTS`` that takes a ``numpy.random.Generator`` and returns the failures it found (empty:
held). A statistical rule lands with its row here (docs/guarantees.md cites the table).

    python benchmarks/conformance.py --quick            # the invariants only (seconds)
    nice python benchmarks/conformance.py --out benchmarks/conformance_results.md  # ~8 CPU min

Bit for bit from ``--seed``; the last line is a SHA-256 of the tables.
"""

from __future__ import annotations

import argparse
import contextlib
import math
import sys
import tempfile
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from unittest import mock

import numpy as np

# the package, and this folder (for _tables) when a test imports the script as a module
sys.path[:0] = [str(Path(__file__).resolve().parents[1]), str(Path(__file__).resolve().parent)]

from _tables import emit, pct, table  # noqa: E402

from pytest_graphnetz import BenchmarkReport, assert_not_worse  # noqa: E402
from pytest_graphnetz.gates import compare_reports  # noqa: E402
from pytest_graphnetz.gates.refreshing.baselines import BaselineHandle  # noqa: E402
from pytest_graphnetz.gates.verdicts.values import GateRefusal  # noqa: E402
from pytest_graphnetz.stats import lookahead  # noqa: E402
from pytest_graphnetz.stats.boundaries import design, schedule  # noqa: E402
from pytest_graphnetz.stats.decisions import Verdict  # noqa: E402
from pytest_graphnetz.stats.heldout import wilson_interval  # noqa: E402
from pytest_graphnetz.stats.lookahead import LookPlan  # noqa: E402
from pytest_graphnetz.stats.sequential import run_schedule  # noqa: E402

ALPHA, FIRST, MAX, DELTA = 0.05, 10, 80, 1.0   # δ in points
LOOKS = (10, 20, 40, 80)
CHUNK = 100_000   # paths drawn and walked at once
# The rows promised ≤ α whose rates sit close to it: rerun at SETTLE_PATHS paths, so their
# intervals (±0.04 points at 10⁶ paths) say on which side of α they lie.
SETTLE = ("normal, sd 2", "normal, sd 4", "accuracy on 100 test nodes",
          "accuracy on 1,000 test nodes", "first look 5: normal, sd 2",
          "first look 5: accuracy on 100 test nodes", "first look 8: normal, sd 2",
          "first look 8: accuracy on 100 test nodes")
SETTLE_PATHS = 1_000_000
Sampler = Callable[[np.random.Generator, int, float], np.ndarray]   # (rng, paths, shift) -> D
Walk = Callable[[np.ndarray, float, bool], np.ndarray]              # (D, δ, every_look) -> codes


# -- rows: the shapes of paired differences and the rule that walks them ----------------------


def gate_walk(D: np.ndarray, delta: float, every_look: bool) -> np.ndarray:
    """The not-worse gate as it ships (the paired t with the skew guard, each look on its
    prefix): verdicts of the rows of ``D`` (paths, 80)."""
    return run_schedule(D, design(FIRST, MAX), margin=0.0, min_effect=delta,
                        every_look=every_look)[0]


def plain_walk(D: np.ndarray, delta: float, every_look: bool) -> np.ndarray:
    """The plain paired t on the same schedule (the skew guard off): the reference."""
    return run_schedule(D, design(FIRST, MAX), margin=0.0, min_effect=delta,
                        every_look=every_look, skew_threshold=None)[0]


def shaped(kind: str, sd: float) -> Sampler:
    """Centred differences of sd ``sd`` points: normal, t(3) (scaled to sd), gamma (shape 4:
    skew ±1) or exponential (skew ±2); ``−`` mirrors the shape (a long tail of losses)."""
    sign = -1.0 if "−" in kind else 1.0

    def draw(rng: np.random.Generator, paths: int, shift: float) -> np.ndarray:
        if kind == "normal":
            z = rng.standard_normal((paths, MAX))
        elif kind == "t(3)":
            z = rng.standard_t(3, (paths, MAX)) / math.sqrt(3.0)
        else:
            k = 4.0 if kind.startswith("gamma") else 1.0
            z = sign * (rng.standard_gamma(k, (paths, MAX)) - k) / math.sqrt(k)
        return shift + sd * z

    return draw


def accuracy(nodes: int, seed_sd: float = 1.0) -> Sampler:
    """Accuracy on ``nodes`` test nodes, in points: per seed each arm's true accuracy varies
    (baseline 0.8 + N(0, seed_sd points), the candidate's its own draw around it plus the
    shift) and its count of correct nodes is binomial, so the differences are discrete."""

    def draw(rng: np.random.Generator, paths: int, shift: float) -> np.ndarray:
        p_base = np.clip(0.8 + seed_sd / 100 * rng.standard_normal((paths, MAX)), 0, 1)
        p_cand = np.clip(p_base + shift / 100 + seed_sd / 100
                         * rng.standard_normal((paths, MAX)), 0, 1)
        return 100 * (rng.binomial(nodes, p_cand) - rng.binomial(nodes, p_base)) / nodes

    return draw


@dataclass(frozen=True)
class Row:
    """One row of the rates table: ``draw`` the paired differences, ``target`` the most each
    error rate may reach (α or 2α), ``walk`` the rule's decisions."""

    name: str
    draw: Sampler
    target: float
    walk: Walk = gate_walk
    plain: Walk = plain_walk   # the reference for detection: the plain t on the same looks


ROWS: list[Row] = [
    *(Row(f"{kind}, sd {sd:g}", shaped(kind, sd), ALPHA)
      for kind in ("normal", "t(3)") for sd in (2.0, 4.0)),
    Row("accuracy on 100 test nodes", accuracy(100), ALPHA),
    Row("accuracy on 1,000 test nodes", accuracy(1000), ALPHA),
    *(Row(f"{kind}, sd {sd:g}", shaped(kind, sd), 2 * ALPHA)
      for kind in ("exponential +2", "exponential −2", "gamma +1", "gamma −1")
      for sd in (2.0, 4.0)),
]


def walk_from(first: int, *, skew_guard: bool = True) -> Walk:
    """The gate's walk (or, without ``skew_guard``, the plain t's) on the schedule whose first
    look is ``first``: ``first, 2·first, ...`` up to 80 seeds."""

    def walk(D: np.ndarray, delta: float, every_look: bool) -> np.ndarray:
        return run_schedule(D, design(first, MAX), margin=0.0, min_effect=delta,
                            every_look=every_look,
                            **({} if skew_guard else {"skew_threshold": None}))[0]

    return walk


# A project may declare a first look below 10 (``graphnetz_seeds = 8``; at Cora noise it trains
# about one seed fewer per pull request: decisive_cora_options_results.md).
FIRST_LOOKS_BELOW_10 = (5, 8)
ROWS += [Row(f"first look {first}: {name}", draw, ALPHA, walk=walk_from(first),
             plain=walk_from(first, skew_guard=False))
         for first in FIRST_LOOKS_BELOW_10
         for name, draw in (("normal, sd 2", shaped("normal", 2.0)),
                            ("accuracy on 100 test nodes", accuracy(100)))]


def wilson(k: int, n: int) -> tuple[float, float]:
    """The 95% Wilson interval of ``k`` successes in ``n`` trials."""
    ci = wilson_interval(k, n)
    return float(ci.low), float(ci.high)


@dataclass(frozen=True)
class Rate:
    k: int
    n: int

    @property
    def value(self) -> float:
        return self.k / self.n

    def text(self) -> str:
        low, high = wilson(self.k, self.n)
        return f"{pct(self.value)} [{pct(low)}, {pct(high)}]"


def rates(row: Row, rng: np.random.Generator, paths: int) -> dict[str, Rate]:
    """The row's rates on ``paths`` paths at no change and ``paths`` at a drop of δ, drawn and
    walked :data:`CHUNK` paths at a time (memory: a chunk's differences are 64 MB)."""
    total: dict[str, Rate] = {}
    for start in range(0, paths, CHUNK):
        got = chunk_rates(row, rng, min(CHUNK, paths - start))
        total = {k: Rate(total[k].k + r.k, total[k].n + r.n) if total else r
                 for k, r in got.items()}
    return total


def chunk_rates(row: Row, rng: np.random.Generator, paths: int) -> dict[str, Rate]:
    null, drop = row.draw(rng, paths, 0.0), row.draw(rng, paths, -DELTA)
    chain_null = row.walk(null, DELTA, False)
    held_null = row.walk(null, DELTA, True)
    chain_drop = row.walk(drop, DELTA, False)
    plain_drop = row.plain(drop, DELTA, False)

    def count(codes: np.ndarray, *verdicts: Verdict) -> Rate:
        return Rate(int(np.isin(codes, verdicts).sum()), paths)

    return {"false REGRESSED, chain": count(chain_null, Verdict.REGRESSED),
            "false REGRESSED, 80 held": count(held_null, Verdict.REGRESSED),
            "wrong pass at −δ": count(chain_drop, Verdict.NOT_WORSE, Verdict.BETTER),
            "detection at −δ": count(chain_drop, Verdict.REGRESSED),
            "plain t detection": count(plain_drop, Verdict.REGRESSED)}


def verdict_of(row: Row, got: dict[str, Rate]) -> str:
    """met / not met, and what is above its target."""
    errors = ("false REGRESSED, chain", "false REGRESSED, 80 held", "wrong pass at −δ")
    above = [f"{name} {pct(got[name].value)}" for name in errors
             if wilson(got[name].k, got[name].n)[1] > row.target]
    lost = got["plain t detection"].value - got["detection at −δ"].value
    if lost > 0.05:
        above.append(f"detection {100 * lost:.1f} points under the plain t")
    return "met" if not above else "**not met**: " + "; ".join(above)


# -- invariants: constructed reports through the real gate ------------------------------------


def reports(D: np.ndarray, seeds: range) -> tuple[BenchmarkReport, BenchmarkReport]:
    """(candidate, baseline) of one task, a model per row of the differences ``D`` (cells,
    seeds), accuracy in [0, 1] (``D`` in points)."""
    base = np.full(D.shape, 0.8) + 0.01 * np.sin(np.arange(D.shape[1]))[None, :]
    cand = base + D / 100
    models = [f"m{i}" for i in range(D.shape[0])]
    return tuple(BenchmarkReport.from_arrays(x[None, :, seeds.start:seeds.stop], tasks=["t"],
                                             models=models, seeds=seeds, metric="accuracy")
                 for x in (cand, base))


def cells(rng: np.random.Generator, count: int) -> np.ndarray:
    """``count`` cells of 80 seeds over every shape of ``ROWS`` at sd 2 points, each at a true
    shift drawn from {0, −δ/2, −δ, −2δ, +δ}: every verdict occurs."""
    shapes = [shaped(k, 2.0) for k in ("normal", "t(3)", "exponential +2", "exponential −2",
                                       "gamma +1", "gamma −1")] + [accuracy(100)]
    shifts = [0.0, -DELTA / 2, -DELTA, -2 * DELTA, DELTA]
    return np.vstack([shapes[i % len(shapes)](rng, 1, shifts[int(rng.integers(len(shifts)))])
                      for i in range(count)])


def judged(D: np.ndarray, n: int, first: int = FIRST) -> list:
    cand, base = reports(D, range(n))
    return compare_reports(cand, base, min_effect=DELTA / 100, first_look=first, canonical=True)


def numbers(v, *, family: bool = False) -> tuple:
    """What a row reports at its look: verdict, n, Δ, p and interval. In a family of cells the
    interval's upper end is read at the Holm level after every rejection the call made, later
    looks included (a reporting matter: no verdict reads it), so it is left out there."""
    c = v.comparison
    return (v.verdict, c.evidence.n, c.evidence.mean_diff, c.evidence.p_value, c.decision.ci.low,
            *(() if family else (c.decision.ci.high,)))


@contextlib.contextmanager
def without_advice() -> Iterator[None]:
    """The gate without its INCONCLUSIVE advice (about a second of simulation per row; it sets
    only the seeds a row advises, never a verdict or a number the invariants compare)."""
    with mock.patch.object(lookahead, "plan_next_look", lambda *a, **k: LookPlan(None, None)):
        yield


def chain_is_one_call(rng: np.random.Generator, *, calls: int = 4, family: int = 3,
                      single: int = 12, first: int = FIRST) -> list[str]:
    """A longer run only adds looks: what a run reports at look k is what the run of exactly
    n_k seeds reports; REGRESSED stays REGRESSED; INCONCLUSIVE at N was INCONCLUSIVE before."""
    failures = []
    looks = schedule(first, MAX)
    for size, count in ((family, calls), (1, single)):
        for c in range(count):
            D = cells(rng, size)
            runs = {n: judged(D, n, first) for n in looks}
            for i in range(size):
                label = f"{size}-cell call {c}, cell {i}"
                for n in looks:
                    v = runs[n][i]
                    k = v.comparison.evidence.n
                    if v.verdict == "REGRESSED":
                        later = [m for m in looks if m > n and runs[m][i].verdict != "REGRESSED"]
                        if later:
                            failures.append(f"{label}: REGRESSED at {n} seeds, not at {later}")
                        if size == 1 and numbers(runs[k][i]) != numbers(v):
                            failures.append(f"{label}: REGRESSED at look {k} of a {n}-seed run "
                                            f"is not the {k}-seed run's {numbers(runs[k][i])}")
                    elif v.verdict in ("NOT WORSE", "BETTER"):
                        for m in (m for m in looks if k <= m <= n):
                            fam = size > 1
                            if numbers(runs[m][i], family=fam) != numbers(v, family=fam):
                                failures.append(f"{label}: {v.verdict} at look {k} of a "
                                                f"{n}-seed run; the {m}-seed run reads "
                                                f"{numbers(runs[m][i])}")
                    elif v.verdict == "INCONCLUSIVE":
                        before = [m for m in looks if m < n and runs[m][i].verdict
                                  != "INCONCLUSIVE"]
                        if before:
                            failures.append(f"{label}: INCONCLUSIVE at {n} seeds but decided "
                                            f"at {before}")
    return failures


def no_seed_past_the_look_is_read(rng: np.random.Generator, *, cells_: int = 16,
                                  first: int = FIRST) -> list[str]:
    """A cell decided at look k keeps its verdict and numbers whatever seeds n_k.. hold
    (replaced by gains of 10-18 points: skewed, if anything reads them)."""
    failures = []
    for c in range(cells_):
        D = cells(rng, 1)
        (v,) = judged(D, MAX, first)
        k = v.comparison.evidence.n
        if v.verdict not in ("REGRESSED", "NOT WORSE", "BETTER") or k == MAX:
            continue
        other = D.copy()
        other[:, k:] = np.minimum(10.0 + rng.exponential(2.0, (1, MAX - k)), 18.0)
        (w,) = judged(other, MAX, first)
        if v.verdict == "REGRESSED" and numbers(w) != numbers(v):
            failures.append(f"cell {c}: REGRESSED at look {k} moved to {numbers(w)} when the "
                            "seeds past it changed")
        if v.verdict != "REGRESSED" and (w.verdict, w.comparison.evidence.n) != (v.verdict, k):
            # a pass may only be overtaken by a later REGRESSED, which gains cannot cause
            failures.append(f"cell {c}: {v.verdict} at look {k} became {numbers(w)}")
    return failures


def canonical_seeds_only(rng: np.random.Generator, *, first: int = FIRST) -> list[str]:
    """Fresh seeds, a dropped seed and a run below the first look are refused."""
    D = cells(rng, 1)
    failures = []
    for seeds in (list(range(10, 20)), [0, 1, 2, 3, 5, 6, 7, 8, 9, 10],
                  list(range(first // 2 + 1))):
        cand = BenchmarkReport.from_arrays((0.8 + D[:, seeds] / 100)[None], tasks=["t"],
                                           models=["m0"], seeds=seeds, metric="accuracy")
        base = BenchmarkReport.from_arrays(np.full((1, 1, MAX), 0.8), tasks=["t"],
                                           models=["m0"], seeds=range(MAX), metric="accuracy")
        try:
            compare_reports(cand, base, min_effect=0.01, first_look=first, canonical=True)
        except GateRefusal:
            continue
        failures.append(f"seeds {seeds} were judged, not refused")
    return failures


def schedule_is_bound(rng: np.random.Generator, *, first: int = FIRST) -> list[str]:
    """Against a baseline file refreshed under first look ``first`` and α 0.05, another first
    look or α is refused naming both schedules; judged alone only on request."""
    D = cells(rng, 1)
    cand, base = reports(D, range(MAX))
    failures = []
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "baseline.json"
        assert_not_worse(base, BaselineHandle(path, update=True), first_look=first, alpha=ALPHA)
        other = 5 if first != 5 else 10
        for asked in ({"first_look": first + 1}, {"first_look": other}, {"alpha": 0.1}):
            try:
                assert_not_worse(cand, path, min_effect=0.01, **asked)
            except GateRefusal as exc:
                if f"binds the schedule first look {first} seeds, α 0.05" not in str(exc):
                    failures.append(f"{asked}: refused without naming the bound schedule: "
                                    f"{exc}")
                continue
            except AssertionError:
                pass
            failures.append(f"{asked}: judged against a baseline bound to another schedule")
        try:
            assert_not_worse(cand, path, min_effect=0.01, first_look=first + 1,
                             rerun_safe=False)
        except GateRefusal as exc:
            failures.append(f"judged alone on request, still refused: {exc}")
        except AssertionError:
            pass
    return failures


def rates_lines(rows: list[Row], rng: np.random.Generator, paths: int, *,
                settle: bool = False) -> list[str]:
    """The rates table of ``rows`` on ``paths`` paths per row and shift (``settle``: a section
    of rows rerun at more paths, on their own draws)."""
    header = ["row", "target", "false REGRESSED, chain", "false REGRESSED, 80 held",
              "wrong pass at −δ", "detection at −δ", "plain t detection", "verdict"]
    body = []
    for row in rows:
        start = time.process_time()
        got = rates(row, rng, paths)
        body.append([row.name, f"≤ {pct(row.target)}", *(r.text() for r in got.values()),
                     verdict_of(row, got)])
        print(f"{row.name}: {time.process_time() - start:.1f} CPU s", file=sys.stderr)
    title = (f"## The ≤ α rows near α settled: {paths:,} paths per row and per shift"
             if settle else f"## Rates: {paths:,} paths per row and per shift, looks "
             f"{' → '.join(map(str, LOOKS))} (rows named first look N: N → 2N → … ≤ 80), "
             f"α = {ALPHA}, δ = {DELTA:g} point, margin 0")
    note = ("Rerun on their own draws (seed + 1), so each rate's 95% interval is about a tenth "
            "of a point wide; same columns and targets." if settle else
            "Each rate with its 95% Wilson interval; a target is met when the interval's upper "
            "end is under it; detection within 5 points of the plain t's.")
    return [title, "", note, "", *table(header, body), ""]


def addon_lines() -> list[str]:
    """The statistical add-ons' rows (replicates, the leak guard, calibrate, the reuse ledger):
    what each promises and what it delivers in its worst measured setting, on the real code
    (``addons_conformance.py``, its own fixed draws, so a rerun reproduces them bit for bit)."""
    import addons_conformance

    body = [[r.addon, r.promise, r.setting, str(r.rate), "met" if r.met else "**not met**",
             f"`{r.benchmark}`"] for r in addons_conformance.all_rows(quick=False)]
    return ["## The statistical add-ons", "",
            "Each promise in its worst measured setting (`benchmarks/addons_conformance.py`, "
            "the full runs in the benchmark named); rates with 95% Wilson intervals; met unless "
            "the interval lies wholly past the promise.", "",
            *table(["add-on", "promises", "worst setting measured", "delivers", "verdict",
                    "benchmark"], body), ""]


def at_first_look(check: Callable[..., list[str]], first: int
                  ) -> Callable[[np.random.Generator], list[str]]:
    """``check`` on the schedule whose first look is ``first`` (a baseline bound to it)."""

    def run(rng: np.random.Generator) -> list[str]:
        return check(rng, first=first)

    run.__name__ = f"{check.__name__}, first look {first}"
    return run


INVARIANTS: list[Callable[[np.random.Generator], list[str]]] = [
    chain_is_one_call, no_seed_past_the_look_is_read, canonical_seeds_only, schedule_is_bound]
INVARIANTS += [at_first_look(check, first) for first in FIRST_LOOKS_BELOW_10
               for check in tuple(INVARIANTS)]


def check_invariants(seed: int) -> dict[str, list[str]]:
    """Every invariant on ``seed``: name -> the failures found (empty: held)."""
    rng = np.random.default_rng(seed)
    with without_advice():
        return {check.__name__: check(rng) for check in INVARIANTS}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--quick", action="store_true", help="the invariants only")
    parser.add_argument("--paths", type=int, default=100_000)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--settle", nargs="*", default=list(SETTLE), metavar="ROW",
                        help="rows rerun at --settle-paths (default: the ≤ α rows near α)")
    parser.add_argument("--settle-paths", type=int, default=SETTLE_PATHS,
                        help="paths per row and shift for --settle (0: none)")
    parser.add_argument("--out", default=None)
    args = parser.parse_args()
    lines = [f"# Conformance: the invariants through the real gate, and the rates "
             f"(seed {args.seed})", ""]
    held = check_invariants(args.seed)
    lines += table(["invariant", "failures"],
                   [[name, "none" if not f else f"**{len(f)}**: {f[0]}"]
                    for name, f in held.items()])
    lines.append("")
    if not args.quick:
        rng = np.random.default_rng(args.seed)
        lines += rates_lines(ROWS, rng, args.paths)
        settled = [row for row in ROWS if row.name in args.settle]
        if settled and args.settle_paths:
            lines += rates_lines(settled, np.random.default_rng(args.seed + 1),
                                 args.settle_paths, settle=True)
        lines += addon_lines()
    emit(lines, args.out)
    if any(held.values()):
        sys.exit(1)


if __name__ == "__main__":
    main()
