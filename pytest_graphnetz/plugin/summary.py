"""The session's gate summary as a value: rows and counts, rendered four ways.

:class:`GateSummary` holds every gate row of a session (one per cell of each gate call, plus an
ERROR row for each graphnetz test that failed without a failing row of its own), and renders

- :meth:`~GateSummary.lines`: the terminal table, headline and counts;
- :meth:`~GateSummary.markdown`: the full Markdown page (step summary, ``--graphnetz-summary``);
- :meth:`~GateSummary.comment`: the concise pull-request comment (one headline, the rows that
  are not IDENTICAL, failing first, folded to a character budget);
- :meth:`~GateSummary.to_json`: the JSON verdict file (schema: ``docs/verdicts-json.md``).

A row is a dict of display strings (as :meth:`CellVerdict.row` makes it: it travels through
pytest-xdist and JUnit XML), with an optional ``stats`` dict of numbers (:func:`verdict_stats`).
Everything that reaches Markdown or HTML is escaped here (:mod:`pytest_graphnetz.base.text`):
names, messages and reasons come from users' tests and must not turn into headings, links,
mentions or raw HTML.

Standard library only at import: the plugin builds one at the end of every session (the
full table takes its columns from :mod:`pytest_graphnetz.gates`, loaded already when there are
rows).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from pytest_graphnetz.base.text import (
    NOT_REPRODUCED,
    clip,
    clip_line,
    code_block,
    first_line,
    format_table,
    html_escape,
    markdown_table,
    markdown_text,
    named_cell,
    seed_trainings,
)

if TYPE_CHECKING:
    from pytest_graphnetz.gates.verdicts.values import CellVerdict, WidthVerdict

FAILED_MARK = "✗ FAIL"     # the table's Build column for rows that failed the build
# Verdicts that are no verdict: the comparison was not made.
NO_VERDICT = ("REFUSED", "MISSING BASELINE", "NOT COMPARED")
# The concise comment's columns: what a reviewer acts on.
COMMENT_HEADERS = ("Test", "Cell", "Paired Δ (+ = better) [CI]", "Verdict", "n", "Note")
# GitHub refuses a comment body over 65,536 characters; the comment stays far below it.
COMMENT_BUDGET = 9_000
# The display strings a JSON row repeats (the table's cells).
DISPLAY = ("metric", "baseline", "candidate", "delta", "p", "mde", "n")
JSON_SCHEMA = "pytest-graphnetz/verdicts"
JSON_VERSION = 1
WHERE_THE_REST_IS = ("the full table and every failing test's message are in the job's step "
                     "summary and in the graphnetz-verdicts artifact")
# The same pointer on a comment with no failing test: there is no message to point to.
WHERE_THE_TABLE_IS = ("the full table is in the job's step summary and in the graphnetz-verdicts "
                      "artifact")
# GitHub refuses a step summary over 1 MiB (1,048,576 bytes) per step: the Markdown page stays
# under this many UTF-8 bytes, with room for what else the step appends.
MARKDOWN_BUDGET = 900_000
WHERE_THE_MESSAGE_IS = "the full message is in pytest's output (the job log, the JUnit XML)"
WHERE_THE_ROWS_ARE = "every row is in the JSON verdict file (--graphnetz-json)"
# The Note of a row judged alone under --graphnetz-single-run (comparing.compare.NOT_RERUN_SAFE)
JUDGED_ALONE = "judged alone at α: not rerun-safe"


def verdict_stats(verdict: CellVerdict | WidthVerdict, test: str | None = None
                  ) -> dict[str, Any]:
    """The numbers of a gate verdict (a ``CellVerdict`` or ``WidthVerdict``), JSON-ready: NaN
    and infinities become None. Read from the verdict's public attributes; a comparison's
    :class:`~pytest_graphnetz.gates.verdicts.guidance.Guidance` too (``test``: the node id its
    next-look command runs); ``p`` is the verdict's (a BETTER's: the gain's)."""
    from pytest_graphnetz.gates.verdicts.values import (
        WidthVerdict,  # loaded already: the verdict came from it
    )

    out: dict[str, Any]
    if isinstance(verdict, WidthVerdict):  # assert_ci_width
        s = verdict.stats
        out = {"kind": "ci_width", "n": s.n, "candidate_mean": s.mean, "ci_low": s.ci.low,
               "ci_high": s.ci.high, "level": s.confidence_level, "width": verdict.width,
               "max_width": verdict.max_width}
    else:
        c = verdict.comparison
        ev, dec, settings = c.evidence, c.decision, c.settings
        out = {"kind": ev.kind, "test": ev.test, "n": ev.n, "mean_diff": ev.mean_diff,
               "ci_low": dec.ci.low, "ci_high": dec.ci.high, "level": c.confidence_level,
               "p": verdict.p, "p_raw": ev.p_value, "alpha": dec.level, "margin": settings.margin,
               "min_effect": settings.min_effect, "mde": dec.mde, "seeds": list(verdict.seeds),
               # the MDE recomputes from these: the one-sided level, the paired sd, the power
               "mde_alpha": dec.regressed_level, "sd_diff": ev.sd_diff, "power": settings.power,
               "baseline_mean": verdict.baseline.mean,
               "candidate_mean": verdict.candidate.mean,
               **verdict.guidance.numbers(test)}
        if verdict.skew is not None:   # the skew guard (stats.skew), every tested cell
            guard = verdict.skew
            out.update(skewness=guard.skewness, skew_z=guard.z, skew_threshold=guard.threshold,
                       skew_corrected=guard.corrects)
    out["verdict"] = str(verdict.verdict)  # a plain str: rows travel through pytest-xdist
    out["failed"] = bool(verdict.failed)
    return {k: _number(v) for k, v in out.items()}


