"""Training split by triple across jobs: ``--graphnetz-shard=I/N`` trains shard I's share of a
run's triples and gates nothing, ``--graphnetz-cache-only`` trains nothing and refuses a missing
triple by name, and the plan (``graphnetz plan``) lists what is missing.

Shards number from 1 (``1/4`` .. ``4/4``, as GitHub's matrices and humans count; ``0/4`` is
refused). Every shard job of one commit computes the same assignment without talking to the
others: it depends only on the run's triples and their expected cost, never on what the cache
holds (a shard that starts after another finished must not see another split). Expected cost:
the task's epochs, the one measure every job knows before anything trains; ties are broken by
a stable hash, so a run's triples are spread by longest-processing-time-first over the shards,
and a run whose cells differ 4× in epochs still splits within one triple's cost of even. The
shards thus train every triple exactly once between them; a triple already cached is a hit in
its shard.
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from pytest_graphnetz.base.text import listed

OPTION = "--graphnetz-shard"
CACHE_ONLY = "--graphnetz-cache-only"
# What a triple may do in a run: train when it misses; only be read (a gate after the shards);
# only be looked up (the plan).
MODES = ("train", "cache-only", "plan")
_SHARD = re.compile(r"\s*([0-9]+)\s*/\s*([0-9]+)\s*")


@dataclass(frozen=True, order=True)
class Shard:
    """Shard ``index`` of ``count`` (1 <= index <= count)."""

    index: int
    count: int

    def __str__(self) -> str:
        return f"{self.index}/{self.count}"


def parse_shard(text: Any, *, option: str = f"`{OPTION}`") -> Shard:
    """``I/N`` as a :class:`Shard`; anything else (``3/2``, ``0/4``, ``a/b``) raises
    ``ValueError`` naming ``option`` and the value."""
    match = _SHARD.fullmatch(str(text))
    if match is None:
        raise ValueError(f"{option}: expected I/N (shard I of N, counted from 1, e.g. 1/4), "
                         f"got {text!r}")
    index, count = int(match.group(1)), int(match.group(2))
    if count < 1 or not 1 <= index <= count:
        raise ValueError(
            f"{option}: shard {index} of {count} does not exist: shards count from 1 to N "
            f"(1/{max(count, 1)} .. {max(count, 1)}/{max(count, 1)}), got {text!r}")
    return Shard(index, count)


def triple_label(task: str, model: str, seed: int) -> str:
    """How a triple is named in messages and the plan: ``task/model/seed``."""
    return f"{task}/{model}/{seed}"


def assign(labels: Sequence[str], costs: Sequence[float], count: int) -> list[int]:
    """The shard (1-based) of each triple: longest expected cost first, each to the shard with
    the least cost so far (ties: the lowest shard after a rotation drawn from the labels, so
    that the many small runs of a session do not all load shard 1 first). ``labels`` are the
    triples' names (stable across jobs), ``costs`` their expected costs."""
    rotation = int(hashlib.sha256("\n".join(sorted(labels)).encode()).hexdigest(), 16) % count
    order = sorted(range(len(labels)), key=lambda i: (
        -costs[i], hashlib.sha256(labels[i].encode()).hexdigest()))
    loads = [0.0] * count
    shard_of = [0] * len(labels)
    for i in order:
        least = min(range(count), key=lambda s: (loads[s], (s - rotation) % count))
        loads[least] += costs[i]
        shard_of[i] = least + 1
    return shard_of


class NotCached(Exception):
    """Raised inside a triple that missed the cache in a run that must not train it."""


class ShardTrained(Exception):
    """A shard run finished its share: nothing to gate (the message is the row's text)."""

    def __init__(self, shard: Shard, trained: int, cached: int) -> None:
        self.shard, self.trained, self.cached = shard, trained, cached
        super().__init__(f"shard {shard.index} of {shard.count}: trained {trained} triples"
                         f" ({cached} already cached); the gate runs with {CACHE_ONLY}")


class MissingTriplesError(RuntimeError):
    """A run with ``cache_only`` found triples the cache lacks: named, none trained."""

    def __init__(self, missing: Sequence[str]) -> None:
        self.missing = list(missing)
        shown = listed(self.missing, 10)
        super().__init__(
            f"{CACHE_ONLY}: {len(self.missing)} triple(s) are not in the cache: {shown}. "
            f"Train them first (the {OPTION}=I/N jobs, or one run without {CACHE_ONLY}); "
            "`graphnetz plan` lists what is missing")


class Planned(Exception):
    """A plan run looked every triple up: ``missing`` lists those that would train, each
    ``{"task", "model", "seed", "cost", "shard"}`` (``shard`` None without a shard count)."""

    def __init__(self, missing: list[dict[str, Any]], total: int) -> None:
        self.missing, self.total = missing, total
        super().__init__(f"plan: {len(missing)} of {total} triples missing")


__all__ = ["CACHE_ONLY", "MODES", "OPTION", "MissingTriplesError", "NotCached", "Planned",
           "Shard", "ShardTrained", "assign", "parse_shard", "triple_label"]
