"""run_benchmark: reproducibility, order independence, reseeding, loaders, workers, devices."""

from __future__ import annotations

import json
import math
import subprocess
import sys
import textwrap
import threading
from concurrent.futures import Executor, Future, ProcessPoolExecutor, ThreadPoolExecutor
from pathlib import Path

import numpy as np
import pytest
import torch

from pytest_graphnetz import BenchmarkReport, Task, run_benchmark, runner
from pytest_graphnetz.report.codec import dumps
from pytest_graphnetz.runner import default_root
from tests.helpers.tiny import MODELS, gcn, run, sage, text, tiny_csbm, tiny_task


def test_same_call_twice_is_bit_for_bit_identical(root):
    first, second = run(root), run(root)
    assert np.array_equal(first.X, second.X)
    assert first.histories == second.histories
    assert text(first) == text(second)
    # Not trivially identical: models and seeds do give different numbers.
    assert first.histories[("tiny", "GCN", 0)] != first.histories[("tiny", "GCN", 1)]
    assert first.histories[("tiny", "GCN", 0)] != first.histories[("tiny", "SAGE", 0)]


def test_model_order_changes_no_number(root):
    forward = run(root, models={"GCN": gcn, "SAGE": sage})
    backward = run(root, models={"SAGE": sage, "GCN": gcn})
    assert backward.models == ("SAGE", "GCN")
    for key, hist in forward.histories.items():
        assert backward.histories[key] == hist


def test_reseeding_once_per_sweep_changes_numbers(root, monkeypatch):
    """Teeth: without the per-triple reseed, later triples draw from a shifted stream."""
    proper = run(root)
    real = runner.environment.reseed
    calls = []

    def once(seed: int) -> None:
        if not calls:
            real(seed)
        calls.append(seed)

    monkeypatch.setattr(runner.environment, "reseed", once)
    broken = run(root)
    assert len(calls) == 2 * len(proper.triples())  # before loading and before building
    first, *later = proper.triples()
    assert broken.histories[first] == proper.histories[first]
    for key in later:
        assert broken.histories[key] != proper.histories[key], key


def test_reseeding_seeds_every_cuda_device_through_torch(monkeypatch):
    """reseed leaves CUDA's generators to torch.manual_seed, which seeds every device itself
    (torch.cuda.manual_seed_all, applied when CUDA initialises): if a torch stopped doing so,
    this fails and reseed must call it again."""
    seen: list[int] = []
    monkeypatch.setattr(torch.cuda, "manual_seed_all", seen.append)
    runner.environment.reseed(1234)
    assert seen == [1234]


def test_seed_order_is_label_order_and_changes_no_number(root):
    up, down = run(root, seeds=[0, 1, 2]), run(root, seeds=[2, 1, 0])
    assert down.seeds == (2, 1, 0)
    assert np.array_equal(up.X[..., ::-1], down.X)


def test_seeded_loader_gets_the_seed_and_unseeded_loader_is_constant(root):
    def unseeded(data_root):
        # Draws from the global RNG: the runner makes it the same for every seed.
        data = tiny_csbm(data_root, seed=7)
        perm = torch.randperm(data.num_nodes)
        data.test_mask = data.test_mask[perm]
        return data

    tasks = {"seeded": tiny_task("seeded"), "unseeded": tiny_task("unseeded", loader=unseeded)}
    report = run_benchmark(tasks, {"GCN": gcn}, seeds=[0, 1, 2], device="cpu", root=root)
    again = run_benchmark(tasks, {"GCN": gcn}, seeds=[0, 1], device="cpu", root=root)
    seeded = [report.data_fingerprint("seeded", s) for s in (0, 1, 2)]
    unseeded_fps = [report.data_fingerprint("unseeded", s) for s in (0, 1, 2)]
    assert len(set(seeded)) == 3
    assert len(set(unseeded_fps)) == 1
    assert again.data_fingerprint("seeded", 1) == seeded[1]
    assert again.data_fingerprint("unseeded", 1) == unseeded_fps[0]
    # Constant data, but the model initialisation still differs per seed.
    assert len({report.histories[("unseeded", "GCN", s)].train_loss for s in (0, 1, 2)}) == 3


def test_loader_receives_category_task_directory(tmp_path, monkeypatch):
    seen = []

    def loader(data_root, *, seed):
        seen.append(data_root)
        return tiny_csbm(data_root, seed=seed)

    run_benchmark({"mine": Task("mine", loader, epochs=2)}, {"GCN": gcn}, seeds=[0],
                  device="cpu", root=tmp_path / "r")
    assert seen == [str((tmp_path / "r" / "custom" / "mine").resolve())]
    monkeypatch.setenv("GRAPHNETZ_ROOT", str(tmp_path / "env"))
    run_benchmark({"mine": Task("mine", loader, epochs=2)}, {"GCN": gcn}, seeds=[0], device="cpu")
    assert seen[-1] == str((tmp_path / "env" / "custom" / "mine").resolve())
    monkeypatch.delenv("GRAPHNETZ_ROOT")
    # the default: the user's cache directory, outside the project, so that `git add -A` in
    # the project never commits a dataset
    project = tmp_path / "project"
    project.mkdir()
    monkeypatch.chdir(project)
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))
    run_benchmark({"mine": Task("mine", loader, epochs=2)}, {"GCN": gcn}, seeds=[0], device="cpu")
    assert seen[-1] == str((tmp_path / "xdg" / "pytest-graphnetz" / "data" / "custom" / "mine"
                            ).resolve())
    monkeypatch.delenv("XDG_CACHE_HOME")
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    expected = (Path.home() / "Library" / "Caches" if sys.platform == "darwin"
                else Path.home() / ".cache")
    assert default_root() == expected / "pytest-graphnetz" / "data"
    assert not any(project.iterdir())                   # nothing written into the project


