"""Reading a report: LaTeX (booktabs) and Markdown tables, and the findings view.

Every view here takes its intervals from one place,
:func:`~pytest_graphnetz.report.views.cell_stats`, which follows the report's ``ci_method`` and
``confidence_level``; the forest plot (``plots.py``) uses the same function, so a figure and a
table made from one report cannot disagree about the interval.

"Best in task" (bold) and "distinguishable" come from the paired test on per-seed differences,
Holm-corrected over every model pair of a task (:func:`pair_findings`); overlapping intervals
are shown only as a caution, because overlap is not a test (see docs: uncertainty).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import TYPE_CHECKING

from pytest_graphnetz.base.text import fmt_fixed, fmt_level, fmt_num, fmt_p, markdown_table
from pytest_graphnetz.report.views import cell_stats, method_phrase, pairwise, seeds_phrase

if TYPE_CHECKING:
    from pytest_graphnetz.report.record import ReportRecord
    from pytest_graphnetz.stats import PairwiseRow, SummaryRow

PAIRED_TEST = "paired-t"


# -- the numbers every view shares -------------------------------------------------------------

def _source_sentence(cells: dict, source: str) -> str:
    """What a view's intervals cover when they are not the seed intervals ('' for seeds)."""
    if source == "seeds":
        return ""
    from pytest_graphnetz.stats.heldout import COVERS

    methods = sorted({c.method.split(", n=")[0] for c in cells.values()})
    return f" Intervals ({', '.join(methods)}) cover {COVERS[source]}."


@dataclass(frozen=True)
class PairFinding:
    """One row of ``report.pairwise("paired-t")`` read at level ``alpha``.

    ``row.mean_diff`` and its CI are oriented so that positive means ``row.model_a`` is better
    (whatever the metric's direction); ``row.p_holm`` is Holm-adjusted over the task's pairs.
    ``better`` names the model the test favours, or is None when the pair is not
    distinguishable at ``alpha``. ``row.intervals_overlap`` is a caution, never the verdict.
    """

    row: PairwiseRow
    better: str | None

    @property
    def distinguishable(self) -> bool:
        return self.better is not None


def pair_findings(
    report: ReportRecord, *, alpha: float = 0.05
) -> dict[str, list[PairFinding]]:
    """Per task, every model pair (report order) under the paired t-test, Holm within the task.

    Seeds are paired by seed value; a seed that diverged in either model is left out of that
    pair. A pair with fewer than 2 seeds finite in both models (say, a model that diverged on
    every seed) is not compared: its row holds NaN and it is never distinguishable.
    """
    out: dict[str, list[PairFinding]] = {t: [] for t in report.tasks}
    for row in pairwise(report, PAIRED_TEST, untestable="skip"):
        out[row.task].append(PairFinding(row, row.better_at(alpha)))
    return out


def best_models(report: ReportRecord, *, alpha: float = 0.05) -> dict[str, str | None]:
    """Per task, the model the paired tests put ahead of every other model, else None.

    The candidate is the best mean in the metric's direction; it counts as best only if each
    of its pairs is distinguishable (Holm-corrected within the task) in its favour.
    """
    return _best(report, cell_stats(report), pair_findings(report, alpha=alpha))


def _best(report: ReportRecord, cells: dict[tuple[str, str], SummaryRow],
          found: dict[str, list[PairFinding]]) -> dict[str, str | None]:
    """:func:`best_models` from already computed cell stats and pair findings."""
    best: dict[str, str | None] = {}
    for task in report.tasks:
        sign = 1.0 if report.metric(task).higher_is_better else -1.0
        means = {m: cells[(task, m)].mean for m in report.models}
        if len(report.models) < 2 or not all(math.isfinite(v) for v in means.values()):
            best[task] = None
            continue
        top = max(report.models, key=lambda m: sign * means[m])
        mine = [f for f in found[task] if top in (f.row.model_a, f.row.model_b)]
        best[task] = top if all(f.better == top for f in mine) else None
    return best


# -- LaTeX ----------------------------------------------------------------------------------------

_LATEX_SPECIAL = {
    "\\": r"\textbackslash{}", "&": r"\&", "%": r"\%", "$": r"\$", "#": r"\#", "_": r"\_",
    "{": r"\{", "}": r"\}", "~": r"\textasciitilde{}", "^": r"\textasciicircum{}",
}


def latex_escape(text: str) -> str:
    """``text`` with LaTeX's special characters escaped (for labels in a table)."""
    return "".join(_LATEX_SPECIAL.get(ch, ch) for ch in str(text))


