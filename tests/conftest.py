"""Shared test helpers: a tiny seeded node task and tiny model factories.

Kept free of module-level torch imports: plugin tests check that pytest runs without it.
Factories are module-level functions so worker processes can unpickle them.
"""

from __future__ import annotations

import contextlib
from typing import Any

import pytest

# An in-process pytester session drops the modules first imported inside it, and hypothesis's
# pytest plugin imports hypothesis at the end of every session: imported here, once, it stays.
# A whole-suite run imports it anyway (test_report_json.py); a run of a few files paid about
# 4 CPU seconds per in-process session without it (0.2 s with it) where no bytecode is written.
with contextlib.suppress(ImportError):
    import hypothesis  # noqa: F401

TINY_EPOCHS = 5


# The slow tier, deselected by `-m "not slow"` (the fast tier: tests/README.md, "Two tiers").
# Chosen from `--durations=0` of a full `-n 2` run: files whose every test costs seconds
# (fresh pytest sessions that train, subprocesses, a cluster, the documents' blocks) by name,
# and elsewhere the costliest tests by function name (every parametrization of it).
# tests/test_suite_scheduling.py checks that each entry names a file or test that exists.
SLOW_FILES = frozenset({
    "test_command_paths.py",
    "test_command_task.py",
    "test_dask.py",
    "test_executor.py",
    "test_schedule_reruns.py",
})
SLOW_TESTS = frozenset({
    "test_baselines.py::test_two_branches_refreshing_different_models_merge_without_conflict",
    "test_baselines.py::test_two_xdist_workers_refreshing_one_baseline_both_keep_their_cells",
    "test_baselines_paths.py::test_a_killed_baseline_write_leaves_nothing_git_add_commits",
    "test_bisect.py::test_a_signal_to_bisect_removes_its_worktrees_and_probe",
    "test_bisect.py::test_after_sigkill_the_next_bisect_sweeps_only_its_own_leftovers",
    "test_bisect.py::test_bisect_names_the_culprit_exit_0",
    "test_bisect.py::test_bisect_nothing_regressed_exit_3",
    "test_bisect.py::test_bisect_refusals_exit_2",
    "test_bisect.py::test_bisect_undecided_exit_1",
    "test_bisect.py::test_warm_probes_read_what_cold_ones_do_and_start_with_fresh_random_state",
    "test_cache.py::test_a_fifo_or_a_device_planted_in_the_cache_is_discarded",
    "test_cache_checks.py::test_an_in_process_input_changed_and_changed_back_is_a_hit",
    "test_cache_checks.py::test_an_init_binding_a_model_reaches_still_counts",
    "test_cache_checks.py::test_an_input_changed_and_changed_back_is_a_hit",
    "test_cache_project_code.py::test_a_librarys_version_counts_whether_or_not_this_process_imported_it",
    "test_calibration_kinds.py::test_calibrate_on_a_command_task_salts_the_seed_the_script_receives",
    "test_cli.py::test_only_a_failed_gate_exits_1",
    "test_cli.py::test_version_prints_the_version_and_exits_0",
    "test_cli_views.py::test_console_script_runs",
    "test_command_processes.py::test_a_killed_fork_server_falls_back_to_cold_runs_with_one_warning",
    "test_command_processes.py::test_a_session_ends_its_fork_servers_when_it_ends",
    "test_command_processes.py::test_sigkill_of_pytest_during_a_warm_run_leaves_no_process",
    "test_command_processes.py::test_sigterm_and_sigint_to_the_runner_end_the_whole_group",
    "test_command_reads.py::test_what_a_script_inherits_does_not_depend_on_the_runner_importing_torch",
    "test_command_warm.py::test_warm_runs_give_what_a_fresh_interpreter_gives",
    "test_faults.py::test_a_baseline_path_that_is_a_directory_says_so",
    "test_faults.py::test_a_killed_writers_temp_file_is_swept_once_its_lock_is_free",
    "test_faults.py::test_a_read_only_prefilled_cache_serves_its_hits_saves_nothing_and_warns_once",
    "test_faults.py::test_a_session_stopped_mid_training_leaves_no_stale_verdict",
    "test_faults.py::test_pool_workers_exit_when_their_parent_is_killed",
    "test_faults.py::test_temp_files_of_a_killed_baseline_write_are_cleaned_by_the_next_write",
    "test_faults.py::test_temp_files_of_a_killed_cache_write_are_cleaned_and_no_lock_files_stay",
    "test_import_cost.py::test_a_fully_cached_command_task_session_imports_neither_torch_nor_pyg",
    "test_import_cost.py::test_a_pytest_run_without_graphnetz_tests_imports_nothing_heavy",
    "test_import_cost.py::test_auto_resolves_without_torch_to_what_torch_says",
    "test_import_cost.py::test_importing_the_plugin_imports_nothing_heavy",
    "test_import_cost.py::test_the_versions_in_the_cache_key_spell_what_the_imports_say",
    "test_overhead.py::test_a_session_without_graphnetz_tests_never_imports_numpy_torch_or_scipy",
    "test_overhead.py::test_pyg_import_warnings_neither_fail_w_error_nor_reach_the_summary",
    "test_plugin_gates.py::test_xdist_same_verdicts_and_each_triple_trained_once",
    "test_plugin_outputs.py::test_a_fifo_as_the_step_summary_is_one_warning_not_a_hang",
    "test_plugin_outputs.py::test_a_fifo_at_an_output_path_is_a_usage_error_not_a_hang",
    "test_plugin_progress.py::test_the_first_progress_line_is_not_captured_into_a_failing_tests_report",
    "test_plugin_progress.py::test_xdist_controller_prints_per_test_counts",
    "test_plugin_settings.py::test_a_device_index_in_superscript_is_a_usage_error",
    "test_plugin_settings.py::test_bad_option_values_name_the_option",
    "test_plugin_settings.py::test_huge_seed_counts_are_usage_errors_at_parse_time",
    "test_plugin_summary.py::test_every_gate_call_has_a_row",
    "test_readme.py::test_block_runs_as_written",
    "test_report_validation.py::test_a_small_file_declaring_a_huge_grid_is_refused_before_allocating",
    "test_runner.py::test_a_fresh_process_gives_the_bit_for_bit_report_of_this_one",
    "test_suite_scheduling.py::test_dash_n_hands_out_whole_files_so_a_module_fixture_is_built_once",
    "test_summary.py::test_every_failed_graphnetz_test_has_a_row",
    "test_workflow.py::test_the_schema_check_catches_a_broken_workflow",
    "test_workflow.py::test_workflow_is_one_a_team_can_adopt",
    "test_workflow.py::test_workflow_is_valid_for_github",
})


