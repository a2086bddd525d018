"""The child side of a command task's run: run a script as ``__main__`` and record what it read.

Started as ``python [flags] child.py READS -- script.py args...`` (or ``-- -m module
args...``) by :mod:`pytest_graphnetz.runner.command.run`. It installs an audit hook
(:func:`sys.addaudithook`), recording ``os.environ``, ``os.environb`` and ``posix.environ``,
and wrappers of ``os.stat``, ``os.lstat`` and ``os.access`` (no audit event exists for a
stat), runs the script with :mod:`runpy` as Python would (``sys.argv``, ``sys.path[0]`` the
script's directory, ``__main__``), and at exit writes to ``READS`` (JSON):

- ``files``: ``{path: sha256}`` of each regular file opened for reading (an ``open``, a
  ``sqlite3.connect``), hashed when it was first opened, unless this run wrote it first (then
  it is in ``produced``: derived data);
- ``produced``: paths opened for writing, made (``mkdir``) or renamed to; ``reread``: those
  of them read back (derived data, such as PyG's ``processed/`` files on their first run);
- ``dirs``: ``{path: sha256 of the sorted names}`` of each directory listed;
- ``env``: ``{name: sha256 of the value, or null when unset}`` of each variable looked up, by
  any code and through any interface, as it was first looked up (a variable the run set,
  through ``os.environ`` or ``os.putenv``, before it looked it up is the run's own: left out);
- ``modules``: the source files of the modules imported, and of any other Python code run
  (``exec``/``compile`` of a file, ``runpy``, a module loaded by ``importlib`` outside
  ``sys.modules``);
- ``exists``: ``{path: "file" | "dir" | "other" | null}`` of each path whose existence or
  kind was checked (``os.path.exists``, ``isfile``, ``isdir``, ``os.stat``, ``os.access``) or
  that failed to open (null: absent), as it was at the first check.

Left out: paths in library locations (the interpreter's prefixes, site-packages: installed
distributions count by their versions), ``/proc`` and ``/sys`` (the process's and machine's
state, different in every run), character devices (``/dev/null``, ``/dev/urandom``), the
import system's own probing, and bytecode. Only the standard library is imported here (this
file may run under another interpreter than the runner's); its own directory is taken off
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
import stat  # noqa: E402
import threading  # noqa: E402
import types  # noqa: E402

_SKIP_SUFFIXES = (".pyc", ".pyo", ".pth")
_EXTENSION_SUFFIXES = (".so", ".pyd", ".dylib", ".dll")
_BUSY = threading.local()  # set while the recorder itself looks at a file
# Variables that pytest sets per test or per worker: they never carry a script's data.
_VOLATILE_ENV = ("PYTEST_CURRENT_TEST",)
_VOLATILE_ENV_PREFIXES = ("PYTEST_XDIST_",)


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


def _kind(mode: int | None) -> str | None:
    if mode is None:
        return None
    return "file" if stat.S_ISREG(mode) else "dir" if stat.S_ISDIR(mode) else "other"


class Recorder:
    def __init__(self, reads: str, script: str | None = None) -> None:
        self.reads = reads
        self.script = os.path.realpath(script) if script else None
        self.ignore = (os.path.dirname(os.path.abspath(reads)) + os.sep,
                       "/proc/", "/sys/", *_library_prefixes())
        self.files: dict[str, str | None] = {}
        self.produced: set[str] = set()
        self.reread: set[str] = set()
        self.dirs: dict[str, str] = {}
        self.env: dict[str, str | None] = {}
        self.own_env: set[str] = set()   # set by the run before it read them: not inputs
        self.code: set[str] = set()
        self.exists: dict[str, str | None] = {}
        self._skipped: dict[str, bool] = {}

    def skipped(self, path: str) -> bool:
        known = self._skipped.get(path)
        if known is None:
            known = path.endswith(_SKIP_SUFFIXES) or path.startswith(self.ignore) or \
                os.path.realpath(path).startswith(self.ignore) or path in ("/proc", "/sys")
            if len(self._skipped) < 65536:
                self._skipped[path] = known
        return known

    def hook(self, event: str, args: tuple) -> None:
        if event not in _EVENTS or getattr(_BUSY, "on", False):
            return
        _BUSY.on = True
        try:
            if event == "open":
                path, mode, flags = (tuple(args) + (None, None))[:3]
                if isinstance(path, (str, bytes, os.PathLike)):
                    self.opened(os.path.abspath(os.fsdecode(path)), mode, flags)
            elif event in ("exec", "compile"):
                name = args[0].co_filename if event == "exec" else args[1]
                if isinstance(name, (str, bytes)) and not os.fsdecode(name).startswith("<"):
                    self.ran(os.path.abspath(os.fsdecode(name)))
            elif event == "sqlite3.connect":
                self.connected(args[0] if args else None)
            elif event == "os.rename" and len(args) >= 2 and \
                    isinstance(args[1], (str, bytes, os.PathLike)):
                self.produced.add(os.path.abspath(os.fsdecode(args[1])))
            elif event == "os.mkdir" and args and isinstance(args[0], (str, bytes, os.PathLike)):
                self.produced.add(os.path.abspath(os.fsdecode(args[0])))
            elif event in ("os.putenv", "os.unsetenv") and args:
                key = args[0]
                name = os.fsdecode(key) if isinstance(key, bytes) else str(key)
                if name not in self.env:   # a later read sees the run's own value
                    self.own_env.add(name)
            elif event in ("os.listdir", "os.scandir") and args and \
                    isinstance(args[0], (str, bytes, os.PathLike)) and \
                    not _by_import_system(sys._getframe()):
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
        try:
            mode_bits = os.stat(path).st_mode
        except OSError:
            if not _by_import_system(sys._getframe()):
                self.exists.setdefault(path, None)   # a failed open: absent
            return
        if not stat.S_ISREG(mode_bits):
            return   # a directory, a FIFO, a character device: no content to key
        if path.endswith(".py"):
            self.ran(path)
            return
        self.files[path] = _sha256(path)

    def ran(self, path: str) -> None:
        """Python code run from the file ``path``: counted by its normalised code."""
        if path.endswith(".py") and path != _HERE and not self.skipped(path) and \
                os.path.realpath(path) != self.script and os.path.isfile(path):
            self.code.add(path)

    def connected(self, database: object) -> None:
        if isinstance(database, (bytes, os.PathLike)):
            database = os.fsdecode(database)
        if not isinstance(database, str) or database in ("", ":memory:"):
            return
        if database.startswith("file:"):   # an sqlite URI: file:path?mode=ro
            database = database[5:].partition("?")[0]
            if not database or database == ":memory:":
                return
        path = os.path.abspath(database)
        if os.path.isfile(path):
            for part in (path, path + "-wal"):
                if os.path.isfile(part):
                    self.opened(part, "rb", None)
        else:
            self.produced.add(path)   # sqlite makes it: this run's own data

    def checked(self, path: object, mode: int | None, frame: types.FrameType | None) -> None:
        """A stat-family check of ``path`` found it of kind ``mode`` (None: absent)."""
        if getattr(_BUSY, "on", False) or isinstance(path, int):
            return
        _BUSY.on = True
        try:
            full = os.path.abspath(os.fsdecode(path))  # type: ignore[arg-type]
            if full in self.exists or (mode is not None and stat.S_ISCHR(mode)) or \
                    self.skipped(full) or _by_import_system(frame):
                return
            if mode is not None and stat.S_ISDIR(mode) and \
                    any(p.startswith(full.rstrip(os.sep) + os.sep) for p in self.ignore):
                return   # a directory above a library's (os.path.realpath walks them)
            self.exists[full] = _kind(mode)
        except Exception:  # noqa: BLE001, S110 - never break the check itself
            pass
        finally:
            _BUSY.on = False

    def listed(self, path: str) -> None:
        if path in self.dirs or self.skipped(path) or not os.path.isdir(path):
            return
        names = sorted(n for n in os.listdir(path) if n != "__pycache__")
        self.dirs[path] = hashlib.sha256("\0".join(names).encode()).hexdigest()

    def write(self) -> None:
        _BUSY.on = True
        loaded = [f for m in list(sys.modules.values())
                  for f in [getattr(m, "__file__", None)] if isinstance(f, str)]
        for f in loaded:
            full = os.path.abspath(f)
            if full.endswith(".py"):
                self.ran(full)
            elif full.endswith(_EXTENSION_SUFFIXES) and full not in self.files and \
                    not self.skipped(full) and os.path.isfile(full):
                self.files[full] = _sha256(full)   # an extension module of the project's
        record = {"files": self.files, "produced": sorted(self.produced),
                  "reread": sorted(self.reread), "dirs": self.dirs,
                  "env": self.env, "modules": sorted(self.code),
                  "exists": self.exists, "torch": "torch" in sys.modules}
        tmp = f"{self.reads}.tmp"
        with open(tmp, "w", encoding="utf-8") as fh:
            json.dump(record, fh)
        os.replace(tmp, self.reads)


_EVENTS = frozenset({"open", "exec", "compile", "sqlite3.connect", "os.rename", "os.mkdir",
                     "os.listdir", "os.scandir", "os.putenv", "os.unsetenv"})


def _sha256(path: str) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as fh:
        for block in iter(lambda: fh.read(1 << 20), b""):
            h.update(block)
    return h.hexdigest()


def _by_import_system(frame: types.FrameType | None) -> bool:
    """Whether the code that lists or probes a path is the import system's (finders caching
    the names on ``sys.path``, ``importlib.metadata`` looking for distributions): not a read
    of the run's data."""
    while frame is not None and (frame.f_code.co_filename == _HERE
                                 or frame.f_code.co_filename.endswith(_PASS_THROUGH)):
        frame = frame.f_back
    if frame is None:
        return False
    name = frame.f_code.co_filename
    return name.startswith(("<frozen importlib", "<frozen zipimport")) or \
        f"{os.sep}importlib{os.sep}" in name or name.endswith(f"{os.sep}pkgutil.py")


