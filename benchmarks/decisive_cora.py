"""Does CI decide at real noise? Cora, an in-process GCN and PyG's own gcn.py (issue 33, item 4).

Per model, a pool of per-seed test accuracies is trained once and kept in a JSON file
(``--values``; a rerun trains only what the file lacks): the baseline, and the baseline under
``graphnetz calibrate``'s salted seeds (an innocent change: other initialisation and dropout
draws, the same data and split). PyG's ``examples/gcn.py`` runs as a command task, three lines
added to a temporary copy (``command_task_cora.gateable_copy``; its Planetoid split is fixed),
salted through the seed the script receives (``calibration.salting.SaltedCommand``); the
in-process GCN is ``gate_quality_cora``'s (PyG's example layers, gnn-benchmark's per-seed split).

The verdicts are then simulated from the pool, without training: per trial a random order of
the pool's seeds, relabelled 0, 1, 2, ... (so a look is a prefix), a baseline holding the
budget's seeds and a candidate that is

- ``innocent``: the salted values;
- ``-1 point`` / ``-2 points``: the salted values minus 0.01 / 0.02 on every seed (an injected
  uniform drop: the paired noise of a real change plus a known shift);

judged by the gate (``compare_reports``, the library's defaults: paired t, α = 0.05, δ = 1 point)
under two setups:

- ``today``: one look at 10 seeds (the default CI);
- ``next looks``: the example workflow's loop (docs/ci.md): after each look,
  ``summary.next_look`` on the rows' JSON numbers says the next seed count (capped by the budget)
  while a row is INCONCLUSIVE.

Printed per model and setup: the share of innocent changes reading NOT WORSE (or BETTER), false
REGRESSED, the share of -1 / -2 point drops reading REGRESSED, the candidate's mean
seed-trainings per pull request and the wall time they cost at the measured seconds per run.

Each look is judged by the gate as it stands on the branch that runs it: on a branch whose gate
judges every run alone, a loop's error rates are not those of a sequential design (docs/ci.md).
With a small pool the trials overlap (shares, no confidence intervals).

    python benchmarks/decisive_cora.py --npz ../shared/data/cora.npz \\
        --gcn ../shared/reference/pyg-examples/gcn.py --quick
    python benchmarks/decisive_cora.py --npz ... --gcn ... --pool 100 --epochs 200 --budget 80
    python benchmarks/decisive_cora.py --quick --from-values   # the committed pool, no training
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
QUICK = {"pool": 12, "command_pool": 4, "epochs": 50, "budget": 12, "trials": 100}


# -- the pool: trained once, kept in --values ----------------------------------------------------


def train_in_process(npz: str, seeds: Sequence[int], epochs: int, root: str
                     ) -> tuple[dict[str, list[float]], float]:
    from pytest_graphnetz import run_benchmark
    from pytest_graphnetz.calibration.salting import salted_models

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
    from pytest_graphnetz.calibration.salting import salted_models
    from pytest_graphnetz.tasks.base import Task
    from pytest_graphnetz.tasks.command import Command, DataFiles

    out: dict[str, list[float]] = {}
    with tempfile.TemporaryDirectory(prefix="graphnetz-decisive-") as tmp:
        project = Path(tmp)
        data = ctc.planetoid_from_npz(npz, project, split_seed=0)
        copy = project / "examples" / "gcn.py"
        ctc.gateable_copy(script, copy)
        tasks = {"cora": Task("cora", DataFiles([data]), kind="command")}
        command = {"GCN": Command([sys.executable, str(copy), "--epochs", str(epochs)])}
        start = time.perf_counter()
        for variant, models in (("baseline", command), ("salted", salted_models(command))):
            report = run_benchmark(tasks, models, seeds=list(seeds), device="cpu")
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
        if not have or have["epochs"] != epochs:
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
            done = len(have["baseline"]) if have and have["epochs"] == args.epochs else 0
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


# -- the simulation: verdicts from the pool, through the gate ------------------------------------


def _report(values: np.ndarray) -> Any:
    from pytest_graphnetz import BenchmarkReport

    return BenchmarkReport.from_arrays(values[None, None, :], tasks=["cora"], models=["GCN"],
                                       seeds=range(len(values)), metric="accuracy")


def pull_request(base: np.ndarray, cand: np.ndarray, *, budget: int, loop: bool) -> tuple[str, int]:
    """One simulated pull request: the verdict it ends on and the seeds it ran."""
    from pytest_graphnetz.gates import compare_reports
    from pytest_graphnetz.nextlook import next_look
    from pytest_graphnetz.summary import JSON_SCHEMA, JSON_VERSION, verdict_stats

    baseline = _report(base[:budget])
    seeds = FIRST_LOOK
    while True:
        (v,) = compare_reports(_report(cand[:seeds]), baseline)
        if not loop:
            return str(v.verdict), seeds
        row = {"verdict": str(v.verdict), "stats": verdict_stats(v)}
        look = next_look({"schema": JSON_SCHEMA, "version": JSON_VERSION, "rows": [row]},
                         budget=budget, current=seeds)
        if look.seeds is None:
            return str(v.verdict), seeds
        seeds = look.seeds


def simulate(values: Mapping[str, Any], *, trials: int, budget: int, loop: bool,
             rng: np.random.Generator) -> dict[str, Any]:
    base = np.asarray(values["baseline"])
    salted = np.asarray(values["salted"])
    budget = min(budget, base.size)
    counts: dict[str, dict[str, int]] = {s: {} for s in SCENARIOS}
    seeds: list[int] = []
    for _ in range(trials):
        order = rng.permutation(base.size)
        for scenario, drop in SCENARIOS.items():
            verdict, used = pull_request(base[order], salted[order] - drop, budget=budget,
                                         loop=loop)
            counts[scenario][verdict] = counts[scenario].get(verdict, 0) + 1
            seeds.append(used)
    return {"counts": counts, "seeds": float(np.mean(seeds)), "budget": budget}


def share(counts: Mapping[str, int], *names: str) -> str:
    total = sum(counts.values())
    return f"{100 * sum(counts.get(n, 0) for n in names) / total:.0f}%"


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--npz", help="gnn-benchmark's cora.npz")
    parser.add_argument("--gcn", help="PyG's examples/gcn.py")
    parser.add_argument("--pool", type=int, default=100, help="in-process GCN seeds per variant")
    parser.add_argument("--command-pool", type=int, default=20,
                        help="gcn.py seeds per variant (a subprocess per run: costly)")
    parser.add_argument("--epochs", type=int, default=200)
    parser.add_argument("--budget", type=int, default=80, help="the loop's seed budget")
    parser.add_argument("--trials", type=int, default=1000)
    parser.add_argument("--quick", action="store_true",
                        help=f"a run that fits the shared 2-core machine: {QUICK}")
    parser.add_argument("--root", default=".graphnetz/cora_data", help="dataset directory")
    parser.add_argument("--values", type=Path, default=HERE / "decisive_cora_values.json")
    parser.add_argument("--chunk", type=int, default=10,
                        help="seeds trained between two writes of --values")
    parser.add_argument("--train", type=int, choices=range(len(MODELS)),
                        help="train only this model (0: in-process, 1: gcn.py), e.g. one "
                             "process per core")
    parser.add_argument("--from-values", action="store_true",
                        help="train nothing: simulate from the models --values holds")
    args = parser.parse_args(argv)
    if args.quick:
        for key, value in QUICK.items():
            setattr(args, key, value)
    if not args.from_values and not (args.npz and args.gcn):
        parser.error("--npz and --gcn are needed to train (or --from-values)")
    start = time.perf_counter()
    values = pool(args)
    trained = time.perf_counter() - start
    rng = np.random.default_rng(33)
    print(f"# decisive_cora ({'--quick: ' if args.quick else ''}pool {args.pool} in-process / "
          f"{args.command_pool} gcn.py seeds, {args.epochs} epochs, budget {args.budget}, "
          f"{args.trials} trials, δ 1 point, α 0.05)\n")
    print("| model | setup | paired sd | innocent NOT WORSE | false REGRESSED | -1 pt REGRESSED "
          "| -2 pt REGRESSED | seeds per PR | wall per PR |")
    print("|---|---|---|---|---|---|---|---|---|")
    for model, v in values.items():
        sd = float(np.std(np.subtract(v["salted"], v["baseline"]), ddof=1))
        if len(v["baseline"]) < FIRST_LOOK:
            print(f"| {model} | (pool of {len(v['baseline'])} < {FIRST_LOOK} seeds: spread only) "
                  f"| {100 * sd:.2f} pt | | | | | | {v['seconds']:.1f} s per run |")
            continue
        for setup, loop in (("today: 10 seeds", False), ("next looks", True)):
            r = simulate(v, trials=args.trials, budget=args.budget, loop=loop, rng=rng)
            c = r["counts"]
            label = setup if not loop else f"next looks, budget {r['budget']}"
            print(f"| {model} | {label} | {100 * sd:.2f} pt "
                  f"| {share(c['innocent'], 'NOT WORSE', 'BETTER')} "
                  f"| {share(c['innocent'], 'REGRESSED')} | {share(c['-1 point'], 'REGRESSED')} "
                  f"| {share(c['-2 points'], 'REGRESSED')} | {r['seeds']:.1f} "
                  f"| {r['seeds'] * v['seconds']:.0f} s |")
    print(f"\ntraining (or reading {args.values.name}): {trained:.0f} s; simulation "
          f"{time.perf_counter() - start - trained:.0f} s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
