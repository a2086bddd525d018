"""Parallel triples: worker processes, their failures, and the cache that survives them.

``tests/cover/test_runner.py`` covers workers=1 vs workers=2 on a clean run, a user's
``ProcessPoolExecutor``, any completion order, and a loader failing in a worker. Here: a worker
count that does not divide the triples, a half-warm cache, a model factory failing for one seed
inside a worker, and a worker process that dies outright — each error names the triple, no
finished triple is lost, and the rerun after the fix trains only what is missing and gives the
same bits as a clean serial run.
"""

from __future__ import annotations

import os
import threading
from concurrent.futures import Executor, Future

import pytest

from pytest_graphnetz import run_benchmark
from pytest_graphnetz.report.codec import dumps
from pytest_graphnetz.runner import TripleError, WorkerCrashError
from tests.helpers.tiny import gcn, tiny_task

SEEDS = [0, 1, 2, 3]
BREAK_ENV = "GRAPHNETZ_TEST_BREAK"  # "raise:<seed>" or "exit:<seed>"


def breakable_gcn(in_channels: int, out_channels: int):
    """``gcn``, unless ``$GRAPHNETZ_TEST_BREAK`` names the seed being built (a transient fault:
    fixing it changes no code, so the fixed rerun has the same cache keys)."""
    import torch

    mode, _, seed = os.environ.get(BREAK_ENV, "").partition(":")
    # The runner reseeds torch with the triple's seed right before calling the factory.
    if seed and torch.initial_seed() == int(seed):
        if mode == "exit":
            os._exit(3)  # the worker process dies without a word, as under the OOM killer
        raise RuntimeError(f"factory broken for seed {seed}")
    return gcn(in_channels, out_channels)


def _run(root, **kw):
    return run_benchmark({"tiny": tiny_task()}, {"GCN": breakable_gcn}, seeds=SEEDS,
                         device="cpu", root=root, **kw)


@pytest.fixture
def serial(root):
    """The clean serial report, no cache: what every parallel or resumed run must equal."""
    return dumps(_run(root).to_dict())


def test_three_workers_and_a_half_warm_cache_give_the_serial_bits(root, tmp_path, serial):
    cache = tmp_path / "cache"
    # Warm the cache with two of the four seeds, then let three workers do the rest.
    run_benchmark({"tiny": tiny_task()}, {"GCN": breakable_gcn}, seeds=[3, 1], device="cpu",
                  root=root, cache_dir=cache)
    statuses = {}
    report = _run(root, workers=3, cache_dir=cache,
                  progress=lambda t, m, s, status, sec: statuses.update({s: status}))
    assert statuses == {0: "trained", 1: "cached", 2: "trained", 3: "cached"}
    assert dumps(report.to_dict()) == serial


class _TwoThreads(Executor):
    """Runs submitted calls in two threads of this process at once — as a Dask worker with
    ``threads_per_worker=2`` does (a ``ThreadPoolExecutor`` is refused outright)."""

    def __init__(self) -> None:
        self.calls: list[tuple[Future, object, tuple]] = []
        self.threads: list[threading.Thread] = []
        self.busy = 0  # threads between start and finding no call left; guarded by `lock`
        self.lock = threading.Lock()

    def submit(self, fn, /, *args, **kwargs):
        future: Future = Future()
        with self.lock:
            self.calls.append((future, fn, args))
            if self.busy < 2:
                self.busy += 1
                self.threads.append(threading.Thread(target=self._work))
                self.threads[-1].start()
        return future

    def _work(self) -> None:
        while True:
            with self.lock:
                if not self.calls:
                    self.busy -= 1
                    return
                future, fn, args = self.calls.pop(0)
            try:
                future.set_result(fn(*args))
            except BaseException as exc:
                future.set_exception(exc)


def test_triples_in_threads_of_one_process_take_turns(root, serial):
    """Seeding is process-wide: concurrent triples in one process would mix their RNG draws."""
    executor = _TwoThreads()
    report = _run(root, executor=executor)
    for thread in executor.threads:
        thread.join()
    assert dumps(report.to_dict()) == serial


