"""What tests/fast/test_plugin_progress.py and tests/slow/test_plugin_progress_slow.py share."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

PROJECT = '''
from conftest_tiny import gcn, tiny_task


def test_trains(graphnetz_run):
    report = graphnetz_run({"tiny": tiny_task(epochs=2)}, {"GCN": gcn})
    assert list(report.seeds) == [0, 1, 2]
'''

LIVE = re.compile(r"graphnetz: (\d+)/(\d+) triples \((\d+) trained, (\d+) from cache\)")


@pytest.fixture
def project(pytester: pytest.Pytester) -> pytest.Pytester:
    import conftest

    pytester.makepyfile(conftest_tiny=Path(conftest.__file__).read_text(), test_p=PROJECT)
    return pytester


def live_lines(output: str) -> list[tuple[int, ...]]:
    return [tuple(int(g) for g in m.groups()) for m in LIVE.finditer(output)]
