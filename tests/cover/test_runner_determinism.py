"""Deterministic CUDA algorithms (``--graphnetz-deterministic``), checked without a GPU.

These machines have no CUDA. What a CPU can check is checked for real: torch's process-wide
flags are real flags (settable without CUDA), and ``put_`` without accumulation raises torch's
genuine "does not have a deterministic implementation" error on CPU too. "A CUDA device" is
simulated by telling :mod:`pytest_graphnetz.runner.determinism` that the CPU device is one (the
``simulated_cuda`` fixture); the runner then applies the mode to the CPU triple exactly as it
would to a CUDA one. That the CUDA kernels themselves become deterministic is checked by
``benchmarks/gpu_check.py`` on a GPU machine, not here.
"""

from __future__ import annotations

import os
import re

import pytest
import torch

from pytest_graphnetz import run_benchmark, runner
from pytest_graphnetz.runner import determinism
from pytest_graphnetz.runner.determinism import CUBLAS_ENV, DeterminismError, deterministic_scope
from tests.helpers.tiny import gcn, tiny_task

STUB_GPU = {"name": "Simulated GPU", "cuda": "12.4", "cudnn": 90100}


@pytest.fixture(autouse=True)
def _flags_restored(monkeypatch: pytest.MonkeyPatch):
    """Every test leaves torch's flags and the cuBLAS variable as it found them."""
    monkeypatch.delenv(CUBLAS_ENV, raising=False)
    before = _flags()
    # The first call imports torch._inductor modules that register an operator library; made
    # here, outside any in-process pytester session (whose end drops the modules first
    # imported inside it, so the call below would register the library a second time).
    torch.use_deterministic_algorithms(before[0], warn_only=before[1])
    yield
    assert _flags() == before
    torch.use_deterministic_algorithms(False)  # in case the assertion above failed


def _flags() -> tuple[bool, bool, bool]:
    return (torch.are_deterministic_algorithms_enabled(),
            torch.is_deterministic_algorithms_warn_only_enabled(), torch.backends.cudnn.benchmark)


@pytest.fixture
def simulated_cuda(monkeypatch: pytest.MonkeyPatch) -> None:
    """The runner treats the CPU device as a CUDA one: applies the mode, records ``STUB_GPU``."""
    monkeypatch.setattr(determinism, "applies", lambda device: True)
    monkeypatch.setattr(determinism, "gpu_protocol", lambda device: STUB_GPU)


def put_without_accumulate(model, data, *, task, device):
    """A trainer using an operation that has no deterministic implementation (on CPU too)."""
    torch.zeros(4).put_(torch.tensor([0, 0]), torch.tensor([1.0, 2.0]))
    return {"test": [0.5], "val": [0.5]}


# -- the mode and the flags ------------------------------------------------------------------


@pytest.mark.parametrize("bad", ["yes", "", "true", None])
def test_bad_mode_names_the_option(bad):
    with pytest.raises(ValueError, match=r"^`deterministic`: expected one of on, warn, off"):
        determinism.check_mode(bad)


def test_check_mode_normalises():
    assert [determinism.check_mode(m) for m in (" ON", "Warn", "off")] == ["on", "warn", "off"]


@pytest.mark.parametrize(("mode", "inside"), [("on", (True, False, False)),
                                              ("warn", (True, True, False)),
                                              ("off", (False, False, True))])
def test_cuda_scope_sets_the_flags_and_restores_them(mode, inside):
    # A non-default starting state, so "restored" cannot pass by resetting to the defaults.
    torch.use_deterministic_algorithms(False)
    torch.backends.cudnn.benchmark = True
    try:
        with deterministic_scope(mode, "cuda:0"):
            assert _flags() == inside
        assert _flags() == (False, False, True)
    finally:
        torch.backends.cudnn.benchmark = False


