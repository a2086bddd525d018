"""Keys that travel: the numeric settings and the scatter backend a triple trains under are in
its cache key and the report's protocol (CPU runs too), pinned on CUDA under the determinism
mode. Relocation (another path, HOME and user) is checked below, in sessions marked slow.
"""

from __future__ import annotations

import importlib.util
import os
import re
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest
import torch

from pytest_graphnetz import run_benchmark
from pytest_graphnetz.runner import determinism, environment
from tests.helpers.servers import TINY_PROJECT
from tests.helpers.tiny import gcn, tiny_task


@pytest.fixture(autouse=True)
def _numerics_restored():
    """Every test leaves torch's numeric flags as it found them."""
    before = determinism.current_numerics()
    yield
    torch.set_float32_matmul_precision(before["float32_matmul_precision"])
    torch.backends.cuda.matmul.allow_tf32 = before["cuda_matmul_tf32"]
    torch.backends.cudnn.allow_tf32 = before["cudnn_tf32"]
    torch.backends.cudnn.benchmark = before["cudnn_benchmark"]
    assert determinism.current_numerics() == before


def _sweep(root, cache):
    statuses: dict = {}
    report = run_benchmark({"tiny": tiny_task()}, {"GCN": gcn}, seeds=[0, 1], device="cpu",
                           root=root, cache_dir=cache,
                           progress=lambda t, m, s, status, secs: statuses.__setitem__(s, status))
    return report, statuses


def test_the_matmul_precision_changes_the_key_and_is_recorded(root, tmp_path):
    _, first = _sweep(root, tmp_path / "cache")
    torch.set_float32_matmul_precision("medium")
    report, second = _sweep(root, tmp_path / "cache")
    assert first == {0: "trained", 1: "trained"}
    assert second == {0: "trained", 1: "trained"}, "another precision must not hit"
    assert report.protocol["numerics"]["float32_matmul_precision"] == "medium"
    torch.set_float32_matmul_precision("highest")
    _, third = _sweep(root, tmp_path / "cache")
    assert third == {0: "cached", 1: "cached"}


@pytest.mark.parametrize("flag", ["cudnn_tf32", "cudnn_benchmark"])
def test_each_cuda_flag_changes_a_cpu_key(root, tmp_path, flag):
    _sweep(root, tmp_path / "cache")
    backends = torch.backends.cudnn
    setattr(backends, {"cudnn_tf32": "allow_tf32", "cudnn_benchmark": "benchmark"}[flag],
            not determinism.current_numerics()[flag])
    _, again = _sweep(root, tmp_path / "cache")
    assert again == {0: "trained", 1: "trained"}


def test_the_protocol_records_numerics_and_the_scatter_backend(root):
    report = run_benchmark({"tiny": tiny_task()}, {"GCN": gcn}, seeds=[0], device="cpu",
                           root=root)
    numerics = report.protocol["numerics"]
    assert numerics["float32_matmul_precision"] == torch.get_float32_matmul_precision()
    assert numerics["deterministic_algorithms"] == "off"
    assert set(numerics["scatter"]) == {"torch_scatter", "torch_sparse", "pyg_lib"}
    for name, version in numerics["scatter"].items():
        assert (version is None) == (importlib.util.find_spec(name) is None)


def test_a_command_only_machine_reads_no_torch_flags():
    assert environment.machine("cpu", "on", in_process=False)["numerics"] is None


@pytest.mark.parametrize("mode", ["on", "warn"])
def test_cuda_pins_the_numerics_under_the_mode(monkeypatch, mode):
    monkeypatch.setattr(determinism, "applies", lambda device: True)
    torch.set_float32_matmul_precision("medium")
    torch.backends.cudnn.benchmark = True
    assert determinism.numerics("cuda:0", mode) == {**determinism.PINNED,
                                                    "deterministic_algorithms": mode}
    with determinism.deterministic_scope(mode, "cuda:0"):
        inside = determinism.current_numerics()
    assert inside == {**determinism.PINNED, "deterministic_algorithms": mode}
    after = determinism.current_numerics()
    assert after["float32_matmul_precision"] == "medium" and after["cudnn_benchmark"]


def test_cuda_off_keys_the_flags_the_user_set(monkeypatch):
    monkeypatch.setattr(determinism, "applies", lambda device: True)
    torch.set_float32_matmul_precision("high")
    assert determinism.numerics("cuda:0", "off")["float32_matmul_precision"] == "high"


GATE = TINY_PROJECT + """

def test_run(graphnetz_run):
    graphnetz_run({"tiny": Task("tiny", tiny, epochs=3)}, {"GCN": gcn})
"""


def test_a_conftest_that_sets_the_precision_changes_the_key(pytester, tmp_path):
    """Through a real session: a conftest.py line is enough to miss the cache."""
    pytester.makepyfile(test_gate=GATE)
    args = ("--graphnetz-seeds=2", f"--graphnetz-cache-dir={tmp_path / 'cache'}",
            "--graphnetz-device=cpu", "-p", "no:cacheprovider")
    assert pytester.runpytest(*args).ret == 0
    entries = set((tmp_path / "cache").glob("*.json"))
    pytester.makeconftest("""
        import torch
        torch.set_float32_matmul_precision("medium")
        """)
    assert pytester.runpytest(*args).ret == 0
    assert len(set((tmp_path / "cache").glob("*.json")) - entries) == 2


