"""Gates: compare a candidate report with a baseline on paired per-seed evidence.

Each gate works on every (task, model) cell of the candidate: the seeds both reports ran are
paired **by seed value** (seed 3 with seed 3, whatever their order), the differences
``d_s = candidate − baseline`` (sign flipped for lower-is-better metrics) go to
:func:`stats.decisions.compare`, and the p-values of one call are Holm-corrected across
its tested cells (``assert_not_worse`` only: ``assert_better``/``assert_equivalent`` pass only
when every cell passes, an intersection-union test that needs no correction). A gate returns its
verdicts and raises ``AssertionError`` when one fails; the message carries what a reviewer needs
(cell, metric and direction, both means with intervals, paired Δ with the (1 − 2α) interval that
matches the one-sided decisions, p, test, margin, δ, n, MDE, and for an INCONCLUSIVE cell the
seeds that would decide it, planned for δ).

Pairing that would be fictional is refused (:class:`GateRefusal`): fewer than two shared
seeds, a task whose data or split fingerprint differs for the same seed, a metric mismatch
(:mod:`pytest_graphnetz.pairing`, at every look). Every not-worse cell, fixed or adaptive
seeds, is decided on one path (:func:`decide_cells`: a fixed seed count is a one-look
schedule); what a verdict holds and how it reads is :mod:`pytest_graphnetz.verdicts`.

Inside pytest, the plugin sets a :class:`GateObserver` for each test body: it supplies the
session's ``--graphnetz-alpha`` / ``--graphnetz-strict`` / ``--graphnetz-min-effect`` defaults
and collects every verdict for the terminal summary. Outside pytest the defaults are
``alpha=0.05``, ``strict=False`` and δ from the metric (:func:`default_min_effect`).

The package by concept: :mod:`.api` (the ``assert_*`` gates), :mod:`.compare` (report against
report, no failing), :mod:`.cells` (the one decision path), :mod:`.suite` (the suite row),
:mod:`.observer` (the plugin's observer and the recorded rows).
"""

from __future__ import annotations

from ..text import fmt_num
from ..verdicts.formatting import (
    TABLE_COLUMNS,
    TABLE_HEADERS,
    describe_values,
    fmt_mean_ci,
    gate_table,
    metric_label,
    seed_list,
    verdict_name,
)
from ..verdicts.guidance import Stop
from ..verdicts.rules import (
    DEFAULT_MIN_EFFECT,
    NO_MIN_EFFECT_NOTE,
    default_min_effect,
    failed_verdict,
)
from ..verdicts.values import (
    CHANGED_MODEL_NOTE,
    CellVerdict,
    GateRefusal,
    UnpairedCell,
    WidthVerdict,
)
from .api import (
    BaselineLike,
    assert_better,
    assert_ci_width,
    assert_equivalent,
    assert_not_worse,
)
from .cells import decide_cells
from .compare import TESTS, Schedule, compare_reports, compare_schedule
from .observer import GateObserver, observing
from .suite import SUITE, suite_rows

__all__ = [
    "CHANGED_MODEL_NOTE", "DEFAULT_MIN_EFFECT", "NO_MIN_EFFECT_NOTE", "SUITE", "TABLE_COLUMNS",
    "TABLE_HEADERS", "TESTS", "BaselineLike", "CellVerdict", "GateObserver", "GateRefusal",
    "Schedule", "Stop", "UnpairedCell", "WidthVerdict", "assert_better", "assert_ci_width",
    "assert_equivalent", "assert_not_worse", "compare_reports", "compare_schedule",
    "decide_cells", "default_min_effect", "describe_values", "failed_verdict", "fmt_mean_ci",
    "fmt_num", "gate_table", "metric_label", "observing", "seed_list", "suite_rows",
    "verdict_name",
]
