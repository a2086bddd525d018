"""``BenchmarkReport.summary`` and ``.pairwise`` on reports built with ``from_arrays``."""

from __future__ import annotations

import itertools

import numpy as np
import pytest
from scipy import stats

from pytest_graphnetz import stats as gs
from pytest_graphnetz.report import BenchmarkReport, EpochSelectionError
from pytest_graphnetz.stats.decisions import holm
from pytest_graphnetz.stats.intervals import bootstrap_interval
from pytest_graphnetz.stats.paired import paired_test

TASKS, MODELS, SEEDS = ["cora", "zinc"], ["GCN", "SAGE", "GAT"], [0, 1, 2, 3, 4, 5]


def make_report(X=None, **settings) -> BenchmarkReport:
    if X is None:
        X = np.random.default_rng(0).normal(0.8, 0.02, size=(2, 3, 6))
    return BenchmarkReport.from_arrays(X, tasks=TASKS, models=MODELS, seeds=SEEDS,
                                       metric={"cora": "accuracy", "zinc": "mae"}, **settings)


def test_summary_rows_follow_the_report_and_match_describe():
    report = make_report()
    summary = report.summary()
    assert summary.method == "t" and len(summary) == 6
    assert [(r.task, r.model) for r in summary] == list(itertools.product(TASKS, MODELS))
    for row in summary:
        x = report.values(row.task, row.model)
        ref = stats.t.interval(0.95, x.size - 1, loc=x.mean(), scale=stats.sem(x))
        assert (row.ci_low, row.ci_high) == pytest.approx(ref)
        assert row.metric == report.metric_name(row.task)
        assert (row.n_seeds, row.n_diverged, row.mean) == (6, 0, pytest.approx(x.mean()))
        assert row.sem == pytest.approx(stats.sem(x))
    with pytest.raises(AttributeError):
        summary[0].mean = 0.0  # rows are frozen


def test_summary_method_and_level_default_to_the_report_settings():
    X = np.random.default_rng(0).normal(0.8, 0.02, size=(2, 3, 10))  # bootstrap: 10 seeds
    report = BenchmarkReport.from_arrays(X, tasks=TASKS, models=MODELS, seeds=range(10),
                                         metric={"cora": "accuracy", "zinc": "mae"},
                                         ci_method="bootstrap", confidence_level=0.9)
    summary = report.summary()
    assert summary.method == "bootstrap" and summary.confidence_level == 0.9
    x = report.values("zinc", "GAT")
    expected = bootstrap_interval(x, confidence_level=0.9)
    assert (summary[5].ci_low, summary[5].ci_high) == pytest.approx(tuple(expected), rel=1e-12)
    assert report.summary() == summary  # deterministic: the default rng is a fixed seed
    t_rows = report.summary("t", confidence_level=0.99)
    assert t_rows.method == "t" and t_rows[0].ci_high - t_rows[0].ci_low > 0
    assert "99% CI low" in str(t_rows)


def test_summary_prints_as_an_aligned_table():
    text = str(make_report().summary())
    lines = text.splitlines()
    assert lines[0].split()[:5] == ["task", "model", "metric", "seeds", "diverged"]
    assert len(lines) == 2 + 6 and set(lines[1]) <= {"-", " "}
    # Right-aligned numeric columns: every mean ends in the same text column.
    col = lines[0].index("mean") + len("mean")
    assert all(line[col - 6:col].strip().replace(".", "").isdigit() for line in lines[2:])
    md = make_report().summary().to_markdown()
    assert md.splitlines()[1].startswith("|---")


def test_summary_counts_diverged_seeds():
    X = np.random.default_rng(1).normal(0.8, 0.02, size=(2, 3, 6))
    X[0, 1, [2, 4]] = np.nan
    row = make_report(X).summary()[1]
    assert (row.model, row.n_seeds, row.n_diverged) == ("SAGE", 4, 2)
    finite = X[0, 1][np.isfinite(X[0, 1])]
    assert row.mean == pytest.approx(finite.mean())


def test_summary_epoch_selection_is_checked():
    report = make_report()
    with pytest.raises(EpochSelectionError):
        report.summary(epoch_selection="best_val")
    assert report.summary(epoch_selection="best_val", strict=False) == report.summary()


