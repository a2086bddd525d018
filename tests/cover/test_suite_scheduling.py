"""How this suite is laid out (tests/README.md) and split into tiers (tests/conftest.py).

Folders by concept: tests/cover (each unit's tests, one file per unit), tests/nocover (files
whose every test costs seconds), tests/quality (statistical quality: rates, harness runs). Every
test file lies in one of them under a name no other test file has; no unit has a fast/slow pair
of files; a wholly slow file in tests/cover belongs in tests/nocover; helper modules are named
by what they hold, not after a test file, and their fixtures reach tests through
``pytest_plugins``, never rebound in a test file; no test file imports another. The slow tier
is the mark `slow`: ``-m "not slow"`` leaves out the marked tests and every test under
tests/nocover."""

from __future__ import annotations

import ast
import re
from collections import Counter
from pathlib import Path

import pytest

from tests.helpers.sessions import suite_conftest

TESTS = Path(__file__).resolve().parents[1]
FOLDERS = ("cover", "nocover", "quality")


def fixtures_of(helper: Path) -> set[str]:
    """The names of the fixtures a helper module defines."""
    tree = ast.parse(helper.read_text(encoding="utf-8"))
    return {node.name for node in tree.body if isinstance(node, ast.FunctionDef)
            and any("fixture" in ast.unparse(d) for d in node.decorator_list)}


def plugins_of(conftest: Path) -> list[str]:
    """The modules a conftest lists in ``pytest_plugins``."""
    for node in ast.parse(conftest.read_text(encoding="utf-8")).body:
        if isinstance(node, ast.Assign) and ast.unparse(node.targets[0]) == "pytest_plugins":
            return list(ast.literal_eval(node.value))
    return []


def wholly_slow(test_file: Path) -> bool:
    """Whether a test file marks all of itself slow (a module-level ``pytestmark``)."""
    return any(isinstance(node, ast.Assign) and ast.unparse(node.targets[0]) == "pytestmark"
               and "slow" in ast.unparse(node.value)
               for node in ast.parse(test_file.read_text(encoding="utf-8")).body)


def layout_problems(tests: Path) -> list[str]:
    """Every way the tree under ``tests`` breaks the layout's rules, one line each."""
    problems = []
    files = sorted(p for p in tests.rglob("test_*.py") if "__pycache__" not in p.parts)
    problems += [f"{p.relative_to(tests)}: outside tests/{{{','.join(FOLDERS)}}}" for p in files
                 if p.parent.name not in FOLDERS or p.parent.parent != tests]
    # pytest's default import mode imports a test file by its bare name (no __init__.py here)
    problems += [f"{name}: a name two test files share"
                 for name, n in Counter(p.name for p in files).items() if n > 1]
    problems += [f"{p.relative_to(tests)}: a package marker in a test folder"
                 for folder in FOLDERS for p in (tests / folder).glob("__init__.py")]
    problems += [f"{p.relative_to(tests)}: a second conftest (one conftest, tests/conftest.py)"
                 for p in tests.glob("*/**/conftest.py")]
    problems += [f"{p.relative_to(tests)}: a slow twin (mark the unit's slow tests instead)"
                 for p in files if p.stem.endswith(("_slow", "_fast"))]
    problems += [f"{p.relative_to(tests)}: every test marked slow (move it to tests/nocover)"
                 for p in files if p.parent.name == "cover" and wholly_slow(p)]
    units = {p.stem.removeprefix("test_") for p in files}
    helpers = sorted(p for p in (tests / "helpers").glob("*.py") if p.name != "__init__.py")
    problems += [f"helpers/{p.name}: named after a test file (name it by what it holds)"
                 for p in helpers if p.stem in units]
    fixtures = {f"tests.helpers.{p.stem}": fixtures_of(p) for p in helpers}
    listed = set(plugins_of(tests / "conftest.py"))
    problems += [f"{module}: has fixtures and is not in tests/conftest.py's pytest_plugins"
                 for module, names in fixtures.items() if names and module not in listed]
    test_modules = {p.stem for p in files} | {f"tests.{p.parent.name}.{p.stem}" for p in files}
    for p in files:
        for node in ast.walk(ast.parse(p.read_text(encoding="utf-8"))):
            if isinstance(node, ast.ImportFrom) and node.module in fixtures:
                problems += [f"{p.relative_to(tests)}: rebinds the fixture {a.name}"
                             for a in node.names if a.name in fixtures[node.module]]
            imported = ([a.name for a in node.names] if isinstance(node, ast.Import)
                        else [node.module] if isinstance(node, ast.ImportFrom) else [])
            problems += [f"{p.relative_to(tests)}: imports the test file {name} (share through "
                         "tests/helpers)" for name in imported if name in test_modules]
    return problems


