"""The example CI workflow: valid for GitHub, wired to options that exist, and its pull-request
comment — one per PR, updated in place — is the one docs/ci.md shows, generated here.

docs/ci.md's example comment is produced by a real pytest session (the plugin's Markdown summary)
wrapped as the workflow's script wraps it; regenerate it with
``GRAPHNETZ_REGENERATE_README=1 pytest tests/cover/test_workflow.py``.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
from pathlib import Path

import pytest

# In-process pytester runs drop modules first imported inside them; scipy's extensions do not
# survive a second import: load the gates (and the scipy they use) here, once.
pytest.importorskip("scipy.stats")
pytest.importorskip("scipy.optimize")
import sys

import pytest_graphnetz.gates  # noqa: E402,F401
from pytest_graphnetz.base.text import code_block  # noqa: E402
from pytest_graphnetz.plugin.options import OPTIONS  # noqa: E402
from tests.helpers.documents import COMMENT_WORKFLOW, ROOT, WORKFLOW, YAML_LOAD, load_workflow, step

README = ROOT / "docs" / "ci.md"   # the page that shows the example comment
MARKER = "<!-- graphnetz-gates -->"
RUN_URL = "https://github.com/OWNER/REPO/actions/runs/1234"


def test_workflow_restores_the_cache_gates_uploads_and_comments() -> None:
    workflow = load_workflow()
    known = {f"--graphnetz-{o.name}" for o in OPTIONS}
    command = step(workflow, "Gates")["run"]
    used = set(re.findall(r"--graphnetz-[a-z-]+", command))
    assert used <= known, f"the workflow uses options the plugin does not have: {used - known}"
    assert {"--graphnetz-summary", "--graphnetz-report-dir", "--graphnetz-cache-dir",
            "--graphnetz-comment", "--graphnetz-json"} <= used

    cache = step(workflow, "Restore the triple cache")
    cache_dir = re.search(r"--graphnetz-cache-dir=(\S+)", command).group(1)
    assert cache_dir == '"$RUNNER_TEMP/graphnetz-cache"'
    assert cache["uses"].startswith("actions/cache/restore@")
    assert "${{ runner.temp }}/graphnetz-cache" in cache["with"]["path"].splitlines()

    upload = step(workflow, "Keep the verdicts")
    assert upload["if"] == "always()"
    for option in ("report-dir", "summary", "comment", "json"):
        path = re.search(rf"--graphnetz-{option}=(\S+)", command).group(1)
        assert path in upload["with"]["path"], option
    assert "graphnetz-pr.txt" in upload["with"]["path"]

    comment = step(workflow, "Post the verdicts")
    assert comment["uses"].startswith("actions/github-script@")
    assert "!cancelled()" in comment["if"] and "pull_request" in comment["if"]
    comment_file = re.search(r"--graphnetz-comment=(\S+)", command).group(1)
    assert f"path: '{comment_file}'" in comment["with"]["script"]
    assert workflow["permissions"]["pull-requests"] == "write"


def test_the_cache_is_saved_when_the_gates_fail_and_lives_outside_the_checkout() -> None:
    """A failing run's trained triples are the ones the fix reruns: saved with `always()`
    (actions/cache saves only after a successful job); and a cache under the checkout could be
    filled by files a pull request commits."""
    workflow = load_workflow()
    steps = workflow["jobs"]["gates"]["steps"]
    names = [s.get("name", "") for s in steps]
    restore, save = step(workflow, "Restore the triple cache"), step(workflow, "Save the triple")
    assert names.index(restore["name"]) < names.index(next(n for n in names
                                                           if n.startswith("Gates")))
    assert names.index(save["name"]) > names.index(next(n for n in names if n.startswith("Gates")))
    assert save["uses"].startswith("actions/cache/save@") and "always()" in save["if"]
    assert save["with"]["path"] == restore["with"]["path"]
    assert save["with"]["key"] == f"${{{{ steps.{restore['id']}.outputs.cache-primary-key }}}}"
    assert not any(s.get("uses", "").startswith("actions/cache@") for s in steps)
    for path in restore["with"]["path"].splitlines():
        if "graphnetz-cache" in path:
            assert path.startswith(("${{ runner.temp }}", "~/")), path   # not in the checkout
# -- the pull-request comment, through the workflow's own script under node ------------------------

SCRIPT = WORKFLOW.with_name("graphnetz-comment.js")
LINK = f"<sub>[workflow run: step summary and candidate reports]({RUN_URL})</sub>"


def pr_comment(comment: str) -> str:
    """The comment body the workflow's script posts for the plugin's ``comment`` file (checked
    against the script itself, run under node, in the tests below)."""
    return "\n".join([MARKER, comment.strip(), "", LINK])


# A fake GitHub API for actions/github-script: comments of PR 7, GitHub's 65,536-character limit,
# and failures on demand (state.fail: {create|update|updateStale|delete: status}; state.readOnly:
# every write answers 403, as a fork's token does).
HARNESS = """
const fs = require('fs');
const statePath = process.argv[2];
const state = JSON.parse(fs.readFileSync(statePath, 'utf8'));
const fail = (what, status) => {
  const err = new Error(`${what} failed`); err.status = status; throw err;
};
const write = (what, body) => {
  state.calls.push(what);
  if (state.readOnly) fail(what, 403);
  if (body !== undefined && body.length > 65536) {
    fail(`${what}: Validation Failed: body is too long (maximum is 65536 characters)`, 422);
  }
  const stale = body !== undefined && body.includes('graphnetz gates: stale');
  const key = what === 'update' && stale ? 'updateStale' : what;
  if (state.fail && state.fail[key]) fail(what, state.fail[key]);
};
const context = {serverUrl: 'https://github.com', repo: {owner: 'OWNER', repo: 'REPO'},
                 runId: 1234, issue: {number: 7},
                 payload: {workflow_run: {head_sha: 'abc', html_url: '%RUN_URL%'}}};
