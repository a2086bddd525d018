"""What the plugin and the runner cost a user who did not ask for them: imports and warnings.

Every check runs real pytest sessions in fresh interpreters (``runpytest_subprocess``): in this
process torch and PyG are long imported, so an in-process run could not see what a user's
first import does.
"""

from __future__ import annotations

import pytest

# Other installed plugins off: what is measured is ours alone.
ISOLATED = ("-p", "no:cacheprovider", "-p", "no:hypothesispytest", "-p", "no:xdist")


def test_a_session_without_graphnetz_tests_never_imports_numpy_torch_or_scipy(
        pytester: pytest.Pytester) -> None:
    """Not only loading the plugin: nothing in the whole session (hooks, summary) pulls them."""
    pytester.makeconftest("""
        import json, sys

        def pytest_unconfigure(config):
            heavy = sorted({m.split(".")[0] for m in sys.modules}
                           & {"numpy", "torch", "torch_geometric", "scipy"})
            with open("heavy.json", "w") as fh:
                json.dump({"heavy": heavy,
                           "plugin": "pytest_graphnetz.plugin" in sys.modules}, fh)
    """)
    pytester.makepyfile("def test_plain():\n    assert 1 + 1 == 2\n")
    result = pytester.runpytest_subprocess(*ISOLATED)
    result.assert_outcomes(passed=1)
    import json

    seen = json.loads((pytester.path / "heavy.json").read_text())
    assert seen == {"heavy": [], "plugin": True}


def test_pyg_import_warnings_neither_fail_w_error_nor_reach_the_summary(
        pytester: pytest.Pytester) -> None:
    """PyG 2.8 calls ``torch.jit.script`` at import, which this torch deprecates; the runner
    imports PyG with those warnings silenced, so ``-W error::DeprecationWarning`` still passes,
    and a user's module importing PyG does not show the warning in the session either.
    """
    pytester.makepyfile(test_bench="""
        import sys

        from pytest_graphnetz import Task, run_benchmark
        from pytest_graphnetz.runner.tasks.synthetic import CSBM, load_csbm

        def tiny(root, *, seed):
            return load_csbm(CSBM("tiny", 3, 10, 0.3, 0.05, 4, 1.0), root, seed)

        def gcn(in_channels, out_channels):
            from torch_geometric.nn import GCN
            return GCN(in_channels, 8, 2, out_channels)

        def test_bench(tmp_path):
            assert "torch_geometric" not in sys.modules  # the runner makes the first import
            report = run_benchmark({"t": Task("t", tiny, epochs=2)}, {"GCN": gcn}, seeds=[0, 1],
                                   device="cpu", root=tmp_path, cache_dir=tmp_path / "cache")
            assert report.values("t", "GCN").shape == (2,)
    """)
    result = pytester.runpytest_subprocess(*ISOLATED, "-W", "error::DeprecationWarning")
    result.assert_outcomes(passed=1)
    assert "warnings summary" not in result.stdout.str()
    # A user's session, default warning filters: the warning is not shown.
    pytester.makepyfile(test_bench="""
        import torch_geometric.nn  # what a user's model module does


        def test_nothing():
            pass
    """)
    user = pytester.runpytest_subprocess()
    user.assert_outcomes(passed=1)
    assert "torch.jit.script" not in user.stdout.str()
    # Teeth for both (one session, as each costs a torch import): in the same interpreter setup,
    # importing PyG directly does fail under -W error, naming the warning both runs removed.
    control = pytester.runpytest_subprocess(*ISOLATED, "-W", "error::DeprecationWarning")
    if control.ret == 0:
        pytest.skip("this PyG/torch pair raises no import-time DeprecationWarning: "
                    "nothing to silence (the runs above still passed)")
    control.assert_outcomes(errors=1)
    assert "torch.jit.script` is deprecated" in control.stdout.str()
