"""Command tasks' cache keys and model fingerprints hold no paths.

Real pytest sessions in fresh interpreters (the point is what a new process computes): ``pytest``
then ``python3 -m pytest`` in one clone, then a second virtual environment (another path, the
same packages) running ``python -m pytest`` in a second clone in another directory. All three
share one cache directory; the second and third train nothing and judge the unchanged models
IDENTICAL (a model fingerprint holding the interpreter's path would read "changed").
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

pytest.importorskip("torch_geometric")

# the script and the gate of tests/nocover/test_command_task.py's script project
from tests.helpers.command_projects import SCRIPT_GATES as GATES  # noqa: E402
from tests.helpers.command_projects import SEEDED_TRAIN as TRAIN  # noqa: E402
from tests.helpers.command_projects import second_venv  # noqa: E402

PROJECT = '''
import sys
from pathlib import Path

from pytest_graphnetz import Task
from pytest_graphnetz.runner.command import Command, DataFiles

HERE = Path(__file__).parent
TASKS = {"t": Task("t", DataFiles([HERE / "data.txt"]), kind="command")}
MODELS = {"A": Command([sys.executable, str(HERE / "train.py"), "{output}"], cwd=HERE),
          "B": Command([sys.executable, "train.py", "{output}", "--shift", "0.01"], cwd=HERE)}
'''


def session(args: list[str], cwd: Path, cache: Path, *extra: str) -> str:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("PYTEST_", "GRAPHNETZ_"))}
    env["PYTHONPATH"] = str(Path(__file__).parents[2])   # this checkout's package
    done = subprocess.run([*args, "-p", "no:cacheprovider", "-p", "no:hypothesispytest",
                           "-o", "graphnetz_seeds=3", f"--graphnetz-cache-dir={cache}", *extra],
                          cwd=cwd, env=env, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    return done.stdout


@pytest.mark.skipif(sys.platform == "win32", reason="POSIX venv layout")
def test_pytest_python_m_pytest_and_a_second_venv_and_clone_share_keys(tmp_path) -> None:
    first = tmp_path / "clone1"
    first.mkdir()
    for name, text in (("project.py", PROJECT), ("train.py", TRAIN), ("test_scripts.py", GATES),
                       ("data.txt", "a graph")):
        (first / name).write_text(text)
    cache = tmp_path / "cache"
    bindir = Path(sys.executable).parent
    out = session([str(bindir / "pytest")], first, cache, "--graphnetz-update-baselines")
    assert "6 trained, 0 from cache" in out, out

    out = session([str(bindir / "python3"), "-m", "pytest"], first, cache)
    assert "0 trained, 6 from cache" in out, out
    assert re.search(r"t/A\s.*IDENTICAL", out) and re.search(r"t/B\s.*IDENTICAL", out), out

    second = tmp_path / "elsewhere" / "clone2"
    shutil.copytree(first, second)
    python = second_venv(tmp_path / "venv2")
    out = session([str(python), "-m", "pytest"], second, cache)
    assert "0 trained, 6 from cache" in out, out
    assert re.search(r"t/A\s.*IDENTICAL", out) and re.search(r"t/B\s.*IDENTICAL", out), out


def test_the_interpreter_counts_by_what_it_is_not_where(tmp_path) -> None:
    from pytest_graphnetz.runner.command import Command

    (tmp_path / "train.py").write_text(TRAIN)
    bindir = Path(sys.executable).parent
    one = Command([str(bindir / "python"), "train.py"], cwd=tmp_path)
    two = Command([str(bindir / "python3"), str(tmp_path / "train.py")], cwd=tmp_path)
    same = Command([str(second_venv(tmp_path / "same")), "train.py"], cwd=tmp_path)
    assert one.identity() == two.identity() == same.identity()
    assert one.fingerprint() == two.fingerprint() == same.fingerprint()
    assert one.identity()["args"][0]["python"]["version"] == sys.version.split()[0]
    assert str(tmp_path) not in repr(one.identity()) + repr(two.identity())
    # Another environment (without this one's packages) is another key.
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(tmp_path / "bare")],
                   check=True)
    bare = Command([str(tmp_path / "bare" / "bin" / "python"), "train.py"], cwd=tmp_path)
    assert bare.identity()["args"][0]["python"]["environment"] != \
        one.identity()["args"][0]["python"]["environment"]
    assert bare.fingerprint() != one.fingerprint()
