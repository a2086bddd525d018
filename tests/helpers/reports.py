"""Reports built from per-seed arrays, and report files on disk: a baseline that binds a
schedule, a small two-model report and its written-out views, a candidate judged as a refresh
judges it."""

from __future__ import annotations

import json
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np
import pytest

from pytest_graphnetz import BenchmarkReport

if TYPE_CHECKING:
    from pytest_graphnetz.stats.boundaries import LookSchedule

SHIFT = {"GCN": 0.0, "SAGE": 0.02, "GAT": 0.04}   # a model's numbers do not depend on its company


def report(models=("GCN",), seeds=range(4), offset=0.0) -> BenchmarkReport:
    X = [[[0.8 + offset + SHIFT[m] + 0.01 * (s % 4) + 0.001 * (s % 3) for s in seeds]
          for m in models]]
    return BenchmarkReport.from_arrays(X, tasks=["karate"], models=list(models), seeds=seeds,
                                       metric="accuracy")


def judge(candidate, reference, source):
    # as the gates' ratchet judges a refresh: alone at α (a refresh is not a rerun)
    import pytest_graphnetz.gates as gates

    return gates.compare_reports(candidate, reference, gate="not_worse", source=source,
                                 rerun_safe=False)


BASE = np.array([0.80, 0.82, 0.78, 0.81, 0.79, 0.83])
# The reports here hold 6 seeds: `compare` and `plot` run as for a project whose first look is
# 6 seeds (`graphnetz_seeds = 6`), so they are a canonical run; a call naming its own keeps it.
FIRST_LOOK = ["--first-look", "6"]


def write(path, values, models=("GCN",), alpha: float = 0.05) -> str:
    """A report of ``values`` at ``path`` that, as a baseline, binds that project's schedule
    (first look 6 seeds, ``alpha``; a report stored without one binds the default, 10)."""
    from pytest_graphnetz.stats.boundaries import LookSchedule

    X = np.asarray(values, dtype=float).reshape(1, len(models), -1)
    BenchmarkReport.from_arrays(X, tasks=["karate"], models=list(models), seeds=range(X.shape[-1]),
                                metric="accuracy").to_json(path)
    return bind(path, LookSchedule(6, alpha))


def bind(path, schedule: LookSchedule) -> str:
    """The report file at ``path``, made to bind ``schedule`` as a baseline (what a refresh
    under it writes)."""
    data = json.loads(Path(path).read_text())
    data["schedule"] = schedule.to_json()
    Path(path).write_text(json.dumps(data))
    return str(path)


# GIN: nine seeds at 1.0 and one at 0.9 (mean 0.99, a t interval reaching past the ceiling);
# GCN: mean 0.81, sd 0.0183. The expected views below are written out, not rendered by the code
# under test: the t half-width 0.013 is t(0.975, 9) * 0.0183 / sqrt(10); GIN's t interval
# [0.967, 1.013] is clipped to [0, 1] and shown by its endpoints; GIN's percentile bootstrap low
# end is 0.97 because at least 3 of 10 resampled seeds are the 0.9 one with probability 0.070
# (> 2.5%) and at least 4 with 0.013 (< 2.5%).
X = np.array([[[1.0] * 9 + [0.9], [0.80, 0.82, 0.78, 0.84, 0.81, 0.79, 0.83, 0.80, 0.82, 0.81]]])

CAPTION = {
    "t": r"Mean $\pm$ half-width of the 95\% Student-t interval over 10 seeds (epoch selection:"
         r" final). Bold: best in its task by a paired t-test against every other model"
         r" (Holm-corrected, $\alpha = 0.05$). 1 interval(s) reaching beyond [0, 1] clipped to"
         r" it (shown by their endpoints).",
    "bootstrap": r"Mean with offsets to the endpoints of the 95\% percentile bootstrap interval"
                 r" over 10 seeds (epoch selection: final). Bold: best in its task by a paired"
                 r" t-test against every other model (Holm-corrected, $\alpha = 0.05$).",
}
LATEX_ROWS = {
    "t": (r"GIN & $\mathbf{0.990^{+0.010}_{-0.023}}$ \\", r"GCN & $0.810 \pm 0.013$ \\"),
    "bootstrap": (r"GIN & $\mathbf{0.990^{+0.010}_{-0.020}}$ \\",
                  r"GCN & $0.810^{+0.011}_{-0.011}$ \\"),
}
LATEX = {method: "\n".join([
    r"\begin{table}[t]", r"\centering", r"\caption{" + CAPTION[method] + "}",
    r"\label{tab:graphnetz}", r"\begin{tabular}{lc}", r"\toprule",
    r"Model & karate (accuracy $\uparrow$) \\", r"\midrule", *LATEX_ROWS[method],
    r"\bottomrule", r"\end{tabular}", r"\end{table}", ""]) for method in ("t", "bootstrap")}


def small_report(ci_method: str = "t") -> BenchmarkReport:
    return BenchmarkReport.from_arrays(X, tasks=["karate"], models=["GIN", "GCN"],
                                       seeds=range(10), metric="accuracy", ci_method=ci_method)


@pytest.fixture
def report_file(tmp_path) -> Path:
    return small_report().to_json(tmp_path / "report.json")


def gate(candidate, baseline, **kw):
    """``compare_reports`` as a canonical run under a first look of 10 seeds."""
    from pytest_graphnetz.gates import compare_reports

    return compare_reports(candidate, baseline, canonical=True, first_look=10, **kw)
