"""TripleCache and the runner's use of it: what is retrained, and what never is."""

from __future__ import annotations

import json
import multiprocessing
import time
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path

import pytest
import torch

from pytest_graphnetz import run_benchmark
from pytest_graphnetz.report.codec import dumps
from pytest_graphnetz.report.epochs import History
from pytest_graphnetz.runner.cache import TripleCache, make_key
from tests.helpers.tiny import gcn, sage, tiny_task

# Read by `tunable` when it builds a model: a change here changes the built model (not the
# factory's source), and the cache must notice.
HIDDEN = {"width": 16}


def tunable(in_channels: int, out_channels: int):
    from torch_geometric.nn import GCN

    return GCN(in_channels, HIDDEN["width"], 2, out_channels)


def _sweep(root, cache, models, seeds):
    """Run and return (report, {(task, model, seed): status})."""
    statuses = {}
    report = run_benchmark(
        {"tiny": tiny_task()}, models, seeds=seeds, device="cpu", root=root, cache_dir=cache,
        progress=lambda t, m, s, status, secs: statuses.__setitem__((t, m, s), status),
    )
    return report, statuses


def test_second_run_trains_nothing_and_is_identical(root, tmp_path):
    cache = tmp_path / "cache"
    first, trained = _sweep(root, cache, {"GCN": gcn, "SAGE": sage}, [0, 1])
    second, cached = _sweep(root, cache, {"GCN": gcn, "SAGE": sage}, [0, 1])
    assert set(trained.values()) == {"trained"}
    assert set(cached.values()) == {"cached"} and len(cached) == 4
    assert dumps(first.to_dict()) == dumps(second.to_dict())
    assert len(list(cache.glob("*.json"))) == 4


def test_more_seeds_train_only_the_new_ones(root, tmp_path):
    cache = tmp_path / "cache"
    _sweep(root, cache, {"GCN": gcn}, [0, 1])
    report, statuses = _sweep(root, cache, {"GCN": gcn}, [0, 1, 2, 3])
    assert statuses == {("tiny", "GCN", 0): "cached", ("tiny", "GCN", 1): "cached",
                        ("tiny", "GCN", 2): "trained", ("tiny", "GCN", 3): "trained"}
    fresh, _ = _sweep(root, None, {"GCN": gcn}, [0, 1, 2, 3])
    assert dumps(report.to_dict()) == dumps(fresh.to_dict())


def test_changing_one_model_retrains_only_that_model(root, tmp_path, monkeypatch):
    cache = tmp_path / "cache"
    models = {"GCN": gcn, "Tunable": tunable}
    before, _ = _sweep(root, cache, models, [0, 1])
    monkeypatch.setitem(HIDDEN, "width", 24)
    after, statuses = _sweep(root, cache, models, [0, 1])
    assert statuses == {("tiny", "GCN", 0): "cached", ("tiny", "GCN", 1): "cached",
                        ("tiny", "Tunable", 0): "trained", ("tiny", "Tunable", 1): "trained"}
    assert before.fingerprints["model"]["Tunable"] != after.fingerprints["model"]["Tunable"]
    assert before.fingerprints["model"]["GCN"] == after.fingerprints["model"]["GCN"]


@pytest.mark.parametrize("change", [{"dropout": 0.6}, {"act": "elu"}, {"jk": "cat"},
                                    {"hidden_channels": 17}])
def test_model_fingerprint_sees_settings_the_repr_hides(change):
    from torch_geometric.nn import GCN

    from pytest_graphnetz.runner.fingerprint import model_fingerprint

    def build(**kw):
        torch.manual_seed(0)
        return GCN(**{"in_channels": 8, "hidden_channels": 16, "num_layers": 2,
                      "out_channels": 3, "dropout": 0.5, **kw})

    assert repr(build()) == repr(build(dropout=0.6))  # PyG prints no dropout...
    assert model_fingerprint(build()) == model_fingerprint(build())
    assert model_fingerprint(build()) != model_fingerprint(build(**change))  # ...we still see it


def test_model_fingerprint_sees_initial_weights_and_factory():
    from pytest_graphnetz.runner.fingerprint import model_fingerprint

    torch.manual_seed(0)
    a = torch.nn.Linear(4, 2)
    torch.manual_seed(1)
    b = torch.nn.Linear(4, 2)
    assert model_fingerprint(a) != model_fingerprint(b)
    assert model_fingerprint(a, gcn) != model_fingerprint(a, sage)