def test_cuda_scope_restores_the_flags_after_an_exception():
    torch.use_deterministic_algorithms(True, warn_only=True)
    try:
        with pytest.raises(KeyError), deterministic_scope("on", "cuda:1"):
            assert _flags() == (True, False, False)
            raise KeyError("boom")
        assert _flags() == (True, True, False)
    finally:
        torch.use_deterministic_algorithms(False)


@pytest.mark.parametrize("device", ["cpu", "mps"])
def test_the_mode_leaves_cpu_and_mps_alone(device):
    with deterministic_scope("on", device):
        assert _flags() == (False, False, False)
        assert CUBLAS_ENV not in os.environ


# -- the cuBLAS workspace ----------------------------------------------------------------------


def test_cublas_variable_is_set_before_cuda_starts():
    with deterministic_scope("on", "cuda:0"):
        assert os.environ[CUBLAS_ENV] == ":4096:8"


def test_a_users_cublas_value_is_kept(monkeypatch):
    monkeypatch.setenv(CUBLAS_ENV, ":16:8")
    determinism.prepare_cublas("on")
    assert os.environ[CUBLAS_ENV] == ":16:8"


def test_off_does_not_touch_cublas():
    determinism.prepare_cublas("off")
    assert CUBLAS_ENV not in os.environ


def test_too_late_for_cublas_is_refused_with_the_line_to_add(monkeypatch):
    monkeypatch.setattr(torch.cuda, "is_initialized", lambda: True)
    with pytest.raises(DeterminismError) as info:
        determinism.prepare_cublas("on")
    message = str(info.value)
    assert 'os.environ["CUBLAS_WORKSPACE_CONFIG"] = ":4096:8"' in message
    assert "export CUBLAS_WORKSPACE_CONFIG=:4096:8" in message
    assert "CUBLAS_WORKSPACE_CONFIG unset" in message
    assert "--graphnetz-deterministic=warn" in message
    assert CUBLAS_ENV not in os.environ  # setting it now would be pointless: not done
    monkeypatch.setenv(CUBLAS_ENV, ":0:0")
    with pytest.warns(RuntimeWarning, match=r"CUBLAS_WORKSPACE_CONFIG = ':0:0'"):
        determinism.prepare_cublas("warn")


def test_too_late_for_cublas_refuses_the_run_before_any_triple(root, simulated_cuda,
                                                               monkeypatch):
    monkeypatch.setattr(torch.cuda, "is_initialized", lambda: True)
    with pytest.raises(DeterminismError, match="CUBLAS_WORKSPACE_CONFIG"):
        run_benchmark({"t": tiny_task("t")}, {"GCN": gcn}, seeds=[0], device="cpu", root=root)


# -- an operation without a deterministic implementation ---------------------------------------


def test_nondeterministic_operation_fails_the_triple_naming_it_and_the_option(root,
                                                                             simulated_cuda):
    task = tiny_task("t", trainer=put_without_accumulate)
    with pytest.raises(runner.TripleError) as info:
        run_benchmark({"t": task}, {"GCN": gcn}, seeds=[0], device="cpu", root=root)
    message = str(info.value)
    assert re.search(r"task 't' × model 'GCN' × seed 0 failed: DeterminismError: put_ has no "
                     r"deterministic CUDA implementation", message), message
    assert "--graphnetz-deterministic=warn" in message
    assert "run_benchmark(deterministic='warn')" in message
    # torch's own error is kept as the cause.
    assert "put_ does not have a deterministic implementation" in str(info.value.__cause__
                                                                       .__cause__)


def test_warn_lets_the_operation_run_with_torchs_warning(root, simulated_cuda):
    task = tiny_task("t", trainer=put_without_accumulate)
    with pytest.warns(UserWarning, match="put_ does not have a deterministic implementation"):
        report = run_benchmark({"t": task}, {"GCN": gcn}, seeds=[0], device="cpu", root=root,
                               deterministic="warn")
    assert report.protocol["deterministic"] == "warn"


