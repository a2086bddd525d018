"""Plain text shared by every view (summary, pairwise, gates, export): plain-text and Markdown
tables, escaping, the one spelling of each kind of number they print (:func:`fmt_num`,
:func:`fmt_signed`, :func:`fmt_fixed`, :func:`fmt_p`, :func:`fmt_level`, :func:`fmt_interval`),
and long text clipped to a budget (:func:`first_line`, :func:`clip_line`, :func:`clip`)."""

from __future__ import annotations

import html
import itertools
import math
import re
import unicodedata
from collections.abc import Sequence

# What a cache hit that, retrained to check it, gave another result means: one sentence for the
# runner's check, the gate rows and the session summary.
NOT_REPRODUCED = "a cached result did not reproduce: an input the key does not see changed"



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


def seed_list(seeds: Sequence[int]) -> str:
    """``0-9`` for a run of more than two consecutive seeds, else a comma list (``3,5``)."""
    seeds = list(seeds)
    if len(seeds) > 2 and all(b - a == 1 for a, b in itertools.pairwise(seeds)):
        return f"{seeds[0]}-{seeds[-1]}"
    return ",".join(str(s) for s in seeds)


def markdown_table(headers: Sequence[str], rows: Sequence[Sequence[object]]) -> str:
    """A GitHub-flavoured Markdown table; every cell goes through :func:`markdown_text`, its
    code spans kept as code."""
    out = ["| " + " | ".join(markdown_text(h, cell=True) for h in headers) + " |",
           "|" + "|".join("---" for _ in headers) + "|"]
    out += ["| " + " | ".join(markdown_text(c, cell=True) for c in row) + " |" for row in rows]
    return "\n".join(out)


# A code span as CommonMark reads one: a backtick run, then the shortest text up to a run of
# the same length (a longer or shorter run inside does not close it).
_CODE_SPAN = re.compile(r"(?<!`)(`+)(?!`)(.+?)(?<!`)\1(?!`)")


def markdown_text(text: object, *, cell: bool = False) -> str:
    """``text`` as Markdown inline text in which its code spans (`` `pytest -x` ``) stay code:
    outside them as :func:`markdown_escape`; inside, nothing is escaped (a code span shows
    backslashes as written, and raw HTML, links and mentions do not work there) but, in a
    table ``cell``, the pipe, which GitHub's tables split cells on even in code and read back
    from ``\\|``. Controls are made visible everywhere."""
    shown, out, end = visible(text), [], 0
    for m in _CODE_SPAN.finditer(shown):
        body = m.group(2).replace("|", "\\|") if cell else m.group(2)
        out += [markdown_escape(shown[end:m.start()]), m.group(1), body, m.group(1)]
        end = m.end()
    out.append(markdown_escape(shown[end:]))
    return "".join(out)


def visible(text: object) -> str:
    """``text`` with control, format and line/paragraph-separator characters written as
    escapes (``\\r``, ``\\x1b``, ``\\u202e``): a CR in a task name must not start a new line
    of Markdown (a heading, a fake verdict) nor a bidi override reorder what a reviewer reads."""
    return "".join(ch.encode("unicode_escape").decode("ascii")
                   if unicodedata.category(ch) in _INVISIBLE else ch for ch in str(text))


# Cc: controls (CR, LF, ESC, ...); Cf: format (zero-width, bidi overrides); Zl, Zp: separators.
_INVISIBLE = frozenset({"Cc", "Cf", "Zl", "Zp"})
# Backslash-escaped: what could end a table cell, open code, raw HTML or an entity. `*` and `_`
# only change emphasis, and the tables use `**` for bold: left alone. Brackets stay readable
# (intervals are [low, high]): a link or image needs "](" (reference definitions need a line of
# their own, which a cell cannot start), so only that "]" is escaped. ">" is left alone for the
# same reason ("gap > 0 pt"): it only quotes at the start of a line, where no cell starts.
_MARKDOWN_SPECIAL = re.compile(r"([\\`|<&]|\](?=\())")
# GitHub turns @name into a notification and bare URLs into links, after rendering (so no
# backslash escape stops them): a zero-width space after the @ or the scheme breaks both.
_MENTION = re.compile(r"@(?=[A-Za-z0-9])")
_BARE_LINK = re.compile(r"(?i)\b(https?|ftp|www)(?=:|\.)")