def is_slow(item: pytest.Item) -> bool:
    """Whether ``item`` belongs to the slow tier (:data:`SLOW_FILES`, :data:`SLOW_TESTS`)."""
    name = item.path.name
    return name in SLOW_FILES or f"{name}::{getattr(item, 'originalname', item.name)}" \
        in SLOW_TESTS


@pytest.hookimpl(tryfirst=True)  # before `-m` reads the marks
def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    for item in items:
        if is_slow(item):
            item.add_marker(pytest.mark.slow)


@pytest.hookimpl(optionalhook=True)
def pytest_xdist_make_scheduler(config: pytest.Config, log: Any) -> Any:
    """``-n N`` hands out whole files (xdist's ``--dist loadfile``) instead of one test at a
    time (its default, ``--dist load``): a file's module-scoped fixtures (a Dask cluster, a
    baseline trained in subprocesses, a trained report) are then built once, not once per
    worker, and measured, whole files cost the suite no wall time (tests/README.md).

    Through xdist's public scheduler hook rather than pyproject's addopts, which would make
    every pytest run in this repository (the README's ``pytest examples``) need pytest-xdist.
    Another ``--dist`` given on the command line is left alone."""
    if config.getvalue("dist") != "load":
        return None
    from xdist.scheduler import LoadFileScheduling

    return LoadFileScheduling(config, log)


def tiny_csbm(root: str, *, seed: int) -> Any:
    """A 60-node, 3-class CSBM drawn from ``seed`` (cached under ``root``)."""
    from pytest_graphnetz.runner.tasks.synthetic import CSBM, load_csbm

    params = CSBM("tiny", num_classes=3, nodes_per_class=20, p_in=0.2, p_out=0.03,
                  num_features=8, mean_norm=1.0)
    return load_csbm(params, root, seed)


def tiny_task(name: str = "tiny", epochs: int = TINY_EPOCHS, **kwargs: Any):
    from pytest_graphnetz import Task

    return Task(name, kwargs.pop("loader", tiny_csbm), epochs=epochs, **kwargs)


def gcn(in_channels: int, out_channels: int) -> Any:
    """2-layer GCN with dropout (training draws from the RNG, so reseeding matters)."""
    from torch_geometric.nn import GCN

    return GCN(in_channels, 16, 2, out_channels, dropout=0.5)


def sage(in_channels: int, out_channels: int) -> Any:
    from torch_geometric.nn import GraphSAGE

    return GraphSAGE(in_channels, 16, 2, out_channels, dropout=0.5)


@pytest.fixture
def root(tmp_path) -> str:
    """A fresh dataset root for one test."""
    return str(tmp_path / "data")


@pytest.fixture(autouse=True)
def _isolated_from_the_ci_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    """Sessions under test must not append their gate tables to the real job summary of the
    GitHub Actions run that is testing this suite, nor share a dataset cache through the
    machine's ``XDG_CACHE_HOME`` (without it, a pytester session's default data root lies under
    its own ``HOME``, which pytester makes a temporary directory)."""
    monkeypatch.delenv("GITHUB_STEP_SUMMARY", raising=False)
    monkeypatch.delenv("XDG_CACHE_HOME", raising=False)


@pytest.fixture(scope="session")
def _imported_before_pytester() -> None:
    """Imports what an in-process session cannot import twice (see ``pytester`` below).
    Requested before pytest's own ``pytester``, whose module snapshot is taken when it is
    created and restored when the test ends: what is imported after it is dropped again."""
    import numpy.fft  # noqa: F401
    import scipy.stats  # noqa: F401
    import torch  # noqa: F401
    import torch_geometric  # noqa: F401


@pytest.fixture
def pytester(_imported_before_pytester: None, pytester: pytest.Pytester,
             monkeypatch: pytest.MonkeyPatch) -> pytest.Pytester:
    """pytest's ``pytester``, whose sessions load no hypothesis plugin: in a fresh interpreter
    (``runpytest_subprocess``, its xdist workers, ``graphnetz refresh``) that plugin's terminal
    summary imports all of hypothesis, about 1.6 s a session here, for nothing these tests
    check. Through ``PYTEST_ADDOPTS``, which pytester clears when it starts. (The README/docs
    blocks drop the variable: they run as a reader runs them.)

    An in-process session (``runpytest``) drops the modules first imported inside it, and
    some extension modules cannot be imported twice in one process: NumPy 2.4's (``cannot
    load module more than once per process``) and the C++ operator libraries torch._dynamo
    registers when PyG imports it. ``_imported_before_pytester`` imports them first, so they
    stay. Tests of what a session imports run it in a subprocess (``runpytest_subprocess``)."""
    monkeypatch.setenv("PYTEST_ADDOPTS", "-p no:hypothesispytest")
    return pytester
