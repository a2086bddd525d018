"""`tune` on a command task: ``build(config)`` returns the ``Command`` that trains that
configuration, every trial runs the script per search seed in a subprocess, the winner is the
configuration best on validation, and it is confirmed on the canonical seeds."""

from __future__ import annotations

import json
import sys

from pytest_graphnetz import Task
from pytest_graphnetz.gates.tuning import grid, tune
from pytest_graphnetz.runner.command import Command, DataFiles

# Validation rises with --width up to 8, then falls; the test split follows it. Per-seed noise
# is a fixed function of the seed, so the scores are known exactly.
SCRIPT = '''
import json, os, sys

width = int(sys.argv[1])
seed = int(os.environ["GRAPHNETZ_SEED"])
score = 0.6 + 0.01 * min(width, 16 - width) + (seed % 5) / 1000
json.dump({"metric": "accuracy", "test": [score - 0.05, score - 0.02],
           "val": [score - 0.04, score]}, open(os.environ["GRAPHNETZ_OUTPUT"], "w"))
'''


def test_tune_searches_and_confirms_a_command_task(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "train.py").write_text(SCRIPT)
    tasks = {"toy": Task("toy", DataFiles(), kind="command")}

    def build(config):
        return Command([sys.executable, "train.py", str(config["width"])])

    tuned = tune(tasks, {"MLP": build}, grid(width=[2, 8, 12]), search_seeds=2,
                 seeds=[0, 1, 2],
                 device="cpu", cache_dir=str(tmp_path / "cache"))
    record = tuned.record
    assert [t.config for t in record.trials] == [{"width": 2}, {"width": 8}, {"width": 12}]
    assert record.winner == 1                         # width 8: best on validation
    assert record.search_seeds == (2**31, 2**31 + 1)  # the reserved search seeds
    assert [len(r.seeds) for r in tuned.searches] == [2, 2, 2]
    assert record.confirmation_seeds == (0, 1, 2)     # confirmed on the canonical seeds
    assert list(tuned.report.values("toy", "MLP")) == \
        [0.6 + 0.08 + s / 1000 - 0.02 for s in (0, 1, 2)]
    assert json.loads(json.dumps(tuned.report.protocol["tuning"]))["winner"] == 1
