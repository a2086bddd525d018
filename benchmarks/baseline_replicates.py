"""Baseline replicates and the leak guard on real Cora: the innocent paired sd, seeds per PR and
the gate's rates at R = 1, 2, 4 replicates per baseline seed; and how often the leak guard flags
a BETTER that is genuine, innocent or a planted test-label leak.

A pool, per seed (``SEED_OFFSET + 0..pool-1``), of runs of ``gate_quality_cora``'s in-process
GCN (PyG's example layers and loop, gnn-benchmark's per-seed split, 200 epochs), each with its
test and validation accuracy under both epoch rules, kept in ``--values`` (a rerun trains only
what the file lacks):

- ``salt 0`` .. ``salt 4``: the GCN unsalted and under ``graphnetz calibrate``'s salts 1-4
  (:func:`~pytest_graphnetz.gates.calibration.salting.salted_models`: other initialisation and
  dropout draws, the same data and split): a baseline with R replicates holds salts 0..R-1, an
  innocent candidate is salt 4 (never one of the baseline's);
- ``test leak``: the GCN trained on the training **and test** nodes' labels (a planted leak:
  the test gain is not matched on validation).

From the pool (no training), per R:

- the innocent paired sd of d_s = cand_s − mean(replicates_s) and the seeds a PR needs for
  δ = 1 point (``stats.planning``, the gate's planner);
- the design's rates: false REGRESSED of the innocent candidate, and wrong NOT WORSE of the
  candidate minus 1 point on every seed, by simulation (``--trials``, normal d_s at the pool's
  paired sd, the gate's ``decide_look`` at one look of ``--seeds`` seeds) and on resampled
  ``--seeds``-seed subsets of the pool (overlapping: a check, no interval);
- the leak guard (:func:`pytest_graphnetz.gates.verdicts.leak.leak_suspicion`) on the pool's
  innocent and leaked candidates, and by simulation (genuine gains) at the pool's paired sds;
- the committed ``decisive_cora_values.json`` pool (60 seeds of the same GCN, salts 0 and 1,
  bit-for-bit the runs here) for the R = 1 paired sd and the variance model's R = 2, 4.

    python benchmarks/baseline_replicates.py --npz /work/shared/data/cora.npz --pool 24
    python benchmarks/baseline_replicates.py --from-values     # the committed pool, no training
    python benchmarks/baseline_replicates.py --npz ... --time-one     # one run, timed
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
import time
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
import gate_quality_cora as gqc  # noqa: E402
from _tables import wilson  # noqa: E402

SEED_OFFSET = gqc.SEED_OFFSET
SALTS = (0, 1, 2, 3, 4)
CANDIDATE_SALT = 4
REPLICATES = (1, 2, 4)
REPLICATES_SIM = (1, 2, 3)
RULES = ("final", "best_val")
DELTA = 0.01
ALPHA = 0.05
DEFAULT_VALUES = HERE / "baseline_replicates_values.json"
DEFAULT_OUT = HERE / "baseline_replicates_results.md"


# -- the pool ---------------------------------------------------------------------------------


def train_on_test_labels(model: Any, data: Any, *, task: Any, device: Any) -> dict:
    """gate_quality_cora's loop with the test nodes' labels in the training loss: a leak."""
    leaked = data.clone()
    leaked.train_mask = data.train_mask | data.test_mask
    history = gqc.train_like_the_examples(model, _Masks(leaked, data), task=task, device=device)
    return history


class _Masks:
    """``data`` whose ``train_mask`` is ``leaked``'s (evaluation masks stay ``data``'s)."""

    def __init__(self, leaked: Any, data: Any) -> None:
        self._data = data
        self.train_mask = leaked.train_mask

    def __getattr__(self, name: str) -> Any:
        return getattr(self._data, name)


def variants() -> dict[str, tuple[Any, str]]:
    """variant -> (model factory, trainer kind)."""
    from pytest_graphnetz.gates.calibration.salting import SaltedFactory

    out: dict[str, tuple[Any, str]] = {"salt 0": (gqc.gcn, "examples")}
    for salt in SALTS[1:]:
        out[f"salt {salt}"] = (SaltedFactory(gqc.gcn, salt), "examples")
    out["test leak"] = (gqc.gcn, "leak")
    return out


def train(npz: str, seeds: Sequence[int], epochs: int, variant: str, root: str,
          cache_dir: str | None = None) -> dict[str, dict[str, list[float]]]:
    """{"test"|"val": {rule: per-seed values}} of one variant."""
    from pytest_graphnetz import Task, run_benchmark
    from pytest_graphnetz.report.values_form import rule_validation, rule_values

    factory, kind = variants()[variant]
    trainer = gqc.train_like_the_examples if kind == "examples" else train_on_test_labels
    task = Task(gqc.TASK, gqc.CoraNpz(npz), kind="node", epochs=epochs, trainer=trainer)
    report = run_benchmark({gqc.TASK: task}, {"GCN": factory}, seeds=list(seeds),
                           device="cpu", root=root, cache_dir=cache_dir)
    return {"test": {r: v.tolist() for r, v in rule_values(report, gqc.TASK, "GCN").items()},
            "val": {r: v.tolist() for r, v in rule_validation(report, gqc.TASK, "GCN").items()}}


def held(data: Mapping, variant: str) -> int:
    block = data["values"].get(variant)
    return len(block["test"]["final"]) if block else 0


def fill_pool(args: argparse.Namespace, path: Path) -> dict:
    """Train what ``path`` lacks, seed by seed (every variant of a seed before the next seed,
    the file written after each run), so a stopped run keeps whole seeds."""
    data = json.loads(path.read_text()) if path.is_file() else {
        "meta": {"epochs": args.epochs, "seed_offset": SEED_OFFSET, "seconds": {}},
        "values": {}}
    if data["meta"]["epochs"] != args.epochs:
        raise SystemExit(f"{path} holds {data['meta']['epochs']}-epoch runs, not {args.epochs}")
    with tempfile.TemporaryDirectory() as root:
        for k in range(args.pool):
            for variant in variants():
                if held(data, variant) != k:
                    continue
                start = time.perf_counter()
                more = train(args.npz, [SEED_OFFSET + k], args.epochs, variant, root,
                             args.cache_dir)
                seconds = data["meta"]["seconds"].setdefault(variant, [])
                seconds.append(round(time.perf_counter() - start, 1))
                block = data["values"].setdefault(variant, {"test": {}, "val": {}})
                for part in ("test", "val"):
                    for rule, vec in more[part].items():
                        block[part].setdefault(rule, []).extend(vec)
                path.write_text(json.dumps(data, indent=1) + "\n")
                print(f"trained {variant}, seed {SEED_OFFSET + k}: {seconds[-1]} s", flush=True)
    return data


# -- the analysis -----------------------------------------------------------------------------


def arrays(data: Mapping) -> dict[str, dict[str, dict[str, np.ndarray]]]:
    """The pool's values, every variant cut to the seeds all variants hold."""
    n = min(held(data, v) for v in variants())
    return {v: {part: {r: np.asarray(x[:n], float) for r, x in by.items()}
                for part, by in d.items()} for v, d in data["values"].items()}


