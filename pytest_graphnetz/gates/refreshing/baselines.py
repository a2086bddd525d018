"""The baseline store: committed files that the gates compare a candidate against.

A baseline file, by default ``baselines/<test module>/<test name>.json``, is a report in its
values-only form (:meth:`~pytest_graphnetz.report.BenchmarkReport.to_values_dict`): per
(model, task) cell the per-seed values under each epoch rule, by name, mean and interval, n, the
model's repr and parameter count, per-seed fingerprints, and the cell's **anchor** (the
per-seed values of the cell's first baseline, which the ratchet in :mod:`.ratchet` also
compares a refresh with). Per-epoch histories stay in the triple cache and in saved reports.
Keys are sorted and every per-seed vector is one line inside its model's block, so a refresh
of one model changes only that model's lines and two branches that refresh different models
of one test merge in git without a conflict.

Files written before this format (full reports with histories, schema
``pytest-graphnetz/report``) still load; their cells have no anchor until the next refresh,
which takes the old values as the anchor.

Reading never guesses: a missing file, a malformed one and one from a newer schema each raise
their own error, and none of them is ever overwritten unless the caller forces it. Malformed
includes what a merge can leave valid JSON: a name given twice (json would read the last copy),
a cell whose values and anchor come from two refreshes; and a path that holds something other
than a regular file (a FIFO, a device, a dangling link) is malformed, never missing.
:class:`BaselineError` and :class:`BaselineMissingError` are defined beside the gates' other
refusals (:mod:`pytest_graphnetz.gates.verdicts.values`: comparing raises them too, and never
imports this store) and exported here with the store's own errors.
"""

from __future__ import annotations

import errno
import hashlib
import os
import re
import tempfile
from collections.abc import Iterator, Mapping
from contextlib import ExitStack, contextmanager
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from pytest_graphnetz.gates.refreshing.replicates import Replicates, paired_report
from pytest_graphnetz.gates.verdicts.values import BaselineError, BaselineMissingError
from pytest_graphnetz.report import BenchmarkReport
from pytest_graphnetz.report.codec import DuplicateNameError, dumps, read_json, values_to_json
from pytest_graphnetz.report.files import (
    file_lock,
    ignored_temp_dir,
    remove_stale_temp_dirs,
    remove_stale_temp_files,
    write_text_atomic,
)
from pytest_graphnetz.report.schema import (
    SCHEMA,
    VALUES_SCHEMA,
    VALUES_SCHEMA_VERSION,
    ReportFormatError,
    ReportSchemaError,
)
from pytest_graphnetz.report.session_files import shown
from pytest_graphnetz.report.values_form import rule_values, rule_values_from_json
from pytest_graphnetz.stats.boundaries import LookSchedule

# Characters that are not portable in file names (Windows forbids these; "/" would nest), and
# "%" itself: each is written as %XX (its UTF-8 bytes), so distinct names stay distinct files.
_UNSAFE = re.compile(r'[%\\/:*?"<>|\s\x00-\x1f\x7f]')
Cell = tuple[str, str]  # (task, model)


class BaselineFormatError(BaselineError, ValueError):
    """A baseline file that is not a readable report (bad JSON, missing keys, wrong shapes)."""


class BaselineSchemaError(BaselineFormatError):
    """A baseline written by a newer pytest-graphnetz (a newer report schema version)."""


# Most file systems allow 255 bytes per name; the temp file of an atomic write, a report dir's
# labels (".10-seeds") and ".json" add to the stem, so a longer stem is shortened (see below).
MAX_STEM_BYTES = 150
# A baseline write's temp file goes in a directory of its own beside the baseline (same file
# system, so the rename stays atomic), named TEMP_DIR + a random tail and holding a .gitignore
# that ignores everything: a write killed before its rename (kill -9, a power cut) leaves a
# complete copy that `git add -A` must not commit. The write removes its directory when it ends,
# and the next write in that folder sweeps what a killed one left, so only baselines stay.
TEMP_DIR = ".graphnetz-tmp"


