"""Plain-text and Markdown tables, shared by every view (summary, pairwise, gates, export)."""

from __future__ import annotations

from collections.abc import Sequence


def format_table(headers: Sequence[str], rows: Sequence[Sequence[object]]) -> str:
    """An aligned plain-text table: text columns left-aligned, numeric columns right-aligned."""
    cells = [[str(c) for c in row] for row in rows]
    widths = [max([len(h), *(len(r[i]) for r in cells)]) for i, h in enumerate(headers)]
    # A column of numbers (blank cells allowed) is right-aligned, header included.
    numeric = [any(r[i] for r in cells) and all(not r[i] or _is_number(r[i]) for r in cells)
               for i in range(len(headers))]

    def line(values: Sequence[str]) -> str:
        parts = [v.rjust(w) if num else v.ljust(w)
                 for v, w, num in zip(values, widths, numeric, strict=True)]
        return "  ".join(parts).rstrip()

    rule = "  ".join("-" * w for w in widths)
    return "\n".join([line(list(headers)), rule, *(line(r) for r in cells)])


def markdown_table(headers: Sequence[str], rows: Sequence[Sequence[object]]) -> str:
    """A GitHub-flavoured Markdown table (pipes in cells escaped)."""
    def esc(v: object) -> str:
        return str(v).replace("|", "\\|").replace("\n", " ")

    out = ["| " + " | ".join(esc(h) for h in headers) + " |",
           "|" + "|".join("---" for _ in headers) + "|"]
    out += ["| " + " | ".join(esc(c) for c in row) + " |" for row in rows]
    return "\n".join(out)


def seed_trainings(n: int) -> str:
    """``"1 seed-training"``, ``"7 seed-trainings"``."""
    return f"{n} seed-training{'' if n == 1 else 's'}"


def _is_number(s: str) -> bool:
    try:
        float(s.replace("%", "").replace("±", "").split()[0])
    except (ValueError, IndexError):
        return False
    return True
