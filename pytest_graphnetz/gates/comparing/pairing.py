"""Pairing: what makes a candidate's seeds comparable with a baseline's, checked once per
look for every cell, fixed or adaptive seeds.

Seeds pair **by seed value**; fewer than two shared seeds, a missing cell, a metric mismatch and
a task whose data or split fingerprint differs at a paired seed are refused
(:class:`~pytest_graphnetz.gates.verdicts.values.GateRefusal`, with the unpaired before/after
numbers
where they can be shown); a device or library difference is a note on the verdict, not a refusal.
"""

from __future__ import annotations

import copy
import math
from collections.abc import Sequence
from typing import Any

import numpy as np

from pytest_graphnetz.base.text import NOT_REPRODUCED, fmt_level, fmt_num, fmt_signed
from pytest_graphnetz.gates.verdicts.formatting import describe_values, refresh_hint, seed_list
from pytest_graphnetz.gates.verdicts.values import (
    CHANGED_MODEL_NOTE,
    UNCHANGED_TRAINING_NOTE,
    BaselineMissingError,
    GateRefusal,
    UnpairedCell,
)
from pytest_graphnetz.report import BenchmarkReport
from pytest_graphnetz.stats.paired import paired_test

# Protocol entries that change the last digits but not the protocol: noted, never refused.
_ENVIRONMENT_KEYS = ("device", "threads", "versions", "gpu", "hardware", "numerics")
# The kind of hardware (protocol["hardware"]) that a gate refuses to pair across unless
# accepted: another architecture, device kind or accelerator model runs other kernels. The CPU
# model, torch and CUDA versions are noted only: a dependency upgrade is a change to gate, and
# CI runners of one kind vary their CPU model from run to run.
HARDWARE_KIND = ("arch", "device", "accelerator")
ACCEPT_HARDWARE = "--graphnetz-accept-hardware"
# δ for metrics bounded in [0, 1] (accuracy, AUC, F1, MRR, Hits@K): one point.




def cache_notes(report: BenchmarkReport, task: str, model: str) -> tuple[tuple[str, ...], str]:
    """The notes (message, table) of a cell whose cache hit, retrained to check it, gave
    another result (``report.protocol["cache"]``): every seed of the cell was retrained, so the
    verdict is on fresh results, but the cache missed an input; ``((), "")`` otherwise."""
    seeds = (report.protocol.get("cache") or {}).get("not_reproduced", {}).get(
        f"{task}/{model}")
    if not seeds:
        return (), ""
    return ((f"{NOT_REPRODUCED}: seed(s) {seed_list(seeds)} retrained to check the cache gave "
             "another result than the cached one, so every seed of this cell was retrained "
             "(the verdict is on fresh results). Something the script or model reads is not "
             "in the cache key: see docs/cache.md",), NOT_REPRODUCED)


def changed_model_notes(report: BenchmarkReport, baseline: BenchmarkReport, model: str,
                        seeds: Sequence[int], *, task: str | None = None) -> tuple[str, ...]:
    """For an IDENTICAL cell of ``task``: a note when the candidate's model is not the
    baseline's (its fingerprint, the built model's code, structure and initial weights, differs
    at a paired seed where both sides recorded one), naming the likelier cause of the equal
    values (:func:`training_unchanged`): the change did not alter training (a rename, a
    reorder), or the test set is too coarse to register it. Without it a reviewer would read
    IDENTICAL as "nothing changed"; the table's Note is :func:`changed_model_table_note`."""
    ours = report.fingerprints.get("model", {}).get(model, {})
    theirs = baseline.fingerprints.get("model", {}).get(model, {})
    differ = [s for s in seeds if ours.get(s) and theirs.get(s) and ours[s] != theirs[s]]
    if not differ:
        return ()
    where = (f"the model's fingerprint (its code, structure and initial weights) differs from "
             f"the baseline's at seed(s) {seed_list(differ)}")
    odds = None if task is None else training_unchanged(report, task, model, seeds)
    if odds is not None:
        step, sd, chance = odds
        return (f"{UNCHANGED_TRAINING_NOTE}: {where}, yet all {len(seeds)} paired seeds gave "
                f"exactly the baseline's value, on a test set fine enough (steps of "
                f"{fmt_num(step)}, sd per seed {fmt_num(sd)}) that a change reaching training "
                f"would have moved some seed (all equal by chance: about {chance:.0e}). The "
                "change (a rename, a reorder, a refactor) left the computation as it was; "
                "IDENTICAL is right",)
    return (f"{CHANGED_MODEL_NOTE}: {where}, but every paired seed gave exactly the baseline's "
            "value. Either the change did not reach training (a rename, a reorder), or the test "
            "set is too coarse to register it (karate has 8 test nodes: 12.5-point steps); "
            "judge it on a larger task before reading IDENTICAL as unchanged",)