def file_name(name: str) -> str:
    """``name`` as a portable file-name stem; injective (``a/b`` → ``a%2Fb``, ``a b`` →
    ``a%20b``, ``%`` → ``%25``), so two test ids never share a file."""
    return _UNSAFE.sub(lambda m: "".join(f"%{b:02X}" for b in m.group().encode()), name)


def default_path(baseline_dir: str | Path, module: str, name: str) -> Path:
    """``<baseline_dir>/<module>/<name>.json``, unportable characters escaped
    (:func:`file_name`) and stems longer than :data:`MAX_STEM_BYTES` shortened
    (:func:`short_stem`)."""
    return Path(baseline_dir) / short_stem(file_name(module)) / \
        f"{short_stem(file_name(name))}.json"


def short_stem(stem: str) -> str:
    """``stem`` when it fits :data:`MAX_STEM_BYTES` (UTF-8), else its head and ``~`` and 16 hex
    digits of its sha256: a 260-character parametrized id gets a file name the file system
    accepts, and two long ids that share their head still get different files."""
    raw = stem.encode()
    if len(raw) <= MAX_STEM_BYTES:
        return stem
    digest = hashlib.sha256(raw).hexdigest()[:16]
    head = raw[:MAX_STEM_BYTES - len(digest) - 1].decode("utf-8", "ignore")
    return f"{re.sub(r'%[0-9A-F]?$', '', head)}~{digest}"  # never half a %XX escape


# -- what a file holds ------------------------------------------------------------------------


@dataclass(frozen=True)
class Anchor:
    """The per-seed values of a cell's first baseline (``seeds`` order), by epoch rule name."""

    seeds: tuple[int, ...]
    values: Mapping[str, np.ndarray]

    @property
    def final(self) -> np.ndarray:
        return self.values["final"]

    @property
    def best_val(self) -> np.ndarray | None:
        return self.values.get("best_val")

    @classmethod
    def of(cls, report: BenchmarkReport, task: str, model: str) -> Anchor:
        """The cell's current values in ``report`` as an anchor."""
        return cls(report.seeds, rule_values(report, task, model))

    def to_json(self) -> dict:
        return {"seeds": list(self.seeds), "values": values_to_json(self.values)}

    @classmethod
    def from_json(cls, d: Mapping, version: int = VALUES_SCHEMA_VERSION) -> Anchor:
        """An anchor from :meth:`to_json` (``version``: the file's schema version)."""
        seeds = d["seeds"]
        if not isinstance(seeds, list) or any(type(s) is not int for s in seeds):
            raise ValueError(f"anchor `seeds` must be a list of integers, got {seeds!r}")
        if len(set(seeds)) != len(seeds):
            raise ValueError(f"anchor `seeds` names a seed twice: {seeds!r}")
        values = rule_values_from_json(d, version, "anchor")
        for rule, vec in values.items():
            if len(vec) != len(seeds):
                raise ValueError(f"anchor `{rule}` must hold one value per anchor seed")
        return cls(tuple(seeds), values)

    def same_as(self, report: BenchmarkReport, task: str, model: str) -> bool:
        """Whether ``report``'s cell holds exactly these seeds and values (a redundant check)."""
        other = Anchor.of(report, task, model)
        return self.seeds == other.seeds and self.values.keys() == other.values.keys() and all(
            np.array_equal(vec, other.values[rule], equal_nan=True)
            for rule, vec in self.values.items())


