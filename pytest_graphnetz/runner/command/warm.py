"""Warm interpreters for command tasks: one fork server (:mod:`.server`) per executor
(:class:`~.run.CommandExecutor`, one per pytest session) and import-time environment, so a
script's run pays a fork instead of a fresh interpreter importing torch and PyG.

A run is forked warm only where that is safe and gives what a cold run gives: Linux (fork
without exec is unsafe on macOS and absent on Windows), a CPU run (CUDA is never initialised
in the server, but a pinned GPU is kept to a cold process), the script run by this very
interpreter with no interpreter options, and ``GRAPHNETZ_WARM_SCRIPTS`` not ``0``. Anything
else, or a server that fails to start, runs cold; the same isolation, exit codes, timeouts
and output files apply to both (:meth:`pytest_graphnetz.runner.command.process.ProcessGroups.run`).
"""

from __future__ import annotations

import contextlib
import json
import os
import select
import signal
import subprocess
import sys
import threading
import time
import warnings
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from pytest_graphnetz.runner.command.reads import CHILD
from pytest_graphnetz.script import WARM_ENV, warm_mode  # re-exported: the runner decides here

SERVER = Path(__file__).with_name("server.py")

__all__ = ["WARM_ENV", "ServerGone", "WarmRun", "WarmServer", "WarmServerWarning",
           "WarmServers", "warm_mode"]
# What changes per run (or per test), not per server; each run gets its whole environment.
_PER_RUN = ("GRAPHNETZ_SEED", "GRAPHNETZ_OUTPUT", "PYTEST_CURRENT_TEST")
_START_SECONDS = 300


class ServerGone(OSError):
    """The fork server ended while a run of it was in progress (the run is redone cold)."""


class WarmServerWarning(RuntimeWarning):
    """A fork server ended early: this process's later runs start cold."""


class WarmRun:
    """A run forked by the server: ``pid`` (its own process group) and ``wait`` like Popen's."""

    def __init__(self, server: WarmServer, pid: int) -> None:
        self.server, self.pid = server, pid
        self.returncode: int | None = None

    def wait(self, timeout: float | None = None) -> int:
        if self.returncode is None:
            try:
                answer = self.server.answer(timeout)
            except (OSError, ValueError) as exc:
                self.server.lost(f"it exited during a run ({exc})")
                raise ServerGone(str(exc)) from exc
            if answer is None:
                raise subprocess.TimeoutExpired("warm run", timeout or 0)
            self.returncode = int(answer["status"])
        return int(self.returncode)


class WarmServer:
    """One fork server; requests go one at a time (a worker runs its triples in turn)."""

    def __init__(self, python: str, env: Mapping[str, str]) -> None:
        # Started from the main thread, the server is also tied to this process by the kernel
        # (PR_SET_PDEATHSIG fires when the starting *thread* ends); from any thread it ends
        # when its request pipe closes, as it does when this process dies, SIGKILL included.
        tied = ["--tied"] if threading.current_thread() is threading.main_thread() else []
        self.proc = subprocess.Popen([python, str(SERVER), *tied], env=dict(env),
                                     stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                     stderr=subprocess.DEVNULL, start_new_session=True)
        self.buffer = b""
        self.gone = False
        ready = self.answer(_START_SECONDS)
        if ready is None or "ready" not in ready:
            self.close()
            raise OSError("the warm script server did not start")

    def answer(self, timeout: float | None) -> dict[str, Any] | None:
        """The server's next JSON line, or None after ``timeout`` seconds."""
        assert self.proc.stdout is not None
        fd = self.proc.stdout.fileno()
        deadline = None if timeout is None else time.monotonic() + timeout
        while b"\n" not in self.buffer:
            left = None if deadline is None else max(0.0, deadline - time.monotonic())
            if not select.select([fd], [], [], left)[0]:
                return None
            chunk = os.read(fd, 65536)
            if not chunk:
                raise OSError("the warm script server exited")
            self.buffer += chunk
        line, _, self.buffer = self.buffer.partition(b"\n")
        answer: dict[str, Any] = json.loads(line)
        return answer

    def start(self, argv: Sequence[str], *, cwd: str, env: Mapping[str, str], stdout: str,
              stderr: str) -> WarmRun | None:
        """Fork a run of ``argv`` (``child.py``'s arguments); None when the server is
        gone (the caller then runs cold)."""
        if self.gone:
            return None
        if self.proc.poll() is not None:
            self.lost(f"it exited with code {self.proc.returncode} between runs")
            return None
        if not os.path.isdir(cwd):
            return None
        request = {"argv": list(argv), "cwd": cwd, "env": dict(env), "stdout": stdout,
                   "stderr": stderr}
        try:
            assert self.proc.stdin is not None
            self.proc.stdin.write((json.dumps(request) + "\n").encode())
            self.proc.stdin.flush()
            answer = self.answer(60)
        except (OSError, ValueError) as exc:
            self.lost(f"it stopped answering ({exc})")
            return None
        return None if answer is None else WarmRun(self, int(answer["pid"]))

    def lost(self, why: str) -> None:
        """This server cannot serve any more runs: say so once; later runs start cold."""
        if self.gone:
            return
        self.gone = True
        warnings.warn(f"graphnetz: the warm script server (pid {self.proc.pid}) is gone: {why}; "
                      "this process's later script runs start cold", WarmServerWarning,
                      stacklevel=2)

    def close(self) -> None:
        with contextlib.suppress(OSError, ValueError):
            if self.proc.stdin is not None:
                self.proc.stdin.close()
        try:
            self.proc.wait(timeout=5)
        except subprocess.TimeoutExpired:
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.killpg(self.proc.pid, signal.SIGKILL)
            self.proc.wait()


