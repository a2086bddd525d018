"""Does CI decide at real noise? Cora, an in-process GCN and PyG's own gcn.py.

Per model, a pool of per-seed test accuracies is trained once and kept in a JSON file
(``--values``; a rerun trains only what the file lacks): the baseline, and the baseline under
``graphnetz calibrate``'s salted seeds (an innocent change: other initialisation and dropout
draws, the same data and split). PyG's ``examples/gcn.py`` runs as a command task, three lines
added to a temporary copy (``command_task_cora.gateable_copy``; its Planetoid split is fixed),
salted through the seed the script receives (``calibration.salting.salted_seed_map``); the
in-process GCN is ``gate_quality_cora``'s (PyG's example layers, gnn-benchmark's per-seed split).

The verdicts are then simulated from the pool, without training. A pull request is the
candidate on the first looks of a random order of the pool's seeds (relabelled 0, 1, 2, ...: a
look is a prefix) against a baseline holding the budget's seeds; the candidate is

- ``innocent``: the salted values;
- ``-1 point`` / ``-2 points``: the salted values minus 0.01 / 0.02 on every seed (an injected
  uniform drop: the paired noise of a real change plus a known shift);

judged at δ 1 point, α 0.05, under these setups: today's one look at 10 seeds; the same at the
δ 10 seeds resolve (``--graphnetz-min-effect=resolvable``); and the example workflow's loop
(docs/ci.md) up to each budget: looks 10, 20, 40, ... while the cell is open. Rates come from
the design's walk (``stats.sequential.run_schedule``, the gate's own ``decide_look``) on
``--trials`` pool resamples and on normal differences at the pool's paired sd; the real loop
(``compare_reports``, the advice, ``next_look`` on the rows' JSON numbers) runs on
``--loop-trials`` resamples, and its verdicts are checked against the walk's. A frontier table
gives the design at paired sds of 1-3 points, whatever the model. Printed per row: innocent NOT
WORSE, false REGRESSED, -1 point REGRESSED and NOT WORSE, -2 points REGRESSED, seeds and wall
time per pull request.

    python benchmarks/decisive_cora.py --from-values          # the committed pools, no training
    python benchmarks/decisive_cora.py --npz ../shared/data/cora.npz \\
        --gcn ../shared/reference/pyg-examples/gcn.py --pool 100 --command-pool 50 --train 0
    python benchmarks/decisive_cora.py --npz ... --gcn ... --quick   # a tiny end-to-end run
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
import command_task_cora as ctc  # noqa: E402
import gate_quality_cora as gqc  # noqa: E402

MODELS = ("GCN (in-process)", "gcn.py (command task)")
SCENARIOS = {"innocent": 0.0, "-1 point": 0.01, "-2 points": 0.02}
FIRST_LOOK = 10
ALPHA = 0.05
DELTA = 0.01   # the library's default δ: one point
DEFAULT_VALUES = HERE / "decisive_cora_values.json"
QUICK = {"pool": 12, "command_pool": 4, "epochs": 50, "budgets": [10], "trials": 2000,
         "loop_trials": 10}


# -- the pool: trained once, kept in --values ----------------------------------------------------


def train_in_process(npz: str, seeds: Sequence[int], epochs: int, root: str
                     ) -> tuple[dict[str, list[float]], float]:
    from pytest_graphnetz import run_benchmark
    from pytest_graphnetz.gates.calibration.salting import salted_models

    task = {gqc.TASK: gqc.cora_task(npz, epochs)}
    out: dict[str, list[float]] = {}
    start = time.perf_counter()
    for variant, models in (("baseline", {"GCN": gqc.gcn}),
                            ("salted", salted_models({"GCN": gqc.gcn}))):
        report = run_benchmark(task, models, seeds=list(seeds), device="cpu", root=root)
        out[variant] = [float(v) for v in report.values(gqc.TASK, "GCN")]
    return out, (time.perf_counter() - start) / (2 * len(seeds))


def train_command(npz: Path, script: Path, seeds: Sequence[int], epochs: int
                  ) -> tuple[dict[str, list[float]], float]:
    from pytest_graphnetz import run_benchmark
    from pytest_graphnetz.gates.calibration.salting import salted_seed_map
    from pytest_graphnetz.runner.command import Command, DataFiles
    from pytest_graphnetz.runner.tasks.base import Task

    out: dict[str, list[float]] = {}
    with tempfile.TemporaryDirectory(prefix="graphnetz-decisive-") as tmp:
        project = Path(tmp)
        data = ctc.planetoid_from_npz(npz, project, split_seed=0)
        copy = project / "examples" / "gcn.py"
        ctc.gateable_copy(script, copy)
        tasks = {"cora": Task("cora", DataFiles([data]), kind="command")}
        command = {"GCN": Command([sys.executable, str(copy), "--epochs", str(epochs)])}
        start = time.perf_counter()
        for variant, seed_map in (("baseline", None), ("salted", salted_seed_map())):
            report = run_benchmark(tasks, command, seeds=list(seeds), device="cpu",
                                   seed_map=seed_map)
            out[variant] = [float(v) for v in report.values("cora", "GCN")]
        return out, (time.perf_counter() - start) / (2 * len(seeds))


def _first_seed(model: str) -> int:
    return gqc.SEED_OFFSET if model == MODELS[0] else 0


def _merge(path: Path, model: str, values: Mapping[str, list[float]], seconds: float,
           epochs: int) -> None:
    """Append one chunk of ``model``'s pool to ``path``, under a lock: two processes (one per
    model, one per core) write the same file."""
    from filelock import FileLock

    with FileLock(str(path) + ".lock"):
        kept = json.loads(path.read_text()) if path.is_file() else {}
        have = kept.get(model)
        if not have:
            have = {"baseline": [], "salted": [], "seconds": 0.0, "epochs": epochs}
        runs = len(have["baseline"])
        for variant in ("baseline", "salted"):
            have[variant] = have[variant] + list(values[variant])
        added = len(values["baseline"])
        have["seconds"] = (have["seconds"] * runs + seconds * added) / (runs + added)
        kept[model] = have
        tmp = path.with_suffix(".tmp")
        tmp.write_text(json.dumps(kept, indent=1) + "\n")
        tmp.replace(path)


def pool(args: argparse.Namespace) -> dict[str, Any]:
    """``{model: {"baseline": [...], "salted": [...], "seconds": per run, "epochs": ...}}``,
    read from ``args.values`` where it holds the same configuration; what it lacks is trained
    in chunks of ``args.chunk`` seeds, each appended to the file as it ends (an interrupted run
    keeps what it trained, and the next one goes on from there)."""
    kept = json.loads(args.values.read_text()) if args.values.is_file() else {}
    if args.from_values:   # no training: the models the file holds
        return kept
    wanted = {MODELS[0]: args.pool, MODELS[1]: args.command_pool}
    for model, size in wanted.items():
        if args.train is not None and model != MODELS[args.train]:
            continue
        while True:
            kept = json.loads(args.values.read_text()) if args.values.is_file() else {}
            have = kept.get(model)
            if have and have["epochs"] != args.epochs:
                raise SystemExit(f"{args.values} holds {model} at {have['epochs']} epochs, not "
                                 f"{args.epochs}: pass another --values to train a new pool")
            done = len(have["baseline"]) if have else 0
            if done >= size:
                break
            first = _first_seed(model) + done
            seeds = range(first, first + min(args.chunk, size - done))
            print(f"training {model}: seeds {seeds.start}..{seeds.stop - 1} of {size} x 2 "
                  f"variants, {args.epochs} epochs", file=sys.stderr, flush=True)
            if model == MODELS[0]:
                values, seconds = train_in_process(args.npz, seeds, args.epochs, args.root)
            else:
                values, seconds = train_command(Path(args.npz), Path(args.gcn), seeds,
                                                args.epochs)
            _merge(args.values, model, values, seconds, args.epochs)
    kept = json.loads(args.values.read_text())
    return {m: kept[m] for m in wanted if m in kept}


# -- the simulation: verdicts from the pool, through the design and the gate ---------------------


def _report(values: np.ndarray) -> Any:
    from pytest_graphnetz import BenchmarkReport

    return BenchmarkReport.from_arrays(values[None, None, :], tasks=["cora"], models=["GCN"],
                                       seeds=range(len(values)), metric="accuracy")


def pull_request(base: np.ndarray, cand: np.ndarray, *, budget: int) -> tuple[str, int]:
    """One simulated pull request through the real CI loop (docs/ci.md): the gate at 10 seeds,
    then while a row is INCONCLUSIVE the look ``next_look`` reads from the rows' JSON numbers
    (the advice, capped at the budget). Returns the verdict it ends on and the seeds it ran."""
    from pytest_graphnetz.cli.nextlook import next_look
    from pytest_graphnetz.gates import compare_reports
    from pytest_graphnetz.plugin.summary import JSON_SCHEMA, JSON_VERSION, verdict_stats

    baseline = _report(base[:budget])
    seeds = FIRST_LOOK
    while True:
        (v,) = compare_reports(_report(cand[:seeds]), baseline)
        row = {"verdict": str(v.verdict), "stats": verdict_stats(v)}
        look = next_look({"schema": JSON_SCHEMA, "version": JSON_VERSION, "rows": [row]},
                         budget=budget, current=seeds)
        if look.seeds is None:
            return str(v.verdict), seeds
        seeds = look.seeds


def walk(D: np.ndarray, *, budget: int, min_effect: float, first: int = FIRST_LOOK
         ) -> tuple[np.ndarray, np.ndarray]:
    """The design's walk (``stats.sequential.run_schedule``: the same ``decide_look`` as the
    gate, tied to it cell for cell by tests/cover/test_stats_design.py) on paired differences ``D``
    (trials, >= budget): looks ``first`` (10), 20, 40, ... up to ``budget``, each taken while the
    cell is open. Returns the verdict names and the seeds each trial used."""
    from pytest_graphnetz.stats.boundaries import design
    from pytest_graphnetz.stats.sequential import run_schedule

    verdicts, used = run_schedule(D[:, :budget], design(first, budget, alpha=ALPHA),
                                  min_effect=min_effect)
    return np.array([str(v) for v in verdicts]), used


def resampled(values: Mapping[str, Any], trials: int, rng: np.random.Generator
              ) -> dict[str, np.ndarray]:
    """Per scenario, ``trials`` rows of paired differences candidate - baseline: each row a
    random order of the pool's seeds (trials overlap: the pool is finite), the candidate the
    salted run minus the scenario's drop."""
    diff = np.subtract(values["salted"], values["baseline"])
    orders = np.array([rng.permutation(diff.size) for _ in range(trials)])
    return {name: diff[orders] - drop for name, drop in SCENARIOS.items()}


