"""Running a sweep's triples: in this process, in a pool of worker processes or on a user's
executor; the errors that name a failed triple, or the suspects of a worker that died."""

from __future__ import annotations

import contextlib
import os
import sys
import threading
import time
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from pytest_graphnetz.base.text import listed
from pytest_graphnetz.runner.engines import SubmititExecutor
from pytest_graphnetz.runner.triple import Job, Outcome, run_triple

if TYPE_CHECKING:
    from pytest_graphnetz.runner.command.run import CommandExecutor

Progress = Callable[[str, str, int, str, float], None]


class TripleError(RuntimeError):
    """A (task, model, seed) triple failed; the original exception is its ``__cause__``."""

    def __init__(self, task: str, model: str, seed: int, error: BaseException) -> None:
        self.task, self.model, self.seed = task, model, seed
        super().__init__(
            f"training task {task!r} × model {model!r} × seed {seed} failed: "
            f"{type(error).__name__}: {error}"
        )


class WorkerCrashError(TripleError):
    """A worker process died abruptly (killed by the OS, a crash in native code, ``os._exit``).

    The pool cannot say which triple the dead process was running: ``suspects`` are the
    triples that were running in the pool when it broke (``task``, ``model`` and ``seed`` name
    the first of them).
    """

    def __init__(self, suspects: list[tuple[str, str, int]], finished: int,
                 error: BaseException) -> None:
        self.suspects = suspects
        self.task, self.model, self.seed = suspects[0]
        names = listed([f"task {t!r} × model {m!r} × seed {s}" for t, m, s in suspects], 5, "; ")
        RuntimeError.__init__(
            self,
            f"a worker process died abruptly ({type(error).__name__}: killed by the OS, e.g. "
            f"out of memory, or a crash in native code) while training "
            f"{'one of: ' if len(suspects) > 1 else ''}{names}. The {finished} finished "
            "triple(s) are kept in the cache; rerun with workers=1 to see which triple fails",
        )


def execute(jobs: list[Job], *, workers: int, executor: Any, device: str,
            progress: Progress | None,
            started: Callable[[str, str, int], None] | None = None,
            commands: CommandExecutor | None = None) -> list[Outcome]:
    """Run ``jobs``; outcomes in ``jobs`` order whatever order they complete in. Command
    triples run in this process run on ``commands``; in a pool's worker, on the worker's own
    executor (:func:`in_worker`); on a user's executor, on one per triple."""
    if executor is None and workers == 1:
        # Triples set torch's thread count in this process when they train here (not command
        # triples, nor cache hits, which may not import torch at all): the count the process
        # had is restored after, when torch was imported before.
        torch: Any = sys.modules.get("torch")
        previous = None if torch is None else torch.get_num_threads()
        try:
            outcomes = []
            for job in jobs:
                if started is not None:
                    started(job.task.name, job.model, job.seed)
                outcomes.append(_guarded(job, commands))
                _report_progress(progress, job, outcomes[-1])
            return outcomes
        finally:
            if torch is not None and previous is not None:
                torch.set_num_threads(previous)

    from concurrent.futures import ThreadPoolExecutor, as_completed, wait

    if isinstance(executor, ThreadPoolExecutor):
        raise TypeError(
            "executor: a ThreadPoolExecutor's threads would interleave the draws of torch's "
            "process-wide RNG between triples, so seeds would not reproduce; use workers=N "
            "(processes) or a process-based executor"
        )
    own = executor is None
    if own:
        executor = process_pool(workers, device, jobs)

    try:
        # submitit: the run's triples go out as one job array (one Slurm submission).
        with executor.job_array() if isinstance(executor, SubmititExecutor) \
                else contextlib.nullcontext():
            futures = {executor.submit(in_worker, job): i for i, job in enumerate(jobs)}
        results: list[Outcome | None] = [None] * len(jobs)
        try:
            for future in as_completed(futures):
                i = futures[future]
                try:
                    outcome = future.result()
                except BaseException as exc:
                    raise _triple_error(jobs, results, i, exc, workers if own else None) from exc
                results[i] = outcome
                _report_progress(progress, jobs[i], outcome)
        except BaseException:
            # Let running triples finish (they land in the cache), drop the queued ones. Wait
            # only on the futures that refused to cancel: a cancelled one counts as done for
            # wait() only once its executor notices, and a Dask ClientExecutor whose task had
            # already failed never does (wait() would hang for good).
            wait([future for future in futures if not future.cancel()])
            raise
        # Every future has finished without raising, so no slot is still None.
        return [outcome for outcome in results if outcome is not None]
    finally:
        if own:
            executor.shutdown(wait=True, cancel_futures=True)


