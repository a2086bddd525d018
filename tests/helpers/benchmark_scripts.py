"""A script of ``benchmarks/`` loaded as a module, for the tests that check its pure parts
and its quick mode."""

from __future__ import annotations

import importlib.util
import sys
from collections.abc import Iterator
from pathlib import Path
from types import ModuleType

BENCHMARKS = Path(__file__).resolve().parents[2] / "benchmarks"


def loaded(name: str, *, on_path: bool = False) -> Iterator[ModuleType]:
    """``benchmarks/<name>.py`` as the module ``name``, registered in ``sys.modules`` while it
    is used (its dataclasses look their module up; fork workers unpickle its factories by
    reference) and removed after: the body of a module-scoped fixture. ``on_path``: the
    benchmarks folder is on ``sys.path`` meanwhile, for a script that imports its neighbours."""
    if on_path:
        sys.path.insert(0, str(BENCHMARKS))
    spec = importlib.util.spec_from_file_location(name, BENCHMARKS / f"{name}.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    spec.loader.exec_module(module)
    yield module
    sys.modules.pop(name, None)
    if on_path:
        sys.path.remove(str(BENCHMARKS))
