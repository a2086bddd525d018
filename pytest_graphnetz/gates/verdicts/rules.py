"""The pass rule of each gate (:data:`PASSES`, :func:`failed_verdict`), the δ a gate judges
at when none is given (:func:`default_min_effect`; a cell's, :func:`cell_min_effect`) and the
refusal of a δ not above the margin (:func:`min_effect_error`)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from pytest_graphnetz.report.epochs import in_unit_interval
from pytest_graphnetz.stats import Verdict

if TYPE_CHECKING:
    from pytest_graphnetz.report.epochs import MetricSpec

# δ for metrics bounded in [0, 1] (accuracy, AUC, F1, MRR, Hits@K): one point.
DEFAULT_MIN_EFFECT = 0.01


# What each gate lets through (``strict`` also fails INCONCLUSIVE).
PASSES: dict[str, frozenset[Verdict]] = {
    "not_worse": frozenset({Verdict.NOT_WORSE, Verdict.BETTER, Verdict.IDENTICAL,
                            Verdict.INCONCLUSIVE}),
    "better": frozenset({Verdict.BETTER}),
    "equivalent": frozenset({Verdict.EQUIVALENT, Verdict.IDENTICAL})}


def failed_verdict(gate: str, name: str, strict: bool) -> bool:
    """The pass rule: whether verdict ``name`` fails ``gate`` (``strict``: INCONCLUSIVE too)."""
    return name not in PASSES[gate] or (strict and name == Verdict.INCONCLUSIVE)


def default_min_effect(spec: MetricSpec, margin: float = 0.0) -> float | None:
    """δ when none is given, for a metric bounded in [0, 1]: ``margin +``
    :data:`DEFAULT_MIN_EFFECT`, the smallest regression that matters being one point beyond
    the drop that is tolerated (0.01 at margin 0; 0.02 at margin 0.01). It never vanishes when
    a margin is set, and the gap NOT WORSE must resolve (δ − margin) is one point whatever the
    margin, so the seeds it needs do not jump with it. None for MAE, RMSE, loss (no natural
    scale): NOT WORSE then falls back to −margin, and the row's Note says so
    (:data:`NO_MIN_EFFECT_NOTE`)."""
    return margin + DEFAULT_MIN_EFFECT if in_unit_interval(spec.name) else None


NO_MIN_EFFECT_NOTE = "no min_effect: NOT WORSE only means above −margin; set δ"


def cell_min_effect(spec: MetricSpec, margin: float, min_effect: float | None) -> float | None:
    """δ of a cell: the call's, else the metric's default (:func:`default_min_effect`)."""
    return min_effect if min_effect is not None else default_min_effect(spec, margin)


def min_effect_error(min_effect: float, margin: float) -> str:
    return (f"`min_effect` ({min_effect!r}) must be larger than `margin` ({margin!r}): δ is the "
            "smallest regression that matters, margin the drop that is tolerated; raise "
            "min_effect (--graphnetz-min-effect) or lower the margin")


__all__ = ["DEFAULT_MIN_EFFECT", "NO_MIN_EFFECT_NOTE", "PASSES", "cell_min_effect",
           "default_min_effect", "failed_verdict", "min_effect_error"]
