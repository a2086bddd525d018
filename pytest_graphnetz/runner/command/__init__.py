"""Command tasks: a user's training script run per (model, seed) in a process of its own.

Its modules, one concept each, are listed in docs/architecture.md; :mod:`.child` and
:mod:`.server` are the programs that run in the user's interpreter (standard library only,
started by path). The script side (what a user's script imports) is
:mod:`pytest_graphnetz.script`.
"""

from __future__ import annotations

from pytest_graphnetz.runner.command.task import (
    Command,
    CommandError,
    DataFiles,
    NondeterministicScriptError,
)

__all__ = ["Command", "CommandError", "DataFiles", "NondeterministicScriptError"]
