"""Running one command as a process group of its own: timeout, signals, bounded output.

:meth:`ProcessGroups.run` starts the command (or forks it from a warm server, :mod:`.warm`)
in a new session, sends its stdout and stderr to files, and kills the whole group when it
exits, runs past its timeout, writes too much, or this process is interrupted or terminated:
nothing of a run survives it. An error shows the tail of the run's stderr
(:func:`stderr_tail`).
"""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import threading
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from pytest_graphnetz.runner.command.task import CommandError
from pytest_graphnetz.runner.command.warm import ServerGone, WarmServer

STDERR_LINES = 20  # how much of a failing script's stderr its error shows
STDERR_CHARS = 1500  # ... and at most this many of its last characters (a line may be long)
# Bounds on what a script leaves for the runner. Its stdout and stderr go to files (never
# through pipes into memory: 60 MB of output cost 120 MB there); past MAX_OUTPUT_BYTES on
# either one, the run is stopped (the default of `ProcessGroups(max_output_bytes=)`).
MAX_OUTPUT_BYTES = 256 * 2**20
_TAIL_BYTES = 64 * 2**10   # what is read back of stderr for an error's tail
_POLL_SECONDS = 0.05


@dataclass(frozen=True)
class Finished:
    """A command that exited: its exit code and the tails of its stdout and stderr."""

    returncode: int
    stdout: str
    stderr: str