def baseline_mean(pool: Mapping, rule: str, r: int, part: str = "test") -> np.ndarray:
    """What the gate pairs a candidate seed with when the baseline holds salts 0..r-1
    (``Replicates.means``: the own run weighted ``own_weight(r)``)."""
    own = np.asarray(pool["salt 0"][part][rule])
    if r == 1:
        return own
    salted = np.column_stack([pool[f"salt {k}"][part][rule] for k in range(1, r)])
    return paired_values(own, salted)


def paired_values(own: np.ndarray, salted: np.ndarray) -> np.ndarray:
    """The library's pairing (``Replicates.means``) of own runs (shape [m]) and their salted
    reruns (shape [m, R - 1])."""
    from pytest_graphnetz.gates.refreshing.replicates import Replicates

    reps = Replicates(tuple(range(len(own))), {"final": salted})
    return reps.means({"final": own})["final"]


def replicate_sampler(shared: float, r: int, within: float = 0.61, seeds: int = 80):
    """A sampler of paired differences in points, the conformance harness's form
    ``draw(rng, paths, shift) -> D`` (paths, seeds): per seed a data-and-split effect (sd 1.5),
    run noise of sd ``within``, the candidate's noise correlated ``shared`` with the baseline's
    own run, the baseline's R = ``r`` runs paired through ``Replicates.means``."""
    def draw(rng: np.random.Generator, paths: int, shift: float) -> np.ndarray:
        m = paths * seeds
        effect = rng.normal(0, 1.5, m)
        noise = rng.normal(0, within, (m, r + 1))
        own = effect + noise[:, 0]
        cand = effect + shift + shared * noise[:, 0] + np.sqrt(1 - shared ** 2) * noise[:, r]
        base = own if r == 1 else paired_values(own, effect[:, None] + noise[:, 1:r])
        return (cand - base).reshape(paths, seeds)
    return draw


