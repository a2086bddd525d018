"""Bisecting a regression under noise: which commit between GOOD and BAD made a cell worse.

:func:`bisect_commits` is the search, a pure function over a ``probe(commit, n_seeds)`` callable
that returns the reports a commit's benchmark saves (by name; seeds ``0..n-1``); ``graphnetz
bisect`` implements the probe with git worktrees and pytest (:mod:`.probes`), the
benchmark (``benchmarks/bisect_search.py``) with an in-process history. Each probe is judged by
the gate (:func:`~pytest_graphnetz.gates.compare_reports`, not-worse, paired by seed) against
GOOD:

- **regressed**: REGRESSED;  **same**: NOT WORSE, IDENTICAL or BETTER (no regression of δ or
  more); **unknown**: INCONCLUSIVE, which takes the next look of the gate's schedule (the probe
  and GOOD on twice the seeds: 10 → 20 → 40 → 80 → 160, as the CI loop does) up to
  ``max_seeds``, the budget; still unknown there stops that cell's search with its range
  unresolved, and says what δ the probe's seeds resolve.
- Before any statistics, a probe whose per-seed values equal a neighbour's bit for bit (the
  bracket's last-same or first-regressed commit, on the seeds both hold) takes that neighbour's
  verdict: an unchanged model is bit-identical, and such a commit spends no test.
- Error control: Bonferroni over every gate call. At most ``m = ceil(log2(len(commits))) + 2``
  probes decide a cell (the endpoint check, ``ceil(log2(len(commits) - 1))`` bisection steps
  and one spare), each through the ``L`` looks of the schedule up to the budget; look k of a
  probe is judged alone (``rerun_safe=False``) at ``alpha / m · n_k / (n_1 + ... + n_L)``, its
  share in proportion to its seeds (Holm across the cells inside a call, split again over the
  report files a probe saves). A wrong verdict at any step, either way (REGRESSED with no
  regression, or NOT WORSE with one of δ or more), is what would name a wrong culprit, so the
  probability that a cell's named culprit (or its "same") is wrong is at most ``alpha``. The
  share in proportion to seeds gives the look that decides most probes at the default δ (the
  last) the most; an equal share per look found fewer culprits (``benchmarks/bisect_results.md``),
  and so did the gate's sequential boundaries per probe, whose first look spends 0.85 of the
  level (an earlier measurement, in docs/history-bisect.md).
- A drift is not a step: a probe that reads REGRESSED against GOOD while BAD reads REGRESSED
  against it (:func:`drift_split`), or a named culprit whose own step reads same while BAD's
  drop exceeds δ (:func:`culprit_step`), shows that no single commit carries the drop; that
  cell's search stops, names no culprit and lists the commits that moved.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field

import numpy as np

from pytest_graphnetz.base.text import fmt_interval, fmt_level, fmt_num, fmt_p, fmt_signed
from pytest_graphnetz.cli.bisection.findings import (
    REGRESSED,
    SAME,
    UNKNOWN,
    Evidence,
    Finding,
    Step,
)
from pytest_graphnetz.cli.history.trend import Cell
from pytest_graphnetz.gates import compare_reports
from pytest_graphnetz.report import BenchmarkReport
from pytest_graphnetz.stats import Verdict
from pytest_graphnetz.stats.boundaries import schedule

_THREE = {Verdict.REGRESSED: REGRESSED, Verdict.NOT_WORSE: SAME, Verdict.IDENTICAL: SAME,
          Verdict.BETTER: SAME, Verdict.INCONCLUSIVE: UNKNOWN}
DEFAULT_MAX_SEEDS = 160   # the budget: the schedule 10 → 20 → 40 → 80 → 160

Reports = Mapping[str, BenchmarkReport]
"""A probe's saved reports by name (``graphnetz bisect``: the path under the report dir)."""
Probe = Callable[[str, int], Reports]
"""``probe(commit, n)``: the reports of ``commit``'s benchmark on seeds ``0..n-1``."""


@dataclass(frozen=True)
class SearchSettings:
    """What a search is asked (:func:`bisect_commits`'s keywords): the first look's ``seeds``,
    the budget ``max_seeds``, the level ``alpha`` over the whole search, δ ``min_effect``
    (None: the metric's default) and the gate's ``margin``."""

    seeds: int = 10
    max_seeds: int = DEFAULT_MAX_SEEDS
    alpha: float = 0.05
    min_effect: float | None = None
    margin: float = 0.0


