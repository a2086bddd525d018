"""Every input a command task's script reads through Python keeps a cache hit honest.

Each case is a tiny plain-Python script whose metric drops 5 points when one input changes:
a sqlite row, an override file that did not exist at the baseline, a ``runpy``'d settings
module, an ``os.path.exists`` flag, a file outside the project loaded by ``importlib`` (not in
``sys.modules``), a file under ``/dev/shm``. In real pytest sessions with the cache kept: the
baseline, a rerun served from the cache (so the read is not simply missed every time), then
the change, which must retrain and read REGRESSED (a stale hit would read IDENTICAL).
"""

from __future__ import annotations

import json
import os
import re
import sqlite3
import uuid
from pathlib import Path

import pytest

# Pytester's in-process sessions drop modules first imported inside them, and NumPy's and
# torch's cannot be imported twice in one process: they are imported here, once.
pytest.importorskip("torch_geometric")

# One copy of the plugin's classes for every session (pytester drops what a session imports).
import pytest_graphnetz.runner.command  # noqa: E402, F401
from pytest_graphnetz import assert_not_worse  # noqa: E402, F401
from pytest_graphnetz.gates.verdicts.values import GateRefusal  # noqa: E402, F401
from pytest_graphnetz.runner import TripleError  # noqa: E402, F401
from tests.helpers.command_projects import COMMAND_PROJECT as PROJECT  # noqa: E402
from tests.helpers.command_projects import SCRIPT_GATES as GATES  # noqa: E402

TRAIN = '''
import json, os, random, sys
random.seed(int(os.environ["GRAPHNETZ_SEED"]))
{read}
test = [0.8 - drop + 0.01 * random.random() for _ in range(3)]
json.dump({{"metric": "accuracy", "test": test}}, open(sys.argv[1], "w"))
'''

READS = {
    "sqlite row": (
        "import sqlite3\n"
        "drop = sqlite3.connect('settings.db').execute(\n"
        "    \"SELECT value FROM settings WHERE name = 'drop'\").fetchone()[0]\n"),
    "override file": (
        "try:\n"
        "    drop = json.load(open('override.json'))['drop']\n"
        "except FileNotFoundError:\n"
        "    drop = 0.0\n"),
    "runpy settings": (
        "import runpy\n"
        "drop = runpy.run_path('settings.py')['DROP']\n"),
    "exists flag": "drop = 0.05 if os.path.exists('SLOW_MODE') else 0.0\n",
    "importlib file": (
        "import importlib.util\n"
        "spec = importlib.util.spec_from_file_location('shared_ext', {outside!r})\n"
        "ext = importlib.util.module_from_spec(spec)\n"
        "spec.loader.exec_module(ext)\n"
        "drop = ext.DROP\n"),
    "dev shm file": "drop = json.load(open({shm!r}))['drop']\n",
}


def setup(case: str, where: Path, outside: Path, shm: Path) -> None:
    """The input of ``case`` as it is at the baseline (no drop)."""
    if case == "sqlite row":
        with sqlite3.connect(where / "settings.db") as db:
            db.execute("CREATE TABLE settings (name TEXT, value REAL)")
            db.execute("INSERT INTO settings VALUES ('drop', 0.0)")
        db.close()
    elif case == "runpy settings":
        (where / "settings.py").write_text("DROP = 0.0\n")
    elif case == "importlib file":
        outside.parent.mkdir(parents=True, exist_ok=True)
        outside.write_text("DROP = 0.0\n")
    elif case == "dev shm file":
        shm.write_text(json.dumps({"drop": 0.0}))


def change(case: str, where: Path, outside: Path, shm: Path) -> None:
    """The 5-point drop, made through the input of ``case``."""
    if case == "sqlite row":
        with sqlite3.connect(where / "settings.db") as db:
            db.execute("UPDATE settings SET value = 0.05 WHERE name = 'drop'")
        db.close()
    elif case == "override file":
        (where / "override.json").write_text(json.dumps({"drop": 0.05}))
    elif case == "runpy settings":
        (where / "settings.py").write_text("DROP = 0.05\n")
    elif case == "exists flag":
        (where / "SLOW_MODE").write_text("")
    elif case == "importlib file":
        outside.write_text("DROP = 0.05\n")
    elif case == "dev shm file":
        shm.write_text(json.dumps({"drop": 0.05}))


