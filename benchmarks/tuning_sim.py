"""Tune, then confirm, by simulation: how often the real gate reads an innocent change between
two tuned arms NOT WORSE, a 2-point drop REGRESSED, and what judging on the search seeds (no
confirmation step) would have read instead.

The model of one arm (per-seed noise at the scale of Cora's, docs/calibrate.md: an innocent
rerun's paired sd ≈ 0.0065 over 10 seeds): a space of ``T`` configurations with true accuracies
``q_t`` (spread ``--q-sd``); a run of configuration ``t`` under seed ``s`` scores
``val = q_t + a_s + e + u`` on validation and ``test = q_t + b_s + e + v`` on test, where
``a_s``/``b_s`` are the split's difficulty (shared by every run of seed ``s``, in either arm),
``e`` the run's initialisation luck (shared by its validation and test scores, drawn afresh for
every run and every arm) and ``u``/``v`` evaluation noise. The search trains every configuration
under the same ``S`` search seeds, selects on mean validation, and the winner is confirmed on
``n`` fresh seeds. A regression lowers every ``q_t`` of the candidate by ``--drop``.

With the incumbent rule (``tune(..., incumbent=baseline)``, :func:`select_incumbent`) the
candidate's search keeps the baseline's winner unless a challenger beats it on validation by
a one-sided paired t over the search seeds, Holm-adjusted over the challengers at
``SELECTION_ALPHA``. Its rows add a change that makes one challenger truly 2 points better
than the incumbent (the rule must switch to it).

Each simulated pull request runs the real gate (``compare_reports`` through
``BenchmarkReport.from_arrays`` with the tuning records attached, so the pairing's checks run):
on the confirmation seeds (canonical, first look ``n``), and, for contrast, on the winners'
test values on the search seeds (judged alone). Prints the verdict shares, the mean read Δ
against the true Δ (``q_winner`` difference), and the winner's optimism (validation on the
search seeds minus on the confirmation seeds). Scenarios: equal budgets (T × S both), and a
candidate that searched twice the trials of its baseline (what the budget refusal stops).

    nice -n 10 python benchmarks/tuning_sim.py --sims 2000 --out benchmarks/tuning_sim_results.md
"""

from __future__ import annotations

import argparse
from collections import Counter
from pathlib import Path

import numpy as np

from pytest_graphnetz import BenchmarkReport
from pytest_graphnetz.gates.comparing.compare import compare_reports
from pytest_graphnetz.gates.tuning import SELECTION_ALPHA, select_incumbent, winner_stability
from pytest_graphnetz.report.trials import PROTOCOL_KEY, Trial, TuningRecord, search_seeds

STEADY = 0.8   # both winners chosen in at least this share of resamples of their search seeds

# Cora-like: a split moves every run by ~1.2 points; a run's initialisation luck (shared by its
# validation and test scores) and the test set's sampling leave an innocent rerun a paired sd of
# ~0.0065 (docs/calibrate.md); the 210-node validation set adds ~1.2 points of its own.
SPLIT_SD, INIT_SD, TEST_SD, VAL_SD = 0.012, 0.003, 0.0035, 0.012


def arm(rng: np.random.Generator, q: np.ndarray, split_val: np.ndarray, split_test: np.ndarray,
        searched: tuple[int, ...], n: int, incumbent: int | None = None) -> dict:
    """One arm's search over ``q`` (its configurations' true accuracies) and confirmation.
    ``split_*[s]``: seed s's split difficulty, search seeds first (``len(searched)``), then the
    ``n`` confirmation seeds; ``incumbent``: the baseline winner's trial, kept by the incumbent
    rule unless beaten (None: the best mean wins)."""
    S = len(searched)
    init = rng.normal(0, INIT_SD, (len(q), S))
    val = q[:, None] + split_val[None, :S] + init + rng.normal(0, VAL_SD, (len(q), S))
    test = q[:, None] + split_test[None, :S] + init + rng.normal(0, TEST_SD, (len(q), S))
    trials = tuple(Trial({"t": t}, float(val[t].mean()), tuple(val[t])) for t in range(len(q)))
    reading = None
    if incumbent is None:
        winner = int(np.argmax(val.mean(axis=1)))
    else:
        winner, reading = select_incumbent(trials, incumbent, True, alpha=SELECTION_ALPHA)
    init_c = rng.normal(0, INIT_SD, n)
    conf_val = q[winner] + split_val[S:] + init_c + rng.normal(0, VAL_SD, n)
    conf_test = q[winner] + split_test[S:] + init_c + rng.normal(0, TEST_SD, n)
    record = TuningRecord("task", "M", "accuracy", True, "final", searched, trials, winner,
                          tuple(range(n)), float(conf_val.mean()), tuple(conf_val),
                          incumbent=reading)
    return {"record": record, "q": float(q[winner]), "confirmed": conf_test,
            "searched": test[winner]}


