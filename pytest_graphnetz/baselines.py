"""The baseline store: committed JSON reports that the gates compare a candidate against.

A baseline is an ordinary :class:`~pytest_graphnetz.report.BenchmarkReport` file (stable,
diffable JSON: sorted keys, shortest round-trip floats), by default at
``baselines/<test module>/<test name>.json``. A :class:`BaselineHandle` names the file and
carries what a gate needs to refresh it (``--graphnetz-update-baselines``, ``--graphnetz-force``)
and the exact command that creates it. Reading never guesses: a missing file, a malformed one
and one from a newer schema each raise their own error, and none of them is ever overwritten
unless the caller forces it.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

from .report import SCHEMA_VERSION, BenchmarkReport, ReportFormatError, ReportSchemaError

# Characters that are not portable in file names (Windows forbids these; "/" would nest).
_UNSAFE = re.compile(r'[\\/:*?"<>|\s]+')


class BaselineError(Exception):
    """A baseline that cannot be used as it is."""


class BaselineMissingError(BaselineError, FileNotFoundError):
    """No baseline file, or no cell for part of the candidate in it."""


class BaselineFormatError(BaselineError, ValueError):
    """A baseline file that is not a readable report (bad JSON, missing keys, wrong shapes)."""


class BaselineSchemaError(BaselineFormatError):
    """A baseline written by a newer pytest-graphnetz (a newer report schema version)."""


def default_path(baseline_dir: str | Path, module: str, name: str) -> Path:
    """``<baseline_dir>/<module>/<name>.json``, with unportable characters replaced by ``_``."""
    return Path(baseline_dir) / _UNSAFE.sub("_", module) / f"{_UNSAFE.sub('_', name)}.json"


@dataclass(frozen=True)
class BaselineHandle:
    """Where one gate's baseline lives and how the session treats it.

    - ``update``: a gate given this handle writes the candidate here (after the ratchet check)
      instead of comparing against it.
    - ``force``: with ``update``, replace even a baseline the candidate regressed against, or
      one that cannot be read.
    - ``update_command``: the shell command that (re)creates this baseline, quoted in errors.
    """

    path: Path
    update: bool = False
    force: bool = False
    update_command: str | None = None

    def exists(self) -> bool:
        return self.path.is_file()

    def load(self) -> BenchmarkReport:
        """The baseline report; each kind of problem raises its own :class:`BaselineError`."""
        return load_baseline(self.path, update_command=self.update_command)

    def write(self, report: BenchmarkReport, *, merge: bool = True,
              current: BenchmarkReport | None = None) -> Path:
        """Write ``report`` here, merged cell by cell into the existing baseline when ``merge``.

        Merging keeps the baseline's other cells and seeds and replaces the triples the
        candidate ran. A candidate that adds a cell without the baseline's seeds cannot be
        merged into a full task × model × seed grid: that is an error saying so. ``current``
        is the baseline as the caller already loaded it (the file is then not read again).
        """
        old = current
        if merge and old is None and self.exists():
            old = self.load()
        if merge and old is not None:
            try:
                report = BenchmarkReport.merge(old, report)
            except ValueError as exc:
                raise BaselineError(
                    f"cannot merge the candidate into {self.path}: {exc}. The candidate ran "
                    f"seeds {list(report.seeds)}, the baseline has {list(old.seeds)}; rerun with "
                    "the baseline's seeds (--graphnetz-seeds), or replace the whole file with "
                    "--graphnetz-force"
                ) from None
        try:
            return report.to_json(self.path)
        except OSError as exc:
            raise BaselineError(_unwritable(self.path, exc)) from None


def load_baseline(path: str | Path, *, update_command: str | None = None) -> BenchmarkReport:
    """Read a baseline report from ``path``.

    Raises :class:`BaselineMissingError` (with the command that creates it),
    :class:`BaselineSchemaError` (newer schema: upgrade) or :class:`BaselineFormatError`.
    """
    path = Path(path)
    if path.is_dir():
        raise BaselineFormatError(
            f"baseline {path} is a directory, not a report file; move it away or delete it, "
            f"then {_how_to_create(path, update_command)}"
        )
    if not path.is_file():
        raise BaselineMissingError(f"no baseline at {path}: {_how_to_create(path, update_command)}")
    try:
        return BenchmarkReport.from_json(path)
    except ReportSchemaError as exc:
        raise BaselineSchemaError(
            f"baseline {path} was written by a newer pytest-graphnetz (report schema "
            f"version {exc.version}; this one reads up to {SCHEMA_VERSION}). Upgrade "
            "pytest-graphnetz (`pip install -U pytest-graphnetz`); the file was left as it is."
        ) from None
    except ReportFormatError as exc:
        raise BaselineFormatError(
            f"baseline {path} cannot be read: {exc}. The file was left as it is: fix it from "
            f"version control (`git checkout -- {path}`), or replace it with "
            f"{_force_hint(update_command)}"
        ) from None


def _unwritable(path: Path, exc: OSError) -> str:
    if path.is_dir():
        why = "it is a directory, not a report file; move it away or delete it"
    elif isinstance(exc, PermissionError):
        why = (f"no permission to write in {path.parent} ({exc.strerror}); make the directory "
               "writable, or choose another with --graphnetz-baseline-dir")
    else:
        why = f"{type(exc).__name__}: {exc.strerror or exc}"
    return f"cannot write baseline {path}: {why}. The old file, if any, is unchanged"


def _how_to_create(path: Path, update_command: str | None) -> str:
    if update_command:
        return f"create it with `{update_command}`"
    return (f"create it with `report.to_json({str(path)!r})` or by running the gate's test "
            "with `pytest --graphnetz-update-baselines`")


def _force_hint(update_command: str | None) -> str:
    if update_command:
        return f"`{update_command} --graphnetz-force`"
    return "`pytest --graphnetz-update-baselines --graphnetz-force`"
