"""CI that decides: `graphnetz next-seeds` reads the JSON verdict file and prints the
next look's seed count while a row is INCONCLUSIVE, capped at the team's budget; the example
workflow's loop step reruns the gate command with it; and one loop, driven through real pytest
sessions (pytester) on a tiny trained task, takes its next look training only the new seeds.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

torch = pytest.importorskip("torch")
pytest.importorskip("torch_geometric.nn")
import pytest_graphnetz.gates  # noqa: E402,F401
import pytest_graphnetz.runner  # noqa: E402,F401
from pytest_graphnetz.cli.main import main  # noqa: E402
from pytest_graphnetz.plugin.summary import JSON_SCHEMA, JSON_VERSION  # noqa: E402
from tests.helpers.documents import load_workflow, step  # noqa: E402
from tests.helpers.sessions import TRAINER_GATES as GATES  # noqa: E402
from tests.helpers.sessions import TRAINER_PROJECT as PROJECT  # noqa: E402


def _file(tmp_path: Path, rows: list[dict], **top: object) -> str:
    path = tmp_path / "verdicts.json"
    path.write_text(json.dumps({"schema": JSON_SCHEMA, "version": JSON_VERSION, "rows": rows,
                                **top}))
    return str(path)


def _row(verdict: str, n: int = 10, next_seeds: int | None = None, held: int = 80) -> dict:
    return {"verdict": verdict, "stats": {"n": n, "next_seeds": next_seeds,
                                          "baseline_seeds": held}}


def _next(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, str, str]:
    capsys.readouterr()   # what ran before (a pytester session's output)
    code = main(["next-seeds", *args])
    out = capsys.readouterr()
    return code, out.out, out.err


def test_next_seeds_prints_the_largest_open_look_capped_by_the_budget(tmp_path, capsys) -> None:
    path = _file(tmp_path, [_row("NOT WORSE"), _row("INCONCLUSIVE", next_seeds=20),
                            _row("INCONCLUSIVE", next_seeds=40), _row("REGRESSED"),
                            {"verdict": "REFUSED", "stats": None}])
    assert _next(capsys, path, "--budget", "80")[:2] == (0, "40\n")
    assert _next(capsys, path, "--budget", "30")[:2] == (0, "30\n")   # capped
    code, out, err = _next(capsys, path, "--budget", "10")          # the budget is spent
    assert (code, out) == (1, "") and "at the budget of 10 seeds" in err
    # --current: the seeds the run used, when no row used them all (a diverged seed)
    assert _next(capsys, path, "--budget", "40", "--current", "40")[:2] == (1, "")


def test_next_seeds_prints_nothing_once_every_row_is_decided(tmp_path, capsys) -> None:
    path = _file(tmp_path, [_row("NOT WORSE"), _row("BETTER"), _row("IDENTICAL")])
    code, out, err = _next(capsys, path, "--budget", "80")
    assert (code, out) == (1, "") and "every row is decided" in err


def test_open_rows_that_cannot_take_a_look_are_said_not_looped_on(tmp_path, capsys) -> None:
    path = _file(tmp_path, [_row("INCONCLUSIVE", next_seeds=40, held=10),
                            _row("INCONCLUSIVE", next_seeds=None)])
    code, out, err = _next(capsys, path, "--budget", "80")
    assert (code, out) == (1, "")
    assert "1 whose baseline lacks the seeds: refresh it with --graphnetz-seeds=80" in err
    assert "1 that no affordable seed count resolves" in err
    # a baseline of 20 seeds: the look goes as far as it pairs
    path = _file(tmp_path, [_row("INCONCLUSIVE", next_seeds=40, held=20)])
    assert _next(capsys, path, "--budget", "80")[:2] == (0, "20\n")


@pytest.mark.parametrize(("text", "message"), [
    ("{", "not valid JSON"),
    (json.dumps({"schema": "other"}), "not a graphnetz verdict file"),
    (json.dumps({"schema": JSON_SCHEMA, "version": 99, "rows": []}), "version 99"),
    (json.dumps({"schema": JSON_SCHEMA, "version": JSON_VERSION, "rows": 3}), "`rows`"),
])
def test_a_file_that_is_not_a_verdict_file_is_a_usage_error(tmp_path, capsys, text,
                                                            message) -> None:
    path = tmp_path / "v.json"
    path.write_text(text)
    code, out, err = _next(capsys, str(path), "--budget", "80")
    assert code == 2 and out == "" and message in err and str(path) in err
    assert _next(capsys, str(tmp_path / "missing.json"), "--budget", "80")[0] == 2
    with pytest.raises(SystemExit) as usage:   # a budget below 2 seeds: argparse's exit
        main(["next-seeds", str(path), "--budget", "1"])
    assert usage.value.code == 2 and "at least 2 seeds" in capsys.readouterr().err


def test_the_workflow_loop_reruns_the_gate_command_with_the_next_seeds() -> None:
    workflow = load_workflow()
    gates = step(workflow, "Gates")["run"].split()
    loop = step(workflow, "Next looks")
    script = loop["run"]
    (rerun,) = [line.strip() for line in script.splitlines() if line.strip().startswith("pytest")]
    # the same command as the first look, only the seed count differs
    assert [a for a in rerun.split() if not a.startswith("--graphnetz-seeds")] == \
        [a for a in gates if not a.startswith("--graphnetz-seeds")]
    assert f"--graphnetz-seeds={loop['env']['FIRST_LOOK']}" in gates
    assert '--graphnetz-seeds="$seeds"' in rerun
    json_file = re.search(r"--graphnetz-json=(\S+)", rerun).group(1)
    assert f"graphnetz next-seeds {json_file} --budget \"$SEED_BUDGET\"" in script
    assert int(loop["env"]["SEED_BUDGET"]) >= 2 * int(loop["env"]["FIRST_LOOK"])
    # exit 1 ends the loop; any other failure of next-seeds fails the step
    assert '"$status" -eq 1 ]; then break' in script and 'exit "$status"' in script


def _look(pytester: pytest.Pytester, seeds: int) -> tuple[dict, str]:
    result = pytester.runpytest(f"--graphnetz-seeds={seeds}", "--graphnetz-device=cpu",
                                "--graphnetz-cache-dir=cache", "--graphnetz-json=verdicts.json",
                                "--graphnetz-comment=comment.md", "-p", "no:randomly")
    assert result.ret == 0, result.stdout.str()
    return json.loads((pytester.path / "verdicts.json").read_text()), result.stdout.str()


def test_a_pull_request_takes_its_next_look_in_the_same_job(pytester, capsys) -> None:
    """Baseline at the budget's 8 seeds; an innocent change (GCN's dropout draws shift) is
    INCONCLUSIVE at 4 seeds; next-seeds says 8 (capped); the second look trains only GCN's 4
    new seeds; then next-seeds prints nothing: the budget is spent."""
    pytester.makepyfile(project=PROJECT.format(gat_epochs=30, shift=0), test_model=GATES)
    pytester.makeini("[pytest]\ngraphnetz_seeds = 4\n")   # the project's first look
    pytester.runpytest("--graphnetz-seeds=8", "--graphnetz-device=cpu",
                       "--graphnetz-cache-dir=cache", "--graphnetz-update-baselines",
                       "-p", "no:randomly").assert_outcomes(passed=1)
    pytester.makepyfile(project=PROJECT.format(gat_epochs=30, shift=1))
    first, _ = _look(pytester, 4)
    verdicts = {r["cell"]: r["verdict"] for r in first["rows"]}
    assert verdicts["tiny/GCN"] == "INCONCLUSIVE", first["rows"]
    assert first["triples"] == {"trained": 8, "cached": 0, "saved": 0}
    code, out, err = _next(capsys, str(pytester.path / "verdicts.json"), "--budget", "8",
                           "--current", "4")
    assert (code, out) == (0, "8\n"), err

    second, _ = _look(pytester, int(out))
    assert second["triples"] == {"trained": 8, "cached": 8, "saved": 0}   # only the new seeds
    gcn = next(r for r in second["rows"] if r["cell"] == "tiny/GCN")
    assert gcn["stats"]["n"] == 8
    comment = (pytester.path / "comment.md").read_text()
    assert "stopped at 8 seeds" in comment
    code, out, err = _next(capsys, str(pytester.path / "verdicts.json"), "--budget", "8",
                           "--current", "8")
    assert code == 1 and out == ""
    assert "every row is decided" in err or "at the budget of 8 seeds" in err