def _triple_error(jobs: list[Job], results: list[Outcome | None], i: int, exc: BaseException,
                  pool_size: int | None) -> TripleError:
    """The error for failed future ``i``: its triple, or the suspects of a dead worker process.

    A dead process breaks the whole pool, so every unfinished future fails, not only its own.
    The pool starts triples in submission order, so the ones running were the first
    ``pool_size`` unfinished ones (all unfinished ones when the pool size is unknown).
    """
    from concurrent.futures.process import BrokenProcessPool

    if not isinstance(exc, BrokenProcessPool):
        job = jobs[i]
        return TripleError(job.task.name, job.model, job.seed, exc)
    unfinished = [(j.task.name, j.model, j.seed) for j, r in zip(jobs, results, strict=True)
                  if r is None]
    suspects = unfinished[:pool_size] if pool_size else unfinished
    return WorkerCrashError(suspects, len(jobs) - len(unfinished), exc)


def _guarded(job: Job, commands: CommandExecutor | None) -> Outcome:
    try:
        return run_triple(job, commands)
    except Exception as exc:
        raise TripleError(job.task.name, job.model, job.seed, exc) from exc


def _report_progress(progress: Progress | None, job: Job, outcome: Outcome) -> None:
    if progress is not None:
        progress(job.task.name, job.model, job.seed, "cached" if outcome.cached else "trained",
                 outcome.seconds)


def process_pool(workers: int, device: str, jobs: list[Job]) -> Any:
    """A process pool; ``fork`` (no re-import, ~2× faster start here) when safe.

    CUDA cannot be used in a forked child once the parent touched it, so a GPU run spawns.
    Jobs are pickled to the workers: a lambda or local function as factory, loader or trainer
    is refused up front with the fix, rather than failing inside the pool.
    """
    import multiprocessing
    import pickle
    from concurrent.futures import ProcessPoolExecutor

    for job in {(j.task.name, j.model): j for j in jobs}.values():
        try:
            pickle.dumps(job)
        except Exception as exc:
            raise TypeError(
                f"workers={workers}: task {job.task.name!r} × model {job.model!r} cannot be sent "
                f"to a worker process ({exc}). Define the model factory, loader and trainer at "
                "module level (lambdas and local functions cannot be pickled), or use workers=1"
            ) from exc
    method = "fork" if (device == "cpu" and "fork" in multiprocessing.get_all_start_methods()) \
        else "spawn"
    return ProcessPoolExecutor(max_workers=workers, mp_context=multiprocessing.get_context(method),
                               initializer=_start_worker, initargs=(os.getpid(),))


# The command executor of this process when it is a pool's worker (set by the pool's
# initializer, :func:`_start_worker`), so a worker's command runs share its warm servers as
# the triples of one process do. Empty in every other process.
_WORKER_COMMANDS: list[CommandExecutor] = []


def in_worker(job: Job) -> Outcome:
    """:func:`~.triple.run_triple` in another process: a pool's worker runs command triples on
    its own executor; any other process (a user's executor), on one per triple."""
    return run_triple(job, _WORKER_COMMANDS[0] if _WORKER_COMMANDS else None)


def _start_worker(parent: int) -> None:
    """Pool worker initializer: tie this worker to ``parent`` and open its command executor."""
    _exit_with_parent(parent)
    from pytest_graphnetz.runner.command.run import CommandExecutor

    _WORKER_COMMANDS[:] = [CommandExecutor()]


def _exit_with_parent(parent: int) -> None:
    """Pool worker initializer: end this worker when ``parent`` dies (even by ``kill -9``).

    Otherwise an orphaned worker (hundreds of MB) waits for work forever. On Linux the kernel
    sends SIGKILL when the parent goes (``PR_SET_PDEATHSIG``); everywhere, a daemon thread
    checks once a second whether the process was re-parented.
    """
    if sys.platform.startswith("linux"):
        import ctypes
        import signal

        pr_set_pdeathsig = 1
        try:
            libc = ctypes.CDLL(None, use_errno=True)
            libc.prctl(pr_set_pdeathsig, int(signal.SIGKILL), 0, 0, 0)
        except (OSError, AttributeError):
            pass  # the thread below still covers it
    if os.getppid() != parent:  # the parent died before the line above took effect
        os._exit(1)

    def watch() -> None:
        while os.getppid() == parent:
            time.sleep(1.0)
        os._exit(1)

    threading.Thread(target=watch, name="graphnetz-parent-watch", daemon=True).start()
