"""Cost of each test of tests/cover/test_readme.py (one per README/docs code block or chain).

Runs every chain one at a time, as the test does (a fresh copy of the scratch project, datasets
shared), and prints its wall seconds and the CPU seconds of its subprocesses (user + system).
The work is serial with one torch thread per triple, so on a loaded machine the CPU figure is
the better estimate of the wall time on idle cores (the suite's bound: 60 s a test).

    PYTHONPATH=. .venv/bin/python benchmarks/doc_blocks.py            # every chain
    PYTHONPATH=. .venv/bin/python benchmarks/doc_blocks.py README.md:40   # chosen test ids
"""

from __future__ import annotations

import os
import shutil
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
# the test module, and the repository for the tests.helpers it imports
sys.path[:0] = [str(ROOT / "tests" / "cover"), str(ROOT)]
import test_readme as tr  # noqa: E402


def main(only: list[str]) -> None:
    work = Path(tempfile.mkdtemp(prefix="doc-blocks-"))
    template, data = work / "template", work / "data"
    (template / "mypkg").mkdir(parents=True)
    (template / "mypkg" / "__init__.py").write_text("")
    (template / "mypkg" / "models.py").write_text(tr.MYPKG)
    (template / "pytest.ini").write_text(tr.PYTEST_INI)
    (template / "examples").mkdir()
    shutil.copy(tr.ROOT / "examples" / "models.py", template / "examples" / "models.py")
    data.mkdir()
    for number, chain in enumerate(tr.CHAINS):
        if only and chain.id not in only:
            continue
        project = work / f"project-{number}"
        shutil.copytree(template, project)
        wall, before = time.perf_counter(), os.times()
        for block in chain.steps:
            if block.target is not None:
                (project / block.target).parent.mkdir(parents=True, exist_ok=True)
                (project / block.target).write_text(block.text)
            elif block.lang in ("python", "py"):
                (project / "block.py").write_text(block.text)
                tr.run([sys.executable, "block.py"], project, data, chain.id)
            else:
                for command in tr.commands(block.text):
                    tr.run(["bash", "-c", command], project, data, chain.id)
        after = os.times()
        cpu = (after.children_user - before.children_user
               + after.children_system - before.children_system)
        print(f"{chain.id:40s} wall {time.perf_counter() - wall:6.1f} s  cpu {cpu:6.1f} s  "
              f"(load {os.getloadavg()[0]:.1f})", flush=True)
    shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main(sys.argv[1:])