def changed_model_table_note(notes: Sequence[str]) -> str:
    """The table's Note for :func:`changed_model_notes`' ``notes`` ("" when there are none)."""
    for short in (UNCHANGED_TRAINING_NOTE, CHANGED_MODEL_NOTE):
        if any(n.startswith(short) for n in notes):
            return short
    return ""


# A change that reaches training moves each seed's value (training is chaotic: one other bit
# early on ends elsewhere); every paired seed equal must be this unlikely by chance before an
# IDENTICAL cell says the change did not alter training. Below this many distinct values
# in the cell's records, the test set's step cannot be read from them.
_UNCHANGED_CHANCE, _LATTICE_VALUES = 1e-3, 20


def training_unchanged(report: BenchmarkReport, task: str, model: str,
                       seeds: Sequence[int]) -> tuple[float, float, float] | None:
    """Whether the exactly equal values of an IDENTICAL cell say that training did not change:
    ``(step, sd, chance)`` when the chance that a changed training tied every paired seed is
    below 1e-3, else None (a coarse test set, or too little to tell).

    ``step``: the test set's resolution, the smallest gap between the distinct test values the
    candidate's per-epoch records of the cell hold (accuracy on n examples moves by 1/n),
    read only from at least 20 distinct values; ``sd``: the spread over seeds of the paired
    values. A changed training draws each seed's value afresh: ``chance`` that every seed's
    difference lands exactly on 0 is :func:`~pytest_graphnetz.stats.robust.tie_chance`'s."""
    import numpy as np

    from pytest_graphnetz.stats.robust import tie_chance

    histories = [report.histories.get((task, model, s)) for s in seeds]
    if any(h is None for h in histories):
        return None
    series = np.array([v for h in histories if h is not None for v in h.test], dtype=float)
    distinct = np.unique(series[np.isfinite(series)])
    values = report.values(task, model)[report.seed_positions(seeds)]
    if distinct.size < _LATTICE_VALUES or values.size < 2 or not np.isfinite(values).all():
        return None
    step = float(np.diff(distinct).min())
    sd = float(values.std(ddof=1))
    if not sd > 0:
        return None
    chance = tie_chance(step, sd, len(seeds))
    return (step, sd, chance) if chance < _UNCHANGED_CHANCE else None


# Measured by benchmarks/skew.py (skew_results.md, paired t, α = 0.05, 5-20 seeds) on seeds
# that collapse 5% of the time by 4 sd: what the flag warns of. A flag does not change the
# verdict: holding flagged cells back moves these rates by at most 0.3 point.
_COLLAPSE_RATES = {
    "baseline": "no change reads REGRESSED 8.2-8.8% of the time instead of 5%",
    "candidate": "a drop reads NOT WORSE or BETTER 7.9-8.8% of the time instead of 5%",
}


def collapse_notes(baseline: Sequence[float], candidate: Sequence[float], seeds: Sequence[int],
                   *, higher_is_better: bool) -> tuple[tuple[str, ...], str]:
    """For a tested cell, paired ``baseline`` / ``candidate`` values at ``seeds``: the notes
    and the table's Note when one side's seed collapsed far below the others
    (:func:`~pytest_graphnetz.stats.robust.collapse_check`), naming the seed and what the t
    test's error rates are known to become; ``((), "")`` when nothing is flagged. Diverged
    (non-finite) seeds are left out: the cell decides them."""
    from pytest_graphnetz.stats.robust import collapse_check

    finite = [i for i, (b, c) in enumerate(zip(baseline, candidate, strict=True))
              if math.isfinite(b) and math.isfinite(c)]
    check = collapse_check([baseline[i] for i in finite], [candidate[i] for i in finite],
                           higher_is_better=higher_is_better, seeds=[seeds[i] for i in finite])
    notes, short = [], []
    for side, flagged, g in (("baseline", check.baseline_seeds, check.g_baseline),
                             ("candidate", check.candidate_seeds, check.g_candidate)):
        if not flagged:
            continue
        values = [(baseline if side == "baseline" else candidate)[i] for i in finite]
        at = [seeds[i] for i in finite].index(flagged[0])
        grubbs = (f"one-sided Grubbs G = {g:.2f} > {check.critical:.2f}, "
                  f"{fmt_level(check.alpha)} per side, n = {check.n}")
        rates = (f"when seeds of the {side} collapse 5% of the time by 4 sd, "
                 f"{_COLLAPSE_RATES[side]} (5-20 seeds, benchmarks/skew_results.md)")
        if _far_below(values, at, higher_is_better=higher_is_better, alpha=check.alpha):
            notes.append(
                f"the {side} collapsed at seed(s) {seed_list(flagged)}: far below its other "
                f"seeds ({grubbs}). The verdict stands, but the t test is less reliable on such "
                f"seeds: {rates}. Rerun or inspect that seed before trusting a close verdict")
            short.append(f"seed {seed_list(flagged)} collapsed ({side}): t test less reliable")
            continue
        # the difference is an outlier but the run itself scored an ordinary value there
        notes.append(
            f"the paired difference at seed(s) {seed_list(flagged)} is an outlier ({grubbs}), "
            f"although the {side}'s own value there is not far from its other seeds: an "
            "unusual pairing, not a collapsed run. The verdict stands, but the t test is less "
            "reliable on such differences. Inspect that seed before trusting a close verdict")
        short.append(f"seed {seed_list(flagged)}: outlying paired difference, t test less "
                     "reliable")
    return tuple(notes), "; ".join(short)


