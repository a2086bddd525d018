"""The model record (runner/model_record.py): a model whose code and environment are unchanged
is found without calling its factory; whatever its build read or reached that changed (an
environment variable, a module value, the library versions, torch's default dtype) builds it
again. Real sessions, and the warm one importing no torch, are below, marked slow."""

from __future__ import annotations

import importlib
import json
import os
import re
import shutil
import subprocess
import sys
import warnings
from pathlib import Path

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


# -- costs seconds each (marked slow) ----------------------------------------------------------
# The model record in real sessions: a warm session of in-process models whose code and
# environment are unchanged imports neither torch nor torch_geometric and reads the cold
# session's report; an edited factory rebuilds its own records only; a changed library version
# rebuilds them all; a damaged record is discarded with a warning and rewritten.
#
# One cold session (fresh pytest processes, as CI runs them) is shared by the tests; each test
# runs its variations on the project and cache as that session left them.


ROOT = Path(__file__).resolve().parents[2]


MODELS = '''
from pytest_graphnetz import Task
from pytest_graphnetz.runner.tasks.synthetic import CSBM, load_csbm

WIDTH = 8


def tiny(root, *, seed):
    return load_csbm(CSBM("tiny", num_classes=3, nodes_per_class=20, p_in=0.2, p_out=0.03,
                          num_features=8, mean_norm=1.0), root, seed)


def sage(in_channels, out_channels):
    from torch_geometric.nn import GraphSAGE

    return GraphSAGE(in_channels, WIDTH, 2, out_channels)


def gcn(in_channels, out_channels):
    from torch_geometric.nn import GCN

    return GCN(in_channels, WIDTH, 2, out_channels)


TASKS = {"tiny": Task("tiny", tiny, epochs=3)}
'''


TEST = '''
import recorded_models as rm


def test_recorded(graphnetz_run):
    report = graphnetz_run(rm.TASKS, {"SAGE": rm.sage, "GCN": rm.gcn})
    report.to_json("report.json")
'''


# Which of torch and torch_geometric the session had imported when it ended.
CONFTEST = '''
import json
import os
import sys


def pytest_configure(config):
    fake = os.environ.get("FAKE_PYG_VERSION")
    if fake:   # a changed library version, as the cache key reads versions
        from pytest_graphnetz.runner import environment

        real = environment.installed_version
        environment.installed_version = \\
            lambda name: fake if name == "torch_geometric" else real(name)


def pytest_sessionfinish(session):
    with open("imported.json", "w") as fh:
        json.dump(sorted(n for n in ("torch", "torch_geometric") if n in sys.modules), fh)
'''


def _session(project: Path, **env: str) -> dict:
    """A fresh pytest session in ``project``: its trained and cached counts, the libraries it
    had imported at its end, its report and its warnings' text."""
    out = subprocess.run(
        [sys.executable, "-m", "pytest", "-p", "no:randomly", "-p", "no:xdist",
         "-p", "no:cacheprovider", "-q", "-W", "default", "--graphnetz-seeds=2",
         f"--graphnetz-cache-dir={project / 'cache'}"],
        cwd=project, capture_output=True, text=True, check=False, timeout=300,
        env={"PATH": os.environ.get("PATH", ""), "HOME": str(project),
             "PYTHONPATH": str(ROOT), "PYTHONDONTWRITEBYTECODE": "1",
             "GRAPHNETZ_ROOT": str(project / "data"), **env})
    assert out.returncode == 0, out.stdout + out.stderr
    said = re.search(r"triples: (\d+) trained, (\d+) from cache", out.stdout)
    assert said is not None, out.stdout
    return {"trained": int(said.group(1)), "cached": int(said.group(2)),
            "imported": json.loads((project / "imported.json").read_text()),
            "report": json.loads((project / "report.json").read_text()),
            "output": out.stdout}


def _records(project: Path) -> dict[str, tuple[str, int]]:
    """The model records of the cache: file name → (the model's repr head, mtime_ns)."""
    found = {}
    for path in (project / "cache" / "loads").glob("*.json"):
        record = json.loads(path.read_text())["record"]
        if "fingerprint" in record:
            found[path.name] = (record["info"]["repr"].partition("(")[0],
                                path.stat().st_mtime_ns)
    return found