const core = {warning: (m) => state.warnings.push(m)};
const github = {
  paginate: async (method, args) => state.comments.map(c => ({...c})),
  rest: {
    pulls: {get: async ({pull_number}) => ({data: {number: pull_number,
                                                   head: {sha: state.heads[pull_number]}}})},
    issues: {
      listComments: 'listComments',
      updateComment: async ({comment_id, body}) => {
        write('update', body);
        state.comments.find(c => c.id === comment_id).body = body;
      },
      createComment: async ({issue_number, body}) => {
        write('create', body);
        state.comments.push({id: state.comments.length + 1, user: {type: 'Bot'}, body});
      },
      deleteComment: async ({comment_id}) => {
        write('delete');
        state.comments = state.comments.filter(c => c.id !== comment_id);
      },
    }},
};
(async () => {
SCRIPT
})().then(() => fs.writeFileSync(statePath, JSON.stringify(state)),
          (err) => { fs.writeFileSync(statePath, JSON.stringify(state));
                     console.error(err.message); process.exit(3); });
""".replace("%RUN_URL%", RUN_URL)


class FakeGitHub:
    """Runs a workflow step's github-script under node in ``root`` against the fake API."""

    def __init__(self, root: Path, script: str, **state: object) -> None:
        node = shutil.which("node")
        if node is None:
            pytest.skip("node is not installed: the workflow's script cannot run here")
        self.node, self.root = node, root
        (root / "examples" / "ci").mkdir(parents=True, exist_ok=True)
        shutil.copy(SCRIPT, root / "examples" / "ci" / SCRIPT.name)
        (root / "harness.js").write_text(HARNESS.replace("SCRIPT", script))
        self.state_path = root / "state.json"
        self.state_path.write_text(json.dumps({"comments": [], "calls": [], "warnings": [],
                                               "heads": {}, **state}))

    def set(self, **changes: object) -> None:
        self.state_path.write_text(json.dumps({**self.state, **changes}))

    @property
    def state(self) -> dict:
        return json.loads(self.state_path.read_text())

    def post(self, comment: str | None, name: str = "graphnetz-comment.md") -> int:
        path = self.root / name
        path.parent.mkdir(parents=True, exist_ok=True)
        if comment is None:
            path.unlink(missing_ok=True)
        else:
            path.write_text(comment)
        done = subprocess.run([self.node, "harness.js", "state.json"], cwd=self.root,
                              capture_output=True, text=True)
        return done.returncode


def gate_script() -> str:
    return step(load_workflow(), "Post the verdicts")["with"]["script"]


HUMAN = {"id": 1, "user": {"type": "User"}, "body": f"{MARKER} looks odd?"}


def test_pr_comment_is_created_then_updated_in_place(tmp_path: Path) -> None:
    github = FakeGitHub(tmp_path, gate_script(), comments=[HUMAN])
    assert github.post("### graphnetz gates ✓\n\nfirst push\n") == 0
    assert github.state["calls"] == ["create"]
    assert github.state["comments"][1]["body"] == pr_comment("### graphnetz gates ✓\n\nfirst push")
    assert github.post("### graphnetz gates ✗\n\nsecond push\n") == 0
    state = github.state
    assert state["calls"] == ["create", "update"]
    assert len(state["comments"]) == 2 and state["comments"][0] == HUMAN   # never edited
    assert state["comments"][1]["body"] == pr_comment("### graphnetz gates ✗\n\nsecond push")


