"""The child side of a command task's run: run a script as ``__main__`` and record what it read.

Started as ``python [flags] command_child.py READS -- script.py args...`` (or ``-- -m module
args...``) by :mod:`pytest_graphnetz.tasks.command_run`. It installs an audit hook
(:func:`sys.addaudithook`) and a recording ``os.environ``, runs the script with :mod:`runpy` as
Python would (``sys.argv``, ``sys.path[0]`` the script's directory, ``__main__``), and at exit
writes to ``READS`` (JSON):

- ``files``: ``{path: sha256}`` of each regular file opened for reading, hashed when it was
  first opened, unless this run wrote it first (then it is in ``produced``: derived data);
- ``produced``: paths opened for writing, or renamed to; ``reread``: those of them read back
  (derived data, such as PyG's ``processed/`` files on their first run);
- ``dirs``: ``{path: sha256 of the sorted names}`` of each directory listed;
- ``env``: ``{name: sha256 of the value, or null when unset}`` of each variable looked up;
- ``modules``: the source files of the modules imported.

Library and system locations (the interpreter's prefixes, site-packages, /proc, /sys, /dev) and
bytecode, extension and ``.pth`` files are left out. Only the standard library is imported here
(this file may run under another interpreter than the runner's); its own directory is taken off
``sys.path`` first, so no module beside it can shadow one of the standard library.
"""

from __future__ import annotations

import sys

if __name__ == "__main__" and not (sys.flags.isolated or getattr(sys.flags, "safe_path", False)):
    del sys.path[0]  # this file's directory: nothing here may shadow the standard library

import atexit  # noqa: E402
import hashlib  # noqa: E402
import json  # noqa: E402
import os  # noqa: E402
import runpy  # noqa: E402
import threading  # noqa: E402
import types  # noqa: E402

_SKIP_SUFFIXES = (".py", ".pyc", ".pyo", ".pyd", ".so", ".dylib", ".dll", ".pth", ".lock")
_BUSY = threading.local()  # set while the hook itself opens a file


def _library_prefixes() -> tuple[str, ...]:
    import site
    import sysconfig

    dirs = {sys.prefix, sys.base_prefix, sys.exec_prefix, sys.base_exec_prefix}
    dirs.update(v for k, v in sysconfig.get_paths().items() if k != "scripts" and k != "data")
    try:
        dirs.update(site.getsitepackages())
        dirs.add(site.getusersitepackages())
    except AttributeError:
        pass
    dirs.update(p for p in sys.path if "site-packages" in p or "dist-packages" in p)
    out = set()
    for d in dirs:
        if d:
            out.add(os.path.realpath(d).rstrip(os.sep) + os.sep)
            out.add(os.path.abspath(d).rstrip(os.sep) + os.sep)
    return tuple(sorted(out))


class Recorder:
    def __init__(self, reads: str) -> None:
        self.reads = reads
        self.ignore = (os.path.dirname(os.path.abspath(reads)) + os.sep,
                       "/proc/", "/sys/", "/dev/", *_library_prefixes())
        self.files: dict[str, str | None] = {}
        self.produced: set[str] = set()
        self.reread: set[str] = set()
        self.dirs: dict[str, str] = {}
        self.env: dict[str, str | None] = {}

    def skipped(self, path: str) -> bool:
        return path.endswith(_SKIP_SUFFIXES) or path.startswith(self.ignore) or \
            os.path.realpath(path).startswith(self.ignore)

    def hook(self, event: str, args: tuple) -> None:
        if event not in ("open", "os.rename", "os.listdir", "os.scandir") or \
                getattr(_BUSY, "on", False):
            return
        _BUSY.on = True
        try:
            if event == "open":
                path, mode, flags = (tuple(args) + (None, None))[:3]
                if isinstance(path, (str, bytes, os.PathLike)):
                    self.opened(os.path.abspath(os.fsdecode(path)), mode, flags)
            elif event == "os.rename" and len(args) >= 2 and \
                    isinstance(args[1], (str, bytes, os.PathLike)):
                self.produced.add(os.path.abspath(os.fsdecode(args[1])))
            elif args and isinstance(args[0], (str, bytes, os.PathLike)) and \
                    not _by_import_system(sys._getframe(1)):
                self.listed(os.path.abspath(os.fsdecode(args[0])))
        except Exception:  # noqa: BLE001, S110 - the hook must never break the audited call
            pass
        finally:
            _BUSY.on = False

    def opened(self, path: str, mode: object, flags: object) -> None:
        if isinstance(mode, str):
            writes = any(c in mode for c in "wxa")
            reads = "r" in mode or "+" in mode and not writes
        else:
            access = flags & os.O_ACCMODE if isinstance(flags, int) else os.O_RDONLY
            writes = access != os.O_RDONLY or bool(isinstance(flags, int)
                                                   and flags & (os.O_CREAT | os.O_TRUNC))
            reads = not writes
        if writes:
            if path not in self.files:
                self.produced.add(path)
            return
        if reads and path in self.produced and not self.skipped(path):
            self.reread.add(path)   # derived data: made by this run, then read back
        if not reads or path in self.files or path in self.produced or self.skipped(path):
            return
        if not os.path.isfile(path):
            return
        h = hashlib.sha256()
        with open(path, "rb") as fh:
            for block in iter(lambda: fh.read(1 << 20), b""):
                h.update(block)
        self.files[path] = h.hexdigest()

    def listed(self, path: str) -> None:
        if path in self.dirs or self.skipped(path) or not os.path.isdir(path):
            return
        names = sorted(n for n in os.listdir(path) if n != "__pycache__")
        self.dirs[path] = hashlib.sha256("\0".join(names).encode()).hexdigest()

    def write(self) -> None:
        _BUSY.on = True
        modules = sorted({os.path.abspath(f) for m in list(sys.modules.values())
                          for f in [getattr(m, "__file__", None)]
                          if isinstance(f, str) and f.endswith(".py")
                          and not self.skipped(f[:-3]) and os.path.abspath(f) != _HERE})
        record = {"files": self.files, "produced": sorted(self.produced),
                  "reread": sorted(self.reread), "dirs": self.dirs,
                  "env": self.env, "modules": modules, "torch": "torch" in sys.modules}
        tmp = f"{self.reads}.tmp"
        with open(tmp, "w", encoding="utf-8") as fh:
            json.dump(record, fh)
        os.replace(tmp, self.reads)


