"""LaTeX and Markdown views and the findings: golden output for a small fixed report, whose
numbers were computed independently with scipy (t.interval, ttest_rel, Holm by hand)."""

from __future__ import annotations

import numpy as np
import pytest

from pytest_graphnetz import BenchmarkReport
from pytest_graphnetz.report.export import best_models, cell_stats, latex_escape, pair_findings

# X[task, model, seed]: cora (accuracy, higher better), zinc (MAE, lower better).
CORA = {"GCN": [0.80, 0.82, 0.78, 0.84, 0.81], "SAGE": [0.78, 0.79, 0.76, 0.815, 0.78],
        "GAT": [0.81, 0.80, 0.80, 0.83, 0.80]}
ZINC = {"GCN": [0.50, 0.56, 0.45, 0.60, 0.52], "SAGE": [0.51, 0.50, 0.58, 0.47, 0.55],
        "GAT": [0.40, 0.44, 0.43, 0.41, 0.42]}
MODELS = ["GCN", "SAGE", "GAT"]


@pytest.fixture
def report() -> BenchmarkReport:
    X = np.array([[CORA[m] for m in MODELS], [ZINC[m] for m in MODELS]])
    return BenchmarkReport.from_arrays(X, tasks=["cora", "zinc"], models=MODELS,
                                       seeds=range(5), metric={"cora": "accuracy", "zinc": "mae"})


# scipy: cora GCN 0.8100 ± 0.0278, SAGE 0.7850 ± 0.0248, GAT 0.8080 ± 0.0162;
#        zinc GCN 0.5260 ± 0.0711, SAGE 0.5220 ± 0.0537, GAT 0.4200 ± 0.0196.
# Paired t, Holm within task — cora: GCN-SAGE p 0.0011, GCN-GAT 0.80, SAGE-GAT 0.026 (no bold:
# GCN is not told apart from GAT); zinc: GCN-SAGE 0.93, GCN-GAT 0.035, SAGE-GAT 0.015 (GAT bold).
GOLDEN_LATEX = r"""\begin{table}[t]
\centering
\caption{Mean $\pm$ half-width of the 95\% Student-t interval over 5 seeds (epoch selection: final). Bold: best in its task by a paired t-test against every other model (Holm-corrected, $\alpha = 0.05$).}
\label{tab:graphnetz}
\begin{tabular}{lcc}
\toprule
Model & cora (accuracy $\uparrow$) & zinc (mae $\downarrow$) \\
\midrule
GCN & $0.810 \pm 0.028$ & $0.526 \pm 0.071$ \\
SAGE & $0.785 \pm 0.025$ & $0.522 \pm 0.054$ \\
GAT & $0.808 \pm 0.016$ & $\mathbf{0.420 \pm 0.020}$ \\
\bottomrule
\end{tabular}
\end{table}
"""  # noqa: E501 (the caption is one line of LaTeX)

GOLDEN_MARKDOWN = """\
| model | cora (accuracy ↑) | zinc (mae ↓) |
|---|---|---|
| GCN | 0.810 ± 0.028 | 0.526 ± 0.071 |
| SAGE | 0.785 ± 0.025 | 0.522 ± 0.054 |
| GAT | 0.808 ± 0.016 | **0.420 ± 0.020** |

_Mean ± half-width of the 95% Student-t interval over 5 seeds (epoch selection: final). \
**Bold**: best in its task by a paired t-test against every other model (Holm-corrected, \
alpha = 0.05)._

### Findings

| task | pair (a vs b) | Δ (+: a better) [95% CI] | p (Holm) | n | finding |
|---|---|---|---|---|---|
| cora | *GCN vs SAGE* | +0.025 [+0.019, +0.031] | 0.0011 | 5 | GCN better |
| cora | *GCN vs GAT* | +0.002 [-0.018, +0.022] | 0.799 | 5 | not distinguishable |
| cora | *SAGE vs GAT* | -0.023 [-0.038, -0.008] | 0.026 | 5 | GAT better |
| zinc | *GCN vs SAGE* | -0.004 [-0.126, +0.118] | 0.932 | 5 | not distinguishable |
| zinc | GCN vs GAT | -0.106 [-0.181, -0.031] | 0.035 | 5 | GAT better |
| zinc | SAGE vs GAT | -0.102 [-0.153, -0.051] | 0.015 | 5 | GAT better |

_Paired t-test on per-seed differences, Holm-corrected over the pairs of each task, \
alpha = 0.05. *Italics*: the two models' 95% Student-t intervals overlap — a caution only; \
overlapping intervals can still differ under the paired test._
"""


