"""Verdicts on gated cells: :func:`compare` (one cell, candidate vs baseline on paired seeds),
Holm across the cells of one gate call, and the result types."""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from enum import Enum, IntEnum
from typing import Any, TypedDict

import numpy as np
from numpy.typing import ArrayLike

from ._common import (
    KINDS,
    PAIRED_TESTS,
    ConfidenceInterval,
    RngLike,
    as_vector,
    check_choice,
    t_moments,
    within_resolution,
)
from .paired import PairedEvidence, evidence_of, floor_notes, require_pairs
from .planning import mde_from_se, seeds_for_min_effect, seeds_to_decide_beyond


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


@dataclass(frozen=True)
class Comparison:
    """The verdict on one cell: candidate against baseline on paired seeds.

    Differences ``d = candidate - baseline`` are sign-flipped for lower-is-better metrics, so
    ``mean_diff > 0`` means the candidate is better. Fields:

    - ``n``: usable pairs; ``sd_diff``: their sample standard deviation.
    - ``ci``: two-sided ``1 - 2·alpha`` interval of ``mean_diff`` (90% at α = 0.05), the one
      that matches the one-sided decisions at ``alpha``: its ends are the one-sided ``1 - alpha``
      bounds. ``lower_bound`` is ``ci.low`` (by ``test``'s method, see :class:`PairedResult`).
    - ``p_value``: raw p of the kind's primary test: for ``not_worse`` H1 "mean d < -margin"
      (small p = REGRESSED); for ``better`` H1 "mean d > margin" (small p = BETTER); for
      ``equivalent`` the TOST p = max of the two one-sided p-values (small p = EQUIVALENT).
      ``p_adjusted``: Holm-adjusted across the tested cells of one ``not_worse`` call
      (== p_value for one cell, and for ``better``/``equivalent``: intersection-union tests).
    - ``p_reverse``: raw p of the opposite one-sided test: for ``not_worse`` H1 "mean d >
      -min_effect" (small p = NOT WORSE, the non-inferiority test at δ; the same as
      ``lower_bound > -min_effect`` for the t test; at ``-margin`` when ``min_effect`` is None);
      for ``better`` H1 "mean d < 0" (small p = REGRESSED); for ``equivalent`` equal to
      ``p_value``.
    - ``p_better``: raw p of H1 "mean d > margin" (small p = BETTER).
    - ``min_effect``: δ, the smallest regression that matters (``not_worse`` only), or None.
    - ``mde``: minimum detectable effect at this n (one-sided, at ``mde_alpha``, ``power``,
      noncentral t; see :func:`mde`): a true shift of ``mde`` beyond the margin's boundary is
      caught with probability ``power`` (0.8 by default). ``inf`` when the test cannot reach the
      level at this n. ``mde_alpha``: ``alpha``, or ``alpha / m`` after Holm over m cells.
    - ``seeds_needed``: for an INCONCLUSIVE cell, the total number of paired seeds that would
      decide it with probability ``power``. For ``not_worse`` it is planned for δ (see
      :func:`seeds_for_min_effect`) and None without ``min_effect``; for the other kinds it is
      planned for the observed mean difference (None when no number of seeds would decide it).
      On the schedule, the gate sets it to the next look (what the CI loop runs next) and
      ``seeds_expected`` to the seeds the cell is expected to use before it decides
      (:func:`~.sequential.plan_next_look`); None elsewhere.
    - ``p_floor``: smallest one-sided p the test can produce at this n.
    - ``diverged_seeds``: seeds where the candidate diverged and the baseline did not; each counts
      as a failure of that seed and forces REGRESSED (NOT EQUIVALENT for ``equivalent``).
    - ``excluded_seeds``: seeds left out of the test: both diverged, or only the baseline did.
    """

    verdict: Verdict
    kind: str
    test: str
    n: int
    mean_diff: float
    sd_diff: float
    ci: ConfidenceInterval
    lower_bound: float
    p_value: float
    p_adjusted: float
    p_reverse: float
    margin: float
    alpha: float
    mde: float
    seeds_needed: int | None
    p_floor: float
    higher_is_better: bool
    label: str
    diverged_seeds: tuple[int, ...] = ()
    excluded_seeds: tuple[int, ...] = ()
    notes: tuple[str, ...] = ()
    power: float = 0.8
    min_effect: float | None = None
    p_better: float = 1.0
    mde_alpha: float | None = None
    # One-sided levels of ``ci``'s lower and upper end when they are not both ``alpha`` (the
    # gate's Holm level on REGRESSED's side, a sequential look's nominal levels).
    ci_alphas: tuple[float, float] | None = None
    seeds_expected: int | None = None
    evidence: PairedEvidence | None = field(default=None, repr=False, compare=False)

    @property
    def confidence_level(self) -> float:
        """Level of ``ci``: ``1 - 2·alpha``, the two-sided interval of the one-sided tests
        (``1 - low_alpha - high_alpha`` when its ends are at the levels of ``ci_alphas``)."""
        if self.ci_alphas is not None:
            return 1 - self.ci_alphas[0] - self.ci_alphas[1]
        return 1 - 2 * self.alpha

    def interval(self, low_alpha: float, high_alpha: float) -> ConfidenceInterval:
        """The interval whose lower end is the one-sided ``1 - low_alpha`` bound and whose
        upper end is the one-sided ``1 - high_alpha`` bound of this test on these seeds
        (``interval(alpha, alpha) == ci``). IDENTICAL and untested cells keep ``ci``."""
        if self.evidence is None:
            return self.ci
        low = self.evidence.bounds(1 - 2 * low_alpha)[0]
        high = self.evidence.bounds(1 - 2 * high_alpha)[1]
        return ConfidenceInterval(low, high)

    @property
    def below_min_effect(self) -> bool:
        """A significant drop smaller than δ: REGRESSED (which wins), yet the non-inferiority
        test at δ also passed. Accepting such a drop is a ``margin`` decision."""
        return (self.verdict is Verdict.REGRESSED and self.min_effect is not None
                and not self.diverged_seeds and self.p_reverse <= self.alpha)


