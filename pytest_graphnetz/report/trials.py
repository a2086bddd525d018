"""What a hyperparameter search did, kept in the confirmed report (``protocol["tuning"]``):
every trial's configuration and its validation score per search seed, the winner, the budget
(trials × seeds), the confirmation seeds and the winner's validation score on them.

Search and confirmation never share a seed, by construction: a search of ``S`` seeds per trial
trains under :func:`search_seeds`, the block ``2**31 + 0..S−1``, which no canonical seed set
``0..n−1`` (at most :data:`~pytest_graphnetz.base.seedspec.MAX_SEEDS` seeds) reaches, so the winner
is
confirmed, and gated, on the canonical seeds of the gate while its selection read only other
seeds (other initialisations, and other splits for a task that draws its split from the seed).
The checks (:func:`record_problem`, :func:`budget_problem`) refuse what would make the
confirmation dishonest: a confirmation seed the search trained on, a selection that read the
test split, two arms searched on different budgets.

The standard library and :mod:`~pytest_graphnetz.base.text` only: the gate's pairing and the plots
read it.
"""

from __future__ import annotations

import json
import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Any

from pytest_graphnetz.base.text import seed_list

PROTOCOL_KEY = "tuning"
# Search seeds live above every canonical seed: 0..n-1 with n <= MAX_SEEDS stays below it.
SEARCH_SEED_BASE = 2**31
VALIDATION = "validation"


class TuningError(ValueError):
    """A search or its confirmation that cannot be kept honest (the message says why)."""


def search_seeds(n: int) -> tuple[int, ...]:
    """The ``n`` seeds every trial of a search trains under: ``2**31 + 0..n−1``, disjoint from
    every canonical confirmation seed set ``0..m−1``."""
    if isinstance(n, bool) or int(n) != n or not 2 <= int(n) <= 10_000:
        raise TuningError(f"`search_seeds` must be a whole number of seeds in [2, 10000] "
                          f"(each trial's score is a mean over them), got {n!r}")
    return tuple(SEARCH_SEED_BASE + i for i in range(int(n)))


@dataclass(frozen=True)
class Budget:
    """What a search spent: ``trials`` configurations, each trained under ``seeds`` seeds."""

    trials: int
    seeds: int

    def __str__(self) -> str:
        return f"{self.trials} trials × {self.seeds} seeds"

    @classmethod
    def parse(cls, value: Budget | str | Sequence[int]) -> Budget:
        """``Budget(8, 5)``, ``"8x5"`` / ``"8 × 5"`` or ``(8, 5)``."""
        if isinstance(value, Budget):
            return value
        parts = (str(value).replace("×", "x").replace("trials", "").replace("seeds", "")
                 .split("x") if isinstance(value, str) else list(value))
        try:
            trials, seeds = (int(str(p).strip()) for p in parts)
        except (TypeError, ValueError):
            raise TuningError(f"a budget is TRIALSxSEEDS (e.g. '8x5'), got {value!r}") from None
        if trials < 1 or seeds < 1:
            raise TuningError(f"a budget needs at least 1 trial and 1 seed, got {value!r}")
        return cls(trials, seeds)


@dataclass(frozen=True)
class Trial:
    """One configuration of a search: ``config`` (JSON values), its validation score per
    search seed (``validation``, None in a baseline's summary, which keeps only the ``mean``)
    and their ``mean`` (NaN when a seed diverged: such a trial is never selected)."""

    config: Mapping[str, Any]
    mean: float
    validation: tuple[float, ...] | None = None