def test_a_verdict_notes_other_numerics(root):
    from pytest_graphnetz.gates.comparing.pairing import environment_notes

    baseline = run_benchmark({"tiny": tiny_task()}, {"GCN": gcn}, seeds=[0, 1], device="cpu",
                             root=root)
    torch.set_float32_matmul_precision("medium")
    candidate = run_benchmark({"tiny": tiny_task()}, {"GCN": gcn}, seeds=[0, 1], device="cpu",
                              root=root)
    notes = environment_notes(candidate, baseline)
    # medium also lets cuBLAS use TF32: both are named
    assert notes == ("numerics differs (baseline cuda_matmul_tf32 False, float32_matmul_precision"
                     " highest, candidate cuda_matmul_tf32 True, float32_matmul_precision "
                     "medium): the protocol is the same, the last digits may not be",)


# -- costs seconds each (marked slow) ----------------------------------------------------------
# Keys travel: the same project copied to another directory and run under another HOME (and,
# where this machine lets another user run this interpreter, as another user) computes the same
# keys, so it trains nothing that a first checkout wrote to a shared remote cache (``file://``
# on a second directory, as a team's mount).


ROOT = Path(__file__).resolve().parents[2]


MODELS = TINY_PROJECT + '''

TASKS = {"tiny": Task("tiny", tiny, epochs=3)}
'''


TEST = '''
from models import TASKS, gcn


def test_run(graphnetz_run):
    graphnetz_run(TASKS, {"GCN": gcn})
'''


def _project(where: Path) -> Path:
    where.mkdir(parents=True)
    (where / "models.py").write_text(MODELS)
    (where / "test_run.py").write_text(TEST)
    (where / "tox.ini").write_text("[pytest]\ngraphnetz_seeds = 3\n")
    return where


def _session(project: Path, home: Path, remote: str, *extra: str, user: int | None = None
             ) -> tuple[int, int]:
    """``(trained, cached)`` of a fresh pytest session in ``project`` under ``home``."""
    env = {"PATH": os.environ.get("PATH", ""), "HOME": str(home), "PYTHONPATH": str(ROOT),
           "PYTHONDONTWRITEBYTECODE": "1"}
    out = subprocess.run(
        [sys.executable, "-m", "pytest", "-p", "no:randomly", "-p", "no:xdist", "-q",
         f"--graphnetz-remote-cache={remote}", *extra],
        cwd=project, env=env, capture_output=True, text=True, check=False, user=user,
        timeout=300)
    assert out.returncode == 0, out.stdout + out.stderr
    said = re.search(r"triples: (\d+) trained, (\d+) from cache", out.stdout)
    assert said is not None, out.stdout
    return int(said.group(1)), int(said.group(2))


@pytest.fixture
def shared() -> Path:
    """A directory every user of this machine can use (the pytest tmp_path is root's alone)."""
    path = Path(tempfile.mkdtemp(prefix="graphnetz-travel-"))
    path.chmod(0o777)
    yield path
    shutil.rmtree(path, ignore_errors=True)


@pytest.mark.slow
def test_another_path_and_home_hit_what_the_first_checkout_wrote(shared: Path) -> None:
    remote = (shared / "mount").as_uri()
    first = _project(shared / "ci" / "checkout")
    assert _session(first, shared / "home-ci", remote, "--graphnetz-remote-cache-write") \
        == (3, 0)
    objects = sorted((shared / "mount" / "triples").glob("*.json"))
    second = _project(shared / "laptop" / "elsewhere" / "clone")
    assert _session(second, shared / "home-laptop", remote) == (0, 3)
    assert sorted((shared / "mount" / "triples").glob("*.json")) == objects


@pytest.mark.slow
def test_another_user_hits_too(shared: Path) -> None:
    nobody = 65534
    if os.getuid() != 0:
        pytest.skip("running as another user needs root")
    try:
        probe = subprocess.run([sys.executable, "-c", "import torch"], user=nobody,
                               capture_output=True, check=False)
        why = probe.stderr.decode()[-200:] if probe.returncode else None
    except PermissionError as exc:
        why = str(exc)
    if why is not None:
        pytest.skip(f"user {nobody} cannot run this interpreter ({sys.executable}): {why}")
    remote = (shared / "mount").as_uri()
    first = _project(shared / "ci" / "checkout")
    _session(first, shared / "home-ci", remote, "--graphnetz-remote-cache-write")
    other = _project(shared / "other" / "clone")
    for path in (other, *other.rglob("*"), shared / "mount", *(shared / "mount").rglob("*")):
        path.chmod(0o777 if path.is_dir() else 0o666)
    home = shared / "home-other"
    home.mkdir(mode=0o777)
    assert _session(other, home, remote, user=nobody) == (0, 3)
