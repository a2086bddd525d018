"""One command triple as the cache keeps it (:class:`CommandTriple`): what keys it (the data its
loader names, the command's identity with the run's seed map
(:class:`~pytest_graphnetz.runner.environment.SeedMap`), the variables the run sets, seed,
threads and machine), the records of the files its run derived, the check that a hit's reads
are unchanged (:func:`run_triple`), and the determinism rerun (:func:`check_determinism`).
Reseeding is the script's job (:mod:`.run`); the runner fingerprints the data at the benchmark
seed, which a seed map never moves.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from pytest_graphnetz.runner.command.run import CommandExecutor, environment
from pytest_graphnetz.runner.command.task import Command, DataFiles, identity_digest

if TYPE_CHECKING:
    from pytest_graphnetz.report.epochs import History
    from pytest_graphnetz.runner.cache import TripleCache
    from pytest_graphnetz.runner.environment import SeedMap
    from pytest_graphnetz.runner.tasks.base import Task


@dataclass(frozen=True)
class CommandTriple:
    """One (task, model, seed) of a command task: ``command`` run for benchmark ``seed`` on
    ``device`` with ``threads`` under the ``deterministic`` mode, its task's data under
    ``root``; ``seed_map``: the seed its script receives instead (None: the seed itself)."""

    task: Task
    model: str
    command: Command
    seed: int
    device: str
    threads: int
    deterministic: str
    root: str
    seed_map: SeedMap | None = None

    def identity(self) -> dict[str, Any]:
        """:meth:`Command.identity <.task.Command.identity>` with the seed map's key: what
        fingerprints the model and keys its runs."""
        own = self.command.identity()
        return own if self.seed_map is None else {**own, **self.seed_map.key}

    def fingerprint(self) -> str:
        """The model fingerprint of this triple's cell (:func:`.task.identity_digest`)."""
        return identity_digest(self.identity())

    def run_arguments(self) -> dict[str, Any]:
        """The keywords of :meth:`CommandExecutor.run <.run.CommandExecutor.run>` for this
        triple."""
        return {"task": self.task.name, "model": self.model, "metric": self.task.metric_name,
                "seed": self.seed, "device": self.device, "threads": self.threads,
                "deterministic": self.deterministic,
                "script_seed": None if self.seed_map is None else self.seed_map.seed(self.seed)}

    def key_fields(self, data_fp: str, context: Mapping[str, Any]) -> dict[str, Any]:
        """Everything the run's result depends on that is known before it runs (what it reads
        is stored with the entry): the data fingerprint ``data_fp``, the task's settings,
        :meth:`identity`, the variables the run sets (at the benchmark seed), seed, threads and
        the machine ``context``."""
        variables = environment(seed=self.seed, device=self.device, threads=self.threads,
                                deterministic=self.deterministic, metric=self.task.metric_name)
        return {"task": {"data": data_fp, "config": self.task.config()},
                "command": self.identity(), "environment": variables,
                "seed": self.seed, "threads": self.threads, **context}

    def model_info(self) -> dict[str, Any]:
        """What the model was, as reports keep it: the command line, no parameter count."""
        return {"repr": str(self.command), "parameters": None}


@dataclass(frozen=True)
class CommandRun:
    """What one command triple gave: its history, the data fingerprint, whether it came from
    the cache and under which key (None: no cache)."""

    history: History
    data_fp: str
    cached: bool
    key: str | None


def run_triple(commands: CommandExecutor, triple: CommandTriple, *,
               cache: TripleCache | None, context: Mapping[str, Any],
               may_train: Callable[[], None]) -> CommandRun:
    """Fingerprint the data ``triple``'s loader names, then fetch its run from ``cache`` or run
    its script on ``commands`` (``may_train`` raises where the run must not train). A hit needs
    what the cached run read unchanged (:meth:`CommandExecutor.reads_unchanged`); the files it
    derived are recorded, by digest, with what they were derived from."""
    from pytest_graphnetz.runner import environment as runner_environment
    from pytest_graphnetz.runner.cache import make_key
    from pytest_graphnetz.runner.command import reads as command_reads
    from pytest_graphnetz.runner.fingerprint import data_fingerprint

    task = triple.task
    if not isinstance(task.loader, DataFiles):  # which draws nothing: no torch to import
        runner_environment.reseed(triple.seed if task.seeded else 0)
    data_fp = data_fingerprint(task.load(triple.root, triple.seed))

    def derived_key(path: str, digest: str) -> str:
        return make_key({"derived": path, "sha256": digest})

    def train() -> tuple[History, Any]:
        may_train()
        history, reads = commands.run_traced(triple.command, **triple.run_arguments())
        for path, digest, inputs in command_reads.derivations(reads or {}):
            if cache is not None:
                cache.put_record(derived_key(path, digest), {"inputs": inputs})
        return history, reads

    def derived(path: str, digest: str) -> Any:
        record = None if cache is None else cache.get_record(derived_key(path, digest))
        return None if record is None else record.get("inputs")

    if cache is None:
        return CommandRun(train()[0], data_fp, False, None)
    fields = triple.key_fields(data_fp, context)
    key = make_key(fields)
    history, cached = cache.get_or_compute_tracked(
        key, train, fields,
        valid=lambda depends: commands.reads_unchanged(triple.command, depends, derived))
    return CommandRun(history, data_fp, cached, key)


def check_determinism(commands: CommandExecutor,
                      runs: Iterable[tuple[CommandTriple, History]]) -> None:
    """Rerun, uncached, the first seed of every command model that asks for it
    (``Command(check_determinism=True)``) on ``commands``; a script whose two runs differ is
    refused (:meth:`CommandExecutor.check_rerun <.run.CommandExecutor.check_rerun>`)."""
    checked: set[tuple[str, str]] = set()
    for triple, history in runs:
        if not triple.command.check_determinism or (triple.task.name, triple.model) in checked:
            continue
        checked.add((triple.task.name, triple.model))
        commands.check_rerun(triple.command, history, **triple.run_arguments())


__all__ = ["CommandRun", "CommandTriple", "check_determinism", "run_triple"]
