"""Private names stay in their module: a name ``_x`` (not a dunder) is used only in the module that
defines it, and a module ``_m.py`` is private to its package (its public names are imported by the
modules of that package only). A boundary that needs another module's private name is in the wrong
place: give the name a public spelling in the module that owns it. The rule covers the first-party
code, pytest_graphnetz/, tests/ and benchmarks/ (a test or benchmark imports no private name either,
not even another test's); stdlib and third-party privates (``sys._getframe``) are not ours. It
is about a module's names: an object's private attributes (``obj._x``) are its class's business.

Import cycles and layers are import-linter's job (``lint-imports``, contracts in pyproject.toml,
run by .ci/run); it cannot see names, hence this check. .ci/run also runs this file on its own
(``python tests/cover/test_import_rules.py``) before the suite."""

from __future__ import annotations

import ast
import re
import sys
from collections.abc import Iterator
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
TREES = ("pytest_graphnetz", "tests", "benchmarks")
# tests/ and benchmarks/ are directories of scripts, not packages: pytest and the benchmark
# scripts put a file's own directory (and pytest the conftest's) on sys.path, so ``import
# conftest`` / ``from _timing import`` there mean the file beside it or in a folder above.
SCRIPT_TREES = ("tests", "benchmarks")
_ATTRIBUTE_CALLS = {"getattr", "setattr", "hasattr", "delattr"}
_DOTTED = re.compile(r"(?:pytest_graphnetz|tests|benchmarks)(?:\.\w+)+")  # TREES, dotted


def module_name(path: Path, root: Path = ROOT) -> str:
    parts = path.relative_to(root).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def source_files(root: Path = ROOT) -> list[Path]:
    return sorted(p for tree in TREES for p in (root / tree).rglob("*.py")
                  if "__pycache__" not in p.parts)


def first_party_modules(root: Path = ROOT) -> frozenset[str]:
    return frozenset({*TREES, *(module_name(p, root) for p in source_files(root))})


def _private(name: str) -> bool:
    return name.startswith("_") and not (name.startswith("__") and name.endswith("__"))


def _module_scope(module: str) -> str | None:
    """The package a private module (one with a ``_m`` part) is private to; None if public."""
    parts = module.split(".")
    private = [i for i, part in enumerate(parts) if i and _private(part)]
    return ".".join(parts[:private[-1]]) if private else None


def _may_use_module(importer: str, module: str) -> bool:
    scope = _module_scope(module)
    return scope is None or importer == scope or importer.startswith(scope + ".")


class _Uses:
    """The crossings found in one module's source."""

    def __init__(self, importer: str, is_package: bool, modules: frozenset[str]) -> None:
        self.importer, self.is_package, self.modules = importer, is_package, modules
        self.found: list[str] = []

    def absolute(self, module: str, level: int) -> str:
        if level:
            base = self.importer.split(".")
            base = base if self.is_package else base[:-1]
            base = base[:len(base) - (level - 1)]
            return ".".join([*base, *([module] if module else [])])
        top = self.importer.split(".")[0]
        if top in SCRIPT_TREES and module.split(".")[0] not in TREES:
            # the file's own folder, then the folders above it in its tree: tests/conftest.py
            # puts tests/ on sys.path for the files in its folders (cover, nocover, quality)
            folder = self.importer.split(".")[:-1]
            while folder:
                sibling = ".".join([*folder, module])
                if any(m == sibling or m.startswith(sibling + ".") for m in self.modules):
                    return sibling
                folder = folder[:-1]
        return module

    def module(self, module: str, line: int, how: str) -> None:
        if not _may_use_module(self.importer, module):
            self.found.append(f"{self.importer}:{line} {how} private module {module}")

    def name(self, module: str, name: str, line: int, how: str) -> None:
        """``name`` of first-party ``module``, referred to at ``line``."""
        full = f"{module}.{name}"
        if full in self.modules:
            self.module(full, line, how)
        else:
            if _private(name) and module != self.importer:
                self.found.append(f"{self.importer}:{line} {how} {full}")
            self.module(module, line, how)

    def first_party(self, module: str) -> bool:
        return module.split(".")[0] in TREES


def _dotted(node: ast.expr) -> list[str] | None:
    parts = []
    while isinstance(node, ast.Attribute):
        parts.append(node.attr)
        node = node.value
    if not isinstance(node, ast.Name):
        return None
    return [node.id, *reversed(parts)]


