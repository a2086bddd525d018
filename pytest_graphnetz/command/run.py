"""Running a command task's script for one (model, seed): the History its metrics file holds.

Per triple the runner fills the placeholders ``{seed}``, ``{device}``, ``{output}``,
``{threads}`` and ``{metric}`` in the command's arguments, sets the matching ``GRAPHNETZ_*``
variables, pins threads and device through the environment (:func:`environment`), runs the
script traced (:mod:`.reads`) in a process group of its own (:mod:`.process`),
warm once it has shown it imports torch (:mod:`.warm`), and reads the metrics the
script wrote to ``{output}`` (:mod:`.output`). Reseeding is the script's job;
``Command(..., check_determinism=True)`` reruns one seed and refuses a script whose two runs
differ (:func:`check_rerun`).
"""

from __future__ import annotations

import json
import math
import os
import re
import shlex
import tempfile
from pathlib import Path
from typing import Any

from .. import script as script_side
from ..history import History
from .output import read_metrics_file, read_output
from .process import run_process, stderr_tail
from .reads import UNTRACKED, reads_record, traced_args
from .task import Command, CommandError, NondeterministicScriptError
from .warm import warm_server

_PLACEHOLDER = re.compile(r"\{(seed|device|output|threads|metric)\}")


def environment(*, seed: int, device: str, threads: int, deterministic: str, metric: str,
                output: str | None = None) -> dict[str, str]:
    """The variables the runner sets for one run (``output`` aside, part of the cache key).

    Threads are pinned for every library (OpenMP, MKL, OpenBLAS) as torch's count is in the
    runner; the device through ``CUDA_VISIBLE_DEVICES`` (none on CPU; the one pinned GPU,
    which the script then sees as ``cuda:0``); hash randomisation is fixed (set order).
    """
    kind, _, index = device.partition(":")
    env = {script_side.SEED_ENV: str(seed), script_side.THREADS_ENV: str(threads),
           script_side.METRIC_ENV: metric, script_side.DETERMINISTIC_ENV: deterministic,
           "OMP_NUM_THREADS": str(threads), "MKL_NUM_THREADS": str(threads),
           "OPENBLAS_NUM_THREADS": str(threads), "PYTHONHASHSEED": "0"}
    if kind == "cuda":
        visible = os.environ.get("CUDA_VISIBLE_DEVICES")
        ids = visible.split(",") if visible else None
        env["CUDA_VISIBLE_DEVICES"] = ids[int(index or 0)] if ids else (index or "0")
        env[script_side.DEVICE_ENV] = "cuda:0"
        if deterministic != "off":
            from ..determinism import CUBLAS_ENV, CUBLAS_VALUE

            env[CUBLAS_ENV] = CUBLAS_VALUE
    else:
        env["CUDA_VISIBLE_DEVICES"] = ""  # a script choosing its own device finds no GPU
        env[script_side.DEVICE_ENV] = kind
    if output is not None:
        env[script_side.OUTPUT_ENV] = output
    return env


def run(command: Command, *, task: str, model: str, metric: str, seed: int, device: str,
        threads: int, deterministic: str) -> History:
    """Run ``command`` for one seed; the History its metrics file holds (see
    :func:`run_traced`)."""
    return run_traced(command, task=task, model=model, metric=metric, seed=seed, device=device,
                      threads=threads, deterministic=deterministic)[0]