def test_changing_task_config_retrains(root, tmp_path):
    cache = tmp_path / "cache"
    run_benchmark({"tiny": tiny_task(epochs=3)}, {"GCN": gcn}, seeds=[0], device="cpu",
                  root=root, cache_dir=cache)
    statuses = []
    report = run_benchmark({"tiny": tiny_task(epochs=4)}, {"GCN": gcn}, seeds=[0], device="cpu",
                           root=root, cache_dir=cache, progress=lambda *a: statuses.append(a[3]))
    assert statuses == ["trained"]
    assert report.histories[("tiny", "GCN", 0)].n_epochs == 4


def test_corrupt_entry_is_discarded_with_a_warning_and_recomputed(root, tmp_path):
    cache = tmp_path / "cache"
    first, _ = _sweep(root, cache, {"GCN": gcn}, [0, 1])
    victim = sorted(cache.glob("*.json"))[0]
    victim.write_text('{"schema": "pytest-graphnetz/triple", "history": {"te')  # half-written
    with pytest.warns(UserWarning, match=victim.name):
        second, statuses = _sweep(root, cache, {"GCN": gcn}, [0, 1])
    assert sorted(statuses.values()) == ["cached", "trained"]
    assert dumps(first.to_dict()) == dumps(second.to_dict())
    json.loads(victim.read_text())  # rewritten whole


def test_entry_under_the_wrong_key_is_treated_as_corrupt(tmp_path):
    cache = TripleCache(tmp_path)
    a, b = make_key({"x": 1}), make_key({"x": 2})
    cache.put(a, History(test=[0.5]))
    cache.path(a).rename(cache.path(b))
    with pytest.warns(UserWarning, match="corrupt"):
        assert cache.get(b) is None
    assert not cache.path(b).exists()


def test_an_edited_or_truncated_value_is_recomputed_with_one_warning(tmp_path):
    cache = TripleCache(tmp_path)
    key = make_key({"x": 1})
    cache.put(key, History(test=[0.5, 0.75]))
    entry = json.loads(cache.path(key).read_text())
    # a value edited by hand (+0.05), the file still valid JSON of the right schema and key
    entry["history"]["test"][-1] += 0.05
    cache.path(key).write_text(json.dumps(entry))
    with pytest.warns(UserWarning, match="corrupt") as caught:
        assert cache.get(key) is None
    assert len(caught) == 1 and str(cache.path(key)) in str(caught[0].message)
    assert not cache.path(key).exists()
    # a dropped epoch: the digest no longer matches either
    cache.put(key, History(test=[0.5, 0.75]))
    entry = json.loads(cache.path(key).read_text())
    entry["history"]["test"] = entry["history"]["test"][:1]
    cache.path(key).write_text(json.dumps(entry))
    with pytest.warns(UserWarning, match="corrupt"):
        assert cache.get(key) is None
    # a recomputed entry is served again
    history, cached = cache.get_or_compute(key, lambda: History(test=[0.5, 0.75]))
    assert not cached and list(cache.get(key).test) == [0.5, 0.75]


@pytest.mark.parametrize("key", ["../escape", "/etc/passwd", "a" * 63, "A" * 64, "", 5])
def test_keys_never_name_a_path(tmp_path, key):
    with pytest.raises(ValueError, match="sha256"):
        TripleCache(tmp_path).path(key)


def test_key_is_canonical():
    assert make_key({"a": 1, "b": [1, 2]}) == make_key({"b": [1, 2], "a": 1})
    assert make_key({"a": 1}) != make_key({"a": 2})


def test_round_trip_keeps_nan_and_infinities(tmp_path):
    cache = TripleCache(tmp_path)
    hist = History(test=[0.5, float("nan")], val=[float("inf"), float("-inf")],
                   train_loss=[1.0, float("nan")], extra={"test_f1": [0.1, 0.2]})
    key = make_key({"k": 1})
    cache.put(key, hist)
    got = cache.get(key)
    assert dumps(got.to_dict()) == dumps(hist.to_dict())


