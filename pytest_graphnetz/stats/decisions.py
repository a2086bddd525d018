"""Verdicts on gated cells, the one kernel every gate decides through: :func:`decide_look` (the
decision at one look, for every kind of gate), :func:`decision_of` and :func:`plan_seeds`
(the :class:`~.comparison.Decision` and the seeds plan of one cell's evidence, built once),
:func:`compare` (one cell at one look) and Holm across the cells of one gate call."""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from enum import IntEnum
from typing import Any

import numpy as np
from numpy.typing import ArrayLike

from pytest_graphnetz.stats._common import RngLike
from pytest_graphnetz.stats.comparison import (
    DEFAULT_SETTINGS,
    Comparison,
    Decision,
    DecisionSettings,
    Evidence,
    Plan,
    Verdict,
    evidence_notes,
    measure,
)
from pytest_graphnetz.stats.planning import (
    mde_from_se,
    seeds_for_min_effect,
    seeds_to_decide_beyond,
)


@dataclass(frozen=True)
class HolmResult:
    """Holm step-down adjustment: adjusted p-values and rejections, in the input order, and
    per hypothesis the divisor of the step it was last tested at (``alpha / steps[i]``): m − j
    for the j-th rejection (0-based), m − r for one not rejected (r rejections)."""

    p_adjusted: tuple[float, ...]
    reject: tuple[bool, ...]
    alpha: float
    steps: tuple[int, ...] = ()

    def level(self, i: int) -> float:
        """The level hypothesis ``i`` was last tested at: the step that rejected it, or the
        last step of the step-down for one not rejected."""
        return self.alpha / self.steps[i]


def compare(candidate: ArrayLike, baseline: ArrayLike,
            settings: DecisionSettings = DEFAULT_SETTINGS, *, higher_is_better: bool = True,
            rng: RngLike = None, label: str | None = None, seeds: Sequence[int] | None = None,
            plan: bool = True) -> Comparison:
    """Verdict on one cell: ``candidate`` vs ``baseline`` (n_seeds,), aligned by seed, under
    ``settings`` (:class:`~.comparison.DecisionSettings`: kind, test, margin, min_effect,
    alpha, power).

    ``kind="not_worse"``, in order (the first that holds):

    - REGRESSED: the one-sided test rejects H0 "mean d >= -margin" at ``alpha``;
    - BETTER: the one-sided test rejects H0 "mean d <= +margin" (passes; a refresh would keep it);
    - NOT WORSE: the one-sided ``1 - alpha`` lower bound of mean d lies above ``-min_effect``
      (for non-t tests: the test rejects H0 "mean d <= -min_effect"): non-inferiority at δ,
      wrong with probability <= ``alpha`` when the true mean is -δ or worse. Without
      ``min_effect`` (None) the bound is ``-margin``;
    - INCONCLUSIVE otherwise.

    ``min_effect`` (δ, metric units) must exceed ``margin``. A drop that is significant but
    smaller than δ is REGRESSED (:attr:`Comparison.below_min_effect` says so).
    ``kind="better"``: BETTER on one-sided evidence of mean d > margin; else REGRESSED on evidence
    of mean d < 0 (raw one-sided p <= alpha); else INCONCLUSIVE. ``kind="equivalent"``: TOST
    against ``±margin``.
    All zero differences give IDENTICAL for every kind (no test is run); a pair that differs
    by less than the data's resolution (:func:`~._common.within_resolution`: values that went
    through float32) counts as equal.

    Diverged seeds (non-finite values): where only the candidate diverged, the seed counts as a
    failure: the verdict is REGRESSED (NOT EQUIVALENT for ``equivalent``) whatever the test on the
    other seeds says, with a note naming the seeds. Where both or only the baseline diverged, the
    seed is excluded from the test with a note. A candidate diverged on so many seeds that
    fewer than 2 pairs remain is still REGRESSED, never an error. Otherwise fewer than 2 usable
    pairs raises ``ValueError`` naming ``label``. ``seeds`` labels the positions in notes
    (default: 0, 1, ...); ``plan=False``: no seeds plan.
    """
    evidence = measure(candidate, baseline, settings, higher_is_better=higher_is_better,
                       rng=rng, label=label, seeds=seeds)
    return judge(evidence, settings, plan=plan)


def judge(evidence: Evidence, settings: DecisionSettings, *, plan: bool = True,
          notes: Sequence[str] = ()) -> Comparison:
    """The comparison of one cell judged alone at one look: its verdict at the settings'
    ``alpha`` (:func:`decide_look`, whatever the kind), its seeds plan (``plan=False``: none,
    for a look that is not the one reported) and the evidence's notes, then ``notes``."""
    decision = decision_of(evidence, settings)
    needed = plan_seeds(evidence, settings, decision.verdict, settings.alpha) if plan else None
    return Comparison(evidence, settings, decision, Plan(needed),
                      (*evidence_notes(evidence, settings.alpha), *notes))


