"""A fork server for command tasks: torch and PyG imported once, each run a fresh forked child.

Started as ``python server.py`` by :mod:`pytest_graphnetz.runner.command.warm` with the
environment of the runs it will serve (thread counts, ``PYTHONHASHSEED``, devices: what is read
at import). It imports ``torch`` and ``torch_geometric`` (those present), then reads one JSON
request per line on stdin: ``{"argv", "cwd", "env", "stdout", "stderr"}``. For each it forks a
child that becomes a session of its own, moves to ``cwd``, takes ``env`` as its whole
environment, writes its output to the two files and runs :mod:`.child` (the script as
``__main__``, its reads recorded) as a fresh ``python child.py ...`` would; the server
answers ``{"pid": ...}``, then ``{"status": exit code, negative for a signal}`` when it ends.
End of stdin ends the server. Only the standard library is imported here besides the preloads.
"""

import sys

if __name__ == "__main__" and not (sys.flags.isolated or getattr(sys.flags, "safe_path", False)):
    del sys.path[0]  # this file's directory: nothing here may shadow the standard library

import atexit  # noqa: E402
import contextlib  # noqa: E402
import gc  # noqa: E402
import importlib.util  # noqa: E402
import io  # noqa: E402
import json  # noqa: E402
import os  # noqa: E402
import select  # noqa: E402
import signal  # noqa: E402
from typing import Any, NoReturn  # noqa: E402

PRELOAD = ("numpy", "torch", "torch_geometric")