def test_the_same_error_is_left_alone_when_the_mode_is_not_ours(root):
    """On a real CPU run the flag is the user's business: their error passes through as is."""
    task = tiny_task("t", trainer=put_without_accumulate)
    torch.use_deterministic_algorithms(True)
    try:
        with pytest.raises(runner.TripleError, match="RuntimeError: put_ does not") as info:
            run_benchmark({"t": task}, {"GCN": gcn}, seeds=[0], device="cpu", root=root)
        assert "--graphnetz-deterministic" not in str(info.value)
    finally:
        torch.use_deterministic_algorithms(False)


def test_operation_name_is_parsed_from_torchs_message():
    try:
        torch.use_deterministic_algorithms(True)
        torch.zeros(3).put_(torch.tensor([1]), torch.tensor([1.0]))
    except RuntimeError as exc:
        assert determinism.nondeterministic_operation(exc) == "put_"
    else:
        pytest.fail("torch no longer raises for put_ under deterministic algorithms")
    finally:
        torch.use_deterministic_algorithms(False)
    assert determinism.nondeterministic_operation(RuntimeError("CUDA out of memory")) is None
    assert determinism.nondeterministic_operation(
        ValueError("x does not have a deterministic implementation")) is None


# -- protocol and cache key ----------------------------------------------------------------------


def test_protocol_records_the_mode_and_no_gpu_on_cpu(root):
    report = run_benchmark({"t": tiny_task("t")}, {"GCN": gcn}, seeds=[0], device="cpu",
                           root=root)
    assert (report.protocol["deterministic"], report.protocol["gpu"]) == ("on", None)
    off = run_benchmark({"t": tiny_task("t")}, {"GCN": gcn}, seeds=[0], device="cpu", root=root,
                        deterministic="off")
    assert off.protocol["deterministic"] == "off"
    assert off.histories == report.histories  # no effect on CPU numbers


def test_protocol_records_the_gpu_on_cuda(root, simulated_cuda):
    report = run_benchmark({"t": tiny_task("t")}, {"GCN": gcn}, seeds=[0], device="cpu",
                           root=root, deterministic="warn")
    assert report.protocol["gpu"] == STUB_GPU
    assert report.protocol["deterministic"] == "warn"


def test_bad_mode_is_refused_before_training(root):
    with pytest.raises(ValueError, match="^`deterministic`: expected one of on, warn, off"):
        run_benchmark({"t": tiny_task("t")}, {"GCN": gcn}, seeds=[0], device="cpu", root=root,
                      deterministic="maybe")


def _statuses(root, cache, mode):
    seen = []
    run_benchmark({"t": tiny_task("t")}, {"GCN": gcn}, seeds=[0, 1], device="cpu", root=root,
                  cache_dir=cache, deterministic=mode,
                  progress=lambda task, model, seed, status, seconds: seen.append(status))
    return seen


def test_cache_key_includes_the_mode_on_cuda(root, tmp_path, simulated_cuda):
    cache = tmp_path / "cache"
    assert _statuses(root, cache, "on") == ["trained"] * 2
    assert _statuses(root, cache, "off") == ["trained"] * 2
    assert _statuses(root, cache, "warn") == ["trained"] * 2
    assert _statuses(root, cache, "on") == ["cached"] * 2


def test_cpu_cache_entries_are_shared_across_modes(root, tmp_path):
    cache = tmp_path / "cache"
    assert _statuses(root, cache, "on") == ["trained"] * 2
    assert _statuses(root, cache, "off") == ["cached"] * 2


# -- gates -----------------------------------------------------------------------------------


def _pair(cand_protocol, base_protocol):
    import numpy as np

    from pytest_graphnetz import BenchmarkReport

    values = np.array([[[0.8, 0.82, 0.79, 0.81]]])
    cand, base = (BenchmarkReport.from_arrays(values, tasks=["t"], models=["GCN"],
                                              seeds=range(4), metric="accuracy")
                  for _ in range(2))
    cand.protocol.update(cand_protocol)
    base.protocol.update(base_protocol)
    return cand, base


