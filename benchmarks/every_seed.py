"""Every seed a run holds is read: the error rates of the not-worse gate when a run walks every
look its seeds contain and a REGRESSED crossing at any look wins over an earlier NOT WORSE or
BETTER (futility non-binding), against the old rule (stop at the first crossing).

A trial is one cell whose paired differences are normal with sd ``--sds`` points (δ = 1 point
for a metric in [0, 1], margin 0, α 0.05, first look 10) and true mean 0 (no change) or −δ (a
drop that matters). A run holds 10, 20, 40 or 80 seeds and walks the looks 10 → 20 → 40 → 80
up to what it holds, on the prefixes of its seeds. Two wrong verdicts, each ≤ α by design:

- false REGRESSED: REGRESSED at true mean 0 (= −margin);
- wrong NOT WORSE: NOT WORSE (or BETTER) at true mean −δ.

Every decision is ``stats.sequential.walk_differences`` with ``every_look=True`` on the raw
differences (the walk the gate's ``decide_cells`` takes on a run that holds its seeds: the
same boundaries and ``decide_look``; `tests/cover/test_gates.py` checks that the two agree cell for
cell), vectorised over the trials. Each boundary is calibrated on null paths that run on past
the other boundaries' crossings (``stats.boundaries.calibrate``), so no recalibration is needed;
this measures that. The old rule's rates (``every_look=False``) are printed beside them, with
the share of cells whose verdict the later looks changed. 95% Wilson intervals.

    nice -n 10 python benchmarks/every_seed.py --out benchmarks/every_seed_results.md
    python benchmarks/every_seed.py --trials 20000     # a quick run (about 3 s)
"""

from __future__ import annotations

import argparse
import math
import sys
import time
from pathlib import Path

import numpy as np

ALPHA = 0.05
DELTA = 0.01
FIRST = 10
HELD = (10, 20, 40, 80)
SEED = 20_261_203


def wilson(k: int, n: int, z: float = 1.959964) -> tuple[float, float]:
    """95% Wilson interval of ``k`` successes in ``n`` trials."""
    p = k / n
    centre = (p + z * z / (2 * n)) / (1 + z * z / n)
    half = z * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n)) / (1 + z * z / n)
    return centre - half, centre + half


def rates(D: np.ndarray, held: int, *, every_look: bool) -> np.ndarray:
    """The codes of each trial (rows of ``D``) of a run holding ``held`` seeds."""
    from pytest_graphnetz.stats.boundaries import design
    from pytest_graphnetz.stats.sequential import walk_differences

    codes, _, _ = walk_differences(D[:, :held], design(FIRST, held, alpha=ALPHA), margin=0.0,
                                   min_effect=DELTA, regressed_alpha=None, upto=held,
                                   every_look=every_look)
    return codes


def main(argv: list[str] | None = None) -> int:
    from pytest_graphnetz.stats.boundaries import design
    from pytest_graphnetz.stats.decisions import Code

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--trials", type=int, default=200_000, help="trials per row")
    parser.add_argument("--sds", type=float, nargs="+", default=[0.8, 2.0, 4.0],
                        help="paired sd of the differences, in points")
    parser.add_argument("--out", type=Path, help="write the Markdown table here")
    args = parser.parse_args(argv)
    gen = np.random.default_rng(SEED)
    started = time.process_time()
    lines = [
        "# Every seed a run holds is read (`benchmarks/every_seed.py`)", "",
        f"{args.trials:,} trials per row; normal paired differences, δ = {DELTA:g} (1 point), "
        f"margin 0, α = {ALPHA:g}, looks {FIRST} → {2 * FIRST} → {4 * FIRST} → {8 * FIRST} up "
        "to the seeds the run holds. *New*: every look read, REGRESSED at any look wins "
        "(what the gate does); *old*: the first crossing stops the cell. Rates in %, with "
        "95% Wilson intervals; each must be ≤ α = 5%.", "",
        "| sd (points) | seeds held | α spent by the last look | false REGRESSED (new) "
        "| false REGRESSED (old) | wrong NOT WORSE at −δ (new) | wrong NOT WORSE at −δ (old) "
        "| changed by later looks at −δ |",
        "|---|---|---|---|---|---|---|---|"]
    worst = 0.0
    for sd in args.sds:
        Z = gen.standard_normal((args.trials, HELD[-1])) * (sd / 100)
        for held in HELD:
            spent = design(FIRST, held, alpha=ALPHA).spent[-1]   # each boundary's exact rate
            row = [f"{sd:g}", str(held), f"{100 * spent:.2f}"]
            cells = {}
            for name, shift in (("null", 0.0), ("drop", -DELTA)):
                for every in (True, False):
                    codes = rates(Z + shift, held, every_look=every)
                    bad = (codes == Code.REGRESSED) if name == "null" else np.isin(
                        codes, (Code.NOT_WORSE, Code.BETTER))
                    cells[(name, every)] = codes
                    k = int(bad.sum())
                    low, high = wilson(k, args.trials)
                    if every:
                        worst = max(worst, k / args.trials)
                    row.append(f"{100 * k / args.trials:.2f} [{100 * low:.2f}, {100 * high:.2f}]")
            changed = float(np.mean(cells[("drop", True)] != cells[("drop", False)]))
            row.append(f"{100 * changed:.2f}")
            lines.append("| " + " | ".join(row) + " |")
            print(lines[-1], flush=True)
    lines += ["", f"Largest rate under the new rule: {100 * worst:.2f}% "
                  f"({'within' if worst <= ALPHA else 'above'} α). CPU "
                  f"{time.process_time() - started:.0f} s. Command: `python "
                  f"benchmarks/every_seed.py --trials {args.trials}`."]
    text = "\n".join(lines) + "\n"
    if args.out:
        args.out.write_text(text, encoding="utf-8")
    else:
        sys.stdout.write(text)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