class ProcessGroups:
    """The runs of one :class:`~.run.CommandExecutor`, each a process group of its own: started,
    bounded, and killed when they end, on SIGTERM to this process, and at :meth:`close`.

    ``max_output_bytes``: past this many bytes on its stdout or stderr a run is stopped;
    ``on_terminate``: called on SIGTERM after the groups are killed (the executor's servers end).
    """

    def __init__(self, *, max_output_bytes: int = MAX_OUTPUT_BYTES,
                 on_terminate: Callable[[], None] | None = None) -> None:
        self.max_output_bytes = max_output_bytes
        self.on_terminate = on_terminate
        self.live: set[int] = set()   # the process groups of the runs in progress
        self._previous: Any = None    # the SIGTERM handler before ours, while ours is installed
        self._handler: Any = None

    def run(self, args: Sequence[str], *, cwd: str, env: Mapping[str, str],
            timeout: float | None, logs: Path, where: str,
            server: WarmServer | None = None) -> Finished:
        """Run ``args`` in a new session (its own process group) and wait for it to exit.

        - stdout and stderr go to files under ``logs``; only their last 64 KiB are read back,
          so output costs no memory, and a grandchild that keeps them open cannot delay the run.
        - Past ``timeout`` seconds, past :attr:`max_output_bytes` of output, on
          ``KeyboardInterrupt`` (SIGINT) or SIGTERM to this process, the whole group is killed
          (SIGKILL); after a normal exit too, so no grandchild outlives its run.
        - ``CommandError`` names ``where`` for a program that cannot start, a timeout and too
          much output.
        - A run forked from ``server`` whose server ends during it (killed by the script, say)
          is redone cold; the server warns once (:meth:`WarmServer.lost`).
        """
        if server is not None:
            try:
                return self._run_once(args, cwd=cwd, env=env, timeout=timeout, logs=logs,
                                      where=where, server=server)
            except ServerGone:
                pass
        return self._run_once(args, cwd=cwd, env=env, timeout=timeout, logs=logs, where=where,
                              server=None)

    def _run_once(self, args: Sequence[str], *, cwd: str, env: Mapping[str, str],
                  timeout: float | None, logs: Path, where: str,
                  server: WarmServer | None) -> Finished:
        self.install()
        out_path, err_path = logs / "stdout.log", logs / "stderr.log"
        bound = self.max_output_bytes
        with out_path.open("wb") as out, err_path.open("wb") as err:
            proc: Any = None
            if server is not None:   # a child forked from the warm server, when it can
                proc = server.start(list(args[2:]), cwd=cwd, env=env, stdout=str(out_path),
                                    stderr=str(err_path))
            if proc is None:
                if not os.path.isdir(cwd):
                    raise CommandError(f"{where}: cannot start it (no directory {cwd!r})")
                try:
                    proc = subprocess.Popen(list(args), cwd=cwd, env=dict(env),
                                            stdin=subprocess.DEVNULL, stdout=out, stderr=err,
                                            start_new_session=True)
                except OSError as exc:  # FileNotFoundError, PermissionError
                    raise CommandError(f"{where}: cannot start it ({exc})") from exc
            self.live.add(proc.pid)
            deadline = None if timeout is None else time.monotonic() + timeout
            problem = None
            try:
                while True:
                    try:
                        returncode = proc.wait(timeout=_POLL_SECONDS)
                        break
                    except subprocess.TimeoutExpired:
                        pass
                    if deadline is not None and time.monotonic() > deadline:
                        problem = f"ran past its timeout of {timeout} s"
                        break
                    for name, fh in (("stdout", out), ("stderr", err)):
                        if os.fstat(fh.fileno()).st_size > bound:
                            problem = (
                                f"wrote more than {bound / 2**20:g} MiB to its {name} (the "
                                "bound: CommandExecutor(max_output_bytes=...), by default "
                                "pytest_graphnetz.runner.command.process.MAX_OUTPUT_BYTES) and was "
                                "stopped; print less (a line per epoch, not per batch) or log "
                                "to a file of the script's own")
                    if problem is not None:
                        break
            finally:
                self._kill_group(proc)
        stdout, stderr = _read_tail(out_path), _read_tail(err_path)
        if problem is not None:
            raise CommandError(f"{where} {problem}{stderr_tail(stderr)}")
        return Finished(returncode, stdout, stderr)

    def _kill_group(self, proc: Any) -> None:
        """SIGKILL ``proc``'s process group (the script and everything it started), then reap
        it."""
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(proc.pid, signal.SIGKILL)
        with contextlib.suppress(subprocess.TimeoutExpired):
            proc.wait(timeout=10)
        self.live.discard(proc.pid)

    def kill_all(self) -> None:
        """SIGKILL the group of every run in progress."""
        for group in list(self.live):
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.killpg(group, signal.SIGKILL)

    def install(self) -> None:
        """From the main thread, once until :meth:`close`: on SIGTERM kill the live groups,
        then do what the handler before did (the default: terminate). A script's group is a
        session of its own, so the terminal's SIGINT and a SIGTERM sent to this process never
        reach it by themselves."""
        if self._handler is not None or threading.current_thread() is not threading.main_thread():
            return
        previous = signal.getsignal(signal.SIGTERM)

        def on_sigterm(signum: int, frame: Any) -> None:
            self.kill_all()
            if self.on_terminate is not None:
                with contextlib.suppress(Exception):
                    self.on_terminate()
            if callable(previous):
                previous(signum, frame)
            elif previous != signal.SIG_IGN:
                signal.signal(signal.SIGTERM, signal.SIG_DFL)
                os.kill(os.getpid(), signal.SIGTERM)

        with contextlib.suppress(ValueError, OSError):
            signal.signal(signal.SIGTERM, on_sigterm)
            self._previous, self._handler = previous, on_sigterm

    def close(self) -> None:
        """Kill what still runs; put back the SIGTERM handler before ours (when ours is still
        the one installed: a handler installed after it keeps calling it, harmlessly)."""
        self.kill_all()
        if self._handler is None:
            return
        with contextlib.suppress(ValueError, OSError):
            if signal.getsignal(signal.SIGTERM) is self._handler:
                signal.signal(signal.SIGTERM, self._previous)
        self._previous = self._handler = None


def _read_tail(path: Path) -> str:
    with path.open("rb") as fh:
        size = fh.seek(0, os.SEEK_END)
        fh.seek(max(0, size - _TAIL_BYTES))
        data = fh.read()
    text = data.decode("utf-8", "replace")
    if size <= _TAIL_BYTES:
        return text
    # The first line read is cut; it is dropped unless it is all there is (one long line).
    rest = text.partition("\n")[2]
    return rest if rest.strip() else "..." + text.lstrip("\ufffd")


def stderr_tail(text: str | bytes | None) -> str:
    """The last :data:`STDERR_LINES` lines of ``text`` as an error message ends with them."""
    if isinstance(text, bytes):
        text = text.decode("utf-8", "replace")
    lines = (text or "").rstrip().splitlines()[-STDERR_LINES:]
    tail = "\n".join(lines)
    if len(tail) > STDERR_CHARS:
        tail = "..." + tail[-STDERR_CHARS:]
    return "; its stderr ends:\n" + tail if lines else "; no stderr"

