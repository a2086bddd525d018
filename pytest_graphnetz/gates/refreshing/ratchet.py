"""Refreshing a baseline (``--graphnetz-update-baselines``): the ratchet, then the write.

**The ratchet.** A refresh is refused, unless forced (``--graphnetz-force``), when a cell of
the candidate is REGRESSED, or INCONCLUSIVE with a negative mean Δ (+ = better), against

1. the baseline it replaces (on the cells and seeds both have), or
2. the cell's **anchor**: the per-seed values of the cell's first baseline, kept in the file.

The second comparison is what stops drift: refreshes that each lose a little pass against
their predecessor, but their losses add up against the anchor, which an unforced refresh never
moves, until the anchor comparison stops reading NOT WORSE (no better than δ, or no longer
above −margin) and refuses. A forced refresh writes anyway and resets the anchors of the cells
it writes to the candidate's values. **Accepting a cell** (``--graphnetz-accept=TASK/MODEL``,
``BaselineHandle.accept``) is the per-cell way out: the ratchet does not refuse on that cell and
resets its anchor alone; every other cell is judged, and anchored, as before. A cell new to
the file gets its first values as anchor; a file written before anchors existed takes the
values it held before the refresh.

**A suspect gain** (a BETTER the leak guard flags, :mod:`..verdicts.leak`: its test gain is not
matched on validation, or lies far beyond the seeds' spread) is refused too, whatever else
holds, until the cell is accepted: a refresh must not lock a test leak into the baseline.
**Replicates**: a candidate that carries salted reruns
(:class:`~.replicates.ReplicatedReport`) is judged against the replaced
baseline's replicate means, as the gate is, and writes its replicates beside each cell it
writes; a cell refreshed without them loses the old ones.

The comparisons themselves are comparing's (``judge``, given by :mod:`.update`): this module
decides and writes, the gates compare and report. Read, compare and write happen under the
baseline's lock (:func:`~.baselines.baseline_lock`), so two pytest-xdist
workers refreshing one shared baseline each merge into what the other wrote.
"""

from __future__ import annotations

from collections.abc import Callable, Collection, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from pytest_graphnetz.base.text import FIRST_LINE_WIDTH
from pytest_graphnetz.gates.refreshing.baselines import (
    Anchor,
    BaselineError,
    BaselineHandle,
    Cell,
    StoredBaseline,
    baseline_lock,
    read_baseline,
    write_baseline,
)
from pytest_graphnetz.gates.refreshing.replicates import Replicates, replicates_of
from pytest_graphnetz.report import BenchmarkReport
from pytest_graphnetz.stats import Verdict

if TYPE_CHECKING:
    from pytest_graphnetz.gates.verdicts.values import CellVerdict

# Why a refresh's rows are judged alone at α (their Note and message say it).
REFRESH_ALONE = "a baseline refresh (the ratchet judges each refresh alone, not as a look)"

# judge(candidate, reference, source) -> the not-worse verdicts of every candidate cell.
Judge = Callable[[BenchmarkReport, BenchmarkReport, str], "list[CellVerdict]"]

RULE = ("the ratchet refuses a refresh in which a cell is REGRESSED, or INCONCLUSIVE with a "
        "negative mean Δ, against the baseline it replaces or against the cell's anchor (the "
        "per-seed values of its first baseline, kept in the file), so refreshes that each lose "
        "a little cannot add up; and one in which a cell's BETTER is suspect (a test gain the "
        "validation series does not share), so a test leak is not locked in")


def refuses(verdict: CellVerdict) -> bool:
    """Whether the ratchet refuses on ``verdict`` (a gate's not-worse cell verdict)."""
    return verdict.verdict is Verdict.REGRESSED or bool(verdict.suspect) or (
        verdict.verdict is Verdict.INCONCLUSIVE and verdict.comparison.evidence.mean_diff < 0)


