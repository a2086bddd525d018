"""The paired bisect: the search over a probe (pure, from_arrays reports) and `graphnetz bisect`
in a scratch git repository (each probe a git worktree and a pytest run)."""

from __future__ import annotations

import math
import sys

import numpy as np
import pytest

from pytest_graphnetz import BenchmarkReport
from pytest_graphnetz.base.text import fmt_num
from pytest_graphnetz.cli.bisection.search import (
    DEFAULT_MAX_SEEDS,
    REGRESSED,
    SAME,
    BisectRefusal,
    NothingRegressed,
    bisect_commits,
    look_alphas,
    seed_schedule,
)
from pytest_graphnetz.cli.main import main

SEEDS = np.arange(100)


def noise(stream: int, n: int, sd: float = 0.005) -> np.ndarray:
    """Per-seed values of one RNG stream: seed s's value never depends on n (prefixes)."""
    return np.array([sd * np.random.default_rng([stream, s]).standard_normal() for s in range(n)])


class History:
    """commit i -> (shift, stream) per model; probes counted."""

    def __init__(self, commits: list[dict[str, tuple[float, int]]]) -> None:
        self.commits = commits
        self.calls: list[tuple[str, int]] = []

    def probe(self, commit: str, n: int) -> dict[str, BenchmarkReport]:
        self.calls.append((commit, n))
        spec = self.commits[int(commit)]
        X = np.array([[0.8 + shift + noise(stream, n) for shift, stream in spec.values()]])
        return {"test_m/test_a": BenchmarkReport.from_arrays(
            X, tasks=["t"], models=list(spec), seeds=range(n), metric="accuracy")}


def linear(n: int, culprit: int, shift: float = -0.03, restream: tuple[int, ...] = ()) -> History:
    commits, stream = [], 0
    for i in range(n):
        stream += i in restream
        commits.append({"GCN": (shift if i >= culprit else 0.0, stream)})
    return History(commits)


def test_culprit_named_with_the_evidence_of_each_step() -> None:
    h = linear(16, culprit=11, restream=(3, 9, 13))
    result = bisect_commits([str(i) for i in range(16)], h.probe, min_effect=0.01)
    (finding,) = result.findings
    assert finding.culprit == "11" and finding.last_same == "10"
    assert result.resolved
    # every step touching the cell is in the finding, with its verdict and numbers
    verdicts = {s.commit: s.evidence[0].verdict for s in finding.steps}
    assert verdicts["15"] == REGRESSED
    assert all(v == (REGRESSED if int(c) >= 11 else SAME) for c, v in verdicts.items())
    text = "\n".join(result.lines())
    assert "culprit 11" in text and "paired Δ" in text and "Bonferroni" in text
    # the level each step prints is the level its look's decision used
    levels = dict(zip(result.seed_counts, result.look_alphas, strict=True))
    for step in finding.steps:
        ev = step.evidence[0]
        if ev.alpha is not None:
            assert ev.alpha == levels[ev.seeds]
            assert f"alpha {fmt_num(ev.alpha)}" in ev.detail
            assert f"{ev.seeds} seeds at {fmt_num(ev.alpha)}" in text


def test_bit_identical_neighbour_decides_without_a_test() -> None:
    # no stream changes: every commit before the culprit is GOOD bit for bit, every one after BAD
    h = linear(8, culprit=5)
    result = bisect_commits([str(i) for i in range(8)], h.probe, min_effect=0.01)
    assert result.findings[0].culprit == "5"
    details = [s.evidence[0].detail for s in result.steps[1:]]
    assert details and all("bit for bit" in d and "no test" in d for d in details)
    assert all(n == 10 for _, n in h.calls)   # nothing took more seeds


