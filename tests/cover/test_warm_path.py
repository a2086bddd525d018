"""What a warm session computes, computed for less and the same to the bit: the module values of
a model record's key (runner/model_record.py ``module_state``) pick the same modules as
resolving every imported module's path would, through links too; the MDE's root finder
(stats/planning.py ``brentq``) is scipy.optimize.brentq's, without importing scipy.optimize.
No torch here."""

from __future__ import annotations

import importlib
import json
import math
import os
import random
import sys

import pytest

from pytest_graphnetz.runner.model_record import module_state
from pytest_graphnetz.stats.planning import brentq, mde_from_se

MODULE = "WIDTH = 8\nNAMES = ('a', 'b')\n\n\ndef factory():\n    return WIDTH\n"


@pytest.fixture
def linked(tmp_path, monkeypatch):
    """Two scratch modules: ``warm_real_mod`` imported from its own folder, ``warm_linked_mod``
    imported through a symlinked folder (its ``__file__`` is not its real path)."""
    real, link = tmp_path / "real", tmp_path / "link"
    real.mkdir()
    (real / "warm_real_mod.py").write_text(MODULE)
    (real / "warm_linked_mod.py").write_text(MODULE.replace("8", "12"))
    link.symlink_to(real, target_is_directory=True)
    monkeypatch.syspath_prepend(str(link))
    monkeypatch.syspath_prepend(str(real))
    sys.modules.pop("warm_linked_mod", None)
    first = importlib.import_module("warm_real_mod")
    # Imported from the link: drop the real folder from the path for this one import.
    monkeypatch.setattr(sys, "path", [p for p in sys.path if p != str(real)])
    second = importlib.import_module("warm_linked_mod")
    yield real, first, second
    for name in ("warm_real_mod", "warm_linked_mod"):
        sys.modules.pop(name, None)


def _by_resolving(files: set[str]) -> list[str]:
    """The reference: every imported module whose path resolves to one of ``files``."""
    wanted = {os.path.realpath(f) for f in files}
    return sorted(name for name, module in list(sys.modules.items())
                  if isinstance(getattr(module, "__file__", None), str)
                  and os.path.realpath(module.__file__) in wanted)


def test_the_modules_found_are_those_whose_path_resolves_to_a_wanted_file(linked):
    real, first, second = linked
    assert os.path.realpath(second.__file__) != second.__file__
    for files in ({str(real / "warm_real_mod.py")}, {str(real / "warm_linked_mod.py")},
                  {first.__file__, second.__file__}, {str(real / "absent.py")}):
        found = [name for name, _ in json.loads(module_state(frozenset(files)))]
        assert found == _by_resolving(files)
    both = json.loads(module_state(frozenset({first.__file__, second.__file__})))
    assert both == [["warm_linked_mod", [["NAMES", "('a', 'b')"], ["WIDTH", "12"]]],
                    ["warm_real_mod", [["NAMES", "('a', 'b')"], ["WIDTH", "8"]]]]


# -- the MDE's root finder: scipy.optimize.brentq to the bit, without importing scipy.optimize --

def _functions():
    """Smooth, kinked, flat-near-the-root and steep functions with their brackets."""
    yield lambda x: x * x - 2, 0.0, 2.0
    yield lambda x: math.cos(x) - x, 0.0, 1.0
    yield lambda x: math.exp(x) - 10, -5.0, 5.0
    yield lambda x: (x - 1.3) ** 3, 0.0, 4.0
    yield lambda x: math.atan(50 * (x - 0.2)), -1.0, 3.0
    yield lambda x: abs(x - 0.7) ** 0.5 * (1 if x > 0.7 else -1), 0.0, 1.0
    yield lambda x: 1e-3 * (x - 1e-4), 0.0, 1.0
    rng = random.Random(0)
    for _ in range(300):    # increasing: steep, skewed and curved about a random root
        r, k, c, p = rng.random(), 10 ** rng.uniform(-1, 2), rng.uniform(0, 3), rng.choice([1, 3])
        yield (lambda x, r=r, k=k, c=c, p=p: math.tanh(k * (x - r)) + c * (x - r) ** p,
               r - rng.uniform(0.01, 2), r + rng.uniform(0.01, 2))


@pytest.mark.parametrize("xtol", [1e-12, 1e-10, 1e-6, 1e-2])
def test_brentq_is_scipys_to_the_bit(xtol):
    from scipy import optimize

    failed = 0
    for f, a, b in _functions():
        for lo, hi in ((a, b), (b, a)):
            try:
                expected = optimize.brentq(f, lo, hi, xtol=xtol)
            except RuntimeError:    # no convergence in 100 iterations: the same here
                failed += 1
                with pytest.raises(RuntimeError, match="no convergence after 100"):
                    brentq(f, lo, hi, xtol=xtol)
                continue
            assert brentq(f, lo, hi, xtol=xtol) == expected
    assert failed < 10


