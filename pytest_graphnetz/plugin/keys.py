"""The names the plugin's parts share: the marker and the fixtures (which make a test a
graphnetz test), and the ``user_properties`` entries that carry what a test did to the session.

A test's results travel in its reports' ``user_properties`` (name, JSON text or a path): under
pytest-xdist the worker's reports are serialised to the controller, and with ``--junitxml``
they become JUnit properties, so no entry may hold a Python object.
"""

from __future__ import annotations

from typing import Any

MARKER = "graphnetz"                    # the marker of gate tests (-m graphnetz)
GATE_PROPERTY = "graphnetz_gate"        # user_properties entry: one gate row (JSON text)
TRIPLES_PROPERTY = "graphnetz_triples"  # user_properties entry: {"trained", "cached", "seconds"}
# With --graphnetz-update-baselines only (what finding unused baselines needs):
USES_PROPERTY = "graphnetz_baseline"          # user_properties entry: a baseline file used
USER_PROPERTY = "graphnetz_baseline_user"     # on every report of a test that asks for one
SEEN_PROPERTY = "graphnetz_seen_modules"      # xdist workeroutput: modules collected, not skipped
REPORT_PROPERTY = "graphnetz_report"    # user_properties entry: a saved candidate report's path
GRAPHNETZ_TEST = "graphnetz_test"      # user_properties entry: this test uses our fixtures/marker
BASELINE_FILE = "graphnetz_baseline_file"  # user_properties entry: a baseline handed to the test
CALIBRATION_PROPERTY = "graphnetz_calibration"  # user_properties entry: calibrated cells (JSON)
# GitHub's job summary file: the controller appends the gate table to the file it names.
STEP_SUMMARY_ENV = "GITHUB_STEP_SUMMARY"
# The fixtures that make a test a graphnetz test (as the marker does).
FIXTURES = frozenset({"graphnetz_run", "graphnetz_baseline"})


def uses_fixtures(item: Any) -> bool:
    """Whether test ``item`` asks for one of our fixtures."""
    return not FIXTURES.isdisjoint(getattr(item, "fixturenames", ()))


def is_graphnetz_test(item: Any) -> bool:
    """Whether test ``item`` is a graphnetz test: it uses our fixtures or our marker."""
    return uses_fixtures(item) or item.get_closest_marker(MARKER) is not None

__all__ = ["BASELINE_FILE", "CALIBRATION_PROPERTY", "FIXTURES", "GATE_PROPERTY", "GRAPHNETZ_TEST",
           "MARKER", "REPORT_PROPERTY", "SEEN_PROPERTY", "STEP_SUMMARY_ENV", "TRIPLES_PROPERTY",
           "USER_PROPERTY", "USES_PROPERTY", "is_graphnetz_test", "uses_fixtures"]