def decision_of(evidence: Evidence, settings: DecisionSettings, verdict: Verdict | None = None,
                *, level: float | None = None, p_adjusted: float | None = None,
                regressed_level: float | None = None,
                ci_alphas: tuple[float, float] | None = None) -> Decision:
    """The :class:`~.comparison.Decision` on ``evidence`` at the one-sided ``level`` (default
    the settings' ``alpha``): ``verdict`` (None: the single look at ``level``,
    :func:`verdict_at`), REGRESSED's adjusted p (default the raw p) and level
    ``regressed_level`` (default ``level``; the MDE is read at it, at the settings' power), and
    the interval at the one-sided levels ``ci_alphas`` of its ends (None: both at ``level``)."""
    level = settings.alpha if level is None else level
    if verdict is None:
        verdict = final_verdict_at(evidence, level=level, regressed_level=level)
    regressed = level if regressed_level is None else regressed_level
    ci = evidence.interval(*(ci_alphas or (level, level)))
    return Decision(verdict, evidence.p_value if p_adjusted is None else p_adjusted, level,
                    regressed, mde_of(evidence, regressed, power=settings.power), ci, ci_alphas)


def mde_of(evidence: Evidence, level: float, *, power: float) -> float:
    """Minimum detectable effect of ``evidence``'s test at its n, one-sided at ``level``
    (noncentral t at ``power`` on its ``se``; the paired-t formula for every test): 0 for
    identical seeds, ``inf`` where the test cannot reach ``level``."""
    if evidence.identical:
        return 0.0
    if evidence.n < 2 or not math.isfinite(evidence.sd_diff) or evidence.p_floor > level:
        return math.inf
    return mde_from_se(evidence.se, evidence.n - 1, alpha=level, power=power, one_sided=True)


def verdict_at(evidence: Evidence, *, level: float, regressed_level: float | None,
               last: bool = True, p_regressed: float | None = None) -> Verdict | None:
    """:func:`decide_look` on one cell's evidence: the verdict at a look whose passing level is
    ``level`` and REGRESSED's ``regressed_level`` (None: REGRESSED is the family's), at the
    ``last`` look or before it (None: the cell stays open). ``p_regressed``: REGRESSED's p in
    place of the raw one (Holm's adjusted p)."""
    code = decide_look(evidence.p_regressed if p_regressed is None else p_regressed,
                       evidence.p_reverse if evidence.kind == "not_worse" else evidence.p_value,
                       evidence.p_better, level=level, regressed_level=regressed_level,
                       last=last, identical=evidence.identical,
                       diverged=bool(evidence.diverged_seeds), kind=evidence.kind)
    return LOOK_VERDICTS[int(code)]


def final_verdict_at(evidence: Evidence, *, level: float, regressed_level: float | None,
                     p_regressed: float | None = None) -> Verdict:
    """:func:`verdict_at` at a last look, which leaves no cell open."""
    verdict = verdict_at(evidence, level=level, regressed_level=regressed_level,
                         p_regressed=p_regressed)
    if verdict is None:
        raise ValueError("a last look leaves no cell open")
    return verdict


def plan_seeds(evidence: Evidence, settings: DecisionSettings, verdict: Verdict,
               alpha_regressed: float, *, alpha: float | None = None) -> int | None:
    """Seeds that would decide an INCONCLUSIVE cell (None for the other verdicts): for
    ``not_worse`` planned for δ, NOT WORSE at ``alpha`` (default the settings') and REGRESSED
    at ``alpha_regressed`` (the Holm level); for the other kinds planned for the observed mean
    difference (None when no number of seeds would decide it)."""
    if verdict is not Verdict.INCONCLUSIVE:
        return None
    alpha = settings.alpha if alpha is None else alpha
    if evidence.kind != "not_worse":
        return seeds_to_decide_beyond(evidence.mean_diff, evidence.sd_diff, evidence.n,
                                      margin=settings.margin, alpha=alpha,
                                      power=settings.power, kind=evidence.kind)
    if settings.min_effect is None or not np.isfinite(evidence.sd_diff):
        return None
    needed = seeds_for_min_effect(evidence.sd_diff, settings.min_effect, margin=settings.margin,
                                  alpha=alpha, alpha_regressed=alpha_regressed,
                                  power=settings.power)
    return max(needed, evidence.n + 1)


