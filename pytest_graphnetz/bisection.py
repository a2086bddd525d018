"""Bisecting a regression under noise: which commit between GOOD and BAD made a cell worse.

:func:`bisect_commits` is the search, a pure function over a ``probe(commit, n_seeds)`` callable
that returns the reports a commit's benchmark saves (by name; seeds ``0..n-1``); ``graphnetz
bisect`` implements the probe with git worktrees and pytest (:class:`GitProbe`), the benchmark
(``benchmarks/bisect_search.py``) with an in-process history. Each probe is judged by the gate
(:func:`~pytest_graphnetz.gates.compare_reports`, not-worse, paired by seed) against GOOD:

- **regressed**: REGRESSED;  **same**: NOT WORSE, IDENTICAL or BETTER (no regression of δ or
  more); **unknown**: INCONCLUSIVE, which re-runs the probe (and GOOD) on twice the seeds, up to
  ``max_seeds``; still unknown there stops that cell's search with its range unresolved.
- Before any statistics, a probe whose per-seed values equal a neighbour's bit for bit (the
  bracket's last-same or first-regressed commit, on the seeds both hold) takes that neighbour's
  verdict: an unchanged model is bit-identical, and such a commit spends no test.
- Error control: Bonferroni over every gate call. At most ``m = ceil(log2(len(commits))) + 2``
  probes decide a cell (the endpoint check, ``ceil(log2(len(commits) - 1))`` bisection steps
  and one spare), each through at most ``L`` seed counts (10, 20, 40: ``L = 3``), so every gate
  call is judged alone (``rerun_safe=False``) at ``alpha / (m · L)``, Holm across the cells
  inside a call (and split again over the report files a probe saves). A wrong verdict at any
  step, either way (REGRESSED with no regression, or NOT WORSE with one of δ or more), is what
  would name a wrong culprit, so the probability that a cell's named culprit (or its "same")
  is wrong is at most ``alpha``. Why not the gate's sequential schedule (each probe one test at
  ``alpha / m``, its seed counts the looks 10 → 20 → 40): its first look spends 0.85 of the
  level, which starves the later looks a probe needs, and it found fewer culprits on the same
  histories (``benchmarks/bisect_results.md``: 91.0% / 68.5% of culprits found at −2δ / −δ,
  against 98.0% / 87.5%).
"""

from __future__ import annotations

import math
import os
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from .gates import compare_reports
from .report import BenchmarkReport
from .stats import Verdict
from .text import fmt_interval, fmt_level, fmt_num, fmt_p, fmt_signed

REGRESSED, SAME, UNKNOWN = "regressed", "same", "unknown"
_THREE = {Verdict.REGRESSED: REGRESSED, Verdict.NOT_WORSE: SAME, Verdict.IDENTICAL: SAME,
          Verdict.BETTER: SAME, Verdict.INCONCLUSIVE: UNKNOWN}

Reports = Mapping[str, BenchmarkReport]
"""A probe's saved reports by name (``graphnetz bisect``: the path under the report dir)."""
Probe = Callable[[str, int], Reports]
"""``probe(commit, n)``: the reports of ``commit``'s benchmark on seeds ``0..n-1``."""
Cell = tuple[str, str, str]
"""(report name, task, model)."""


class BisectRefusal(ValueError):
    """The search cannot start or go on honestly (the message says why and what to do)."""


@dataclass(frozen=True)
class Evidence:
    """One cell's verdict at one probe: ``verdict`` (regressed / same / unknown), the seeds it
    was decided on, and ``detail``, the gate's numbers or the bit-for-bit match."""

    cell: Cell
    verdict: str
    seeds: int
    detail: str

    @property
    def label(self) -> str:
        return cell_label(self.cell)


@dataclass(frozen=True)
class Step:
    """One probed commit (``index`` into the commit list) and each cell's evidence there."""

    commit: str
    index: int
    evidence: tuple[Evidence, ...]


@dataclass(frozen=True)
class Finding:
    """A regressed cell's result: ``culprit`` is the first commit that reads regressed after a
    commit that reads same (None: the search stopped undecided and the culprit lies in
    ``(last_same, first_regressed]``); ``steps`` are the probes that decided it."""

    cell: Cell
    culprit: str | None
    last_same: str
    first_regressed: str
    steps: tuple[Step, ...]

    @property
    def label(self) -> str:
        return cell_label(self.cell)