def _far_below(values: Sequence[float], at: int, *, higher_is_better: bool,
               alpha: float) -> bool:
    """Whether ``values[at]`` is itself an outlier on its bad side among one side's values
    (a collapsed run), by the one-sided Grubbs test at ``alpha`` that flagged the difference."""
    from pytest_graphnetz.stats.robust import grubbs_critical

    x = np.asarray(values, dtype=float)
    sd = float(x.std(ddof=1)) if x.size >= 3 else 0.0
    if not sd > 0:
        return False
    g = (x.mean() - x[at]) / sd if higher_is_better else (x[at] - x.mean()) / sd
    return bool(g > grubbs_critical(x.size, alpha))


def shared_seeds(report: BenchmarkReport, baseline: BenchmarkReport, source: str) -> list[int]:
    held = set(baseline.seeds)
    seeds = [s for s in report.seeds if s in held]
    if len(seeds) < 2:
        raise GateRefusal(
            f"cannot pair: the candidate and the baseline share {len(seeds)} seed(s)\n"
            f"cannot pair the candidate with {source}: they share {len(seeds)} seed(s) "
            f"{seeds} (candidate seeds {seed_list(report.seeds)}, baseline seeds "
            f"{seed_list(baseline.seeds)}); a paired test needs at least 2. Run the seeds the "
            "baseline has (--graphnetz-seeds), or refresh the baseline."
        )
    return seeds


def missing_cells(report: BenchmarkReport, baseline: BenchmarkReport) -> list[tuple[str, str]]:
    """The cells of ``report`` that ``baseline`` lacks (a new task or model), in report order."""
    return [(t, m) for t in report.tasks for m in report.models
            if t not in baseline.tasks or m not in baseline.models]


def check_cells(report: BenchmarkReport, baseline: BenchmarkReport, source: str) -> None:
    missing = missing_cells(report, baseline)
    if missing:
        exc = BaselineMissingError(
            f"{source} has no baseline for cell(s) {[f'{t}/{m}' for t, m in missing]} (it has "
            f"tasks {list(baseline.tasks)}, models {list(baseline.models)}); add them with "
            "`pytest --graphnetz-update-baselines` (merges cell by cell)"
        )
        exc.cells = missing   # for the summary rows: only these cells are missing
        raise exc


def comparable_baseline(report: BenchmarkReport, baseline: BenchmarkReport, source: str
                        ) -> tuple[BenchmarkReport, tuple[str, ...]]:
    """``(baseline read as the candidate reads, notes)``: a number means the same on both
    sides of a pair. The metric, its direction and the fold scheme must agree (else
    :class:`GateRefusal`); the epoch rule is the candidate's: a baseline written under the
    other rule is read at the candidate's (it holds both where its task has validation
    series; a note says so), or refused naming both rules where it cannot be."""
    _check_scheme(report, baseline, source)
    rule, written = report.epoch_selection, baseline.epoch_selection
    if rule == written:
        return baseline, ()
    support = baseline.epoch_selection_support()
    lacking = [t for t in report.tasks if rule == "best_val" and not support.get(t)]
    if lacking:
        raise GateRefusal(
            f"cannot pair: the candidate reads {rule}, the baseline {written}\n"
            f"the candidate selects each seed's epoch by {rule!r} but {source} was written "
            f"under {written!r} and has no validation series for task(s) {lacking} to select "
            f"by {rule!r}: the two sides would be read at different epochs. Compare at one "
            f"rule: set `epoch_selection = {written!r}` on the candidate, or refresh the "
            "baseline from a run that records validation series",
            reason=f"epoch rules differ (candidate {rule}, baseline {written}): not paired")
    aligned = copy.copy(baseline)   # the caller's baseline keeps its own rule
    aligned.epoch_selection = rule
    return aligned, (f"{source} was written under epoch rule {written!r}; it is read at the "
                     f"candidate's rule {rule!r} (it holds both), so both sides are compared "
                     "at one rule",)