@dataclass(frozen=True)
class RefreshOutcome:
    """What a refresh did.

    - ``previous``: verdicts against the baseline it replaces (cells both have);
    - ``anchored``: verdicts against anchors, for cells whose anchor is not simply the baseline
      being replaced (that comparison would be the same one again);
    - ``refused``: the verdicts of both that the ratchet refuses on;
    - ``new_cells``: cells the file did not have; ``replaced``: the report before (None for
      a new file, or an unreadable one replaced by force).
    """

    handle: BaselineHandle
    written: bool
    previous: list[CellVerdict]
    anchored: list[CellVerdict]
    refused: list[CellVerdict]
    new_cells: list[Cell]
    replaced: BenchmarkReport | None

    def refusal(self) -> str:
        """The message of a refused refresh: the rule, each refusing cell's evidence, the fix."""
        cells = ", ".join(dict.fromkeys(f"{v.cell} {v.verdict}" for v in self.refused))
        first = f"refusing to update baseline {self.handle.shown}"
        if len(first) + len(cells) + 2 <= FIRST_LINE_WIDTH:
            first += f": {cells}"
        parts = [f"{first}\n{RULE[:1].upper()}{RULE[1:]}. {len(self.refused)} comparison(s) "
                 "refuse:"]
        for label, verdicts in (("against the baseline it replaces", self.previous),
                                ("against the cell's anchor (its first baseline)", self.anchored)):
            refused = [v for v in verdicts if any(v is r for r in self.refused)]
            if refused:
                parts.append(f"{label}:\n\n" + "\n\n".join(v.message() for v in refused))
        parts.append(self._ways_out())
        return "\n\n".join(parts)

    def _ways_out(self) -> str:
        """What the reviewer can do: accept the named cells, make the INCONCLUSIVE ones
        decidable with more seeds, and (last) force, which resets every written anchor."""
        cells = list(dict.fromkeys(v.cell for v in self.refused))
        suspect = list(dict.fromkeys(v.cell for v in self.refused if v.suspect))
        lost = [c for c in cells if c not in suspect]
        lines = []
        if suspect:
            lines.append(f"{', '.join(suspect)}: the gain is suspect; check for test leakage "
                         "(test labels or nodes in training, a split that changed). If it is "
                         f"genuine, accept it: rerun with {self.handle.accept_command(suspect)}.")
        if lost:
            lines.append(f"If the loss of {', '.join(lost)} is intended, accept it for those "
                         f"cells only: rerun with {self.handle.accept_command(lost)} (or "
                         f"`graphnetz refresh <node id> --accept {lost[0]}`); their anchors are "
                         "reset, every other cell keeps its anchor.")
        needed = [v.comparison.plan.needed for v in self.refused
                  if v.verdict is Verdict.INCONCLUSIVE and v.comparison.plan.needed]
        if needed:
            lines.append(f"If you are not sure it is a loss: about {max(needed)} paired seeds "
                         f"would decide the INCONCLUSIVE cell(s) (rerun with "
                         f"--graphnetz-seeds={max(needed)}; the baseline must hold those seeds "
                         "too, so refresh it from the baseline's code first).")
        lines.append(f"Last resort: {self.handle.force_command()} writes every cell and resets "
                     "the anchors of all the cells it writes, which is what the ratchet "
                     "protects.")
        return "\n".join(lines)


def refresh(handle: BaselineHandle, candidate: BenchmarkReport, judge: Judge) -> RefreshOutcome:
    """Write ``candidate`` into ``handle``'s baseline, cell by cell, unless the ratchet refuses.

    An unreadable baseline, a pairing that cannot be made (GateRefusal) or a candidate that
    cannot be merged into the file's seed grid raise, unless ``handle.force``: then the file
    is replaced by the candidate alone.
    """
    with baseline_lock(handle.path, root=handle.root):
        stored = _read(handle)
        previous: list[CellVerdict] = []
        anchored: list[CellVerdict] = []
        if stored is not None:
            try:
                previous = _against_previous(candidate, stored, judge, handle.shown)
                anchored = _against_anchors(candidate, stored, judge,
                                            f"the anchors in {handle.shown}")
            except ValueError:  # a GateRefusal: data/split, metric or seeds do not pair
                if not handle.force:
                    raise
        refused = [v for v in (*previous, *anchored)
                   if refuses(v) and not handle.accepts(v.task, v.model)]
        old_cells = set() if stored is None else set(_cells(stored.report))
        new_cells = [c for c in _cells(candidate) if c not in old_cells]
        outcome = RefreshOutcome(handle, False, previous, anchored, refused, new_cells,
                                 None if stored is None else stored.report)
        if refused and not handle.force:
            return outcome
        report, anchors = _merge(stored, candidate, handle)
        write_baseline(handle.path, report, anchors, root=handle.root,
                       replicates=_replicates(stored, candidate),
                       written=_written(stored, candidate, handle, previous, anchored),
                       schedule=handle.schedule)
        return RefreshOutcome(handle, True, previous, anchored, refused, new_cells,
                              outcome.replaced)


def _read(handle: BaselineHandle) -> StoredBaseline | None:
    if not handle.exists():
        return None   # nothing to compare with (a directory in the way fails at the write)
    try:
        return handle.read()
    except BaselineError:
        if not handle.force:
            raise
        return None


def _replicates(stored: StoredBaseline | None,
                candidate: BenchmarkReport) -> dict[Cell, Replicates]:
    """The replicates the written file keeps: the candidate's for the cells it writes (none:
    a cell refreshed without replicates drops the old), the file's for the others (each kept
    only while it holds the written report's seeds)."""
    kept = {} if stored is None else dict(stored.replicates)
    new = replicates_of(candidate)
    for cell in _cells(candidate):
        kept.pop(cell, None)
        if cell in new:
            kept[cell] = new[cell]
    return kept