class _Shared(TypedDict):
    """The :class:`Comparison` fields :func:`compare` shares between its outcomes."""

    kind: str
    test: str
    n: int
    mean_diff: float
    sd_diff: float
    margin: float
    alpha: float
    higher_is_better: bool
    label: str
    diverged_seeds: tuple[int, ...]
    excluded_seeds: tuple[int, ...]
    power: float
    min_effect: float | None
    mde_alpha: float | None


@dataclass(frozen=True)
class HolmResult:
    """Holm step-down adjustment: adjusted p-values and rejections, in the input order."""

    p_adjusted: tuple[float, ...]
    reject: tuple[bool, ...]
    alpha: float


def compare(candidate: ArrayLike, baseline: ArrayLike, *, higher_is_better: bool = True,
            kind: str = "not_worse", test: str = "paired-t", margin: float = 0.0,
            min_effect: float | None = None, alpha: float = 0.05, power: float = 0.8,
            n_resamples: int = 10_000, rng: RngLike = None, label: str | None = None,
            seeds: Sequence[int] | None = None, plan: bool = True) -> Comparison:
    """Verdict on one cell: ``candidate`` vs ``baseline`` (n_seeds,), aligned by seed.

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
    (default: 0, 1, ...).
    """
    where = label or "cell"
    cand, base = as_vector(candidate, "candidate", where), as_vector(baseline, "baseline", where)
    if cand.shape != base.shape:
        raise ValueError(f"{where}: candidate has {cand.size} seeds but baseline has {base.size}; "
                         "pair them by seed value first")
    check_choice("kind", kind, KINDS)
    check_choice("test", test, PAIRED_TESTS)
    if not margin >= 0:
        raise ValueError(f"{where}: `margin` must be >= 0 (in metric units), got {margin!r}")
    if not 0 < alpha < 0.5:
        raise ValueError(f"{where}: `alpha` must lie in (0, 0.5), got {alpha!r}")
    if min_effect is not None and not (math.isfinite(min_effect) and min_effect > margin):
        raise ValueError(
            f"{where}: `min_effect` (δ, the smallest regression that matters) must be a number "
            f"larger than `margin` ({margin:g}, the drop that is tolerated), got {min_effect!r}"
        )
    names = list(range(cand.size)) if seeds is None else list(seeds)
    if len(names) != cand.size:
        raise ValueError(f"{where}: {len(names)} seed labels for {cand.size} values")

    c_bad, b_bad = ~np.isfinite(cand), ~np.isfinite(base)
    keep = ~(c_bad | b_bad)
    diverged = tuple(names[i] for i in np.flatnonzero(c_bad & ~b_bad))
    excluded = tuple(names[i] for i in np.flatnonzero(b_bad))
    if not diverged:  # a diverged candidate is decided below, however few pairs remain
        require_pairs(int(keep.sum()), where, [names[i] for i in np.flatnonzero(~keep)])
    notes: list[str] = []
    if diverged:
        notes.append(f"candidate diverged (non-finite metric) at seed(s) {list(diverged)} where "
                     "the baseline did not: counted as failures, so the cell cannot pass")
    if excluded:
        notes.append(f"seed(s) {list(excluded)} excluded: the baseline diverged there "
                     "(both sides, or baseline only), so there is no pair to compare")

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
    identical = not diverged and bool(np.all(d == 0))
    mean_diff = float(d.mean()) if n else math.nan
    common = _Shared(kind=kind, test=test, n=n, mean_diff=mean_diff, sd_diff=sd, margin=margin,
                     alpha=alpha, higher_is_better=higher_is_better, label=where,
                     diverged_seeds=diverged, excluded_seeds=excluded, power=power,
                     min_effect=min_effect if kind == "not_worse" else None, mde_alpha=alpha)
    if n < 2:
        return _diverged_untested(len(diverged), notes, common)
    if identical:
        notes.append("every paired difference is exactly 0 (an unchanged model): no test run")
        return Comparison(verdict=Verdict.IDENTICAL, ci=ConfidenceInterval(0.0, 0.0),
                          lower_bound=0.0, p_value=1.0, p_adjusted=1.0, p_reverse=1.0, mde=0.0,
                          seeds_needed=None, p_floor=0.0, notes=tuple(notes), **common)

    boundaries = {"not_worse": (-margin,), "better": (margin,)}.get(kind, (-margin, margin))
    ev = evidence_of(test, c, b, n_resamples, rng, at=boundaries)
    p_better = ev.p_greater(margin)
    if kind == "not_worse":
        bound = margin if min_effect is None else min_effect
        p_primary, p_reverse = ev.p_less(-margin), ev.p_greater(-bound)
    elif kind == "better":
        p_primary, p_reverse = p_better, ev.p_less(0.0)
    else:
        p_primary = max(ev.p_greater(-margin), ev.p_less(margin))
        p_reverse = p_primary
    # The (1 - 2 alpha) two-sided interval: its ends are the one-sided bounds the tests use.
    low, high = ev.bounds(1 - 2 * alpha)
    notes.extend(floor_notes(test, n, ev.floor, alpha, "one-sided"))
    if test == "welch":
        notes.append("welch: unpaired test; the seeds' pairing is ignored")
    se_for_power = sd / math.sqrt(n)
    effect_mde = (math.inf if ev.floor > alpha
                  else mde_from_se(se_for_power, n - 1, alpha=alpha, power=power, one_sided=True))
    if test not in ("paired-t", "welch") and math.isfinite(effect_mde):
        notes.append(f"MDE from the paired-t power formula (approximate for {test})")
    verdict = _decide(kind, p_primary, p_reverse, p_better, alpha, bool(diverged))
    comp = Comparison(verdict=verdict, ci=ConfidenceInterval(low, high), lower_bound=low,
                      p_value=p_primary, p_adjusted=p_primary, p_reverse=p_reverse,
                      p_better=p_better, mde=effect_mde, seeds_needed=None, p_floor=ev.floor,
                      notes=tuple(notes), evidence=ev, **common)
    # plan=False: a look that is not the last a cell reports (the gate plans the one it prints)
    return replace(comp, seeds_needed=plan_seeds(comp, alpha) if plan else None)