class _FirstFailsRestQueued(Executor):
    """The first call fails at once; every later one stays queued and is never run, and a
    cancelled future is never marked notified — as a Dask ``ClientExecutor`` leaves a future
    whose task had already failed on the cluster when it was cancelled."""

    def __init__(self) -> None:
        self.futures: list[Future] = []

    def submit(self, fn, /, *args, **kwargs):
        future: Future = Future()
        if not self.futures:
            future.set_exception(RuntimeError("the cluster lost this triple"))
        self.futures.append(future)
        return future


def test_a_failure_cancels_the_queued_triples_without_waiting_on_them(root):
    executor = _FirstFailsRestQueued()
    outcome: list[BaseException] = []

    def sweep() -> None:
        try:
            _run(root, executor=executor)
        except BaseException as exc:  # noqa: BLE001 - handed to the test thread below
            outcome.append(exc)

    thread = threading.Thread(target=sweep, daemon=True)
    thread.start()
    thread.join(timeout=600)
    assert not thread.is_alive(), "run_benchmark hung waiting on cancelled futures"
    assert isinstance(outcome[0], TripleError) and "cluster lost this triple" in str(outcome[0])
    assert all(future.cancelled() for future in executor.futures[1:])


def _resume(root, cache):
    """Rerun after the fault is gone: ``{seed: status}`` and the report."""
    statuses = {}
    report = _run(root, workers=2, cache_dir=cache,
                  progress=lambda t, m, s, status, sec: statuses.update({s: status}))
    return statuses, report


def test_factory_failing_in_a_worker_is_named_and_the_rest_is_kept(
        root, tmp_path, serial, monkeypatch):
    cache = tmp_path / "cache"
    finished = []
    monkeypatch.setenv(BREAK_ENV, "raise:3")
    with pytest.raises(TripleError, match=r"'tiny' × model 'GCN' × seed 3 failed") as info:
        _run(root, workers=2, cache_dir=cache, progress=lambda t, m, s, *_: finished.append(s))
    assert (info.value.task, info.value.model, info.value.seed) == ("tiny", "GCN", 3)
    assert "factory broken for seed 3" in str(info.value)
    assert 3 not in finished

    monkeypatch.delenv(BREAK_ENV)
    statuses, report = _resume(root, cache)
    assert statuses[3] == "trained"
    assert finished and all(statuses[s] == "cached" for s in finished)
    assert dumps(report.to_dict()) == serial


def test_a_dead_worker_process_is_named_and_finished_triples_are_kept(
        root, tmp_path, serial, monkeypatch):
    cache = tmp_path / "cache"
    finished = []
    monkeypatch.setenv(BREAK_ENV, "exit:3")
    with pytest.raises(WorkerCrashError, match="worker process died abruptly") as info:
        _run(root, workers=2, cache_dir=cache, progress=lambda t, m, s, *_: finished.append(s))
    # The pool cannot tell which process died: the culprit is among the named suspects,
    # which are at most as many as the pool has workers, and none of them had finished.
    assert ("tiny", "GCN", 3) in info.value.suspects
    assert len(info.value.suspects) <= 2
    assert not {s for _, _, s in info.value.suspects} & set(finished)
    assert "seed 3" in str(info.value) and "workers=1" in str(info.value)
    assert isinstance(info.value, TripleError)

    monkeypatch.delenv(BREAK_ENV)
    statuses, report = _resume(root, cache)
    assert statuses[3] == "trained"
    assert finished and all(statuses[s] == "cached" for s in finished)
    assert dumps(report.to_dict()) == serial


def test_run_benchmark_starts_no_more_processes_than_triples(root, monkeypatch) -> None:
    pytest.importorskip("torch")
    from pytest_graphnetz import run_benchmark
    from pytest_graphnetz.runner import workers as pool_module
    from tests.helpers.tiny import gcn, tiny_task

    sizes = []

    def pool(workers, device, jobs):
        sizes.append(workers)
        raise RuntimeError("stop here")

    monkeypatch.setattr(pool_module, "process_pool", pool)
    with pytest.raises(RuntimeError, match="stop here"):
        run_benchmark({"tiny": tiny_task()}, {"GCN": gcn}, seeds=[0, 1], device="cpu",
                      root=root, workers=24)
    assert sizes == [2]
