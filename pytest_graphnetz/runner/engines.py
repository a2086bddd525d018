"""Executors by name: the factory ``--graphnetz-executor=module:factory`` names, loaded and
checked, and submitit's executors (Slurm job arrays, or its local executor) as a
``concurrent.futures.Executor`` the sweep can use.

A factory is a callable taking no argument that returns a ``concurrent.futures.Executor``
(a Dask client's ``client.get_executor(pure=False)``) or a submitit executor (wrapped in
:class:`SubmititExecutor`), or a generator function that yields one: the code after its
``yield`` runs when the pytest session ends (to close a Dask client and its cluster).
:func:`open_executor` calls it; :func:`load_factory` finds it and says what to fix when it
cannot. On an executor each triple describes the machine it runs on
(:func:`~.environment.machine`), so the report and the cache keys name the workers, not the
machine that submitted the work.

Standard library at import: the plugin loads this module at session start to check the
option, and nothing here may cost a pytest run torch or submitit.
"""

from __future__ import annotations

import contextlib
import importlib
import inspect
import threading
from collections.abc import Callable, Iterator
from concurrent.futures import Executor, Future
from typing import Any

# How often the watcher asks submitit whether its jobs are done (a file check for the local
# executor; Slurm's sacct is rate-limited by submitit's own watcher).
POLL_SECONDS = 0.2


class ExecutorFactoryError(ValueError):
    """A factory that cannot be loaded, or that gives no executor (the message names the
    option and the fix)."""


def load_factory(spec: str, *, option: str) -> Callable[[], Any]:
    """The callable named by ``spec`` (``package.module:attribute``, attributes dotted).

    ``option`` names where the spec came from in every message (``--graphnetz-executor``, or
    the ini key and its file)."""
    module_name, colon, attribute = str(spec).strip().partition(":")
    if not colon or not module_name or not attribute:
        raise ExecutorFactoryError(
            f"{option} {spec!r} is not `module:factory`: name the module and, after a colon, "
            "a function that returns a concurrent.futures.Executor (e.g. "
            "`mypkg.cluster:executor`; docs/distributed.md)")
    try:
        target: Any = importlib.import_module(module_name)
    except Exception as exc:  # noqa: BLE001 - an import error of any kind is the user's to see
        raise ExecutorFactoryError(
            f"{option} {spec!r}: module {module_name!r} does not import ({type(exc).__name__}: "
            f"{exc}); install it, or put its folder on the path with pytest's ini key "
            "`pythonpath` (e.g. `pythonpath = .` for a module beside the ini file), or fix "
            "the module") from exc
    for part in attribute.split("."):
        try:
            target = getattr(target, part)
        except AttributeError:
            raise ExecutorFactoryError(
                f"{option} {spec!r}: module {module_name!r} has no {attribute!r}; name a "
                "function defined there that returns a concurrent.futures.Executor") from None
    if not callable(target) or isinstance(target, Executor):
        raise ExecutorFactoryError(
            f"{option} {spec!r} is a {type(target).__name__}, not a factory: name a function "
            "taking no argument that returns (or yields) the executor, so that the session "
            "starts the cluster only when a test trains")
    return target


def open_executor(factory: Callable[[], Any], *, option: str
                  ) -> tuple[Executor, Callable[[], None]]:
    """Call ``factory``; the executor it gives and what closes it (the rest of a generator
    factory, then the executor's ``shutdown``)."""
    if inspect.isgeneratorfunction(factory):
        generator = factory()
        try:
            given = next(generator)
        except StopIteration:
            raise ExecutorFactoryError(
                f"{option}: the generator factory {_name(factory)} yielded nothing; yield the "
                "executor once (the code after the yield runs at session end)") from None
    else:
        generator, given = None, factory()
    try:
        executor = as_executor(given, where=f"{option} ({_name(factory)} returned it)")
    except TypeError:
        if generator is not None:
            generator.close()
        raise

    def close() -> None:
        try:
            executor.shutdown(wait=True)
        finally:
            if generator is not None:
                with contextlib.suppress(StopIteration):
                    next(generator)
    return executor, close


def as_executor(given: Any, *, where: str = "`executor`") -> Executor:
    """``given`` as a ``concurrent.futures.Executor``: itself, or a submitit executor wrapped
    in :class:`SubmititExecutor`; anything else is a TypeError naming ``where`` and the fix."""
    if isinstance(given, Executor):
        return given
    if _is_submitit_executor(given):
        return SubmititExecutor(given)
    raise TypeError(
        f"{where}: {given!r} ({type(given).__name__}) is not a concurrent.futures.Executor nor "
        "a submitit executor; return e.g. `distributed.Client(address).get_executor("
        "pure=False)` or `submitit.AutoExecutor(folder=...)` (docs/distributed.md)")