@dataclass(frozen=True)
class BisectResult:
    """The search: a finding per cell that BAD regressed on, every step in order, the level each
    gate call ran at (``alpha_per_test``) and the most seeds each commit was probed on."""

    findings: tuple[Finding, ...]
    steps: tuple[Step, ...]
    alpha: float
    alpha_per_test: float
    tests: int
    seed_counts: tuple[int, ...]
    probed: dict[str, int] = field(default_factory=dict)

    @property
    def resolved(self) -> bool:
        return all(f.culprit is not None for f in self.findings)

    def lines(self) -> list[str]:
        """The report a person reads: each culprit with the evidence of each step."""
        out = [f"error control: Bonferroni over at most {self.tests} probes × "
               f"{len(self.seed_counts)} seed counts {list(self.seed_counts)}: each gate call "
               f"judged alone at alpha {fmt_num(self.alpha)}/{self.tests * len(self.seed_counts)}"
               f" = {fmt_num(self.alpha_per_test)} (Holm across a call's cells)"]
        for f in self.findings:
            out.append("")
            if f.culprit is not None:
                out.append(f"{f.label}: culprit {f.culprit} (last same: {f.last_same})")
            else:
                out.append(f"{f.label}: UNRESOLVED, the culprit lies after {f.last_same} and "
                           f"at or before {f.first_regressed} (a probe stayed unknown at "
                           f"{self.seed_counts[-1]} seeds; raise --max-seeds)")
            for step in f.steps:
                for ev in step.evidence:
                    if ev.cell == f.cell:
                        out.append(f"  {step.commit}: {ev.verdict.upper()} — {ev.detail}")
        return out


def cell_label(cell: Cell) -> str:
    name, task, model = cell
    return f"{name}::{task}/{model}"


def seed_schedule(seeds: int, max_seeds: int) -> tuple[int, ...]:
    """The seed counts a probe may take: ``seeds``, doubling, capped at ``max_seeds``."""
    if seeds < 2 or max_seeds < seeds:
        raise ValueError(f"`seeds` must be >= 2 and `max_seeds` >= `seeds`, got {seeds} and "
                         f"{max_seeds}")
    out = [seeds]
    while out[-1] < max_seeds:
        out.append(min(2 * out[-1], max_seeds))
    return tuple(out)


def bisect_commits(commits: Sequence[str], probe: Probe, *, seeds: int = 10,
                   max_seeds: int = 40, alpha: float = 0.05, min_effect: float | None = None,
                   margin: float = 0.0) -> BisectResult:
    """Find, per cell that ``commits[-1]`` (BAD) regressed on against ``commits[0]`` (GOOD),
    the first commit that reads regressed (see the module docstring for the verdicts and the
    error control). ``commits`` are in history order, GOOD first. Raises
    :class:`BisectRefusal` when BAD does not read REGRESSED against GOOD, or a probe lacks a
    report or cell GOOD has.
    """
    if len(commits) < 2:
        raise BisectRefusal("bisect needs two commits, GOOD and BAD")
    schedule = seed_schedule(seeds, max_seeds)
    tests = math.ceil(math.log2(len(commits))) + 2
    alpha_test = alpha / (tests * len(schedule))   # every gate call, judged alone
    memo: dict[tuple[int, int], Reports] = {}
    probed: dict[str, int] = {}

    def get(i: int, n: int) -> Reports:
        if (i, n) not in memo:
            memo[i, n] = probe(commits[i], n)
            probed[commits[i]] = max(n, probed.get(commits[i], 0))
        return memo[i, n]

    def step(i: int, cells: Sequence[Cell], neighbours: Mapping[Cell, Sequence[int]]) -> Step:
        decided: dict[Cell, Evidence] = {}
        first = get(i, schedule[0])
        for cell in cells:
            for j, verdict in zip(neighbours.get(cell, ()), (SAME, REGRESSED), strict=False):
                if _bitwise_equal(first, get(j, schedule[0]), cell, commits[i], commits[j]):
                    decided[cell] = Evidence(cell, verdict, schedule[0],
                                             f"per-seed values equal {commits[j]}'s bit for bit "
                                             "(no test)")
                    break
        for n in schedule:
            todo = [c for c in cells if c not in decided]
            if not todo:
                break
            judged = _judge(get(i, n), get(0, n), todo, alpha=alpha_test, min_effect=min_effect,
                            margin=margin, commit=commits[i], good_commit=commits[0])
            for cell, ev in judged.items():
                if ev.verdict != UNKNOWN or n == schedule[-1]:
                    decided[cell] = ev
        return Step(commits[i], i, tuple(decided[c] for c in cells))

    good = get(0, schedule[0])
    cells = [(name, t, m) for name, r in good.items() for t in r.tasks for m in r.models]
    bad = len(commits) - 1
    ends = step(bad, cells, {c: (0,) for c in cells})
    targets = [ev.cell for ev in ends.evidence if ev.verdict == REGRESSED]
    if not targets:
        raise BisectRefusal(
            f"BAD ({commits[-1]}) does not read REGRESSED against GOOD ({commits[0]}) on any "
            f"cell, so there is no regression to bisect:\n"
            + "\n".join(f"  {ev.label}: {ev.verdict} — {ev.detail}" for ev in ends.evidence)
            + "\nCheck the commits and the pytest arguments, or give more seeds (--max-seeds) "
              "or a smaller --min-effect.")
    lo = dict.fromkeys(targets, 0)
    hi = dict.fromkeys(targets, bad)
    stuck: set[Cell] = set()
    steps = [ends]
    while True:
        open_cells = [c for c in targets if hi[c] - lo[c] > 1 and c not in stuck]
        if not open_cells:
            break
        widest = max(open_cells, key=lambda c: hi[c] - lo[c])
        mid = (lo[widest] + hi[widest]) // 2
        group = [c for c in open_cells if lo[c] < mid < hi[c]]
        now = step(mid, group, {c: (lo[c], hi[c]) for c in group})
        steps.append(now)
        for ev in now.evidence:
            if ev.verdict == REGRESSED:
                hi[ev.cell] = mid
            elif ev.verdict == SAME:
                lo[ev.cell] = mid
            else:
                stuck.add(ev.cell)
    findings = []
    for c in targets:
        mine = tuple(s for s in steps if any(ev.cell == c for ev in s.evidence))
        culprit = commits[hi[c]] if hi[c] - lo[c] == 1 else None
        findings.append(Finding(c, culprit, commits[lo[c]], commits[hi[c]], mine))
    return BisectResult(tuple(findings), tuple(steps), alpha, alpha_test, tests, schedule,
                        probed)


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
                                   "share of alpha (Bonferroni over probes × seed counts)")
        for v in verdicts:
            cell = (name, v.task, v.model)
            if cell in group:
                c = v.comparison
                p = c.p_adjusted if c.p_adjusted is not None else c.p_value
                out[cell] = Evidence(
                    cell, _THREE[v.verdict], c.n,
                    f"{v.verdict} at {c.n} seeds: paired Δ {fmt_signed(c.mean_diff)} "
                    f"({fmt_level(c.confidence_level)} CI {fmt_interval(c.ci.low, c.ci.high)}), "
                    f"p {fmt_p(p)}, δ {fmt_num(c.min_effect)}, alpha {fmt_num(c.alpha)}")
    return out