def test_the_mde_is_the_one_scipys_brentq_solves():
    """``mde_from_se`` against the same equation solved by scipy.optimize.brentq, over levels,
    powers, degrees of freedom and sides: equal to the bit."""
    from scipy import optimize, special

    def reference(se, df, alpha, power, one_sided):
        def power_at(ncp):
            crit = special.stdtrit(df, 1 - (alpha if one_sided else alpha / 2))
            return float(1 - special.nctdtr(df, ncp, crit)) - power
        hi = 4.0
        while power_at(hi) < 0:
            hi *= 2
        return float(optimize.brentq(power_at, 0.0, hi, xtol=1e-10) * se)

    cases = 0
    for df in (1, 2, 4, 9, 19, 39, 99):
        for alpha in (0.001, 0.01, 0.0425, 0.05, 0.1):
            for power in (0.5, 0.8, 0.9, 0.99):
                for one_sided in (True, False):
                    for se in (0.003, 0.01, 1.7):
                        assert mde_from_se(se, df, alpha=alpha, power=power,
                                           one_sided=one_sided) \
                            == reference(se, df, alpha, power, one_sided)
                        cases += 1
    assert cases == 840


def test_brentq_refuses_as_scipy_does():
    with pytest.raises(ValueError, match="different signs"):
        brentq(lambda x: x * x + 1, -1.0, 1.0, xtol=1e-10)
    with pytest.raises(ValueError, match="NaN"):
        brentq(lambda x: math.nan if x > 0.5 else x - 0.7, 0.0, 1.0, xtol=1e-10)
    with pytest.raises(RuntimeError, match="no convergence after 3"):
        brentq(lambda x: math.cos(x) - x, 0.0, 1.0, xtol=1e-300, maxiter=3)


# -- a gate session imports scipy.special and nothing heavier -----------------------------------

GATED = """
import numpy as np

from pytest_graphnetz import (BenchmarkReport, assert_better, assert_ci_width, assert_equivalent,
                              assert_not_worse)

BASE = np.array([0.80, 0.82, 0.78, 0.81, 0.79, 0.83, 0.80, 0.84, 0.81, 0.82])
WOBBLE = np.array([0.004, -0.003, 0.002, -0.002, 0.003, -0.001, 0.0, -0.001, 0.002, -0.003])


def report(values):
    return BenchmarkReport.from_arrays(np.asarray(values)[None, None, :], tasks=["karate"],
                                       models=["GCN"], seeds=range(10), metric="accuracy")


def test_not_worse():
    assert_not_worse(report(BASE + WOBBLE), report(BASE))


def test_regressed():
    assert_not_worse(report(BASE - 0.003 + WOBBLE / 10), report(BASE))


def test_inconclusive():
    assert_not_worse(report(BASE + 8 * WOBBLE), report(BASE), strict=True)


def test_better_and_equivalent():
    assert_better(report(BASE + 0.03 + WOBBLE), report(BASE))
    assert_equivalent(report(BASE + WOBBLE), report(BASE), margin=0.02)


def test_too_wide():
    assert_ci_width(report(BASE), 0.001)
"""

# What the session had imported when it ended, of the libraries a gate does not need.
RECORDING = """
import json
import sys

HEAVY = ("scipy.stats", "scipy.optimize", "scipy.integrate", "scipy.linalg", "torch",
         "torch_geometric")


def pytest_sessionfinish(session):
    with open("imported.json", "w") as fh:
        json.dump({"heavy": [m for m in HEAVY if m in sys.modules],
                   "special": "scipy.special" in sys.modules}, fh)
"""


def test_a_gate_session_imports_no_scipy_stats_optimize_or_torch(pytester: pytest.Pytester):
    """Every kind of row (NOT WORSE, REGRESSED, INCONCLUSIVE with its seed advice, BETTER,
    equivalence, TOO WIDE) and every output file, in a fresh process: the t distribution
    comes from scipy.special alone."""
    pytester.makepyfile(test_warm_gate_rows=GATED)
    pytester.makeconftest(RECORDING)
    result = pytester.runpytest_subprocess("--graphnetz-json=rows.json",
                                           "--graphnetz-summary=rows.md",
                                           "--graphnetz-comment=comment.md")
    result.assert_outcomes(passed=2, failed=3)
    verdicts = json.loads((pytester.path / "rows.json").read_text())
    assert "INCONCLUSIVE" in json.dumps(verdicts) and "REGRESSED" in json.dumps(verdicts)
    assert json.loads((pytester.path / "imported.json").read_text()) == \
        {"heavy": [], "special": True}
