"""How ``-n`` hands out this suite (tests/conftest.py): the shared-fixture files stay whole."""

from __future__ import annotations

import ast
from pathlib import Path

from conftest import ONE_WORKER, scope_of

ROOT = Path(__file__).resolve().parent.parent


def test_each_one_worker_file_exists_and_has_a_module_scoped_fixture():
    # A renamed file would silently fall back to one test at a time.
    for name in sorted(ONE_WORKER):
        tree = ast.parse((ROOT / name).read_text(encoding="utf-8"))
        scopes = [keyword.value.value
                  for node in ast.walk(tree) if isinstance(node, ast.Call)
                  for keyword in node.keywords
                  if keyword.arg == "scope" and isinstance(keyword.value, ast.Constant)]
        assert "module" in scopes, f"{name} has no module-scoped fixture to share"


def test_scopes_are_whole_files_only_for_the_one_worker_files():
    assert scope_of("tests/test_dask.py::test_sweep[a::b]") == "tests/test_dask.py"
    assert scope_of("tests/test_epoch_selection.py::TestX::test_y") == \
        "tests/test_epoch_selection.py"
    assert scope_of("tests/test_stats.py::test_z[1]") == "tests/test_stats.py::test_z[1]"
    assert scope_of("tests/test_dask_extra.py::test_w") == "tests/test_dask_extra.py::test_w"