@dataclass(frozen=True)
class _Spelling:
    """How one table format writes a summary cell (:func:`_cell`): ``empty`` without and with
    diverged seeds; the formats of its body, of bold, and of the body with its dagger."""

    empty: tuple[str, str]
    one_seed: str
    pm: str
    interval: str
    bold: str
    whole: str
    dagger: str


_LATEX = _Spelling(
    empty=("---", "---$^\\dagger$"), one_seed="{mean}\\ (n={n})", pm="{mean} \\pm {half}",
    # Bootstrap: the interval's own endpoints, printed as offsets from the mean.
    interval="{mean}^{{{up}}}_{{{down}}}", bold="\\mathbf{{{}}}", whole="${}{}$",
    # `{}` gives the dagger its own base: `x^{+u}_{-d}^{\dagger}` is a double superscript.
    dagger="{}^{\\dagger}")
_MARKDOWN = _Spelling(empty=("—", "— †"), one_seed="{mean} (n={n})", pm="{mean} ± {half}",
                      interval="{mean} [{low}, {high}]", bold="**{}**", whole="{}{}", dagger=" †")


def _cell(c: SummaryRow, method: str, digits: int, bold: bool, spell: _Spelling) -> str:
    """One summary cell of a table in ``spell``'s format: the mean ± the half-width of a t
    interval, else the interval's endpoints; ``n`` alone for one finite seed."""
    if not math.isfinite(c.mean):
        return spell.empty[bool(c.n_diverged)]  # diverged on every seed
    mean = fmt_fixed(c.mean, digits)
    if not (math.isfinite(c.ci_low) and math.isfinite(c.ci_high)):
        body = spell.one_seed.format(mean=mean, n=c.n_seeds)  # one finite seed: no interval
    elif method == "t" and c.method == "t":  # a clipped t interval is no longer symmetric
        body = spell.pm.format(mean=mean, half=fmt_fixed((c.ci_high - c.ci_low) / 2, digits))
    else:
        body = spell.interval.format(
            mean=mean, low=fmt_fixed(c.ci_low, digits), high=fmt_fixed(c.ci_high, digits),
            up=fmt_fixed(c.ci_high - c.mean, digits, signed=True),
            down=fmt_fixed(c.ci_low - c.mean, digits, signed=True))
    if bold:
        body = spell.bold.format(body)
    return spell.whole.format(body, spell.dagger if c.n_diverged else "")


def _arrow(report: ReportRecord, task: str, *, latex: bool) -> str:
    up = report.metric(task).higher_is_better
    if latex:
        return r"$\uparrow$" if up else r"$\downarrow$"
    return "↑" if up else "↓"


def to_latex(
    report: ReportRecord, *, digits: int = 3, alpha: float = 0.05,
    label: str = "tab:graphnetz", source: str = "seeds",
) -> str:
    """A booktabs table: models as rows, tasks as columns, one ``mean ± half-width`` per cell.

    ``report.ci_method == "t"`` prints ``mean \\pm half``; ``"bootstrap"`` prints
    ``mean^{+up}_{-down}`` from the interval's own endpoints. A cell is bold only when the
    paired t-test (Holm-corrected over the task's model pairs, level ``alpha``) puts that model
    ahead of every other one. The caption states seeds, interval method and level, and epoch
    selection. Needs ``\\usepackage{booktabs}``. Returns the LaTeX source as a string.
    ``source``: the intervals shown (``"seeds"``, ``"test_set"``, ``"total"``: see
    :meth:`BenchmarkReport.summary`); the caption says what they cover.
    """
    cells = cell_stats(report, source)
    best = _best(report, cells, pair_findings(report, alpha=alpha))
    header = " & ".join(["Model"] + [
        f"{latex_escape(t)} ({latex_escape(report.metric_name(t))} {_arrow(report, t, latex=True)})"
        for t in report.tasks
    ])
    body = [
        " & ".join([latex_escape(m)] + [
            _cell(cells[(t, m)], report.ci_method, digits, best[t] == m, _LATEX)
            for t in report.tasks
        ]) + r" \\"
        for m in report.models
    ]
    caption = _caption(report, cells, alpha, latex=True) + latex_escape(
        _source_sentence(cells, source))
    lines = [
        r"\begin{table}[t]",
        r"\centering",
        rf"\caption{{{caption}}}",
        rf"\label{{{label}}}",
        r"\begin{tabular}{l" + "c" * len(report.tasks) + "}",
        r"\toprule",
        header + r" \\",
        r"\midrule",
        *body,
        r"\bottomrule",
        r"\end{tabular}",
        r"\end{table}",
    ]
    return "\n".join(lines) + "\n"