def test_gate_notes_a_deterministic_against_a_nondeterministic_cuda_run():
    from pytest_graphnetz import assert_not_worse

    cand, base = _pair({"deterministic": "on", "gpu": STUB_GPU},
                       {"deterministic": "off", "gpu": {**STUB_GPU, "cuda": "12.1"}})
    (verdict,) = assert_not_worse(cand, base, first_look=4)
    notes = [n for n in verdict.notes if n.startswith("deterministic CUDA algorithms differ")]
    assert notes == ["deterministic CUDA algorithms differ (baseline off, candidate on): a CUDA "
                     "run not in mode 'on' may vary in the last digits from rerun to rerun, so "
                     "even an unchanged model need not be IDENTICAL"]
    assert any(n.startswith("gpu differs (baseline cuda 12.1, candidate cuda 12.4)")
               for n in verdict.notes)
    assert "deterministic CUDA algorithms differ" in verdict.message()


def test_gate_is_silent_about_the_mode_between_cpu_runs_or_equal_modes():
    from pytest_graphnetz import assert_not_worse

    for cand_p, base_p in [({"deterministic": "on", "gpu": None},
                            {"deterministic": "off", "gpu": None}),
                           ({"deterministic": "on", "gpu": STUB_GPU},
                            {"deterministic": "on", "gpu": STUB_GPU}),
                           ({"deterministic": "on", "gpu": STUB_GPU}, {})]:
        (verdict,) = assert_not_worse(*_pair(cand_p, base_p), first_look=4)
        assert not [n for n in verdict.notes if "determin" in n or "gpu" in n]


# -- the pytest option ---------------------------------------------------------------------------

SHOW_MODE = """
from pytest_graphnetz.plugin import session_of


def test_mode(pytestconfig, graphnetz_run):
    print("MODE=" + session_of(pytestconfig).settings.deterministic)
"""

RUN_TINY = """
from pytest_graphnetz import Task


def trainer(model, data, *, task, device):
    return {"test": [0.5], "val": [0.5]}


def linear(in_channels, out_channels):
    import torch

    return torch.nn.Linear(in_channels, out_channels)


def test_run(graphnetz_run):
    task = Task("t", lambda root: {"x": 1}, trainer=trainer, in_channels=2, out_channels=2,
                epochs=1)
    report = graphnetz_run({"t": task}, {"lin": linear}, seeds=[0], device="cpu")
    print("PROTOCOL_MODE=" + report.protocol["deterministic"])
"""


def _mode(pytester: pytest.Pytester, *args: str) -> str:
    result = pytester.runpytest("-s", *args)
    result.assert_outcomes(passed=1)
    return re.search(r"MODE=(\w+)", result.stdout.str()).group(1)


def test_option_default_command_line_and_ini(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(SHOW_MODE)
    assert _mode(pytester) == "on"
    assert _mode(pytester, "--graphnetz-deterministic=warn") == "warn"
    pytester.makeini("[pytest]\ngraphnetz_deterministic = off\n")
    assert _mode(pytester) == "off"
    assert _mode(pytester, "--graphnetz-deterministic=ON") == "on"


@pytest.mark.parametrize(("args", "name"), [
    (["--graphnetz-deterministic=maybe"], "`--graphnetz-deterministic`"),
    (["-o", "graphnetz_deterministic=1"], "the ini key `graphnetz_deterministic`"),
])
def test_bad_option_value_is_a_usage_error_naming_the_option(pytester: pytest.Pytester,
                                                             args: list[str], name: str) -> None:
    pytester.makepyfile(SHOW_MODE)
    result = pytester.runpytest(*args)
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    assert f"graphnetz: {name}: expected one of on, warn, off" in result.stderr.str()


def test_the_fixture_runs_in_the_sessions_mode(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(RUN_TINY)
    result = pytester.runpytest("-s", "--graphnetz-deterministic=warn", "--graphnetz-no-cache")
    result.assert_outcomes(passed=1)
    assert "PROTOCOL_MODE=warn" in result.stdout.str()