class BisectRefusal(ValueError):
    """The search cannot start or go on honestly (the message says why and what to do)."""


class NothingRegressed(Exception):
    """BAD does not read REGRESSED against GOOD on any cell: nothing to bisect. ``evidence``:
    each cell's verdict at BAD; ``undecided``: some cell stayed unknown at the budget (the
    message says what δ its seeds resolve), else every cell reads same."""

    def __init__(self, message: str, evidence: Sequence[Evidence], undecided: bool) -> None:
        super().__init__(message)
        self.evidence, self.undecided = tuple(evidence), undecided


@dataclass(frozen=True)
class BisectResult:
    """The search: a finding per cell that BAD regressed on, every step in order, the level of
    each look's gate call (``look_alphas``, one per seed count) and the most seeds each commit
    was probed on."""

    findings: tuple[Finding, ...]
    steps: tuple[Step, ...]
    alpha: float
    look_alphas: tuple[float, ...]
    tests: int
    seed_counts: tuple[int, ...]
    probed: dict[str, int] = field(default_factory=dict)

    @property
    def resolved(self) -> bool:
        return all(f.culprit is not None for f in self.findings)

    def lines(self) -> list[str]:
        """The report a person reads: each culprit with the evidence of each step."""
        out = [error_control(self.alpha, self.tests, self.seed_counts)]
        for f in self.findings:
            out.append("")
            if f.drift:
                out += drift_lines(f)
                continue
            if f.culprit is not None:
                out.append(f"{f.label}: culprit {f.culprit} (last same: {f.last_same})")
            else:
                out.append(f"{f.label}: UNRESOLVED, the culprit lies after {f.last_same} and "
                           f"at or before {f.first_regressed}")
            unknown = None
            for step in f.steps:
                for ev in step.evidence:
                    if ev.cell == f.cell:
                        out.append(f"  {step.commit}: {ev.verdict.upper()} — {ev.detail}")
                        unknown = ev if ev.verdict == UNKNOWN else unknown
            if f.culprit is None and unknown is not None and unknown.hint():
                out.append(f"  to resolve it: {unknown.hint()}")
        return out


def drift_lines(f: Finding) -> list[str]:
    """How a drifted cell reads: no culprit, the gate calls that show it, the commits that moved
    and where to look next."""
    if f.moved:
        what = "each commit whose values differ from its parent's, its step's mean Δ"
        moved = f.moved
    else:   # a range too long to probe whole
        what = "the probed commits, Δ against GOOD"
        moved = tuple((step.commit, ev.mean_diff) for step in sorted(f.steps, key=lambda s: s.index)
                      for ev in step.evidence if ev.cell == f.cell and ev.mean_diff is not None)
    path = ", ".join(f"{commit} {fmt_signed(d)}" for commit, d in moved)
    return [f"{f.label}: DRIFT, no single commit carries the drop: several commits moved the "
            "cell, each by less than the whole; no culprit is named",
            *(f"  {line}" for line in f.drift),
            f"  the commits that moved ({what}): {path}",
            "  `graphnetz history` over the range's saved reports shows the trend commit by "
            "commit"]


def seed_schedule(seeds: int, max_seeds: int) -> tuple[int, ...]:
    """The looks a probe may take: the gate's schedule from ``seeds`` (doubling) up to
    ``max_seeds``, the budget."""
    if seeds < 2 or max_seeds < seeds:
        raise ValueError(f"`seeds` must be >= 2 and `max_seeds` >= `seeds`, got {seeds} and "
                         f"{max_seeds}")
    return schedule(seeds, max_seeds)


def look_alphas(alpha: float, tests: int, looks: Sequence[int]) -> tuple[float, ...]:
    """Each look's level: its share of ``alpha / tests`` in proportion to its seeds."""
    return tuple(alpha / tests * n / sum(looks) for n in looks)


