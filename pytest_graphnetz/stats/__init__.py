"""Layer 2 of 7: statistics. May import base, numpy and scipy (lazily); never torch,
pytest or the layers above.

Statistics core: intervals, paired tests, verdicts, power and seeds-needed.

Pure functions over numpy arrays returning frozen dataclasses; numpy + scipy only (never torch
or pytest). scipy is imported inside the functions that use it, so importing this package stays
cheap. Every function that draws takes ``rng``: ``None`` means the fixed seed
:data:`DEFAULT_SEED` (so a report's views are deterministic), an ``int`` seeds a fresh
``numpy.random.Generator``, and a ``Generator`` is drawn from as is.

Conventions:

- A cell is a 1-D array of per-seed values, shape ``(n_seeds,)``. A non-finite entry (NaN, ±inf)
  is a diverged seed: counted and reported, never dropped silently.
- Paired arrays (``candidate``/``baseline``, ``a``/``b``) are already aligned by seed.
- ``compare`` works on ``d_s = candidate_s - baseline_s``, sign-flipped for lower-is-better
  metrics, so ``d > 0`` always means "candidate is better".
- A p-value "rejects at α" when ``p <= alpha``.

One module per concept: :mod:`.intervals` (describing a cell), :mod:`.paired` (paired tests and
one-sided evidence), :mod:`.decisions` (verdicts, ``compare``, Holm), :mod:`.planning` (power,
MDE, seeds needed), :mod:`.boundaries` and :mod:`.sequential` (the one sequential design and
deciding with it), :mod:`.suite` (the suite row), :mod:`.robust` (collapsed seeds),
:mod:`.heldout` (folds, Wilson, bootstrap over test examples), :mod:`.tables` (the Summary and
Pairwise views), :mod:`.slope` (a series' least-squares slope and its test) and
:mod:`.resampling` (the bootstrap and sign-flip kernels).

This namespace holds what a user meets: the result types the report's views and the gates'
verdicts hand out, the rng convention, the choices of ``method``/``test`` and the seed planner
the docs use. Everything else is imported from the module that defines it
(``from pytest_graphnetz.stats.decisions import compare``).
"""

from __future__ import annotations

from pytest_graphnetz.stats._common import (
    CI_METHODS,
    DEFAULT_SEED,
    PAIRED_TESTS,
    ConfidenceInterval,
    RngLike,
    resolve_rng,
)
from pytest_graphnetz.stats.comparison import Comparison, Verdict
from pytest_graphnetz.stats.heldout import ExamplePairwise
from pytest_graphnetz.stats.intervals import CellStats
from pytest_graphnetz.stats.paired import PairedResult
from pytest_graphnetz.stats.planning import seeds_for_min_effect
from pytest_graphnetz.stats.tables import Pairwise, PairwiseRow, Summary, SummaryRow

__all__ = [
    "CI_METHODS", "DEFAULT_SEED", "PAIRED_TESTS", "CellStats", "Comparison", "ConfidenceInterval",
    "ExamplePairwise", "PairedResult", "Pairwise", "PairwiseRow", "RngLike", "Summary",
    "SummaryRow", "Verdict", "resolve_rng", "seeds_for_min_effect",
]