@dataclass(frozen=True)
class StoredBaseline:
    """A baseline file's content: the report (values only), each cell's anchor and, for a
    baseline refreshed with replicates, each cell's :class:`Replicates`; ``written``: per cell
    the refresh its values were written under (``refresh`` in the file, see
    :func:`pytest_graphnetz.gates.refreshing.ratchet.refresh`).

    ``anchors`` lacks the cells of a file written before anchors existed (``legacy``).
    """

    report: BenchmarkReport
    anchors: Mapping[Cell, Anchor] = field(default_factory=dict)
    legacy: bool = False
    replicates: Mapping[Cell, Replicates] = field(default_factory=dict)
    written: Mapping[Cell, Mapping[str, object]] = field(default_factory=dict)
    # the schedule the baseline was refreshed under (the default where the file has none)
    schedule: LookSchedule = field(default_factory=LookSchedule)

    def paired_with(self, candidate: BenchmarkReport) -> tuple[BenchmarkReport, str]:
        """The report a gate pairs ``candidate`` with, and what the gate's header says of it
        (:func:`~.replicates.paired_report`: per cell the mean of its replicates)."""
        return paired_report(self.report, self.replicates, candidate)

    def anchor_report(self, cells: list[Cell]) -> BenchmarkReport:
        """The anchors of ``cells`` (one anchor seed set, a full task × model grid) as a report.

        Metric and data fingerprints come from the file (an anchor survives only refreshes
        whose data matched it; a forced one resets it); no environment, so no notes.
        """
        tasks = list(dict.fromkeys(t for t, _ in cells))
        models = list(dict.fromkeys(m for _, m in cells))
        seeds = self.anchors[cells[0]].seeds
        base = self.report
        data = {
            "schema": VALUES_SCHEMA, "schema_version": VALUES_SCHEMA_VERSION,
            "seeds": list(seeds), "settings": base.settings(), "environment": {},
            "tasks": {t: {"metric": {"name": base.metric(t).name,
                                     "higher_is_better": base.metric(t).higher_is_better},
                          "data_fingerprints": [base.data_fingerprint(t, s) for s in seeds]}
                      for t in tasks},
            "models": {m: {"tasks": {t: self.anchors[(t, m)].to_json() for t in tasks}}
                       for m in models},
        }
        return BenchmarkReport.from_dict(data, source="the anchors")


def to_text(report: BenchmarkReport, anchors: Mapping[Cell, Anchor],
            replicates: Mapping[Cell, Replicates] | None = None,
            written: Mapping[Cell, Mapping[str, object]] | None = None,
            schedule: LookSchedule | None = None) -> str:
    """The file text of a baseline: ``report``'s values-only form with each cell's anchor,
    replicates (those that hold ``report``'s seeds) and the refresh it was written under, and
    the ``schedule`` the gates against it walk (None: not stored, read as the default)."""
    data = report.to_values_dict()
    if schedule is not None:
        data["schedule"] = schedule.to_json()
    for (task, model), anchor in anchors.items():
        data["models"][model]["tasks"][task]["anchor"] = anchor.to_json()
    for (task, model), record in (written or {}).items():
        if task in report.tasks and model in report.models:
            data["models"][model]["tasks"][task]["refresh"] = dict(record)
    for (task, model), rep in (replicates or {}).items():
        if rep.seeds == report.seeds and task in report.tasks and model in report.models:
            data["models"][model]["tasks"][task]["replicates"] = rep.to_json(
                rule_values(report, task, model))
    return dumps(data)


def write_baseline(path: str | Path, report: BenchmarkReport,
                   anchors: Mapping[Cell, Anchor], *, root: Path | None = None,
                   replicates: Mapping[Cell, Replicates] | None = None,
                   written: Mapping[Cell, Mapping[str, object]] | None = None,
                   schedule: LookSchedule | None = None) -> Path:
    """Write ``report`` with ``anchors`` (and ``replicates``, and the ``schedule`` it binds) to
    ``path`` atomically (a reader never sees half); messages print ``path`` relative to
    ``root`` (the rootdir) when it lies inside."""
    path = Path(path)
    text = to_text(report, anchors, replicates, written, schedule)
    # Older versions wrote temp files beside the baseline, where a killed write's could get
    # committed; sweep those and the temp directories killed writes left, then write through
    # an ignored temp directory of this write's own.
    remove_stale_temp_files(path.parent)
    remove_stale_temp_dirs(path.parent, prefix=TEMP_DIR)
    try:
        with ignored_temp_dir(path.parent, prefix=TEMP_DIR) as temp:
            write_text_atomic(path, text, temp_dir=temp)
    except OSError as exc:
        raise BaselineError(_unwritable(path, exc, shown(path, root))) from None
    return path