def test_latex_golden(report):
    assert report.to_latex() == GOLDEN_LATEX


def test_markdown_golden(report):
    assert report.to_markdown() == GOLDEN_MARKDOWN


def test_cells_match_scipy_t_interval(report):
    from scipy import stats

    cells = cell_stats(report)
    for task, data in (("cora", CORA), ("zinc", ZINC)):
        for model, x in data.items():
            low, high = stats.t.interval(0.95, len(x) - 1, loc=np.mean(x), scale=stats.sem(x))
            c = cells[(task, model)]
            assert (c.ci_low, c.ci_high) == pytest.approx((low, high), abs=1e-12)


def test_pair_findings_match_scipy_and_holm(report):
    from scipy import stats

    found = pair_findings(report)
    raw = [stats.ttest_rel(ZINC[a], ZINC[b]).pvalue
           for a, b in (("GCN", "SAGE"), ("GCN", "GAT"), ("SAGE", "GAT"))]
    # Holm by hand: sorted p times (3, 2, 1), running max.
    order = np.argsort(raw)
    expected, run = np.empty(3), 0.0
    for rank, idx in enumerate(order):
        run = max(run, (3 - rank) * raw[idx])
        expected[idx] = min(1.0, run)
    assert [f.row.p_holm for f in found["zinc"]] == pytest.approx(expected.tolist(), rel=1e-9)
    assert [f.better for f in found["zinc"]] == [None, "GAT", "GAT"]
    # MAE is lower-is-better: Δ is oriented b − a so that positive means `a` is better
    ref = stats.ttest_rel(ZINC["GAT"], ZINC["GCN"])
    row = found["zinc"][1].row
    assert (row.model_a, row.model_b) == ("GCN", "GAT")
    assert row.mean_diff == pytest.approx(np.mean(np.subtract(ZINC["GAT"], ZINC["GCN"])))
    ci = ref.confidence_interval(0.95)
    assert (row.ci_low, row.ci_high) == pytest.approx((ci.low, ci.high), abs=1e-12)
    # overlap is a caution recorded next to the verdict, not a verdict: overlapping, yet told apart
    gcn_sage = found["cora"][0]
    assert gcn_sage.row.intervals_overlap and gcn_sage.distinguishable


def test_bold_needs_paired_evidence_against_every_model(report):
    # cora: GCN has the best mean but GAT is not distinguishable from it -> no bold
    assert best_models(report) == {"cora": None, "zinc": "GAT"}
    # at a looser alpha GCN-GAT (p 0.80) is still not distinguishable; zinc's GAT still bold
    assert best_models(report, alpha=0.5) == {"cora": None, "zinc": "GAT"}
    # a stricter alpha removes zinc's bold (GCN-GAT Holm p = 0.035)
    assert best_models(report, alpha=0.01) == {"cora": None, "zinc": None}
    assert r"\mathbf" not in report.to_latex(alpha=0.01)


def test_bootstrap_golden_near_a_ceiling():
    # Nine 1.00 and one 0.90: the bootstrap mean's percentiles are [0.97, 1.00] for any rng
    # (P(k >= 3 of 10 resampled draws hit 0.90) = 0.07, P(k >= 4) = 0.013), never 1.005.
    x = [1.0] * 9 + [0.9]
    rep = BenchmarkReport.from_arrays([[x]], tasks=["karate"], models=["GCN"], seeds=range(10),
                                      metric="accuracy", ci_method="bootstrap")
    latex = rep.to_latex()
    assert r"GCN & $0.990^{+0.010}_{-0.020}$ \\" in latex
    assert "95\\% percentile bootstrap interval over 10 seeds" in latex
    assert "| GCN | 0.990 [0.970, 1.000] |" in rep.to_markdown()
    rep.ci_method = "t"
    # t gives 0.990 ± 0.023 = [0.967, 1.013]: past what an accuracy can be, so clipped to 1
    assert r"GCN & $0.990^{+0.010}_{-0.023}$ \\" in rep.to_latex()
    assert "clipped to it" in rep.to_latex()