def stream_rates(shared: float, r: int, drop: float, within: float, n: int, trials: int,
                 seed: int) -> tuple[float, float]:
    """(false REGRESSED at no change, REGRESSED at a true drop of ``drop``) of the gate's one
    look at ``n`` seeds when the baseline holds R = ``r`` runs per seed and the candidate keeps
    draw noise correlated ``shared`` with the own run's (sd ``within``). The same draws (``seed``)
    serve every R, so the rows compare like with like."""
    rng = np.random.default_rng(seed)
    m = trials * n
    effect = rng.normal(0, 0.015, m)                  # the seed's data and split
    noise = rng.normal(0, within, (m, 1 + max(REPLICATES_SIM)))
    own = effect + noise[:, 0]
    cand_noise = (shared * noise[:, 0]                 # correlation ``shared`` with the own
                  + np.sqrt(1 - shared ** 2) * noise[:, -1])  # run; last column: the candidate's
    cand = effect + cand_noise
    base = own if r == 1 else paired_values(own, (effect[:, None] + noise[:, 1:r]))
    d = (cand - base).reshape(trials, n)
    return gate_rates(d)["REGRESSED"], gate_rates(d - drop)["REGRESSED"]


def stream_rows(within: float, n: int, trials: int) -> list[list[str]]:
    """Per regime (the candidate's draw noise correlates 0.8 with the own run's, none, or
    0.95: past the 0.9 where the weights stop paying) and R: α and the detection of −δ and of
    the drop R = 1 detects 80% of the time."""
    from scipy import stats as st

    rows = []
    for shared, name in ((0.8, "same stream, correlation 0.8"), (0.0, "independent"),
                         (0.95, "same stream, correlation 0.95")):
        sd1 = within * np.sqrt(2 - 2 * shared)
        t = st.t.ppf(1 - ALPHA, n - 1)
        hard = sd1 * (t + st.norm.ppf(0.8)) / np.sqrt(n)     # R = 1 at about 80%
        for r in REPLICATES_SIM:
            a, p_delta = stream_rates(shared, r, DELTA, within, n, trials, seed=7)
            _, p_hard = stream_rates(shared, r, hard, within, n, trials, seed=7)
            rows.append([name, str(r), wilson(a * trials, trials, 4),
                         wilson(p_delta * trials, trials, 4), f"{100 * hard:.2f}",
                         wilson(p_hard * trials, trials, 4)])
    return rows


def design_rates(sd: float, n: int, trials: int, rng: np.random.Generator,
                 shift: float = 0.0) -> dict[str, float]:
    """REGRESSED / NOT WORSE rates of the gate's one look at ``n`` seeds on normal d_s with
    mean ``-shift`` and sd ``sd`` (``trials`` draws)."""
    d = rng.normal(-shift, sd, size=(trials, n))
    return gate_rates(d)


def gate_rates(d: np.ndarray) -> dict[str, float]:
    """Share of rows of ``d`` (trials x seeds of paired differences) the gate's one-look
    decision reads REGRESSED, NOT WORSE, BETTER (paired t at ALPHA, δ DELTA)."""
    from scipy import stats as st

    n = d.shape[1]
    mean = d.mean(axis=1)
    se = d.std(axis=1, ddof=1) / np.sqrt(n)
    t = st.t.ppf(1 - ALPHA, n - 1)
    regressed = mean + t * se < 0          # one-sided test of "mean d >= 0" rejects
    better = mean - t * se > 0
    not_worse = ~regressed & ~better & (mean - t * se > -DELTA)
    return {"REGRESSED": float(regressed.mean()), "NOT WORSE": float(not_worse.mean()),
            "BETTER": float(better.mean())}


def kernel_check(d: np.ndarray) -> dict[str, float]:
    """The same rates through the library's own comparison (``stats.decisions.compare``)."""
    from pytest_graphnetz.stats.decisions import DecisionSettings, compare

    out = {"REGRESSED": 0, "NOT WORSE": 0, "BETTER": 0}
    settings = DecisionSettings(kind="not_worse", test="paired-t", margin=0.0, min_effect=DELTA,
                                alpha=ALPHA)
    for row in d:
        comp = compare(row, np.zeros_like(row), settings, higher_is_better=True)
        name = str(comp.decision.verdict)
        if name in out:
            out[name] += 1
    return {k: v / len(d) for k, v in out.items()}


