"""What a comparison of one cell is made of, each part immutable and built once: the
:class:`Evidence` of the paired seeds (what was measured: Δ, sd, se, df, p, the test and its
correction; :func:`measure`), the :class:`DecisionSettings` it is judged under (kind, margin,
δ, α, power: arguments, never part of the evidence), the :class:`Decision` on it (verdict,
levels, adjusted p, the interval and MDE at those levels) and the :class:`Plan` (the seeds
that would decide an open cell); :class:`Comparison` composes them with the prose
(:func:`evidence_notes`). The decision is made in :mod:`.decisions`, the one kernel."""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, field
from enum import Enum
from typing import Any

import numpy as np
from numpy.typing import ArrayLike

from pytest_graphnetz.stats._common import (
    KINDS,
    PAIRED_TESTS,
    ConfidenceInterval,
    RngLike,
    as_vector,
    check_choice,
    fold_ratio,
    t_moments,
    within_resolution,
)
from pytest_graphnetz.stats.paired import (
    PairedEvidence,
    evidence_of,
    floor_notes,
    fold_corrected,
    require_pairs,
)
from pytest_graphnetz.stats.skew import SkewCheck, corrected_p_values, skew_check, skew_note


class Verdict(str, Enum):
    """Outcome of one gated cell.

    ``IDENTICAL`` (every paired difference exactly 0) passes ``not_worse`` and ``equivalent``
    gates and fails a ``better`` gate; the others read as their names.
    """

    REGRESSED = "REGRESSED"
    NOT_WORSE = "NOT WORSE"
    INCONCLUSIVE = "INCONCLUSIVE"
    IDENTICAL = "IDENTICAL"
    BETTER = "BETTER"
    EQUIVALENT = "EQUIVALENT"
    NOT_EQUIVALENT = "NOT EQUIVALENT"

    def __str__(self) -> str:
        return self.value


# What was done to a test's statistic beyond the test itself (:attr:`Evidence.correction`):
# nothing; the skew guard's Hall-corrected t on the tail it tightens (:func:`~.skew.guarded_t`);
# k-fold CV's corrected resampled t (Nadeau–Bengio, :func:`~.paired.fold_corrected`).
CORRECTIONS = ("", "skew-guarded", "fold-corrected")


@dataclass(frozen=True)
class DecisionSettings:
    """What one cell is judged under, built once by the caller and passed as one value:
    ``kind`` of gate (``"not_worse"``, ``"better"``, ``"equivalent"``), the ``test`` asked for,
    ``margin`` (the tolerated drop, metric units), ``min_effect`` (δ, the smallest regression
    that matters; ``not_worse`` only, None for none), ``alpha`` (the call's one-sided level),
    ``power`` (at which the MDE and the seeds plans are read), ``n_resamples`` (resampling
    tests) and ``skew_guard`` (a ``not_worse`` paired t measures the skew of its differences,
    :mod:`.skew`; off where the differences are not independent draws, such as a suite row's).
    Nothing in it is measured: the :class:`Evidence` holds what was."""

    kind: str = "not_worse"
    test: str = "paired-t"
    margin: float = 0.0
    min_effect: float | None = None
    alpha: float = 0.05
    power: float = 0.8
    n_resamples: int = 10_000
    skew_guard: bool = True

    def check(self, where: str) -> None:
        """Raises ``ValueError`` naming ``where`` (the cell) on a setting out of its range."""
        check_choice("kind", self.kind, KINDS)
        check_choice("test", self.test, PAIRED_TESTS)
        if not self.margin >= 0:
            raise ValueError(f"{where}: `margin` must be >= 0 (in metric units), "
                             f"got {self.margin!r}")
        if not 0 < self.alpha < 0.5:
            raise ValueError(f"{where}: `alpha` must lie in (0, 0.5), got {self.alpha!r}")
        if self.min_effect is not None and not (math.isfinite(self.min_effect)
                                                and self.min_effect > self.margin):
            raise ValueError(
                f"{where}: `min_effect` (δ, the smallest regression that matters) must be a "
                f"number larger than `margin` ({self.margin:g}, the drop that is tolerated), "
                f"got {self.min_effect!r}")