def report(values: np.ndarray, seeds: tuple[int, ...], record: TuningRecord) -> BenchmarkReport:
    out = BenchmarkReport.from_arrays(np.clip(values, 0, 1)[None, None, :], tasks=["task"],
                                      models=["M"], seeds=seeds, metric="accuracy")
    out.protocol[PROTOCOL_KEY] = record.to_dict()
    return out


def simulate(rng: np.random.Generator, *, trials: int, cand_trials: int, S: int, n: int,
             drop: float, q_sd: float, incumbent: bool = False, lift: float = 0.0) -> dict:
    """One pull request. ``incumbent``: the candidate's search keeps the baseline's winner
    unless beaten; ``lift``: the change makes one challenger (the baseline winner's neighbour)
    ``lift`` better than the baseline winner's true accuracy, every other configuration as
    it was."""
    q = 0.80 + rng.normal(0, q_sd, max(trials, cand_trials))   # the space's true accuracies
    split_val = rng.normal(0, SPLIT_SD, S + n)
    split_test = rng.normal(0, SPLIT_SD, S + n)
    searched = search_seeds(S)
    base = arm(rng, q[:trials], split_val, split_test, searched, n)
    q_cand = q[:cand_trials] - drop
    lifted = (base["record"].winner + 1) % cand_trials
    if lift:
        q_cand = q_cand.copy()
        q_cand[lifted] = q[base["record"].winner] + lift
    cand = arm(rng, q_cand, split_val, split_test, searched, n,
               incumbent=base["record"].winner if incumbent else None)
    accept = {} if cand_trials == trials else {"accepted_budget": base["record"].budget}
    cand_record = TuningRecord(**{**cand["record"].__dict__, **accept})
    confirmed = compare_reports(report(cand["confirmed"], tuple(range(n)), cand_record),
                                report(base["confirmed"], tuple(range(n)), base["record"]),
                                canonical=True, first_look=n)[0].comparison
    # no confirmation step: the winners' test values on the seeds they were selected on
    on_search = compare_reports(
        BenchmarkReport.from_arrays(cand["searched"][None, None, :], tasks=["task"],
                                    models=["M"], seeds=searched, metric="accuracy"),
        BenchmarkReport.from_arrays(base["searched"][None, None, :], tasks=["task"],
                                    models=["M"], seeds=searched, metric="accuracy"),
        rerun_safe=False)[0].comparison
    return {"confirmed": confirmed.decision.verdict.value,
            "searched": on_search.decision.verdict.value,
            "same": base["record"].winner == cand["record"].winner,
            "switched_to_lifted": cand["record"].winner == lifted,
            "steady": min(winner_stability(r.trials, True, resamples=200)
                          for r in (base["record"], cand_record)) >= STEADY,
            "read_confirmed": confirmed.evidence.mean_diff,
            "read_searched": on_search.evidence.mean_diff,
            "true": cand["q"] - base["q"], "optimism": cand_record.optimism}


def scenario(name: str, sims: int, seed: int, **kw) -> list[str]:
    rng = np.random.default_rng(seed)
    rows = [simulate(rng, **kw) for _ in range(sims)]
    same = 100 * np.mean([r["same"] for r in rows])
    optimism = np.mean([r["optimism"] for r in rows])
    lines = []
    for where in ("confirmed", "searched"):
        counts = Counter(r[where] for r in rows)
        shares = ", ".join(f"{v} {100 * c / sims:.1f}%" for v, c in counts.most_common())
        bias = np.mean([r[f"read_{where}"] - r["true"] for r in rows])
        label = (f"{kw['n']} fresh seeds" if where == "confirmed"
                 else f"the {kw['S']} search seeds")
        steady = [r for r in rows if r["steady"]]
        nw = (f"{100 * np.mean([r[where] == 'NOT WORSE' for r in steady]):.1f}% of "
              f"{100 * len(steady) / sims:.0f}%" if steady else "none steady")
        lines.append(f"| {name} | {kw['S']} | {kw['q_sd']} | {same:.0f}% | {optimism:+.4f} | "
                     f"{label} | {shares} | {nw} | {bias:+.4f} |")
    return lines


