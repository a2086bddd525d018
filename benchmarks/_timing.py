"""Interleaved timing shared by the benchmark scripts.

These machines are shared and noisy: a load spike during one variant's block of repetitions
would bias a plain "all A, then all B" comparison. Running A, B, A, B... and comparing medians
exposes both variants to the same drift, so the printed ratio is what these scripts report.
"""

from __future__ import annotations

import statistics
import time
from collections.abc import Callable, Mapping


def interleaved(variants: Mapping[str, Callable[[], object]],
                repeats: int) -> dict[str, list[float]]:
    """Wall seconds of each variant, run in turn ``repeats`` times: ``{name: [seconds] * repeats}``.

    The order alternates every round (A B, B A, A B...) so neither variant always runs right
    after the other (a variant that leaves caches cold or memory fragmented would bias its
    successor otherwise).
    """
    names = list(variants)
    times: dict[str, list[float]] = {name: [] for name in names}
    for i in range(repeats):
        for name in names if i % 2 == 0 else reversed(names):
            start = time.perf_counter()
            variants[name]()
            times[name].append(time.perf_counter() - start)
    return times


def describe(times: Mapping[str, list[float]]) -> str:
    """One line per variant: median and min..max seconds over its repetitions."""
    return "\n".join(
        f"  {name:<24} median {statistics.median(ts):8.4f} s   "
        f"(min {min(ts):.4f}, max {max(ts):.4f}, n={len(ts)})"
        for name, ts in times.items()
    )


def median_ratio(times: Mapping[str, list[float]], numerator: str, denominator: str) -> float:
    """``median(numerator) / median(denominator)``."""
    return statistics.median(times[numerator]) / statistics.median(times[denominator])


def paired_ratio(times: Mapping[str, list[float]], numerator: str, denominator: str) -> float:
    """Median over rounds of ``numerator_i / denominator_i``: each round's two runs saw the
    same machine load, so this cancels slow drift better than a ratio of medians."""
    return statistics.median(
        a / b for a, b in zip(times[numerator], times[denominator], strict=True)
    )