@dataclass(frozen=True)
class Incumbent:
    """The incumbent rule's reading of one search: ``trial``, the index in this search's space of
    the configuration the baseline's search had picked (the incumbent), kept unless a
    challenger beat it on validation: per trial, ``diffs`` (mean paired difference of its
    validation scores over the search seeds minus the incumbent's, in the metric's direction:
    + = the challenger was better; 0 for the incumbent, None where a seed diverged) and
    ``p_adjusted`` (one-sided paired t's p of "no better than the incumbent", Holm-adjusted over
    the challengers tested; None for the incumbent and the untested); ``alpha``: the Holm
    level a challenger's adjusted p must reach to displace it."""

    trial: int
    alpha: float
    diffs: tuple[float | None, ...]
    p_adjusted: tuple[float | None, ...]

    def to_dict(self) -> dict[str, Any]:
        return {"trial": self.trial, "alpha": self.alpha, "diffs": list(self.diffs),
                "p_adjusted": list(self.p_adjusted)}

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> Incumbent:
        def values(key: str) -> tuple[float | None, ...]:
            return tuple(None if v is None else float(v) for v in data[key])

        return cls(int(data["trial"]), float(data["alpha"]), values("diffs"),
                   values("p_adjusted"))


@dataclass(frozen=True)
class TuningRecord:
    """One arm's search and confirmation (see the module docstring).

    ``split``: what selection read (only ``"validation"`` is honest); ``confirmation_seeds``
    and ``confirmation_validation``: the winner's validation score per confirmation seed (None in
    a summary, which keeps ``confirmation_mean``); ``accepted_budget``: the other arm's budget,
    accepted explicitly for a comparison across budgets; ``stability``: the share of bootstrap
    resamples of the search seeds that select the same winner (None: not measured);
    ``incumbent``: the incumbent rule's reading when the search was given the baseline's winner
    (None: selected by the best mean alone).
    """

    task: str
    model: str
    metric: str
    higher_is_better: bool
    epoch_selection: str
    search_seeds: tuple[int, ...]
    trials: tuple[Trial, ...]
    winner: int
    confirmation_seeds: tuple[int, ...]
    confirmation_mean: float
    confirmation_validation: tuple[float, ...] | None = None
    split: str = VALIDATION
    accepted_budget: Budget | None = None
    stability: float | None = None
    incumbent: Incumbent | None = None
    full: bool = field(default=True, compare=False)

    @property
    def budget(self) -> Budget:
        return Budget(len(self.trials), len(self.search_seeds))

    @property
    def winner_config(self) -> Mapping[str, Any]:
        return self.trials[self.winner].config

    @property
    def optimism(self) -> float:
        """The winner's validation score on the search seeds minus on the confirmation seeds
        (in the metric's direction: + = the search flattered the winner)."""
        gap = self.trials[self.winner].mean - self.confirmation_mean
        return gap if self.higher_is_better else -gap

    def trial_means(self) -> list[float]:
        return [t.mean for t in self.trials]

    def describe(self) -> str:
        """One line: the budget, the winner and its optimism."""
        config = ", ".join(f"{k}={v}" for k, v in self.winner_config.items())
        steady = ("" if self.stability is None else
                  f", chosen in {100 * self.stability:.0f}% of resamples of the search seeds")
        return (f"{self.budget} on seeds {seed_list(self.search_seeds)}, selected on "
                f"{self.split}{self.describe_incumbent()}; winner trial {self.winner} "
                f"({config}{steady}); optimism "
                f"{self.optimism:+.4g} (validation {self.trials[self.winner].mean:.4g} on the "
                f"search seeds, {self.confirmation_mean:.4g} on confirmation seeds "
                f"{seed_list(self.confirmation_seeds)})")

    @property
    def incumbent_kept(self) -> bool | None:
        """Whether the incumbent rule kept the baseline's winner; None without an incumbent."""
        return None if self.incumbent is None else self.winner == self.incumbent.trial

    def describe_incumbent(self) -> str:
        """What the incumbent rule did, as a clause of :meth:`describe` ("" without one)."""
        rule = self.incumbent
        if rule is None:
            return ""
        head = f" with the baseline's winner as incumbent (trial {rule.trial})"
        if math.isnan(self.trials[rule.trial].mean):
            return f"{head}, which diverged on a search seed, so the best mean won"
        if self.winner == rule.trial:
            tested = {i: (d, p) for i, (d, p) in enumerate(zip(rule.diffs, rule.p_adjusted,
                                                                  strict=True))
                      if d is not None and p is not None}
            if not tested:
                return f"{head}: kept, no challenger could be tested"
            best = max(tested, key=lambda i: (tested[i][0], -i))
            return (f"{head}: kept, no challenger beat it on validation at Holm level "
                    f"{rule.alpha:g} (closest: trial {best}, {tested[best][0]:+.4g}, adjusted "
                    f"p {tested[best][1]:.3g})")
        diff, p = rule.diffs[self.winner], rule.p_adjusted[self.winner]
        return (f"{head}: displaced by trial {self.winner}, {_signed(diff)} on validation over "
                f"the search seeds (paired t, Holm-adjusted p {_fixed(p)} <= {rule.alpha:g})")

    def summary(self) -> TuningRecord:
        """The reviewable form committed baselines keep: no per-seed lists."""
        return replace(self, trials=tuple(replace(t, validation=None) for t in self.trials),
                       confirmation_validation=None, full=False)

    def to_dict(self) -> dict[str, Any]:
        def trial(t: Trial) -> dict[str, Any]:
            out: dict[str, Any] = {"config": dict(t.config), "mean": _json_float(t.mean)}
            if t.validation is not None:
                out["validation"] = [_json_float(v) for v in t.validation]
            return out

        out: dict[str, Any] = {
            "record": "full" if self.full else "summary",
            "task": self.task, "model": self.model, "split": self.split,
            "metric": self.metric, "higher_is_better": self.higher_is_better,
            "epoch_selection": self.epoch_selection,
            "budget": {"trials": self.budget.trials, "seeds": self.budget.seeds},
            "search_seeds": list(self.search_seeds), "winner": self.winner,
            "optimism": _json_float(self.optimism),
            "trials": [trial(t) for t in self.trials],
            "confirmation": {"seeds": list(self.confirmation_seeds),
                             "mean": _json_float(self.confirmation_mean)},
            "accepted_budget": None if self.accepted_budget is None else {
                "trials": self.accepted_budget.trials, "seeds": self.accepted_budget.seeds},
            "stability": self.stability,
            "incumbent": None if self.incumbent is None else self.incumbent.to_dict(),
        }
        if self.confirmation_validation is not None:
            out["confirmation"]["validation"] = [_json_float(v)
                                                 for v in self.confirmation_validation]
        return out

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> TuningRecord:
        """Inverse of :meth:`to_dict` (either form); :class:`TuningError` on a bad record."""
        try:
            trials = tuple(Trial(dict(t["config"]), _float(t["mean"]),
                                 None if t.get("validation") is None
                                 else tuple(_float(v) for v in t["validation"]))
                           for t in data["trials"])
            conf = data["confirmation"]
            accepted = data.get("accepted_budget")
            return cls(
                str(data["task"]), str(data["model"]), str(data["metric"]),
                bool(data["higher_is_better"]), str(data["epoch_selection"]),
                tuple(int(s) for s in data["search_seeds"]), trials, int(data["winner"]),
                tuple(int(s) for s in conf["seeds"]), _float(conf["mean"]),
                None if conf.get("validation") is None
                else tuple(_float(v) for v in conf["validation"]),
                split=str(data.get("split", VALIDATION)),
                accepted_budget=None if accepted is None
                else Budget(int(accepted["trials"]), int(accepted["seeds"])),
                stability=None if data.get("stability") is None else float(data["stability"]),
                incumbent=None if data.get("incumbent") is None
                else Incumbent.from_dict(data["incumbent"]),
                full=data.get("record") != "summary")
        except (KeyError, TypeError, ValueError, IndexError) as exc:
            raise TuningError(f"malformed tuning record ({type(exc).__name__}: {exc})") from exc