def _by_import_system(frame: types.FrameType | None) -> bool:
    """Whether the code that lists a directory is the import system's (finders caching the
    names on ``sys.path``, ``importlib.metadata`` looking for distributions): not the
    script's own reading."""
    if frame is None:
        return False
    name = frame.f_code.co_filename
    return name.startswith(("<frozen importlib", "<frozen zipimport")) or \
        f"{os.sep}importlib{os.sep}" in name or name.endswith(f"{os.sep}pkgutil.py")


_HERE = os.path.abspath(__file__)
_ABC_FILE = getattr(sys.modules.get("_collections_abc"), "__file__", None) or ""


def _record_environ(recorder: Recorder) -> None:
    """Make ``os.environ`` note each variable looked up (``os.environ[...]``, ``.get``,
    ``in``, ``os.getenv``): the value's sha256, or None when it is unset."""
    base = type(os.environ)

    def asked_by_user_code() -> bool:
        # The frame that asked, past os.getenv, Mapping.get and the other frozen modules of the
        # standard library: a read by a library's own code (torch's, tempfile's) is the
        # library's setting, not the script's.
        frame: types.FrameType | None = sys._getframe(2)
        while frame is not None and (frame.f_code.co_filename in (os.__file__, _ABC_FILE)
                                     or frame.f_code.co_filename.startswith("<frozen")):
            frame = frame.f_back
        if frame is None:
            return False
        name = frame.f_code.co_filename
        return not (name.startswith(recorder.ignore)
                    or os.path.realpath(name).startswith(recorder.ignore))

    class RecordingEnviron(base):  # type: ignore[misc, valid-type]
        def __getitem__(self, key: str) -> str:
            try:
                value = base.__getitem__(self, key)
            except KeyError:
                if asked_by_user_code():
                    recorder.env.setdefault(str(key), None)
                raise
            if asked_by_user_code():
                recorder.env.setdefault(str(key), hashlib.sha256(value.encode()).hexdigest())
            return value

    os.environ.__class__ = RecordingEnviron


def main(argv: list[str]) -> None:
    reads, sep, *command = argv
    if sep != "--" or not command:
        raise SystemExit("command_child.py: usage: READS -- script.py args... | -m module args...")
    recorder = Recorder(reads)
    atexit.register(recorder.write)  # registered first: runs after the script's own handlers
    _record_environ(recorder)
    sys.addaudithook(recorder.hook)
    isolated = bool(sys.flags.isolated or getattr(sys.flags, "safe_path", False))
    if command[0] == "-m":
        sys.argv = [command[1], *command[2:]]
        if not isolated:
            sys.path.insert(0, os.getcwd())
        runpy.run_module(command[1], run_name="__main__", alter_sys=True)
    else:
        sys.argv = list(command)
        if not isolated:
            sys.path.insert(0, os.path.dirname(os.path.realpath(command[0])))
        runpy.run_path(command[0], run_name="__main__")


if __name__ == "__main__":
    main(sys.argv[1:])
