"""The names the plugin's parts share: the ``user_properties`` entries that carry what a test
did to the session (the marker and the fixtures, which make a test a graphnetz test, are
declared in :mod:`.declared`).

A test's results travel in its reports' ``user_properties`` (name, JSON text or a path): under
pytest-xdist the worker's reports are serialised to the controller, and with ``--junitxml``
they become JUnit properties, so no entry may hold a Python object.
"""

from __future__ import annotations

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

__all__ = ["BASELINE_FILE", "CALIBRATION_PROPERTY", "GATE_PROPERTY", "GRAPHNETZ_TEST",
           "REPORT_PROPERTY", "SEEN_PROPERTY", "STEP_SUMMARY_ENV", "TRIPLES_PROPERTY",
           "USER_PROPERTY", "USES_PROPERTY"]