# Modules whose functions only pass a check on (os.path.exists calls os.stat): the caller that
# counts is the one that called them.
_PASS_THROUGH = tuple(os.sep + name for name in ("genericpath.py", "posixpath.py", "pathlib.py",
                                                 "os.py", "glob.py"))


_HERE = os.path.abspath(__file__)


def _record_checks(recorder: Recorder) -> None:
    """Wrap ``os.stat``, ``os.lstat`` and ``os.access`` (``os.path.exists``, ``isfile``,
    ``isdir``, ``lexists`` and ``pathlib`` call them): each check notes the kind of its path.
    The import system calls ``posix`` directly and is not seen."""
    real_stat, real_lstat, real_access = os.stat, os.lstat, os.access

    def wrap(real):
        def checked(path, *args, **kwargs):
            try:
                result = real(path, *args, **kwargs)
            except OSError:
                if kwargs.get("dir_fd") is None:
                    recorder.checked(path, None, sys._getframe(1))
                raise
            if kwargs.get("dir_fd") is None:
                recorder.checked(path, result.st_mode, sys._getframe(1))
            return result
        checked.__wrapped__ = real
        return checked

    def access(path, mode, *args, **kwargs):
        result = real_access(path, mode, *args, **kwargs)
        if not getattr(_BUSY, "on", False) and not isinstance(path, int) and \
                kwargs.get("dir_fd") is None:
            try:
                found: int | None = real_stat(path).st_mode
            except (OSError, TypeError, ValueError):
                found = None
            recorder.checked(path, found, sys._getframe(1))
        return result

    access.__wrapped__ = real_access  # type: ignore[attr-defined]
    os.stat, os.lstat, os.access = wrap(real_stat), wrap(real_lstat), access