def _check_scheme(report: BenchmarkReport, baseline: BenchmarkReport, source: str) -> None:
    """Refuse a task whose metric, direction or fold scheme differs between the sides (the
    fold scheme where both record their task's configuration: ``from_arrays`` records none)."""
    for task in report.tasks:
        a, b = report.metric(task), baseline.metric(task)
        if (a.name, a.higher_is_better) != (b.name, b.higher_is_better):
            raise GateRefusal(
                f"cannot pair task {task!r}: {a.name} against the baseline's {b.name}\n"
                f"task {task!r}: the candidate reports {a.name} ({a.direction}) but {source} "
                f"has {b.name} ({b.direction}); two different metrics cannot be paired. "
                "Refresh the baseline if the metric change is intended."
            )
        ours, theirs = report.folds(task), baseline.folds(task)
        recorded = all((r.protocol.get("tasks") or {}).get(task) for r in (report, baseline))
        if recorded and ours != theirs:
            def scheme(k: int | None) -> str:
                return "plain seeds (no folds)" if k is None else f"{k}-fold cross-validation"
            raise GateRefusal(
                f"cannot pair task {task!r}: another fold scheme than the baseline's\n"
                f"task {task!r}: the candidate ran {scheme(ours)} but {source} "
                f"{scheme(theirs)}; seed s names another split on each side, so a per-seed "
                "pairing would be fictional. Run the baseline's scheme, or refresh the "
                "baseline if the change is intended.",
                reason=f"fold schemes differ on {task}: not paired")


def refuse_diverged_baseline(report: BenchmarkReport, baseline: BenchmarkReport,
                             seeds: Sequence[int], source: str,
                             refresh_command: str | None = None) -> None:
    """Refuse the cells whose baseline is non-finite (diverged) at a paired seed: the gate
    cannot read the candidate's seed there against anything, so a pass would rest on a seed
    nobody judged. One line per cell: the cell, the side, the seeds, the fix. (A candidate
    diverged where the baseline did not is a verdict, REGRESSED, not this refusal.)"""
    idx = baseline.seed_positions(seeds)
    bad = {}
    for task in report.tasks:
        for model in report.models:
            values = baseline.values(task, model)[idx]
            where = [s for s, v in zip(seeds, values.tolist(), strict=True)
                     if not math.isfinite(v)]
            if where:
                bad[(task, model)] = where
    if not bad:
        return
    fix = (f"`{refresh_command}`" if refresh_command
           else "`pytest --graphnetz-update-baselines`")
    lines = [f"{task}/{model}: {source} (the baseline side) is non-finite (diverged) at seed(s) "
             f"{seed_list(where)} of the paired seeds {seed_list(seeds)}; the candidate's "
             f"value there cannot be judged. Refresh the baseline ({fix}) or retrain it on "
             "those seeds" for (task, model), where in bad.items()]
    reason = lines[0] if len(lines) == 1 else (
        f"{source} (the baseline side) is non-finite (diverged) at paired seeds: "
        + "; ".join(f"{t}/{m} at {seed_list(w)}" for (t, m), w in bad.items())
        + f". Refresh the baseline ({fix})")
    raise GateRefusal("graphnetz: " + "\n".join(lines), reason=reason, cells=list(bad))