DEFAULT_SETTINGS = DecisionSettings()


@dataclass(frozen=True)
class Evidence:
    """What a cell's paired seeds measured, before anything is decided on them; the settings
    it was measured under (:class:`DecisionSettings`) are not part of it.

    Differences ``d = candidate - baseline``, sign-flipped for lower-is-better metrics.
    ``kind``: the hypotheses the p-values test (see :class:`Comparison`); ``test``: the test
    that ran; ``correction``: what was done to its statistic (:data:`CORRECTIONS`). ``n``
    usable pairs, ``mean_diff`` of d; ``sd_diff``: the sd whose ``se = sd_diff / √n`` the test
    reads (the sample sd of d; on k-fold CV the corrected one, ``sqrt(1 + n·ρ)`` times
    ``sd_per_fold``, the sample sd of d there, NaN on other tasks); ``df``: the degrees of
    freedom of the test's t; ``p_value``: raw p of the
    kind's primary test, ``p_reverse`` of the opposite one, ``p_better`` of "mean d > margin";
    ``p_floor``: the smallest one-sided p the test can produce; ``identical``: every difference
    exactly 0 (no test run); ``diverged_seeds`` / ``excluded_seeds``: seeds where only the
    candidate / the baseline (or both) diverged; ``paired``: the test's one-sided evidence, for
    intervals at any level (None when no test ran); ``skew``: the skew guard's check on the
    differences (:mod:`.skew`; a ``not_worse`` paired t, else None)."""

    kind: str
    test: str
    n: int
    mean_diff: float
    sd_diff: float
    se: float
    df: float
    p_value: float
    p_reverse: float
    p_better: float
    p_floor: float
    correction: str = ""
    sd_per_fold: float = math.nan
    diverged_seeds: tuple[int, ...] = ()
    excluded_seeds: tuple[int, ...] = ()
    identical: bool = False
    paired: PairedEvidence | None = field(default=None, repr=False, compare=False)
    skew: SkewCheck | None = None

    @property
    def p_regressed(self) -> float:
        """Raw p of REGRESSED's test: the primary one for ``not_worse``, the reverse one for
        ``better`` ("mean d < 0"); nothing for ``equivalent``."""
        return {"not_worse": self.p_value, "better": self.p_reverse}.get(self.kind, math.nan)

    def interval(self, low_alpha: float, high_alpha: float) -> ConfidenceInterval:
        """The interval whose lower end is the one-sided ``1 - low_alpha`` bound and whose
        upper end is the one-sided ``1 - high_alpha`` bound of this test on these seeds
        (``interval(alpha, alpha)``: the two-sided ``1 - 2·alpha`` one). Identical seeds give
        [0, 0]; a cell with no test (fewer than 2 pairs) an interval of NaN."""
        if self.paired is None:
            return ConfidenceInterval(0.0, 0.0) if self.identical else ConfidenceInterval(
                math.nan, math.nan)
        low = self.paired.bounds(1 - 2 * low_alpha)[0]
        high = self.paired.bounds(1 - 2 * high_alpha)[1]
        return ConfidenceInterval(low, high)