def test_pr_comment_never_exceeds_githubs_limit(tmp_path: Path) -> None:
    github = FakeGitHub(tmp_path, gate_script())
    rows = "\n".join(f"| test_big | task{i}/GCN | -0.01 [-0.02, -0.001] (90%) | ✗ REGRESSED | 10 |"
                     for i in range(1500))
    huge = f"### graphnetz gates ✗\n\n{rows}\n"
    assert len(huge) > 100_000
    assert github.post(huge) == 0
    (comment,) = github.state["comments"]
    assert len(comment["body"]) <= 65_536
    assert "cut at 60000 characters" in comment["body"] and comment["body"].endswith(LINK)


def test_a_failed_post_leaves_no_stale_verdict(tmp_path: Path) -> None:
    github = FakeGitHub(tmp_path, gate_script())
    assert github.post("### graphnetz gates ✓\n\n0 failed\n") == 0
    github.set(fail={"update": 502})
    assert github.post("### graphnetz gates ✗\n\n3 failed\n") != 0      # the step says so
    (comment,) = github.state["comments"]
    assert "graphnetz gates: stale" in comment["body"] and "0 failed" not in comment["body"]
    # even the notice cannot be written: the old comment goes
    github.set(fail={"update": 502, "updateStale": 502})
    github.set(comments=[{"id": 5, "user": {"type": "Bot"},
                          "body": pr_comment("### graphnetz gates ✓\n\n0 failed")}])
    assert github.post("### graphnetz gates ✗\n\n3 failed\n") != 0
    assert github.state["comments"] == [] and github.state["calls"][-1] == "delete"


def test_missing_verdicts_are_posted_as_missing(tmp_path: Path) -> None:
    github = FakeGitHub(tmp_path, gate_script())
    assert github.post(None) == 0
    (comment,) = github.state["comments"]
    assert "No verdicts were written" in comment["body"]


def test_a_forks_read_only_token_warns_and_the_comment_workflow_posts(tmp_path: Path) -> None:
    fork = FakeGitHub(tmp_path / "gates", gate_script(), readOnly=True)
    assert fork.post("### graphnetz gates ✗\n\n1 failed\n") == 0      # a warning, not an error
    assert fork.state["comments"] == [] and "from a fork" in fork.state["warnings"][0]

    (posting,) = [s for s in YAML_LOAD(COMMENT_WORKFLOW)["jobs"]["comment"]["steps"]
                  if s.get("uses", "").startswith("actions/github-script@")]
    base = FakeGitHub(tmp_path / "base", posting["with"]["script"], heads={"7": "abc"})
    (tmp_path / "base" / "graphnetz-artifact").mkdir()
    (tmp_path / "base" / "graphnetz-artifact" / "graphnetz-pr.txt").write_text("7\n")
    (tmp_path / "base" / "graphnetz-artifact" / "graphnetz-verdicts.json").write_text(
        json.dumps(verdicts_json(build_failed=True, headline="1 of 1 gate row(s) failed")))
    assert base.post("### graphnetz gates ✗\n\n1 failed\n",
                     "graphnetz-artifact/graphnetz-comment.md") == 0
    (comment,) = base.state["comments"]
    assert comment["body"].startswith(f"{MARKER}\n### graphnetz gates ✗\n\n**1 of 1 gate row(s) "
                                      "failed**")
    # an artifact naming another PR (whose head the run did not build) posts nothing
    other = FakeGitHub(tmp_path / "other", posting["with"]["script"], heads={"8": "zzz"})
    (tmp_path / "other" / "graphnetz-artifact").mkdir()
    (tmp_path / "other" / "graphnetz-artifact" / "graphnetz-pr.txt").write_text("8")
    assert other.post("x", "graphnetz-artifact/graphnetz-comment.md") != 0
    assert other.state["comments"] == []


def verdicts_json(**changes: object) -> dict:
    """A JSON verdict file (docs/verdicts-json.md) as a run writes it: one NOT WORSE row."""
    return {"schema": "pytest-graphnetz/verdicts", "version": 1, "exit_status": 0,
            "build_failed": False, "headline": "1 gate row(s), none failed the build",
            "counts": {"rows": 1}, "unused_cells": [], "triples": {},
            "rows": [{"test": "tests/test_m.py::test_gcn", "cell": "karate/GCN",
                      "verdict": "NOT WORSE", "failed": False, "failed_build": False,
                      "note": "", "display": {"delta": "+0.001 [-0.004, 0.006] (90%)",
                                             "n": "10"}}], **changes}


