"""The tests of tests/fast/test_workflow.py's unit that cost seconds each: fresh
interpreters, subprocess sessions or killed processes (the slow tier, tests/README.md)."""

from __future__ import annotations

import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

# In-process pytester runs drop modules first imported inside them; scipy's extensions do not
# survive a second import: load the gates (and the scipy they use) here, once.
pytest.importorskip("scipy.stats")
pytest.importorskip("scipy.optimize")
import pytest_graphnetz.gates  # noqa: E402,F401
from tests.helpers.documents import COMMENT_WORKFLOW, ROOT, WORKFLOW, YAML_LOAD, load_workflow, step


def check_jsonschema(path: Path) -> subprocess.CompletedProcess:
    exe = shutil.which("check-jsonschema", path=str(Path(sys.executable).parent)) or \
        shutil.which("check-jsonschema")
    if exe is None:
        pytest.skip("check-jsonschema is not installed (the `test` extra)")
    # The schema ships inside check-jsonschema's wheel: this works offline.
    return subprocess.run([exe, "--builtin-schema", "vendor.github-workflows", str(path)],
                          capture_output=True, text=True)


def test_workflow_is_valid_for_github() -> None:
    result = check_jsonschema(WORKFLOW)
    assert result.returncode == 0, result.stdout + result.stderr


def test_the_schema_check_catches_a_broken_workflow(tmp_path: Path) -> None:
    # the defect this file once had: an unquoted ": " inside a step name
    text = WORKFLOW.read_text().replace('name: "Gates (10 seeds, CPU pinned: the baselines '
                                        'were recorded on CPU)"',
                                        "name: Gates (10 seeds, CPU pinned: the baselines were "
                                        "recorded on CPU)")
    assert text != WORKFLOW.read_text()
    broken = tmp_path / "broken.yml"
    broken.write_text(text)
    assert check_jsonschema(broken).returncode != 0


def test_workflow_is_one_a_team_can_adopt() -> None:
    workflow = load_workflow()
    # two quick pushes: one run at a time per pull request, the newer one wins
    assert "github.event.pull_request.number" in workflow["concurrency"]["group"]
    assert workflow["concurrency"]["cancel-in-progress"] is True
    # a cold run of the example project took 14 minutes: room for it, and for growth
    assert workflow["jobs"]["gates"]["timeout-minutes"] >= 2 * 14
    # the README's CI command is the workflow's
    command = step(workflow, "Gates")["run"]
    assert command.startswith("pytest -m graphnetz ")
    readme = (ROOT / "README.md").read_text()
    assert "pytest -m graphnetz " in readme and re.search(r"^pytest examples", readme, re.M) \
        is None
    # the lines to change for a real repository are marked, and the README says which
    text = WORKFLOW.read_text()
    marked = " ".join(line for line in text.splitlines() if "CHANGE:" in line)
    for what in ("default branch", "cold run", "install", "hash your", "test paths",
                 "graphnetz-comment.js"):
        assert what in marked, what
    assert "CHANGE:" in readme
    # forks: the comment workflow posts from the artifact, with the script of the base branch
    fork = YAML_LOAD(COMMENT_WORKFLOW)
    assert fork["on"]["workflow_run"]["workflows"] == [workflow["name"]]
    assert "head_repository.full_name != github.repository" in fork["jobs"]["comment"]["if"]
    steps = fork["jobs"]["comment"]["steps"]
    assert steps[0]["uses"].startswith("actions/checkout@") and "with" not in steps[0]
    assert any(s.get("uses", "").startswith("actions/download-artifact@") for s in steps)
    assert check_jsonschema(COMMENT_WORKFLOW).returncode == 0


def test_the_sharded_workflow_is_valid_and_runs_plan_train_gate() -> None:
    sharded = ROOT / "examples" / "ci" / "graphnetz-sharded.yml"
    result = check_jsonschema(sharded)
    assert result.returncode == 0, result.stdout + result.stderr
    jobs = YAML_LOAD(sharded)["jobs"]
    assert jobs["train"]["needs"] == "plan" and jobs["gate"]["needs"] == ["plan", "train"]
    assert jobs["train"]["strategy"]["matrix"] == "${{ fromJSON(needs.plan.outputs.matrix) }}"
    runs = {name: " ".join(s.get("run", "") for s in job["steps"]) for name, job in jobs.items()}
    assert "graphnetz plan --shards" in runs["plan"]
    assert "--graphnetz-shard=${{ matrix.shard }}" in runs["train"]
    assert "--graphnetz-remote-cache-write" in runs["train"]
    assert "--graphnetz-cache-only" in runs["gate"]
    assert "--graphnetz-remote-cache-write" not in runs["gate"] + runs["plan"]
