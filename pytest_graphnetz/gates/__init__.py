"""Layer 5 of 7: the gates and what they decide with: the adaptive schedule, the
``assert_*`` gates, pairing, verdicts, calibration, tune-then-confirm, baselines and their
refresh. May import runner, report, stats and base; nothing in it imports plugin or cli.

Gates: compare a candidate report with a baseline on paired per-seed evidence.

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
(:mod:`.comparing.pairing`, at every look). Every not-worse cell, fixed or adaptive seeds, is
decided on one path (:func:`~.comparing.cells.decide_cells`: a fixed seed count is a one-look
schedule); what a verdict holds and how it reads is :mod:`pytest_graphnetz.gates.verdicts`.

Inside pytest, the plugin sets a :class:`~.recorder.GateRecorder` for each test body: it
supplies the session's ``--graphnetz-alpha`` / ``--graphnetz-strict`` /
``--graphnetz-min-effect`` defaults and collects every verdict for the terminal summary.
Outside pytest the defaults are ``alpha=0.05``, ``strict=False`` and δ from the metric
(:func:`~pytest_graphnetz.gates.verdicts.default_min_effect`).

The package by job: :mod:`.api` (the ``assert_*`` gates: build the call's spec, refresh or
compare, record), :mod:`.comparing` (report against report, no failing and no writing: pairing,
the one decision path, the suite row, the adaptive schedule; its entry point
:func:`~.comparing.compare.compare_gate`), :mod:`.refreshing` (the baseline store, replicates
and the ratchet; it calls comparing, never the reverse), :mod:`.verdicts` (what a verdict holds
and says), :mod:`.recorder` (where the rows go), :mod:`.calibration` and :mod:`.tuning`.
Only the gates and ``compare_reports`` are exported here; the rest is imported from the module
that defines it.
"""

from __future__ import annotations

from pytest_graphnetz.gates.api import (
           assert_better,
           assert_ci_width,
           assert_equivalent,
           assert_not_worse,
)
from pytest_graphnetz.gates.comparing.compare import compare_reports

__all__ = ["assert_better", "assert_ci_width", "assert_equivalent", "assert_not_worse",
           "compare_reports"]