# Variables read while torch and PyG import (threads, devices, the interpreter's own): a
# command's `env=` that sets one needs a server of its own; its other variables do not (each
# forked run gets its whole environment anyway).
_IMPORT_TIME = ("OMP_", "MKL_", "OPENBLAS_", "CUDA_", "CUBLAS_", "PYTHON", "TORCH", "LD_",
                "KMP_", "GOMP_", "NUMEXPR_", "PYG_")
MAX_SERVERS = 4   # each holds torch and PyG in memory: past this, further runs start cold


class WarmServers:
    """The fork servers of one :class:`~.run.CommandExecutor`, one per interpreter and
    import-time environment, started on first use and ended by :meth:`close`."""

    def __init__(self) -> None:
        # (interpreter, import-time environment) -> its server; None: it failed to start, so
        # runs of that environment start cold.
        self.servers: dict[tuple[str, tuple[tuple[str, str], ...]], WarmServer | None] = {}

    def get(self, args: Sequence[str], env: Mapping[str, str], device: str,
            own: Mapping[str, str] | None = None) -> WarmServer | None:
        """The server to fork ``args`` (a traced command line: ``python child.py ...``)
        from, started on first use; None where the run must be cold (:func:`warm_mode`).
        ``own``: the command's extra variables, which choose a server only when read at
        import."""
        from pytest_graphnetz.runner.fingerprint import interpreter_identity, looks_like_python

        if warm_mode(device) is not None or len(args) < 2 or not looks_like_python(args[0]) \
                or args[1] != str(CHILD):
            return None
        if interpreter_identity(args[0]) != interpreter_identity(sys.executable) or \
                os.path.realpath(args[0]) != os.path.realpath(sys.executable):
            return None
        own = own or {}
        base = {k: v for k, v in env.items() if k not in _PER_RUN and (
            k not in own or k.startswith(_IMPORT_TIME) or os.environ.get(k) == v)}
        key = (args[0], tuple(sorted(base.items())))
        if key not in self.servers:
            if sum(s is not None for s in self.servers.values()) >= MAX_SERVERS:
                return None
            try:
                self.servers[key] = WarmServer(args[0], base)
            except OSError:
                self.servers[key] = None   # cold from now on, for this environment
        server = self.servers[key]
        return None if server is None or server.gone else server

    def running(self) -> list[int]:
        """The process ids of the live servers."""
        return [s.proc.pid for s in self.servers.values()
                if s is not None and not s.gone and s.proc.poll() is None]

    def close(self) -> None:
        """End every server (a later run starts new ones)."""
        for server in list(self.servers.values()):
            if server is not None:
                server.close()
        self.servers.clear()