def test_every_test_file_lies_in_a_tier_folder_under_a_name_of_its_own():
    assert layout_problems(TESTS) == []


def readme_problems(tests: Path) -> list[str]:
    """Where tests/README.md's sections per folder (``## cover/: ...``) and the folders differ:
    a test file no table names, or a name no file has."""
    sections = re.split(r"^## ", (tests / "README.md").read_text(encoding="utf-8"), flags=re.M)
    named = {s.split("/", 1)[0]: set(re.findall(r"`(test_\w+\.py)`", s)) for s in sections
             if s.split("/", 1)[0] in FOLDERS}
    problems = []
    for folder in FOLDERS:
        there = {p.name for p in (tests / folder).glob("test_*.py")}
        listed = named.get(folder, set())
        problems += [f"{folder}/{name}: not in tests/README.md" for name in sorted(there - listed)]
        problems += [f"{folder}/{name}: in tests/README.md, not on disk"
                     for name in sorted(listed - there)]
    return problems


def test_the_readme_names_every_test_file_in_its_folder(tmp_path: Path):
    assert readme_problems(TESTS) == []
    for folder in FOLDERS:
        (tmp_path / folder).mkdir()
    (tmp_path / "cover" / "test_new.py").write_text("")
    (tmp_path / "README.md").write_text("## cover/: units\n`test_gone.py`\n")
    assert readme_problems(tmp_path) == ["cover/test_new.py: not in tests/README.md",
                                         "cover/test_gone.py: in tests/README.md, not on disk"]


def test_each_rule_of_the_layout_fails_on_its_violation(tmp_path: Path):
    tests = tmp_path / "tests"
    for folder in (*FOLDERS, "helpers", "slow"):
        (tests / folder).mkdir(parents=True)
    (tests / "conftest.py").write_text('pytest_plugins = ["tests.helpers.listed"]\n')
    fixture = "import pytest\n\n\n@pytest.fixture\ndef {}():\n    return 1\n"
    (tests / "helpers" / "listed.py").write_text(fixture.format("shared"))
    (tests / "helpers" / "unlisted.py").write_text(fixture.format("hidden"))
    (tests / "helpers" / "units.py").write_text("")
    files = {"cover/test_units.py": "from tests.helpers.listed import shared\n",
             "quality/test_other.py": "from tests.cover.test_units import X\nimport test_whole\n",
             "cover/test_units_slow.py": "", "nocover/test_units.py": "",
             "cover/test_whole.py": "import pytest\n\npytestmark = pytest.mark.slow\n",
             "slow/test_old_tier.py": "", "quality/__init__.py": "",
             "quality/conftest.py": ""}
    for name, text in files.items():
        (tests / name).write_text(text)
    assert sorted(layout_problems(tests)) == sorted([
        "slow/test_old_tier.py: outside tests/{cover,nocover,quality}",
        "test_units.py: a name two test files share",
        "quality/__init__.py: a package marker in a test folder",
        "quality/conftest.py: a second conftest (one conftest, tests/conftest.py)",
        "cover/test_units_slow.py: a slow twin (mark the unit's slow tests instead)",
        "cover/test_whole.py: every test marked slow (move it to tests/nocover)",
        "helpers/units.py: named after a test file (name it by what it holds)",
        "tests.helpers.unlisted: has fixtures and is not in tests/conftest.py's pytest_plugins",
        "cover/test_units.py: rebinds the fixture shared",
        "quality/test_other.py: imports the test file tests.cover.test_units (share through "
        "tests/helpers)",
        "quality/test_other.py: imports the test file test_whole (share through tests/helpers)"])


