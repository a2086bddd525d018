"""Rerun-safe seeds in the not-worse gate: each fixed-seed cell is a look of an open-ended chain
of runs (:mod:`pytest_graphnetz.stats.rerun`, docs/guarantees.md).

A first run spends ``ρ·α`` (ρ = :data:`~pytest_graphnetz.stats.rerun.DEFAULT_RHO`). A rerun
of the same cell with more seeds, after a run that read INCONCLUSIVE, is the chain's next
look: the cell's design becomes the chain's (:func:`~pytest_graphnetz.stats.rerun.rerun_design`
over the recorded seed counts) and the cell is decided on the one decision path
(:func:`~.cells.decide_cells`) at every look of the chain, as an adaptive cell is at every look
of its schedule; REGRESSED stays group-sequential Holm across the call's cells.

The record of a chain (:class:`ChainRecord`) lives under the graphnetz cache directory, one
file per cell, named by :func:`chain_key` of what makes two runs the same experiment: the test,
the cell (task, model, metric) and the gate's settings (test, margin, δ, α, ρ). What the earlier
runs saw is checked by content, not by name: the digests of the candidate's and the baseline's
values (with their model and data fingerprints) at the chain's seeds must be those recorded. A
changed candidate or a refreshed baseline therefore starts a new chain (a refresh that only
adds seeds, from the same baseline code, reproduces the earlier seeds' values and keeps it), and
so does a run whose seeds do not contain the chain's. A cell whose chain was decided (any
verdict but INCONCLUSIVE) is not rerun: it is judged again at the seeds it was decided on, and
its note says why. Records are written atomically; an unreadable one is a new chain, warned.
"""

from __future__ import annotations

import json
import warnings
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ..cache import make_key
from ..report import read_regular_file, write_text_atomic
from ..verdicts import seed_list

CHAIN_SCHEMA = "pytest-graphnetz/rerun-chain"
CHAIN_VERSION = 1
CHAIN_DIR = "rerun-chains"   # under the graphnetz cache directory


@dataclass(frozen=True)
class ChainRecord:
    """What a cell's chain of runs has seen: ``looks``, each run's seed count (increasing);
    ``verdicts``, each run's verdict; ``seeds``, the last run's seeds in chain order (run k
    used the first ``looks[k]``); ``candidate`` / ``baseline``, digests of each side at
    ``seeds`` (:func:`side_digest`)."""

    looks: tuple[int, ...]
    verdicts: tuple[str, ...]
    seeds: tuple[int, ...]
    candidate: str
    baseline: str

    def to_json(self) -> str:
        return json.dumps({"schema": CHAIN_SCHEMA, "version": CHAIN_VERSION,
                           "looks": list(self.looks), "verdicts": list(self.verdicts),
                           "seeds": list(self.seeds), "candidate": self.candidate,
                           "baseline": self.baseline}, sort_keys=True) + "\n"

    @classmethod
    def from_json(cls, text: str) -> ChainRecord:
        data = json.loads(text)
        if data.get("schema") != CHAIN_SCHEMA or data.get("version") != CHAIN_VERSION:
            raise ValueError(f"not a version-{CHAIN_VERSION} {CHAIN_SCHEMA} record")
        record = cls(tuple(int(x) for x in data["looks"]), tuple(str(v) for v in data["verdicts"]),
                     tuple(int(s) for s in data["seeds"]), str(data["candidate"]),
                     str(data["baseline"]))
        if (len(record.looks) != len(record.verdicts) or not record.looks
                or record.looks[-1] != len(record.seeds) or len(set(record.seeds)) != len(
                    record.seeds)
                or any(b <= a for a, b in zip(record.looks, record.looks[1:], strict=False))):
            raise ValueError("inconsistent looks, verdicts and seeds")
        return record


@dataclass(frozen=True)
class ChainStore:
    """Where the chain records of one test's gates live: ``directory`` (``rerun-chains/``
    under the graphnetz cache directory) and ``test``, the test's node id."""

    directory: Path
    test: str = ""

    def path(self, key: str) -> Path:
        return self.directory / f"{key}.json"

    def read(self, key: str) -> ChainRecord | None:
        """The record of ``key``; None when there is none, or (warned) when it is unusable."""
        path = self.path(key)
        try:
            return ChainRecord.from_json(read_regular_file(path).decode("utf-8"))
        except FileNotFoundError:
            return None
        except (OSError, ValueError, KeyError, TypeError) as exc:
            warnings.warn(f"graphnetz: rerun-chain record {path} is unusable ({type(exc).__name__}:"
                          f" {str(exc)[:120]}); this run starts a new chain", stacklevel=2)
            return None

    def write(self, key: str, record: ChainRecord) -> None:
        """Write ``record`` atomically; a failure warns (the verdicts stand, the next rerun of
        this cell starts a new chain)."""
        try:
            self.directory.mkdir(parents=True, exist_ok=True)
            write_text_atomic(self.path(key), record.to_json())
        except OSError as exc:
            warnings.warn(f"graphnetz: could not record the rerun chain in {self.path(key)}: "
                          f"{type(exc).__name__}: {exc.strerror or exc}; a rerun of this cell "
                          "will start a new chain", stacklevel=2)


