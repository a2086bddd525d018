"""Command tasks: a training script gated as it is, run per (model, seed) in a subprocess.

The script is ``tests/scripts/gcn.py``, the project's own script in the shape of PyG's
examples/gcn.py (argparse at import, module-level globals) plus three added lines; it runs on
a small generated graph copied beside it. Every run of it is a real subprocess, so the seeds
are few (6) and the scenarios share one baseline.
"""

from __future__ import annotations

import re
import shutil
import sys
from pathlib import Path

import numpy as np
import pytest

pytest.importorskip("torch")
# Pytester's in-process runs drop modules first imported inside them, and torch's cannot be
# imported twice in one process: PyG is imported here, once, before any of them.
pytest.importorskip("torch_geometric")

from pytest_graphnetz import assert_not_worse, run_benchmark  # noqa: E402
from pytest_graphnetz.gates.verdicts.values import GateRefusal  # noqa: E402
from pytest_graphnetz.runner import TripleError  # noqa: E402
from pytest_graphnetz.runner.command import (  # noqa: E402
    Command,
    CommandError,
    DataFiles,
    NondeterministicScriptError,
)
from pytest_graphnetz.runner.command.output import read_output  # noqa: E402
from pytest_graphnetz.runner.tasks.base import Task  # noqa: E402
from tests.helpers.command_projects import (
    SCRIPT,  # noqa: E402
    SCRIPT_GATES,  # noqa: E402
    write_graph,  # noqa: E402
)
from tests.helpers.command_projects import SEEDED_TRAIN as TRAIN  # noqa: E402

# The module-scoped baseline (one subprocess per seed) is built once under `-n`, which hands
# out whole files (tests/conftest.py).

SEEDS = [0, 1, 2, 3, 4, 5]


def _project(where: Path) -> tuple[dict, dict]:
    where.mkdir(parents=True, exist_ok=True)
    shutil.copy(SCRIPT, where / "gcn.py")
    write_graph(where / "graph.npz", seed=0)
    task = Task("graph", DataFiles([where / "graph.npz"]), kind="command")
    return {"graph": task}, {"GCN": Command([sys.executable, "gcn.py"], cwd=where)}


def _run(tasks: dict, models: dict, cache: Path | None = None, **kw):
    statuses: list[str] = []
    report = run_benchmark(tasks, models, seeds=SEEDS, device="cpu", cache_dir=cache,
                           progress=lambda *a: statuses.append(a[3]), **kw)
    return report, statuses


@pytest.fixture(scope="module")
def baseline(tmp_path_factory):
    where = tmp_path_factory.mktemp("project")
    tasks, models = _project(where)
    cache = where / "cache"
    report, statuses = _run(tasks, models, cache)
    assert statuses == ["trained"] * len(SEEDS)
    return where, report, cache


def test_the_script_records_what_it_trained(baseline) -> None:
    _, report, _ = baseline
    hist = report.histories[("graph", "GCN", 0)]
    assert hist.n_epochs == 40 and hist.val is not None and len(hist.train_loss) == 40
    assert np.all(report.values("graph", "GCN") > 0.6)  # learned (chance: 1/3)
    assert len({report.values("graph", "GCN")[i] for i in range(6)}) > 1  # seeds differ
    protocol = report.protocol["tasks"]["graph"]
    assert protocol["trainer"] == "command" and "the script's" in protocol["reseeding"]
    assert report.protocol["models"]["GCN"]["graph"]["repr"].endswith("gcn.py")


def test_a_rerun_without_the_cache_is_identical(baseline, tmp_path) -> None:
    where, report, _ = baseline
    tasks, models = _project(tmp_path / "copy")  # another directory, the same code and data
    # The determinism check (one more run of seed 0) passes the seeded script.
    models = {"GCN": Command([sys.executable, "gcn.py"], cwd=tmp_path / "copy",
                             check_determinism=True)}
    rerun, statuses = _run(tasks, models)
    assert statuses == ["trained"] * len(SEEDS)
    assert {v.verdict for v in assert_not_worse(rerun, report, first_look=6)} == {"IDENTICAL"}


def test_a_comment_edit_is_a_cache_hit(baseline) -> None:
    where, report, cache = baseline
    tasks, models = _project(where / "edited")
    script = where / "edited" / "gcn.py"
    script.write_text("# a new comment\n" + script.read_text().replace(
        "import argparse", "import argparse  # parses at import, as PyG's examples do"))
    again, statuses = _run(tasks, models, cache)
    assert statuses == ["cached"] * len(SEEDS)
    assert again.fingerprints["model"] == report.fingerprints["model"]


