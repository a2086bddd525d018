"""Statistics core: intervals, paired tests, verdicts, power and seeds-needed.

Pure functions over numpy arrays returning frozen dataclasses; numpy + scipy only (never torch
or pytest). Functions that draw take an explicit ``rng`` (``numpy.random.Generator`` or seed).

CONTRACT (stubs; issue 3 implements them; the names and fields below are what report.py,
gates.py and export.py build on — extend, don't rename):

    ConfidenceInterval(low, high)
    CellStats(n, n_diverged, mean, std, sem, ci: ConfidenceInterval, method, confidence_level)
    describe(x, *, method="t"|"bootstrap", confidence_level=0.95, n_resamples=10_000, rng=None)
        -> CellStats                      # NaN entries = diverged seeds: counted, reported
    t_interval(x, *, confidence_level=0.95) -> ConfidenceInterval
    bootstrap_interval(x, *, confidence_level=0.95, n_resamples=10_000, rng=None)
        -> ConfidenceInterval             # percentile, asymmetric, never outside [min, max]
    PairedResult(test, n, mean_diff, ci, p_value, effect_size, ...)       # two-sided
    paired_test(a, b, *, test="paired-t"|"wilcoxon"|"permutation"|"bootstrap"|"welch",
                confidence_level=0.95, rng=None) -> PairedResult
    class Verdict(str, Enum): REGRESSED="REGRESSED", NOT_WORSE="NOT WORSE",
        INCONCLUSIVE="INCONCLUSIVE", IDENTICAL="IDENTICAL", BETTER="BETTER",
        EQUIVALENT="EQUIVALENT", NOT_EQUIVALENT="NOT EQUIVALENT"
    Comparison(verdict, test, n, mean_diff, ci (two-sided), lower_bound (one-sided),
               p_value, p_adjusted, margin, alpha, mde, seeds_needed, notes: tuple[str, ...])
    compare(candidate, baseline, *, higher_is_better=True, kind="not_worse"|"better"|
            "equivalent", test="paired-t", margin=0.0, alpha=0.05, rng=None) -> Comparison
        # d_s = candidate - baseline, sign flipped for lower-is-better; seeds already aligned
    compare_many([...same args per cell...]) / holm(p_values, alpha) -> Holm across cells
    mde(sd_diff, n, *, alpha=0.05, power=0.8, one_sided=True) -> float
    seeds_for_width(sd, max_width, *, confidence_level=0.95) -> int
    seeds_to_decide(mean_diff, sd_diff, *, margin, alpha=0.05, power=0.8) -> int | None
    corrected_resampled_ttest(a, b, *, n_train, n_test) -> PairedResult   # Nadeau-Bengio
    describe_folds(scores) -> FoldSummary(mean, std, k)                    # no CI attached
    wilson_interval(k, n, *, confidence_level=0.95) -> ConfidenceInterval
    bootstrap_metric(y_true, y_pred, metric, *, confidence_level=0.95, n_resamples=10_000,
                     rng=None) -> ConfidenceInterval
"""

from __future__ import annotations
