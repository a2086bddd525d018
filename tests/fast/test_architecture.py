"""The architecture table (docs/architecture.md) lists every module of the package, and every
module keeps to one job its docstring names, in at most 500 lines, under a file name no
other module has: the map a maintainer reads first cannot fall behind the code."""

from __future__ import annotations

import ast
import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
PACKAGE = ROOT / "pytest_graphnetz"
MAX_LINES = 500


def modules() -> list[Path]:
    return sorted(p for p in PACKAGE.rglob("*.py") if "__pycache__" not in p.parts)


ARCHITECTURE = ROOT / "docs" / "architecture.md"


def architecture_rows() -> dict[str, str]:
    """``{first cell: the whole row}`` of the architecture table (docs/architecture.md)."""
    text = ARCHITECTURE.read_text(encoding="utf-8")
    start = text.index("| layer | modules |")
    rows = {}
    for line in text[start:].splitlines():
        if line.startswith("|") and not line.startswith("|---"):
            cells = [c.strip() for c in line.strip("|").split("|")]
            rows[cells[0]] = line
        elif rows and not line.startswith("|"):
            break
    return rows


def listed(row: str) -> set[str]:
    return set(re.findall(r"`([\w./]+)`", row))


def test_the_architecture_table_lists_every_module():
    rows = architecture_rows()
    missing = []
    for path in modules():
        rel = path.relative_to(PACKAGE)
        if rel.name == "__init__.py" and len(rel.parts) == 1:
            continue   # the package itself: the public API, README's first screen
        if len(rel.parts) == 1:
            name = rel.stem
            if not any(name in listed(r) for first, r in rows.items()):
                missing.append(str(rel))
            continue
        sub = f"`{'/'.join(rel.parts[:-1])}/`"   # the row of the module's own folder
        row = next((r for first, r in rows.items() if sub in first), None)
        name = rel.parent.name if rel.name == "__init__.py" else rel.stem
        if row is None or (rel.name != "__init__.py" and name not in listed(row)):
            missing.append(str(rel))
    assert not missing, ("modules the architecture table (docs/architecture.md) does not name "
                         "(add them to their layer's row): " + ", ".join(missing))


MAX_TOP_LEVEL_MODULES = 6
LAYER = re.compile(r"^Layer (\d) of (\d)\b")


def layer_folders() -> list[Path]:
    return sorted(p.parent for p in PACKAGE.glob("*/__init__.py"))


def test_the_top_level_is_the_layers_folders_and_a_few_modules():
    top = [p.name for p in PACKAGE.glob("*.py") if p.name != "__init__.py"]
    assert len(top) <= MAX_TOP_LEVEL_MODULES, f"top-level modules (move them into a layer): {top}"
    numbers = {}
    for folder in layer_folders():
        doc = ast.get_docstring(ast.parse((folder / "__init__.py").read_text(encoding="utf-8")))
        match = LAYER.match(doc or "")
        assert match, f"{folder.name}/__init__.py: its docstring must start 'Layer N of M'"
        assert "import" in doc, f"{folder.name}/__init__.py: say what the layer may import"
        numbers[folder.name] = int(match.group(1))
        assert int(match.group(2)) == len(layer_folders()), f"{folder.name}: M is the layer count"
    # The folders' numbers are the order of the top-level import contract (pyproject.toml).
    contract = re.search(r'containers = \["pytest_graphnetz"\]\nlayers = \[(.*?)\]',
                         (ROOT / "pyproject.toml").read_text(encoding="utf-8"), re.S)
    order = [name.strip() for layer in re.findall(r'"([^"]+)"', contract.group(1))
             for name in layer.split("|")]
    assert [n for n in order if n in numbers] == sorted(numbers, key=lambda n: -numbers[n])
    assert sorted(numbers.values()) == list(range(1, len(numbers) + 1)), numbers


def test_every_module_has_a_docstring_and_at_most_500_lines():
    long = {str(p.relative_to(ROOT)): n for p in modules()
            if (n := len(p.read_text(encoding="utf-8").splitlines())) > MAX_LINES}
    bare = [str(p.relative_to(ROOT)) for p in modules()
            if not ast.get_docstring(ast.parse(p.read_text(encoding="utf-8")))]
    assert not long, f"modules over {MAX_LINES} lines (split them by job): {long}"
    assert not bare, f"modules without a docstring naming their job: {bare}"


def shared_file_names(paths: list[Path]) -> dict[str, list[str]]:
    """``{file name: the modules that carry it}`` for every name two modules share
    (``__init__.py`` apart): a name in an import or a traceback then says which module it is."""
    seen: dict[str, list[str]] = {}
    for path in paths:
        if path.name != "__init__.py":
            seen.setdefault(path.name, []).append(str(path.relative_to(PACKAGE)))
    return {name: where for name, where in seen.items() if len(where) > 1}


def test_no_two_modules_share_a_file_name():
    shared = shared_file_names(modules())
    assert not shared, f"modules that share a file name (rename one of each): {shared}"
    doubled = [PACKAGE / "stats" / "suite.py", PACKAGE / "gates" / "suite.py",
               PACKAGE / "gates" / "__init__.py", PACKAGE / "stats" / "__init__.py"]
    assert shared_file_names(doubled) == {"suite.py": ["stats/suite.py", "gates/suite.py"]}


# The gates' public functions keep the keyword signatures DESIGN.md fixes; below them a call's
# settings travel as one GateSpec, so no internal function needs a long parameter list.
PUBLIC_GATE_FUNCTIONS = {"assert_not_worse", "assert_better", "assert_equivalent",
                         "assert_ci_width", "compare_reports", "tune", "run_adaptive"}
MAX_INTERNAL_PARAMETERS = 8


def parameter_counts(path: Path) -> dict[str, int]:
    """``{function name: its parameter count}`` for every function defined in ``path``."""
    counts = {}
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            a = node.args
            counts[node.name] = (len(a.posonlyargs) + len(a.args) + len(a.kwonlyargs)
                                 + (a.vararg is not None) + (a.kwarg is not None))
    return counts


def test_gate_settings_travel_as_one_spec_not_long_parameter_lists():
    long = {f"{path.name}:{name}": n for path in sorted((PACKAGE / "gates").glob("*.py"))
            for name, n in parameter_counts(path).items()
            if name not in PUBLIC_GATE_FUNCTIONS and n > MAX_INTERNAL_PARAMETERS}
    assert not long, (f"internal gate functions over {MAX_INTERNAL_PARAMETERS} parameters "
                      f"(pass the call's GateSpec, gates/spec.py): {long}")
    assert parameter_counts(PACKAGE / "gates" / "api.py")["assert_not_worse"] > \
        MAX_INTERNAL_PARAMETERS   # the check counts what it should


def test_the_checks_can_fail():
    assert "foo" not in {n for r in architecture_rows().values() for n in listed(r)}
    assert listed("| `stats/` | `boundaries`, `decisions` |") == {"stats/", "boundaries",
                                                                    "decisions"}