def plan_seeds(comp: Comparison, alpha_regressed: float) -> int | None:
    """Seeds that would decide an INCONCLUSIVE cell (None for the other verdicts): for
    ``not_worse`` planned for δ, with REGRESSED at ``alpha_regressed`` (the Holm level)."""
    if comp.verdict is not Verdict.INCONCLUSIVE:
        return None
    if comp.kind != "not_worse":
        return seeds_to_decide_beyond(comp.mean_diff, comp.sd_diff, comp.n, margin=comp.margin,
                                      alpha=comp.alpha, power=comp.power, kind=comp.kind)
    if comp.min_effect is None or not math.isfinite(comp.sd_diff):
        return None
    needed = seeds_for_min_effect(comp.sd_diff, comp.min_effect, margin=comp.margin,
                                  alpha=comp.alpha, alpha_regressed=alpha_regressed,
                                  power=comp.power)
    return max(needed, comp.n + 1)


def _decide(kind: str, p_adjusted: float, p_reverse: float, p_better: float, alpha: float,
            candidate_diverged: bool) -> Verdict:
    if kind == "not_worse":
        if candidate_diverged:
            return Verdict.REGRESSED
        return final_verdict(decide_look(p_adjusted, p_reverse, p_better, level=alpha,
                                         regressed_level=alpha, last=True))
    if kind == "better":
        if candidate_diverged:
            return Verdict.REGRESSED
        if p_adjusted <= alpha:
            return Verdict.BETTER
        return Verdict.REGRESSED if p_reverse <= alpha else Verdict.INCONCLUSIVE
    if candidate_diverged or p_adjusted > alpha:
        return Verdict.NOT_EQUIVALENT
    return Verdict.EQUIVALENT