def _caption(report: ReportRecord, cells: dict, alpha: float, *, latex: bool) -> str:
    """The sentence under a table: seeds, interval method and level, epoch selection, bold rule."""
    if report.ci_method == "t":
        shape = r"Mean $\pm$ half-width" if latex else "Mean ± half-width"
    else:
        shape = "Mean with offsets to the endpoints" if latex else "Mean [low, high]"
    selection = latex_escape(report.epoch_selection) if latex else report.epoch_selection
    bold = "Bold" if latex else "**Bold**"
    a = rf"$\alpha = {fmt_num(alpha)}$" if latex else f"alpha = {fmt_num(alpha)}"
    method = latex_escape(method_phrase(report)) if latex else method_phrase(report)
    text = (f"{shape} of the {method} over {seeds_phrase(report)} "
            f"(epoch selection: {selection}). {bold}: best in its task by a paired t-test "
            f"against every other model (Holm-corrected, {a}).")
    n_div = sum(1 for c in cells.values() if c.n_diverged)
    if n_div:
        dagger = r"$^\dagger$" if latex else "†"
        text += (f" {dagger} {n_div} cell(s) with diverged seeds (NaN), counted and left out of "
                 "the mean and interval.")
    n_clipped = sum(1 for c in cells.values() if "clipped" in c.method)
    if n_clipped:
        text += (f" {n_clipped} interval(s) reaching beyond [0, 1] clipped to it (shown by their "
                 "endpoints).")
    return text


# -- Markdown -------------------------------------------------------------------------------------



def to_markdown(report: ReportRecord, *, digits: int = 3, alpha: float = 0.05,
                source: str = "seeds") -> str:
    """A GitHub-flavoured Markdown table (models × tasks) followed by the findings view.

    Cells read ``mean ± half`` for ``ci_method="t"`` and ``mean [low, high]`` for the bootstrap;
    bold marks what :func:`best_models` finds. ``source``: the intervals shown (``"seeds"``,
    ``"test_set"``, ``"total"``; see :meth:`BenchmarkReport.summary`), named in the caption.
    Returns the Markdown as a string.
    """
    cells = cell_stats(report, source)
    found = pair_findings(report, alpha=alpha)  # once: the bold cells and the findings view
    best = _best(report, cells, found)
    headers = ["model"] + [
        f"{t} ({report.metric_name(t)} {_arrow(report, t, latex=False)})" for t in report.tasks
    ]
    rows = [
        [m] + [_cell(cells[(t, m)], report.ci_method, digits, best[t] == m, _MARKDOWN)
               for t in report.tasks]
        for m in report.models
    ]
    caption = _caption(report, cells, alpha, latex=False) + _source_sentence(cells, source)
    return (markdown_table(headers, rows) + f"\n\n_{caption}_\n\n"
            + _findings(report, found, digits=digits, alpha=alpha))


def _findings(report: ReportRecord, found: dict[str, list[PairFinding]], *, digits: int,
              alpha: float) -> str:
    """Markdown (the Findings section of :func:`to_markdown`): per task, every model pair,
    whether the paired test tells them apart, from the pair findings ``found``.

    Columns: pair, Δ (positive: a better, so b − a for lower-is-better metrics) with its CI,
    Holm-adjusted p, n paired seeds, finding. A pair whose two cell intervals overlap is
    written in *italics*: a caution for readers who judge by overlap, never the verdict (the
    paired test decides).
    """
    level = fmt_level(report.confidence_level)
    rows = []
    for task in report.tasks:
        for f in found[task]:
            r = f.row
            pair = f"{r.model_a} vs {r.model_b}"
            if r.intervals_overlap:
                pair = f"*{pair}*"
            if not math.isfinite(r.p_value):
                rows.append([task, pair, "—", "—", str(r.n),
                             f"not compared: {r.n} seed(s) finite in both"])
                continue
            mean, low, high = (fmt_fixed(x, digits, signed=True)
                               for x in (r.mean_diff, r.ci_low, r.ci_high))
            diff = f"{mean} [{low}, {high}]"
            verdict = f"{f.better} better" if f.better else "not distinguishable"
            rows.append([task, pair, diff, fmt_p(r.p_holm), str(r.n), verdict])
    if not rows:
        return "### Findings\n\nFewer than two models: nothing to compare.\n"
    headers = ["task", "pair (a vs b)", f"Δ (+: a better) [{level} CI]", "p (Holm)", "n",
               "finding"]
    note = (f"_Paired t-test on per-seed differences, Holm-corrected over the pairs of each "
            f"task, alpha = {fmt_num(alpha)}. *Italics*: the two models' {method_phrase(report)}s "
            "overlap — a caution only; overlapping intervals can still differ under the "
            "paired test._")
    return "### Findings\n\n" + markdown_table(headers, rows) + "\n\n" + note + "\n"
