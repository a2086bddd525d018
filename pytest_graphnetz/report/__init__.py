"""The report: ``BenchmarkReport``, its JSON forms, atomic files, and the statistical views.

Axis convention, stated once for the whole package: ``X[task, model, seed]`` (see
:mod:`.model`). The modules, from the top of the layering down:

- :mod:`.model`: ``BenchmarkReport``, the data model (labels, histories, epoch selection,
  subsets and merges) and its JSON round trip;
- :mod:`.views`: summary, pairwise tables, fold correction, and the cell statistics and phrases
  that ``export`` (tables) and ``plots`` (figures) share;
- :mod:`.values`: the values-only form of committed baselines (values per epoch rule, by name);
- :mod:`.codec`: stable JSON text, strict reading, float32 values at float32 length;
- :mod:`.schema`: schema names and versions, errors, validation of a decoded document;
- :mod:`.files`: atomic writes, bounded reads of regular files, and the one lock convention
  (stdlib only; the cache, the baselines and the task loaders use it too).
"""

from __future__ import annotations

from .codec import (
    dumps,
    history_from_json,
    history_to_json,
    read_json,
    values_from_json,
    values_to_json,
)
from .files import (
    MAX_READ_BYTES,
    STALE_TEMP_SECONDS,
    UNLOCKED_TEMP_SECONDS,
    NotARegularFileError,
    atomic_file,
    read_regular_file,
    remove_stale_temp_files,
    write_text_atomic,
)
from .model import BenchmarkReport, EpochSelectionError, Triple, load_report
from .schema import (
    CI_METHODS,
    EPOCH_SELECTIONS,
    SCHEMA,
    SCHEMA_VERSION,
    VALUES_SCHEMA,
    VALUES_SCHEMA_VERSION,
    ReportFormatError,
    ReportSchemaError,
)

__all__ = [
    "CI_METHODS", "EPOCH_SELECTIONS", "MAX_READ_BYTES", "SCHEMA", "SCHEMA_VERSION",
    "STALE_TEMP_SECONDS", "VALUES_SCHEMA", "VALUES_SCHEMA_VERSION", "BenchmarkReport",
    "EpochSelectionError", "NotARegularFileError", "ReportFormatError", "ReportSchemaError",
    "Triple", "UNLOCKED_TEMP_SECONDS", "atomic_file", "dumps", "history_from_json",
    "history_to_json", "load_report",
    "read_json", "read_regular_file", "remove_stale_temp_files", "values_from_json",
    "values_to_json", "write_text_atomic",
]