def _child_module() -> Any:
    path = os.path.join(os.path.dirname(os.path.abspath(__file__)), "child.py")
    spec = importlib.util.spec_from_file_location("graphnetz_command_child", path)
    if spec is None or spec.loader is None:
        raise ImportError(path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def tie_to_parent(signum: int) -> None:
    """Have the kernel send ``signum`` to this process when the thread that started it ends
    (Linux ``prctl(PR_SET_PDEATHSIG)``; nothing elsewhere)."""
    if not sys.platform.startswith("linux"):
        return
    with contextlib.suppress(OSError, AttributeError):
        import ctypes

        ctypes.CDLL(None, use_errno=True).prctl(1, int(signum), 0, 0, 0)  # PR_SET_PDEATHSIG


def _fresh_state() -> None:
    """What a new interpreter starts with that the server's fork would share: the global
    random states of ``random``, NumPy's legacy ``np.random`` and torch's default generator,
    each seeded from the OS's entropy as a fresh import seeds it."""
    import random

    random.seed()
    numpy = sys.modules.get("numpy")
    if numpy is not None:
        with contextlib.suppress(Exception):
            numpy.random.seed()
    torch = sys.modules.get("torch")
    if torch is not None:
        with contextlib.suppress(Exception):
            torch.default_generator.seed()


def _flush_open_files() -> None:
    """Flush every file the run left open, as a cold run's shutdown does when it closes
    them. A file the script left unclosed in a reference cycle (a module global beside a
    function) is closed by the shutdown's collection; in a child of this server that
    collection freed it with its text unwritten (the file was empty, where a cold run's held
    it). Objects made before the fork (frozen) are not searched: the run opened none."""
    files = [obj for obj in gc.get_objects() if isinstance(obj, io.IOBase)]
    for file in sorted(files, key=lambda f: not isinstance(f, io.TextIOBase)):
        with contextlib.suppress(Exception):
            if not file.closed and file.writable():
                file.flush()


def _run_child(request: dict, server: int) -> int:
    """In the forked child: become the run, run the script, and return its exit code; the
    interpreter's normal shutdown (threads joined, exit handlers, files flushed and closed)
    follows, as after a cold run."""
    os.setsid()
    signal.signal(signal.SIGTERM, signal.SIG_DFL)
    tie_to_parent(signal.SIGKILL)   # the server has one thread: its death ends this run
    if os.getppid() != server:
        os._exit(1)                 # the server ended between fork and prctl
    for fd, name, flags in ((1, "stdout", os.O_WRONLY | os.O_APPEND),
                            (2, "stderr", os.O_WRONLY | os.O_APPEND),
                            (0, None, os.O_RDONLY)):
        target = os.open(request[name] if name else os.devnull, flags)
        os.dup2(target, fd)
        os.close(target)
    os.chdir(request["cwd"])
    os.environ.clear()
    os.environ.update(request["env"])
    import posix

    posix.environ.clear()
    posix.environ.update({os.fsencode(k): os.fsencode(v) for k, v in request["env"].items()})
    _fresh_state()
    atexit.register(_flush_open_files)   # registered first: the last exit handler to run
    code = 0
    try:
        _child_module().main(list(request["argv"]))
    except SystemExit as exc:
        if exc.code is None:
            code = 0
        elif isinstance(exc.code, int):
            code = exc.code
        else:
            print(exc.code, file=sys.stderr)
            code = 1
    except BaseException:  # noqa: BLE001 - reported as Python reports an uncaught exception
        sys.excepthook(*sys.exc_info())
        code = 1
    return code


class _Requests:
    """Lines from the runner's pipe, read without blocking past what select says is there."""

    def __init__(self, fd: int) -> None:
        self.fd, self.buffer, self.closed = fd, b"", False

    def fill(self) -> None:
        chunk = os.read(self.fd, 65536)
        if chunk:
            self.buffer += chunk
        else:
            self.closed = True   # the runner ended (any way, SIGKILL included)

    def line(self) -> bytes | None:
        while b"\n" not in self.buffer:
            if self.closed:
                return None
            self.fill()
        line, _, self.buffer = self.buffer.partition(b"\n")
        return line


_RUNNING: list[int] = []   # the process group of the run in progress


def _end_run_and_exit(*_: Any) -> NoReturn:
    for group in _RUNNING:
        with contextlib.suppress(OSError):
            os.killpg(group, signal.SIGKILL)
    os._exit(1)


def _wait(pid: int, requests: _Requests) -> int | None:
    """The run's exit status; None when the runner's pipe closed first (the run's group is
    then killed)."""
    pidfd = None
    with contextlib.suppress(OSError, AttributeError):
        pidfd = os.pidfd_open(pid)
    try:
        while True:
            ready = select.select([requests.fd] + ([pidfd] if pidfd is not None else []), [],
                                  [], None if pidfd is not None else 0.05)[0]
            if requests.fd in ready:
                requests.fill()
                if requests.closed:
                    return None
            done, status = os.waitpid(pid, 0 if pidfd in ready else os.WNOHANG)
            if done:
                return status
    finally:
        if pidfd is not None:
            os.close(pidfd)


def serve(tied: bool) -> None:
    import warnings

    signal.signal(signal.SIGTERM, _end_run_and_exit)
    if tied:   # started by the runner's main thread: ends when the runner does
        tie_to_parent(signal.SIGTERM)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for name in PRELOAD:
            with contextlib.suppress(ImportError):
                __import__(name)
    _child_module()   # compiled once here; each child executes it afresh
    # Objects made so far (torch's, PyG's) go to the permanent generation: a collection in a
    # child would otherwise touch every one of them and copy each page it writes to (fork's
    # copy-on-write), which took most of a warm run's time.
    gc.freeze()
    requests = _Requests(os.dup(0))
    answers = os.fdopen(os.dup(1), "w", encoding="utf-8")
    null = os.open(os.devnull, os.O_RDWR)
    os.dup2(null, 0)
    os.dup2(null, 1)
    answers.write(json.dumps({"ready": os.getpid()}) + "\n")
    answers.flush()
    server = os.getpid()
    while True:
        line = requests.line()
        if line is None:
            return
        request = json.loads(line)
        sys.stdout.flush()
        sys.stderr.flush()
        pid = os.fork()
        if pid == 0:
            try:
                os.close(requests.fd)
                answers.close()
                code = _run_child(request, server)
            except BaseException:  # noqa: BLE001 - never back into the server's loop
                os._exit(1)
            sys.exit(code)   # the interpreter's own shutdown, as a cold run ends
        _RUNNING[:] = [pid]
        answers.write(json.dumps({"pid": pid}) + "\n")
        answers.flush()
        status = _wait(pid, requests)
        if status is None:
            _end_run_and_exit()
        _RUNNING.clear()
        answers.write(json.dumps({"status": os.waitstatus_to_exitcode(status)}) + "\n")
        answers.flush()


if __name__ == "__main__":
    serve(tied="--tied" in sys.argv[1:])
