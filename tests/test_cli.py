"""The `graphnetz` command: show, compare (exit codes 0/1/2) and refresh."""

from __future__ import annotations

import sys

import numpy as np
import pytest

from pytest_graphnetz import BenchmarkReport
from pytest_graphnetz.cli import main

BASE = np.array([0.80, 0.82, 0.78, 0.81, 0.79, 0.83])


def write(path, values, models=("GCN",)) -> str:
    X = np.asarray(values, dtype=float).reshape(1, len(models), -1)
    BenchmarkReport.from_arrays(X, tasks=["karate"], models=list(models), seeds=range(X.shape[-1]),
                                metric="accuracy").to_json(path)
    return str(path)


def test_show_prints_the_summary(tmp_path, capsys) -> None:
    path = write(tmp_path / "r.json", [BASE, BASE + 0.05], models=("GCN", "GAT"))
    assert main(["show", path]) == 0
    out = capsys.readouterr().out
    assert "1 tasks × 2 models × 6 seeds" in out
    assert "GAT" in out and f"{BASE.mean() + 0.05:.4f}" in out


def test_compare_exit_codes(tmp_path, capsys) -> None:
    base = write(tmp_path / "base.json", BASE)
    same = write(tmp_path / "same.json", BASE)
    worse = write(tmp_path / "worse.json", BASE - [0.03, 0.02, 0.04, 0.03, 0.02, 0.03])
    assert main(["compare", base, same]) == 0
    assert "IDENTICAL" in capsys.readouterr().out
    assert main(["compare", base, worse, "--test", "wilcoxon"]) == 1
    out = capsys.readouterr().out
    assert "REGRESSED" in out and "test wilcoxon" in out
    # a margin wider than the drop: not a regression any more
    assert main(["compare", base, worse, "--margin", "0.1"]) == 0
    assert main(["compare", str(tmp_path / "nope.json"), same]) == 2
    assert "no baseline at" in capsys.readouterr().err
    (tmp_path / "bad.json").write_text("[]")
    assert main(["compare", str(tmp_path / "bad.json"), same]) == 2
    assert "cannot be read" in capsys.readouterr().err


def test_refresh_runs_pytest_with_update(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(test_model="""
        import numpy as np
        from pytest_graphnetz import BenchmarkReport, assert_not_worse

        def test_gcn(graphnetz_baseline):
            X = np.array([[[0.8, 0.82, 0.79]]])
            r = BenchmarkReport.from_arrays(X, tasks=["t"], models=["m"], seeds=range(3),
                                            metric="accuracy")
            assert_not_worse(r, graphnetz_baseline())
    """)
    result = pytester.run(sys.executable, "-m", "pytest_graphnetz.cli", "refresh", "-q",
                          "-k", "gcn", "-p", "no:cacheprovider")
    assert result.ret == 0
    assert (pytester.path / "baselines" / "test_model" / "test_gcn.json").is_file()
