"""What tests/fast/test_plugin_outputs.py and tests/slow/test_plugin_outputs_slow.py share."""

from __future__ import annotations

PASSING = """
import os
import shutil

from pytest_graphnetz import BenchmarkReport, assert_not_worse


def report():
    return BenchmarkReport.from_arrays([[[0.80, 0.82, 0.79]]], tasks=["karate"],
                                       models=["GCN"], seeds=range(3), metric="accuracy")


def test_gate():
    for blocked in {blocked!r}:  # a path that became a file after the session started
        shutil.rmtree(blocked, ignore_errors=True)
        open(blocked, "w").close()
    assert_not_worse(report(), report(), first_look=3)
"""


OUTPUTS = ("json", "summary", "comment")
