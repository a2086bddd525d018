"""The tests of tests/fast/test_cache_project_code.py's unit that cost seconds each: fresh
interpreters, subprocess sessions or killed processes (the slow tier, tests/README.md)."""

from __future__ import annotations

import sys

import pytest

# Pytester's in-process runs drop modules first imported inside them; torch cannot be imported
# twice in one process, so everything heavy is imported here, once.
torch = pytest.importorskip("torch")
import torch_geometric.data  # noqa: E402,F401

import pytest_graphnetz.runner  # noqa: E402,F401
from pytest_graphnetz.runner.fingerprint import project_code_key  # noqa: E402

KEY_OF = """
import sys
from pytest_graphnetz.runner.fingerprint import project_code_key
print(project_code_key([sys.argv[1]]), "xdist" in sys.modules)
"""


def test_a_librarys_version_counts_whether_or_not_this_process_imported_it(tmp_path,
                                                                          monkeypatch):
    """A helper importing ``xdist`` (installed as pytest-xdist: the import name is not the
    distribution's) has one key in a process that imported xdist and in one that did not.
    Before, the first wrote ``xdist==3.8.0`` and the second ``xdist==?``: a worker and the
    test that reran its triple missed each other's cache entries."""
    import subprocess

    xdist = pytest.importorskip("xdist")
    script = tmp_path / "train.py"
    script.write_text("def scheduler():\n    from xdist.scheduler import LoadScheduling\n"
                      "    return LoadScheduling\n")
    here = project_code_key([script])
    assert "xdist" in sys.modules and xdist.__version__
    fresh = subprocess.run([sys.executable, "-c", KEY_OF, str(script)], capture_output=True,
                           text=True, check=True).stdout.split()
    assert fresh == [here, "False"]
    # Teeth: the version is in the key (a library upgrade retrains).
    from pytest_graphnetz.runner.fingerprint import project

    real = project.installed_version
    monkeypatch.setattr(project, "installed_version",
                        lambda top: "0.0" if top == "xdist" else real(top))
    assert project_code_key([script]) != here
