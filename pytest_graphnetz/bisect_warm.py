"""The warm interpreter of ``graphnetz bisect``'s probes: a server process that keeps what the
probes import from installed distributions (pytest, torch, PyG, ...) and forks one child per
probe, which runs ``pytest.main`` in the probe's worktree. Standard library only: the server
starts with nothing but pytest imported and learns the rest from the first probe.

Protocol (one JSON object per line): the parent writes ``{"cwd", "argv", "env", "log"}``; the
server forks, answers ``{"pid": child}`` at once and ``{"rc": status}`` when the child ends
(its stdout and stderr go to ``log``), then imports the installed modules that child loaded
that it lacks, so the next probe starts warm. End of input ends the server. Each child is a
new process group, starts with the global random state a new interpreter would have, ends
as one does (exit handlers, threads joined), and is killed by the kernel when the server goes
(Linux), as the server is when its parent goes: SIGKILL of ``graphnetz bisect`` leaves no
probe running.

    python -m pytest_graphnetz.bisect_warm        # what BisectProbe starts
"""

from __future__ import annotations

import contextlib
import importlib
import json
import os
import sys
import sysconfig
from pathlib import Path


def tie_to_parent() -> None:
    """Have the kernel SIGKILL this process when its parent ends (Linux
    ``prctl(PR_SET_PDEATHSIG)``; nothing elsewhere)."""
    if not sys.platform.startswith("linux"):
        return
    with contextlib.suppress(OSError, AttributeError):
        import ctypes
        import signal

        ctypes.CDLL(None, use_errno=True).prctl(1, int(signal.SIGKILL), 0, 0, 0)


def installed_roots() -> tuple[str, ...]:
    """Where installed code lives: the standard library, site-packages, and this package."""
    paths = sysconfig.get_paths()
    roots = {paths[k] for k in ("stdlib", "platstdlib", "purelib", "platlib") if k in paths}
    roots.add(str(Path(__file__).resolve().parent))
    return tuple(sorted(str(Path(r).resolve()) + os.sep for r in roots))


def installed_modules(roots: tuple[str, ...]) -> list[str]:
    """The loaded modules (in load order) whose file lies under ``roots``: never the project's
    code, which differs per commit."""
    out = []
    for name, module in list(sys.modules.items()):
        file = getattr(module, "__file__", None)
        if name != "__main__" and file and str(Path(file).resolve()).startswith(roots):
            out.append(name)
    return out


def _child(request: dict) -> int:
    """In the forked child: become the probe's pytest process and run its session."""
    os.setpgid(0, 0)
    tie_to_parent()
    log = os.open(request["log"], os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
    os.dup2(log, 1)
    os.dup2(log, 2)
    os.close(log)
    os.chdir(request["cwd"])
    os.environ.clear()
    os.environ.update(request["env"])
    sys.path.insert(0, request["cwd"])   # as `python -m pytest` run there would
    sys.argv = ["pytest", *request["argv"]]
    _fresh_state()
    import pytest

    try:
        rc = int(pytest.main(request["argv"]))
    except SystemExit as exc:   # a plugin that exits
        rc = exc.code if isinstance(exc.code, int) else 1
    learned = Path(request["log"]).with_suffix(".modules")
    with contextlib.suppress(OSError):
        learned.write_text("\n".join(installed_modules(installed_roots())))
    sys.stdout.flush()
    sys.stderr.flush()
    return rc


def _fresh_state() -> None:
    """The global random states a new interpreter starts with, not the server's."""
    import random

    random.seed()
    numpy = sys.modules.get("numpy")
    if numpy is not None:
        numpy.random.seed()
    torch = sys.modules.get("torch")
    if torch is not None and hasattr(torch, "seed"):
        torch.seed()


def _learn(request: dict) -> None:
    """Import what the last child loaded from installed code and the server lacks."""
    learned = Path(request["log"]).with_suffix(".modules")
    try:
        names = learned.read_text().split()
    except OSError:
        return
    for name in names:
        if name not in sys.modules:
            with contextlib.suppress(Exception):
                importlib.import_module(name)


def serve() -> None:
    """The server loop over stdin/stdout (see the module docstring)."""
    tie_to_parent()
    import pytest  # noqa: F401  (what every probe needs first)

    out = sys.stdout
    for line in sys.stdin:
        request = json.loads(line)
        sys.stdout.flush()
        pid = os.fork()
        if pid == 0:
            # the child leaves the loop and ends as an interpreter does: exit handlers run,
            # non-daemon threads are joined, files flushed
            sys.exit(_child(request))
        out.write(json.dumps({"pid": pid}) + "\n")
        out.flush()
        _, status = os.waitpid(pid, 0)
        out.write(json.dumps({"rc": os.waitstatus_to_exitcode(status)}) + "\n")
        out.flush()
        _learn(request)


if __name__ == "__main__":
    serve()