def normal_model(sd: float, size: int, trials: int, rng: np.random.Generator
                 ) -> dict[str, np.ndarray]:
    """The same scenarios with paired differences drawn normal at sd ``sd`` and mean exactly
    0 (innocent) or minus the drop: the design's rates at the measured noise, past the pool."""
    Z = rng.standard_normal((trials, size)) * sd
    return {name: Z - drop for name, drop in SCENARIOS.items()}


def rates(verdicts: Mapping[str, np.ndarray], used: Mapping[str, np.ndarray]) -> dict[str, Any]:
    def p(scenario: str, *names: str) -> float:
        return float(np.isin(verdicts[scenario], names).mean())

    return {"innocent NOT WORSE": p("innocent", "NOT WORSE", "BETTER"),
            "false REGRESSED": p("innocent", "REGRESSED"),
            "-1 pt REGRESSED": p("-1 point", "REGRESSED"),
            "-1 pt NOT WORSE": p("-1 point", "NOT WORSE", "BETTER"),
            "-2 pt REGRESSED": p("-2 points", "REGRESSED"),
            "seeds": {s: float(np.mean(u)) for s, u in used.items()}}


def setups(sd: float, pool_size: int, budgets: Sequence[int]
           ) -> list[tuple[str, int, float, int]]:
    """(label, budget, δ, first look): today's one look at 10 seeds (δ 1 point, and δ at what 10
    seeds resolve at the measured sd, ``--graphnetz-min-effect=resolvable``), then the CI loop up
    to each budget the pool holds; then the loop up to 40 seeds from a first look a project may
    declare below 10 (``graphnetz_seeds = 8``: ``decisive_cora_options.py`` weighs it)."""
    from pytest_graphnetz.gates.calibration.resolution import resolvable_min_effect

    resolvable = resolvable_min_effect(sd, FIRST_LOOK, alpha=ALPHA)
    out = [("today: 10 seeds", FIRST_LOOK, DELTA, FIRST_LOOK),
           (f"today: 10 seeds, δ resolvable ({100 * resolvable:.2f} pt)", FIRST_LOOK,
            resolvable, FIRST_LOOK)]
    out += [(f"next looks, budget {b}", b, DELTA, FIRST_LOOK) for b in budgets if b <= pool_size]
    out += [(f"first look {first}, next looks, budget 40", 40, DELTA, first)
            for first in (8, 5) if pool_size >= 40]
    return out


