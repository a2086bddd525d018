"""A fork server for command tasks: torch and PyG imported once, each run a fresh forked child.

Started as ``python command_server.py`` by :mod:`pytest_graphnetz.tasks.command_warm` with the
environment of the runs it will serve (thread counts, ``PYTHONHASHSEED``, devices: what is read
at import). It imports ``torch`` and ``torch_geometric`` (those present), then reads one JSON
request per line on stdin: ``{"argv", "cwd", "env", "stdout", "stderr"}``. For each it forks a
child that becomes a session of its own, moves to ``cwd``, takes ``env`` as its whole
environment, writes its output to the two files and runs :mod:`.command_child` (the script as
``__main__``, its reads recorded) as a fresh ``python command_child.py ...`` would; the server
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
import json  # noqa: E402
import os  # noqa: E402
import traceback  # noqa: E402
from typing import Any  # noqa: E402

PRELOAD = ("numpy", "torch", "torch_geometric")


def _child_module() -> Any:
    path = os.path.join(os.path.dirname(os.path.abspath(__file__)), "command_child.py")
    spec = importlib.util.spec_from_file_location("graphnetz_command_child", path)
    if spec is None or spec.loader is None:
        raise ImportError(path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _run_child(request: dict) -> int:
    """In the forked child: become the run, and return its exit code."""
    os.setsid()
    for fd, name, flags in ((1, "stdout", os.O_WRONLY | os.O_APPEND),
                            (2, "stderr", os.O_WRONLY | os.O_APPEND),
                            (0, None, os.O_RDONLY)):
        target = os.open(request[name] if name else os.devnull, flags)
        os.dup2(target, fd)
        os.close(target)
    os.chdir(request["cwd"])
    os.environ.clear()
    os.environ.update(request["env"])
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
    try:
        atexit._run_exitfuncs()  # the script's handlers (graphnetz.record writes its file)
    except BaseException:  # noqa: BLE001
        traceback.print_exc()
    for stream in (sys.stdout, sys.stderr):
        with contextlib.suppress(Exception):
            stream.flush()
    return code


def serve() -> None:
    import warnings

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
    requests = os.fdopen(os.dup(0), "r", encoding="utf-8")
    answers = os.fdopen(os.dup(1), "w", encoding="utf-8")
    null = os.open(os.devnull, os.O_RDWR)
    os.dup2(null, 0)
    os.dup2(null, 1)
    answers.write(json.dumps({"ready": os.getpid()}) + "\n")
    answers.flush()
    for line in requests:
        request = json.loads(line)
        sys.stdout.flush()
        sys.stderr.flush()
        pid = os.fork()
        if pid == 0:
            code = 1
            try:
                requests.close()
                answers.close()
                code = _run_child(request)
            finally:
                os._exit(code & 0xFF if code >= 0 else 1)
        answers.write(json.dumps({"pid": pid}) + "\n")
        answers.flush()
        _, status = os.waitpid(pid, 0)
        answers.write(json.dumps({"status": os.waitstatus_to_exitcode(status)}) + "\n")
        answers.flush()


if __name__ == "__main__":
    serve()