def evidence_notes(evidence: Evidence, level: float) -> tuple[str, ...]:
    """What ``evidence`` says about itself, as a message shows it, for a look deciding at the
    one-sided ``level``: diverged and excluded seeds, a cell no test could run on or none was
    run on, a test whose floor lies above ``level``, an unpaired test, an approximate MDE, the
    skew guard."""
    ev, notes = evidence, []
    if ev.diverged_seeds:
        notes.append(f"candidate diverged (non-finite metric) at seed(s) "
                     f"{list(ev.diverged_seeds)} where the baseline did not: counted as "
                     "failures, so the cell cannot pass")
    if ev.excluded_seeds:
        notes.append(f"seed(s) {list(ev.excluded_seeds)} excluded: the baseline diverged there "
                     "(both sides, or baseline only), so there is no pair to compare")
    if ev.n < 2:
        notes.append(
            f"only {ev.n} seed(s) trained on both sides, so no paired test can run: the "
            f"candidate diverged on {len(ev.diverged_seeds)} seed(s) the baseline trained on, "
            "which decides the cell (each counts as the worst possible value)")
    elif ev.identical:
        notes.append("every paired difference is exactly 0 (an unchanged model): no test run")
    else:
        notes.extend(floor_notes(ev.test, ev.n, ev.p_floor, level, "one-sided"))
        if ev.test == "welch":
            notes.append("welch: unpaired test; the seeds' pairing is ignored")
        if (ev.test not in ("paired-t", "welch") and ev.p_floor <= level
                and math.isfinite(ev.sd_diff)):
            notes.append(f"MDE from the paired-t power formula (approximate for {ev.test})")
        if ev.skew is not None and ev.skew.fires:
            notes.append(skew_note(ev.skew))
    return tuple(notes)


@dataclass(frozen=True)
class Decision:
    """What is decided on one cell's evidence.

    - ``verdict``: the kernel's (:func:`~.decisions.decide_look`; REGRESSED may be the call's
      family's).
    - ``p_adjusted``: REGRESSED's p in the call's family (Holm across the tested cells of one
      ``not_worse`` call); the raw p of one cell, and for ``better`` / ``equivalent``
      (intersection-union tests).
    - ``level``: the one-sided level the look decides NOT WORSE and BETTER at: the call's
      ``alpha``, or on a schedule the look's nominal level.
    - ``regressed_level``: the level REGRESSED is tested at: ``level``, Holm's ``alpha / m``,
      or on a schedule the look's nominal level at it.
    - ``mde``: minimum detectable effect at this n, one-sided at ``regressed_level``, at the
      settings' ``power`` (noncentral t, see :func:`~.planning.mde`): a true shift of ``mde``
      beyond the margin's boundary is caught with probability ``power``; ``inf`` when the test
      cannot reach the level at this n.
    - ``ci``: the interval reported, its ends the one-sided bounds at the levels
      ``ci_alphas`` (lower, upper; None: both at ``level``): on a schedule the look's nominal
      level, and REGRESSED's level on the upper end.
    """

    verdict: Verdict
    p_adjusted: float
    level: float
    regressed_level: float
    mde: float
    ci: ConfidenceInterval
    ci_alphas: tuple[float, float] | None = None


@dataclass(frozen=True)
class Plan:
    """What an INCONCLUSIVE cell does next (None for the other verdicts).

    ``needed``: the seeds of its next run. For ``not_worse`` planned for δ (see
    :func:`~.planning.seeds_for_min_effect`; None without ``min_effect``); on the schedule, the
    next look (what the CI loop runs next). For the other kinds planned for the observed mean
    difference (None when no number of seeds would decide it). ``expected``: on the schedule,
    the seeds the cell is expected to use before it decides
    (:func:`~.lookahead.plan_next_look`); None elsewhere.
    """

    needed: int | None = None
    expected: int | None = None


