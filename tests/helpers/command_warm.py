"""What tests/fast/test_command_warm.py and tests/slow/test_command_warm_slow.py share."""

from __future__ import annotations

import pytest

from pytest_graphnetz.runner.command.run import CommandExecutor

RUN = dict(task="t", model="m", metric="accuracy", device="cpu", threads=1, deterministic="off")


@pytest.fixture
def commands():
    """An executor of command runs for one test, closed after it (its servers end)."""
    with CommandExecutor() as executor:
        yield executor