def _pct(x: float) -> str:
    return f"{100 * x:.1f}%"


def walked_rates(rows: Mapping[str, np.ndarray], *, budget: int, min_effect: float,
                 first: int = FIRST_LOOK) -> dict[str, Any]:
    """:func:`rates` of the design's walk over each scenario's paired differences."""
    verdicts, used = {}, {}
    for scenario, D in rows.items():
        verdicts[scenario], used[scenario] = walk(D, budget=budget, min_effect=min_effect,
                                                  first=first)
    return rates(verdicts, used)


def rate_cells(r: Mapping[str, Any]) -> str:
    """The cells every table shares: the five rates, then seeds per PR per scenario."""
    seeds = r["seeds"]
    return (f"{_pct(r['innocent NOT WORSE'])} | {_pct(r['false REGRESSED'])} "
            f"| {_pct(r['-1 pt REGRESSED'])} | {_pct(r['-1 pt NOT WORSE'])} "
            f"| {_pct(r['-2 pt REGRESSED'])} "
            f"| {seeds['innocent']:.1f} / {seeds['-1 point']:.1f} / {seeds['-2 points']:.1f}")


def table(model: str, v: Mapping[str, Any], *, trials: int, budgets: Sequence[int],
          rng: np.random.Generator) -> list[str]:
    sd = float(np.std(np.subtract(v["salted"], v["baseline"]), ddof=1))
    mean = float(np.mean(np.subtract(v["salted"], v["baseline"])))
    lines = [f"\n## {model}: pool of {len(v['baseline'])} seeds, paired sd {100 * sd:.2f} pt, "
             f"mean Δ of the innocent change {100 * mean:+.2f} pt, {v['epochs']} epochs, "
             f"{v['seconds']:.1f} s per run\n",
             "| data | setup | innocent NOT WORSE | false REGRESSED | -1 pt REGRESSED "
             "| -1 pt NOT WORSE | -2 pt REGRESSED | seeds per PR (innocent / -1 / -2) "
             "| wall per PR (innocent) |",
             "|---|---|---|---|---|---|---|---|---|"]
    size = max(budgets + [FIRST_LOOK])
    for data, rows in (("pool resamples", resampled(v, trials, rng)),
                       (f"normal, sd {100 * sd:.2f} pt", normal_model(sd, size, trials, rng))):
        for label, budget, delta, first in setups(
                sd, len(v["baseline"]) if data.startswith("pool") else size, budgets):
            r = walked_rates(rows, budget=budget, min_effect=delta, first=first)
            lines.append(f"| {data} | {label} | {rate_cells(r)} "
                         f"| {r['seeds']['innocent'] * v['seconds'] / 60:.1f} min |")
    return lines


