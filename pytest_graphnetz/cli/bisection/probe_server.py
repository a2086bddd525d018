"""The warm interpreter of ``graphnetz bisect``'s probes: a server process that keeps what the
probes import from installed distributions (pytest, torch, PyG, ...) and forks one child per
probe, which runs ``pytest.main`` in the probe's worktree. Standard library only: the server
starts with nothing but pytest imported and learns the rest from the first probe.

Protocol (one JSON object per line): the parent writes ``{"cwd", "argv", "env", "log"}``; the
server forks, answers ``{"pid": child}`` at once and ``{"rc": status}`` when the child ends
(its stdout and stderr go to ``log``), then imports the installed modules that child loaded
that it lacks, so the next probe starts warm. End of input ends the server. Each child is a
new process group, starts with the global random state a new interpreter would have, ends
as one does (threads joined, exit handlers run, streams flushed) but for the teardown of every
module, and is killed by the kernel when the server goes
(Linux), as the server is when its parent goes; a guard per probe (:func:`guard`) then
kills the probe's whole process group: SIGKILL of ``graphnetz bisect`` leaves no probe, and no
process a probed test started, running.

    python -m pytest_graphnetz.cli.bisection.probe_server        # what BisectProbe starts
    python -m pytest_graphnetz.cli.bisection.probe_server --guard GROUP PARENT   # a guard
"""

from __future__ import annotations

import contextlib
import gc
import importlib
import json
import os
import signal
import sys
import sysconfig
from pathlib import Path


def tie_to_parent(signum: int = signal.SIGKILL) -> None:
    """Have the kernel send ``signum`` to this process when its parent ends (Linux
    ``prctl(PR_SET_PDEATHSIG)``; nothing elsewhere)."""
    if not sys.platform.startswith("linux"):
        return
    with contextlib.suppress(OSError, AttributeError):
        import ctypes

        ctypes.CDLL(None, use_errno=True).prctl(1, int(signum), 0, 0, 0)


def guard(group: int, parent: int) -> None:
    """A probe's guard: wait until ``parent`` (``graphnetz bisect``) ends or tells it to stop
    (SIGTERM), then SIGKILL process group ``group``, the probe's pytest session and whatever
    its tests started. The session itself dies with its parent (:func:`tie_to_parent`), but a
    process a test started (a command task's script, a data loader's worker) is only in its
    group; after a SIGKILL of bisect nothing else is left to end it. Linux: the kernel sends
    the guard SIGTERM when its parent ends; elsewhere the guard acts when told to stop only."""
    def end(signum: int, frame: object) -> None:
        with contextlib.suppress(OSError):
            os.killpg(group, signal.SIGKILL)
        os._exit(0)

    signal.signal(signal.SIGTERM, end)
    tie_to_parent(signal.SIGTERM)
    if os.getppid() != parent:   # the parent ended before the line above: act now
        end(signal.SIGTERM, None)
    while True:
        signal.pause()


def installed_roots() -> tuple[str, ...]:
    """Where installed code lives: the standard library, site-packages, and this package."""
    paths = sysconfig.get_paths()
    roots = {paths[k] for k in ("stdlib", "platstdlib", "purelib", "platlib") if k in paths}
    roots.add(str(Path(__file__).resolve().parents[2]))   # pytest_graphnetz/, from cli/bisection/
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
    # stdin is the server's request pipe: nothing the probe starts may read it
    null = os.open(os.devnull, os.O_RDONLY)
    os.dup2(null, 0)
    os.close(null)
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
        # plugin modules the server holds are imported already: pytest cannot rewrite their
        # asserts (nor does a cold run need it), so its warning about that is noise here
        rc = int(pytest.main([*request["argv"], "-W", REWRITE_WARNING]))
    except SystemExit as exc:   # a plugin that exits
        rc = exc.code if isinstance(exc.code, int) else 1
    learned = Path(request["log"]).with_suffix(".modules")
    with contextlib.suppress(OSError):
        learned.write_text("\n".join(installed_modules(installed_roots())))
    return rc


REWRITE_WARNING = ("ignore:Module already imported so cannot be rewritten"
                   ":pytest.PytestAssertRewriteWarning")


def _shutdown(code: int) -> None:
    """End the child as an interpreter ends, but for the teardown of every module (seconds with
    torch loaded, and nothing a probe reads): non-daemon threads joined, exit handlers run,
    the standard streams flushed."""
    import atexit
    import threading

    for thread in threading.enumerate():
        if thread is not threading.current_thread() and not thread.daemon:
            thread.join()
    atexit._run_exitfuncs()   # what the interpreter runs at exit, before the teardown
    for stream in (sys.stdout, sys.stderr):
        with contextlib.suppress(Exception):
            stream.flush()
    os._exit(code)


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
    # `python -m` put the folder it started in first on the path: the server imports only
    # installed code, and each child puts its own worktree first
    sys.path[:] = [p for p in sys.path if p not in ("", os.getcwd())]
    import pytest  # noqa: F401  (what every probe needs first)

    out = sys.stdout
    for line in sys.stdin:
        request = json.loads(line)
        sys.stdout.flush()
        # what the server holds is out of the child's collections (pytest collects several
        # times at its end: a second with torch loaded), and its pages stay shared
        gc.freeze()
        pid = os.fork()
        if pid == 0:
            code = 1
            try:
                code = _child(request)
            except BaseException:   # what an interpreter prints for an uncaught exception
                import traceback

                traceback.print_exc()
            finally:
                _shutdown(code)
        out.write(json.dumps({"pid": pid}) + "\n")
        out.flush()
        _, status = os.waitpid(pid, 0)
        out.write(json.dumps({"rc": os.waitstatus_to_exitcode(status)}) + "\n")
        out.flush()
        _learn(request)


if __name__ == "__main__":
    if sys.argv[1:2] == ["--guard"]:
        guard(int(sys.argv[2]), int(sys.argv[3]))
    serve()
