"""Running a command task's script for one (model, seed): the History its metrics file holds.

Per triple the runner fills the placeholders ``{seed}``, ``{device}``, ``{output}``,
``{threads}`` and ``{metric}`` in the command's arguments, sets the matching ``GRAPHNETZ_*``
variables, pins threads and device through the environment (:func:`environment`), runs the
script traced (:mod:`.reads`) in a process group of its own (:mod:`.process`),
warm once it has shown it imports torch (:mod:`.warm`), and reads the metrics the
script wrote to ``{output}`` (:mod:`.output`). Reseeding is the script's job;
``Command(..., check_determinism=True)`` reruns one seed and refuses a script whose two runs
differ (:meth:`CommandExecutor.check_rerun`). What runs hold between them (process groups,
output bounds, fork servers, file hashes) lives on one :class:`CommandExecutor`.
"""

from __future__ import annotations

import atexit
import json
import math
import os
import re
import shlex
import tempfile
from pathlib import Path
from typing import Any

from pytest_graphnetz import script as script_side
from pytest_graphnetz.report.epochs import History
from pytest_graphnetz.runner.command.output import MAX_METRICS_BYTES, read_metrics_file, read_output
from pytest_graphnetz.runner.command.process import MAX_OUTPUT_BYTES, ProcessGroups, stderr_tail
from pytest_graphnetz.runner.command.reads import (
    UNTRACKED,
    Derived,
    FileHashes,
    reads_record,
    reads_unchanged,
    traced_args,
)
from pytest_graphnetz.runner.command.task import Command, CommandError, NondeterministicScriptError
from pytest_graphnetz.runner.command.warm import WarmServers

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
            from pytest_graphnetz.runner.determinism import CUBLAS_ENV, CUBLAS_VALUE

            env[CUBLAS_ENV] = CUBLAS_VALUE
    else:
        env["CUDA_VISIBLE_DEVICES"] = ""  # a script choosing its own device finds no GPU
        env[script_side.DEVICE_ENV] = kind
    if output is not None:
        env[script_side.OUTPUT_ENV] = output
    return env