def error_control(alpha: float, tests: int, looks: Sequence[int]) -> str:
    """The one line that says how the search spends ``alpha``, with the level of each look."""
    levels = ", ".join(f"{n} seeds at {fmt_num(a)}"
                       for n, a in zip(looks, look_alphas(alpha, tests, looks), strict=True))
    return (f"error control: Bonferroni over at most {tests} probes, each through the looks "
            f"{list(looks)} with a share of alpha {fmt_num(alpha)}/{tests} in proportion to "
            f"its seeds; each gate call judged alone: {levels} (Holm across a call's cells, "
            "split again over the report files a probe saves)")


def bisect_commits(commits: Sequence[str], probe: Probe, *, seeds: int = 10,
                   max_seeds: int = DEFAULT_MAX_SEEDS, alpha: float = 0.05,
                   min_effect: float | None = None, margin: float = 0.0) -> BisectResult:
    """Find, per cell that ``commits[-1]`` (BAD) regressed on against ``commits[0]`` (GOOD),
    the first commit that reads regressed (see the module docstring for the verdicts and the
    error control). ``commits`` are in history order, GOOD first. Raises
    :class:`NothingRegressed` when BAD does not read REGRESSED against GOOD on any cell, and
    :class:`BisectRefusal` when a probe lacks a report or cell GOOD has.
    """
    if len(commits) < 2:
        raise BisectRefusal("bisect needs two commits, GOOD and BAD")
    looks = seed_schedule(seeds, max_seeds)
    tests = math.ceil(math.log2(len(commits))) + 2
    search = _Search(commits, probe, looks, look_alphas(alpha, tests, looks), min_effect, margin)
    good = search.get(0, looks[0])
    cells = [(name, t, m) for name, r in good.items() for t in r.tasks for m in r.models]
    ends = search.step(search.bad, cells, {c: (0,) for c in cells})
    targets = [ev.cell for ev in ends.evidence if ev.verdict == REGRESSED]
    if not targets:
        raise _nothing_regressed(commits, ends.evidence)
    search.narrow(targets, ends)
    search.check_culprits(targets)
    return BisectResult(tuple(search.finding(c) for c in targets), tuple(search.steps), alpha,
                        search.levels, tests, looks, search.probed)