def refuse_changed_data(report: BenchmarkReport, baseline: BenchmarkReport, seeds: Sequence[int],
                        source: str) -> None:
    changed = {}
    for task in report.tasks:
        seeds_changed = [s for s in seeds
                         if None not in (fa := report.data_fingerprint(task, s),
                                         fb := baseline.data_fingerprint(task, s)) and fa != fb]
        if seeds_changed:
            changed[task] = seeds_changed
    if not changed:
        return
    unpaired = [unpaired_cell(report, baseline, task, model, seeds)
                for task in changed for model in report.models]
    which = "; ".join(f"task {task!r}: its data or split differs from {source} for the same "
                      f"seed(s) {s}" for task, s in changed.items())
    tasks = ", ".join(f"task {task!r}" for task in changed)
    raise GateRefusal(
        f"no paired verdict: the data or split of {tasks} changed\n"   # fits a terminal
        f"{which}, so a per-seed pairing would be fictional: no verdict. If the data change is "
        "intended, refresh the baseline (--graphnetz-update-baselines --graphnetz-force).\n\n"
        f"What the change did, UNPAIRED (Welch's t; {unpaired[0].sides()}; "
        "not a verdict: the data differ, so model and data effects cannot be told apart):\n"
        + "\n".join(u.line() for u in unpaired),
        reason=f"data/split of {', '.join(changed)} changed: no paired verdict; "
               "Δ shown is unpaired (Welch), not a verdict",
        cells=[(u.task, u.model) for u in unpaired], unpaired=unpaired,
    )


def unpaired_cell(report: BenchmarkReport, baseline: BenchmarkReport, task: str, model: str,
              seeds: Sequence[int] | None = None) -> UnpairedCell:
    """Before/after of one cell without pairing: each side's mean and interval over all its
    seeds, and Welch's unpaired t on ``seeds`` (default: the seeds both sides ran)."""
    spec = report.metric(task)
    cand, base = report.values(task, model), baseline.values(task, model)
    if seeds is None:
        held = set(baseline.seeds)
        seeds = [s for s in report.seeds if s in held]
    c = cand[report.seed_positions(seeds)]
    b = base[baseline.seed_positions(seeds)]
    better, worse = (c, b) if spec.higher_is_better else (b, c)
    try:
        # A seed diverged on either side is left out (and noted), as in every comparison.
        welch = paired_test(better, worse, test="welch",
                            confidence_level=report.confidence_level)
    except ValueError:
        welch = None   # fewer than 2 usable seeds
    return UnpairedCell(task, model, spec.name, spec.higher_is_better,
                        describe_values(base, baseline, metric=spec.name),
                        describe_values(cand, report, metric=spec.name), welch,
                        tuple(baseline.seeds), tuple(report.seeds), tuple(seeds))


def unpaired_notes(report: BenchmarkReport, baseline: BenchmarkReport, seeds: Sequence[int],
                    refresh_command: str | None) -> tuple[str, ...]:
    """Candidate seeds the baseline lacks are left out: say so, and how to pair them."""
    paired = set(seeds)
    extra = [s for s in report.seeds if s not in paired]
    if not extra:
        return ()
    return (f"candidate seed(s) {seed_list(extra)} have no baseline counterpart (the baseline "
            f"holds {seed_list(baseline.seeds)}) and are not used; to pair them, refresh the "
            f"baseline with those seeds from the baseline's code "
            f"({refresh_hint(refresh_command, max(report.seeds) + 1)})",)


def unpaired_table_note(report: BenchmarkReport, baseline: BenchmarkReport) -> str:
    """The table's Note on candidate seeds the baseline lacks (trained, never read): which,
    and the refresh that pairs them ("" when every candidate seed pairs)."""
    extra = [s for s in report.seeds if s not in set(baseline.seeds)]
    if not extra:
        return ""
    return (f"candidate seeds {seed_list(extra)} unpaired, not read (the baseline holds "
            f"{seed_list(baseline.seeds)}): refresh it with {max(report.seeds) + 1} seeds "
            "first to use them")