def replicate_rows(pool: Mapping, rule: str, n: int, trials: int, resamples: int,
                   rng: np.random.Generator) -> list[list[str]]:
    from pytest_graphnetz.stats.planning import seeds_for_min_effect

    cand = pool[f"salt {CANDIDATE_SALT}"]["test"][rule]
    rows = []
    for r in REPLICATES:
        d = cand - baseline_mean(pool, rule, r)
        sd = float(np.std(d, ddof=1))
        need = seeds_for_min_effect(sd, DELTA, alpha=ALPHA)
        sim0 = design_rates(sd, n, trials, rng)
        sim1 = design_rates(sd, n, trials, rng, shift=DELTA)
        k = min(n, len(d))
        idx = np.array([rng.choice(len(d), k, replace=False) for _ in range(resamples)])
        pool0 = gate_rates(d[idx])
        pool1 = gate_rates(d[idx] - DELTA)
        rows.append([str(r), f"{100 * sd:.2f}", str(need),
                     f"{sim0['REGRESSED']:.4f}", f"{sim1['NOT WORSE']:.4f}",
                     f"{pool0['REGRESSED']:.3f}", f"{pool1['NOT WORSE']:.3f}"])
    return rows


def kernel_rows(pool: Mapping, n: int, trials: int, rng: np.random.Generator) -> list[list[str]]:
    """The simulation's decision against the library's kernel on a few thousand draws."""
    rows = []
    cand = pool[f"salt {CANDIDATE_SALT}"]["test"]["final"]
    for r in REPLICATES:
        sd = float(np.std(cand - baseline_mean(pool, "final", r), ddof=1))
        for shift, name in ((0.0, "REGRESSED"), (DELTA, "NOT WORSE")):
            d = rng.normal(-shift, sd, size=(trials, n))
            rows.append([str(r), f"{-100 * shift:+.0f} pt", name,
                         f"{gate_rates(d)[name]:.4f}", f"{kernel_check(d)[name]:.4f}"])
    return rows


def correlation_rows(pool: Mapping, rule: str) -> list[list[str]]:
    """Why R helps: the paired variance model (independent candidate, own run weighted w)
    σ²(1−ρ)(1 + w² + (1 − w)²/(R − 1)) against the pool."""
    runs = np.array([pool[f"salt {k}"]["test"][rule] for k in SALTS])   # [salt, seed]
    sigma2 = float(np.mean(np.var(runs, axis=1, ddof=1)))
    within = float(np.mean(np.var(runs, axis=0, ddof=1)))              # σ²(1−ρ)
    cand = pool[f"salt {CANDIDATE_SALT}"]["test"][rule]
    rows = []
    for r in REPLICATES:
        sd = float(np.std(cand - baseline_mean(pool, rule, r), ddof=1))
        rows.append([str(r), f"{100 * np.sqrt(within * variance_factor(r)):.2f}",
                     f"{100 * sd:.2f}"])
    return rows, sigma2, within


def variance_factor(r: int) -> float:
    """var d over the within-seed variance for an independent candidate at R = ``r``."""
    from pytest_graphnetz.gates.refreshing.replicates import own_weight

    w = own_weight(r)
    return 1 + w * w + ((1 - w) ** 2 / (r - 1) if r > 1 else 0.0)


def committed_pool_line() -> str:
    """R = 1 on the committed 60-seed pool, and what the variance model makes of R = 2, 4."""
    pool = json.loads((HERE / "decisive_cora_values.json").read_text())["GCN (in-process)"]
    d = np.asarray(pool["salted"]) - np.asarray(pool["baseline"])
    sd = float(np.std(d, ddof=1))
    within = sd / np.sqrt(2)
    model = ", ".join(f"R = {r}: {100 * within * np.sqrt(variance_factor(r)):.2f}"
                      for r in (2, 4))
    return (f"On the committed `decisive_cora_values.json` pool ({len(d)} seeds, salt 1 − salt "
            f"0, `final`): R = 1 paired sd {100 * sd:.2f} pt; the variance model then gives "
            f"{model} pt.")