def _json_float(x: float) -> float | None:
    return None if math.isnan(x) else float(x)


def _signed(x: float | None) -> str:
    return "n/a" if x is None else f"{x:+.4g}"


def _fixed(x: float | None) -> str:
    return "n/a" if x is None else f"{x:.3g}"


def _float(x: Any) -> float:
    return math.nan if x is None else float(x)


def record_of(protocol: Mapping[str, Any]) -> TuningRecord | None:
    """The tuning record a report's protocol holds, or None for a fixed recipe."""
    data = protocol.get(PROTOCOL_KEY)
    return None if data is None else TuningRecord.from_dict(data)


def record_problem(record: TuningRecord, seeds: Sequence[int], side: str) -> str | None:
    """Why ``side``'s confirmation on ``seeds`` cannot be trusted, in one line; None if it can:
    selection read another split than validation, or a seed it is judged on was a search seed."""
    if record.split != VALIDATION:
        return (f"the {side}'s search selected its winner on the {record.split} split: the "
                "test set is there to confirm, not to search; select on validation (tune does)")
    if not 0 <= record.winner < len(record.trials):
        return f"the {side}'s tuning record names winner trial {record.winner}, which it lacks"
    if record.incumbent is not None and not (
            0 <= record.incumbent.trial < len(record.trials)
            and len(record.incumbent.diffs) == len(record.incumbent.p_adjusted)
            == len(record.trials)):
        return (f"the {side}'s tuning record names incumbent trial {record.incumbent.trial} "
                f"of {len(record.trials)}, or per-trial lists of another length")
    return overlap_problem(record.search_seeds, seeds, side)


