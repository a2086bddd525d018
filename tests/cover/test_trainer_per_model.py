"""A trainer per model inside one task: GCN trained with Adam and GAT with SGD in one gate call,
so their cells are one Holm family (a real pytest session, pytester).
"""

from __future__ import annotations

import re

import pytest

# Pytester's in-process runs drop modules first imported inside them; torch cannot be imported
# twice in one process, so everything heavy is imported here, once.
torch = pytest.importorskip("torch")
import pytest_graphnetz.gates  # noqa: E402,F401
import pytest_graphnetz.runner  # noqa: E402,F401
from pytest_graphnetz import Task  # noqa: E402
from tests.helpers.sessions import TRAINER_GATES as GATES  # noqa: E402
from tests.helpers.sessions import TRAINER_PROJECT as PROJECT  # noqa: E402
from tests.helpers.sessions import gates_table  # noqa: E402


def test_two_trainers_one_gate_call_one_holm_family(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(project=PROJECT.format(gat_epochs=30, shift=0), test_model=GATES)
    pytester.makeini("[pytest]\ngraphnetz_seeds = 4\n")  # the project's first look
    seeds = "--graphnetz-seeds=4"
    pytester.runpytest(seeds, "--graphnetz-update-baselines").assert_outcomes(passed=1)
    same = pytester.runpytest(seeds, "-p", "no:cacheprovider")
    same.assert_outcomes(passed=1)
    table = gates_table(same.stdout.str())
    assert re.search(r"tiny/GCN\s.*IDENTICAL", table) and re.search(r"tiny/GAT\s.*IDENTICAL",
                                                                     table), table
    # GAT's loop trains one epoch instead of 30 (a real bug), GCN's draws shift (innocent).
    pytester.makepyfile(project=PROJECT.format(gat_epochs=1, shift=1))
    changed = pytester.runpytest(seeds, "-p", "no:cacheprovider")
    changed.assert_outcomes(failed=1)
    out = changed.stdout.str()
    table = gates_table(out)
    assert re.search(r"tiny/GAT\s.*REGRESSED", table), table
    assert not re.search(r"tiny/GCN\s.*(REGRESSED|IDENTICAL)", table), table
    assert "Holm across the 2 tested cells" in out


def test_a_trainer_mapping_must_name_every_model(tmp_path) -> None:
    from pytest_graphnetz import run_benchmark
    from tests.helpers.tiny import gcn, tiny_csbm

    task = Task("tiny", tiny_csbm, trainer={"GAT": None})
    with pytest.raises(ValueError, match=r"Task 'tiny': `trainer` maps models \['GAT'\] to their "
                                         r"trainers but not model 'GCN'; add `'GCN': train_fn`"):
        run_benchmark({"tiny": task}, {"GCN": gcn}, seeds=[0], device="cpu", root=str(tmp_path))
    with pytest.raises(TypeError, match=r"`trainer\['GCN'\]` must be a callable"):
        Task("tiny", tiny_csbm, trainer={"GCN": "train_gcn"})


def test_none_in_a_trainer_mapping_is_the_builtin_trainer(tmp_path) -> None:
    from pytest_graphnetz import run_benchmark
    from tests.helpers.tiny import TINY_EPOCHS, gcn, sage, tiny_csbm

    def scripted(model, data, *, task, device):
        return {"test": [0.25]}

    task = Task("tiny", tiny_csbm, epochs=TINY_EPOCHS, trainer={"GCN": None, "SAGE": scripted})
    report = run_benchmark({"tiny": task}, {"GCN": gcn, "SAGE": sage}, seeds=[0], device="cpu",
                           root=str(tmp_path))
    assert report.histories[("tiny", "GCN", 0)].n_epochs == TINY_EPOCHS
    assert report.histories[("tiny", "SAGE", 0)].test == (0.25,)