def test_failed_write_warns_and_still_returns(tmp_path, monkeypatch):
    import pytest_graphnetz.runner.cache as cache_module

    def refuse(path, text):
        raise PermissionError(f"read-only: {path}")

    monkeypatch.setattr(cache_module, "write_text_atomic", refuse)
    cache = TripleCache(tmp_path)
    with pytest.warns(UserWarning, match="could not write"):
        hist, cached = cache.get_or_compute(make_key({"k": 1}), lambda: History(test=[1.0]))
    assert hist.test == (1.0,) and not cached


def _slow_compute(args: tuple[str, str]) -> bool:
    """In a worker process: get_or_compute one key; computing appends a line to ``log``."""
    directory, log = args

    def compute() -> History:
        with open(log, "a") as fh:
            fh.write("computed\n")
        time.sleep(0.5)
        return History(test=[0.25])

    hist, cached = TripleCache(directory).get_or_compute(make_key({"same": "key"}), compute)
    assert hist.test == (0.25,)
    return cached


def test_concurrent_processes_compute_a_key_once(tmp_path):
    log = tmp_path / "log.txt"
    ctx = multiprocessing.get_context("fork")
    with ProcessPoolExecutor(3, mp_context=ctx) as pool:
        cached = list(pool.map(_slow_compute, [(str(tmp_path / "c"), str(log))] * 3))
    assert log.read_text().splitlines() == ["computed"]
    assert sorted(cached) == [False, True, True]


def test_parallel_workers_share_the_cache(root, tmp_path):
    cache = tmp_path / "cache"
    serial, _ = _sweep(root, None, {"GCN": gcn, "SAGE": sage}, [0, 1])
    parallel = run_benchmark({"tiny": tiny_task()}, {"GCN": gcn, "SAGE": sage}, seeds=[0, 1],
                             device="cpu", root=root, cache_dir=cache, workers=2)
    assert dumps(parallel.to_dict()) == dumps(serial.to_dict())
    again, statuses = _sweep(root, cache, {"GCN": gcn, "SAGE": sage}, [0, 1])
    assert set(statuses.values()) == {"cached"}
    assert not [p for p in Path(cache).iterdir() if p.suffix == ".tmp"]


# -- costs seconds each (marked slow): fresh interpreters, subprocess sessions or killed
# processes (the slow tier, tests/README.md) ------------------------------------------------


PLANTED = """
import sys, warnings
from pytest_graphnetz.runner.cache import TripleCache, make_key

key = make_key({"planted": True})
warnings.simplefilter("always")
with warnings.catch_warnings(record=True) as caught:
    assert TripleCache(sys.argv[1]).get(key) is None
print("WARNED:", caught[0].message)
"""


@pytest.mark.slow
@pytest.mark.parametrize("planted", ["fifo", "link to /dev/zero"])
def test_a_fifo_or_a_device_planted_in_the_cache_is_discarded(tmp_path: Path,
                                                              planted: str) -> None:
    """In a subprocess with a memory limit and a timeout: before the fix the FIFO blocked the
    read for ever and /dev/zero was read until memory ran out."""
    import os
    import resource
    import subprocess
    import sys

    from pytest_graphnetz.runner.cache import TripleCache, make_key

    if not hasattr(os, "mkfifo") or not Path("/dev/zero").exists():
        pytest.skip("needs POSIX FIFOs and /dev/zero")
    cache = tmp_path / "cache"
    cache.mkdir()
    entry = TripleCache(cache).path(make_key({"planted": True}))
    if planted == "fifo":
        os.mkfifo(entry)
    else:
        entry.symlink_to("/dev/zero")

    def limit_memory() -> None:
        resource.setrlimit(resource.RLIMIT_AS, (2 << 30, 2 << 30))

    env = {**os.environ, "PYTHONPATH": str(Path(__file__).parents[2])}
    run = subprocess.run([sys.executable, "-c", PLANTED, str(cache)], env=env, text=True,
                         capture_output=True, timeout=600, preexec_fn=limit_memory)
    assert run.returncode == 0, run.stderr
    # the one JSON reader's error (report/codec.py), naming the entry and what it is
    assert (f"WARNED: discarding corrupt graphnetz cache entry {entry} (ReportFormatError: "
            f"{entry} is not a regular file") in run.stdout
    assert not entry.exists() and not entry.is_symlink()  # removed: the next run recomputes