class Code(IntEnum):
    """The decision at one look as an integer (arrays of them: cells or simulated paths)."""

    CONTINUE = 0
    REGRESSED = 1
    NOT_WORSE = 2
    BETTER = 3
    INCONCLUSIVE = 4
    IDENTICAL = 5


# Code -> Verdict (None: the cell takes the next look's seeds)
LOOK_VERDICTS: tuple[Verdict | None, ...] = (
    None, Verdict.REGRESSED, Verdict.NOT_WORSE, Verdict.BETTER, Verdict.INCONCLUSIVE,
    Verdict.IDENTICAL)


def final_verdict(code: Any) -> Verdict:
    """The verdict of a code decided at a last look (:func:`decide_look` with ``last``)."""
    verdict = LOOK_VERDICTS[int(code)]
    if verdict is None:
        raise ValueError("a last look leaves no cell open")
    return verdict


def decide_look(p_regressed: Any, p_not_worse: Any, p_better: Any, *, level: float,
                regressed_level: float | None, last: bool, identical: Any = False) -> np.ndarray:
    """The one decision of a not-worse cell at a look, used by the gate, the planner, the
    power simulation and the suite row: from the look's three one-sided p-values (REGRESSED's
    H1 "mean d < −margin", NOT WORSE's "mean d > −δ", BETTER's "mean d > +margin"), the code
    of the first that holds: REGRESSED (``p_regressed <= regressed_level``; None: REGRESSED is
    decided by the family, :func:`~.sequential.sequential_holm`), BETTER and NOT WORSE
    (``p <= level``, the look's nominal level), IDENTICAL (``identical``: every difference 0);
    else INCONCLUSIVE at the ``last`` look and CONTINUE before it (:class:`Code`).
    Arrays broadcast; returns an int array of codes (index :data:`LOOK_VERDICTS`)."""
    p_reg, p_nw, p_bt = np.broadcast_arrays(*(np.asarray(p, dtype=float)
                                              for p in (p_regressed, p_not_worse, p_better)))
    code = np.full(p_reg.shape, int(Code.CONTINUE))
    code[p_nw <= level] = Code.NOT_WORSE
    code[p_bt <= level] = Code.BETTER
    if regressed_level is not None:
        code[p_reg <= regressed_level] = Code.REGRESSED
    code[np.broadcast_to(np.asarray(identical, dtype=bool), code.shape)] = Code.IDENTICAL
    if last:
        code[code == Code.CONTINUE] = Code.INCONCLUSIVE
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
    return HolmResult(p_adjusted=tuple(float(v) for v in adjusted),
                      reject=tuple(bool(v <= alpha) for v in adjusted), alpha=alpha)