def read_baseline(path: str | Path, *, update_command: str | None = None,
                  root: Path | None = None) -> StoredBaseline:
    """Read a baseline file (either format); messages print ``path`` relative to ``root``.

    Raises :class:`BaselineMissingError` (with the command that creates it),
    :class:`BaselineSchemaError` (newer schema: upgrade) or :class:`BaselineFormatError`.
    """
    path = Path(path)
    name = shown(path, root)
    if path.is_dir():
        raise BaselineFormatError(
            f"baseline {name} is a directory, not a report file; move it away or delete it, "
            f"then {_how_to_create(name, update_command)}"
        )
    if not os.path.lexists(path):
        raise BaselineMissingError(f"no baseline at {name}: {_how_to_create(name, update_command)}")
    try:
        data = read_json(path, what="baseline")
        report = BenchmarkReport.from_dict(data, source=name)
        schedule = LookSchedule.from_json(data.get("schedule"))
        if data["schema"] == SCHEMA:
            return StoredBaseline(report, legacy=True, schedule=schedule)
        anchors, replicates, written = {}, {}, {}
        for model, block in data["models"].items():
            for task, cell in block["tasks"].items():
                if isinstance(cell.get("refresh"), Mapping):
                    written[(task, model)] = dict(cell["refresh"])
                if cell.get("anchor") is not None:
                    anchors[(task, model)] = Anchor.from_json(cell["anchor"],
                                                              data["schema_version"])
                if cell.get("replicates") is not None:
                    replicates[(task, model)] = Replicates.from_json(
                        cell["replicates"], f"cell {task}/{model}")
        for cell_key, anchor in anchors.items():
            _check_anchor(report, cell_key, anchor, written.get(cell_key, {}))
        return StoredBaseline(report, anchors, replicates=replicates, written=written,
                              schedule=schedule)
    except ReportSchemaError as exc:
        raise BaselineSchemaError(
            f"baseline {name} was written by a newer pytest-graphnetz (schema version "
            f"{exc.version}; this one reads up to {VALUES_SCHEMA_VERSION}). Upgrade "
            "pytest-graphnetz (`pip install -U pytest-graphnetz`); the file was left as it is."
        ) from None
    except FileNotFoundError:   # a link to nothing: a file is meant to be here
        raise BaselineFormatError(
            f"baseline {name} is a symbolic link to {os.readlink(path)!r}, which does not "
            f"exist: not a regular file, so not read. Fix it from version control (`git "
            f"checkout -- {name}`), or remove it, then {_how_to_create(name, update_command)}"
        ) from None
    except DuplicateNameError as exc:
        raise BaselineFormatError(
            f"baseline {name} cannot be read: {exc}. A merge that kept both sides of a "
            "conflict leaves this: resolve the merge by keeping one copy (or one side whole, "
            f"`git checkout --ours -- {name}` or `--theirs`), or replace the file with "
            f"{_force_hint(update_command)}; the file was left as it is"
        ) from None
    except (ReportFormatError, KeyError, TypeError, ValueError, AttributeError) as exc:
        detail = f"missing key {exc}" if isinstance(exc, KeyError) else str(exc)
        raise BaselineFormatError(
            f"baseline {name} cannot be read: {detail}. The file was left as it is: fix it from "
            f"version control (`git checkout -- {name}`), or replace it with "
            f"{_force_hint(update_command)}"
        ) from None