def _written(stored: StoredBaseline | None, candidate: BenchmarkReport, handle: BaselineHandle,
             previous: Sequence[CellVerdict], anchored: Sequence[CellVerdict]
             ) -> dict[Cell, dict[str, object]]:
    """Per cell, the refresh its values were written under, as the file's ``refresh`` keeps it:
    ``verdict`` against the baseline it replaced (``NEW`` for a cell the file lacked, ``FORCED``
    when no pairing was made), ``anchor_verdict`` against the cell's anchor when it was judged,
    ``accepted`` when ``--graphnetz-accept`` named it (its anchor reset), ``forced`` under
    ``--graphnetz-force``. A cell whose values did not change (IDENTICAL) keeps its record, so
    an unchanged model's lines do not change; cells the refresh did not write keep theirs."""
    kept = {} if stored is None else {c: dict(r) for c, r in stored.written.items()}
    old_cells = set() if stored is None else set(_cells(stored.report))
    against = {(v.task, v.model): v.verdict.value for v in previous}
    to_anchor = {(v.task, v.model): v.verdict.value for v in anchored}
    for cell in _cells(candidate):
        verdict = against.get(cell, "NEW" if cell not in old_cells else "FORCED")
        if verdict == "IDENTICAL" and cell in kept and not handle.accepts(*cell):
            continue
        record: dict[str, object] = {"verdict": verdict}
        if cell in to_anchor:
            record["anchor_verdict"] = to_anchor[cell]
        if handle.accepts(*cell):
            record["accepted"] = True
        if handle.force:
            record["forced"] = True
        kept[cell] = record
    return kept


def _cells(report: BenchmarkReport) -> list[Cell]:
    return [(t, m) for t in report.tasks for m in report.models]


def _against_previous(candidate: BenchmarkReport, stored: StoredBaseline, judge: Judge,
                      source: str) -> list[CellVerdict]:
    old, _ = stored.paired_with(candidate)   # a cell's replicate means, as the gate pairs
    tasks = [t for t in candidate.tasks if t in old.tasks]
    models = [m for m in candidate.models if m in old.models]
    if not (tasks and models):
        return []
    return judge(candidate.subset(tasks=tasks, models=models),
                 old.subset(tasks=tasks, models=models), source)


def _against_anchors(candidate: BenchmarkReport, stored: StoredBaseline, judge: Judge,
                     source: str) -> list[CellVerdict]:
    """The candidate against the anchors that differ from the replaced baseline: one call per
    anchor seed set that forms a task × model grid (Holm across its cells, as in a gate),
    else one call per cell."""
    cells = [c for c in _cells(candidate)
             if c in stored.anchors and not stored.anchors[c].same_as(stored.report, *c)]
    groups: dict[tuple[int, ...], list[Cell]] = {}
    for cell in cells:
        groups.setdefault(stored.anchors[cell].seeds, []).append(cell)
    verdicts = []
    for group in groups.values():
        tasks, models = _grid(group)
        calls = [group] if len(group) == len(tasks) * len(models) else [[c] for c in group]
        for part in calls:
            part_tasks, part_models = _grid(part)
            verdicts += judge(candidate.subset(tasks=part_tasks, models=part_models),
                              stored.anchor_report(part), source)
    return verdicts


def _grid(cells: Sequence[Cell]) -> tuple[list[str], list[str]]:
    """The tasks and the models of ``cells``, in first-seen order."""
    return (list(dict.fromkeys(t for t, _ in cells)),
            list(dict.fromkeys(m for _, m in cells)))


def _merge(stored: StoredBaseline | None, candidate: BenchmarkReport,
           handle: BaselineHandle) -> tuple[BenchmarkReport, dict[Cell, Anchor]]:
    """The file's next content: ``candidate`` merged into ``stored``, and every cell's anchor."""
    if stored is not None:
        try:
            report = BenchmarkReport.merge(stored.report, candidate)
        except ValueError as exc:
            if not handle.force:
                old = stored.report
                raise BaselineError(
                    f"cannot merge the candidate into {handle.shown}: {exc}. The candidate ran "
                    f"seeds {list(candidate.seeds)}, the baseline has {list(old.seeds)}; rerun "
                    "with the baseline's seeds (--graphnetz-seeds), or replace the whole file "
                    f"with {handle.force_command()}"
                ) from None
            stored = None
    if stored is None:
        return candidate, {c: Anchor.of(candidate, *c) for c in _cells(candidate)}
    anchors = dict(stored.anchors)
    for cell in _cells(candidate):
        if handle.force or handle.accepts(*cell):
            anchors[cell] = Anchor.of(candidate, *cell)
        elif cell not in anchors:
            # A cell new to the file starts at its own values; a cell of a file written before
            # anchors existed starts at the values that file held.
            source = stored.report if cell in set(_cells(stored.report)) else candidate
            anchors[cell] = Anchor.of(source, *cell)
    for cell in _cells(report):
        anchors.setdefault(cell, Anchor.of(report, *cell))  # untouched cells of an old file
    return report, anchors