# The last scan of the whole environment in this thread: (id of the frame that scanned, names
# not yet looked up by it). Copying the environment (``os.environ.copy()``, ``dict(os.environ)``,
# ``{**os.environ}``, torch's import) passes it on; it is not a read of each variable.
_BULK = threading.local()
_ENV_FILES = (os.path.abspath(os.__file__),
              os.path.abspath(getattr(sys.modules.get("_collections_abc"), "__file__", "") or
                              "_collections_abc.py"))


def _env_origin(frame: types.FrameType | None) -> types.FrameType | None:
    """The first frame outside ``os``, ``_collections_abc`` and this file."""
    while frame is not None and (frame.f_code.co_filename in _ENV_FILES
                                 or frame.f_code.co_filename == _HERE
                                 or frame.f_code.co_filename.startswith("<frozen")):
        frame = frame.f_back
    return frame


def _note_env(recorder: Recorder, key: object, value: object) -> None:
    name = os.fsdecode(key) if isinstance(key, bytes) else str(key)
    if name in _VOLATILE_ENV or name.startswith(_VOLATILE_ENV_PREFIXES) or \
            name in recorder.own_env:
        return
    if isinstance(value, bytes):
        value = os.fsdecode(value)
    recorder.env.setdefault(name, None if value is None else
                            hashlib.sha256(str(value).encode()).hexdigest())


def _record_environ(recorder: Recorder) -> None:
    """Make ``os.environ``, ``os.environb`` and ``posix.environ`` note each variable looked up
    (``[...]``, ``.get``, ``in``, ``os.getenv``, ``os.getenvb``, a library's ``envvar=``), by
    any code: the value's sha256, or None when it is unset."""
    for name in ("environ", "environb"):
        mapping = getattr(os, name, None)
        if mapping is None:
            continue
        base = type(mapping)

        class Recording(base):  # type: ignore[misc, valid-type]
            def __getitem__(self, key, _base=base):
                try:
                    value = _base.__getitem__(self, key)
                except KeyError:
                    _note_env(recorder, key, None)
                    raise
                scan = getattr(_BULK, "scan", None)
                if scan is not None and key in scan[1] and \
                        scan[0] == id(_env_origin(sys._getframe(1))):
                    scan[1].discard(key)   # part of a copy of the whole environment
                else:
                    _note_env(recorder, key, value)
                return value

            def __iter__(self, _base=base):
                names: set = set()
                _BULK.scan = (id(_env_origin(sys._getframe(1))), names)
                for key in _base.__iter__(self):
                    names.add(key)
                    yield key

        mapping.__class__ = Recording
    import posix

    class RecordingDict(dict):
        def __getitem__(self, key):
            try:
                value = dict.__getitem__(self, key)
            except KeyError:
                _note_env(recorder, key, None)
                raise
            _note_env(recorder, key, value)
            return value

        def get(self, key, default=None):
            _note_env(recorder, key, dict.get(self, key))
            return dict.get(self, key, default)

        def __contains__(self, key):
            _note_env(recorder, key, dict.get(self, key))
            return dict.__contains__(self, key)

    posix.environ = RecordingDict(posix.environ)


def main(argv: list[str]) -> None:
    reads, sep, *command = argv
    if sep != "--" or not command:
        raise SystemExit("child.py: usage: READS -- script.py args... | -m module args...")
    recorder = Recorder(reads, None if command[0] == "-m" else command[0])
    atexit.register(recorder.write)  # registered first: runs after the script's own handlers
    _record_environ(recorder)
    _record_checks(recorder)
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
