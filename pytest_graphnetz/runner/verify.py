"""Cache hits checked: each run retrains a sample of the triples it read from the cache and
compares them bit for bit, so an input the key cannot see costs a retrain, not a stale verdict.

Per cell (task × model) with cached seeds, :func:`verify_hits` retrains ``per_cell`` of them
without the cache (by default one seed for a command task, whose script may read what its
tracking cannot see, and none for an in-process model: docs/performance.md has the numbers),
chosen from the commit checked out and the cell's keys, so successive commits check different
seeds. A result that differs invalidates every entry of its cell and retrains the cell; the
report's protocol names it (``protocol["cache"]``), and the gates' rows and the session's
summary say :data:`~pytest_graphnetz.base.text.NOT_REPRODUCED`.
"""

from __future__ import annotations

import dataclasses
import functools
import hashlib
import json
import os
import subprocess
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

from pytest_graphnetz.runner.triple import Job, Outcome

# Seeds checked per cached cell when the run does not say (`verify_cache=None`), by task kind.
DEFAULT_CHECKS = {"command": 1}


@dataclass(frozen=True)
class CacheCheck:
    """What :func:`verify_hits` did: ``checked`` triples retrained to check their cache hits;
    ``not_reproduced``: per cell (``"task/model"``) the seeds whose retrained result differed
    from the cached one (every cached seed of such a cell was then retrained)."""

    checked: int = 0
    not_reproduced: dict[str, list[int]] = field(default_factory=dict)

    def protocol(self) -> dict[str, Any] | None:
        """The report protocol's ``cache`` entry (None when nothing was checked)."""
        if not self.checked:
            return None
        return {"checked": self.checked, "not_reproduced": self.not_reproduced}


def checks_for(job: Job, per_cell: int | None) -> int:
    """How many cached seeds of ``job``'s cell to retrain: ``per_cell``, else the default of
    its task's kind."""
    if per_cell is not None:
        return max(0, int(per_cell))
    return DEFAULT_CHECKS.get(job.task.kind, 0)


def verify_hits(jobs: Sequence[Job], outcomes: Sequence[Outcome], *, per_cell: int | None,
                run: Callable[[list[Job]], list[Outcome]]) -> tuple[list[Outcome], CacheCheck]:
    """``(outcomes, check)``: ``outcomes`` with every cell whose sampled cache hits did not
    reproduce retrained (``run`` executes jobs, in order), and what was checked."""
    cells: dict[tuple[str, str], list[int]] = {}
    for i, (job, out) in enumerate(zip(jobs, outcomes, strict=True)):
        if out.cached and out.key is not None:
            cells.setdefault((job.task.name, job.model), []).append(i)
    picked = []
    for (task, model), held in cells.items():
        n = checks_for(jobs[held[0]], per_cell)
        salt = "\0".join([commit(), task, model, *sorted(str(outcomes[i].key) for i in held)])
        picked += sorted(held, key=lambda i: hashlib.sha256(
            f"{salt}\0{jobs[i].seed}".encode()).hexdigest())[:n]
    if not picked:
        return list(outcomes), CacheCheck()
    fresh = run([dataclasses.replace(jobs[i], cache_dir=None) for i in picked])
    differ: dict[tuple[str, str], list[int]] = {}
    for i, check in zip(picked, fresh, strict=True):
        if not same_history(outcomes[i].history, check.history):
            differ.setdefault((jobs[i].task.name, jobs[i].model), []).append(jobs[i].seed)
    result = list(outcomes)
    redo = [i for cell in differ for i in cells[cell]]
    for i in redo:
        cache, key = jobs[i].cache(), outcomes[i].key
        if cache is not None and key is not None:
            cache.discard(key)
    if redo:
        # Retrained here: never served again from the remote cache, whose object may be the
        # one that did not reproduce.
        again = run([dataclasses.replace(jobs[i], remote=None) if not jobs[i].cache_read_only
                     else dataclasses.replace(jobs[i], cache_dir=None) for i in redo])
        for i, out in zip(redo, again, strict=True):
            result[i] = dataclasses.replace(out, cached=False)
    return result, CacheCheck(len(picked), {f"{t}/{m}": sorted(s) for (t, m), s in
                                            differ.items()})


def same_history(a: Any, b: Any) -> bool:
    """Whether two histories are the same bit for bit (NaN equal to NaN: a diverged epoch
    that diverges again reproduces)."""
    return json.dumps(a.to_dict(), sort_keys=True) == json.dumps(b.to_dict(), sort_keys=True)


@functools.cache
def commit() -> str:
    """The commit checked out in the current directory (``git rev-parse HEAD``), or "" outside
    a git checkout: it picks which cached seeds a run checks."""
    try:
        done = subprocess.run(["git", "rev-parse", "HEAD"], capture_output=True, text=True,
                              timeout=10, cwd=os.getcwd(), check=False)
    except (OSError, subprocess.SubprocessError):
        return ""
    return done.stdout.strip() if done.returncode == 0 else ""
