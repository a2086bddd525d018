"""The architecture table (docs/architecture.md) lists every module of the package, and every
module keeps to one job its docstring names, in at most 500 lines, under a file name no
other module has: the map a maintainer reads first cannot fall behind the code."""

from __future__ import annotations

import ast
import functools
import re
from pathlib import Path
from typing import Any

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
    long = {f"{path.name}:{name}": n for path in sorted((PACKAGE / "gates").rglob("*.py"))
            for name, n in parameter_counts(path).items()
            if name not in PUBLIC_GATE_FUNCTIONS and n > MAX_INTERNAL_PARAMETERS}
    assert not long, (f"internal gate functions over {MAX_INTERNAL_PARAMETERS} parameters "
                      f"(pass the call's GateSpec, gates/comparing/spec.py): {long}")
    assert parameter_counts(PACKAGE / "gates" / "api.py")["assert_not_worse"] > \
        MAX_INTERNAL_PARAMETERS   # the check counts what it should


# No function runs 80 lines or more (def line to last line, docstring included) or takes 10
# parameters or more (self and cls aside): a longer one does several jobs, a wider one carries
# settings that belong in one value. What remains over either limit is listed here, by
# "path:qualified name", with why; the list can only shrink (a name that is no longer over a
# limit must leave it, a new one cannot join it). A public keyword form is a thin wrapper: it
# builds the one spec value its internal entry takes and hands it on (at most
# MAX_WRAPPER_STATEMENTS statements).
MAX_FUNCTION_LINES = 80
MAX_PARAMETERS = 10
PUBLIC_FORM = "public keyword form"
WIDE_FUNCTIONS = {
    "gates/api.py:assert_not_worse": f"{PUBLIC_FORM} (DESIGN.md) over GateSpec",
    "gates/comparing/compare.py:compare_reports": f"{PUBLIC_FORM} (DESIGN.md) over GateSpec",
    "gates/tuning.py:tune": f"{PUBLIC_FORM} (README.md) over TuneSpec",
    "runner/sweep.py:run_benchmark": f"{PUBLIC_FORM} (DESIGN.md) over SweepSpec",
}
MAX_WRAPPER_STATEMENTS = 3

def wide_functions(source: str, where: str) -> dict[str, str]:
    """``{"where:qualified name": why}`` for every function in ``source`` (nested ones and
    methods too) of at least :data:`MAX_FUNCTION_LINES` lines or :data:`MAX_PARAMETERS`
    parameters."""
    out = {}

    def visit(node: ast.AST, prefix: str) -> None:
        for child in ast.iter_child_nodes(node):
            if isinstance(child, ast.ClassDef):
                visit(child, f"{prefix}{child.name}.")
            elif isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef)):
                a = child.args
                names = [x.arg for x in (*a.posonlyargs, *a.args, *a.kwonlyargs)]
                names = names[1:] if names[:1] in (["self"], ["cls"]) else names
                params = len(names) + (a.vararg is not None) + (a.kwarg is not None)
                lines = (child.end_lineno or child.lineno) - child.lineno + 1
                if lines >= MAX_FUNCTION_LINES or params >= MAX_PARAMETERS:
                    out[f"{where}:{prefix}{child.name}"] = f"{lines} lines, {params} parameters"
                visit(child, f"{prefix}{child.name}.")

    visit(ast.parse(source), "")
    return out


def test_no_new_long_or_wide_function_and_the_list_only_shrinks():
    found = {}
    for path in modules():
        where = path.relative_to(PACKAGE).as_posix()
        found.update(wide_functions(path.read_text(encoding="utf-8"), where))
    new = {name: why for name, why in found.items() if name not in WIDE_FUNCTIONS}
    assert not new, (f"functions of {MAX_FUNCTION_LINES}+ lines or {MAX_PARAMETERS}+ "
                     f"parameters: split them by job, or pass one value: {new}")
    gone = sorted(WIDE_FUNCTIONS.keys() - found.keys())
    assert not gone, f"no longer over a limit: remove them from WIDE_FUNCTIONS: {gone}"