def leak_rows(pool: Mapping, rule: str) -> list[list[str]]:
    """The leak guard on the pool's candidates against the unsalted baseline (R = 1), all
    pool seeds: innocent, leaked."""
    from pytest_graphnetz.gates.verdicts.leak import leak_suspicion

    base = pool["salt 0"]
    cases = {"innocent (salt 4 vs salt 0)": (pool[f"salt {CANDIDATE_SALT}"], base),
             "test leak (leak vs salt 0)": (pool["test leak"], base)}
    rows = []
    for name, (cand, ref) in cases.items():
        dt = cand["test"][rule] - ref["test"][rule]
        dv = cand["val"][rule] - ref["val"][rule]
        s = leak_suspicion(dt, dv, base_test=ref["test"][rule])
        rows.append([name, f"{100 * dt.mean():+.2f}", f"{100 * dv.mean():+.2f}",
                     "flagged" if s is not None else "quiet",
                     "" if s is None else s.reason])
    return rows


def leak_subset_rows(pool: Mapping, rule: str, n: int, resamples: int,
                     rng: np.random.Generator) -> list[list[str]]:
    """False flags on resampled ``n``-seed subsets of the pool (overlapping)."""
    from pytest_graphnetz.gates.verdicts.leak import leak_suspicion

    base = pool["salt 0"]
    cases = {"innocent": (pool[f"salt {CANDIDATE_SALT}"], base),
             "test leak": (pool["test leak"], base)}
    rows = []
    for name, (cand, ref) in cases.items():
        dt_all = cand["test"][rule] - ref["test"][rule]
        dv_all = cand["val"][rule] - ref["val"][rule]
        flags = 0
        for _ in range(resamples):
            idx = rng.choice(len(dt_all), min(n, len(dt_all)), replace=False)
            flags += leak_suspicion(dt_all[idx], dv_all[idx],
                                    base_test=ref["test"][rule][idx]) is not None
        rows.append([name, str(min(n, len(dt_all))), str(resamples),
                     f"{flags / resamples:.3f}"])
    return rows


def leak_simulation_rows(pool: Mapping, rule: str, n: int, trials: int,
                         rng: np.random.Generator) -> list[list[str]]:
    """False flags by simulation: a genuine gain g on test and validation alike, d_s normal
    with the pool's paired test and validation sds and their correlation; and the leak's
    pooled shape (test gain, validation gain) for detection."""
    from pytest_graphnetz.gates.verdicts.leak import leak_suspicion

    base = pool["salt 0"]
    cand = pool[f"salt {CANDIDATE_SALT}"]
    dt = cand["test"][rule] - base["test"][rule]
    dv = cand["val"][rule] - base["val"][rule]
    cov = np.cov(np.vstack([dt, dv]))
    seed_sd = float(np.std(base["test"][rule], ddof=1))
    leak_dt = pool["test leak"]["test"][rule] - base["test"][rule]
    leak_dv = pool["test leak"]["val"][rule] - base["val"][rule]
    rows = []
    gains = {"innocent (0)": (0.0, 0.0), "genuine +2 pt": (0.02, 0.02),
             "genuine +5 pt": (0.05, 0.05),
             "leak as pooled": (float(leak_dt.mean()), float(leak_dv.mean())),
             "half the leak": (float(leak_dt.mean()) / 2, float(leak_dv.mean()) / 2)}
    for name, (gt, gv) in gains.items():
        draws = rng.multivariate_normal([gt, gv], cov, size=trials * n).reshape(trials, n, 2)
        base_test = rng.normal(0.8, seed_sd, size=(trials, n))
        flags = sum(leak_suspicion(x[:, 0], x[:, 1], base_test=b) is not None
                    for x, b in zip(draws, base_test, strict=True))
        rows.append([name, f"{100 * gt:+.1f}", f"{100 * gv:+.1f}", str(n), str(trials),
                     f"{flags / trials:.4f}"])
    return rows