def incumbent_scenario(name: str, sims: int, seed: int, **kw) -> str:
    """One row of the incumbent rule's table: verdicts on the confirmation seeds, how often
    the candidate's search kept the baseline's winner, how often a lifted challenger won."""
    rng = np.random.default_rng(seed)
    rows = [simulate(rng, incumbent=True, **kw) for _ in range(sims)]
    counts = Counter(r["confirmed"] for r in rows)
    shares = ", ".join(f"{v} {100 * c / sims:.1f}%" for v, c in counts.most_common())
    kept = 100 * np.mean([r["same"] for r in rows])
    lifted = (f"{100 * np.mean([r['switched_to_lifted'] for r in rows]):.1f}%"
              if kw.get("lift") else "")
    bias = np.mean([r["read_confirmed"] - r["true"] for r in rows])
    return (f"| {name} | {kw['S']} | {kw['q_sd']} | {kept:.1f}% | {lifted} | {shares} | "
            f"{bias:+.4f} |")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sims", type=int, default=300)
    parser.add_argument("--trials", type=int, default=8)
    parser.add_argument("--search-seeds", type=int, nargs="+", default=[5, 10])
    parser.add_argument("--seeds", type=int, default=10)
    parser.add_argument("--q-sd", type=float, nargs="+", default=[0.005, 0.01, 0.02])
    parser.add_argument("--out", default=None)
    args = parser.parse_args()
    T = args.trials
    lines = [f"# Tune, then confirm: simulated pull requests ({args.sims} per row)", "",
             f"`python benchmarks/tuning_sim.py --sims {args.sims} --trials {T} --seeds "
             f"{args.seeds} --search-seeds {' '.join(map(str, args.search_seeds))} --q-sd "
             f"{' '.join(map(str, args.q_sd))}`: {T} trials × S search seeds per arm (both "
             f"arms search the same reserved seeds), the winner confirmed on seeds "
             f"0-{args.seeds - 1}; per-run noise sd: split {SPLIT_SD}, initialisation "
             f"{INIT_SD}, test sampling {TEST_SD}, validation sampling {VAL_SD}; "
             "configurations' true accuracies 0.80 ± q sd. The real gate (`compare_reports`, α "
             "0.05, δ 1 point, first look at the confirmation seeds; judged alone on the search "
             "seeds). Same winner: both searches picked the same configuration; steady: each "
             "winner chosen in at least 80% of bootstrap resamples of its search seeds "
             "(`winner_stability`, stated on the verdict). Optimism: the candidate winner's "
             "validation mean on the search seeds minus on the confirmation seeds. Bias: mean read"
             " Δ minus the true Δ "
             "of the two winners.", "",
             "| scenario | S | q sd | same winner | optimism | judged on | verdicts | NOT WORSE "
             f"when both winners are steady (≥ {STEADY:.0%} of resamples; share of PRs) | bias |",
             "|---|---|---|---|---|---|---|---|---|"]
    seed = 0
    for S in args.search_seeds:
        for q_sd in args.q_sd:
            common = dict(S=S, n=args.seeds, q_sd=q_sd)
            for name, kw in (("innocent change", dict(trials=T, cand_trials=T, drop=0.0)),
                             ("2-point drop", dict(trials=T, cand_trials=T, drop=0.02))):
                seed += 1
                lines += scenario(name, args.sims, seed, **kw, **common)
    seed += 1
    mismatch = dict(trials=T, cand_trials=2 * T, drop=0.0, S=args.search_seeds[-1],
                    n=args.seeds, q_sd=args.q_sd[-1])
    lines += scenario(f"innocent, candidate {2 * T} trials vs {T}", args.sims, seed, **mismatch)
    lines += ["", f"## With the incumbent rule (Holm level {SELECTION_ALPHA:g})", "",
              "The same pull requests, the candidate's search given the baseline's winner "
              "(`tune(..., incumbent=baseline)`): it keeps that configuration unless a challenger "
              "beats it on validation over the search seeds (one-sided paired t per challenger, "
              f"Holm over the {T - 1} challengers at {SELECTION_ALPHA:g}). Judged on the "
              f"{args.seeds} fresh confirmation seeds. Kept: the candidate's winner is the "
              "baseline's. Challenger 2 points better: the change makes the baseline winner's "
              "neighbour in the space 2 points better than the baseline's winner (every other "
              "configuration as before); switched: the candidate's search picked it.", "",
              "| scenario | S | q sd | kept the baseline's winner | switched to the better "
              "challenger | verdicts | bias |", "|---|---|---|---|---|---|---|"]
    for S in args.search_seeds:
        for q_sd in args.q_sd:
            common = dict(S=S, n=args.seeds, q_sd=q_sd, trials=T, cand_trials=T)
            for name, kw in (("innocent change", dict(drop=0.0)),
                             ("2-point drop", dict(drop=0.02)),
                             ("challenger 2 points better", dict(drop=0.0, lift=0.02))):
                seed += 1
                lines.append(incumbent_scenario(name, args.sims, seed, **kw, **common))
    seed += 1
    lines.append(incumbent_scenario(f"innocent, candidate {2 * T} trials vs {T}", args.sims,
                                    seed, **mismatch))
    text = "\n".join(lines) + "\n"
    print(text)
    if args.out:
        Path(args.out).write_text(text, encoding="utf-8")


if __name__ == "__main__":
    main()