def private_uses(source: str, module: str, modules: frozenset[str] | None = None,
                 is_package: bool = False) -> list[str]:
    """The private names of other first-party modules, and the private modules outside their
    package, that ``source`` (the text of ``module``) uses: ``from X import _y``, ``import X._m``,
    ``X._y``, ``getattr(X, "_y")`` / ``monkeypatch.setattr(X, "_y", ...)`` and the string
    ``"X._y"``, X a first-party module. ``modules``: the first-party module names (by default,
    this repository's)."""
    uses = _Uses(module, is_package, first_party_modules() if modules is None else modules)
    tree = ast.parse(source)
    bound: dict[str, str] = {}  # a local name -> the first-party module it is bound to
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for alias in node.names:
                target = uses.absolute(alias.name, 0)
                if not uses.first_party(target):
                    continue
                uses.module(target, node.lineno, "imports")
                if alias.asname:
                    bound[alias.asname] = target
                else:
                    bound[alias.name.split(".")[0]] = target.rsplit(".", alias.name.count("."))[0]
        elif isinstance(node, ast.ImportFrom):
            source_module = uses.absolute(node.module or "", node.level)
            if not uses.first_party(source_module):
                continue
            for alias in node.names:
                if alias.name == "*":
                    uses.module(source_module, node.lineno, "imports from")
                    continue
                uses.name(source_module, alias.name, node.lineno, "imports")
                full = f"{source_module}.{alias.name}"
                if full in uses.modules:
                    bound[alias.asname or alias.name] = full
    for node in ast.walk(tree):
        if isinstance(node, ast.Attribute):
            chain = _dotted(node.value)
            if chain and chain[0] in bound:
                target = ".".join([bound[chain[0]], *chain[1:]])
                if target in uses.modules:
                    uses.name(target, node.attr, node.lineno, "uses")
        elif isinstance(node, ast.Call) and len(node.args) >= 2:
            func = node.func
            called = func.id if isinstance(func, ast.Name) else (
                func.attr if isinstance(func, ast.Attribute) else "")
            owner, attribute = node.args[0], node.args[1]
            chain = _dotted(owner) if isinstance(owner, ast.expr) else None
            if (called in _ATTRIBUTE_CALLS and chain and chain[0] in bound
                    and isinstance(attribute, ast.Constant) and isinstance(attribute.value, str)):
                target = ".".join([bound[chain[0]], *chain[1:]])
                if target in uses.modules:
                    uses.name(target, attribute.value, node.lineno, f"{called}s")
        if isinstance(node, ast.Call) and node.args and isinstance(node.args[0], ast.Constant) \
                and isinstance(node.args[0].value, str) and _DOTTED.fullmatch(node.args[0].value):
            # monkeypatch.setattr("X._y", ...), mock.patch("X._y"), import_module("X._m")
            parts = node.args[0].value.split(".")
            for cut in range(len(parts) - 1, 0, -1):
                if ".".join(parts[:cut]) in uses.modules:
                    uses.name(".".join(parts[:cut]), parts[cut], node.lineno, "names")
                    break
    return sorted(set(uses.found), key=lambda use: (int(use.split(":")[1].split()[0]), use))


def crossings(root: Path = ROOT) -> Iterator[str]:
    modules = first_party_modules(root)
    for path in source_files(root):
        yield from private_uses(path.read_text(encoding="utf-8"), module_name(path, root),
                                modules, path.name == "__init__.py")


def test_no_module_uses_another_modules_private_names():
    found = list(crossings())
    assert not found, "\n".join(found)


PROBE_MODULES = frozenset({
    "pytest_graphnetz", "pytest_graphnetz.gates", "pytest_graphnetz.stats",
    "pytest_graphnetz.stats._common", "pytest_graphnetz.stats.paired", "tests",
    "tests.test_a", "tests.test_b", "tests.helpers", "tests.conftest", "tests.cover.test_c",
    "benchmarks", "benchmarks._timing", "benchmarks.run"})


def test_the_check_sees_every_spelling():
    probe = ("import os\nfrom . import gates\nfrom .stats._common import resolve_rng\n"
             "from .gates import _verdict_name\nimport pytest_graphnetz.stats.paired as p\n"
             "x = gates._PASSES\ny = p._evidence\nz = getattr(p, '_Evidence')\n"
             "w = patch('pytest_graphnetz.stats.paired._floor')\nv = os._exit\n")
    found = private_uses(probe, "pytest_graphnetz.probe", PROBE_MODULES)
    assert [use.split(":")[1] for use in found] == [
        "3 imports private module pytest_graphnetz.stats._common",
        "4 imports pytest_graphnetz.gates._verdict_name",
        "6 uses pytest_graphnetz.gates._PASSES",
        "7 uses pytest_graphnetz.stats.paired._evidence",
        "8 getattrs pytest_graphnetz.stats.paired._Evidence",
        "9 names pytest_graphnetz.stats.paired._floor"], found