def test_unknown_takes_more_seeds_up_to_the_budget() -> None:
    # the culprit at -δ with noise that 10 seeds cannot resolve: later looks double the seeds
    h = linear(4, culprit=2, shift=-0.01, restream=(1, 2, 3))
    result = bisect_commits(["0", "1", "2", "3"], lambda c, n: _noisy(h, c, n, 0.01),
                            seeds=10, max_seeds=80, min_effect=0.01)
    assert {n for _, n in h.calls} > {10}
    assert max(ev.seeds for s in result.steps for ev in s.evidence) > 10
    assert result.findings[0].culprit == "2"


def _noisy(h: History, commit: str, n: int, sd: float) -> dict[str, BenchmarkReport]:
    h.calls.append((commit, n))
    shift, stream = h.commits[int(commit)]["GCN"]
    X = (0.8 + shift + noise(stream, n, sd))[None, None, :]
    return {"r": BenchmarkReport.from_arrays(X, tasks=["t"], models=["GCN"], seeds=range(n),
                                             metric="accuracy")}


def test_every_regressed_cell_gets_its_own_culprit() -> None:
    commits = []
    for i in range(10):
        commits.append({"GCN": (-0.03 if i >= 3 else 0.0, int(i >= 5)),
                        "GAT": (-0.03 if i >= 7 else 0.0, int(i >= 5)),
                        "MLP": (0.0, int(i >= 5))})
    h = History(commits)
    result = bisect_commits([str(i) for i in range(10)], h.probe, min_effect=0.01)
    got = {f.cell[2]: f.culprit for f in result.findings}
    assert got == {"GCN": "3", "GAT": "7"}   # MLP did not regress: not a target


def test_nothing_regressed_is_its_own_outcome() -> None:
    same = linear(5, culprit=99, restream=(2,))
    with pytest.raises(NothingRegressed, match="does not read REGRESSED") as info:
        bisect_commits([str(i) for i in range(5)], same.probe, min_effect=0.01)
    assert not info.value.undecided and "Every cell reads same" in str(info.value)


def test_an_undecided_probe_says_what_delta_its_seeds_resolve() -> None:
    """BAD at −δ under noise its budget cannot resolve: undecided, and the hint names the δ
    those seeds resolve (larger than the δ asked for) and the budget δ needs, never "a smaller
    --min-effect"; that δ, given back, decides the probe."""
    h = linear(3, culprit=2, shift=-0.004, restream=(2,))
    with pytest.raises(NothingRegressed) as info:
        bisect_commits(["0", "1", "2"], lambda c, n: _noisy(h, c, n, 0.02), seeds=10,
                       max_seeds=20, min_effect=0.005)
    err = info.value
    assert err.undecided
    (ev,) = err.evidence
    text = str(err)
    resolved = float(text.split("resolves δ ≥ ")[1].split()[0])
    assert resolved > 0.005 and "smaller --min-effect" not in text
    assert f"at power 0.8: rerun with --min-effect {fmt_num(resolved)}" in text
    need = int(text.split("needs about ")[1].split(" seeds")[0])
    budget = int(text.split("--max-seeds ")[1].split(",")[0])
    assert need > 20 and budget >= need and budget in (40, 80, 160, 320, 640, 1280)
    # an independent check of "resolves": the one-sided t power at that δ is at least 0.8
    from scipy import stats as st

    se = ev.sd_diff / math.sqrt(ev.seeds)
    crit = st.t.ppf(1 - ev.alpha, ev.seeds - 1)
    power = st.nct.sf(crit, ev.seeds - 1, resolved / se)
    assert power >= 0.79


def test_refusals() -> None:
    h = linear(5, culprit=2)

    def missing(commit: str, n: int) -> dict[str, BenchmarkReport]:
        return {} if commit == "2" else h.probe(commit, n)

    with pytest.raises(BisectRefusal, match="saved no report test_m/test_a"):
        bisect_commits([str(i) for i in range(5)], missing, min_effect=0.01)
    with pytest.raises(ValueError, match="max_seeds"):
        seed_schedule(10, 5)