def gate_call(verdict: CellVerdict | WidthVerdict, *, strict: bool = False
              ) -> dict[str, Any] | None:
    """The settings of the gate call that gave ``verdict`` (a comparison's ``CellVerdict``; None
    for others), as a saved report records them for ``graphnetz compare``: gate, test, margin,
    δ (``min_effect``), α, strict. ``strict``: the session's; a failing INCONCLUSIVE implies it."""
    from pytest_graphnetz.gates.verdicts.values import WidthVerdict
    from pytest_graphnetz.stats import Verdict  # loaded already: the verdict came from it

    if isinstance(verdict, WidthVerdict):
        return None
    c = verdict.comparison
    strict = strict or (verdict.verdict is Verdict.INCONCLUSIVE and bool(verdict.failed))
    return {"gate": verdict.gate, "test": c.evidence.test, "margin": _number(c.settings.margin),
            "min_effect": _number(c.settings.min_effect),
            "alpha": _number(c.settings.alpha),
            "strict": strict}


def _number(value: Any) -> Any:
    if isinstance(value, bool) or value is None or isinstance(value, (str, list)):
        return value
    try:
        x = float(value)
    except (TypeError, ValueError):
        return str(value)
    if not math.isfinite(x):
        return None
    return int(x) if isinstance(value, int) or type(value).__name__.startswith("int") else x


@dataclass(frozen=True)
class Counts:
    """How the rows split: ``failed`` (a verdict that failed the build, ERROR included),
    ``refused`` (no verdict: REFUSED, MISSING BASELINE, NOT COMPARED, in a failed test),
    ``passed`` (the rest), and of those ``identical`` (every seed scored the baseline's value)."""

    failed: int
    refused: int
    passed: int
    identical: int
    tests: int

    @property
    def total(self) -> int:
        return self.failed + self.refused + self.passed