def test_workers_two_identical_to_workers_one(root):
    serial = run(root, seeds=(0, 1, 2))
    parallel = run(root, seeds=(0, 1, 2), workers=2)
    assert text(parallel) == text(serial)
    with ProcessPoolExecutor(2) as pool:
        assert text(run(root, seeds=(0, 1, 2), executor=pool)) == text(serial)


class _ReverseExecutor(Executor):
    """Runs the ``expected`` submitted calls in one background thread once all of them are
    in, last submitted first."""

    def __init__(self, expected: int) -> None:
        self.expected = expected
        self.pending: list[tuple[Future, object, tuple]] = []
        self.thread: threading.Thread | None = None

    def submit(self, fn, /, *args, **kwargs):
        future: Future = Future()
        self.pending.append((future, fn, args))
        if len(self.pending) == self.expected:
            self.thread = threading.Thread(target=self._work)
            self.thread.start()
        return future

    def _work(self) -> None:
        for future, fn, args in reversed(self.pending):
            future.set_result(fn(*args))


def test_any_completion_order_gives_the_same_report(root):
    serial = run(root, seeds=(0, 1))
    order = []
    executor = _ReverseExecutor(len(serial.triples()))
    reversed_run = run(root, seeds=(0, 1), executor=executor,
                        progress=lambda t, m, s, *_: order.append((t, m, s)))
    executor.thread.join()
    assert order == list(reversed(serial.triples()))
    assert text(reversed_run) == text(serial)


def test_thread_pool_executor_is_refused(root):
    with ThreadPoolExecutor(2) as pool, pytest.raises(TypeError, match="process-wide RNG"):
        run(root, executor=pool)


def test_unpicklable_factory_is_refused_with_the_fix(root):
    with pytest.raises(TypeError, match="module level"):
        run(root, models={"L": lambda i, o: gcn(i, o)}, workers=2)


def _failing_loader(data_root, *, seed):
    if seed == 1:
        raise ValueError("no data for seed 1")
    return tiny_csbm(data_root, seed=seed)


@pytest.mark.parametrize("workers", [1, 2])
def test_a_failing_triple_is_named_and_finished_ones_stay_cached(root, tmp_path, workers):
    task = {"flaky": tiny_task("flaky", loader=_failing_loader)}
    cache = tmp_path / "cache"
    with pytest.raises(runner.TripleError, match=r"'flaky' × model 'GCN' × seed 1") as info:
        run_benchmark(task, {"GCN": gcn}, seeds=[0, 1], device="cpu", root=root,
                      cache_dir=cache, workers=workers)
    assert "no data for seed 1" in str(info.value)
    assert (info.value.task, info.value.model, info.value.seed) == ("flaky", "GCN", 1)
    statuses = []
    run_benchmark(task, {"GCN": gcn}, seeds=[0], device="cpu", root=root, cache_dir=cache,
                  progress=lambda *a: statuses.append(a[3]))
    assert statuses == ["cached"]


def test_progress_is_called_once_per_triple(root):
    calls = []
    report = run(root, progress=lambda *a: calls.append(a))
    assert sorted(c[:3] for c in calls) == sorted(report.triples())
    assert {c[3] for c in calls} == {"trained"}
    assert all(c[4] >= 0 for c in calls)


def test_protocol_records_device_threads_and_versions(root):
    import platform

    import torch_geometric

    report = run(root)
    proto = report.protocol
    assert proto["device"]["kind"] == "cpu" and proto["device"]["name"]
    assert proto["threads"] == 1
    assert proto["versions"]["torch"] == torch.__version__
    assert proto["versions"]["torch_geometric"] == torch_geometric.__version__
    assert proto["versions"]["numpy"] == np.__version__
    assert proto["versions"]["python"] == platform.python_version()
    assert "pytest_graphnetz" in proto["versions"] and proto["platform"]
    assert proto["tasks"]["tiny"]["config"]["epochs"] == 5


def test_threads_pinned_per_triple_and_restored(root):
    seen = []

    def trainer(model, data, *, task, device):
        seen.append(torch.get_num_threads())
        return {"test": [0.5], "val": [0.5]}

    before = torch.get_num_threads()
    report = run_benchmark({"t": tiny_task("t", trainer=trainer)}, {"GCN": gcn}, seeds=[0, 1],
                           device="cpu", root=root, threads=2)
    assert seen == [2, 2]
    assert report.protocol["threads"] == 2
    assert torch.get_num_threads() == before
    assert report.values("t", "GCN").tolist() == [0.5, 0.5]


