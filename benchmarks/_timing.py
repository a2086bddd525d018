"""Interleaved timing shared by the benchmark scripts.

These machines are shared and noisy: a load spike during one variant's block of repetitions
would bias a plain "all A, then all B" comparison. Running A, B, B, A... and comparing medians
exposes both variants to the same drift, so the printed ratios are what these scripts report.
"""

from __future__ import annotations

import resource
import statistics
import time
from collections.abc import Callable, Mapping

Timings = dict[str, list[float]]  # variant name -> seconds of each repetition


def cpu_seconds() -> float:
    """CPU seconds (user + system) of this process plus its finished, waited-for children."""
    own = resource.getrusage(resource.RUSAGE_SELF)
    children = resource.getrusage(resource.RUSAGE_CHILDREN)
    return own.ru_utime + own.ru_stime + children.ru_utime + children.ru_stime


def interleaved(variants: Mapping[str, Callable[[], object]],
                repeats: int) -> tuple[Timings, Timings]:
    """Run each variant ``repeats`` times in turn; ``(wall, cpu)`` seconds per variant.

    The order alternates every round (A B, B A, A B...) so neither variant always runs right
    after the other (one that leaves caches cold would bias its successor). CPU seconds count
    this process and the children it waited for (subprocesses, worker processes): unlike wall
    time they barely move when other users load the machine, but they do not show waiting.
    """
    names = list(variants)
    wall: Timings = {name: [] for name in names}
    cpu: Timings = {name: [] for name in names}
    for i in range(repeats):
        for name in names if i % 2 == 0 else reversed(names):
            start_wall, start_cpu = time.perf_counter(), cpu_seconds()
            variants[name]()
            wall[name].append(time.perf_counter() - start_wall)
            cpu[name].append(cpu_seconds() - start_cpu)
    return wall, cpu


def describe(times: Mapping[str, list[float]], label: str = "wall") -> str:
    """One line per variant: median and min..max seconds over its repetitions."""
    return "\n".join(
        f"  {label:<4} {name:<22} median {statistics.median(ts):8.4f} s   "
        f"(min {min(ts):.4f}, max {max(ts):.4f}, n={len(ts)})"
        for name, ts in times.items()
    )


def median_ratio(times: Mapping[str, list[float]], numerator: str, denominator: str) -> float:
    """``median(numerator) / median(denominator)``."""
    return statistics.median(times[numerator]) / statistics.median(times[denominator])


def paired_ratio(times: Mapping[str, list[float]], numerator: str, denominator: str) -> float:
    """Median over rounds of ``numerator_i / denominator_i``: each round's two runs saw about
    the same machine load, so this cancels slow drift better than a ratio of medians."""
    return statistics.median(
        a / b for a, b in zip(times[numerator], times[denominator], strict=True)
    )


def ratio_interval(times: Mapping[str, list[float]], numerator: str, denominator: str,
                   confidence: float = 0.95) -> tuple[float, float]:
    """A distribution-free interval for the median of the per-round ratios (what
    :func:`paired_ratio` prints): the order statistics ``r_(k)``, ``r_(n+1-k)`` with the
    largest ``k`` whose binomial(n, 1/2) coverage is at least ``confidence``; ``(-inf, inf)``
    when there are too few rounds for any."""
    import math

    ratios = sorted(a / b for a, b in zip(times[numerator], times[denominator], strict=True))
    n = len(ratios)
    # P(r_(k) <= median < r_(n+1-k)) = 1 - 2 P(Binomial(n, 1/2) <= k - 1)
    found = None
    for k in range(1, n // 2 + 1):
        below = sum(math.comb(n, i) for i in range(k)) / 2 ** n
        if 1 - 2 * below < confidence:
            break
        found = k
    if found is None:
        return -math.inf, math.inf
    return ratios[found - 1], ratios[n - found]
