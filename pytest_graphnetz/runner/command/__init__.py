"""Command tasks: a user's training script run per (model, seed) in a process of its own.

- :mod:`.keyed`: one command triple as the cache keeps it (its key with the run's seed map,
  the files it derived, the check that a hit's reads are unchanged, the determinism rerun);
- :mod:`.task`: the values a user writes (:class:`Command`, :class:`DataFiles`) and the errors;
- :mod:`.run`: one run of one seed (placeholders, environment, metrics, determinism rerun);
- :mod:`.process`: the run as a process group of its own, its output on disk and bounded;
- :mod:`.output`: the metrics file read into a History;
- :mod:`.reads`: what a run read, and whether a cache hit still reads the same;
- :mod:`.warm`: fork servers, so a run pays a fork instead of importing torch;
- :mod:`.child`, :mod:`.server`: the programs that run in the user's interpreter (standard
  library only, started by path).

The script side (what a user's script imports) is :mod:`pytest_graphnetz.script`.
"""

from __future__ import annotations

from pytest_graphnetz.runner.command.task import (
    Command,
    CommandError,
    DataFiles,
    NondeterministicScriptError,
)

__all__ = ["Command", "CommandError", "DataFiles", "NondeterministicScriptError"]
