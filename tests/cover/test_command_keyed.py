"""A command triple as the cache keeps it (runner/command/keyed.py): its key is the formula the
runner has always used, written out here field by field, so a cache filled before the command
triple moved into the command package is still hit; a run under a seed map (a calibration's
salted run) gives the script the mapped seed and the data seed, and never shares an entry with
the plain run.
"""

from __future__ import annotations

import hashlib
import json
import sys
from pathlib import Path

import pytest

from pytest_graphnetz import run_benchmark
from pytest_graphnetz.gates.calibration.salting import salted_seed, salted_seed_map
from pytest_graphnetz.runner.cache import make_key
from pytest_graphnetz.runner.command import Command, DataFiles
from pytest_graphnetz.runner.command.keyed import CommandTriple
from pytest_graphnetz.runner.tasks.base import Task

# The metric says which seeds the script received: the seed ({seed}) in `test`, the data seed
# (GRAPHNETZ_DATA_SEED, absent in a plain run) in `val`.
SCRIPT = '''
import json, os, sys
seed = int(sys.argv[1])
data = int(os.environ.get("GRAPHNETZ_DATA_SEED", "999"))
json.dump({"metric": "accuracy", "test": [seed % 1000 / 1000], "val": [data / 1000]},
          open(sys.argv[2], "w"))
'''
CONTEXT = {"device": {"kind": "cpu"}, "versions": {"python": "3.11"}}


def _project(where: Path) -> tuple[Task, Command]:
    (where / "train.py").write_text(SCRIPT)
    (where / "data.txt").write_text("data\n")
    task = Task("t", DataFiles([where / "data.txt"]), kind="command")
    return task, Command([sys.executable, "train.py", "{seed}", "{output}"], cwd=where)


def test_a_command_triples_key_is_the_runners_formula(tmp_path: Path) -> None:
    task, command = _project(tmp_path)
    plain = CommandTriple(task, "M", command, 3, "cpu", 1, "on", str(tmp_path))
    salted = CommandTriple(task, "M", command, 3, "cpu", 1, "on", str(tmp_path),
                           seed_map=salted_seed_map(2))
    env = {"GRAPHNETZ_SEED": "3", "GRAPHNETZ_THREADS": "1", "GRAPHNETZ_METRIC": "accuracy",
           "GRAPHNETZ_DETERMINISTIC": "on", "OMP_NUM_THREADS": "1", "MKL_NUM_THREADS": "1",
           "OPENBLAS_NUM_THREADS": "1", "PYTHONHASHSEED": "0", "CUDA_VISIBLE_DEVICES": "",
           "GRAPHNETZ_DEVICE": "cpu"}
    for triple, identity in ((plain, command.identity()),
                             (salted, {**command.identity(), "salt": 2})):
        fields = {"task": {"data": "d" * 64, "config": task.config()}, "command": identity,
                  "environment": env, "seed": 3, "threads": 1, **CONTEXT}
        assert triple.key_fields("d" * 64, CONTEXT) == fields
        assert make_key(triple.key_fields("d" * 64, CONTEXT)) == make_key(fields)
        assert triple.fingerprint() == hashlib.sha256(
            json.dumps(identity, sort_keys=True).encode()).hexdigest()
    assert plain.fingerprint() == command.fingerprint() != salted.fingerprint()
    assert plain.run_arguments()["script_seed"] is None
    assert salted.run_arguments()["script_seed"] == salted_seed(3, 2) != 3


def test_a_seed_map_reaches_the_script_and_keeps_its_own_cache_entries(tmp_path: Path) -> None:
    task, command = _project(tmp_path)
    seeds, cache = [0, 1, 2], tmp_path / "cache"

    def run(**kw):
        statuses: list[str] = []
        report = run_benchmark({"t": task}, {"M": command}, seeds=seeds, device="cpu",
                               cache_dir=cache, progress=lambda *a: statuses.append(a[3]), **kw)
        return report, statuses

    salted, trained = run(seed_map=salted_seed_map(1))
    assert trained == ["trained"] * 3
    assert list(salted.values("t", "M")) == [salted_seed(s, 1) % 1000 / 1000 for s in seeds]
    assert [salted.histories[("t", "M", s)].val[-1] for s in seeds] == [0.0, 0.001, 0.002]
    plain, statuses = run()
    assert statuses == ["trained"] * 3   # the salted entries are not the plain run's
    assert list(plain.values("t", "M")) == [0.0, 0.001, 0.002]
    assert [plain.histories[("t", "M", s)].val[-1] for s in seeds] == [0.999] * 3
    again, statuses = run(seed_map=salted_seed_map(1))
    assert statuses == ["cached"] * 3
    assert list(again.values("t", "M")) == list(salted.values("t", "M"))
    assert again.fingerprints["model"]["M"] != plain.fingerprints["model"]["M"]


def test_a_refresh_with_replicates_salts_a_command_by_its_seed_map(
        pytester: pytest.Pytester) -> None:
    (pytester.path / "train.py").write_text(SCRIPT)
    (pytester.path / "data.txt").write_text("data\n")
    pytester.makepyfile(test_keyed_refresh='''
import sys
from pathlib import Path

import pytest

from pytest_graphnetz import Task, assert_not_worse
from pytest_graphnetz.runner.command import Command, DataFiles

HERE = Path(__file__).parent
TASK = {"t": Task("t", DataFiles([HERE / "data.txt"]), kind="command")}
MODEL = {"M": Command([sys.executable, "train.py", "{seed}", "{output}"], cwd=HERE)}


def test_script(graphnetz_run, graphnetz_baseline):
    assert_not_worse(graphnetz_run(TASK, MODEL), graphnetz_baseline())
''')
    result = pytester.runpytest("-o", "graphnetz_seeds=3", "--graphnetz-no-cache",
                                "--graphnetz-update-baselines",
                                "--graphnetz-baseline-replicates=2")
    result.assert_outcomes(passed=1)
    path = pytester.path / "baselines" / "test_keyed_refresh" / "test_script.json"
    cell = json.loads(path.read_text())["models"]["M"]["tasks"]["t"]
    assert cell["values"]["final"] == [0.0, 0.001, 0.002]
    assert cell["replicates"]["runs"]["final"] == [[salted_seed(s, 1) % 1000 / 1000]
                                                   for s in range(3)]