def leak_promise_rows(pool: Mapping, rule: str, trials: int,
                      rng: np.random.Generator) -> list[list[str]]:
    """The guard's two promises at 5, 10 and 20 seeds, by simulation at the pool's seed sd
    and paired covariance: a genuine gain of 7.5 seed sds in a cell without validation (the
    spread rule) is flagged at most 5% of the time; a gross leak (+5 points on test,
    validation flat or down 2 points) at least 99%."""
    from pytest_graphnetz.gates.verdicts.leak import leak_suspicion

    base = pool["salt 0"]
    cand = pool[f"salt {CANDIDATE_SALT}"]
    cov = np.cov(np.vstack([cand["test"][rule] - base["test"][rule],
                            cand["val"][rule] - base["val"][rule]]))
    seed_sd = float(np.std(base["test"][rule], ddof=1))
    cases = {"genuine +7.5 seed sds, no validation": (7.5 * seed_sd, None),
             "leak +5 pt, validation flat": (0.05, 0.0),
             "leak +5 pt, validation −2 pt": (0.05, -0.02)}
    rows = []
    for name, (gt, gv) in cases.items():
        for n in (5, 10, 20):
            draws = rng.multivariate_normal([gt, gv or 0.0], cov, size=(trials, n))
            base_test = rng.normal(0.8, seed_sd, size=(trials, n))
            flags = sum(leak_suspicion(x[:, 0], None if gv is None else x[:, 1],
                                       base_test=b) is not None
                        for x, b in zip(draws, base_test, strict=True))
            rows.append([name, f"{100 * gt:+.1f}", str(n), str(trials),
                         wilson(flags, trials, 4)])
    return rows


def table(header: Sequence[str], rows: Sequence[Sequence[str]]) -> str:
    lines = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    lines += ["| " + " | ".join(r) + " |" for r in rows]
    return "\n".join(lines)


def analyse(data: Mapping, args: argparse.Namespace) -> str:
    pool = arrays(data)
    n_pool = len(pool["salt 0"]["test"]["final"])
    rng = np.random.default_rng(args.rng_seed)
    args.subset = min(args.seeds, n_pool)   # resampled subsets cannot exceed the pool
    meta = data["meta"]
    out = [f"# Baseline replicates and the leak guard on real Cora (GCN, "
           f"{meta['epochs']} epochs)", "",
           f"Written by `python benchmarks/baseline_replicates.py {' '.join(args.argv)}` from "
           f"`{Path(args.values).name}`: {n_pool} seeds per variant "
           f"({len(pool)} variants, {n_pool * len(pool)} runs of {meta['epochs']} epochs; "
           "median wall seconds per run on the shared 2-core machine: "
           + ", ".join(f"{k} {np.median(v):.0f}" for k, v in meta["seconds"].items())
           + ").", ""]
    for rule in RULES:
        out += [f"## Replicates, epoch rule `{rule}`", "",
                f"d_s = candidate_s − the gate's weighted mean of the baseline's R replicates "
                f"(salts 0..R−1, `Replicates.means`), the candidate salt {CANDIDATE_SALT} "
                "(independent of every baseline run); seeds per PR: what the planner asks for "
                f"δ = 1 point at α = {ALPHA}; the design's rates at one look of {args.seeds} "
                f"seeds by simulation ({args.trials} normal trials per row at the pool's sd) and "
                f"on {args.resamples} resampled {args.subset}-seed subsets of the pool "
                "(overlapping: a check, no interval). Wrong NOT WORSE: the candidate minus "
                "1 point on every seed.", "",
                table(["R", "innocent paired sd (pt)", "seeds per PR (δ 1 pt)",
                       "false REGRESSED (sim)", "wrong NOT WORSE at −1 pt (sim)",
                       "false REGRESSED (pool)", "wrong NOT WORSE at −1 pt (pool)"],
                      replicate_rows(pool, rule, args.seeds, args.trials, args.resamples, rng)),
                ""]
        rows, sigma2, within = correlation_rows(pool, rule)
        out += [f"The variance model: seed sd σ = {100 * np.sqrt(sigma2):.2f} pt, "
                f"within-seed sd σ√(1−ρ) = {100 * np.sqrt(within):.2f} pt (over salts 0-4), "
                "so, the candidate independent, var d = σ²(1−ρ)(1 + w² + (1 − w)²/(R − 1)) "
                "with w the own run's weight:", "",
                table(["R", "model sd (pt)", "measured sd (pt)"], rows), ""]
        if rule == "final":
            out += [committed_pool_line(), ""]
    within = float(np.sqrt(correlation_rows(pool, "final")[2]))
    out += ["## Replicates never cost power", "",
            "Simulated pull requests, one look of "
            f"{args.seeds} seeds, {args.trials} trials per row, every seed's runs sharing its "
            f"data and split (sd 1.5 pt) and drawing their own noise at the pool's within-seed "
            f"sd ({100 * within:.2f} pt, `final`); the candidate's draw noise correlates 0.8 "
            "with the baseline's own run's (a learning-rate, dropout-rate or loss tweak under "
            "the same seed) "
            "or not at all (another architecture); a last regime at correlation 0.95 shows "
            "the limit (the weights are below R = 1's variance for every correlation below "
            "0.9). The baseline holds R runs per seed and the "
            "gate pairs with `Replicates.means` (the real code: the own run weighted "
            "(1 + 0.8(R − 1))/R). The same draws serve every R. Rates with 95% Wilson intervals; "
            "'hard drop': the drop R = 1 detects about 80% of the time in that regime.", "",
            table(["candidate", "R", "false REGRESSED", "detects −1 pt", "hard drop (pt)",
                   "detects the hard drop"],
                  stream_rows(within, args.seeds, args.trials)), ""]
    out += ["The simulation's decision (a vectorised paired t) against the library's own "
            f"`stats.decisions.compare` on {args.kernel_trials} draws:", "",
            table(["R", "shift", "verdict", "rate (simulation)", "rate (compare)"],
                  kernel_rows(pool, args.seeds, args.kernel_trials, rng)), ""]
    for rule in RULES:
        out += [f"## The leak guard, epoch rule `{rule}`", "",
                f"Every pool seed ({n_pool}), against the reference named:", "",
                table(["candidate", "test Δ (pt)", "validation Δ (pt)", "guard", "why"],
                      leak_rows(pool, rule)), "",
                f"On {args.resamples} resampled {args.subset}-seed subsets of the pool:", "",
                table(["candidate", "seeds", "subsets", "flagged"],
                      leak_subset_rows(pool, rule, args.seeds, args.resamples, rng)), "",
                f"By simulation ({args.leak_trials} trials per row, {args.seeds} seeds, paired "
                "test and validation differences normal with the pool's innocent covariance; "
                "a genuine gain moves both alike):", "",
                table(["case", "test gain (pt)", "validation gain (pt)", "seeds", "trials",
                       "flagged"],
                      leak_simulation_rows(pool, rule, args.seeds, args.leak_trials, rng)), "",
                f"The guard's promises at 5, 10 and 20 seeds ({args.leak_trials} simulated "
                "trials per row, the pool's paired covariance; the baseline's seed sd "
                f"{100 * np.std(pool['salt 0']['test'][rule], ddof=1):.2f} pt; rates with 95% "
                "Wilson intervals): a genuine gain of 7.5 seed sds in a cell without "
                "validation (the spread rule, which plans from the 95% upper bound of the "
                "seed sd) flagged ≤ 5%; a gross leak flagged ≥ 99%.", "",
                table(["case", "test gain (pt)", "seeds", "trials", "flagged"],
                      leak_promise_rows(pool, rule, args.leak_trials, rng)), ""]
    return "\n".join(out) + "\n"


