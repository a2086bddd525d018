"""A command task whose script imports a package installed in editable mode keeps its cache key.

Two real ``pip install -e`` installs into a second virtual environment: a ``src/`` layout (pip
writes a ``.pth`` that adds ``src/`` to the path) and a flat layout (setuptools installs an
import hook that maps the name to the folder). A scratch project's script imports both; a pytest
session under that environment writes the baseline, a rerun is served from the cache, and an
edit of either package's model module must retrain and read REGRESSED (before, neither package
was found, so the edit was a stale cache hit read IDENTICAL).
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

pytest.importorskip("torch_geometric")

from tests.helpers.command_projects import COMMAND_PROJECT as PROJECT  # noqa: E402
from tests.helpers.command_projects import DROP_TRAIN as TRAIN  # noqa: E402
from tests.helpers.command_projects import SCRIPT_GATES as GATES  # noqa: E402
from tests.helpers.command_projects import second_venv  # noqa: E402

PYPROJECT = """
[build-system]
requires = ["setuptools"]
build-backend = "setuptools.build_meta"
[project]
name = "{name}"
version = "0.1"
[tool.setuptools]
packages = ["{name}"]
{where}
"""


def package(root: Path, name: str, *, src: bool) -> Path:
    """A one-module package ``name`` under ``root`` (in ``src/`` or flat); its model module."""
    folder = root / "src" / name if src else root / name
    folder.mkdir(parents=True)
    (folder / "__init__.py").write_text("")
    (folder / "model.py").write_text("DROP = 0.0\n")
    (root / "pyproject.toml").write_text(PYPROJECT.format(
        name=name, where='package-dir = {"" = "src"}' if src else ""))
    return folder / "model.py"


def session(python: Path, cwd: Path, cache: Path, *extra: str) -> subprocess.CompletedProcess:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("PYTEST_", "GRAPHNETZ_"))}
    env["PYTHONPATH"] = str(Path(__file__).parents[2])   # this checkout's package
    return subprocess.run([str(python), "-m", "pytest", "-p", "no:cacheprovider",
                           "-p", "no:hypothesispytest", "-o", "graphnetz_seeds=3",
                           "--graphnetz-verify-cache=0", f"--graphnetz-cache-dir={cache}",
                           *extra], cwd=cwd, env=env, capture_output=True, text=True,
                          timeout=300)


@pytest.mark.skipif(sys.platform == "win32", reason="POSIX venv layout")
def test_an_edit_of_an_editable_install_retrains(tmp_path) -> None:
    python = second_venv(tmp_path / "venv")
    models = {"src layout": package(tmp_path / "srcproj", "srcpkg", src=True),
              "flat layout": package(tmp_path / "flatproj", "flatpkg", src=False)}
    for model in models.values():
        project = model.parents[2] if model.parent.parent.name == "src" else model.parents[1]
        subprocess.run([sys.executable, "-m", "pip", "--python", str(python), "install", "-q",
                        "--no-build-isolation", "--no-deps", "--no-index", "-e", str(project)],
                       check=True, capture_output=True)
    work = tmp_path / "work"
    work.mkdir()
    imports = ("from srcpkg.model import DROP as A\nfrom flatpkg.model import DROP as B\n"
               "DROP = A + B")
    for name, text in (("project.py", PROJECT), ("test_scripts.py", GATES),
                       ("train.py", TRAIN.format(imports=imports))):
        (work / name).write_text(text)
    cache = tmp_path / "cache"
    first = session(python, work, cache, "--graphnetz-update-baselines")
    assert first.returncode == 0, first.stdout[-3000:] + first.stderr[-3000:]
    for layout, model in models.items():
        again = session(python, work, cache)
        assert again.returncode == 0 and "0 trained, 3 from cache" in again.stdout, \
            again.stdout[-3000:]
        model.write_text("DROP = 0.05\n")
        changed = session(python, work, cache)
        assert changed.returncode == 1 and re.search(r"t/A\s.*REGRESSED", changed.stdout), \
            f"{layout}: the edit was not seen:\n{changed.stdout[-3000:]}"
        model.write_text("DROP = 0.0\n")
