"""The tests of tests/fast/test_cache.py's unit that cost seconds each: fresh
interpreters, subprocess sessions or killed processes (the slow tier, tests/README.md)."""

from __future__ import annotations

from pathlib import Path

import pytest

PLANTED = """
import sys, warnings
from pytest_graphnetz.runner.cache import TripleCache, make_key

key = make_key({"planted": True})
warnings.simplefilter("always")
with warnings.catch_warnings(record=True) as caught:
    assert TripleCache(sys.argv[1]).get(key) is None
print("WARNED:", caught[0].message)
"""


@pytest.mark.parametrize("planted", ["fifo", "link to /dev/zero"])
def test_a_fifo_or_a_device_planted_in_the_cache_is_discarded(tmp_path: Path,
                                                              planted: str) -> None:
    """In a subprocess with a memory limit and a timeout: before the fix the FIFO blocked the
    read for ever and /dev/zero was read until memory ran out."""
    import os
    import resource
    import subprocess
    import sys

    from pytest_graphnetz.runner.cache import TripleCache, make_key

    if not hasattr(os, "mkfifo") or not Path("/dev/zero").exists():
        pytest.skip("needs POSIX FIFOs and /dev/zero")
    cache = tmp_path / "cache"
    cache.mkdir()
    entry = TripleCache(cache).path(make_key({"planted": True}))
    if planted == "fifo":
        os.mkfifo(entry)
    else:
        entry.symlink_to("/dev/zero")

    def limit_memory() -> None:
        resource.setrlimit(resource.RLIMIT_AS, (2 << 30, 2 << 30))

    env = {**os.environ, "PYTHONPATH": str(Path(__file__).parents[2])}
    run = subprocess.run([sys.executable, "-c", PLANTED, str(cache)], env=env, text=True,
                         capture_output=True, timeout=600, preexec_fn=limit_memory)
    assert run.returncode == 0, run.stderr
    # the one JSON reader's error (report/codec.py), naming the entry and what it is
    assert (f"WARNED: discarding corrupt graphnetz cache entry {entry} (ReportFormatError: "
            f"{entry} is not a regular file") in run.stdout
    assert not entry.exists() and not entry.is_symlink()  # removed: the next run recomputes