@dataclass
class _Search:
    """One search's state: the probes taken (``get``, memoised per commit index and seeds), the
    steps in order, and per regressed cell its bracket ``(lo, hi]`` (last same, first
    regressed), the cells stopped undecided and the drifted ones with their evidence."""

    commits: Sequence[str]
    probe: Probe
    looks: tuple[int, ...]
    levels: tuple[float, ...]
    min_effect: float | None
    margin: float
    memo: dict[tuple[int, int], Reports] = field(default_factory=dict)
    probed: dict[str, int] = field(default_factory=dict)
    steps: list[Step] = field(default_factory=list)
    lo: dict[Cell, int] = field(default_factory=dict)
    hi: dict[Cell, int] = field(default_factory=dict)
    stuck: set[Cell] = field(default_factory=set)
    drifted: dict[Cell, tuple[str, ...]] = field(default_factory=dict)

    @property
    def bad(self) -> int:
        return len(self.commits) - 1

    def get(self, i: int, n: int) -> Reports:
        """Commit ``i``'s reports on seeds ``0..n-1`` (probed once)."""
        if (i, n) not in self.memo:
            self.memo[i, n] = self.probe(self.commits[i], n)
            self.probed[self.commits[i]] = max(n, self.probed.get(self.commits[i], 0))
        return self.memo[i, n]

    def judge(self, i: int, cells: Sequence[Cell], n: int, level: float,
              against: int = 0) -> dict[Cell, Evidence]:
        """:func:`_judge` of commit ``i`` against commit ``against`` (GOOD) on ``n`` seeds."""
        return _judge(self.get(i, n), self.get(against, n), cells, alpha=level,
                      min_effect=self.min_effect, margin=self.margin, commit=self.commits[i],
                      good_commit=self.commits[against])

    def step(self, i: int, cells: Sequence[Cell],
             neighbours: Mapping[Cell, Sequence[int]]) -> Step:
        """Probe commit ``i`` for ``cells``: a cell whose values equal a neighbour's bit for
        bit (last same, then first regressed) takes its verdict; the rest are judged against
        GOOD look by look until decided or at the budget."""
        decided: dict[Cell, Evidence] = {}
        first = self.get(i, self.looks[0])
        for cell in cells:
            for j, verdict in zip(neighbours.get(cell, ()), (SAME, REGRESSED), strict=False):
                if _bitwise_equal(first, self.get(j, self.looks[0]), cell, self.commits[i],
                                  self.commits[j]):
                    decided[cell] = Evidence(cell, verdict, self.looks[0],
                                             f"per-seed values equal {self.commits[j]}'s bit "
                                             "for bit (no test)")
                    break
        for n, level in zip(self.looks, self.levels, strict=True):
            todo = [c for c in cells if c not in decided]
            if not todo:
                break
            for cell, ev in self.judge(i, todo, n, level).items():
                if ev.verdict != UNKNOWN or n == self.looks[-1]:
                    decided[cell] = ev
        return Step(self.commits[i], i, tuple(decided[c] for c in cells))

    def narrow(self, targets: Sequence[Cell], ends: Step) -> None:
        """Bisect every target's bracket, the widest first (probing its middle for every
        target whose bracket holds it), until each is one commit wide, undecided or drifted
        (:func:`drift_split`)."""
        self.lo, self.hi = dict.fromkeys(targets, 0), dict.fromkeys(targets, self.bad)
        self.steps.append(ends)
        while True:
            open_cells = [c for c in targets if self.hi[c] - self.lo[c] > 1
                          and c not in self.stuck]
            if not open_cells:
                return
            widest = max(open_cells, key=lambda c: self.hi[c] - self.lo[c])
            mid = (self.lo[widest] + self.hi[widest]) // 2
            group = [c for c in open_cells if self.lo[c] < mid < self.hi[c]]
            now = self.step(mid, group, {c: (self.lo[c], self.hi[c]) for c in group})
            self.steps.append(now)
            for ev in now.evidence:
                if ev.verdict == REGRESSED:
                    self.hi[ev.cell] = mid
                    n = next(n for n in self.looks if n >= ev.seeds)   # the look that decided
                    split = drift_split(ev, self.get(self.bad, n), self.get(mid, n),
                                        min_effect=self.min_effect, margin=self.margin,
                                        commit=self.commits[self.bad], at=self.commits[mid])
                    if split is not None:
                        at = self.commits[mid]
                        self.drifted[ev.cell] = (f"{at} against GOOD: {ev.detail}",
                                                 f"BAD against {at}: {split.detail} (the drop "
                                                 f"lies on both sides of {at})")
                        self.stuck.add(ev.cell)
                elif ev.verdict == SAME:
                    self.lo[ev.cell] = mid
                else:
                    self.stuck.add(ev.cell)

    def check_culprits(self, targets: Sequence[Cell]) -> None:
        """Mark as drifted each named culprit whose own step is smaller than δ while BAD's
        whole drop is larger (:func:`culprit_step`)."""
        for c in targets:
            if self.hi[c] - self.lo[c] != 1 or c in self.drifted:
                continue
            found = _last_evidence(self.steps, self.hi[c], c)
            n = next(n for n in self.looks if n >= found.seeds)
            total = self.judge(self.bad, [c], n, self.levels[self.looks.index(n)])[c]
            lines = culprit_step(found, total, self.get(self.hi[c], n), self.get(self.lo[c], n),
                                 margin=self.margin, min_effect=self.min_effect,
                                 culprit_id=self.commits[self.hi[c]],
                                 parent_id=self.commits[self.lo[c]])
            if lines:
                self.drifted[c] = lines

    def finding(self, c: Cell) -> Finding:
        """Cell ``c``'s result: its culprit, bracket, steps, and for a drift what moved."""
        lo, hi, drift = self.lo[c], self.hi[c], self.drifted.get(c, ())
        mine = tuple(s for s in self.steps if any(ev.cell == c for ev in s.evidence))
        culprit = self.commits[hi] if hi - lo == 1 and not drift else None
        moved = _moved(self.commits, self.get, c, self.looks[0]) if drift else ()
        return Finding(c, culprit, self.commits[lo], self.commits[hi], mine, drift, moved)


# A drifted cell's commits are each probed at the first look to name those that moved, in a
# range of at most this many: 32 × 10 seed-trainings, below a search's mean of 356 at −2δ
# (benchmarks/bisect_results.md); a longer range lists its probed commits.
MOVED_RANGE = 32