def test_an_argparse_default_edit_retrains_and_lr_x03_regresses(baseline) -> None:
    where, report, cache = baseline
    tasks, models = _project(where / "slow")
    script = where / "slow" / "gcn.py"
    script.write_text(script.read_text().replace("type=float, default=0.01",
                                                 "type=float, default=0.003"))
    slow, statuses = _run(tasks, models, cache)
    assert statuses == ["trained"] * len(SEEDS)
    with pytest.raises(AssertionError, match="REGRESSED"):
        assert_not_worse(slow, report, first_look=6)


def test_a_data_change_is_refused(baseline) -> None:
    where, report, cache = baseline
    tasks, models = _project(where / "data")
    write_graph(where / "data" / "graph.npz", seed=1)
    changed, statuses = _run(tasks, models, cache)
    assert statuses == ["trained"] * len(SEEDS)  # the data's fingerprint keys the cache
    with pytest.raises(GateRefusal, match="its data or split differs from the baseline"):
        assert_not_worse(changed, report, first_look=6)


# -- small pure-Python scripts: the format, placeholders, errors --------------------------------

UNSEEDED = """
import json, random, sys
out = {"metric": "accuracy", "test": [random.random()]}
json.dump(out, open(sys.argv[1], "w"))
"""

BY_HAND = """
import json, os, sys
seed, device, out = int(sys.argv[1]), sys.argv[2], sys.argv[3]
assert os.environ["GRAPHNETZ_SEED"] == str(seed) and os.environ["OMP_NUM_THREADS"] == "1"
assert os.environ["CUDA_VISIBLE_DEVICES"] == "" and device == "cpu"
loss = [0.9, 0.5 - seed / 100, 0.7]
json.dump({"metric": "accuracy", "test": [0.5, 0.6 + seed / 100, 0.55], "val": loss,
           "val_metric": "loss", "restored_epoch": 1}, open(out, "w"))
"""

FAILING = """
import sys
print("loading the data...", file=sys.stderr)
print("RuntimeError: CUDA out of memory", file=sys.stderr)
sys.exit(3)
"""


def _script(tmp_path: Path, name: str, code: str, *args: str, **kw) -> dict:
    (tmp_path / name).write_text(code)
    return {"m": Command([sys.executable, name, *args], cwd=tmp_path, **kw)}


def _tasks(tmp_path: Path) -> dict:
    (tmp_path / "data.txt").write_text("a graph")
    return {"t": Task("t", DataFiles([tmp_path / "data.txt"]), kind="command")}


def test_placeholders_environment_and_the_file_format_by_hand(tmp_path) -> None:
    models = _script(tmp_path, "by_hand.py", BY_HAND, "{seed}", "{device}", "{output}")
    report = run_benchmark(_tasks(tmp_path), models, seeds=[0, 1], device="cpu")
    assert report.values("t", "m").tolist() == [0.6, 0.61]           # the restored epoch
    assert report.values("t", "m", epoch_selection="best_val").tolist() == [0.6, 0.61]


def test_an_unseeded_script_fails_the_determinism_check_naming_script_and_seed(tmp_path) -> None:
    models = _script(tmp_path, "unseeded.py", UNSEEDED, "{output}", check_determinism=True)
    with pytest.raises(NondeterministicScriptError,
                       match=r"script .*unseeded\.py is not deterministic: two runs of seed 3 "
                             r"\(task 't' × model 'm'\) differ \(`test` at epoch 0"):
        run_benchmark(_tasks(tmp_path), models, seeds=[3, 4], device="cpu")
    # Without the check the same script runs: the check is what catches it.
    models = _script(tmp_path, "unseeded.py", UNSEEDED, "{output}")
    run_benchmark(_tasks(tmp_path), models, seeds=[3, 4], device="cpu")


def test_a_failing_script_names_command_exit_code_and_stderr(tmp_path) -> None:
    models = _script(tmp_path, "failing.py", FAILING, "--lr", "0.01")
    with pytest.raises(TripleError) as info:
        run_benchmark(_tasks(tmp_path), models, seeds=[0], device="cpu")
    message = str(info.value)
    assert "failing.py --lr 0.01` exited with code 3" in message
    assert "its stderr ends:\nloading the data...\nRuntimeError: CUDA out of memory" in message
    assert isinstance(info.value.__cause__, CommandError)


