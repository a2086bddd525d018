"""How the code blocks of README.md and docs/*.md are read (blocks, marks, chains: the reader is
tests/helpers/documents.py), that the documents keep their runnable examples, and that every
relative link of the documents resolves. The blocks run below (marked slow), after the
conventions for writing them.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from tests.helpers.documents import (
    CHAINS,
    DOCUMENTS,
    FENCE,
    README,
    ROOT,
    Chain,
    blocks,
    chains,
    commands,
)


def test_blocks_are_found_and_marks_are_read():
    found = blocks("intro\n<!-- fragment: a sketch -->\n<!-- x: begin -->\n```python\nx\n```\n"
                   "\n```bash\na \\\n  b  # why\n$ c\n```\n```\nout\n```\n"
                   "````markdown\n```python\ny\n```\n````\n"
                   "<!-- continues: reads x -->\n```sh\nd\n```\n"
                   "```toml\n# pyproject.toml\n[tool.pytest.ini_options]\n```\n")
    assert [(b.lang, b.line, b.fragment, b.continues, b.runs) for b in found] == [
        ("python", 4, True, False, False), ("bash", 8, False, False, True),
        ("", 13, False, False, False), ("markdown", 16, False, False, False),
        ("sh", 22, False, True, True), ("toml", 25, False, False, False)]
    assert [b.target for b in found] == [None, None, None, None, None, "pyproject.toml"]
    assert found[3].text == "```python\ny\n```\n"
    assert commands(found[1].text) == ["a    b  # why", "c"]


def test_chains_join_continued_blocks_after_the_files_above_them():
    text = ("```python\n# tests/test_a.py\nA = 1\n```\n"       # file block, line 1
            "```bash\npytest\n```\n"                           # line 5: its own test
            "```python\n# tests/test_b.py\nB = 1\n```\n"       # line 8: file block
            "<!-- continues -->\n```bash\nls tests\n```\n"     # line 13: joins line 5
            "```python\nprint(1)\n```\n")                      # line 16: fresh test
    found = chains(text, "doc.md")
    assert [c.id for c in found] == ["doc.md:5", "doc.md:16"]
    assert [b.line for b in found[0].steps] == [1, 5, 8, 13]
    assert [b.line for b in found[1].steps] == [1, 8, 16]
    with pytest.raises(ValueError, match="doc.md line 2: .*continues"):
        chains("<!-- continues -->\n```bash\nls\n```\n", "doc.md")


def test_the_documents_keep_their_runnable_examples():
    readme = [c for c in CHAINS if c.document == "README.md"]
    assert len(readme) >= 1, "the README lost its gated model, or the extractor broke"
    assert len(CHAINS) - len(readme) >= 3, "docs/ lost its runnable examples"


def test_the_readme_is_a_first_screen_and_links():
    """At most 300 lines; its first block is the two commands for a fresh machine (the main job,
    the test suite), and the rest of the detail lives in docs/."""
    text = README.read_text(encoding="utf-8")
    assert len(text.splitlines()) <= 300, "README.md over 300 lines: move detail into docs/"
    first = blocks(text)[0]
    assert first.lang == "bash" and len(commands(first.text)) == 2, first
    assert [c for c in commands(first.text) if "pytest examples" in c], first
    assert max(map(len, first.text.splitlines())) <= 100, "a first-screen line too long to read"


def test_the_readme_gate_configures_pytest_for_the_users_package():
    """The README's gated model imports ``mypkg`` under a bare ``pytest`` because its own
    pyproject.toml block says ``pythonpath``: the chain that runs it writes that file (and
    the block runs below remove the scratch project's pytest.ini for it)."""
    chain = next(c for c in CHAINS if c.document == "README.md"
                 and any(b.target == "tests/test_models.py" for b in c.steps))
    files = {b.target: b.text for b in chain.steps if b.target is not None}
    assert "from mypkg" in files["tests/test_models.py"]
    assert re.search(r'^pythonpath = \["\."\]$', files["pyproject.toml"], re.M)
    runs = [c for b in chain.steps if b.target is None for c in commands(b.text)]
    assert runs[0].startswith("pytest "), "the README runs bare pytest, as a user types it"


LINK = re.compile(r"\[[^\]]*\]\(([^)\s]+)(?:\s+\"[^\"]*\")?\)")
HEADING = re.compile(r"^#{1,6}\s+(.*?)\s*#*\s*$")


def anchors(text: str) -> set[str]:
    """The anchors GitHub gives a Markdown text: one per heading (lower case, punctuation but
    ``-`` and ``_`` dropped, spaces as ``-``, a repeat numbered ``-1``, ``-2``), and every
    ``<a id="...">`` / ``<a name="...">``. Fenced blocks hold no headings."""
    found: set[str] = set()
    seen: dict[str, int] = {}
    fence = None
    for line in text.splitlines():
        match = FENCE.match(line)
        if match and (fence is None or line.strip().startswith(fence)):
            fence = None if fence else match.group(1)
            continue
        if fence:
            continue
        heading = HEADING.match(line)
        if heading:
            words = re.sub(r"`|\*\*|\[|\]\([^)]*\)", "", heading.group(1)).strip().lower()
            slug = re.sub(r"[^\w\- ]", "", words).replace(" ", "-")
            count = seen.get(slug, 0)
            seen[slug] = count + 1
            found.add(slug if count == 0 else f"{slug}-{count}")
        found.update(re.findall(r"<a\s+(?:id|name)=\"([^\"]+)\"", line))
    return found


def broken_links(path: Path, root: Path = ROOT) -> list[str]:
    """The relative links of one Markdown file (outside fenced blocks) whose file or anchor
    does not exist, as ``file:line: target``."""
    out, fence = [], None
    lines = path.read_text(encoding="utf-8").splitlines()
    for number, line in enumerate(lines, 1):
        match = FENCE.match(line)
        if match and (fence is None or line.strip().startswith(fence)):
            fence = None if fence else match.group(1)
            continue
        if fence:
            continue
        for target in LINK.findall(re.sub(r"`[^`]*`", "", line)):
            if re.match(r"^[a-z][a-z+.-]*:", target):   # https:, mailto: ...
                continue
            file, _, anchor = target.partition("#")
            linked = (path.parent / file).resolve() if file else path
            if not linked.exists():
                out.append(f"{path.relative_to(root)}:{number}: {target} (no such file)")
            elif anchor and linked.suffix == ".md" and \
                    anchor not in anchors(linked.read_text(encoding="utf-8")):
                out.append(f"{path.relative_to(root)}:{number}: {target} (no such anchor)")
    return out


def test_every_relative_link_of_the_documents_resolves():
    pages = [*DOCUMENTS, ROOT / "tests" / "README.md", ROOT / "benchmarks" / "README.md"]
    broken = [problem for page in pages for problem in broken_links(page)]
    assert not broken, "\n".join(broken)


def test_the_link_check_can_fail(tmp_path):
    (tmp_path / "docs").mkdir()
    (tmp_path / "docs" / "a.md").write_text("# The `gate`: a page\n## Two\n## Two\n")
    page = tmp_path / "README.md"
    page.write_text("[ok](docs/a.md#the-gate-a-page) [ok](docs/a.md#two-1) [web](https://x.y/z)\n"
                    "[gone](docs/b.md) [no anchor](docs/a.md#three) [self](#nowhere)\n"
                    "```\n[in a block](docs/c.md)\n```\n`[in code](docs/d.md)`\n")
    assert [p.split(": ", 1)[1] for p in broken_links(page, tmp_path)] == [
        "docs/b.md (no such file)", "docs/a.md#three (no such anchor)",
        "#nowhere (no such anchor)"]


# -- costs seconds each (marked slow) ----------------------------------------------------------
# Every Python block and every command in README.md and docs/*.md runs as written.
#
# The convention (for everyone editing the README or a page under docs/):
#
# - Fenced ```` ```python ```` blocks and ```` ```bash ```` / ``sh`` / ``shell`` / ``console``
#   blocks run, as a reader would run them, in a scratch project directory. Other fences (plain
#   ```` ``` ```` for output, ``yaml``, ``toml``, ``text``...) are not run.
# - A Python block whose first line is a comment naming a file (``# tests/test_models.py``) is
#   written to that path instead of being run; every runnable block of a document sees the
#   files its document's earlier file blocks wrote. Any other Python block runs in a fresh
#   interpreter. Each command line of a shell block runs with ``bash -c`` (``\`` continues a
#   line; comments are fine) and must exit 0.
# - Each runnable block is its own test, in a fresh copy of the scratch project, so the blocks
#   spread over pytest-xdist's workers. A block that uses what an earlier block *made* by
#   running (``report.json``, a baseline, a cache) is marked on the line right above its fence
#   with ``<!-- continues -->`` (a reason may follow: ``<!-- continues: reads report.json -->``):
#   it then runs in the same test and project as the runnable block before it in its document
#   (a chain of such marks is one test).
# - A block that cannot or should not run here (it installs packages, runs this test suite, is a
#   signature or a sketch) is marked on the line right above its fence with
#   ``<!-- fragment -->`` (a reason may follow: ``<!-- fragment: installs packages -->``). Other
#   HTML comment lines may sit between a mark and the fence.
# - The scratch project holds a copy of the repository's ``examples/models.py`` (for blocks
#   that say "run from the repository root") and what a user's project would have:
#   ``mypkg/models.py`` with ``gcn`` and ``sage`` factories (PyG's GCN and GraphSAGE, 16 hidden
#   channels) and ``gin`` (a GIN pooled per graph, for graph tasks), and a ``pytest.ini``
#   with ``pythonpath = .`` and ``graphnetz_seeds = 5``: the smallest seed count at which the
#   documents' gates and interval widths still mean what the text says. A document that writes
#   its own ``pyproject.toml`` (a ```` ```toml ```` block whose first line is
#   ``# pyproject.toml``) configures pytest itself, as the README's "Gate your own model" does:
#   the ``pytest.ini`` (which pytest would read first) is removed, so ``import mypkg`` works only
#   if that block makes it work, and ``PYTEST_ADDOPTS=-o graphnetz_seeds=5`` sets the seeds.
#   Datasets are shared through ``$GRAPHNETZ_ROOT`` (one directory per xdist worker, whose
#   tests run one at a time); ``python``, ``pytest`` and ``graphnetz`` are this interpreter's.


MYPKG = '''
import torch
from torch_geometric.nn import GCN, GIN, GraphSAGE, global_mean_pool


def gcn(in_channels, out_channels):
    return GCN(in_channels, 16, 2, out_channels, dropout=0.5)


def sage(in_channels, out_channels):
    return GraphSAGE(in_channels, 16, 2, out_channels, dropout=0.5)


class PooledGIN(torch.nn.Module):
    def __init__(self, in_channels, out_channels):
        super().__init__()
        self.gin = GIN(in_channels, 32, 3, 32)
        self.head = torch.nn.Linear(32, out_channels)

    def forward(self, x, edge_index, batch):
        return self.head(global_mean_pool(self.gin(x, edge_index), batch))


def gin(in_channels, out_channels):
    return PooledGIN(in_channels, out_channels)
'''


PYTEST_INI = """[pytest]
pythonpath = .
graphnetz_seeds = 5
"""


@pytest.fixture(scope="session")
def template(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The scratch project every test copies: a user's package, pytest.ini, examples/."""
    root = tmp_path_factory.mktemp("readme-template")
    (root / "mypkg").mkdir()
    (root / "mypkg" / "__init__.py").write_text("")
    (root / "mypkg" / "models.py").write_text(MYPKG)
    (root / "pytest.ini").write_text(PYTEST_INI)
    (root / "examples").mkdir()
    (root / "examples" / "models.py").write_text(
        (ROOT / "examples" / "models.py").read_text(encoding="utf-8"))
    return root


@pytest.fixture(scope="session")
def data_root(tmp_path_factory: pytest.TempPathFactory) -> Path:
    # One per session, i.e. per xdist worker: its tests run one at a time, so the catalogue's
    # generated datasets are built once per worker and never written by two processes at once.
    return tmp_path_factory.mktemp("readme-data")


def environment(data_root: Path, project: Path) -> dict[str, str]:
    env = dict(os.environ)
    env["PATH"] = os.pathsep.join([str(Path(sys.executable).parent), env.get("PATH", "")])
    env["PYTHONPATH"] = os.pathsep.join(p for p in (str(ROOT), env.get("PYTHONPATH")) if p)
    env["GRAPHNETZ_ROOT"] = str(data_root)
    env["MPLBACKEND"] = "Agg"
    for name in ("PYTEST_ADDOPTS", "PYTEST_XDIST_WORKER", "GITHUB_STEP_SUMMARY"):
        env.pop(name, None)
    if not (project / "pytest.ini").exists():   # the document's own pyproject.toml configures
        env["PYTEST_ADDOPTS"] = "-o graphnetz_seeds=5"   # the ini key, as pytest.ini sets it
    return env


def run(argv: list[str], project: Path, data_root: Path, where: str) -> None:
    done = subprocess.run(argv, cwd=project, env=environment(data_root, project),
                          capture_output=True, text=True, timeout=900)
    if done.returncode != 0:
        pytest.fail(f"{where} exits {done.returncode}:\n--- stdout\n{done.stdout[-6000:]}\n"
                    f"--- stderr\n{done.stderr[-6000:]}\n(a block that needs what an earlier "
                    "block made by running is marked <!-- continues --> above its fence)",
                    pytrace=False)


@pytest.mark.slow
@pytest.mark.parametrize("chain", CHAINS, ids=[chain.id for chain in CHAINS])
def test_block_runs_as_written(chain: Chain, template: Path, data_root: Path,
                               tmp_path: Path) -> None:
    project = tmp_path / "project"
    shutil.copytree(template, project)
    if any(block.target == "pyproject.toml" for block in chain.steps):
        (project / "pytest.ini").unlink()   # pytest would read it before pyproject.toml
    for block in chain.steps:
        if block.target is not None:
            path = project / block.target
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(block.text)
        elif block.lang in ("python", "py"):
            script = project / f"block_line_{block.line}.py"
            script.write_text(block.text)
            run([sys.executable, script.name], project, data_root,
                f"{chain.document}: Python block at line {block.line}")
        else:
            for command in commands(block.text):
                run(["bash", "-c", command], project, data_root,
                    f"{chain.document}: command `{command}` (block at line {block.line})")