@dataclass(frozen=True)
class GateSummary:
    """The rows of a session's gates and what to say about them (see the module docstring).

    ``rows``: gate rows, each with at least ``test`` and ``verdict``; ``failures``: node id →
    the message that failed that test; ``graphnetz_tests``: node ids of the tests that use a
    graphnetz fixture or gate (a failed one without a failing row gets an ERROR row);
    ``exitstatus``: pytest's, once known; ``unused``: baseline cells no gate used, as
    ``(file, cell)`` pairs.
    """

    rows: Sequence[Mapping[str, Any]] = ()
    failures: Mapping[str, str] = field(default_factory=dict)
    graphnetz_tests: Sequence[str] = ()
    exitstatus: int | None = None
    trained: int = 0
    cached: int = 0
    saved: int = 0
    checked: int = 0          # cache hits retrained to check them
    not_reproduced: int = 0   # cells whose checked hit differed, so retrained
    unused: Sequence[tuple[str, str]] = ()

    def __post_init__(self) -> None:
        rows = [dict(r) for r in self.rows]
        failing = {r.get("test") for r in rows if self.failed_build(r)}
        for test in dict.fromkeys(self.graphnetz_tests):
            if test in self.failures and test not in failing:
                # Red build, green page no more: the test failed outside (or after) its gates.
                failure = self.failures[test]   # the cell it names, if any
                rows.append({"test": test, "cell": named_cell(failure), "verdict": "ERROR",
                             "failed": "yes", "note": first_line(failure)})
        object.__setattr__(self, "rows", tuple(rows))

    # -- classification -----------------------------------------------------------------------

    def failed_build(self, row: Mapping[str, Any]) -> bool:
        """Did this row fail the build: a failing cell in a test that failed?"""
        return bool(row.get("failed")) and row.get("test", "") in self.failures

    def is_identical(self, row: Mapping[str, Any]) -> bool:
        from pytest_graphnetz.stats import Verdict  # loaded already: the rows came from it

        return row.get("verdict") == Verdict.IDENTICAL and not self.failed_build(row)

    def is_width_within(self, row: Mapping[str, Any]) -> bool:
        """An ``assert_ci_width`` row whose interval is within its max width: nothing to read
        on a pull request (a width that fails is listed)."""
        stats = row.get("stats")
        return (isinstance(stats, Mapping) and stats.get("kind") == "ci_width"
                and not row.get("failed") and not self.failed_build(row))

    def is_folded(self, row: Mapping[str, Any]) -> bool:
        """A row the comment counts instead of listing: IDENTICAL, or a width within its max."""
        return self.is_identical(row) or self.is_width_within(row)

    def kind(self, row: Mapping[str, Any]) -> str:
        """``failed``, ``refused`` or ``passed`` (see :class:`Counts`)."""
        verdict = str(row.get("verdict", ""))
        no_verdict = verdict.startswith(NO_VERDICT)
        if self.failed_build(row):
            return "refused" if no_verdict else "failed"
        return "refused" if verdict == "NOT COMPARED" else "passed"

    def counts(self) -> Counts:
        kinds = [self.kind(r) for r in self.rows]
        return Counts(failed=kinds.count("failed"), refused=kinds.count("refused"),
                      passed=kinds.count("passed"),
                      identical=sum(self.is_identical(r) for r in self.rows),
                      tests=len({r.get("test") for r in self.rows}))

    def headline(self) -> str:
        """One line: how many rows failed the build, and the split."""
        n = self.counts()
        failing = [r for r in self.rows if self.failed_build(r)]
        split = f"{n.failed} failed, {n.refused} refused, {n.passed} passed"
        # rows of a run judged alone (--graphnetz-single-run) say so in their Note; so does this
        alone = ("; judged alone at α: not rerun-safe (--graphnetz-single-run)"
                 if any(JUDGED_ALONE in str(r.get("note", "")) for r in self.rows) else "")
        if failing:
            tests = {r.get("test") for r in failing}
            return (f"{len(failing)} of {len(self.rows)} gate row(s) failed the build "
                    f"({FAILED_MARK}), in {len(tests)} test(s): {split}{alone}")
        text = (f"{len(self.rows)} gate row(s), none failed the build ({split}){alone}"
                if self.rows
                else "No gate ran to a verdict (every gated test was skipped or deselected)")
        if self.exitstatus:
            text += (f"; but pytest failed outside the gates (exit status {self.exitstatus}): "
                     "see the test report")
        return text

    def build_failed(self) -> bool:
        return bool(self.exitstatus) or any(self.failed_build(r) for r in self.rows)

    # -- terminal -----------------------------------------------------------------------------

    def lines(self) -> Iterator[str]:
        """The terminal table of every gate, the headline, unused cells, the triple counts."""
        if self.rows:
            yield from format_table(*self.table()).splitlines()
            yield self.headline()
        if self.unused:
            yield from self.unused_cell_lines()
        if self.trained or self.cached:
            yield f"triples: {self.trained} trained, {self.cached} from cache" + \
                self._checked_text()
        if self.saved:
            yield f"adaptive seeds: {seed_trainings(self.saved)} saved against fixed MAX"

    def _checked_text(self) -> str:
        """What the cache check did, after the triple counts ("" when it checked nothing)."""
        if not self.checked:
            return ""
        text = f" ({self.checked} of them retrained to check the cache"
        if self.not_reproduced:
            text += (f"; in {self.not_reproduced} cell(s) {NOT_REPRODUCED}, so every seed of "
                     "those cells was retrained")
        return text + ")"

    def looks_line(self) -> str | None:
        """Where the compared cells stopped and what they cost: "Seeds: 3 cell(s) stopped at
        10 seeds, 1 at 40; 70 candidate seed-trainings in all (each seed trains once: the
        cache keeps earlier looks); this run trained 30, 40 from cache." None without rows
        that were compared. Suite rows train nothing of their own and are not counted."""
        stats = [r["stats"] for r in self.rows if isinstance(r.get("stats"), Mapping)
                 and type(r["stats"].get("n")) is int and r["stats"].get("kind") != "ci_width"
                 and not str(r.get("cell", "")).startswith("suite/")]
        if not stats:
            return None
        at: dict[int, int] = {}
        for s in stats:
            at[s["n"]] = at.get(s["n"], 0) + 1
        first, *rest = sorted(at.items())
        stops = ", ".join([f"{first[1]} cell(s) stopped at {first[0]} seeds",
                           *(f"{k} at {n}" for n, k in rest)])
        if self.trained or self.cached:
            # What this run did: a fully cached run trained nothing, and says so first.
            done = (f"this run trained none: all {self.cached} triple(s) read from the cache"
                    if not self.trained else
                    f"this run trained {self.trained} triple(s)"
                    + (f", read {self.cached} from the cache" if self.cached else ""))
            return f"Seeds: {stops}; {done}."
        cost = sum(s.get("trained", s["n"]) or 0 for s in stats)
        return (f"Seeds: {stops}; {seed_trainings(cost)} of the candidate in all (each seed "
                "trains once: the cache keeps earlier looks).")

    def unused_cell_lines(self) -> list[str]:
        files = dict.fromkeys(f for f, _ in self.unused)
        head = (f"graphnetz: {len(self.unused)} baseline cell(s) that no gate of this run used "
                "(a model or task removed from the test?); a refresh keeps them: list and "
                "remove them with `graphnetz prune [--yes]` and commit the diff, or fail on "
                "them with --graphnetz-fail-unused:")
        return [head, *(f"  {f}: {', '.join(c for g, c in self.unused if g == f)}"
                        for f in files)]

    def table(self) -> tuple[list[str], list[list[str]]]:
        """Headers and cells of the full table: the gate table with the test in front, the
        Build column after the verdict, and the Note (a refusal's or an error's reason)."""
        # loaded already: the rows came from it
        from pytest_graphnetz.gates.verdicts.formatting import TABLE_COLUMNS as COLUMNS
        from pytest_graphnetz.gates.verdicts.formatting import TABLE_HEADERS

        at = COLUMNS.index("verdict") + 1
        headers = ["Test", *TABLE_HEADERS]
        headers[at + 1:at + 1] = ["Build"]
        body = []
        for r in self.rows:
            cells = [short_test(str(r.get("test", ""))), *(str(r.get(c, "")) for c in COLUMNS)]
            cells[at + 1:at + 1] = [FAILED_MARK if self.failed_build(r) else "pass"]
            body.append([*cells, str(r.get("note", ""))])
        return [*headers, "Note"], body

    # -- Markdown -----------------------------------------------------------------------------

    def markdown(self, budget: int = MARKDOWN_BUDGET) -> str:
        """The full Markdown summary: headline, the table, each failing test's message; at
        most ``budget`` UTF-8 bytes (a long line or cell is cut, and rows or messages that do
        not fit are counted and pointed to)."""
        parts = ["### graphnetz gates", ""]
        if self.rows:
            headline = markdown_text(self.headline())
            parts += [f"**{headline}**" if self.build_failed() else headline, ""]
            headers, body = self.table()
            lines = markdown_table(headers, [[clip_line(c, 500, WHERE_THE_ROWS_ARE) for c in row]
                                             for row in body]).split("\n")
            # (kept back: the unused cells' list, at most 50,000 bytes, and the closing lines)
            room = budget - 60_000 - sum(len(p.encode()) + 1 for p in parts)
            kept = _fitting([line + "\n" for line in lines], room)
            parts.append("\n".join(lines[:kept]))
            if kept < len(lines):
                parts += ["", f"_… and {len(lines) - kept} more row(s) not shown: "
                              f"{markdown_text(WHERE_THE_ROWS_ARE)}._"]
            room -= sum(len(line.encode()) + 1 for line in lines[:kept])
            failing = self._failing_tests()
            details = ["\n" + "\n".join(self._details(test)) + "\n" for test in failing]
            shown = _fitting(details, room)
            for test in failing[:shown]:
                parts += ["", *self._details(test)]
            if shown < len(failing):
                parts += ["", f"_… and the messages of {len(failing) - shown} more failing "
                              f"test(s) not shown: {markdown_text(WHERE_THE_MESSAGE_IS)}._"]
        else:
            parts.append(f"{markdown_text(self.headline())}.")
        if self.unused:
            head, *rest = self.unused_cell_lines()
            files = [f"- {markdown_text(clip_line(line.strip()))}" for line in rest]
            kept = _fitting([f + "\n" for f in files], 50_000)
            parts += ["", markdown_text(head.removeprefix("graphnetz: ")), "", *files[:kept]]
            if kept < len(files):
                parts.append(f"- _… and {len(files) - kept} more baseline file(s): the JSON "
                             "verdict file lists every cell_")
        looks = self.looks_line()
        if looks:
            parts += ["", markdown_text(looks)]
        if self.trained or self.cached:
            parts += ["", f"Triples: {self.trained} trained, {self.cached} from cache"
                          f"{self._checked_text()}."]
        if self.saved:
            parts += ["", f"Adaptive seeds: {seed_trainings(self.saved)} saved against fixed "
                          "MAX."]
        return "\n".join(parts) + "\n"

    def _failing_tests(self) -> list[str]:
        return list(dict.fromkeys(str(r["test"]) for r in self.rows if self.failed_build(r)))

    def _details(self, test: str, lines: int = 60) -> list[str]:
        """A failing test's message, folded: its summary line names the test."""
        message = "\n".join(clip_line(line, where=WHERE_THE_MESSAGE_IS)
                            for line in clip(self.failures[test], lines).splitlines())
        return [f"<details><summary>{FAILED_MARK} <code>{html_escape(short_test(test))}"
                "</code></summary>", "", code_block(message), "", "</details>"]

    # -- the pull-request comment ---------------------------------------------------------------

    def comment(self, budget: int = COMMENT_BUDGET) -> str:
        """The concise pull-request comment: one headline, then the rows a reviewer must read
        (failing first) in the columns a reviewer needs, IDENTICAL rows and widths within their
        max folded into one count line, and as many failing tests' messages as fit; at most
        ``budget`` characters (anything that does not fit is counted and pointed to: the step
        summary, the artifact)."""
        n = self.counts()
        mark = "✗" if self.build_failed() else "✓"
        parts = [f"### graphnetz gates {mark}", "",
                 f"**{markdown_text(self.headline())}**"]
        looks = self.looks_line()
        if looks:
            parts += ["", markdown_text(looks)]
        where = WHERE_THE_REST_IS if self._failing_tests() else WHERE_THE_TABLE_IS
        widths = sum(self.is_width_within(r) for r in self.rows)
        folded = [f"{n.identical} IDENTICAL row(s) (every paired seed scored exactly the "
                  "baseline's value)" if n.identical else "",
                  f"{widths} width row(s) within their max width" if widths else ""]
        if any(folded):
            parts += ["", f"Not listed: {' and '.join(f for f in folded if f)}."]
        if self.unused:
            head, *files = self.unused_cell_lines()
            parts += ["", markdown_text(head.removeprefix("graphnetz: ")), ""]
            cells = [f"- {markdown_text(clip_line(line.strip(), 500))}" for line in files]
            kept = _fitting([c + "\n" for c in cells], 2_000)
            parts += cells[:kept]
            if kept < len(cells):
                parts.append(f"- _… and {len(cells) - kept} more baseline file(s): "
                             f"{markdown_text(where)}_")
        listed = sorted((r for r in self.rows if not self.is_folded(r)),
                        key=lambda r: not self.failed_build(r))
        closing = f"\n\n<sub>{markdown_text(where[0].upper() + where[1:])}.</sub>"
        text = "\n".join(parts)
        if listed:
            header = "\n\n" + markdown_table(COMMENT_HEADERS, [])
            rows = [markdown_table(COMMENT_HEADERS, [self._comment_cells(r)]).split("\n")[2]
                    for r in listed]
            # Room for the fold line and the closing pointer, whatever is left out.
            room = budget - len(text) - len(header) - len(closing) - 200
            shown = _fitting(["\n" + row for row in rows], room, size=len)
            text += header + "".join("\n" + row for row in rows[:shown])
            if shown < len(rows):
                rest = listed[shown:]
                failing = sum(self.failed_build(r) for r in rest)
                text += (f"\n\n_… and {len(rest)} more row(s) ({failing} failing the build) not "
                         f"shown here: {markdown_text(where)}._")
        for test in self._failing_tests():
            details = "\n\n" + "\n".join(self._details(test, lines=25))
            if len(text) + len(details) + len(closing) > budget:
                break
            text += details
        return text + closing + "\n"

    def _comment_cells(self, row: Mapping[str, Any]) -> list[str]:
        verdict = str(row.get("verdict", ""))
        if self.failed_build(row):
            verdict = f"✗ {verdict}"
        return [short_test(str(row.get("test", ""))), str(row.get("cell", "")),
                str(row.get("delta", "")), verdict, str(row.get("n", "")),
                str(row.get("note", ""))]

    # -- JSON -----------------------------------------------------------------------------------

    def to_json(self) -> dict[str, Any]:
        """The JSON verdict file's content (``docs/verdicts-json.md``)."""
        n = self.counts()
        rows = []
        for r in self.rows:
            task, _, model = str(r.get("cell", "")).partition("/")
            rows.append({
                "test": r.get("test", ""), "cell": r.get("cell", ""),
                "task": task if model else None, "model": model or None,
                "gate": r.get("gate"), "verdict": r.get("verdict", ""),
                "failed": bool(r.get("failed")), "failed_build": self.failed_build(r),
                "kind": self.kind(r), "note": r.get("note", ""),
                "stats": r.get("stats"),
                "display": {c: r.get(c, "") for c in DISPLAY if r.get(c, "") != ""},
            })
        return {"schema": JSON_SCHEMA, "version": JSON_VERSION,
                "exit_status": self.exitstatus, "build_failed": self.build_failed(),
                "headline": self.headline(),
                "counts": {"rows": n.total, "failed": n.failed, "refused": n.refused,
                           "passed": n.passed, "identical": n.identical, "tests": n.tests},
                "rows": rows,
                "unused_cells": [{"baseline": f, "cell": c} for f, c in self.unused],
                "triples": {"trained": self.trained, "cached": self.cached,
                            "saved": self.saved, **({"checked": self.checked,
                                                     "not_reproduced": self.not_reproduced}
                                                    if self.checked else {})}}


def _fitting(pieces: Sequence[str], room: int,
             size: Callable[[str], int] = lambda piece: len(piece.encode())) -> int:
    """How many of ``pieces``, from the first, fit in ``room`` together: UTF-8 bytes, or what
    ``size`` measures."""
    for k, piece in enumerate(pieces):
        room -= size(piece)
        if room < 0:
            return k
    return len(pieces)


def short_test(nodeid: str) -> str:
    """The node id from its file name on: ``tests/models/test_m.py::test_a[x/y]`` →
    ``test_m.py::test_a[x/y]`` (a ``/`` inside the parameters is kept)."""
    path, sep, rest = nodeid.partition("::")
    return path.rsplit("/", 1)[-1] + sep + rest


__all__ = ["COMMENT_BUDGET", "Counts", "FAILED_MARK", "GateSummary", "MARKDOWN_BUDGET",
           "gate_call", "short_test", "verdict_stats"]