def test_the_check_allows_a_private_module_to_its_package_only():
    sibling = "from ._common import resolve_rng\nfrom . import _common\nx = _common.t\n"
    assert private_uses(sibling, "pytest_graphnetz.stats.paired", PROBE_MODULES) == []
    assert private_uses(sibling, "pytest_graphnetz.stats", PROBE_MODULES, is_package=True) == []
    # but not its private names, sibling or not
    assert len(private_uses("from ._common import _t\n", "pytest_graphnetz.stats.paired",
                            PROBE_MODULES)) == 1
    # a benchmark script imports its sibling private module by its bare name
    assert private_uses("from _timing import interleaved\n", "benchmarks.run",
                        PROBE_MODULES) == []
    assert len(private_uses("from benchmarks._timing import interleaved\n", "tests.test_a",
                            PROBE_MODULES)) == 1


def test_the_check_covers_tests_and_benchmarks():
    # a test's private helper is its own, from either spelling of the import
    for probe in ("from tests.test_a import _table\n", "from test_a import _table\n",
                  "import test_a\nx = test_a._table\n"):
        assert len(private_uses(probe, "tests.test_b", PROBE_MODULES)) == 1, probe
    assert private_uses("from tests.helpers import table\n", "tests.test_b",
                        PROBE_MODULES) == []
    # a test in a tier folder imports the conftest of the folder above by its bare name
    assert len(private_uses("from conftest import _tiny\n", "tests.cover.test_c",
                            PROBE_MODULES)) == 1
    assert {"tests.cover.test_import_rules", "benchmarks._timing",
            "pytest_graphnetz.stats.paired"} <= first_party_modules()


def import_cycles(package: str, cache_dir: str | None = None) -> list[list[str]]:
    """Every cycle of ``package``'s import graph, one shortest loop per importing edge that
    closes one: ``[a, b, ..., a]``. Every import counts, wherever it stands: at the top of a
    module, inside a function (a lazy import is still a dependency) and under TYPE_CHECKING (a
    type is one too). grimp builds the graph, import-linter's own."""
    import grimp

    graph = grimp.build_graph(package, exclude_type_checking_imports=False, cache_dir=cache_dir)
    loops = {}
    for a in sorted(graph.modules):
        for b in sorted(graph.find_modules_directly_imported_by(a)):
            back = graph.find_shortest_chain(importer=b, imported=a)
            if back:
                loop = [a, *back]
                loops[frozenset(loop)] = loop
    return sorted(loops.values())


def test_no_import_cycle_anywhere_in_the_package() -> None:
    """import-linter's layer contracts order the top level and the subpackages, runtime imports
    only; this covers every module pair and every import: no module imports one that (directly
    or not) imports it back, not lazily inside a function and not for a type annotation. A view
    takes the report (``report.record``); the report's methods call the views, never back."""
    import grimp

    cycles = import_cycles("pytest_graphnetz")
    assert cycles == [], "\n".join(" -> ".join(loop) for loop in cycles)
    # the graph holds the package's lazy and TYPE_CHECKING edges (the two kinds a cycle hid in)
    graph = grimp.build_graph("pytest_graphnetz", exclude_type_checking_imports=False)
    assert graph.direct_import_exists(importer="pytest_graphnetz.report.model",
                                      imported="pytest_graphnetz.report.export")      # in a method
    assert graph.direct_import_exists(importer="pytest_graphnetz.report.views",
                                      imported="pytest_graphnetz.report.record")  # a type
    assert not graph.chain_exists(importer="pytest_graphnetz.report.record",
                                  imported="pytest_graphnetz.report.views")


def test_the_cycle_check_sees_lazy_and_type_checking_imports(tmp_path, monkeypatch) -> None:
    """Two circles that only a lazy import or only a TYPE_CHECKING import closes are found."""
    package = tmp_path / "circles"
    package.mkdir()
    files = {
        "__init__.py": "",
        "a.py": "def f():\n    from . import b\n    return b\n",          # lazy a -> b
        "b.py": "from . import a\n",                                         # b -> a
        "c.py": "from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    from .d import D\n",
        "d.py": "from . import c\nclass D: ...\n",
        "e.py": "from . import d\n",                                          # no circle
    }
    for name, text in files.items():
        (package / name).write_text(text, encoding="utf-8")
    monkeypatch.syspath_prepend(str(tmp_path))
    cycles = import_cycles("circles", cache_dir=str(tmp_path / "cache"))
    assert sorted(map(frozenset, cycles)) == sorted([frozenset({"circles.a", "circles.b"}),
                                                     frozenset({"circles.c", "circles.d"})])


if __name__ == "__main__":
    # .ci/run: the private-name check alone, before the suite (no pytest, no conftest)
    found = list(crossings())
    print("\n".join(found) or "no module uses another module's private names")
    sys.exit(1 if found else 0)