def wrapper_statements(source: str, name: str) -> int:
    """How many statements the top-level function ``name`` of ``source`` runs, its docstring
    and ``__tracebackhide__`` aside."""
    (node,) = [n for n in ast.parse(source).body
               if isinstance(n, ast.FunctionDef) and n.name == name]
    return sum(1 for stmt in node.body
               if not (isinstance(stmt, ast.Expr) and isinstance(stmt.value, ast.Constant))
               and not (isinstance(stmt, ast.Assign)
                        and [getattr(t, "id", "") for t in stmt.targets] == ["__tracebackhide__"]))


def test_public_keyword_forms_are_thin_wrappers():
    public = [name for name, why in WIDE_FUNCTIONS.items() if why.startswith(PUBLIC_FORM)]
    assert len(public) == 4
    thick = {}
    for entry in public:
        where, name = entry.split(":")
        n = wrapper_statements((PACKAGE / where).read_text(encoding="utf-8"), name)
        if n > MAX_WRAPPER_STATEMENTS:
            thick[entry] = n
    assert not thick, (f"public keyword forms of over {MAX_WRAPPER_STATEMENTS} statements "
                       f"(build the spec, hand it on): {thick}")
    two = 'def f(a):\n    """doc"""\n    __tracebackhide__ = True\n    b = a\n    return b\n'
    assert wrapper_statements(two, "f") == 2
    assert wrapper_statements(two.replace("    b = a\n", "    b = a\n    c = b\n"), "f") == 3


def test_the_function_limits_count_what_they_should():
    body = "\n".join(f"    x{i} = {i}" for i in range(77))
    source = (f'def long(a):\n    """doc"""\n{body}\n    return a\n\n\n'
              "class C:\n    def wide(self, a, b, c, d, e, f, g, h, *i, j, **k):\n        pass\n"
              "    def narrow(self, a, b, c, d, e, f, g, h, i):\n        pass\n")
    assert wide_functions(source, "m.py") == {"m.py:long": "80 lines, 1 parameters",
                                              "m.py:C.wide": "2 lines, 11 parameters"}
    assert wide_functions(source.replace("    x0 = 0\n", ""), "m.py").keys() == {"m.py:C.wide"}


def function_lengths(path: Path) -> dict[str, int]:
    """``{function name: its length in lines}`` for every function defined in ``path``."""
    return {node.name: node.end_lineno - node.lineno + 1
            for node in ast.walk(ast.parse(path.read_text(encoding="utf-8")))
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef))
            and node.end_lineno is not None}


def test_the_sweep_takes_a_spec_below_its_keyword_form(tmp_path: Path) -> None:
    """``run_benchmark`` keeps DESIGN.md's keyword signature as a thin wrapper; below it the
    sweep's settings travel as one SweepSpec, and no function of the sweep runs 80 lines."""
    sweep = PACKAGE / "runner" / "sweep.py"
    long = {name: n for name, n in parameter_counts(sweep).items()
            if name != "run_benchmark" and n > MAX_INTERNAL_PARAMETERS}
    assert not long, f"sweep functions over {MAX_INTERNAL_PARAMETERS} parameters: {long}"
    lengths = function_lengths(sweep)
    assert max(lengths.values()) < 80, lengths
    assert parameter_counts(sweep)["run_benchmark"] > MAX_INTERNAL_PARAMETERS  # it counts
    long_one = tmp_path / "long.py"
    long_one.write_text("def f():\n" + "    x = 1\n" * 78 + "    return x\n")
    assert function_lengths(long_one) == {"f": 80}


def test_the_checks_can_fail():
    assert "foo" not in {n for r in architecture_rows().values() for n in listed(r)}
    assert listed("| `stats/` | `boundaries`, `decisions` |") == {"stats/", "boundaries",
                                                                    "decisions"}


# -- the "may import" column, checked against the import contracts and the imports ----------