class Code(IntEnum):
    """The decision at one look as an integer (arrays of them: cells or simulated paths)."""

    CONTINUE = 0
    REGRESSED = 1
    NOT_WORSE = 2
    BETTER = 3
    INCONCLUSIVE = 4
    IDENTICAL = 5
    EQUIVALENT = 6
    NOT_EQUIVALENT = 7


# Code -> Verdict (None: the cell takes the next look's seeds)
LOOK_VERDICTS: tuple[Verdict | None, ...] = (
    None, Verdict.REGRESSED, Verdict.NOT_WORSE, Verdict.BETTER, Verdict.INCONCLUSIVE,
    Verdict.IDENTICAL, Verdict.EQUIVALENT, Verdict.NOT_EQUIVALENT)


def final_verdict(code: Any) -> Verdict:
    """The verdict of a code decided at a last look (:func:`decide_look` with ``last``)."""
    verdict = LOOK_VERDICTS[int(code)]
    if verdict is None:
        raise ValueError("a last look leaves no cell open")
    return verdict


def decide_look(p_regressed: Any, p_not_worse: Any, p_better: Any, *, level: float,
                regressed_level: float | None, last: bool, identical: Any = False,
                diverged: Any = False, kind: str = "not_worse") -> np.ndarray:
    """The one decision of a cell at a look, used by every gate, the planner, the power
    simulation and the suite row: from the look's one-sided p-values, the code of the first
    that holds (:class:`Code`; arrays broadcast, an int array returned, index
    :data:`LOOK_VERDICTS`).

    ``kind="not_worse"`` (REGRESSED's H1 "mean d < −margin", NOT WORSE's "mean d > −δ",
    BETTER's "mean d > +margin"): REGRESSED (``p_regressed <= regressed_level``; None:
    REGRESSED is decided by the family, :func:`~.sequential.sequential_holm`), BETTER and NOT
    WORSE (``p <= level``, the look's nominal level). ``kind="better"``: BETTER
    (``p_better <= level``), else REGRESSED on "mean d < 0" (``p_regressed <=
    regressed_level``). ``kind="equivalent"``: EQUIVALENT when TOST's p, given as
    ``p_not_worse``, is ``<= level``. Then, for every kind, IDENTICAL (``identical``: every
    difference 0) and a ``diverged`` candidate (REGRESSED; NOT EQUIVALENT for
    ``equivalent``); else INCONCLUSIVE (NOT EQUIVALENT) at the ``last`` look and CONTINUE
    before it."""
    p_reg, p_nw, p_bt = np.broadcast_arrays(*(np.asarray(p, dtype=float)
                                              for p in (p_regressed, p_not_worse, p_better)))
    code = np.full(p_reg.shape, int(Code.CONTINUE))
    if kind == "equivalent":
        code[p_nw <= level] = Code.EQUIVALENT
    elif kind == "better":
        if regressed_level is not None:
            code[p_reg <= regressed_level] = Code.REGRESSED
        code[p_bt <= level] = Code.BETTER
    else:
        code[p_nw <= level] = Code.NOT_WORSE
        code[p_bt <= level] = Code.BETTER
        if regressed_level is not None:
            code[p_reg <= regressed_level] = Code.REGRESSED
    code[np.broadcast_to(np.asarray(identical, dtype=bool), code.shape)] = Code.IDENTICAL
    failed = Code.NOT_EQUIVALENT if kind == "equivalent" else Code.REGRESSED
    code[np.broadcast_to(np.asarray(diverged, dtype=bool), code.shape)] = failed
    if last:
        code[code == Code.CONTINUE] = (Code.NOT_EQUIVALENT if kind == "equivalent"
                                       else Code.INCONCLUSIVE)
    return code


def holm(p_values: Sequence[float], alpha: float = 0.05) -> HolmResult:
    """Holm's step-down adjustment of ``p_values`` (m,), controlling the family-wise error.

    Sorted ascending, ``p_adj(i) = max_{j <= i} min(1, (m - j + 1) p(j))``; a hypothesis is
    rejected when its adjusted p is ``<= alpha``. Returned in the input order.
    """
    p = np.asarray(p_values, dtype=float)
    if p.ndim != 1 or np.any(~np.isfinite(p)) or np.any((p < 0) | (p > 1)):
        raise ValueError(f"`p_values` must be a 1-D sequence of numbers in [0, 1], "
                         f"got {p_values!r}")
    m = p.size
    order = np.argsort(p, kind="stable")
    adjusted_sorted = np.maximum.accumulate(np.minimum(1.0, (m - np.arange(m)) * p[order]))
    adjusted = np.empty(m)
    adjusted[order] = adjusted_sorted
    reject = tuple(bool(v <= alpha) for v in adjusted)
    r, steps = sum(reject), np.empty(m, dtype=int)
    steps[order] = np.where(np.arange(m) < r, m - np.arange(m), m - r)
    return HolmResult(p_adjusted=tuple(float(v) for v in adjusted), reject=reject, alpha=alpha,
                      steps=tuple(int(x) for x in steps))