def _check_anchor(report: BenchmarkReport, cell: Cell, anchor: Anchor,
                  record: Mapping[str, object]) -> None:
    """Refuse a cell whose anchor cannot be the one its refresh wrote: a refresh that reset the
    anchor (a ``NEW`` cell, an accepted loss, a forced refresh) set it to the values it wrote,
    and a later refresh keeps that record only when it changed no value. So such a cell
    whose values differ from its anchor on the anchor's seeds holds lines of two refreshes (a
    merge or a rebase that took one side's values and the other's anchor or record)."""
    if record.get("verdict") != "NEW" and not record.get("accepted") and not record.get("forced"):
        return
    task, model = cell
    at = {s: i for i, s in enumerate(report.seeds)}
    values = rule_values(report, task, model)
    differ = [s for k, s in enumerate(anchor.seeds) if s not in at or any(
        not np.array_equal(vec[k], values[rule][at[s]], equal_nan=True)
        for rule, vec in anchor.values.items() if rule in values)]
    if differ:
        raise ValueError(
            f"cell {task}/{model}: its `refresh` record ({dict(record)}) says its anchor was "
            f"reset to the values written then, but the anchor differs from `values` at seed(s) "
            f"{differ[:10]}: the cell holds lines of two refreshes (a merge or a rebase that "
            "mixed them). Take one side's cell whole")


def load_baseline(path: str | Path, *, update_command: str | None = None) -> BenchmarkReport:
    """The report of a baseline file (see :func:`read_baseline` for the errors)."""
    return read_baseline(path, update_command=update_command).report


def is_baseline_file(path: Path) -> bool:
    """Whether ``path`` is a JSON file that pytest-graphnetz wrote (either schema)."""
    try:
        data = read_json(path)
    except (OSError, ValueError):
        return False
    return isinstance(data, dict) and data.get("schema") in (SCHEMA, VALUES_SCHEMA)


def find_baselines(directory: Path) -> list[Path]:
    """The baseline files under ``directory``: ``<directory>/<module>/<name>.json`` files that
    pytest-graphnetz wrote (either schema); nothing else there is ever touched."""
    return sorted(p for p in Path(directory).glob("*/*.json") if p.is_file()
                  and is_baseline_file(p))


@contextmanager
def baseline_lock(path: Path, *, root: Path | None = None) -> Iterator[None]:
    """Hold the inter-process lock of baseline ``path`` (pytest-xdist workers refreshing one
    shared baseline take turns at its read-merge-write).

    The lock file follows the package's one convention (:func:`~.report.files.file_lock`) in
    the system's temp directory, named by the baseline's absolute path, so nothing but
    baselines is ever left beside them (a read-only baseline folder is refused by the write,
    naming it); it is removed on release. A lock that cannot be taken raises
    :class:`BaselineError` (``path`` shown relative to ``root``).
    """
    path = Path(path)
    locks = Path(tempfile.gettempdir()) / f"pytest-graphnetz-locks-{getattr(os, 'getuid', str)()}"
    key = locks / hashlib.sha256(str(path.resolve()).encode()).hexdigest()[:32]
    with ExitStack() as held:
        try:
            held.enter_context(file_lock(key, remove=True))
        except OSError as exc:
            raise BaselineError(
                f"cannot take the lock of baseline {shown(path, root)} in {locks} "
                f"({exc.strerror or exc}); make that directory writable, or point TMPDIR at "
                "one that is. The baseline is unchanged") from None
        yield


# -- the handle a test gets -----------------------------------------------------------------------


