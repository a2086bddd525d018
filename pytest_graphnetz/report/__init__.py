"""Layer 3 of 7: the report: the data model, its JSON, its views, tables and figures,
the per-epoch record, the tuning record and atomic files. May import stats and base (numpy at
import time; matplotlib lazily); never torch or the layers above.

Axis convention, stated once for the whole package: ``X[task, model, seed]`` (see
:mod:`.record`). The modules, from the top of the layering down:

- :mod:`.model`: ``BenchmarkReport``, a record with its public methods (statistics, JSON
  round trip, tables, figure), each a call into the module below that does the work;
- ``export`` and ``plots`` (top-level modules): the Markdown/LaTeX tables and the figures;
- :mod:`.views`: summary, pairwise tables, fold correction, and the cell statistics and phrases
  that ``export`` (tables) and ``plots`` (figures) share;
- :mod:`.values_form`: the values-only form of committed baselines (values per epoch rule, by name);
- :mod:`.record`: ``ReportRecord``, the data model (labels, histories, epoch selection,
  subsets and merges), which every module below ``model`` takes (none imports ``model``);
- :mod:`.codec`: stable JSON text, strict reading, float32 values at float32 length;
- :mod:`.schema`: schema names and versions, errors, validation of a decoded document;
- :mod:`.files`: atomic writes, bounded reads of regular files, and the one lock convention
  (stdlib only; the cache, the baselines and the task loaders use it too).

This namespace holds what a user meets: :class:`BenchmarkReport` and the errors reading or
selecting from one raises. Everything else is imported from the module that defines it
(``from pytest_graphnetz.report.codec import dumps``).
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from pytest_graphnetz.report.model import BenchmarkReport
    from pytest_graphnetz.report.record import EpochSelectionError
    from pytest_graphnetz.report.schema import ReportFormatError, ReportSchemaError

# Resolved on first use, so a module of this layer that needs no numpy (``files``,
# ``session_files``: what the plugin writes at a session's end) imports without it.
_EXPORTS = {"BenchmarkReport": "model", "EpochSelectionError": "record",
            "ReportFormatError": "schema", "ReportSchemaError": "schema"}

__all__ = ["BenchmarkReport", "EpochSelectionError", "ReportFormatError", "ReportSchemaError"]


def __getattr__(name: str) -> Any:
    if name not in _EXPORTS:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(importlib.import_module(f"{__name__}.{_EXPORTS[name]}"), name)
    globals()[name] = value
    return value