def prune_unused(baseline_dir: Path, *, used: set[str], users: Sequence[tuple[str, str, str]],
                 delete: bool, why_kept: str = "",
                 seen_modules: Collection[str] | None = None,
                 show: Callable[[Path], str] = str) -> list[str]:
    """After a refresh session: the baselines under ``baseline_dir`` that no test used,
    deleted when ``delete`` (a full run that passed), else listed; the summary's lines.

    ``used``: the files handed to tests; ``users``: (nodeid, module stem, default name) of every
    collected test that asks for a baseline, selected or not: its default file is never unused.
    ``seen_modules``: the stems of the test modules this run collected and did not skip (None:
    all); even a full run deletes only in their directories, since the baselines of a module it
    did not see (run from a subdirectory, ``--ignore``, a module-level skip) are not known to
    be unused: those are listed as kept. A partial run only looks in the module directories of
    the tests it collected. ``show``: how a path is printed (relative to the rootdir, say).
    """
    from pytest_graphnetz.gates.refreshing.baselines import default_path, find_baselines

    known = {default_path(baseline_dir, stem, name).resolve() for _, stem, name in users}
    used_paths = {Path(p).resolve() for p in used}
    scope = {p.parent for p in known | used_paths}
    unused = [p for p in find_baselines(baseline_dir)
              if p.resolve() not in known | used_paths
              and (delete or p.resolve().parent in scope)]
    if not unused:
        return []
    if delete:
        lines = []
        seen = None if seen_modules is None else {
            default_path(baseline_dir, stem, "_").parent.name for stem in seen_modules}
        unseen = [p for p in unused if seen is not None and p.parent.name not in seen]
        gone = [p for p in unused if p not in unseen]
        for p in gone:
            p.unlink(missing_ok=True)
        if gone:
            lines += [f"graphnetz: deleted {len(gone)} baseline(s) that no test used (a full "
                      "refresh; a renamed test's old file is one; git restores them if needed):",
                      *(f"  {show(p)}" for p in gone)]
        if unseen:
            lines += [f"graphnetz: {len(unseen)} baseline(s) of test modules this run did not "
                      "collect, or skipped, kept (their tests were not seen; a refresh that "
                      "collects the module deletes them if no test uses them, or delete them "
                      "by hand if the module is gone):", *(f"  {show(p)}" for p in unseen)]
        return lines
    head = (f"graphnetz: {len(unused)} baseline(s) that no test of this run used (a "
            f"renamed test's old file, say); not deleted, the run was partial ({why_kept}); "
            "a full `pytest --graphnetz-update-baselines` deletes them:")
    return [head, *(f"  {show(p)}" for p in unused)]


def drop_cells(path: Path, cells: Collection[Cell], *, write: bool,
               root: Path | None = None) -> tuple[list[Cell], list[Cell]]:
    """Remove ``cells`` of the baseline at ``path`` (``graphnetz prune``): ``(dropped, kept)``.

    A baseline is a task × model grid, so a cell goes only with its whole model (every task of
    it among ``cells``) or its whole task (every model); the rest of ``cells`` is kept and
    listed, and so is every cell of a file that would be left empty (delete the file, or the
    test, instead). Every other cell keeps its values, anchor, replicates and refresh record,
    and the file its schedule.
    ``write=False``: what a removal would do, nothing written."""
    with baseline_lock(path, root=root):
        stored = read_baseline(path, root=root)
        report, unused = stored.report, set(cells)
        models = [m for m in report.models if not all((t, m) in unused for t in report.tasks)]
        tasks = [t for t in report.tasks if not all((t, m) in unused for m in report.models)]
        if not models or not tasks:
            return [], sorted(unused)
        dropped = [c for c in _cells(report) if c[0] not in tasks or c[1] not in models]
        kept = sorted(unused - set(dropped))
        if write and dropped:
            rest = set(_cells(report)) - set(dropped)
            write_baseline(path, report.subset(tasks=tasks, models=models),
                           {c: a for c, a in stored.anchors.items() if c in rest}, root=root,
                           replicates={c: r for c, r in stored.replicates.items() if c in rest},
                           written={c: r for c, r in stored.written.items() if c in rest},
                           schedule=stored.schedule)
        return dropped, kept


__all__ = ["REFRESH_ALONE", "RULE", "RefreshOutcome", "drop_cells", "prune_unused", "refresh",
           "refuses"]

