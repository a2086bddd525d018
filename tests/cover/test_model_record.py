"""The model record (runner/model_record.py): a model whose code and environment are unchanged
is found without calling its factory; whatever its build read or reached that changed (an
environment variable, a module value, the library versions, torch's default dtype) builds it
again. Real sessions, and the warm one importing no torch, are in
tests/slow/test_model_record_slow.py."""

from __future__ import annotations

import importlib
import json
import os
import sys
import warnings

import pytest
import torch

from pytest_graphnetz import run_benchmark
from pytest_graphnetz.runner import environment, model_record
from pytest_graphnetz.runner.cache import CacheWarning, TripleCache
from pytest_graphnetz.runner.fingerprint import environment_unchanged, recording_environment
from tests.helpers.tiny import tiny_task

SCRATCH = '''
import os

WIDTH = 8
BUILDS = []


def gcn(in_channels, out_channels):
    from torch_geometric.nn import GCN

    BUILDS.append(1)
    return GCN(in_channels, int(os.environ.get("RECORD_SCRATCH_WIDTH", WIDTH)), 2, out_channels)
'''


@pytest.fixture
def scratch(tmp_path, monkeypatch):
    """A project module whose factory counts its builds and reads a variable and a constant."""
    (tmp_path / "record_scratch_models.py").write_text(SCRATCH)
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.delenv("RECORD_SCRATCH_WIDTH", raising=False)
    yield importlib.import_module("record_scratch_models")
    sys.modules.pop("record_scratch_models", None)


def _sweep(module, root, cache):
    statuses: dict = {}
    del module.BUILDS[:]
    report = run_benchmark({"tiny": tiny_task(epochs=2)}, {"GCN": module.gcn}, seeds=[0, 1],
                           device="cpu", root=root, cache_dir=cache,
                           progress=lambda t, m, s, status, secs: statuses.__setitem__(s, status))
    return report, statuses, len(module.BUILDS)


def test_an_unchanged_model_is_not_built_again(scratch, root, tmp_path):
    cold, first, built = _sweep(scratch, root, tmp_path / "cache")
    assert (first, built) == ({0: "trained", 1: "trained"}, 2)
    warm, second, built = _sweep(scratch, root, tmp_path / "cache")
    assert (second, built) == ({0: "cached", 1: "cached"}, 0)
    assert warm.fingerprints == cold.fingerprints
    assert warm.protocol["models"] == cold.protocol["models"]


def test_a_variable_the_build_read_builds_it_again(scratch, root, tmp_path, monkeypatch):
    _sweep(scratch, root, tmp_path / "cache")
    monkeypatch.setenv("RECORD_SCRATCH_WIDTH", "12")
    report, statuses, built = _sweep(scratch, root, tmp_path / "cache")
    # Per seed: built to find its key (a miss), then again beside the loaded data to train.
    assert (statuses, built) == ({0: "trained", 1: "trained"}, 4)
    assert "12" in report.protocol["models"]["GCN"]["tiny"]["repr"]
    monkeypatch.setenv("RECORD_SCRATCH_WIDTH", "8")   # what the first build read: WIDTH
    _, statuses, built = _sweep(scratch, root, tmp_path / "cache")
    assert (statuses, built) == ({0: "cached", 1: "cached"}, 2), \
        "a value it read changed: built again, then a hit under the same key"


def test_a_module_value_changed_at_run_time_builds_it_again(scratch, root, tmp_path,
                                                            monkeypatch):
    _sweep(scratch, root, tmp_path / "cache")
    monkeypatch.setattr(scratch, "WIDTH", 10)
    _, statuses, built = _sweep(scratch, root, tmp_path / "cache")
    assert (statuses, built) == ({0: "trained", 1: "trained"}, 4)