def loop_check(model: str, v: Mapping[str, Any], *, trials: int, budget: int,
               rng: np.random.Generator) -> list[str]:
    """The real CI loop (gate + advice + ``next_look``) on ``trials`` pool resamples: its
    verdicts against the design's walk on the same orders, and the seeds it ran (the advice
    may skip a look, which costs seeds but not the verdict: a look walks every earlier one)."""
    base, salted = np.asarray(v["baseline"]), np.asarray(v["salted"])
    budget = min(budget, base.size)
    same, total, seeds, verdicts = 0, 0, {s: [] for s in SCENARIOS}, {s: [] for s in SCENARIOS}
    start = time.perf_counter()
    for _ in range(trials):
        order = rng.permutation(base.size)
        for scenario, drop in SCENARIOS.items():
            cand = salted[order] - drop
            verdict, used = pull_request(base[order], cand, budget=budget)
            walked, _ = walk((cand - base[order])[None, :], budget=budget, min_effect=DELTA)
            same += verdict == walked[0]
            total += 1
            seeds[scenario].append(used)
            verdicts[scenario].append(verdict)
    r = rates({s: np.array(x) for s, x in verdicts.items()},
              {s: np.array(x) for s, x in seeds.items()})
    return [f"\n{model}, the CI loop itself (gate, advice, `next_look`), budget {budget}, "
            f"{trials} pool resamples per scenario: its verdict equals the design's walk in "
            f"{same} of {total} pull requests; innocent NOT WORSE {_pct(r['innocent NOT WORSE'])}, "
            f"false REGRESSED {_pct(r['false REGRESSED'])}, -1 pt REGRESSED "
            f"{_pct(r['-1 pt REGRESSED'])}, -2 pt REGRESSED {_pct(r['-2 pt REGRESSED'])}; seeds "
            f"per PR {r['seeds']['innocent']:.1f} / {r['seeds']['-1 point']:.1f} / "
            f"{r['seeds']['-2 points']:.1f} (innocent / -1 / -2), against the walk's looks "
            f"taken one by one; {time.perf_counter() - start:.0f} s of gate calls."]


