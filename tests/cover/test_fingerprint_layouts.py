"""A command task's cache key survives the layouts research projects really have.

Scratch projects with a real command task: a script importing ``src.models.gcn`` where no
folder has an ``__init__.py`` (a namespace package two and three levels deep), and a library
installed into the project with ``pip install --target`` (its ``*.dist-info`` beside it, a
namespace folder inside it, as ``sklearn.externals`` is). Each is gated in real pytest sessions:
the baseline, a rerun served from the cache, then an edit of the user's model module, which must
retrain and read REGRESSED. The library counts by its version, never as the user's code. A
failure to locate a module is an error naming it, never a bare ``KeyError``.
"""

from __future__ import annotations

import re
import sys
from pathlib import Path

import pytest

pytest.importorskip("torch_geometric")

# One copy of the plugin's classes for every session (pytester drops what a session imports).
import pytest_graphnetz.runner.command  # noqa: E402, F401
from pytest_graphnetz import assert_not_worse  # noqa: E402, F401
from pytest_graphnetz.runner import TripleError  # noqa: E402, F401
from pytest_graphnetz.runner.fingerprint import project_code_files, project_code_key  # noqa: E402
from pytest_graphnetz.runner.fingerprint.locate import FingerprintError  # noqa: E402

# the one-script project and its gate
from tests.helpers.command_projects import COMMAND_PROJECT as PROJECT  # noqa: E402
from tests.helpers.command_projects import DROP_TRAIN as TRAIN  # noqa: E402
from tests.helpers.command_projects import SCRIPT_GATES as GATES  # noqa: E402

# layout: (files of the project, the script's imports, the user module a drop is made in)
LAYOUTS = {
    "namespace two deep": (
        {"src/models/gcn.py": "DROP = 0.0\n"},
        "from src.models.gcn import DROP", "src/models/gcn.py"),
    "namespace three deep over a package": (
        {"src/models/conv/__init__.py": "", "src/models/conv/gcn.py": "DROP = 0.0\n"},
        "from src.models.conv.gcn import DROP", "src/models/conv/gcn.py"),
    "pip --target library beside the script": (
        {"fakelib/__init__.py": "SCALE = 1.0\n",
         "fakelib/externals/helpers.py": "def scale(x):\n    return x\n",
         "fakelib-1.2.dist-info/METADATA": "Metadata-Version: 2.1\nName: fakelib\n"
                                           "Version: 1.2\n",
         "fakelib-1.2.dist-info/RECORD": "fakelib/__init__.py,,\n"
                                         "fakelib/externals/helpers.py,,\n"
                                         "fakelib-1.2.dist-info/METADATA,,\n",
         "model.py": "from fakelib.externals.helpers import scale\nDROP = scale(0.0)\n"},
        "from model import DROP", "model.py"),
}


def write(root: Path, files: dict[str, str]) -> None:
    for name, text in files.items():
        (root / name).parent.mkdir(parents=True, exist_ok=True)
        (root / name).write_text(text)


@pytest.mark.parametrize("layout", list(LAYOUTS))
def test_a_command_task_in_each_layout_is_gated_and_an_edit_regresses(
        pytester: pytest.Pytester, tmp_path_factory, layout: str) -> None:
    files, imports, model = LAYOUTS[layout]
    write(pytester.path, files)
    pytester.makepyfile(project=PROJECT, test_scripts=GATES, train=TRAIN.format(imports=imports))
    cache = tmp_path_factory.mktemp("cache")
    args = ["-o", "graphnetz_seeds=3", f"--graphnetz-cache-dir={cache}",
            "--graphnetz-verify-cache=0", "-p", "no:cacheprovider"]
    first = pytester.runpytest(*args, "--graphnetz-update-baselines")
    first.assert_outcomes(passed=1)
    again = pytester.runpytest(*args, "-rA")
    again.assert_outcomes(passed=1)
    assert re.search(r"\(0 trained, 3 from cache\)", again.stdout.str()), again.stdout.str()
    path = pytester.path / model
    path.write_text(path.read_text().replace("DROP = ", "DROP = 0.05 + "))
    changed = pytester.runpytest(*args)
    assert changed.ret == 1 and re.search(r"t/A\s.*REGRESSED", changed.stdout.str()), \
        f"{layout}: the edit of {model} was not seen:\n{changed.stdout.str()}"


@pytest.mark.parametrize("layout", list(LAYOUTS))
def test_the_key_holds_the_users_modules_and_no_library_file(tmp_path, layout: str) -> None:
    files, imports, model = LAYOUTS[layout]
    write(tmp_path, files)
    script = tmp_path / "train.py"
    script.write_text(TRAIN.format(imports=imports))
    held = {Path(f).relative_to(tmp_path).as_posix() for f in project_code_files([script])}
    users = {f for f in files if f.endswith(".py") and not f.startswith("fakelib")}
    assert model in users and held == {"train.py", *users}, held


def test_a_target_library_counts_by_the_version_beside_it(tmp_path) -> None:
    files, imports, _ = LAYOUTS["pip --target library beside the script"]
    write(tmp_path, files)
    script = tmp_path / "train.py"
    script.write_text(TRAIN.format(imports=imports))
    before = project_code_key([script])
    (tmp_path / "fakelib" / "externals" / "helpers.py").write_text(
        "def scale(x):\n    return 2 * x  # a library's code counts by its version\n")
    assert project_code_key([script]) == before
    # an upgrade, as pip does it: the old *.dist-info goes, the new one comes
    info = (tmp_path / "fakelib-1.2.dist-info").rename(tmp_path / "fakelib-1.3.dist-info")
    (info / "METADATA").write_text((info / "METADATA").read_text().replace("1.2", "1.3"))
    assert project_code_key([script]) != before


def test_a_module_that_cannot_be_located_is_named_not_a_bare_key_error(
        tmp_path, monkeypatch) -> None:
    (tmp_path / "pkg").mkdir()
    script = tmp_path / "train.py"
    script.write_text("from pkg.model import GCN\n")

    class Broken:   # an import hook's own bug, as a KeyError deep in importlib was
        def find_spec(self, name, target=None):
            raise KeyError(name)

    monkeypatch.setitem(sys.path_importer_cache, str(tmp_path), Broken())
    with pytest.raises(FingerprintError) as raised:
        project_code_key([script])
    message = str(raised.value)
    assert "`pkg`" in message and "KeyError" in message and str(script) in message, message


def test_an_import_hook_that_fails_is_named_with_the_module(tmp_path, monkeypatch) -> None:
    script = tmp_path / "train.py"
    script.write_text("import nowhere_to_be_found\n")

    class BrokenHook:   # an editable install's finder with a bug
        def find_spec(self, name, path=None, target=None):
            raise AttributeError("'NoneType' object has no attribute 'get'")

    monkeypatch.setattr(sys, "meta_path", [*sys.meta_path, BrokenHook()])
    with pytest.raises(FingerprintError, match=r"`nowhere_to_be_found`.*import hook.*"
                                               r"AttributeError") as raised:
        project_code_key([script])
    assert str(script) in str(raised.value)
