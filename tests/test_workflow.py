"""The example CI workflow: valid for GitHub, wired to options that exist, and its pull-request
comment — one per PR, updated in place — is the one docs/ci.md shows, generated here.

docs/ci.md's example comment is produced by a real pytest session (the plugin's Markdown summary)
wrapped as the workflow's script wraps it; regenerate it with
``GRAPHNETZ_REGENERATE_README=1 pytest tests/test_workflow.py``.
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

# In-process pytester runs drop modules first imported inside them; scipy's extensions do not
# survive a second import: load the gates (and the scipy they use) here, once.
pytest.importorskip("scipy.stats")
pytest.importorskip("scipy.optimize")
import pytest_graphnetz.gates  # noqa: E402,F401
from pytest_graphnetz.plugin import _OPTIONS  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]
WORKFLOW = ROOT / "examples" / "ci" / "graphnetz.yml"
README = ROOT / "docs" / "ci.md"   # the page that shows the example comment
MARKER = "<!-- graphnetz-gates -->"
RUN_URL = "https://github.com/OWNER/REPO/actions/runs/1234"


def load_workflow() -> dict:
    from ruamel.yaml import YAML  # check-jsonschema's YAML reader (YAML 1.2: `on` stays a key)

    return YAML(typ="safe").load(WORKFLOW.read_text())


def step(workflow: dict, name: str) -> dict:
    (found,) = [s for s in workflow["jobs"]["gates"]["steps"] if s.get("name", "").startswith(name)]
    return found


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


def test_workflow_restores_the_cache_gates_uploads_and_comments() -> None:
    workflow = load_workflow()
    known = {f"--graphnetz-{o.name}" for o in _OPTIONS}
    command = step(workflow, "Gates")["run"]
    used = set(re.findall(r"--graphnetz-[a-z-]+", command))
    assert used <= known, f"the workflow uses options the plugin does not have: {used - known}"
    assert {"--graphnetz-summary", "--graphnetz-report-dir", "--graphnetz-cache-dir"} <= used

    cache = step(workflow, "Restore the triple cache")
    cache_dir = re.search(r"--graphnetz-cache-dir=(\S+)", command).group(1)
    assert cache["uses"].startswith("actions/cache@") and cache_dir in cache["with"]["path"]

    upload = step(workflow, "Keep the verdicts")
    report_dir = re.search(r"--graphnetz-report-dir=(\S+)", command).group(1)
    summary = re.search(r"--graphnetz-summary=(\S+)", command).group(1)
    assert upload["if"] == "always()" and report_dir in upload["with"]["path"]
    assert summary in upload["with"]["path"]

    comment = step(workflow, "Post the verdict table")
    assert comment["uses"].startswith("actions/github-script@")
    assert "always()" in comment["if"] and "pull_request" in comment["if"]
    assert summary in comment["with"]["script"]
    assert workflow["permissions"]["pull-requests"] == "write"


# -- the pull-request comment ----------------------------------------------------------------------

def pr_comment(summary: str) -> str:
    """The comment body the workflow's script posts for ``summary`` (checked against the script
    itself, run under node, in :func:`test_pr_comment_is_one_comment_updated_in_place`)."""
    return "\n".join([MARKER, summary.strip(), "",
                      f"<sub>[workflow run and candidate reports]({RUN_URL})</sub>"])


HARNESS = """
const fs = require('fs');
const statePath = process.argv[2];
const state = JSON.parse(fs.readFileSync(statePath, 'utf8'));
const context = {serverUrl: 'https://github.com', repo: {owner: 'OWNER', repo: 'REPO'},
                 runId: 1234, issue: {number: 7}};
const github = {
  paginate: async (method, args) => state.comments.map(c => ({...c})),
  rest: {issues: {
    listComments: 'listComments',
    updateComment: async ({comment_id, body}) => {
      state.calls.push('update');
      state.comments.find(c => c.id === comment_id).body = body;
    },
    createComment: async ({issue_number, body}) => {
      state.calls.push('create');
      state.comments.push({id: state.comments.length + 1, user: {type: 'Bot'}, body});
    },
  }},
};
(async () => {
SCRIPT
})().then(() => fs.writeFileSync(statePath, JSON.stringify(state)),
          (err) => { console.error(err); process.exit(3); });
