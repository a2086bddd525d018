"""Every Python block and every command in README.md runs as written.

The convention (for everyone editing the README):

- Fenced ```` ```python ```` blocks and ```` ```bash ```` / ``sh`` / ``shell`` / ``console``
  blocks run, **in README order, in one scratch project directory**, as a reader would run
  them: a block may use files an earlier block made (``report.json``...). Other fences (plain
  ```` ``` ```` for output, ``yaml``, ``toml``, ``text``...) are not run.
- A Python block whose first line is a comment naming a file (``# tests/test_models.py``) is
  written to that path instead of being run; any other Python block runs in a fresh
  interpreter. Each command line of a shell block runs with ``bash -c`` (``\\`` continues a
  line; comments are fine) and must exit 0.
- A block that cannot or should not run here (it installs packages, runs this test suite, is a
  signature or a sketch) is marked on the line right above its fence with
  ``<!-- fragment -->`` (a reason may follow: ``<!-- fragment: installs packages -->``); other
  HTML comment lines may sit between it and the fence.
- The scratch project holds a copy of the repository's ``examples/models.py`` (for blocks
  that say "run from the repository root") and what a user's project would have:
  ``mypkg/models.py`` with ``gcn`` and ``sage`` factories (PyG's GCN and GraphSAGE, 16 hidden
  channels) and ``gin`` (a GIN pooled per graph, for graph tasks), and a ``pytest.ini``
  with ``pythonpath = .`` and ``graphnetz_seeds = 5``: the smallest seed count at which the
  README's gates and interval widths still mean what the text says. Datasets are shared
  through ``$GRAPHNETZ_ROOT``; ``python``, ``pytest`` and ``graphnetz`` are this interpreter's.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

import pytest

README = Path(__file__).resolve().parent.parent / "README.md"
RUN = {"python", "py", "bash", "sh", "shell", "console"}
FENCE = re.compile(r"^(`{3,}|~{3,})\s*([\w+-]*)")
FRAGMENT = re.compile(r"^\s*<!--\s*fragment\b")
FILE_BLOCK = re.compile(r"^#\s*([\w./-]+\.py)\s*$")

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


@dataclass(frozen=True)
class Block:
    lang: str
    line: int          # 1-based line of the opening fence
    text: str
    fragment: bool

    @property
    def runs(self) -> bool:
        return self.lang in RUN and not self.fragment


def blocks(text: str) -> list[Block]:
    """Every fenced block of a Markdown text, with its language and fragment mark."""
    out, lines, i = [], text.splitlines(), 0
    while i < len(lines):
        match = FENCE.match(lines[i])
        if not match:
            i += 1
            continue
        fence, lang, start = match.group(1), match.group(2).lower(), i
        # The HTML comments right above the fence (other tools keep markers there too).
        above, j = [], i - 1
        while j >= 0 and (not lines[j].strip() or lines[j].lstrip().startswith("<!--")):
            above.append(lines[j])
            j -= 1
        i += 1
        body = []
        # A fence closes on a line of its own character, at least as long (CommonMark): a
        # ```` block may hold ``` blocks.
        closing = re.compile(re.escape(fence[0]) + "{" + str(len(fence)) + r",}\s*")
        while i < len(lines) and not closing.fullmatch(lines[i].strip()):
            body.append(lines[i])
            i += 1
        out.append(Block(lang, start + 1, "\n".join(body) + "\n",
                         any(FRAGMENT.match(line) for line in above)))
        i += 1
    return out


def commands(text: str) -> list[str]:
    """The command lines of a shell block (continuations joined, ``$ `` prompts dropped)."""
    out, pending = [], ""
    for raw in text.splitlines():
        line = raw.rstrip()
        if line.endswith("\\"):
            pending += line[:-1] + " "
            continue
        line = (pending + line).strip()
        pending = ""
        line = line[2:] if line.startswith("$ ") else line
        if line and not line.startswith("#"):
            out.append(line)
    return out


def test_blocks_are_found_and_fragments_are_marked():
    found = blocks("intro\n<!-- fragment: a sketch -->\n<!-- x: begin -->\n```python\nx\n```\n"
                   "\n```bash\na \\\n  b  # why\n$ c\n```\n```\nout\n```\n"
                   "````markdown\n```python\ny\n```\n````\n")
    assert [(b.lang, b.line, b.fragment, b.runs) for b in found] == [
        ("python", 4, True, False), ("bash", 8, False, True), ("", 13, False, False),
        ("markdown", 16, False, False)]
    assert found[3].text == "```python\ny\n```\n"
    assert commands(found[1].text) == ["a    b  # why", "c"]


@pytest.fixture(scope="module")
def project(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("readme")
    (root / "mypkg").mkdir()
    (root / "mypkg" / "__init__.py").write_text("")
    (root / "mypkg" / "models.py").write_text(MYPKG)
    (root / "pytest.ini").write_text(PYTEST_INI)
    (root / "examples").mkdir()
    (root / "examples" / "models.py").write_text(
        (README.parent / "examples" / "models.py").read_text(encoding="utf-8"))
    return root


def environment(project: Path) -> dict[str, str]:
    env = dict(os.environ)
    repo = str(README.parent)
    env["PATH"] = os.pathsep.join([str(Path(sys.executable).parent), env.get("PATH", "")])
    env["PYTHONPATH"] = os.pathsep.join(p for p in (repo, env.get("PYTHONPATH")) if p)
    env["GRAPHNETZ_ROOT"] = str(project.parent / "readme-data")
    env["MPLBACKEND"] = "Agg"
    for name in ("PYTEST_ADDOPTS", "PYTEST_XDIST_WORKER", "GITHUB_STEP_SUMMARY"):
        env.pop(name, None)
    return env


def run(argv: list[str], project: Path, where: str) -> None:
    done = subprocess.run(argv, cwd=project, env=environment(project), capture_output=True,
                          text=True, timeout=1500)
    if done.returncode != 0:
        pytest.fail(f"README.md {where} exits {done.returncode}:\n--- stdout\n"
                    f"{done.stdout[-6000:]}\n--- stderr\n{done.stderr[-6000:]}", pytrace=False)


def test_every_block_runs_as_written(project: Path) -> None:
    ran = 0
    for block in blocks(README.read_text(encoding="utf-8")):
        if not block.runs:
            continue
        if block.lang in ("python", "py"):
            first = block.text.lstrip().splitlines()[0] if block.text.strip() else ""
            target = FILE_BLOCK.match(first)
            if target:
                path = project / target.group(1)
                path.parent.mkdir(parents=True, exist_ok=True)
                path.write_text(block.text)
                continue
            script = project / f"readme_line_{block.line}.py"
            script.write_text(block.text)
            run([sys.executable, script.name], project, f"Python block at line {block.line}")
        else:
            for command in commands(block.text):
                run(["bash", "-c", command], project,
                    f"command `{command}` (block at line {block.line})")
        ran += 1
    assert ran >= 5, "the README lost its runnable examples, or the extractor broke"
