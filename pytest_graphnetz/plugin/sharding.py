"""A shard's or a plan's run of a graphnetz test (``--graphnetz-shard``, ``--graphnetz-plan``):
the test ends skipped, saying what it trained or found missing, and the plan's file is written
at session end (what ``graphnetz plan`` reads).

Standard library and pytest only at import: pytest loads the plugin on every run.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest


@contextmanager
def shard_outcomes(planned: list[dict[str, Any]], nodeid: str) -> Iterator[None]:
    """End the test ``nodeid`` as skipped when its run was a shard's (what it trained) or a
    plan's (its missing triples added to ``planned``)."""
    from pytest_graphnetz.runner.shard import Planned, ShardTrained

    try:
        yield
    except ShardTrained as done:
        pytest.skip(str(done))
    except Planned as plan:
        planned.extend({**m, "test": nodeid} for m in plan.missing)
        pytest.skip(str(plan))


def write_plan(path: Path, planned: list[dict[str, Any]]) -> None:
    """``--graphnetz-plan``: the session's missing triples as JSON, with the shards that have
    work."""
    import json

    from pytest_graphnetz.report.files import write_text_atomic

    shards = sorted({m["shard"] for m in planned if m["shard"] is not None})
    write_text_atomic(path, json.dumps({"missing": planned, "shards_with_work": shards},
                                       indent=1) + "\n")


__all__ = ["shard_outcomes", "write_plan"]