def test_not_slow_leaves_out_marked_tests_and_nocover(pytester: pytest.Pytester):
    pytester.makeconftest(suite_conftest())
    pytester.makeini('[pytest]\nmarkers =\n    slow: the slow tier\n')
    plain = "def test_a():\n    pass\n"
    marked = "import pytest\n\n\n@pytest.mark.slow\ndef test_b():\n    pass\n"
    for folder, text in (("cover", plain + "\n\n" + marked), ("nocover", plain),
                         ("quality", plain)):
        (pytester.path / folder).mkdir()
        (pytester.path / folder / f"test_{folder}_one.py").write_text(text)
    # In a subprocess: the scratch conftest is a second module named `conftest`.
    fast = pytester.runpytest_subprocess("-m", "not slow", "-p", "no:cacheprovider", "-v")
    fast.assert_outcomes(passed=2, deselected=2)
    fast.stdout.fnmatch_lines_random(["cover/test_cover_one.py::test_a PASSED*",
                                      "quality/test_quality_one.py::test_a PASSED*"])
    slow = pytester.runpytest_subprocess("-m", "slow", "-p", "no:cacheprovider", "-v")
    slow.assert_outcomes(passed=2, deselected=2)
    slow.stdout.fnmatch_lines_random(["cover/test_cover_one.py::test_b PASSED*",
                                      "nocover/test_nocover_one.py::test_a PASSED*"])


# -- costs seconds each (marked slow) ----------------------------------------------------------
# ``-n`` hands out whole files (tests/conftest.py), so a file's module-scoped fixture is
# built once: checked in a real ``-n 2`` session.


# A scratch session with this suite's scheduler hook (and none of its fixtures).
CONFTEST = f"""
import importlib.util

spec = importlib.util.spec_from_file_location("suite_conftest", {str(TESTS / "conftest.py")!r})
suite = importlib.util.module_from_spec(spec)
spec.loader.exec_module(suite)
pytest_xdist_make_scheduler = suite.pytest_xdist_make_scheduler
"""


@pytest.mark.slow
def test_dash_n_hands_out_whole_files_so_a_module_fixture_is_built_once(
        pytester: pytest.Pytester):
    pytest.importorskip("xdist")
    built = pytester.path / "built"
    built.mkdir()
    shared = f"""
import os
import pytest


@pytest.fixture(scope="module")
def fixture_of_the_file():
    with open(os.path.join({str(built)!r}, __name__), "a") as f:
        f.write(os.environ["PYTEST_XDIST_WORKER"] + "\\n")


@pytest.mark.parametrize("i", range(6))
def test_uses_it(fixture_of_the_file, i):
    pass
"""
    pytester.makeconftest(CONFTEST)
    pytester.makepyfile(test_one=shared, test_two=shared)
    result = pytester.runpytest_inprocess("-n", "2", "-p", "no:cacheprovider")
    result.assert_outcomes(passed=12)
    for module in ("test_one", "test_two"):
        # One line: one worker built it (xdist's default, one test at a time, builds it twice).
        assert len((built / module).read_text().split()) == 1, module


def test_a_bare_pytest_collects_the_suite_from_anywhere(tmp_path: Path):
    """The `pytest` script (not `python -m pytest`, which puts the working directory on
    sys.path) finds tests/conftest.py's `tests.helpers.*` plugins from another directory:
    pyproject's ``pythonpath``. A test file is collected, not run."""
    import os
    import subprocess
    import sys

    script = Path(sys.executable).with_name("pytest")
    if not script.exists():
        pytest.skip(f"no pytest script beside {sys.executable}")
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    done = subprocess.run([str(script), "--collect-only", "-q", "-p", "no:cacheprovider",
                           str(TESTS / "cover" / "test_text.py")], cwd=tmp_path, env=env,
                          capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stdout + done.stderr
    assert "tests collected" in done.stdout or "test_text.py::" in done.stdout, done.stdout