def test_diverged_seed_is_marked_not_dropped():
    X = [[[0.8, 0.82, np.nan, 0.79], [0.7, 0.71, 0.69, 0.72]]]
    rep = BenchmarkReport.from_arrays(X, tasks=["cora"], models=["GCN", "MLP"], seeds=range(4),
                                      metric="accuracy")
    latex = rep.to_latex()
    # GCN over seeds 0, 1, 3: mean 0.803, t_{0.975,2} · s/√3 = 4.303 · 0.00882 = 0.038
    assert latex.splitlines()[8] == r"GCN & $\mathbf{0.803 \pm 0.038}{}^{\dagger}$ \\"
    # a bootstrap of 3 values is refused (far too narrow below 10 seeds) ...
    rep.ci_method = "bootstrap"
    with pytest.raises(ValueError, match="bootstrap interval over 3 seeds refused"):
        rep.to_latex()
    rep.ci_method = "t"
    # ... over 10 finished seeds (the ceiling example) it is [0.97, 1.00]; the dagger gets its
    # own base (no double superscript after the offsets)
    wide = BenchmarkReport.from_arrays([[[1.0] * 9 + [0.9, np.nan], [0.7] * 11]],
                                       tasks=["cora"], models=["GCN", "MLP"], seeds=range(11),
                                       metric="accuracy", ci_method="bootstrap")
    assert r"$\mathbf{0.990^{+0.010}_{-0.020}}{}^{\dagger}$" in wide.to_latex()
    assert "1 cell(s) with diverged seeds" in latex
    md = rep.to_markdown()
    assert " † |" in md
    # the pair is tested on the 3 seeds both models finished
    assert "| cora | GCN vs MLP |" in md and "| 3 | GCN better |" in md


def test_latex_escapes_labels():
    assert latex_escape("GCN_2 & 50% #1") == r"GCN\_2 \& 50\% \#1"
    rep = BenchmarkReport.from_arrays([[[0.5, 0.6]]], tasks=["ogbn_arxiv"], models=["G&S"],
                                      seeds=[0, 1], metric="accuracy", epoch_selection="final")
    latex = rep.to_latex()
    assert r"ogbn\_arxiv (accuracy $\uparrow$)" in latex and r"G\&S & " in latex


def test_single_model_has_nothing_to_compare():
    rep = BenchmarkReport.from_arrays([[[0.5, 0.6, 0.55]]], tasks=["cora"], models=["GCN"],
                                      seeds=range(3), metric="accuracy")
    assert "Fewer than two models: nothing to compare." in rep.to_markdown()
    assert r"\mathbf" not in rep.to_latex()


def test_a_model_diverged_on_every_seed_is_marked_and_not_compared():
    from scipy import stats

    gat = [np.nan] * 5
    X = [[CORA["GCN"], CORA["SAGE"], gat]]
    rep = BenchmarkReport.from_arrays(X, tasks=["cora"], models=MODELS, seeds=range(5),
                                      metric="accuracy")
    with pytest.raises(ValueError, match="GCN vs GAT: only 0 usable"):
        rep.pairwise()  # the table for analysis still refuses; the views below do not
    md = rep.to_markdown()
    assert "| GAT | — † |" in md
    assert "| cora | GCN vs GAT | — | — | 0 | not compared: 0 seed(s) finite in both |" in md
    # GCN vs SAGE is the task's only testable pair: Holm over one pair is its raw p
    p = stats.ttest_rel(CORA["GCN"], CORA["SAGE"]).pvalue
    assert p < 0.01 and f"| {p:.2g} | 5 | GCN better |" in md  # two significant digits
    assert r"GAT & ---$^\dagger$ \\" in rep.to_latex()
    # no bold: GCN cannot be shown ahead of a model it was never compared with
    assert best_models(rep) == {"cora": None}