@dataclass(frozen=True)
class BaselineHandle:
    """Where one gate's baseline lives and how the session treats it.

    - ``update``: a gate given this handle refreshes the baseline with the candidate (through
      the ratchet, :func:`.ratchet.refresh`) instead of comparing against it.
    - ``force``: with ``update``, replace even a baseline the ratchet refuses, or one that
      cannot be read; the cells written get new anchors.
    - ``update_command``: the shell command that (re)creates this baseline, quoted in errors.
    - ``accept``: with ``update``, the cells (``"task/model"``) whose loss the refresh accepts:
      the ratchet does not refuse on them and their anchors are reset to the candidate's
      values; every other cell keeps its anchor (``--graphnetz-accept``).
    - ``add_missing``: a gate given this handle writes the cells the baseline lacks (a new
      model or task; the whole file when there is none) and compares the others as usual
      (``--graphnetz-add-missing``).
    - ``schedule``: with ``update``, the schedule the refresh writes into the file (the
      refreshing gate's; None: none written, read as the default).
    """

    path: Path
    update: bool = False
    force: bool = False
    update_command: str | None = None
    accept: frozenset[str] = frozenset()
    add_missing: bool = False
    root: Path | None = None  # messages print ``path`` relative to it (the rootdir)
    schedule: LookSchedule | None = None   # what a refresh writes: the refreshing gate's

    @property
    def shown(self) -> str:
        """``path`` as messages print it."""
        return shown(self.path, self.root)

    def exists(self) -> bool:
        """Whether anything is at ``path``: a FIFO, a device or a dangling link there is a
        baseline that cannot be read (refused by :meth:`read`), never a missing one that a
        refresh would create past the ratchet."""
        return os.path.lexists(self.path)

    def read(self) -> StoredBaseline:
        """The file's content; each kind of problem raises its own :class:`BaselineError`."""
        return read_baseline(self.path, update_command=self.update_command, root=self.root)

    def load(self) -> BenchmarkReport:
        """The baseline report; each kind of problem raises its own :class:`BaselineError`."""
        return self.read().report

    @property
    def add_command(self) -> str | None:
        """The command that writes only the cells this baseline lacks, if known."""
        if not self.update_command:
            return None
        return self.update_command.replace("--graphnetz-update-baselines",
                                           "--graphnetz-add-missing")

    def force_command(self) -> str:
        return _force_hint(self.update_command)

    def accepts(self, task: str, model: str) -> bool:
        return f"{task}/{model}" in self.accept

    def accept_command(self, cells: list[str]) -> str:
        """The command that refreshes this baseline accepting ``cells``' losses."""
        accept = f"--graphnetz-accept={','.join(cells)}"
        if self.update_command:
            return f"`{self.update_command} {accept}`"
        return f"`pytest --graphnetz-update-baselines {accept}`"


def _unwritable(path: Path, exc: OSError, name: str) -> str:
    if getattr(exc, "errno", None) == errno.ENAMETOOLONG:
        return (f"cannot write baseline {name}: the path is too long for this file system "
                f"({exc.strerror}); give the baseline a shorter name, "
                "graphnetz_baseline(\"<short name>\"), or use a shorter --graphnetz-baseline-dir")
    if path.is_dir():
        why = "it is a directory, not a report file; move it away or delete it"
    elif isinstance(exc, PermissionError):
        why = (f"no permission to write in {Path(name).parent} ({exc.strerror}); make the "
               "directory writable, or choose another with --graphnetz-baseline-dir")
    else:
        why = f"{type(exc).__name__}: {exc.strerror or exc}"
    return f"cannot write baseline {name}: {why}. The old file, if any, is unchanged"


def _how_to_create(path: str, update_command: str | None) -> str:
    if update_command:
        return f"create it with `{update_command}`"
    return (f"create it with `report.to_json({str(path)!r})` or by running the gate's test "
            "with `pytest --graphnetz-update-baselines`")


def _force_hint(update_command: str | None) -> str:
    if update_command:
        return f"`{update_command} --graphnetz-force`"
    return "`pytest --graphnetz-update-baselines --graphnetz-force`"


__all__ = ["Anchor", "BaselineError", "BaselineFormatError", "BaselineHandle",
           "BaselineMissingError", "BaselineSchemaError", "StoredBaseline", "baseline_lock",
           "default_path", "file_name", "load_baseline", "read_baseline", "short_stem",
           "write_baseline"]
