"""pytest-graphnetz: seeded multi-seed GNN benchmarks and paired-evidence regression gates.

Public names resolve lazily, so ``import pytest_graphnetz`` (and the pytest plugin) never pays
for torch, torch_geometric or scipy until a benchmark or a statistic is actually used.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

__version__ = "0.1.0"

_EXPORTS = {
    "run_benchmark": "runner",
    "run_adaptive": "gates.comparing.adaptive",
    "BenchmarkReport": "report",
    "MetricSpec": "report.epochs",
    "History": "report.epochs",
    "Task": "runner.tasks.base",
    "assert_not_worse": "gates",
    "assert_better": "gates",
    "assert_equivalent": "gates",
    "assert_ci_width": "gates",
    "tune": "gates.tuning",
    "grid": "gates.tuning",
}

__all__ = [
    "BenchmarkReport", "History", "MetricSpec", "Task", "assert_better", "assert_ci_width",
    "assert_equivalent", "assert_not_worse", "grid", "run_adaptive", "run_benchmark", "tune",
]

if TYPE_CHECKING:
    from pytest_graphnetz.gates import (
        assert_better,
        assert_ci_width,
        assert_equivalent,
        assert_not_worse,
    )
    from pytest_graphnetz.gates.comparing.adaptive import run_adaptive
    from pytest_graphnetz.gates.tuning import grid, tune
    from pytest_graphnetz.report import BenchmarkReport
    from pytest_graphnetz.report.epochs import History, MetricSpec
    from pytest_graphnetz.runner import run_benchmark
    from pytest_graphnetz.runner.tasks.base import Task


def __getattr__(name: str) -> Any:
    if name not in _EXPORTS:
        raise AttributeError(f"module 'pytest_graphnetz' has no attribute {name!r}")
    value = getattr(importlib.import_module(f".{_EXPORTS[name]}", __name__), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted([*globals(), *_EXPORTS])
