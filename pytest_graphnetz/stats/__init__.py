"""Statistics core: intervals, paired tests, verdicts, power and seeds-needed.

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
MDE, seeds needed), :mod:`.heldout` (folds, Wilson, bootstrap over test examples) and
:mod:`.tables` (the Summary and Pairwise views).
"""

from __future__ import annotations

from ._common import (
    CI_METHODS,
    DEFAULT_SEED,
    EXACT_SIGNFLIP_MAX_N,
    KINDS,
    PAIRED_TESTS,
    ConfidenceInterval,
    RngLike,
    resolve_rng,
)
from .decisions import Comparison, HolmResult, Verdict, compare, compare_many, holm, holm_adjust
from .heldout import (
    FoldSummary,
    bootstrap_metric,
    corrected_resampled_ttest,
    describe_folds,
    wilson_interval,
)
from .intervals import CellStats, bootstrap_interval, describe, describe_many, t_interval
from .paired import PairedResult, paired_test, paired_tests
from .planning import mde, seeds_for_min_effect, seeds_for_width, seeds_to_decide
from .tables import Pairwise, PairwiseRow, Summary, SummaryRow, pairwise_table, summarize

__all__ = [
    "CI_METHODS", "DEFAULT_SEED", "EXACT_SIGNFLIP_MAX_N", "KINDS", "PAIRED_TESTS",
    "CellStats", "Comparison", "ConfidenceInterval", "FoldSummary", "HolmResult",
    "PairedResult", "Pairwise", "PairwiseRow", "RngLike", "Summary", "SummaryRow", "Verdict",
    "bootstrap_interval", "bootstrap_metric", "compare", "compare_many",
    "corrected_resampled_ttest", "describe", "describe_folds", "describe_many", "holm",
    "holm_adjust", "mde", "paired_test", "paired_tests", "pairwise_table", "resolve_rng",
    "seeds_for_min_effect", "seeds_for_width", "seeds_to_decide", "summarize", "t_interval",
    "wilson_interval",
]