# -- the probe of `graphnetz bisect`: a git worktree per commit, pytest in it -------------------

PYTEST_EXIT = {2: "interrupted or errors during collection", 3: "internal error",
               4: "usage error", 5: "no tests collected"}


class GitProbe:
    """``probe(commit, n)`` for :func:`bisect_commits`: ``commit`` checked out with ``git
    worktree add`` into a temporary folder under ``work`` (removed afterwards), pytest run there
    with the given arguments on seeds ``0..n-1``, every probe sharing one triple cache
    (``cache_dir``), and the candidate reports it saved (``--graphnetz-report-dir``) read back
    by their path under the report dir. A pytest run that errors (exit status other than 0, or
    1 for failed tests: a regressed commit fails its gate) is a :class:`BisectRefusal`.

    The pytest process imports this same pytest-graphnetz (its folder first on PYTHONPATH), so
    every probe is judged by one version of the plugin, whatever the commit pins.
    """

    def __init__(self, repo: Path, prefix: str, pytest_args: Sequence[str], *,
                 cache_dir: Path, work: Path, log: Callable[[str], None]) -> None:
        self.repo, self.prefix, self.pytest_args = repo, prefix, list(pytest_args)
        self.cache_dir, self.work, self.log = cache_dir, work, log
        self.runs = 0

    def __call__(self, commit: str, n: int) -> Reports:
        self.runs += 1
        tree = self.work / f"tree-{self.runs}"
        out = self.work / f"reports-{self.runs}"
        self.log(f"probe {commit}: pytest on {n} seeds")
        git(self.repo, "worktree", "add", "--detach", "--quiet", str(tree), commit)
        try:
            env = dict(os.environ)
            here = str(Path(__file__).resolve().parents[1])
            env["PYTHONPATH"] = os.pathsep.join(
                [here, *([env["PYTHONPATH"]] if env.get("PYTHONPATH") else [])])
            proc = subprocess.run(
                [sys.executable, "-m", "pytest", *self.pytest_args, f"--graphnetz-seeds={n}",
                 f"--graphnetz-report-dir={out}", f"--graphnetz-cache-dir={self.cache_dir}",
                 "-q", "-p", "no:cacheprovider"],
                cwd=tree / self.prefix, env=env, capture_output=True, text=True, check=False)
        finally:
            git(self.repo, "worktree", "remove", "--force", str(tree))
        if proc.returncode not in (0, 1):
            tail = "\n".join((proc.stdout + proc.stderr).strip().splitlines()[-15:])
            raise BisectRefusal(
                f"{commit}: the probe cannot be built: pytest exited {proc.returncode} "
                f"({PYTEST_EXIT.get(proc.returncode, 'error')}) with "
                f"`pytest {' '.join(self.pytest_args)}`; its output ends:\n{tail}")
        reports = {p.relative_to(out).as_posix().removesuffix(".json"):
                   BenchmarkReport.from_json(p) for p in sorted(out.rglob("*.json"))}
        if not reports:
            raise BisectRefusal(
                f"{commit}: pytest saved no candidate report (no gate ran on a graphnetz run); "
                "give pytest arguments that select gated tests")
        return reports


