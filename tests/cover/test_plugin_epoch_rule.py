"""``graphnetz_run(..., epoch_selection="best_val")``: the report's epoch rule, set where the
run is asked for, on every look of adaptive seeds too. Real pytest sessions (pytester)."""

from __future__ import annotations

import pytest

# In-process pytester runs drop modules first imported inside them; torch cannot be imported
# twice in one process, so everything heavy is imported here, once.
pytest.importorskip("torch")
pytest.importorskip("torch_geometric.nn")
import pytest_graphnetz.gates  # noqa: E402,F401
import pytest_graphnetz.runner  # noqa: E402,F401
import pytest_graphnetz.runner.training.node  # noqa: E402,F401

RULE = '''
from scratch_tiny import gcn, tiny_task


def test_rule(graphnetz_run):
    report = graphnetz_run({"tiny": tiny_task(epochs=4)}, {"GCN": gcn},
                           epoch_selection="best_val")
    assert report.epoch_selection == "best_val"
    schedule = getattr(report, "schedule", None)
    if schedule is not None:   # adaptive seeds: the later looks read the same rule
        assert schedule.complete(report).epoch_selection == "best_val"
        assert [look.epoch_selection for look in schedule.extensions] == ["best_val"]
'''


@pytest.mark.parametrize("seeds", ["--graphnetz-seeds=3", "--graphnetz-seeds=3..6"])
def test_graphnetz_run_takes_the_epoch_rule(project: pytest.Pytester, seeds: str) -> None:
    project.makepyfile(test_p=RULE)
    project.runpytest(seeds).assert_outcomes(passed=1)
