"""The report: ``BenchmarkReport``, its JSON forms, atomic files, and the statistical views.

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

from .model import BenchmarkReport
from .record import EpochSelectionError
from .schema import ReportFormatError, ReportSchemaError

__all__ = ["BenchmarkReport", "EpochSelectionError", "ReportFormatError", "ReportSchemaError"]