def overlap_problem(searched: Sequence[int], seeds: Sequence[int], side: str) -> str | None:
    """One line when a confirmation seed of ``side`` is one of the search seeds, else None."""
    overlap = sorted(set(seeds) & set(searched))
    if overlap:
        return (f"the {side} is confirmed on seed(s) {seed_list(overlap)} that its search "
                f"trained on (search seeds {seed_list(searched)}): the winner was chosen on "
                "them, so they flatter it; confirm on fresh seeds")
    return None


def budget_problem(candidate: TuningRecord | None, baseline: TuningRecord | None
                   ) -> tuple[str | None, str | None]:
    """``(refusal, note)`` for a comparison of two arms' budgets: a refusal (one line) when
    they differ and the candidate did not accept the baseline's budget explicitly; a note
    stating both budgets when either arm was tuned."""
    if candidate is None and baseline is None:
        return None, None
    cand = "not tuned (a fixed recipe)" if candidate is None else str(candidate.budget)
    base = "not tuned (a fixed recipe)" if baseline is None else str(baseline.budget)
    differ = (candidate is None or baseline is None or candidate.budget != baseline.budget)
    accepted = (differ and candidate is not None and baseline is not None
                and candidate.accepted_budget == baseline.budget)
    if differ and not accepted:
        return (f"tuning budgets differ (candidate {cand}, baseline {base}): a larger search "
                f"expects a better winner whatever the change; {_way_through(candidate, baseline)}"
                ), None
    lead = "tuned on different budgets, accepted explicitly" if accepted else "tuned"
    return None, f"{lead}: candidate {cand}, baseline {base}"


def _way_through(candidate: TuningRecord | None, baseline: TuningRecord | None) -> str:
    """How to make two arms of different budgets comparable, in one sentence per case."""
    if candidate is not None and baseline is not None:
        budget = f"{baseline.budget.trials}x{baseline.budget.seeds}"
        return ("tune both on one budget, or accept the baseline's explicitly with "
                f"tune(..., accept_budget='{budget}')")
    if candidate is not None:   # a tuned candidate against a fixed recipe
        winner = json.dumps(dict(candidate.winner_config), sort_keys=True)
        return ("to ask whether the tuned model beats the fixed recipe, gate its winner "
                f"{winner} as a fixed recipe (the factory built with that configuration, "
                "without tune; the confirmation seeds never served the search), or tune the "
                "baseline's recipe over the same space and budget and refresh its baseline")
    if baseline is None:   # two fixed recipes: nothing differs
        return ""
    return ("to ask whether the fixed recipe beats the tuned baseline, gate it against the "
            f"baseline's winner {json.dumps(dict(baseline.winner_config), sort_keys=True)} "
            "refreshed as a fixed recipe, or tune the candidate over the baseline's space and "
            f"budget (tune(..., search_seeds={baseline.budget.seeds}) over "
            f"{baseline.budget.trials} configurations)")


__all__ = ["PROTOCOL_KEY", "SEARCH_SEED_BASE", "VALIDATION", "Budget", "Incumbent", "Trial",
           "TuningError", "TuningRecord", "budget_problem", "overlap_problem", "record_of",
           "record_problem", "search_seeds"]
