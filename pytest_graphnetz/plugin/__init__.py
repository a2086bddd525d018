"""Layer 6 of 7: the pytest plugin. May import every layer below (gates, runner, report,
stats, base), but at import time only pytest and the standard library: the rest lazily, inside
the hook or fixture that needs it (what pytest loads on every run stays cheap; a test enforces it).

The pytest plugin: options, ini keys, the ``graphnetz`` marker, fixtures and the gate summary.

This package is the ``pytest11`` entry point (``pytest_graphnetz.plugin``): pytest registers it
on every run, and finds the hooks and fixtures it re-exports below. By concept:

- :mod:`.options`: the ``--graphnetz-*`` options and ini keys, declared and registered, each
  value read with a message naming the option or the ini key it came from;
- :mod:`.settings`: those values validated into :class:`Settings`;
- :mod:`.hooks` and :mod:`.fixtures`: a few lines each (the only names this package holds),
  handing the work to
- :mod:`.session`: :class:`GraphnetzSession` runs benchmarks (with live progress), hands out
  baselines, gathers every gate row and feeds :class:`~pytest_graphnetz.plugin.summary.GateSummary`,
  which renders the terminal table, the Markdown and the JSON;
- :mod:`.closing`: at the session's end, the files the user asked for written, then the
  terminal's lines;
- :mod:`.usage`: :class:`BaselineUsage` tracks which baselines and cells a run used (xdist
  included) and prunes or reports the rest;
- :mod:`.selection`: ``-k`` blind to our marker's name;
- :mod:`.keys`: the marker and the ``user_properties`` names the parts share.

At import time the package touches only pytest and the standard library: the runner, the gates
and the statistics (torch, PyG, scipy, numpy) are imported inside the functions that use them.

Under pytest-xdist every worker trains through the same on-disk triple cache (file locks make
one worker wait for another's triple instead of training it twice), and gate results travel to
the controller in the test reports' ``user_properties``, which xdist serialises.
"""

from __future__ import annotations

# Only the hooks and fixtures: pytest scans every name of this module for both on every run.
from pytest_graphnetz.plugin.fixtures import graphnetz_baseline, graphnetz_run
from pytest_graphnetz.plugin.hooks import (
    pytest_addoption,
    pytest_collection_finish,
    pytest_configure,
    pytest_make_collect_report,
    pytest_report_header,
    pytest_sessionfinish,
    pytest_terminal_summary,
    pytest_xdist_setupnodes,
)

__all__ = [
    "graphnetz_baseline", "graphnetz_run", "pytest_addoption", "pytest_collection_finish",
    "pytest_configure", "pytest_make_collect_report", "pytest_report_header",
    "pytest_sessionfinish", "pytest_terminal_summary", "pytest_xdist_setupnodes",
]
