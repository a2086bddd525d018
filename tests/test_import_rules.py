"""No module of pytest_graphnetz uses another module's private names (``_x``): a boundary that
needs one is in the wrong place (give the name a public spelling in the module that owns it).
Import cycles and layers are import-linter's job (``lint-imports``, contracts in pyproject.toml,
run by .ci/run); it cannot see names, hence this check. Within one package (``stats``) the
modules share their private helpers."""

from __future__ import annotations

import ast
from pathlib import Path

PACKAGE = Path(__file__).resolve().parents[1] / "pytest_graphnetz"


def _module(path: Path) -> str:
    parts = path.relative_to(PACKAGE.parent).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def _resolve(importer: str, is_package: bool, node: ast.ImportFrom) -> str:
    if not node.level:
        return node.module or ""
    base = importer.split(".")
    base = base if is_package else base[:-1]
    base = base[:len(base) - (node.level - 1)]
    return ".".join([*base, *([node.module] if node.module else [])])


def _owner(module: str) -> str:
    """The unit a private name may be shared within: a subpackage, or a top-level module."""
    parts = module.split(".")
    return ".".join(parts[:2])


def private_uses(path: Path) -> list[str]:
    """``from X import _y`` and ``X._y`` (X a first-party module bound by an import) in ``path``
    where X's unit is not the importer's."""
    importer = _module(path)
    tree = ast.parse(path.read_text(encoding="utf-8"))
    bound: dict[str, str] = {}
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom):
            source = _resolve(importer, path.name == "__init__.py", node)
            if not source.startswith("pytest_graphnetz"):
                continue
            for alias in node.names:
                full = f"{source}.{alias.name}"
                bound[alias.asname or alias.name] = full
                private = alias.name.startswith("_") and not alias.name.startswith("__")
                if private and _owner(source) != _owner(importer):
                    found.append(f"{importer}:{node.lineno} imports {full}")
                elif _owner(full) != _owner(importer) and any(
                        p.startswith("_") and p != "__init__" for p in full.split(".")[1:-1]):
                    found.append(f"{importer}:{node.lineno} imports from private module {source}")
    for node in ast.walk(tree):
        if (isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name)
                and node.value.id in bound and node.attr.startswith("_")
                and not node.attr.startswith("__")
                and _owner(bound[node.value.id]) != _owner(importer)):
            found.append(f"{importer}:{node.lineno} uses {bound[node.value.id]}.{node.attr}")
    return found


def test_no_module_uses_another_modules_private_names():
    found = [use for path in sorted(PACKAGE.rglob("*.py")) for use in private_uses(path)]
    assert not found, "\n".join(found)


def test_the_check_sees_both_spellings(tmp_path):
    # a scratch copy of the rule's two cases, placed as if it were a module of the package
    probe = PACKAGE / "_probe_private_uses.py"
    probe.write_text("from . import gates\nfrom .stats._common import resolve_rng\n"
                     "from .gates import _verdict_name\nx = gates._PASSES\n", encoding="utf-8")
    try:
        found = private_uses(probe)
    finally:
        probe.unlink()
    assert len(found) == 3, found


def test_no_import_cycle_anywhere_in_the_package() -> None:
    """import-linter's layer contracts cover the top level and four subpackages; this covers
    every module pair: no module imports one that (directly or not) imports it back, outside
    TYPE_CHECKING (grimp, import-linter's own import graph)."""
    import grimp

    graph = grimp.build_graph("pytest_graphnetz", exclude_type_checking_imports=True)
    cycles = sorted({tuple(sorted((a, b))) for a in graph.modules
                     for b in graph.find_modules_directly_imported_by(a)
                     if graph.chain_exists(importer=b, imported=a)})
    assert cycles == [], cycles
    # the check can fail: the graph sees the package's edges (gates import stats, not back)
    assert graph.chain_exists(importer="pytest_graphnetz.gates.cells",
                              imported="pytest_graphnetz.stats.decisions")
    assert not graph.chain_exists(importer="pytest_graphnetz.stats.decisions",
                                  imported="pytest_graphnetz.gates.cells")
