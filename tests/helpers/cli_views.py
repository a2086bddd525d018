"""What tests/fast/test_cli_views.py and tests/slow/test_cli_views_slow.py share."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from pytest_graphnetz import BenchmarkReport

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