def _is_submitit_executor(value: Any) -> bool:
    return type(value).__module__.partition(".")[0] == "submitit" and all(
        callable(getattr(value, name, None)) for name in ("submit", "batch"))


def _name(factory: Callable[..., Any]) -> str:
    return f"{getattr(factory, '__module__', '?')}:{getattr(factory, '__qualname__', factory)}"


class _JobFuture(Future):
    """A future for one submitit job; cancelling it cancels the job while it still waits in
    the queue (a running job finishes: its triple lands in the cache)."""

    def __init__(self) -> None:
        super().__init__()
        self.job: Any = None

    def cancel(self) -> bool:
        job = self.job
        if job is not None and not self.done():
            if str(getattr(job, "state", "")).upper() not in ("PENDING", "REQUEUED"):
                return False
            job.cancel(check=False)
        return super().cancel()


class SubmititExecutor(Executor):
    """A submitit executor (``submitit.AutoExecutor``, ``SlurmExecutor``, ``LocalExecutor``)
    as a ``concurrent.futures.Executor``: ``submit`` gives a future that a watcher thread
    completes when the job's result file appears. Inside :meth:`job_array` the submissions
    go out together, as one Slurm job array (the sweep submits each run's triples so)."""

    def __init__(self, executor: Any, *, poll: float = POLL_SECONDS) -> None:
        self.executor = executor
        self.poll = poll
        self._lock = threading.Lock()
        self._pending: list[_JobFuture] = []
        self._batched: list[tuple[_JobFuture, Any]] | None = None
        self._watcher: threading.Thread | None = None
        self._closed = False

    def __repr__(self) -> str:
        return f"SubmititExecutor({self.executor!r})"

    def submit(self, fn: Callable[..., Any], /, *args: Any, **kwargs: Any) -> Future:
        if self._closed:
            raise RuntimeError("cannot submit to a SubmititExecutor after shutdown")
        future = _JobFuture()
        job = self.executor.submit(fn, *args, **kwargs)
        if self._batched is not None:
            self._batched.append((future, job))  # a delayed job: usable once the array is out
        else:
            self._watch([(future, job)])
        return future

    @contextlib.contextmanager
    def job_array(self) -> Iterator[None]:
        """Submissions inside go out at the end as one job array (submitit's ``batch``)."""
        self._batched = []
        try:
            with self.executor.batch():
                yield
            self._watch(self._batched)
        finally:
            self._batched = None

    def _watch(self, submitted: list[tuple[_JobFuture, Any]]) -> None:
        with self._lock:
            for future, job in submitted:
                future.job = job
                self._pending.append(future)
            if self._watcher is None or not self._watcher.is_alive():
                self._watcher = threading.Thread(target=self._run, daemon=True,
                                                 name="graphnetz-submitit-watch")
                self._watcher.start()

    def _run(self) -> None:
        import time

        while True:
            with self._lock:
                pending = list(self._pending)
                if not pending:
                    self._watcher = None
                    return
            for future in pending:
                if future.cancelled():
                    self._forget(future)
                elif future.job.done():
                    self._settle(future)
            time.sleep(self.poll)

    def _settle(self, future: _JobFuture) -> None:
        from concurrent.futures import InvalidStateError

        try:
            result, error = future.job.result(), None
        except Exception as exc:  # noqa: BLE001 - the job's failure is the future's
            result, error = None, exc
        with contextlib.suppress(InvalidStateError):  # cancelled meanwhile
            if error is None:
                future.set_result(result)
            else:
                future.set_exception(error)
        self._forget(future)

    def _forget(self, future: _JobFuture) -> None:
        with self._lock:
            if future in self._pending:
                self._pending.remove(future)

    def shutdown(self, wait: bool = True, *, cancel_futures: bool = False) -> None:
        self._closed = True
        if cancel_futures:
            with self._lock:
                pending = list(self._pending)
            for future in pending:
                future.cancel()
        watcher = self._watcher
        if wait and watcher is not None:
            watcher.join()


__all__ = ["ExecutorFactoryError", "SubmititExecutor", "as_executor", "load_factory",
           "open_executor"]