def markdown_escape(text: object) -> str:
    """``text`` as literal Markdown inline text (a table cell, a headline): controls made
    visible, Markdown and HTML specials backslash-escaped, mentions and bare links broken."""
    out = _MARKDOWN_SPECIAL.sub(r"\\\1", visible(text))
    return _BARE_LINK.sub("\\1\u200b", _MENTION.sub("@\u200b", out))


def html_escape(text: object) -> str:
    """``text`` as literal text inside an HTML element of a Markdown page (``<code>`` in a
    ``<summary>``): controls made visible, HTML escaped, mentions and bare links broken."""
    out = html.escape(visible(text))
    return _BARE_LINK.sub("\\1\u200b", _MENTION.sub("@\u200b", out))


def code_block(text: str, info: str = "text") -> str:
    """``text`` as a fenced code block whose fence is longer than any backtick run inside, so
    nothing in ``text`` can close it early. Controls other than newlines are made visible."""
    body = "\n".join(visible(line) for line in str(text).split("\n"))
    fence = "`" * max(3, 1 + max(map(len, re.findall("`+", body)), default=0))
    return f"{fence}{info}\n{body}\n{fence}"


def inline_code(text: object) -> str:
    """``text`` as inline code: delimiters longer than any backtick run inside (padded with a
    space, which CommonMark strips, when ``text`` holds a backtick)."""
    body = visible(text)
    ticks = "`" * (1 + max(map(len, re.findall("`+", body)), default=0))
    pad = " " if "`" in body else ""
    return f"{ticks}{pad}{body}{pad}{ticks}"


def check_name(kind: str, name: object) -> None:
    """Refuse a task or model name holding a control, format or separator character (a CR
    would start a new line of Markdown: a fake heading on the pull-request page)."""
    bad = [ch for ch in str(name) if unicodedata.category(ch) in _INVISIBLE]
    if bad:
        raise ValueError(
            f"{kind} name {str(name)!r} contains a control character ({bad[0]!r}): names reach "
            "the terminal, Markdown summaries and file names; rename it without control, "
            "format or line-separator characters")


# -- numbers: one spelling per kind, for every message, table and page ------------------------


def fmt_num(x: float | None) -> str:
    """A number to 4 significant digits (``0.9375``, ``0.02921``, ``1.2e-05``): means, Δ,
    widths, MDEs, settings; None or NaN: ``n/a``."""
    if x is None or math.isnan(x):
        return "n/a"
    return f"{float(x):.4g}"


def fmt_signed(x: float | None) -> str:
    """:func:`fmt_num` with its sign: ``+0.0123``, ``-0.5``, ``+0`` (never ``-0``)."""
    if x is None or math.isnan(x):
        return "n/a"
    return f"{float(x) + 0.0:+.4g}"


def fmt_fixed(x: float, digits: int = 4, *, signed: bool = False) -> str:
    """``x`` to ``digits`` decimals, a table column's spelling (``0.9375``, ``+0.050`` when
    ``signed``); a value that rounds to zero prints as ``0.000``, never ``-0.000``; NaN and
    infinities as ``nan``, ``inf``."""
    # `+ 0.0` turns a rounded -0.0 into 0.0.
    return f"{round(float(x), digits) + 0.0:{'+' if signed else ''}.{digits}f}"


def fmt_p(p: float | None) -> str:
    """A p-value: three decimals (``0.500``, ``1.000``, ``0.012``), two significant digits
    below 0.01 (``0.0012``, ``7.6e-07``); None or NaN: ``n/a``."""
    if p is None or math.isnan(p):
        return "n/a"
    return f"{p:.2g}" if p < 0.01 else f"{p:.3f}"