def tuning_notes(report: BenchmarkReport, baseline: BenchmarkReport,
                 seeds: Sequence[int]) -> tuple[str, ...]:
    """For arms that were tuned (:func:`~pytest_graphnetz.gates.tuning.tune`): a one-line
    refusal when either side's winner was selected on the test split or is judged on a seed
    its search trained on (``seeds``: the paired seeds), or when the two arms' budgets differ
    and the candidate did not accept the baseline's explicitly; else the notes stating both
    budgets and each winner's search and optimism. ``()`` for two fixed recipes."""
    from pytest_graphnetz.report.trials import (
        TuningError,
        budget_problem,
        record_of,
        record_problem,
    )

    records = []
    for side, side_report in (("candidate", report), ("baseline", baseline)):
        try:
            record = record_of(side_report.protocol)
        except TuningError as exc:
            raise GateRefusal(f"the {side}'s {exc}: refresh it with tune()") from None
        problem = None if record is None else record_problem(record, seeds, side)
        if problem is not None:
            raise GateRefusal(problem)
        records.append(record)
    refusal, note = budget_problem(*records)
    if refusal is not None:
        raise GateRefusal(refusal)
    described = tuple(f"{side} search: {record.describe()}"
                      for side, record in zip(("candidate", "baseline"), records, strict=True)
                      if record is not None)
    cand, base = records
    if cand is not None and base is not None and dict(cand.winner_config) != dict(
            base.winner_config):
        if cand.incumbent_kept is False:
            described += ("the candidate's search displaced the baseline's winner on "
                          "validation evidence: Δ includes that change of configuration, not "
                          "only the change",)
        else:
            described += ("the two searches picked different configurations: Δ includes which "
                          "configuration each search picked, not only the change (more search "
                          "seeds steady the choice; tune(..., incumbent=baseline) keeps the "
                          "baseline's winner unless a challenger beats it)",)
    return (() if note is None else (note,)) + described


def tuning_table_note(report: BenchmarkReport, baseline: BenchmarkReport) -> str:
    """The table's Note for a tuned comparison (checked by :func:`tuning_notes`): each arm's
    budget and winner's optimism, e.g. ``tuned 8×5 (optimism +0.014) vs 8×5 (+0.012)``; ""
    for two fixed recipes."""
    from pytest_graphnetz.report.trials import record_of

    records = [record_of(r.protocol) for r in (report, baseline)]
    if all(r is None for r in records):
        return ""
    cand, base = ("fixed" if r is None else
                  f"{r.budget.trials}×{r.budget.seeds} (optimism {fmt_signed(r.optimism)})"
                  for r in records)
    return f"tuned {cand} vs {base}"


def refuse_other_hardware(report: BenchmarkReport, baseline: BenchmarkReport, source: str, *,
                          accept: bool = False) -> None:
    """Refuse to pair runs made on different kinds of hardware (:data:`HARDWARE_KIND` of each
    side's ``protocol["hardware"]``; a report that records none, made before the record
    existed or by ``from_arrays``, is not refused), unless ``accept``: then the difference is
    a note on every verdict (:func:`environment_notes`)."""
    ours, theirs = report.protocol.get("hardware"), baseline.protocol.get("hardware")
    if accept or not isinstance(ours, dict) or not isinstance(theirs, dict):
        return
    differ = [k for k in HARDWARE_KIND if ours.get(k) != theirs.get(k)]
    if differ:
        def kind(record: dict) -> str:
            return " ".join(str(record.get(k)) for k in HARDWARE_KIND if record.get(k))
        raise GateRefusal(
            f"the candidate ran on {kind(ours)} but {source} on {kind(theirs)} ("
            f"{', '.join(differ)} {'differs' if len(differ) == 1 else 'differ'}): other "
            "hardware runs other kernels, so the paired differences would mix the change with "
            "the machine. Refresh the baseline on this "
            f"kind of machine, or accept the comparison with {ACCEPT_HARDWARE} (`graphnetz "
            "compare --accept-hardware`; the verdict then notes the difference)",
            reason=f"hardware differs ({', '.join(differ)}): not paired")


def environment_notes(report: BenchmarkReport, baseline: BenchmarkReport) -> tuple[str, ...]:
    notes = []
    for key in _ENVIRONMENT_KEYS:
        a, b = report.protocol.get(key), baseline.protocol.get(key)
        if a is not None and b is not None and a != b:
            notes.append(f"{key} differs (baseline {_brief(b, a)}, candidate {_brief(a, b)}): "
                         "the protocol is the same, the last digits may not be")
    # The determinism mode acts on CUDA only ("gpu" is None on CPU): two CPU runs in different
    # modes computed the same thing.
    a, b = report.protocol.get("deterministic"), baseline.protocol.get("deterministic")
    if a and b and a != b and (report.protocol.get("gpu") or baseline.protocol.get("gpu")):
        notes.append(f"deterministic CUDA algorithms differ (baseline {b}, candidate {a}): "
                     "a CUDA run not in mode 'on' may vary in the last digits from rerun to "
                     "rerun, so even an unchanged model need not be IDENTICAL")
    return tuple(notes)


def _brief(value: Any, other: Any) -> str:
    # For version dicts, show only the entries that differ.
    if isinstance(value, dict) and isinstance(other, dict):
        return ", ".join(f"{k} {value.get(k)}" for k in sorted(value)
                         if value.get(k) != other.get(k)) or "-"
    return str(value)