def _moved(commits: Sequence[str], get: Callable[[int, int], Reports], cell: Cell,
           n: int) -> tuple[tuple[str, float], ...]:
    """Each commit of a drifted ``cell`` whose values on ``n`` seeds differ from its parent's,
    with the mean of its step (+ = better); ``()`` for a range longer than
    :data:`MOVED_RANGE`."""
    if len(commits) > MOVED_RANGE:
        return ()
    sign = 1.0 if get(0, n)[cell[0]].metric(cell[1]).higher_is_better else -1.0
    out = []
    before = _cell_values(get(0, n), cell, commits[0])
    for i in range(1, len(commits)):
        now = _cell_values(get(i, n), cell, commits[i])
        shared = [s for s in now if s in before]
        step = np.array([now[s] for s in shared]) - np.array([before[s] for s in shared])
        if step.any():
            out.append((commits[i], sign * float(np.nanmean(step))))
        before = now
    return tuple(out)


def _last_evidence(steps: Sequence[Step], index: int, cell: Cell) -> Evidence:
    """``cell``'s evidence at the last step that probed commit ``index``."""
    return next(ev for step in reversed(steps) if step.index == index
                for ev in step.evidence if ev.cell == cell)


def culprit_step(found: Evidence, total: Evidence, culprit: Reports, parent: Reports, *,
                 margin: float, min_effect: float | None, culprit_id: str,
                 parent_id: str) -> tuple[str, ...]:
    """The lines that show a named culprit's own step is smaller than δ while the whole drop
    is larger (a drift), or ``()``. ``found``: the culprit's evidence against GOOD; ``total``:
    BAD's; the culprit and its parent (the last same commit) on the seeds that decided it.

    Two claims, each at the level of the look that decided the culprit: its step (culprit
    against parent) reads NOT WORSE, IDENTICAL or BETTER (the one-sided bound of its mean
    difference lies above −δ), and BAD's drop against GOOD exceeds δ (the one-sided bound of
    its mean difference lies below −δ). Under a single culprit whose step is δ or more, the
    first is wrong with probability at most that level; under a single step smaller than δ,
    the second is. A culprit decided bit for bit, or a metric without δ, is left as named."""
    if found.alpha is None or total.alpha is None or total.sd_diff is None \
            or total.mean_diff is None or total.min_effect is None:
        return ()
    from scipy import stats as st

    bound = total.mean_diff + st.t.ppf(1 - total.alpha, total.seeds - 1) * \
        total.sd_diff / math.sqrt(total.seeds)
    if not bound < -total.min_effect:
        return ()
    step = _judge(culprit, parent, [found.cell], alpha=found.alpha, min_effect=min_effect,
                  margin=margin, commit=culprit_id, good_commit=parent_id)[found.cell]
    if step.verdict != SAME:
        return ()
    return (f"{culprit_id} (the first commit that read REGRESSED against GOOD) against its "
            f"parent {parent_id}: {step.detail}: its own step is smaller than δ",
            f"BAD against GOOD: {total.detail}; its one-sided bound {fmt_signed(bound)} lies "
            f"below −δ: the whole drop is larger than δ")


def drift_split(ev: Evidence, bad: Reports, probe: Reports, *, min_effect: float | None,
                margin: float, commit: str, at: str) -> Evidence | None:
    """Whether BAD also reads REGRESSED against the probe ``at`` that just read REGRESSED
    against GOOD (``ev``), on the same seeds at the same level: the evidence when it does,
    None otherwise (and for a probe decided bit for bit, which took no test).

    If a single commit carried the drop, one side of any probe would hold none of it: the
    probe would equal GOOD (and not read REGRESSED against it) or BAD would equal the probe.
    Both sides reading REGRESSED rejects that at the look's level (an intersection-union
    test: each side at the level), so a drift is claimed where a single culprit is the truth
    with probability at most ``alpha`` over the search, as a wrong culprit is (the same
    Bonferroni shares; ``benchmarks/bisect_search.py --drift`` measures both)."""
    if ev.alpha is None:
        return None
    right = _judge(bad, probe, [ev.cell], alpha=ev.alpha, min_effect=min_effect,
                   margin=margin, commit=commit, good_commit=at)[ev.cell]
    return right if right.verdict == REGRESSED else None