def test_custom_trainer_returning_garbage_is_named(root):
    task = tiny_task("t", trainer=lambda model, data, *, task, device: 0.9)
    with pytest.raises(runner.TripleError, match="trainer of task 't'"):
        run_benchmark({"t": task}, {"GCN": gcn}, seeds=[0], device="cpu", root=root)


class _NaNAfter(torch.nn.Module):
    """Returns NaN logits from its ``2*k``-th forward on (two forwards per epoch)."""

    def __init__(self, in_channels: int, out_channels: int, k: int = 3) -> None:
        super().__init__()
        self.lin = torch.nn.Linear(in_channels, out_channels)
        self.k, self.calls = k, 0

    def forward(self, x, edge_index):
        self.calls += 1
        out = self.lin(x)
        return out * math.nan if self.calls > 2 * self.k else out


def nan_after_three(in_channels: int, out_channels: int) -> torch.nn.Module:
    return _NaNAfter(in_channels, out_channels)


def test_diverged_seed_is_recorded_not_dropped(root):
    report = run_benchmark({"t": tiny_task("t", epochs=60)}, {"NaN": nan_after_three, "GCN": gcn},
                           seeds=[0, 1], device="cpu", root=root)
    assert sorted(report.diverged()) == [("t", "NaN", 0), ("t", "NaN", 1)]
    hist = report.histories[("t", "NaN", 0)]
    assert hist.n_epochs == 60
    assert all(math.isfinite(v) for v in hist.test[:3] + hist.train_loss[:3])
    assert all(math.isnan(v) for v in hist.test[3:] + hist.val[3:] + hist.train_loss[3:])
    assert np.isnan(report.values("t", "NaN")).all()
    assert np.isfinite(report.values("t", "GCN")).all()
    # The NaN survives JSON and keeps its place.
    assert np.isnan(BenchmarkReport.from_dict(json.loads(dumps(report.to_dict()))).X[0, 0]).all()


@pytest.mark.parametrize("spec", ["cuda", "cuda:0", "cuda:3", "mps", "tpu", "cuda:x"])
def test_absent_or_unknown_device_is_an_error(root, spec):
    if spec.startswith("cuda") and torch.cuda.is_available():
        pytest.skip("this machine has CUDA")
    with pytest.raises(runner.DeviceError, match="device="):
        run(root, device=spec)


def test_auto_prefers_cuda_then_mps_then_cpu(monkeypatch):
    monkeypatch.setattr(torch.cuda, "is_available", lambda: False)
    monkeypatch.setattr(torch.backends.mps, "is_available", lambda: False)
    assert runner.resolve_device("auto") == "cpu"
    monkeypatch.setattr(torch.backends.mps, "is_available", lambda: True)
    assert runner.resolve_device("auto") == "mps"
    monkeypatch.setattr(torch.cuda, "is_available", lambda: True)
    assert runner.resolve_device("auto") == "cuda:0"


@pytest.mark.parametrize("seeds, match", [([], "empty"), ([0, 0], "duplicates"),
                                          ([-1], "seed -1"), ([1.5], "seed 1.5")])
def test_bad_seeds_are_refused(root, seeds, match):
    with pytest.raises(ValueError, match=match):
        run(root, seeds=seeds)


def test_nondeterministic_loader_is_refused(root):
    import itertools

    counter = itertools.count()

    def drifting(data_root, *, seed):
        data = tiny_csbm(data_root, seed=seed)
        data.x = data.x + next(counter)
        return data

    with pytest.raises(RuntimeError, match="different data for different models"):
        run_benchmark({"d": tiny_task("d", loader=drifting)}, MODELS, seeds=[0], device="cpu",
                      root=root)


# -- costs seconds each (marked slow): fresh interpreters, subprocess sessions or killed
# processes (the slow tier, tests/README.md) ------------------------------------------------


_SCRIPT = textwrap.dedent("""
    import sys
    sys.path.insert(0, {repository!r})
    from tests.helpers.tiny import gcn, sage, tiny_task
    from pytest_graphnetz import run_benchmark
    report = run_benchmark({{"tiny": tiny_task()}}, {{"GCN": gcn, "SAGE": sage}}, seeds=[0, 1],
                           device="cpu", root={root!r})
    report.to_json({out!r})
""")


@pytest.mark.slow
def test_a_fresh_process_gives_the_bit_for_bit_report_of_this_one(root, tmp_path):
    """A fresh interpreter (nothing trained, global RNGs untouched) and this worker (which has
    run other tests: RNG streams consumed, modules imported, threads pinned) write the same
    report, bit for bit: each triple depends on its seed alone, not on the process."""
    out = tmp_path / "report.json"
    here = text(run(root))  # also writes the dataset cache, so the fresh process only reads it
    fresh = subprocess.run([sys.executable, "-c", _SCRIPT.format(
        repository=str(Path(__file__).parents[2]), root=root, out=str(out))], timeout=300)
    assert fresh.returncode == 0
    assert text(BenchmarkReport.from_json(out)) == here