def test_a_script_writing_no_metrics_file_says_how(tmp_path) -> None:
    models = _script(tmp_path, "silent.py", "print('done')\n")
    with pytest.raises(TripleError, match=r"exited with code 0 but wrote no metrics file .*"
                                          r"graphnetz\.record"):
        run_benchmark(_tasks(tmp_path), models, seeds=[0], device="cpu")


@pytest.mark.parametrize("text, match", [
    ('{"metric": "mae", "test": [0.5]}', r"`metric` is 'mae' but the task reports 'accuracy'"),
    ('{"metric": "accuracy"}', "no `test` series"),
    ('{"metric": "accuracy", "test": ["0.5"]}', "`test` must be a list of numbers"),
    ('{"metric": "accuracy", "test": [0.5], "val": [0.1, 0.2]}', "`val` has 2 epochs"),
    ('[0.5]', "expected a JSON object"),
    ('{"format": "other", "metric": "accuracy", "test": [0.5]}', "`format`/`version`"),
    # fault injection: neither may escape as a RecursionError or an OverflowError
    ('{"metric": "accuracy", "test": ' + "[" * 100_000 + "]" * 100_000 + "}",
     "nested too deeply"),
    ('{"metric": "accuracy", "test": [1' + "0" * 400 + "]}", "`test` holds a number too large"),
])
def test_invalid_metrics_files_are_named(text: str, match: str) -> None:
    with pytest.raises(ValueError, match=match):
        read_output(text, metric="accuracy")


def test_nan_and_null_read_as_a_diverged_epoch() -> None:
    hist = read_output('{"metric": "accuracy", "test": [0.5, NaN, null]}', metric="accuracy")
    assert hist.diverged and np.isnan(hist.test[1:]).all()


def test_commands_and_factories_are_not_mixed(tmp_path) -> None:
    from tests.helpers.tiny import gcn, tiny_csbm

    models = _script(tmp_path, "by_hand.py", BY_HAND)
    with pytest.raises(TypeError, match=r"model 'm' on task 'tiny': a command task runs models "
                                        r"that are `Command`s"):
        run_benchmark({"tiny": Task("tiny", tiny_csbm)}, models, seeds=[0], device="cpu")
    with pytest.raises(TypeError, match="got function on a 'command' task"):
        run_benchmark(_tasks(tmp_path), {"GCN": gcn}, seeds=[0], device="cpu")
    with pytest.raises(FileNotFoundError, match="missing.py' does not exist"):
        Command([sys.executable, "missing.py"], cwd=tmp_path)


def test_worker_processes_run_command_triples_alike(tmp_path) -> None:
    from pytest_graphnetz.report.codec import dumps

    models = _script(tmp_path, "by_hand.py", BY_HAND, "{seed}", "{device}", "{output}")
    alone = run_benchmark(_tasks(tmp_path), models, seeds=[0, 1, 2], device="cpu")
    pooled = run_benchmark(_tasks(tmp_path), models, seeds=[0, 1, 2], device="cpu", workers=2)
    assert dumps(pooled.to_dict()) == dumps(alone.to_dict())


SCRIPT_PROJECT = '''
import sys
from pathlib import Path

from pytest_graphnetz import Task
from pytest_graphnetz.runner.command import Command, DataFiles

HERE = Path(__file__).parent
TASKS = {"t": Task("t", DataFiles([HERE / "data.txt"]), kind="command")}
MODELS = {"A": Command([sys.executable, "train.py", "{output}"], cwd=HERE),
          "B": Command([sys.executable, "train.py", "{output}", "--shift", "0.01"], cwd=HERE)}
'''


def test_a_command_task_through_the_plugin(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(project=SCRIPT_PROJECT, test_scripts=SCRIPT_GATES, train=TRAIN)
    (pytester.path / "data.txt").write_text("a graph")
    pytester.runpytest("-o", "graphnetz_seeds=3", "--graphnetz-update-baselines",
                       "-p", "no:cacheprovider").assert_outcomes(passed=1)
    baseline = (pytester.path / "baselines" / "test_scripts" / "test_scripts.json").read_text()
    assert "train.py '{output}' --shift 0.01" in baseline     # the model as a reviewer reads it
    rerun = pytester.runpytest("-o", "graphnetz_seeds=3", "--graphnetz-no-cache",
                               "-p", "no:cacheprovider")
    rerun.assert_outcomes(passed=1)
    assert re.search(r"t/A\s.*IDENTICAL", rerun.stdout.str())
    assert re.search(r"t/B\s.*IDENTICAL", rerun.stdout.str())