def _nothing_regressed(commits: Sequence[str], evidence: Sequence[Evidence]) -> NothingRegressed:
    undecided = [ev for ev in evidence if ev.verdict == UNKNOWN]
    lines = [f"BAD ({commits[-1]}) does not read REGRESSED against GOOD ({commits[0]}) on any "
             + ("cell, and a cell stayed unknown at the budget: whether it regressed is not "
                "decided" if undecided else "cell, so there is nothing to bisect") + ":"]
    for ev in evidence:
        lines.append(f"  {ev.label}: {ev.verdict} — {ev.detail}")
        if ev.hint():
            lines.append(f"    to resolve it: {ev.hint()}")
    if not undecided:
        lines.append("Every cell reads same (no regression of δ or more): check the commits and "
                     "the pytest arguments.")
    return NothingRegressed("\n".join(lines), evidence, bool(undecided))


def _cell_values(reports: Reports, cell: Cell, commit: str) -> dict[int, float]:
    name, task, model = cell
    report = reports.get(name)
    if report is None or task not in report.tasks or model not in report.models:
        have = ", ".join(sorted(reports)) or "none"
        raise BisectRefusal(
            f"{commit}: its benchmark saved no report {name} with cell {task}/{model} (reports: "
            f"{have}); the test or cell may not exist at that commit. Narrow the pytest "
            "arguments to tests that exist across the range (-k, a file path).")
    return dict(zip(report.seeds, report.values(task, model).tolist(), strict=True))


def _bitwise_equal(a: Reports, b: Reports, cell: Cell, commit_a: str, commit_b: str) -> bool:
    """The cell's values in ``a`` and ``b`` are the same bits on every seed both hold."""
    va, vb = _cell_values(a, cell, commit_a), _cell_values(b, cell, commit_b)
    shared = [s for s in va if s in vb]
    if not shared:
        return False
    return bool(np.array([va[s] for s in shared]).tobytes()
                == np.array([vb[s] for s in shared]).tobytes())


def _judge(candidate: Reports, good: Reports, cells: Sequence[Cell], *, alpha: float,
           min_effect: float | None, margin: float, commit: str,
           good_commit: str) -> dict[Cell, Evidence]:
    """The gate's three-valued verdict on each of ``cells`` of ``candidate`` against GOOD: one
    not-worse call per report file (Holm across its cells), ``alpha`` split over the files."""
    by_name: dict[str, list[Cell]] = {}
    for cell in cells:
        _cell_values(candidate, cell, commit)   # a missing report or cell is a refusal
        by_name.setdefault(cell[0], []).append(cell)
    out: dict[Cell, Evidence] = {}
    for name, group in by_name.items():
        tasks = list(dict.fromkeys(c[1] for c in group))
        models = list(dict.fromkeys(c[2] for c in group))
        verdicts = compare_reports(candidate[name].subset(tasks=tasks, models=models),
                                   good[name].subset(tasks=tasks, models=models),
                                   gate="not_worse", margin=margin, min_effect=min_effect,
                                   alpha=alpha / len(by_name), source=f"GOOD ({good_commit})",
                                   rerun_safe=False, alone_reason="a bisect probe, at its "
                                   "look's share of alpha (Bonferroni over probes × looks)")
        for v in verdicts:
            cell = (name, v.task, v.model)
            if cell in group:
                c = v.comparison
                ev, dec, delta = c.evidence, c.decision, c.settings.min_effect
                p = dec.p_adjusted if dec.p_adjusted is not None else ev.p_value
                out[cell] = Evidence(
                    cell, _THREE[v.verdict], ev.n,
                    f"{v.verdict} at {ev.n} seeds: paired Δ {fmt_signed(ev.mean_diff)} "
                    f"({fmt_level(c.confidence_level)} CI "
                    f"{fmt_interval(dec.ci.low, dec.ci.high)}), "
                    f"p {fmt_p(p)}, δ {fmt_num(delta)}, alpha {fmt_num(dec.level)}",
                    sd_diff=float(ev.sd_diff), min_effect=delta, alpha=float(dec.level),
                    mean_diff=float(ev.mean_diff))
    return out