def run_traced(command: Command, *, task: str, model: str, metric: str, seed: int, device: str,
               threads: int, deterministic: str) -> tuple[History, dict[str, Any] | None]:
    """Run ``command`` for one seed: the History its metrics file holds, and what the run read
    (:func:`~.reads.reads_record`): :data:`UNTRACKED` for a command that is not a
    Python script (or ``-c``, or ``track_reads=False``); None when the script left by
    ``os._exit`` (what it read is unknown: the runner does not cache the run).

    A non-zero exit, a timeout, a missing or invalid metrics file raise :class:`CommandError`
    with the command line, the exit code and the tail of its stderr. The script runs in its own
    process group (:func:`run_process`), which nothing of it survives.
    """
    from ..fingerprint import project_code_files

    where = f"task {task!r} × model {model!r} × seed {seed}"
    given = command.script_seed(seed)
    with tempfile.TemporaryDirectory(prefix="graphnetz-command-") as tmp:
        output = str(Path(tmp) / "metrics.json")
        reads = str(Path(tmp) / "reads.json")
        env = environment(seed=given, device=device, threads=threads,
                          deterministic=deterministic, metric=metric, output=output)
        if given != seed:   # salted (calibration): the benchmark seed, for data and splits
            env[script_side.DATA_SEED_ENV] = str(seed)
        values = {"seed": str(given), "device": env[script_side.DEVICE_ENV], "output": output,
                  "threads": str(threads), "metric": metric}
        args = [_PLACEHOLDER.sub(lambda m: values[m.group(1)], a) for a in command.args]
        shown = shlex.join(args)
        traced = traced_args(args, reads) if command.track_reads else None
        full_env = {**os.environ, **command.env, **env}
        # Warm once a run of this script has shown it imports torch (the server's preload):
        # a script without it starts faster cold than a server importing torch.
        server = warm_server(traced, full_env, device, own=command.env) \
            if traced and str(command.script) in _IMPORTS_TORCH else None
        done = run_process(traced or args, cwd=str(command.cwd), env=full_env,
                           timeout=command.timeout, logs=Path(tmp), where=f"{where}: `{shown}`",
                           server=server)
        if done.returncode != 0:
            raise CommandError(f"{where}: `{shown}` exited with code {done.returncode}"
                               f"{stderr_tail(done.stderr or done.stdout)}")
        if not Path(output).is_file():
            raise CommandError(
                f"{where}: `{shown}` exited with code 0 but wrote no metrics file (it should "
                f"write {{output}} / ${script_side.OUTPUT_ENV}: add `graphnetz.record(test=..., "
                f"val=...)` once per epoch, see docs/command-tasks.md){stderr_tail(done.stderr)}")
        try:
            text = read_metrics_file(Path(output), where=f"{where}: `{shown}`")
            history = read_output(text, metric=metric)
        except ValueError as exc:
            raise CommandError(f"{where}: `{shown}` wrote an invalid metrics file: {exc}"
                               f"{stderr_tail(done.stderr)}") from exc
        # The modules the script imports statically are in its key at the grain of
        # definitions; the record holds whole only those the key cannot see.
        record = UNTRACKED if traced is None else reads_record(
            Path(reads), cwd=str(command.cwd), ignore_env={*env, *command.env},
            covered=project_code_files([str(command.script)]))
        if record is not None and record.pop("torch", False):
            _IMPORTS_TORCH.add(str(command.script))
        return history, record


_IMPORTS_TORCH: set[str] = set()   # scripts whose runs imported torch: run warm from then on


def check_rerun(command: Command, first: History, **run_args: Any) -> None:
    """Run ``command`` once more for the seed of ``first`` (``run_args``: as for :func:`run`)
    and raise :class:`NondeterministicScriptError` when its metrics differ."""
    again = run(command, **run_args)
    if _canonical(again) == _canonical(first):  # NaN equal to NaN: a diverged epoch repeats
        return
    differs = ""
    for name in ("test", "val", "train_loss"):
        a, b = getattr(first, name) or (), getattr(again, name) or ()
        if len(a) != len(b):
            differs = f"`{name}` has {len(a)} epochs, then {len(b)}"
            break
        bad = [i for i, (x, y) in enumerate(zip(a, b, strict=True))
               if x != y and not (math.isnan(x) and math.isnan(y))]
        if bad:
            differs = f"`{name}` at epoch {bad[0]}: {a[bad[0]]!r}, then {b[bad[0]]!r}"
            break
    raise NondeterministicScriptError(
        f"script {command.script} is not deterministic: two runs of seed {run_args['seed']} "
        f"(task {run_args['task']!r} × model {run_args['model']!r}) differ "
        f"({differs or 'in their extra series or epoch fields'}). Reseeding is the script's "
        "job: call `graphnetz.seed()` (pytest_graphnetz.script) before the data, model and "
        "optimizer are made, and draw nothing from time or os.urandom")


def _canonical(history: History) -> str:
    return json.dumps(history.to_dict(), sort_keys=True)