def fork_poster(root: Path) -> FakeGitHub:
    """graphnetz-comment.yml's step, with the artifact of a fork's run for PR 7 in place."""
    (posting,) = [s for s in YAML_LOAD(COMMENT_WORKFLOW)["jobs"]["comment"]["steps"]
                  if s.get("uses", "").startswith("actions/github-script@")]
    github = FakeGitHub(root, posting["with"]["script"], heads={"7": "abc"})
    (root / "graphnetz-artifact").mkdir()
    (root / "graphnetz-artifact" / "graphnetz-pr.txt").write_text("7\n")
    return github


def test_a_forks_markdown_is_never_posted_the_comment_is_rendered_from_its_json(
        tmp_path: Path) -> None:
    """The fork's run wrote its artifact with the fork's code: its Markdown could say anything
    (a green headline over failing rows, a link, a mention); the trusted script renders the
    comment from the JSON numbers and names, escaping each itself."""
    github = fork_poster(tmp_path)
    hostile = verdicts_json(headline="all good <img src=x onerror=alert(1)> @org/team",
                            unused_cells=[{"baseline": "baselines/m/test_a.json",
                                           "cell": "karate/GAT"}])
    hostile["rows"][0]["note"] = "[approve](https://evil.example) | `x`\n### green"
    (tmp_path / "graphnetz-artifact" / "graphnetz-verdicts.json").write_text(json.dumps(hostile))
    forged = "### graphnetz gates ✓\n\n[Everything passed](https://evil.example)\n"
    assert github.post(forged, "graphnetz-artifact/graphnetz-comment.md") == 0
    (comment,) = github.state["comments"]
    body = comment["body"]
    assert "Everything passed" not in body                      # the fork's Markdown: not posted
    from markdown_it import MarkdownIt

    html = MarkdownIt("commonmark").enable("table").render(body)
    assert "<img" not in html and "&lt;img src=x" in html      # HTML shown, not run
    assert html.count("<a ") == 1 and "[approve]" in html       # no link but the run's own
    assert html.count("<h3>") == 1 and "\\u000a### green" in html  # no heading from a cell
    assert "@org" not in body and "@\u200borg" in body          # no mention
    assert "karate/GAT" in body                                 # the unused cells named
    assert body.endswith(LINK) and len(body) <= 65_536
    # a verdict file that is not one, or none: said so, never a green page
    (tmp_path / "graphnetz-artifact" / "graphnetz-verdicts.json").write_text('{"rows": 1}')
    assert github.post(forged, "graphnetz-artifact/graphnetz-comment.md") == 0
    assert "is not a pytest-graphnetz verdict file" in github.state["comments"][0]["body"]


def test_a_forks_comment_folds_what_the_python_comment_folds(tmp_path: Path) -> None:
    """The trusted script counts IDENTICAL rows and widths within their max, as
    `GateSummary.comment` does, and lists a width that failed."""
    github = fork_poster(tmp_path)
    data = verdicts_json()
    width = {"test": "tests/test_m.py::test_w", "cell": "karate/GCN", "verdict": "OK",
             "failed": False, "failed_build": False, "note": "",
             "stats": {"kind": "ci_width", "n": 10}, "display": {"delta": "width 0.03"}}
    data["rows"] += [width, {**width, "cell": "karate/GAT", "verdict": "TOO WIDE",
                             "failed": True, "failed_build": True},
                     {**data["rows"][0], "cell": "karate/SGC", "verdict": "IDENTICAL"}]
    (tmp_path / "graphnetz-artifact" / "graphnetz-verdicts.json").write_text(json.dumps(data))
    assert github.post("", "graphnetz-artifact/graphnetz-comment.md") == 0
    body = github.state["comments"][0]["body"]
    assert ("Not listed: 1 IDENTICAL row(s) (every paired seed scored exactly the baseline's "
            "value) and 1 width row(s) within their max width.") in body
    rows = [line for line in body.splitlines() if line.startswith("| test")]
    assert len(rows) == 2 and "TOO WIDE" in rows[0] and "NOT WORSE" in rows[1]


ALL_SKIPPED = """
import pytest

@pytest.mark.graphnetz
def test_gate(graphnetz_baseline):
    pytest.skip("no GPU on this runner")
"""


