"""Size of the pull-request comment against the full Markdown summary.

Real gate rows, no training: ``assert_not_worse`` on ``BenchmarkReport.from_arrays`` numbers
under the plugin's recorder, for two calls: a 600-cell call (60 tasks × 10 models, 10 seeds)
in which every third cell lost two points (REGRESSED), and a 13-cell call with 10 IDENTICAL
cells. Printed per call: the full Markdown summary's characters (what the comment was before),
the concise comment's characters, and the rows it lists. GitHub refuses comments over 65,536.

Run: ``python benchmarks/pr_comment_size.py``.
"""

from __future__ import annotations

import numpy as np

from pytest_graphnetz import BenchmarkReport, assert_not_worse
from pytest_graphnetz.gates.recorder import GateRecorder, recording
from pytest_graphnetz.plugin.summary import GateSummary, verdict_stats


def rows_of(candidate: np.ndarray, baseline: np.ndarray, test: str) -> tuple[list, dict]:
    """The summary rows and failure message of one gate call on X[task, model, seed]."""
    tasks = [f"task{i:02d}" for i in range(candidate.shape[0])]
    models = [f"model{j}" for j in range(candidate.shape[1])]

    def report(x: np.ndarray) -> BenchmarkReport:
        return BenchmarkReport.from_arrays(x, tasks=tasks, models=models,
                                           seeds=range(x.shape[2]), metric="accuracy")

    rows: list[dict] = []

    def verdict(row: dict, v: object) -> dict:
        return {**row, "stats": verdict_stats(v)}

    failures = {}
    with recording(GateRecorder(alpha=0.05, strict=False, describe=verdict,
                                keep=lambda row: rows.append({"test": test, **row}))):
        try:
            assert_not_worse(report(candidate), report(baseline))
        except AssertionError as exc:
            failures[test] = f"AssertionError: {exc}"
    return rows, failures


def main() -> None:
    rng = np.random.default_rng(0)
    base = 0.8 + 0.01 * rng.standard_normal((60, 10, 10))
    cand = base + 0.002 * rng.standard_normal(base.shape)
    cand[:, ::3, :] -= 0.02
    small = base[:13, :1, :].reshape(1, 13, 10)
    small_cand = small.copy()
    small_cand[0, :3, :] += 0.003 * rng.standard_normal((3, 10)) - np.array([[0.02], [0], [0]])
    for name, (c, b) in {"600 cells, 200 REGRESSED": (cand, base),
                         "13 cells, 10 IDENTICAL": (small_cand, small)}.items():
        rows, failures = rows_of(c, b, "tests/test_models.py::test_gate")
        summary = GateSummary(rows=rows, failures=failures, exitstatus=1 if failures else 0)
        comment = summary.comment()
        listed = sum(line.startswith("| test_") for line in comment.splitlines())
        print(f"{name}: full Markdown {len(summary.markdown()):,} characters; comment "
              f"{len(comment):,} characters, {listed} of {len(rows)} rows listed")


if __name__ == "__main__":
    main()