def chain_key(test: str, task: str, model: str, metric: str, higher_is_better: bool, *,
              stat_test: str, margin: float, min_effect: float | None, alpha: float,
              rho: float) -> str:
    """The name of a cell's chain record: what two runs must share to be one experiment."""
    return make_key({"chain": CHAIN_VERSION, "test": test, "task": task, "model": model,
                     "metric": [metric, bool(higher_is_better)], "stat_test": stat_test,
                     "margin": float(margin), "min_effect": min_effect, "alpha": float(alpha),
                     "rho": float(rho)})


def side_digest(values: Mapping[int, float], seeds: Sequence[int],
                fingerprints: Mapping[int, Any]) -> str:
    """A digest of one side of a cell at ``seeds``: each seed's value (exact, ``float.hex``)
    and fingerprints (the model's and the data's, where recorded)."""
    return make_key({"seeds": [int(s) for s in seeds],
                     "values": [float(values[s]).hex() for s in seeds],
                     "fingerprints": [fingerprints.get(s) for s in seeds]})


@dataclass(frozen=True)
class ChainLook:
    """How a cell enters this run: ``seeds`` in chain order, ``looks`` (the design's; the
    current run last, or the decided run's when ``held``), ``prior`` (the earlier runs'
    verdicts, one per look before the last), ``held`` (the chain was decided: judged again at
    its recorded looks), ``why_new`` (why a record was not continued; "" otherwise)."""

    key: str
    seeds: tuple[int, ...]
    looks: tuple[int, ...]
    prior: tuple[str, ...]
    held: str = ""
    why_new: str = ""

    @property
    def run(self) -> int:
        return len(self.looks)

    def describe(self, spent: float, alpha: float) -> str:
        """The table's Note: which look of the chain this is, and the α spent by it."""
        chain = "→".join(str(n) for n in self.looks)
        if self.held:
            return (f"decided {self.held} at run {self.run} of chain {chain}: not rerun, "
                    f"judged at its {self.looks[-1]} seeds")
        if self.run == 1:
            return f"new chain ({self.why_new}): α spent {spent:.3g}" if self.why_new else ""
        return f"rerun {self.run} of chain {chain}: α spent {spent:.4f} of {alpha:g}"


def plan_chain(store: ChainStore, key: str, seeds: Sequence[int], candidate: str,
               baseline: str, digests: Any) -> ChainLook:
    """The chain a cell on ``seeds`` joins. ``candidate`` / ``baseline``: the sides'
    digests at ``seeds``; ``digests(seeds) -> (candidate, baseline)`` at other seeds (the
    record's)."""
    seeds = tuple(int(s) for s in seeds)
    record = store.read(key)
    if record is None:
        return ChainLook(key, seeds, (len(seeds),), ())
    prior = record.seeds
    why = ""
    if not set(prior) <= set(seeds):
        why = (f"the seeds do not contain the earlier run's {len(prior)} seeds "
               f"{seed_list(prior)}")
    else:
        cand, base = digests(prior)
        if cand != record.candidate:
            why = "the candidate differs from the earlier runs' at their seeds"
        elif base != record.baseline:
            why = "the baseline differs from the earlier runs' at their seeds (refreshed)"
    if why:
        return ChainLook(key, seeds, (len(seeds),), (), why_new=why)
    if len(seeds) == record.looks[-1]:   # the same run again: the same look
        return ChainLook(key, prior, record.looks, record.verdicts[:-1])
    last = record.verdicts[-1]
    if last != "INCONCLUSIVE":   # more seeds after a decided run: judged at its seeds again
        return ChainLook(key, prior, record.looks, record.verdicts[:-1], held=last)
    order = (*prior, *(s for s in seeds if s not in prior))
    return ChainLook(key, order, (*record.looks, len(seeds)), record.verdicts)


def chain_notes(look: ChainLook, spent: float, alpha: float, rho: float) -> tuple[str, ...]:
    """The message's note on a cell's chain."""
    chain = "→".join(str(n) for n in look.looks)
    if look.held:
        return (f"rerun-safe seeds: this cell was decided {look.held} at {look.looks[-1]} seeds "
                f"(run {look.run} of chain {chain}) for this candidate and baseline; a decided "
                "cell is not rerun (more seeds would give the data another chance to read "
                "wrong), so it is judged at those seeds again. A changed candidate or a "
                "refreshed baseline starts a new chain; docs/guarantees.md",)
    if look.run == 1:
        why = f" (a new chain: {look.why_new})" if look.why_new else ""
        return (f"rerun-safe seeds: this run is the first of its chain{why} and spends "
                f"ρα = {spent:.4g} of α = {alpha:g} (ρ = {rho:g}); a rerun with more seeds "
                "that contain these, after INCONCLUSIVE, is judged as the chain's next look; "
                "docs/guarantees.md",)
    return (f"rerun-safe seeds: rerun {look.run} of this cell's chain {chain} (the earlier "
            f"runs read {', '.join(look.prior)}); the chain has spent α {spent:.4f} of "
            f"{alpha:g} by these {look.looks[-1]} seeds, and the verdict is the chain's "
            "boundary at every look; docs/guarantees.md",)