TOP = ("cli", "plugin", "gates", "runner", "report", "stats", "base", "script")
EVERY_BELOW = ("every layer below", "the rest")   # the column's words for "all rows below"


def contracts() -> dict[str, list[tuple[set[str], bool]]]:
    """``{container: layers}`` of pyproject.toml's layer contracts, top to bottom, each layer
    its names and whether they may import each other (joined by ``:``, not ``|``)."""
    import tomllib

    config = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))
    out = {}
    for contract in config["tool"]["importlinter"]["contracts"]:
        for container in contract.get("containers", []):
            out[container] = [(set(re.split(r"\s*[|:]\s*", layer)), ":" in layer)
                              for layer in contract["layers"]]
    return out


def may_import_column() -> dict[str, str]:
    """``{row's folder, dotted ("gates.calibration"): its "may import" cell}``."""
    out = {}
    for first, row in architecture_rows().items():
        folder = re.search(r"`([\w/]+)/`", first)
        if folder:
            out[folder.group(1).replace("/", ".")] = row.strip().strip("|").split("|")[-1]
    return out


def below(folder: str, layers: dict[str, list[tuple[set[str], bool]]]) -> set[str]:
    """The names the contracts let ``folder`` ("cli", "gates.calibration") import: the top
    layers below its own and, for a subfolder, its siblings below it (or beside it, joined
    by ``:``)."""
    top, _, sub = folder.partition(".")
    allowed: set[str] = set()
    for container, name in (("pytest_graphnetz", top), (f"pytest_graphnetz.{top}", sub)):
        stack = layers.get(container, []) if name else []
        at = next((i for i, (names, _) in enumerate(stack) if name in names), len(stack))
        allowed |= {n for names, _ in stack[at + 1:] for n in names}
        if at < len(stack) and stack[at][1]:
            allowed |= stack[at][0] - {name}
    return allowed


def declared(cell: str, folder: str, layers: dict[str, list[tuple[set[str], bool]]]) -> set[str]:
    """The package names a "may import" cell grants (numpy, torch and the like are not ours)."""
    if any(words in cell for words in EVERY_BELOW):
        return below(folder, layers)
    top = folder.partition(".")[0]
    siblings = {n for names, _ in layers.get(f"pytest_graphnetz.{top}", []) for n in names}
    return {w for w in re.findall(r"\w+", cell) if w in set(TOP) | siblings}


@functools.cache
def import_graph() -> Any:
    """grimp's graph of the package's imports, type-only ones too."""
    import grimp

    return grimp.build_graph("pytest_graphnetz", exclude_type_checking_imports=False)


def imported(folder: str) -> set[str]:
    """What the row's modules import, type-only and lazy imports too: another top layer by
    name, a folder of the same top layer by its name there (``gates.calibration`` importing
    ``gates.verdicts.values``: ``verdicts``). A folder's own subfolders with rows of their own
    are theirs."""
    graph = import_graph()
    rows = set(may_import_column())
    mine = f"pytest_graphnetz.{folder}"
    found = set()
    for module in graph.modules:
        if not (module == mine or module.startswith(mine + ".")):
            continue
        inner = module[len("pytest_graphnetz."):].split(".")
        if len(inner) > 2 and ".".join(inner[:2]) in rows and ".".join(inner[:2]) != folder:
            continue   # a subfolder with its own row
        for target in graph.find_modules_directly_imported_by(module):
            parts = target.split(".")[1:]
            if not parts or target.startswith(mine + ".") or target == mine:
                continue
            found.add(parts[0] if parts[0] != inner[0] else parts[1])
    return found


def test_the_may_import_column_is_what_the_contracts_allow_and_what_the_code_does():
    """Each row's "may import" names only what pyproject.toml's contracts let it import, and
    its modules import nothing it does not name: the column cannot promise more than
    import-linter keeps, nor fall behind the code."""
    layers = contracts()
    column = may_import_column()
    assert set(column) >= {"cli", "gates", "gates.calibration", "runner.tasks", "stats"}
    wrong = []
    for folder, cell in column.items():
        grants = declared(cell, folder, layers)
        if beyond := grants - below(folder, layers):
            wrong.append(f"{folder} names {sorted(beyond)}, which the contracts forbid")
        if missing := imported(folder) - grants:
            wrong.append(f"{folder} imports {sorted(missing)}, which its row does not name")
    assert not wrong, "docs/architecture.md's may-import column: " + "; ".join(wrong)