def holm_adjust(comparisons: Sequence[Comparison]) -> list[Comparison]:
    """The ``not_worse`` comparisons of one gate call with ``p_adjusted`` set by Holm across the
    cells actually tested, and their verdicts re-decided.

    The family is the cells a test ran on: IDENTICAL cells (no test) are not in it. Only the
    primary p, the one that fails the gate (REGRESSED), is adjusted; the passing decisions
    (NOT WORSE, BETTER) stay at raw ``alpha``. The MDE and the seeds plan of each tested cell
    are recomputed at ``alpha / m``, the level Holm demands of the most significant cell.
    ``better`` and ``equivalent`` comparisons are returned unchanged: those gates pass only
    when every cell passes (an intersection-union test), which holds its level without Holm.
    """
    comparisons = list(comparisons)
    tested = [i for i, c in enumerate(comparisons)
              if c.kind == "not_worse" and c.verdict is not Verdict.IDENTICAL]
    if len(tested) < 2:
        return comparisons
    alphas = {comparisons[i].alpha for i in tested}
    if len(alphas) != 1:
        raise ValueError(f"Holm needs one `alpha` for the whole family, got {sorted(alphas)}")
    alpha = alphas.pop()
    m = len(tested)
    adjusted = holm([comparisons[i].p_value for i in tested], alpha).p_adjusted
    out = list(comparisons)
    for i, p_adj in zip(tested, adjusted, strict=True):
        comp = comparisons[i]
        verdict = _decide(comp.kind, p_adj, comp.p_reverse, comp.p_better, alpha,
                          bool(comp.diverged_seeds))
        out[i] = holm_member(replace(comp, verdict=verdict), p_adj, m)
    return out


def holm_member(comp: Comparison, p_adjusted: float, m: int) -> Comparison:
    """``comp`` as one of ``m`` tested cells of a Holm family (its verdict already decided):
    its adjusted p, and its MDE and seeds plan at ``alpha / m``, the level Holm demands of the
    most significant cell, with a note saying so."""
    level = comp.alpha / m
    mde_holm = math.inf
    if comp.p_floor <= level and math.isfinite(comp.sd_diff):
        mde_holm = mde_from_se(comp.sd_diff / math.sqrt(comp.n), comp.n - 1, alpha=level,
                               power=comp.power, one_sided=True)
    comp = replace(comp, p_adjusted=p_adjusted, mde=mde_holm, mde_alpha=level,
                   notes=(*comp.notes, f"p Holm-adjusted across the {m} tested cells"))
    return replace(comp, seeds_needed=plan_seeds(comp, level))


def compare_many(cells: Sequence[Mapping[str, Any]], **common: Any) -> list[Comparison]:
    """:func:`compare` per cell, then Holm across them (:func:`holm_adjust`).

    Each cell is a mapping of :func:`compare`'s arguments (at least ``candidate`` and
    ``baseline``; typically also ``label``, ``higher_is_better``, ``seeds``); ``common`` holds
    the arguments shared by every cell (``kind``, ``test``, ``margin``, ``alpha`` ...).
    """
    return holm_adjust([compare(**{**common, **cell}) for cell in cells])


def _diverged_untested(n_diverged: int, notes: list[str], common: _Shared) -> Comparison:
    """A cell whose candidate diverged on so many seeds that fewer than 2 pairs remain
    (``common``: the fields :func:`compare` shares between its outcomes).

    No test can run; the divergence rule decides: REGRESSED (NOT EQUIVALENT for
    ``equivalent``), never an error, so the other cells of the call keep their verdicts. The
    p-values read a diverged seed as the worst possible value (mean d = -inf): certain
    regression, no chance of better or equivalent. Mean Δ is over the pairs that remain.
    """
    nan = math.nan
    kind = common["kind"]
    regressed = 0.0 if kind == "not_worse" else 1.0  # p of the kind's primary test
    note = (f"only {common['n']} seed(s) trained on both sides, so no paired test can run: the "
            f"candidate diverged on {n_diverged} seed(s) the baseline trained on, which "
            "decides the cell (each counts as the worst possible value)")
    return Comparison(
        verdict=Verdict.NOT_EQUIVALENT if kind == "equivalent" else Verdict.REGRESSED,
        ci=ConfidenceInterval(nan, nan), lower_bound=nan, p_value=regressed,
        p_adjusted=regressed, p_reverse=1.0 - regressed, mde=math.inf, seeds_needed=None,
        p_floor=0.0, notes=(*notes, note), **common)