def test_the_record_key_holds_versions_torch_defaults_and_module_values():
    built = {"state": "factory", "modules": "[]"}
    context = {"device": {"kind": "cpu"}, "versions": {"torch_geometric": "2.8.0"}}
    key = model_record.record_key(built, "project", [8, 3], 0, context)
    assert key == model_record.record_key(dict(built), "project", [8, 3], 0, dict(context))
    other_version = {**context, "versions": {"torch_geometric": "2.9.0"}}
    assert key != model_record.record_key(built, "project", [8, 3], 0, other_version)
    assert key != model_record.record_key({**built, "modules": "[1]"}, "project", [8, 3], 0,
                                          context)
    assert key != model_record.record_key(built, "project", [8, 3], 1, context)
    assert model_record.record_key({**built, "modules": None}, "project", [8, 3], 0,
                                   context) is None
    before = torch.get_default_dtype()
    torch.set_default_dtype(torch.float64)
    try:
        assert key != model_record.record_key(built, "project", [8, 3], 0, context)
    finally:
        torch.set_default_dtype(before)


def test_the_variables_a_build_looked_up_are_recorded(monkeypatch):
    monkeypatch.setenv("RECORD_A", "1")
    monkeypatch.delenv("RECORD_B", raising=False)
    real = os.environ
    with recording_environment() as reads:
        os.getenv("RECORD_A")
        assert "RECORD_B" not in os.environ
        os.environ["RECORD_C"] = "written"
    assert os.environ is real and os.environ["RECORD_C"] == "written"
    monkeypatch.delenv("RECORD_C")
    assert reads == {"RECORD_A": "1", "RECORD_B": None}
    assert environment_unchanged(reads)
    monkeypatch.setenv("RECORD_B", "now set")
    assert not environment_unchanged(reads)
    with recording_environment() as everything:
        dict(os.environ)
    assert not environment_unchanged(everything), "a read of every variable is never reused"


def test_a_record_edited_on_disk_is_discarded_with_a_warning(tmp_path):
    cache = TripleCache.open(tmp_path)
    key = "a" * 64
    cache.put_record(key, {"fingerprint": "f" * 64})
    assert cache.get_record(key) == {"fingerprint": "f" * 64}
    path = cache.record_path(key)
    entry = json.loads(path.read_text())
    entry["record"]["fingerprint"] = "0" * 64
    path.write_text(json.dumps(entry))
    with pytest.warns(CacheWarning, match="do not match its digest"):
        assert cache.get_record(key) is None
    assert not path.exists()
    del entry["digest"]   # written before records carried digests: a miss, not a warning
    path.write_text(json.dumps(entry))
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert cache.get_record(key) is None


def test_a_torch_variable_changes_what_a_fresh_import_depends_on(monkeypatch):
    monkeypatch.delenv("TORCH_ALLOW_TF32_CUBLAS_OVERRIDE", raising=False)
    before = environment.fresh_torch()
    monkeypatch.setenv("TORCH_ALLOW_TF32_CUBLAS_OVERRIDE", "1")
    assert environment.fresh_torch() != before
    assert before["torch"] == torch.__version__


def test_with_torch_imported_its_flags_are_read_not_recorded(tmp_path):
    cache = TripleCache.open(tmp_path)
    before = torch.get_float32_matmul_precision()
    torch.set_float32_matmul_precision("medium")
    try:
        found = environment.machine("cpu", "on", records=cache)["numerics"]
    finally:
        torch.set_float32_matmul_precision(before)
    assert found["float32_matmul_precision"] == "medium"
    assert not (tmp_path / "loads").exists()


def _factory_of_width(width):
    """A factory whose width is a value it carries (a closure cell), not code."""
    def build(in_channels, out_channels):
        from torch_geometric.nn import GCN

        return GCN(in_channels, width, 2, out_channels)
    return build


def test_a_value_the_factory_carries_builds_it_again(root, tmp_path):
    def sweep(width):
        statuses: dict = {}
        report = run_benchmark({"tiny": tiny_task(epochs=2)}, {"GCN": _factory_of_width(width)},
                               seeds=[0], device="cpu", root=root, cache_dir=tmp_path / "cache",
                               progress=lambda t, m, s, status, secs: statuses.update({s: status}))
        return statuses, report.protocol["models"]["GCN"]["tiny"]["repr"]

    assert sweep(8)[0] == {0: "trained"}
    assert sweep(8)[0] == {0: "cached"}
    statuses, described = sweep(12)
    assert statuses == {0: "trained"} and "12" in described, \
        "the first model of a task is keyed by its own carried values, not the loader's"
