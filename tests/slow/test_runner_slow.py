"""The tests of tests/fast/test_runner.py's unit that cost seconds each: fresh
interpreters, subprocess sessions or killed processes (the slow tier, tests/README.md)."""

from __future__ import annotations

import subprocess
import sys
import textwrap
from pathlib import Path

from pytest_graphnetz import BenchmarkReport
from tests.helpers.tiny import run, text

_SCRIPT = textwrap.dedent("""
    import sys
    sys.path.insert(0, {tests!r})
    from tests.helpers.tiny import gcn, sage, tiny_task
    from pytest_graphnetz import run_benchmark
    report = run_benchmark({{"tiny": tiny_task()}}, {{"GCN": gcn, "SAGE": sage}}, seeds=[0, 1],
                           device="cpu", root={root!r})
    report.to_json({out!r})
""")


def test_a_fresh_process_gives_the_bit_for_bit_report_of_this_one(root, tmp_path):
    """A fresh interpreter (nothing trained, global RNGs untouched) and this worker (which has
    run other tests: RNG streams consumed, modules imported, threads pinned) write the same
    report, bit for bit: each triple depends on its seed alone, not on the process."""
    out = tmp_path / "report.json"
    here = text(run(root))  # also writes the dataset cache, so the fresh process only reads it
    fresh = subprocess.run([sys.executable, "-c", _SCRIPT.format(
        tests=str(Path(__file__).parents[1]), root=root, out=str(out))], timeout=300)
    assert fresh.returncode == 0
    assert text(BenchmarkReport.from_json(out)) == here