def test_pairwise_rows_and_sign_convention():
    X = np.random.default_rng(2).normal(0.8, 0.01, size=(2, 3, 6))
    X[:, 0] += 0.05  # GCN has the highest accuracy on cora and the highest (worst) MAE on zinc
    report = make_report(X)
    pw = report.pairwise()
    assert len(pw) == 2 * 3
    assert [(r.task, r.model_a, r.model_b) for r in pw][:3] == [
        ("cora", "GCN", "SAGE"), ("cora", "GCN", "GAT"), ("cora", "SAGE", "GAT")]
    cora, zinc = pw[0], pw[3]
    assert cora.mean_diff > 0  # accuracy: GCN better
    assert zinc.mean_diff < 0  # MAE: GCN worse, though its raw numbers are larger
    raw = paired_test(X[1, 0], X[1, 1])
    assert zinc.mean_diff == pytest.approx(-raw.mean_diff)
    assert (zinc.ci_low, zinc.ci_high) == pytest.approx((-raw.ci.high, -raw.ci.low))
    assert zinc.p_value == pytest.approx(stats.ttest_rel(X[1, 0], X[1, 1]).pvalue)
    assert "+: A better" in str(pw)


def test_pairwise_holm_is_within_each_task():
    report = make_report()
    pw = report.pairwise()
    for task in TASKS:
        rows = [r for r in pw if r.task == task]
        expected = holm([r.p_value for r in rows]).p_adjusted
        assert [r.p_holm for r in rows] == pytest.approx(expected)
        assert all(r.p_holm >= r.p_value for r in rows)


def test_pairwise_flags_overlap_but_pairing_decides():
    rng = np.random.default_rng(3)
    seed_effect = rng.normal(0.8, 0.03, 6)
    X = np.stack([np.stack([seed_effect + 0.01 * j + rng.normal(0, 0.001, 6)
                            for j in range(3)])] * 2)
    row = make_report(X).pairwise()[0]  # cora: GCN vs SAGE, SAGE higher by 0.01 on every seed
    assert row.intervals_overlap
    assert row.mean_diff < 0 and row.p_holm < 0.05


@pytest.mark.parametrize("test", gs.PAIRED_TESTS)
def test_pairwise_every_test_gives_finite_numbers(test):
    X = np.random.default_rng(0).normal(0.8, 0.02, size=(2, 3, 10))  # bootstrap: 10 seeds
    pw = BenchmarkReport.from_arrays(X, tasks=TASKS, models=MODELS, seeds=range(10),
                                     metric={"cora": "accuracy", "zinc": "mae"}).pairwise(test)
    assert {r.test for r in pw} == {test} and pw.test == test
    for r in pw:
        assert np.isfinite([r.mean_diff, r.ci_low, r.ci_high, r.p_value, r.p_holm,
                            r.effect_size]).all()
        assert r.ci_low <= r.mean_diff <= r.ci_high or test in ("wilcoxon", "permutation")
    assert str(pw).count("\n") >= len(pw) + 1


def test_pairwise_notes_a_test_that_cannot_reach_alpha():
    X = np.random.default_rng(4).normal(0.8, 0.02, size=(2, 3, 5))
    report = BenchmarkReport.from_arrays(X, tasks=TASKS, models=MODELS, seeds=range(5),
                                         metric="accuracy")
    pw = report.pairwise("wilcoxon")
    assert any("cannot reach" in n for n in pw.notes) and "note:" in str(pw)


def test_pairwise_excludes_diverged_seeds_and_refuses_too_few():
    X = np.random.default_rng(5).normal(0.8, 0.02, size=(2, 3, 6))
    X[0, 2, 1] = np.nan
    pw = make_report(X).pairwise()
    assert [r.n for r in pw][:3] == [6, 5, 5]
    assert any("seed(s) [1] excluded" in n for n in pw.notes)
    X[1, 1, 1:] = np.nan
    with pytest.raises(ValueError, match=r"task 'zinc', GCN vs SAGE: only 1 usable"):
        make_report(X).pairwise()


def test_pairwise_can_skip_untestable_pairs_and_holm_the_rest():
    from scipy import stats

    X = np.random.default_rng(5).normal(0.8, 0.02, size=(2, 3, 6))
    X[1, 1, 1:] = np.nan  # zinc/SAGE: one finite seed
    pw = make_report(X).pairwise(untestable="skip")
    zinc = [r for r in pw if r.task == "zinc"]
    untested = [r for r in zinc if "SAGE" in (r.model_a, r.model_b)]
    assert [r.n for r in untested] == [1, 1]
    assert all(np.isnan([r.mean_diff, r.ci_low, r.ci_high, r.p_value, r.p_holm]).all()
               for r in untested)
    assert sum("not compared, only 1 seed(s)" in n for n in pw.notes) == 2
    # the one testable zinc pair (GCN vs GAT, lower is better) is its own Holm family
    (tested,) = [r for r in zinc if r not in untested]
    ref = stats.ttest_rel(X[1, 2], X[1, 0])  # b - a: positive means GCN is better
    assert tested.p_value == pytest.approx(ref.pvalue, rel=1e-9)
    assert tested.mean_diff == pytest.approx(np.mean(X[1, 2] - X[1, 0]), rel=1e-12)
    assert tested.p_holm == tested.p_value
    with pytest.raises(ValueError, match="untestable"):
        make_report(X).pairwise(untestable="ignore")