def git(repo: Path, *args: str) -> str:
    """``git -C repo args``' output; a failure is a :class:`BisectRefusal` with git's words."""
    proc = subprocess.run(["git", "-C", str(repo), *args], capture_output=True, text=True,
                          check=False)
    if proc.returncode != 0:
        raise BisectRefusal(f"`git {' '.join(args)}` failed: "
                            f"{' '.join(proc.stderr.split()) or proc.returncode}")
    return proc.stdout.strip()


def commit_range(repo: Path, good: str, bad: str) -> list[str]:
    """GOOD, then every commit after it up to BAD along BAD's first parents (12-digit ids)."""
    ids = []
    for role, rev in (("GOOD", good), ("BAD", bad)):
        try:
            ids.append(git(repo, "rev-parse", "--verify", "--quiet", f"{rev}^{{commit}}"))
        except BisectRefusal:
            raise BisectRefusal(f"{role} {rev!r} is not a commit of {repo} (a commit id, tag "
                                "or branch)") from None
    good_id, bad_id = ids
    if subprocess.run(["git", "-C", str(repo), "merge-base", "--is-ancestor", good_id, bad_id],
                      check=False).returncode != 0:
        raise BisectRefusal(f"GOOD {good} is not an ancestor of BAD {bad}: give GOOD first, "
                            "an older commit on BAD's history")
    after = git(repo, "rev-list", "--reverse", "--first-parent", "--ancestry-path",
                f"{good_id}..{bad_id}").split()
    if not after:
        raise BisectRefusal(f"GOOD {good} and BAD {bad} are the same commit")
    return [c[:12] for c in (good_id, *after)]


def run_bisect(good: str, bad: str, pytest_args: Sequence[str], *, seeds: int, max_seeds: int,
               alpha: float, min_effect: float | None, margin: float,
               cache_dir: str | None) -> int:
    """``graphnetz bisect``: 0 when every regressed cell's culprit is named, 1 when a search
    stopped undecided, 2 (a refusal, printed) when the endpoints do not differ or a probe cannot
    be built."""
    def log(line: str) -> None:
        print(line, file=sys.stderr, flush=True)

    for arg in pytest_args:
        if arg.startswith(("--graphnetz-seeds", "--graphnetz-report-dir",
                           "--graphnetz-cache-dir")):
            raise BisectRefusal(f"pytest argument {arg}: bisect sets the seeds, report dir and "
                                "cache dir of each probe itself (--seeds, --max-seeds, "
                                "--cache-dir); leave it out")
    try:
        repo = Path(git(Path.cwd(), "rev-parse", "--show-toplevel"))
    except BisectRefusal:
        raise BisectRefusal(f"{Path.cwd()} is not inside a git repository: run graphnetz "
                            "bisect from the project's checkout") from None
    prefix = git(Path.cwd(), "rev-parse", "--show-prefix")
    commits = commit_range(repo, good, bad)
    log(f"bisect: {len(commits)} commits from GOOD {commits[0]} to BAD {commits[-1]}")
    work = Path(tempfile.mkdtemp(prefix="graphnetz-bisect-"))
    try:
        cache = Path(cache_dir).resolve() if cache_dir else work / "cache"
        probe = GitProbe(repo, prefix, pytest_args, cache_dir=cache, work=work, log=log)
        result = bisect_commits(commits, probe, seeds=seeds, max_seeds=max_seeds, alpha=alpha,
                                min_effect=min_effect, margin=margin)
    finally:
        shutil.rmtree(work, ignore_errors=True)
        git(repo, "worktree", "prune")
    for line in result.lines():
        print(line)
    for f in result.findings:
        if f.culprit is not None:
            print(f"\n{f.label}: culprit {git(repo, 'log', '-1', '--format=%h %s', f.culprit)}")
    trainings = sum(result.probed.values())
    print(f"\n{len(result.probed)} commits probed, {trainings} seed-runs requested "
          f"(the shared triple cache trains each (code, seed) once)")
    return 0 if result.resolved else 1
