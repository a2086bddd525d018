"""The project's documents as the tests read them: the runnable blocks and command chains of
README.md and docs/*.md, and the example CI workflows."""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
README = ROOT / "README.md"
DOCUMENTS = [README, *sorted((ROOT / "docs").glob("*.md"))]
RUN = {"python", "py", "bash", "sh", "shell", "console"}
FENCE = re.compile(r"^(`{3,}|~{3,})\s*([\w+-]*)")
FRAGMENT = re.compile(r"^\s*<!--\s*fragment\b")
CONTINUES = re.compile(r"^\s*<!--\s*continues\b")
FILE_BLOCK = re.compile(r"^#\s*([\w./-]+\.(?:py|toml))\s*$")
FILE_LANGS = {"python", "py", "toml"}


@dataclass(frozen=True)
class Block:
    lang: str
    line: int          # 1-based line of the opening fence
    text: str
    fragment: bool
    continues: bool = False

    @property
    def runs(self) -> bool:
        return self.lang in RUN and not self.fragment

    @property
    def target(self) -> str | None:
        """The path a file block writes (``# tests/test_models.py`` in a Python block,
        ``# pyproject.toml`` in a TOML block), else None."""
        if self.lang not in FILE_LANGS or self.fragment or not self.text.strip():
            return None
        match = FILE_BLOCK.match(self.text.lstrip().splitlines()[0])
        return match.group(1) if match else None


def blocks(text: str) -> list[Block]:
    """Every fenced block of a Markdown text, with its language and marks."""
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
                         any(FRAGMENT.match(line) for line in above),
                         any(CONTINUES.match(line) for line in above)))
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


@dataclass
class Chain:
    """One test: runnable blocks of one document joined by ``continues`` marks, in order,
    after the file blocks its document wrote above the first of them."""

    document: str                                      # relative to the repository root
    steps: list[Block] = field(default_factory=list)   # file and runnable blocks, in order

    @property
    def id(self) -> str:
        return f"{self.document}:{next(b.line for b in self.steps if b.target is None)}"


def chains(text: str, document: str) -> list[Chain]:
    """The tests of one document (see the module docstring)."""
    out: list[Chain] = []
    files: list[Block] = []
    current: Chain | None = None
    for block in blocks(text):
        if block.target is None and not block.runs:
            continue
        if block.target is not None:
            files.append(block)
            if current is not None:   # a block continuing the chain sees it too
                current.steps.append(block)
            continue
        if block.continues:
            if current is None:
                raise ValueError(f"{document} line {block.line}: a block marked "
                                 "<!-- continues --> has no runnable block before it")
            current.steps.append(block)
            continue
        current = Chain(document, [*files, block])
        out.append(current)
    return out


CHAINS = [chain for document in DOCUMENTS
          for chain in chains(document.read_text(encoding="utf-8"),
                              document.relative_to(ROOT).as_posix())]


WORKFLOW = ROOT / "examples" / "ci" / "graphnetz.yml"


def load_workflow() -> dict:
    from ruamel.yaml import YAML  # check-jsonschema's YAML reader (YAML 1.2: `on` stays a key)

    return YAML(typ="safe").load(WORKFLOW.read_text())


def step(workflow: dict, name: str) -> dict:
    (found,) = [s for s in workflow["jobs"]["gates"]["steps"] if s.get("name", "").startswith(name)]
    return found


COMMENT_WORKFLOW = WORKFLOW.with_name("graphnetz-comment.yml")


def YAML_LOAD(path: Path) -> dict:  # noqa: N802 - reads as the constant it loads
    from ruamel.yaml import YAML

    return YAML(typ="safe").load(path.read_text())