class CommandExecutor:
    """Runs command tasks' scripts for one session, and holds what that needs between runs.

    - the process groups of the runs in progress, killed on SIGTERM and at :meth:`close`,
      and the bound on each run's output (``max_output_bytes``, :class:`~.process.ProcessGroups`);
    - the bound on a metrics file (``max_metrics_bytes``, :func:`~.output.read_metrics_file`);
    - the warm fork servers (:class:`~.warm.WarmServers`) and the scripts that have shown they
      import torch (run warm from then on);
    - the sha256 of the files runs read (:func:`~.reads.file_hash`), for :meth:`reads_unchanged`.

    ``run_benchmark`` opens one per call (``commands=``: the pytest session's); close it (or
    use it as a context manager), which ends its servers. It closes at exit too.
    """

    def __init__(self, *, max_output_bytes: int = MAX_OUTPUT_BYTES,
                 max_metrics_bytes: int = MAX_METRICS_BYTES) -> None:
        self.max_metrics_bytes = max_metrics_bytes
        self.servers = WarmServers()
        self.groups = ProcessGroups(max_output_bytes=max_output_bytes,
                                    on_terminate=self.servers.close)
        self.hashes: FileHashes = {}
        self.imports_torch: set[str] = set()   # scripts whose runs imported torch
        self._at_exit = False

    def __enter__(self) -> CommandExecutor:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def close(self) -> None:
        """Kill the runs in progress and end the fork servers (a later run starts anew)."""
        self.groups.close()
        self.servers.close()
        if self._at_exit:
            atexit.unregister(self.close)
            self._at_exit = False

    def run(self, command: Command, *, task: str, model: str, metric: str, seed: int,
            device: str, threads: int, deterministic: str,
            script_seed: int | None = None) -> History:
        """Run ``command`` for one seed; the History its metrics file holds (see
        :meth:`run_traced`)."""
        return self.run_traced(command, task=task, model=model, metric=metric, seed=seed,
                               device=device, threads=threads, deterministic=deterministic,
                               script_seed=script_seed)[0]

    def run_traced(self, command: Command, *, task: str, model: str, metric: str, seed: int,
                   device: str, threads: int, deterministic: str,
                   script_seed: int | None = None) -> tuple[History, dict[str, Any] | None]:
        """Run ``command`` for benchmark seed ``seed``: the History its metrics file holds, and
        what the run read (:func:`~.reads.reads_record`): :data:`UNTRACKED` for a command that
        is not a Python script (or ``-c``, or ``track_reads=False``); None when the script left
        by ``os._exit`` (what it read is unknown: the runner does not cache the run).

        ``script_seed``: the seed the script receives instead of ``seed`` (a run under a
        :class:`~pytest_graphnetz.runner.environment.SeedMap`; ``seed`` then reaches it as
        ``GRAPHNETZ_DATA_SEED``, for the data and splits).

        A non-zero exit, a timeout, a missing or invalid metrics file raise
        :class:`CommandError` with the command line, the exit code and the tail of its stderr.
        The script runs in its own process group (:class:`~.process.ProcessGroups`), which
        nothing of it survives.
        """
        from pytest_graphnetz.runner.fingerprint import project_code_files

        if not self._at_exit:
            atexit.register(self.close)
            self._at_exit = True
        where = f"task {task!r} × model {model!r} × seed {seed}"
        given = seed if script_seed is None else int(script_seed)
        with tempfile.TemporaryDirectory(prefix="graphnetz-command-") as tmp:
            output = str(Path(tmp) / "metrics.json")
            reads = str(Path(tmp) / "reads.json")
            env = environment(seed=given, device=device, threads=threads,
                              deterministic=deterministic, metric=metric, output=output)
            if given != seed:   # under a seed map: the benchmark seed, for data and splits
                env[script_side.DATA_SEED_ENV] = str(seed)
            values = {"seed": str(given), "device": env[script_side.DEVICE_ENV],
                      "output": output, "threads": str(threads), "metric": metric}
            args = [_PLACEHOLDER.sub(lambda m: values[m.group(1)], a) for a in command.args]
            shown = shlex.join(args)
            traced = traced_args(args, reads) if command.track_reads else None
            full_env = {**os.environ, **command.env, **env}
            # Warm once a run of this script has shown it imports torch (the server's
            # preload): a script without it starts faster cold than a server importing torch.
            server = self.servers.get(traced, full_env, device, own=command.env) \
                if traced and str(command.script) in self.imports_torch else None
            done = self.groups.run(traced or args, cwd=str(command.cwd), env=full_env,
                                   timeout=command.timeout, logs=Path(tmp),
                                   where=f"{where}: `{shown}`", server=server)
            if done.returncode != 0:
                raise CommandError(f"{where}: `{shown}` exited with code {done.returncode}"
                                   f"{stderr_tail(done.stderr or done.stdout)}")
            if not Path(output).is_file():
                raise CommandError(
                    f"{where}: `{shown}` exited with code 0 but wrote no metrics file (it "
                    f"should write {{output}} / ${script_side.OUTPUT_ENV}: add "
                    "`graphnetz.record(test=..., val=...)` once per epoch, see "
                    f"docs/command-tasks.md){stderr_tail(done.stderr)}")
            try:
                text = read_metrics_file(Path(output), where=f"{where}: `{shown}`",
                                         limit=self.max_metrics_bytes)
                history = read_output(text, metric=metric)
            except ValueError as exc:
                raise CommandError(f"{where}: `{shown}` wrote an invalid metrics file: {exc}"
                                   f"{stderr_tail(done.stderr)}") from exc
            # The modules the script imports statically are in its key at the grain of
            # definitions; the record holds whole only those the key cannot see.
            record = dict(UNTRACKED) if traced is None else reads_record(
                Path(reads), cwd=str(command.cwd), ignore_env={*env, *command.env},
                covered=project_code_files([str(command.script)]), hashes=self.hashes)
            if record is not None and record.pop("torch", False):
                self.imports_torch.add(str(command.script))
            return history, record

    def reads_unchanged(self, command: Command, record: Any,
                        derived: Derived | None = None) -> bool:
        """:func:`~.reads.reads_unchanged`, with the file hashes of this executor's runs."""
        return reads_unchanged(command, record, derived, hashes=self.hashes)

    def check_rerun(self, command: Command, first: History, **run_args: Any) -> None:
        """Run ``command`` once more for the seed of ``first`` (``run_args``: as for
        :meth:`run`) and raise :class:`NondeterministicScriptError` when its metrics differ."""
        again = self.run(command, **run_args)
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
            f"script {command.script} is not deterministic: two runs of seed "
            f"{run_args['seed']} (task {run_args['task']!r} × model {run_args['model']!r}) "
            f"differ ({differs or 'in their extra series or epoch fields'}). Reseeding is the "
            "script's job: call `graphnetz.seed()` (pytest_graphnetz.script) before the data, "
            "model and optimizer are made, and draw nothing from time or os.urandom")


def _canonical(history: History) -> str:
    return json.dumps(history.to_dict(), sort_keys=True)
