"""What a CI job does after a gate run, read from its JSON verdict file
(``docs/verdicts-json.md``): the next look while a cell is open (:func:`next_look`), or why
there is none; ``graphnetz next-seeds`` prints it. Standard library only."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from pytest_graphnetz.plugin.summary import JSON_SCHEMA, JSON_VERSION


@dataclass(frozen=True)
class NextLook:
    """What a CI job does after a gate run, read from its JSON verdict file
    (:func:`next_look`): ``seeds``, the seed count to run next (None: none), and ``why``,
    one line saying what was decided (every row decided, the budget reached, a baseline too
    short, no affordable seed count)."""

    seeds: int | None
    why: str


def next_look(data: Mapping[str, Any], *, budget: int, current: int | None = None) -> NextLook:
    """The next look a CI job takes while a cell is open: the largest ``next_seeds`` over the
    INCONCLUSIVE rows of a JSON verdict file's ``data`` (``docs/verdicts-json.md``; on the
    schedule, each row's next look, the one its Note names), capped at ``budget``; None when
    every row is decided, when the capped count is no more than the ``current`` seeds
    (default: the most any row used), or when no open row can take a look (its baseline lacks
    the seeds: refresh it; or no affordable count resolves δ). A look never asks for more
    seeds than a row's baseline holds (``baseline_seeds``).
    ``ValueError`` names what is wrong with a file that is not a verdict file."""
    if not isinstance(data, Mapping) or data.get("schema") != JSON_SCHEMA:
        found = data.get("schema") if isinstance(data, Mapping) else type(data).__name__
        raise ValueError(f"not a graphnetz verdict file (schema {found!r}, expected "
                         f"{JSON_SCHEMA!r}): write one with --graphnetz-json=PATH")
    if data.get("version") != JSON_VERSION:
        raise ValueError(f"verdict file version {data.get('version')!r}: this graphnetz reads "
                         f"version {JSON_VERSION}")
    rows = data.get("rows")
    if not isinstance(rows, list) or not all(isinstance(r, Mapping) for r in rows):
        raise ValueError("the verdict file's `rows` must be a list of objects")
    stats = [r["stats"] for r in rows if isinstance(r.get("stats"), Mapping)]
    used = [s["n"] for s in stats if type(s.get("n")) is int]
    current = max(used, default=0) if current is None else current
    open_rows = [r["stats"] for r in rows if r.get("verdict") == "INCONCLUSIVE"
                 and isinstance(r.get("stats"), Mapping)]
    if not open_rows:
        return NextLook(None, "every row is decided")
    looks, short, spent, stuck = [], [], 0, 0
    for s in open_rows:
        wanted = s.get("next_seeds")
        if type(wanted) is not int:
            stuck += 1   # no affordable seed count resolves δ (or no δ to plan for)
            continue
        held = s.get("baseline_seeds")
        # a look pairs only the seeds the baseline holds (docs/ci.md: refresh at the budget)
        look = min(wanted, budget, held if type(held) is int else wanted)
        if look > current:
            looks.append(look)
        elif type(held) is int and held < min(wanted, budget):
            short.append(s)
        else:
            spent += 1
    if looks:
        expected = [s["expected_seeds"] for s in open_rows
                    if type(s.get("expected_seeds")) is int]
        more = (f"; expected to decide by ~{max(expected)} seeds (the slowest row)"
                if expected else "")
        return NextLook(max(looks), f"{len(open_rows)} INCONCLUSIVE row(s): next look at "
                                    f"{max(looks)} seeds{more}")
    why = [f"{len(open_rows)} INCONCLUSIVE row(s) and no next look"]
    if spent:
        why.append(f"{spent} at the budget of {budget} seeds")
    if short:
        why.append(_refresh_advice(short, budget))
    if stuck:
        why.append(f"{stuck} that no affordable seed count resolves")
    return NextLook(None, "; ".join(why))


def _refresh_advice(rows: list[Mapping[str, Any]], budget: int) -> str:
    """What rows whose baseline lacks the next look's seeds need: a refresh at the size their
    Notes name (each row's ``refresh_seeds``, the verdict's one refresh size; the largest)."""
    sizes = [s["refresh_seeds"] for s in rows if type(s.get("refresh_seeds")) is int]
    n = max(sizes, default=budget)
    text = (f"{len(rows)} whose baseline lacks the seeds: refresh it with "
            f"--graphnetz-seeds={n} first, as the row's Note says")
    if n > budget:
        text += (f" (past the budget of {budget} seeds: this loop looks up to {budget}, the "
                 "row expects to need more)")
    return text


__all__ = ["NextLook", "next_look"]