def fmt_level(level: float) -> str:
    """A confidence level as a percent, to 3 significant digits: ``0.95`` → ``95%``, ``0.9``
    → ``90%``, ``0.925`` → ``92.5%``."""
    return f"{100 * level:.3g}%"


def fmt_interval(low: float, high: float) -> str:
    """An interval as ``[low, high]``, each end by :func:`fmt_num`."""
    return f"[{fmt_num(low)}, {fmt_num(high)}]"


def ceil_significant(x: float, digits: int = 2) -> float:
    """``x`` rounded *up* to ``digits`` significant digits (``0.03149`` → ``0.032``): a bound
    or a δ printed short must still hold (a drop of 0.0315 is not ruled out by "> 0.031")."""
    if not x > 0 or not math.isfinite(x):
        return x
    scale = 10 ** (math.floor(math.log10(x)) - digits + 1)
    return math.ceil(x / scale - 1e-9) * scale


def listed(items: Sequence[str], limit: int, sep: str = ", ") -> str:
    """The first ``limit`` of ``items`` joined by ``sep``, then how many more there are."""
    return sep.join(items[:limit]) + (f" and {len(items) - limit} more"
                                      if len(items) > limit else "")


def seed_trainings(n: int) -> str:
    """``"1 seed-training"``, ``"7 seed-trainings"``."""
    return f"{n} seed-training{'' if n == 1 else 's'}"


# One line of a failing test's message, or one table cell, beyond this is cut (a script's
# 3 MB stderr line): the whole message stays in pytest's output and the JUnit XML.
LINE_BUDGET = 2_000
# The first line of a failure or refusal (what pytest's short summary and a terminal show):
# at most this many characters; the detail goes on the lines after it.
FIRST_LINE_WIDTH = 80


def first_line(text: str, limit: int = 200) -> str:
    """The first non-empty line of a failure message, clipped."""
    line = next((s.strip() for s in str(text).splitlines() if s.strip()), "")
    return line if len(line) <= limit else line[:limit - 1] + "…"


# How a failure message names a cell: a triple's ("task 'cora' × model 'GCN' × seed 3", the
# runner's and command tasks'), a verdict's first line ("cora/GCN — accuracy ..."), a task's.
_NAMED_CELL = (re.compile(r"task '([^'\n]+)' × model '([^'\n]+)'"),
               re.compile(r"^\s*([^\s/]+/[^\s/]+) — ", re.M),
               re.compile(r"task '([^'\n]+)'"))


def exception_line(exc: BaseException, limit: int | None = None) -> str:
    """``exc``'s message with its white space folded into one line, clipped to ``limit``
    characters; its type's name when it has no message."""
    return " ".join(str(exc).split())[:limit] or type(exc).__name__


def named_cell(message: str) -> str:
    """The cell a failure ``message`` names ("cora/GCN"; a task alone when only it is named),
    for an ERROR row's Cell column; "-" when it names none."""
    for pattern in _NAMED_CELL:
        found = pattern.search(message)
        if found:
            return "/".join(found.groups())
    return "-"


def clip_line(text: str, limit: int = LINE_BUDGET, where: str | None = None) -> str:
    """``text`` cut to ``limit`` characters, saying how many more there were (and ``where``
    the whole is)."""
    text = str(text)
    if len(text) <= limit:
        return text
    return text[:limit] + f" … ({len(text) - limit} more characters cut" + \
        (f": {where})" if where else ")")


def clip(text: str, lines: int = 60) -> str:
    """``text`` cut to its first ``lines`` lines, saying how many more there were."""
    kept = str(text).splitlines()
    if len(kept) <= lines:
        return "\n".join(kept)
    return "\n".join([*kept[:lines], f"... ({len(kept) - lines} more lines)"])


def _is_number(s: str) -> bool:
    try:
        float(s.replace("%", "").replace("±", "").split()[0])
    except (ValueError, IndexError):
        return False
    return True