def test_the_may_import_check_can_fail():
    layers = contracts()
    assert "gates" not in below("report", layers)   # report may not import gates
    assert {"verdicts", "refreshing", "runner"} <= below("gates.calibration", layers)
    assert "calibration" not in below("gates.verdicts", layers)
    assert declared("runner, report, stats", "gates", layers) == {"runner", "report", "stats"}
    assert imported("report") >= {"stats", "base"} and "gates" not in imported("report")


# -- gates/ by job: refreshing calls comparing, never the reverse ------------------------------

def test_comparing_never_imports_refreshing_and_refreshing_calls_comparing():
    """The split pyproject.toml's forbidden contract states (lint-imports runs in .ci/run),
    seen here in grimp's graph with type-only and lazy imports: no chain of imports leads from
    gates.comparing to gates.refreshing, and refreshing does import comparing (the ratchet
    judges through it), so the check is not vacuous."""
    graph = import_graph()
    comparing, refreshing = "pytest_graphnetz.gates.comparing", "pytest_graphnetz.gates.refreshing"
    chains = graph.find_shortest_chains(importer=comparing, imported=refreshing)
    assert not chains, f"gates.comparing reaches gates.refreshing: {sorted(chains)}"
    assert graph.find_shortest_chains(importer=refreshing, imported=comparing)


MAX_GATE_FUNCTION_LINES = 80


def test_the_public_gates_are_short_functions():
    """gates/api.py chooses refresh or compare and hands over; no function of it runs to 80
    lines (the docstrings of the public gates included)."""
    tree = ast.parse((PACKAGE / "gates" / "api.py").read_text(encoding="utf-8"))
    lengths = {node.name: node.end_lineno - node.lineno + 1 for node in ast.walk(tree)
               if isinstance(node, ast.FunctionDef) and node.end_lineno is not None}
    assert "_comparison_gate" in lengths and "assert_not_worse" in lengths
    long = {name: n for name, n in lengths.items() if n >= MAX_GATE_FUNCTION_LINES}
    assert not long, f"functions in gates/api.py of {MAX_GATE_FUNCTION_LINES}+ lines: {long}"


# -- docstrings name modules that exist -------------------------------------------------------
MODULE_REFERENCE = re.compile(r":mod:`~?(\.+|pytest_graphnetz\.)([A-Za-z_][\w.]*)`")


def stale_module_references(package: Path) -> list[str]:
    """``"file: name"`` for every ``:mod:`` reference in ``package``'s sources, relative
    (``.x``, ``..x``) or absolute (``pytest_graphnetz.x``), that names no module or package."""
    stale = []
    for path in sorted(package.rglob("*.py")):
        here = path.parent
        for dots, name in MODULE_REFERENCE.findall(path.read_text(encoding="utf-8")):
            base = package if dots == "pytest_graphnetz." else here.parents[len(dots) - 2] \
                if len(dots) > 1 else here
            target = base.joinpath(*name.split("."))
            if not (target.with_suffix(".py").is_file() or (target / "__init__.py").is_file()):
                stale.append(f"{path.relative_to(package)}: {dots}{name}")
    return stale


def test_docstrings_name_modules_that_exist(tmp_path: Path):
    assert stale_module_references(PACKAGE) == []
    pkg = tmp_path / "pkg"
    (pkg / "sub").mkdir(parents=True)
    (pkg / "a.py").write_text("")
    (pkg / "sub" / "b.py").write_text('"""See :mod:`.c`, :mod:`..a`, :mod:`..gone`."""\n')
    assert stale_module_references(pkg) == ["sub/b.py: .c", "sub/b.py: ..gone"]