"""


def test_pr_comment_is_one_comment_updated_in_place(tmp_path: Path) -> None:
    node = shutil.which("node")
    if node is None:
        pytest.skip("node is not installed: the workflow's script cannot run here")
    script = step(load_workflow(), "Post the verdict table")["with"]["script"]
    harness = tmp_path / "harness.js"
    harness.write_text(HARNESS.replace("SCRIPT", script))
    state = tmp_path / "state.json"
    # a reviewer's comment that quotes the marker must never be edited
    human = {"id": 1, "user": {"type": "User"}, "body": f"{MARKER} looks odd?"}
    state.write_text(json.dumps({"comments": [human], "calls": []}))

    def post(summary: str) -> dict:
        (tmp_path / "graphnetz-summary.md").write_text(summary)
        done = subprocess.run([node, str(harness), str(state)], cwd=tmp_path,
                              capture_output=True, text=True)
        assert done.returncode == 0, done.stderr
        return json.loads(state.read_text())

    first = post("### graphnetz gates\n\nfirst push\n")
    assert first["calls"] == ["create"]
    assert first["comments"][1]["body"] == pr_comment("### graphnetz gates\n\nfirst push\n")
    second = post("### graphnetz gates\n\nsecond push\n")
    assert second["calls"] == ["create", "update"]
    assert len(second["comments"]) == 2 and second["comments"][0] == human
    assert second["comments"][1]["body"] == pr_comment("### graphnetz gates\n\nsecond push\n")


# A pull request as a team would open one: GCN unchanged, GAT made worse, GraphSAGE added
# without a baseline, and a change to the citeseer split pipeline.
PR_SESSION = """
import numpy as np
from pytest_graphnetz import BenchmarkReport, assert_not_worse

SEEDS = range(10)
GCN = np.array([0.812, 0.806, 0.815, 0.809, 0.811, 0.804, 0.817, 0.808, 0.81, 0.813])
GAT = np.array([0.823, 0.817, 0.826, 0.82, 0.818, 0.814, 0.829, 0.819, 0.821, 0.824])
GAT_PR = GAT - np.array([0.012, 0.006, 0.015, 0.009, 0.004, 0.011, 0.013, 0.007, 0.01, 0.008])
GCN_PR = GCN + np.array([0.002, -0.001, 0.0, 0.001, -0.002, 0.003, 0.0, -0.001, 0.002, 0.001])


def report(task, models, split="v1"):
    return BenchmarkReport.from_arrays(
        np.array([list(models.values())]), tasks=[task], models=list(models), seeds=SEEDS,
        metric="accuracy", fingerprints={"data": {task: {s: split for s in SEEDS}}})


def test_cora_not_worse():
    assert_not_worse(report("cora", {"GCN": GCN_PR, "GAT": GAT_PR}),
                     report("cora", {"GCN": GCN, "GAT": GAT}))


def test_sage_not_worse(graphnetz_baseline):
    assert_not_worse(report("cora", {"GraphSAGE": GCN - 0.01}), graphnetz_baseline())


def test_citeseer_not_worse():
    assert_not_worse(report("citeseer", {"GCN": GCN - 0.09}, split="v2"),
                     report("citeseer", {"GCN": GCN - 0.1}))
"""
README_START = "<!-- pr-comment-example: generated by tests/test_workflow.py -->"
README_END = "<!-- /pr-comment-example -->"


def test_readme_shows_a_real_pr_comment(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(test_models=PR_SESSION)
    result = pytester.runpytest("-p", "no:cacheprovider", "--graphnetz-summary=summary.md")
    result.assert_outcomes(passed=0, failed=3)
    # the one machine-specific part: where pytester ran
    summary = (pytester.path / "summary.md").read_text().replace(f"{pytester.path}/", "")
    # four backticks: the body has ```text blocks of its own
    block = f"{README_START}\n````markdown\n{pr_comment(summary)}\n````\n{README_END}"
    readme = README.read_text()
    pattern = re.compile(re.escape(README_START) + ".*?" + re.escape(README_END), re.S)
    assert pattern.search(readme), "docs/ci.md lost its generated pull-request comment block"
    if os.environ.get("GRAPHNETZ_REGENERATE_README"):
        README.write_text(pattern.sub(lambda _: block, readme))
        return
    assert pattern.search(readme).group(0) == block, (
        "docs/ci.md's example pull-request comment is out of date: regenerate it with "
        "`GRAPHNETZ_REGENERATE_README=1 pytest tests/test_workflow.py`")