def test_an_all_skipped_run_posts_a_green_comment_not_no_verdicts(
        pytester: pytest.Pytester, tmp_path: Path) -> None:
    pytester.makepyfile(ALL_SKIPPED)
    result = pytester.runpytest("-p", "no:cacheprovider", "--graphnetz-comment=c.md",
                                "--graphnetz-json=v.json")
    result.assert_outcomes(skipped=1)
    same_repo = FakeGitHub(tmp_path / "same", gate_script())
    assert same_repo.post((pytester.path / "c.md").read_text()) == 0
    fork = fork_poster(tmp_path / "fork")
    (tmp_path / "fork" / "graphnetz-artifact" / "graphnetz-verdicts.json").write_text(
        (pytester.path / "v.json").read_text())
    assert fork.post(None, "graphnetz-artifact/graphnetz-comment.md") == 0
    for github in (same_repo, fork):
        (comment,) = github.state["comments"]
        assert comment["body"].startswith(f"{MARKER}\n### graphnetz gates ✓")
        assert "No gate ran to a verdict (every gated test was skipped or deselected)" in \
            comment["body"]
        assert "No verdicts were written" not in comment["body"]


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


def test_pubmed_unchanged():
    models = {"GCN": GCN, "GAT": GAT, "MLP": GCN - 0.2}
    assert_not_worse(report("pubmed", models), report("pubmed", models))


def test_citeseer_not_worse():
    assert_not_worse(report("citeseer", {"GCN": GCN - 0.09}, split="v2"),
                     report("citeseer", {"GCN": GCN - 0.1}))
"""
README_START = "<!-- pr-comment-example: generated by tests/cover/test_workflow.py -->"
README_END = "<!-- /pr-comment-example -->"


def test_readme_shows_a_real_pr_comment(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(test_models=PR_SESSION)
    result = pytester.runpytest("-p", "no:cacheprovider", "--graphnetz-comment=comment.md")
    result.assert_outcomes(passed=1, failed=3)
    # the one machine-specific part: where pytester ran
    comment = (pytester.path / "comment.md").read_text().replace(f"{pytester.path}/", "")
    assert len([line for line in comment.splitlines() if line.startswith("| test_")]) == 4
    assert "3 IDENTICAL row(s)" in comment
    # a fence longer than the body's own (its ```text blocks)
    block = f"{README_START}\n{code_block(pr_comment(comment), 'markdown')}\n{README_END}"
    readme = README.read_text()
    pattern = re.compile(re.escape(README_START) + ".*?" + re.escape(README_END), re.S)
    assert pattern.search(readme), "docs/ci.md lost its generated pull-request comment block"
    if os.environ.get("GRAPHNETZ_REGENERATE_README"):
        README.write_text(pattern.sub(lambda _: block, readme))
        return
    assert pattern.search(readme).group(0) == block, (
        "docs/ci.md's example pull-request comment is out of date: regenerate it with "
        "`GRAPHNETZ_REGENERATE_README=1 pytest tests/cover/test_workflow.py`")


def test_the_readme_installs_torch_as_the_workflow_does() -> None:
    """Same pin, same CPU index: the README's "fresh machine" lines must not pull the CUDA
    build that PyPI's default Linux wheel depends on."""
    install = step(load_workflow(), "Install")["run"]
    (workflow_torch,) = re.findall(r"pip install (torch==\S+ --index-url \S+)", install)
    # a command wrapped with a backslash is one command
    readme = re.sub(r"\\\n\s*", "", (ROOT / "README.md").read_text())
    torch_lines = re.findall(r"pip install (torch\S*(?: --index-url \S+)?)", readme)
    # the first screen's two commands, and the install into the user's own project
    assert len(torch_lines) == 3, torch_lines
    assert set(torch_lines) == {workflow_torch}


# -- costs seconds each (marked slow): fresh interpreters, subprocess sessions or killed
# processes (the slow tier, tests/README.md) ------------------------------------------------


def check_jsonschema(path: Path) -> subprocess.CompletedProcess:
    exe = shutil.which("check-jsonschema", path=str(Path(sys.executable).parent)) or \
        shutil.which("check-jsonschema")
    if exe is None:
        pytest.skip("check-jsonschema is not installed (the `test` extra)")
    # The schema ships inside check-jsonschema's wheel: this works offline.
    return subprocess.run([exe, "--builtin-schema", "vendor.github-workflows", str(path)],
                          capture_output=True, text=True)


@pytest.mark.slow
def test_workflow_is_valid_for_github() -> None:
    result = check_jsonschema(WORKFLOW)
    assert result.returncode == 0, result.stdout + result.stderr


@pytest.mark.slow
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


@pytest.mark.slow
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


@pytest.mark.slow
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
