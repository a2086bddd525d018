"""The model record in real sessions: a warm session of in-process models whose code and
environment are unchanged imports neither torch nor torch_geometric and reads the cold
session's report; an edited factory rebuilds its own records only; a changed library version
rebuilds them all; a damaged record is discarded with a warning and rewritten.

One cold session (fresh pytest processes, as CI runs them) is shared by the tests; each test
runs its variations on the project and cache as that session left them.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

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


def test_a_changed_library_version_rebuilds_every_record(cold, project):
    before = _records(project)
    changed = _session(project, FAKE_PYG_VERSION="0.0.1")
    assert changed["imported"] == ["torch", "torch_geometric"]
    assert changed["trained"] == 4
    after = _records(project)
    assert sorted(head for name, (head, _) in after.items() if name not in before) \
        == ["GCN", "GCN", "GraphSAGE", "GraphSAGE"]


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