def beats_reference(scores: ArrayLike, reference: int, alpha: float = 0.05
                    ) -> tuple[np.ndarray, np.ndarray]:
    """Which rows of ``scores`` ``[row, seed]`` (oriented: higher is better) beat row
    ``reference``, by the incumbent rule's test (Blum & Hardt 2015, "The Ladder"): per row,
    scipy's one-sided paired t (``ttest_rel``, alternative "this row is better") against the
    reference over the seeds, Holm-adjusted over the rows tested.

    ``(mean differences, adjusted p-values)`` per row, NaN where not tested: a row with a
    non-finite score, or every row when the reference has one; the reference's own difference
    is 0. Equal scores on every seed are no evidence either way (p = 1).
    """
    import warnings

    from scipy import stats

    x = np.asarray(scores, dtype=float)
    finite = np.isfinite(x).all(axis=1).astype(bool)
    diffs = np.full(len(x), np.nan)
    p_raw = np.full(len(x), np.nan)
    if finite[reference]:
        diffs[finite] = (x[finite] - x[reference]).mean(axis=1)
        diffs[reference] = 0.0
        for i in np.flatnonzero(finite):
            if i != reference:
                with warnings.catch_warnings(), np.errstate(invalid="ignore", divide="ignore"):
                    # nearly equal scores: scipy warns of precision loss; the p stands
                    warnings.simplefilter("ignore", RuntimeWarning)
                    p = float(stats.ttest_rel(x[i], x[reference], alternative="greater").pvalue)
                p_raw[i] = p if np.isfinite(p) else 1.0
    tested = np.flatnonzero(np.isfinite(p_raw))
    p_adj = np.full(len(x), np.nan)
    if tested.size:
        p_adj[tested] = holm(p_raw[tested].tolist(), alpha).p_adjusted
    return diffs, p_adj


def compare_many(cells: Sequence[Mapping[str, Any]], settings: DecisionSettings, *,
                 rng: RngLike = None) -> list[Comparison]:
    """:func:`compare` per cell under one ``settings``, with REGRESSED decided in one Holm
    family across them.

    Each cell is a mapping of :func:`measure`'s data arguments (at least ``candidate`` and
    ``baseline``; typically also ``label``, ``higher_is_better``, ``seeds``).

    The family is the ``not_worse`` cells a test ran on: IDENTICAL cells (no test) are not in
    it. Each tested cell's REGRESSED uses its Holm-adjusted p; its MDE and its interval's upper
    end are at the level Holm's step-down tested it at last (the step that rejected it, else
    the last step); its seeds plan at ``alpha / m``, the level Holm demands of the most
    significant cell.
    ``better`` and ``equivalent`` cells are each judged alone: those gates pass only when every
    cell passes (an intersection-union test), which holds its level without Holm.
    """
    evidence = [measure(settings=settings, rng=rng, **cell) for cell in cells]
    tested = [i for i, e in enumerate(evidence) if e.kind == "not_worse" and not e.identical]
    if len(tested) < 2:
        return [judge(e, settings) for e in evidence]
    alpha, m = settings.alpha, len(tested)
    family = holm([evidence[i].p_value for i in tested], alpha)
    adjusted = dict(zip(tested, family.p_adjusted, strict=True))
    levels = {i: family.level(j) for j, i in enumerate(tested)}
    out = []
    for i, e in enumerate(evidence):
        if i not in adjusted:
            out.append(judge(e, settings))
            continue
        verdict = final_verdict_at(e, level=alpha, regressed_level=alpha,
                                   p_regressed=adjusted[i])
        # REGRESSED's level, the step that tested it last: the MDE and the upper end read at it
        level = levels[i]
        out.append(Comparison(
            e, settings,
            decision_of(e, settings, verdict, p_adjusted=adjusted[i], regressed_level=level,
                        ci_alphas=None if level == alpha else (alpha, level)),
            Plan(plan_seeds(e, settings, verdict, alpha / m)),
            (*evidence_notes(e, alpha), f"p Holm-adjusted across the {m} tested cells")))
    return out


__all__ = ["LOOK_VERDICTS", "Code", "Comparison", "Decision", "DecisionSettings", "Evidence",
           "HolmResult", "Plan", "Verdict", "compare", "compare_many", "decide_look",
           "decision_of", "final_verdict", "final_verdict_at", "holm", "judge", "mde_of",
           "measure", "plan_seeds", "verdict_at"]
