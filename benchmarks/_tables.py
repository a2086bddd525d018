"""What the simulation benchmarks share to write their results: a Markdown table as lines, a
percentage, and the results text with the hash of its tables, printed and written to
``--out``. Kept apart from :mod:`pytest_graphnetz.base.text`'s ``markdown_table``, which escapes its
cells: the committed results files and their hashes are written by these exact spellings."""

from __future__ import annotations

import hashlib
from pathlib import Path


def table(header: list[str], rows: list[list[str]]) -> list[str]:
    return ["| " + " | ".join(header) + " |", "|" + "---|" * len(header),
            *("| " + " | ".join(r) + " |" for r in rows)]


def pct(x: float) -> str:
    return f"{100 * x:.1f}%"


def wilson(k: float, n: int, digits: int = 3) -> str:
    """The rate ``k``/``n`` and its 95% Wilson interval (the package's ``wilson_interval``),
    e.g. "0.050 [0.047, 0.053]"."""
    from pytest_graphnetz.stats.heldout import wilson_interval

    ci = wilson_interval(k, n)
    return f"{k / n:.{digits}f} [{ci.low:.{digits}f}, {ci.high:.{digits}f}]"


def emit(lines: list[str], out: str | None) -> None:
    """The results: ``lines`` joined, then the sha256 of that text (so a rerun that reproduces
    the tables can be checked at a glance), printed and written to ``out`` when given."""
    text = "\n".join(lines)
    text += f"sha256 of the tables above: {hashlib.sha256(text.encode()).hexdigest()[:16]}\n"
    print(text)
    if out:
        Path(out).write_text(text, encoding="utf-8")