@dataclass(frozen=True)
class Comparison:
    """The verdict on one cell: candidate against baseline on paired seeds, composed of its
    :class:`Evidence` (``c.evidence.n``, ``.mean_diff``, ``.p_value``...), the
    :class:`DecisionSettings` it was judged under (``c.settings.margin``, ``.min_effect``...),
    the :class:`Decision` on it (``c.decision.verdict``, ``.p_adjusted``, ``.ci``, ``.mde``...),
    its :class:`Plan` (``c.plan.needed``) and ``notes`` (the prose of all of them), each built
    once; callers read the parts. For ``not_worse`` the evidence's ``p_value`` is H1 "mean d <
    -margin" (small p = REGRESSED) and ``p_reverse`` H1 "mean d > -min_effect" (small p = NOT
    WORSE; at ``-margin`` when ``min_effect`` is None); for ``better`` ``p_value`` is H1 "mean
    d > margin" (BETTER) and ``p_reverse`` H1 "mean d < 0" (REGRESSED); for ``equivalent``
    both are the TOST p. A seed where only the candidate diverged counts as a failure
    (REGRESSED, NOT EQUIVALENT for ``equivalent``).
    """

    evidence: Evidence
    settings: DecisionSettings
    decision: Decision
    plan: Plan = Plan()
    notes: tuple[str, ...] = ()

    @property
    def confidence_level(self) -> float:
        """Level of ``decision.ci``: ``1 - 2·level``, the two-sided interval of the one-sided
        tests (``1 - low_alpha - high_alpha`` when its ends are at the levels of
        ``decision.ci_alphas``)."""
        alphas = self.decision.ci_alphas
        if alphas is not None:
            return 1 - alphas[0] - alphas[1]
        return 1 - 2 * self.decision.level

    @property
    def below_min_effect(self) -> bool:
        """A significant drop smaller than δ: REGRESSED (which wins), yet the non-inferiority
        test at δ also passed. Accepting such a drop is a ``margin`` decision."""
        ev, dec = self.evidence, self.decision
        return (dec.verdict is Verdict.REGRESSED and ev.kind == "not_worse"
                and self.settings.min_effect is not None and not ev.diverged_seeds
                and ev.p_reverse <= dec.level)


def measure(candidate: ArrayLike, baseline: ArrayLike,
            settings: DecisionSettings = DEFAULT_SETTINGS, *, higher_is_better: bool = True,
            folds: int | None = None, rng: RngLike = None, label: str | None = None,
            seeds: Sequence[int] | None = None) -> Evidence:
    """The :class:`Evidence` of one cell, ``candidate`` vs ``baseline`` (n_seeds,) aligned by
    seed, under ``settings`` (:func:`~.decisions.compare` documents the arguments): the tests,
    nothing decided. Raises ``ValueError`` on bad settings and on fewer than 2 usable pairs
    unless the candidate diverged.

    A ``not_worse`` paired t carries the skew guard (:mod:`.skew`) on these differences: its
    check in ``skew``, and where it fires the three p-values of the guarded statistics
    (:func:`~.skew.guarded_t`, the one rule the gate's looks and the schedule walk decide
    with), ``correction="skew-guarded"``; the interval stays the plain t's. ``folds``: k of a
    k-fold CV task, whose differences are not independent: whatever ``test`` was asked, the
    corrected resampled t test (Nadeau–Bengio, :func:`~.paired.fold_corrected`),
    ``correction="fold-corrected"``, no skew guard."""
    where = label or "cell"
    cand, base = as_vector(candidate, "candidate", where), as_vector(baseline, "baseline", where)
    if cand.shape != base.shape:
        raise ValueError(f"{where}: candidate has {cand.size} seeds but baseline has {base.size}; "
                         "pair them by seed value first")
    settings.check(where)
    names = list(range(cand.size)) if seeds is None else list(seeds)
    if len(names) != cand.size:
        raise ValueError(f"{where}: {len(names)} seed labels for {cand.size} values")
    test, correction = settings.test, ""
    if folds is not None:
        test, correction = "paired-t", "fold-corrected"
        cand = fold_corrected(cand, base, k=folds)
    c_bad, b_bad = ~np.isfinite(cand), ~np.isfinite(base)
    keep = ~(c_bad | b_bad)
    diverged = tuple(names[i] for i in np.flatnonzero(c_bad & ~b_bad))
    excluded = tuple(names[i] for i in np.flatnonzero(b_bad))
    if not diverged:  # a diverged candidate is decided below, however few pairs remain
        require_pairs(int(keep.sum()), where, [names[i] for i in np.flatnonzero(~keep)])
    sign = 1.0 if higher_is_better else -1.0
    c, b = sign * cand[keep], sign * base[keep]
    # Rounding is not evidence: a pair within the data's resolution is the same value.
    c = np.where(within_resolution(c, b), b, c)
    d = c - b
    n = int(d.size)
    if n < 2:  # only with a diverged candidate (checked above): no spread, maybe no pair at all
        sd = math.nan
    else:
        sd = (float(t_moments(d)[1]) if test != "welch"   # scaled: finite never gives inf
              else float(np.sqrt(c.var(ddof=1) + b.var(ddof=1))))
    # the Evidence fields every outcome below shares
    shared: dict[str, Any] = dict(
        kind=settings.kind, test=test, n=n, mean_diff=float(d.mean()) if n else math.nan,
        sd_diff=sd, se=sd / math.sqrt(n) if n else math.nan,
        df=float(n - 1) if n >= 2 else math.nan, correction=correction, sd_per_fold=math.nan,
        diverged_seeds=diverged, excluded_seeds=excluded)
    if folds is not None:   # the corrected se's sd is the per-fold sd scaled up
        shared["sd_per_fold"] = sd / math.sqrt(1 + n * fold_ratio(folds))
    if n < 2:
        # No test can run; the divergence rule decides. The p-values read a diverged seed as
        # the worst possible value (mean d = -inf): certain regression, no chance of better or
        # equivalent. Mean Δ is over the pairs that remain.
        regressed = 0.0 if settings.kind == "not_worse" else 1.0  # p of the primary test
        return Evidence(p_value=regressed, p_reverse=1.0 - regressed, p_better=1.0,
                        p_floor=0.0, **shared)
    if not diverged and bool(np.all(d == 0)):
        return Evidence(p_value=1.0, p_reverse=1.0, p_better=1.0, p_floor=0.0, identical=True,
                        **shared)
    return _tested(c, b, settings, shared, rng, guard=folds is None)