@pytest.fixture(scope="module")
def cold(tmp_path_factory) -> tuple[Path, dict]:
    """The project after its cold session, and that session."""
    project = tmp_path_factory.mktemp("record") / "project"
    project.mkdir()
    for name, text in (("recorded_models.py", MODELS), ("test_recorded_models.py", TEST),
                       ("conftest.py", CONFTEST)):
        (project / name).write_text(text)
    session = _session(project)
    shutil.copytree(project, project.with_name("after-cold"))
    return project, session


@pytest.fixture
def project(cold) -> Path:
    """The cold project, put back as its cold session left it (same path: a load record's key
    holds the data's root; the same mtimes: its stamp holds them)."""
    path = cold[0]
    shutil.rmtree(path)
    return Path(shutil.copytree(path.with_name("after-cold"), path))


@pytest.mark.slow
def test_a_warm_session_imports_no_torch_and_reads_the_cold_report(cold, project):
    first = cold[1]
    assert (first["trained"], first["imported"]) == (4, ["torch", "torch_geometric"])
    records = _records(project)
    assert sorted(head for head, _ in records.values()) == ["GCN", "GCN", "GraphSAGE",
                                                             "GraphSAGE"]
    warm = _session(project)
    assert (warm["trained"], warm["cached"], warm["imported"]) == (0, 4, [])
    assert warm["report"] == first["report"]
    assert _records(project) == records, "a warm session rewrote a record"


@pytest.mark.slow
def test_an_edited_factory_rebuilds_its_records_and_retrains_its_cells_only(cold, project):
    before = _records(project)
    source = project / "recorded_models.py"
    source.write_text(source.read_text().replace("GraphSAGE(in_channels, WIDTH, 2",
                                                 "GraphSAGE(in_channels, WIDTH + 4, 2"))
    edited = _session(project)
    assert (edited["trained"], edited["cached"]) == (2, 2)
    after = _records(project)
    kept = {name: seen for name, seen in before.items() if seen[0] == "GCN"}
    # GCN, second in the dict, is served from its records (not rebuilt, so not rewritten),
    # though torch was imported by then for SAGE.
    assert {name: after[name] for name in kept} == kept
    assert sorted(head for name, (head, _) in after.items() if name not in before) \
        == ["GraphSAGE", "GraphSAGE"]
    assert edited["report"]["fingerprints"]["model"]["GCN"] \
        == cold[1]["report"]["fingerprints"]["model"]["GCN"]
    assert edited["report"]["fingerprints"]["model"]["SAGE"] \
        != cold[1]["report"]["fingerprints"]["model"]["SAGE"]


@pytest.mark.slow
def test_a_changed_library_version_rebuilds_every_record(cold, project):
    before = _records(project)
    changed = _session(project, FAKE_PYG_VERSION="0.0.1")
    assert changed["imported"] == ["torch", "torch_geometric"]
    assert changed["trained"] == 4
    after = _records(project)
    assert sorted(head for name, (head, _) in after.items() if name not in before) \
        == ["GCN", "GCN", "GraphSAGE", "GraphSAGE"]


@pytest.mark.slow
@pytest.mark.parametrize("damage", ["truncated", "edited"])
def test_a_damaged_record_is_discarded_rebuilt_and_never_trusted(cold, project, damage):
    name = next(n for n, (head, _) in _records(project).items() if head == "GCN")
    path = project / "cache" / "loads" / name
    text = path.read_text()
    if damage == "truncated":
        path.write_text(text[: len(text) // 2])
    else:   # another model's fingerprint: the key of another triple, if it were trusted
        entry = json.loads(text)
        entry["record"]["fingerprint"] = "0" * 64
        path.write_text(json.dumps(entry))
    again = _session(project)
    assert "discarding unusable graphnetz cache record" in again["output"]
    assert (again["trained"], again["cached"]) == (0, 4)
    assert again["imported"] == ["torch", "torch_geometric"]   # the one model rebuilt
    assert again["report"] == cold[1]["report"]
    rewritten = json.loads(path.read_text())
    assert rewritten == json.loads(text), "the rebuilt record is the one first written"