def test_error_budget_is_split_over_steps_and_seed_counts() -> None:
    h = linear(32, culprit=20, restream=(4, 12, 25))
    result = bisect_commits([str(i) for i in range(32)], h.probe, min_effect=0.01,
                            alpha=0.05, seeds=10)
    assert DEFAULT_MAX_SEEDS == 160
    assert result.seed_counts == (10, 20, 40, 80, 160)   # the gate's schedule, doubling
    assert result.tests == math.ceil(math.log2(32)) + 2 == 7
    # Bonferroni over every gate call: each look of each probe, its share ∝ its seeds
    assert result.look_alphas == pytest.approx(
        tuple(0.05 / 7 * n / 310 for n in (10, 20, 40, 80, 160)))
    assert sum(result.look_alphas) * result.tests == pytest.approx(0.05)
    assert look_alphas(0.05, 4, (10, 20)) == pytest.approx((0.05 / 12, 0.05 / 6))
    # a cell is decided by at most `tests` probes
    assert len(result.findings[0].steps) <= result.tests


def test_wrong_culprits_are_rare_under_noise() -> None:
    """A simulation of the error claim: with the culprit at −2δ and noise the first look cannot
    resolve, a wrong commit is named in at most α of the searches (here far fewer: the union
    bound is loose)."""
    wrong, runs = 0, 30
    rng = np.random.default_rng(7)
    for trial in range(runs):
        culprit = int(rng.integers(1, 12))
        restream = tuple(int(i) for i in rng.choice(np.arange(1, 12), 4, replace=False))
        h = linear(12, culprit, shift=-0.02, restream=restream)
        for c in h.commits:
            shift, stream = c["GCN"]
            c["GCN"] = (shift, stream + 100 * trial)
        result = bisect_commits([str(i) for i in range(12)],
                                lambda c, n, h=h: _noisy(h, c, n, 0.012), min_effect=0.01)
        named = result.findings[0].culprit
        wrong += named is not None and named != str(culprit)
    assert wrong / runs <= 0.05


def test_bisect_help_shows_the_pytest_args_form_and_exit_codes(capsys) -> None:
    with pytest.raises(SystemExit) as exc:
        main(["bisect", "--help"])
    assert exc.value.code == 0
    out = " ".join(capsys.readouterr().out.split())
    assert "graphnetz bisect GOOD BAD [options] -- [PYTEST ARGS ...]" in out
    assert "3 nothing regressed" in out and f"default {DEFAULT_MAX_SEEDS}" in out


def test_the_command_exits_2_outside_a_git_repository(pytester: pytest.Pytester) -> None:
    """The installed command's exit status and message, from a fresh interpreter."""
    result = pytester.run(sys.executable, "-m", "pytest_graphnetz.cli", "bisect", "HEAD~1",
                          "HEAD", "--", "-q")
    assert result.ret == 2
    assert "not inside a git repository" in result.stderr.str()


def test_a_drift_is_told_from_a_step() -> None:
    """Five commits each lose 0.6 points (δ is 1 point, the total 3): no single commit carries
    the drop. The search says so, names the commits that moved and points to history, and
    stops there instead of taking look after look near the crossing. A single 3-point step in
    the same range still names its culprit."""
    drift = History([{"GCN": (-0.006 * min(i, 5), i)} for i in range(6)])
    result = bisect_commits([str(i) for i in range(6)], drift.probe, min_effect=0.01)
    (finding,) = result.findings
    assert finding.culprit is None and finding.drift and not result.resolved
    text = "\n".join(result.lines())
    assert "DRIFT, no single commit carries the drop" in text, text
    assert "the commits that moved" in text and "graphnetz history" in text
    assert max(n for _, n in drift.calls) < DEFAULT_MAX_SEEDS, drift.calls
    step = History([{"GCN": (-0.03 if i >= 3 else 0.0, i)} for i in range(6)])
    (found,) = bisect_commits([str(i) for i in range(6)], step.probe, min_effect=0.01).findings
    assert found.culprit == "3" and not found.drift
