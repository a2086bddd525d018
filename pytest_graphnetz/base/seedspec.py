"""The seed spec, read once for the plugin and the library: ``--graphnetz-seeds`` /
``graphnetz_seeds`` (:func:`parse_seeds`, :func:`parse_adaptive`), the looks of adaptive
``MIN..MAX`` (:func:`check_adaptive`, which ``run_adaptive`` uses too), the schedule's
doublings (:func:`doublings`) and which seed sets are the canonical ones a gate decides on
(:func:`off_prefix`).

Standard library only: pytest loads the plugin, which reads the spec, on every run.
"""

from __future__ import annotations

from collections.abc import Sequence

# More seeds than this is a typo, not a benchmark (each seed trains every task × model), and
# `range(4294967296)` would exhaust memory before anything could say so.
MAX_SEEDS = 10_000
SEED_LIMIT = 2**32  # numpy's seed range: seeds are 0 <= seed < 2**32
OPTION = "`--graphnetz-seeds` / `graphnetz_seeds`"


def doublings(first: int, upto: int) -> tuple[int, ...]:
    """``first, 2·first, 4·first, ...`` up to ``upto`` (empty when ``upto < first``)."""
    looks = []
    n = int(first)
    while n <= int(upto):
        looks.append(n)
        n *= 2
    return tuple(looks)


def check_adaptive(min_seeds: int, max_seeds: int) -> tuple[int, ...]:
    """The looks of adaptive ``MIN..MAX``: the schedule's MIN, 2·MIN, ... with MAX among them
    (``5..5`` is one look). Raises ``ValueError`` naming the fix otherwise."""
    if isinstance(min_seeds, bool) or isinstance(max_seeds, bool):
        raise TypeError("`min_seeds` and `max_seeds` must be integers")
    if not 3 <= int(min_seeds) <= int(max_seeds):
        # At 2 seeds two equal non-zero differences have no spread: t = ±inf crosses any
        # boundary, and on a discrete metric that happens far more often than the α the first
        # look may spend (karate, 8 test nodes: 2..20 read false REGRESSED 7.9% of 1,000 null
        # trials through the real gate, benchmarks/adaptive_fwer.py).
        raise ValueError(
            f"adaptive seeds are MIN..MAX with 3 <= MIN <= MAX, got {min_seeds}..{max_seeds}: "
            "a first look at 2 seeds cannot hold α on discrete metrics (two equal non-zero "
            "differences give t = ±inf). Start at 3 or more (e.g. 5..20)")
    looks = doublings(int(min_seeds), int(max_seeds))
    if looks[-1] != int(max_seeds):
        raise ValueError(
            f"adaptive seeds {min_seeds}..{max_seeds}: MAX must be a look of the schedule "
            f"{'→'.join(map(str, looks))}→{2 * looks[-1]} (MIN and its doublings; every run "
            f"walks the same looks): use {min_seeds}..{looks[-1]} or "
            f"{min_seeds}..{2 * looks[-1]}")
    return looks


def parse_adaptive(text: str) -> tuple[int, int] | None:
    """``"5..20"`` → ``(5, 20)`` (adaptive seeds: MIN..MAX, seeds 0..MAX-1, checked by
    :func:`check_adaptive`); None for a fixed seed spec."""
    text = str(text).strip()
    if ".." not in text:
        return None
    low, _, high = text.partition("..")
    try:
        bounds = (int(low), int(high))
    except ValueError:
        raise ValueError(f"{OPTION}: adaptive seeds are MIN..MAX with 3 <= MIN <= MAX "
                         f"(e.g. 5..20), got {text!r}") from None
    try:
        check_adaptive(*bounds)
    except ValueError as exc:
        raise ValueError(f"{OPTION}: {exc}") from None
    return bounds


def parse_seeds(text: str) -> tuple[int, ...]:
    """``"10"`` → 0..9; ``"3-7"`` → 3..7 (inclusive); ``"1,4,7"`` → those seeds, in that order;
    ``"5..20"`` (adaptive) → 0..19, every seed the schedule may use.

    At most :data:`MAX_SEEDS` seeds, each in ``[0, 2**32)``: checked before a range is built.
    """
    text = str(text).strip()
    if not text.isascii() or "_" in text:  # int() reads "1_000" and "٣" (Arabic-Indic 3)
        raise ValueError(f"{OPTION}: write seeds with the ASCII digits 0-9 (no `_` "
                         f"separators), got {text!r}")
    adaptive = parse_adaptive(text)
    if adaptive is not None:
        text = str(adaptive[1])  # every seed the schedule may use: 0..MAX-1
    listed: list[int] | None = None
    try:
        if "," in text:
            listed = [int(part) for part in text.split(",") if part.strip()]
            count, high = len(listed), max(listed, default=-1)
        elif "-" in text.lstrip("-"):
            low, high = (int(part) for part in text.split("-", 1))
            count = high - low + 1
        else:
            low, high = 0, int(text) - 1
            count = high + 1
    except ValueError:
        listed, count, high = [], 0, -1
    if count > MAX_SEEDS:
        raise ValueError(f"{OPTION}: {text!r} asks for {count} seeds; at most {MAX_SEEDS} are "
                         "allowed")
    if high >= SEED_LIMIT:
        raise ValueError(f"{OPTION}: {text!r} has seed {high}; seeds must be below 2**32 = "
                         f"{SEED_LIMIT} (numpy's seed range)")
    seeds = tuple(listed if listed is not None else range(low, high + 1))
    if not seeds or len(set(seeds)) != len(seeds) or min(seeds) < 0:
        raise ValueError(
            f"{OPTION}: expected N (seeds 0..N-1), A-B or a list like 1,4,7 of distinct "
            f"non-negative seeds, got {text!r}")
    return seeds


def off_prefix(seeds: Sequence[int], first: int) -> str:
    """Why ``seeds`` (a gate's paired seeds) are not the canonical seeds a gate decides on ("":
    they are): the prefix ``0..n−1`` with ``n`` at least the schedule's first look ``first``.
    Only those seeds make a run a look of the one schedule, so that a rerun cannot fish."""
    held = sorted(set(int(s) for s in seeds))
    shown = _seed_text(held)
    if held != list(range(len(held))):
        return (f"seeds {shown} are not the prefix 0-{len(held) - 1} (the canonical seeds "
                "0..n-1 every run is judged on)")
    if len(held) < first:
        return (f"{len(held)} seeds ({shown}) hold no look: the schedule's first look is "
                f"{first} seeds (0-{first - 1})")
    return ""


def _seed_text(seeds: Sequence[int]) -> str:
    """``0-9``, ``0-4,6-9``: runs of consecutive seeds."""
    runs: list[list[int]] = []
    for s in seeds:
        if runs and s == runs[-1][-1] + 1:
            runs[-1].append(s)
        else:
            runs.append([s])
    return ",".join(str(r[0]) if len(r) == 1 else f"{r[0]}-{r[-1]}" for r in runs)


__all__ = ["MAX_SEEDS", "SEED_LIMIT", "check_adaptive", "doublings", "off_prefix",
           "parse_adaptive", "parse_seeds"]