def main(argv: Sequence[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--npz")
    p.add_argument("--pool", type=int, default=10)
    p.add_argument("--epochs", type=int, default=gqc.EPOCHS)
    p.add_argument("--values", default=str(DEFAULT_VALUES))
    p.add_argument("--cache-dir", default=None, help="the triple cache (a rerun reuses it)")
    p.add_argument("--out", default=str(DEFAULT_OUT))
    p.add_argument("--from-values", action="store_true")
    p.add_argument("--time-one", action="store_true")
    p.add_argument("--seeds", type=int, default=10)
    p.add_argument("--trials", type=int, default=20000)
    p.add_argument("--kernel-trials", type=int, default=2000)
    p.add_argument("--leak-trials", type=int, default=20000)
    p.add_argument("--resamples", type=int, default=2000)
    p.add_argument("--rng-seed", type=int, default=44)
    args = p.parse_args(argv)
    args.argv = list(sys.argv[1:] if argv is None else argv)
    if args.time_one:
        with tempfile.TemporaryDirectory() as root:
            start = time.perf_counter()
            train(args.npz, [SEED_OFFSET], args.epochs, "salt 0", root)
            print(f"one run: {time.perf_counter() - start:.1f} s (loading included)")
        return 0
    path = Path(args.values)
    if args.from_values:
        data = json.loads(path.read_text())
    else:
        if not args.npz:
            p.error("--npz is needed to train (or --from-values)")
        data = fill_pool(args, path)
    text = analyse(data, args)
    Path(args.out).write_text(text)
    print(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
