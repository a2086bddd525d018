"""What a new user hits in the first hour: an absent pinned device, ``-k`` and the marker,
refreshing one gate, tuning catalogue tasks, models paired with the tasks they fit."""

from __future__ import annotations

import pytest

# In-process pytester runs drop modules first imported inside them; torch cannot be imported
# twice in one process, so everything heavy is imported here, once.
pytest.importorskip("torch")
pytest.importorskip("torch_geometric.nn")
import pytest_graphnetz.gates  # noqa: E402,F401
import pytest_graphnetz.runner  # noqa: E402,F401

TWO_GATES = """
import pytest

pytestmark = pytest.mark.graphnetz


def test_one(graphnetz_run):
    graphnetz_run("social", {})


def test_two(graphnetz_run):
    graphnetz_run("social", {})
"""


@pytest.mark.parametrize("device", ["cuda:99", "tpu"])
def test_absent_pinned_device_is_one_usage_error_at_session_start(pytester, device):
    pytester.makepyfile(test_gates=TWO_GATES)
    result = pytester.runpytest(f"--graphnetz-device={device}")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    errors = result.stderr.str()
    assert errors.count("--graphnetz-device") == 1 and device in errors, errors
    assert "collected" not in result.stdout.str()  # no test ran, none failed one by one