def _tested(c: np.ndarray, b: np.ndarray, settings: DecisionSettings, shared: dict[str, Any],
            rng: RngLike, *, guard: bool) -> Evidence:
    """The evidence of the test on the oriented pairs ``c``, ``b`` (n,), n >= 2, not all
    equal: its three one-sided p-values at the settings' boundaries, and on a ``not_worse``
    paired t the skew guard (``guard``: measured at all)."""
    kind, margin, test = settings.kind, settings.margin, shared["test"]
    boundaries = {"not_worse": (-margin,), "better": (margin,)}.get(kind, (-margin, margin))
    ev = evidence_of(test, c, b, settings.n_resamples, rng, at=boundaries)
    p_better = ev.p_greater(margin)
    if kind == "not_worse":
        bound = margin if settings.min_effect is None else settings.min_effect
        p_primary, p_reverse = ev.p_less(-margin), ev.p_greater(-bound)
    elif kind == "better":
        p_primary, p_reverse = p_better, ev.p_less(0.0)
    else:
        p_primary = max(ev.p_greater(-margin), ev.p_less(margin))
        p_reverse = p_primary
    shared["df"] = ev.df
    check = None
    if (guard and settings.skew_guard and kind == "not_worse" and test == "paired-t"
            and not shared["diverged_seeds"]):
        check = skew_check(c - b)
        if check.fires:
            p_primary, p_reverse, p_better = corrected_p_values(
                p_primary, p_reverse, p_better, n=shared["n"], skewness=check.skewness)
            shared["correction"] = "skew-guarded"
    return Evidence(p_value=p_primary, p_reverse=p_reverse, p_better=p_better,
                    p_floor=ev.floor, paired=ev, skew=check, **shared)