@pytest.mark.parametrize("case", list(READS))
def test_a_drop_through_an_input_read_by_python_regresses_with_the_cache_kept(
        pytester: pytest.Pytester, tmp_path_factory, case: str) -> None:
    if case == "dev shm file" and not Path("/dev/shm").is_dir():
        pytest.skip("no /dev/shm here")
    outside = tmp_path_factory.mktemp("shared") / "code" / "ext.py"
    shm = Path("/dev/shm") / f"graphnetz-test-{uuid.uuid4().hex}.json"
    try:
        read = READS[case].format(outside=str(outside), shm=str(shm))
        pytester.makepyfile(project=PROJECT, test_scripts=GATES,
                            train=TRAIN.format(read=read))
        setup(case, pytester.path, outside, shm)
        cache = tmp_path_factory.mktemp("cache")
        # no verify sample: the drop must be caught by what the reads saw, not by a retrain
        args = ["-o", "graphnetz_seeds=5", f"--graphnetz-cache-dir={cache}",
                "--graphnetz-verify-cache=0", "-p", "no:cacheprovider"]
        pytester.runpytest(*args, "--graphnetz-update-baselines").assert_outcomes(passed=1)
        again = pytester.runpytest(*args, "-rA")
        again.assert_outcomes(passed=1)
        assert re.search(r"\(0 trained, 5 from cache\)", again.stdout.str()), \
            f"{case}: an unchanged rerun was not served from the cache"
        change(case, pytester.path, outside, shm)
        changed = pytester.runpytest(*args)
        out = changed.stdout.str()
        assert changed.ret == 1 and re.search(r"t/A\s.*REGRESSED", out), \
            f"{case}: the drop was not seen (a stale cache hit?):\n{out}"
    finally:
        shm.unlink(missing_ok=True)


ENV_SCRIPT = '''
import json, os, posix, sys
import pytest_graphnetz.script as graphnetz
from lib_settings import verbose

copied = dict(os.environ)              # a copy passed on: not a read of every variable
spare = {**os.environ}
a = os.environb.get(b"BY_ENVIRONB")
b = posix.environ.get(b"BY_POSIX")
c = os.getenv("BY_GETENV")
open(os.devnull).read()                # a character device: nothing to key
graphnetz.record(test=0.5 + 0.01 * verbose())
'''

LIBRARY = '''
import os

def verbose():   # a library's own lookup for the script (click's `envvar=` reads so)
    return int("BY_LIBRARY" in os.environ)
'''


def test_every_interface_to_the_environment_is_recorded(tmp_path, monkeypatch) -> None:
    import sys

    from pytest_graphnetz.runner.command import Command
    from pytest_graphnetz.runner.command.run import CommandExecutor

    (tmp_path / "train.py").write_text(ENV_SCRIPT)
    (tmp_path / "lib_settings.py").write_text(LIBRARY)
    monkeypatch.setenv("BY_POSIX", "1")
    command = Command([sys.executable, "train.py"], cwd=tmp_path)
    with CommandExecutor() as commands:
        _, reads = commands.run_traced(command, task="t", model="m", metric="accuracy", seed=0,
                                       device="cpu", threads=1, deterministic="off")
    assert reads is not None
    assert {"BY_ENVIRONB", "BY_POSIX", "BY_GETENV", "BY_LIBRARY"} <= set(reads["env"])
    assert reads["env"]["BY_POSIX"] is not None and reads["env"]["BY_GETENV"] is None
    assert "HOME" not in reads["env"] and "PATH" not in reads["env"]   # only copied
    assert os.devnull not in reads["files"] and os.devnull not in reads["exists"]


C_LEVEL_READ = '''
import ctypes
libc = ctypes.CDLL(None)
libc.fopen.restype = ctypes.c_void_p
libc.fopen.argtypes = [ctypes.c_char_p, ctypes.c_char_p]
libc.fgets.argtypes = [ctypes.c_char_p, ctypes.c_int, ctypes.c_void_p]
libc.fclose.argtypes = [ctypes.c_void_p]
handle = libc.fopen(b"hidden.txt", b"r")   # opened in C: no audit event, no wrapper sees it
text = ctypes.create_string_buffer(64)
libc.fgets(text, 64, handle)
libc.fclose(handle)
drop = float(text.value)
'''


def test_a_read_the_tracking_cannot_see_is_caught_by_the_verify_sample(
        pytester: pytest.Pytester, tmp_path_factory) -> None:
    from pytest_graphnetz.base.text import NOT_REPRODUCED

    pytester.makepyfile(project=PROJECT, test_scripts=GATES,
                        train=TRAIN.format(read=C_LEVEL_READ))
    hidden = pytester.path / "hidden.txt"
    hidden.write_text("0.0\n")
    cache = tmp_path_factory.mktemp("cache")
    args = ["-o", "graphnetz_seeds=5", f"--graphnetz-cache-dir={cache}", "-p",
            "no:cacheprovider"]   # the verify sample at its default: one seed per cached cell
    pytester.runpytest(*args, "--graphnetz-update-baselines").assert_outcomes(passed=1)
    again = pytester.runpytest(*args, "-rA")
    again.assert_outcomes(passed=1)
    assert NOT_REPRODUCED not in again.stdout.str()
    assert "triples: 0 trained, 5 from cache (1 of them retrained to check the cache)" in \
        again.stdout.str(), again.stdout.str()
    hidden.write_text("0.05\n")   # a 5-point drop the key cannot see
    changed = pytester.runpytest(*args)
    out = changed.stdout.str()
    assert changed.ret == 1 and re.search(r"t/A\s.*REGRESSED", out), out
    assert NOT_REPRODUCED in " ".join(out.split()), out   # on the row, and in the summary:
    assert f"in 1 cell(s) {NOT_REPRODUCED}, so every seed of those cells was retrained" in out