FRONTIER_SDS = (0.01, 0.015, 0.02, 0.03)
FRONTIER_BUDGETS = (10, 20, 40, 80, 160)


def frontier(trials: int, rng: np.random.Generator) -> list[str]:
    """What a team can have at what cost, whatever its model: the design's walk on normal
    paired differences at each paired sd of :data:`FRONTIER_SDS` (Cora's models measure 1-3
    points), per budget of the CI loop, δ 1 point."""
    lines = ["\n## The frontier: the design at a given paired sd (normal differences, δ 1 point)\n",
             "| paired sd | budget | innocent NOT WORSE | false REGRESSED | -1 pt REGRESSED "
             "| -1 pt NOT WORSE | -2 pt REGRESSED | seeds per PR (innocent / -1 / -2) |",
             "|---|---|---|---|---|---|---|---|"]
    for sd in FRONTIER_SDS:
        rows = normal_model(sd, max(FRONTIER_BUDGETS), trials, rng)
        for budget in FRONTIER_BUDGETS:
            r = walked_rates(rows, budget=budget, min_effect=DELTA)
            lines.append(f"| {100 * sd:.1f} pt | {budget} | {rate_cells(r)} |")
    return lines


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--npz", help="gnn-benchmark's cora.npz")
    parser.add_argument("--gcn", help="PyG's examples/gcn.py")
    parser.add_argument("--pool", type=int, default=100, help="in-process GCN seeds per variant")
    parser.add_argument("--command-pool", type=int, default=50,
                        help="gcn.py seeds per variant (a subprocess per run: costly)")
    parser.add_argument("--epochs", type=int, default=200)
    parser.add_argument("--budgets", type=int, nargs="+", default=[20, 40, 80],
                        help="the CI loop's seed budgets (looks of 10, 20, 40, ...)")
    parser.add_argument("--trials", type=int, default=20000,
                        help="pull requests per scenario for the design's walk")
    parser.add_argument("--loop-trials", type=int, default=40,
                        help="pull requests per scenario through the real CI loop")
    parser.add_argument("--quick", action="store_true",
                        help=f"a run that fits the shared 2-core machine: {QUICK}")
    parser.add_argument("--root", default=".graphnetz/cora_data", help="dataset directory")
    parser.add_argument("--values", type=Path, default=DEFAULT_VALUES)
    parser.add_argument("--chunk", type=int, default=10,
                        help="seeds trained between two writes of --values")
    parser.add_argument("--train", type=int, choices=range(len(MODELS)),
                        help="train only this model (0: in-process, 1: gcn.py), e.g. one "
                             "process per core; no simulation")
    parser.add_argument("--from-values", action="store_true",
                        help="train nothing: simulate from the models --values holds")
    args = parser.parse_args(argv)
    if args.quick:
        for key, value in QUICK.items():
            setattr(args, key, value)
        if args.values == DEFAULT_VALUES:   # never into the committed pools
            args.values = Path(tempfile.gettempdir()) / "decisive_cora_quick_values.json"
    if not args.from_values and not (args.npz and args.gcn):
        parser.error("--npz and --gcn are needed to train (or --from-values)")
    start = time.perf_counter()
    values = pool(args)
    if args.train is not None:
        return 0
    trained = time.perf_counter() - start
    rng = np.random.default_rng(33)
    print(f"# decisive_cora (δ 1 point, α {ALPHA}, {args.trials} pull requests per scenario "
          f"and row)")
    for model, v in values.items():
        if len(v["baseline"]) < FIRST_LOOK:
            print(f"\n{model}: pool of {len(v['baseline'])} < {FIRST_LOOK} seeds: not simulated")
            continue
        print("\n".join(table(model, v, trials=args.trials, budgets=args.budgets, rng=rng)))
        if args.loop_trials:
            print("\n".join(loop_check(model, v, trials=args.loop_trials,
                                       budget=max(args.budgets), rng=rng)))
    print("\n".join(frontier(args.trials, rng)))
    print(f"\ntraining (or reading {args.values.name}): {trained:.0f} s; simulation "
          f"{time.perf_counter() - start - trained:.0f} s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
