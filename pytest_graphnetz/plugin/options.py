"""The plugin's options read: each value of a ``--graphnetz-*`` option or its ini key (declared
in :mod:`.declared`) with a message that names where it came from.

:func:`getter` reads one, the command line first, else the ini file;
:func:`named` says where a value came from (the option, or the ini key and its file), so that a
bad value sends the user to the place to fix it (:func:`converted`, :func:`path_value`).
:func:`parse_seeds` and :func:`parse_adaptive` (:mod:`pytest_graphnetz.base.seedspec`, the one
reader
the library uses too) read the seed spec. :mod:`.settings` builds
the :class:`~.settings.Settings` value from these.

Standard library and pytest only at import: pytest loads the plugin on every run.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from pytest_graphnetz.base.seedspec import MAX_SEEDS, SEED_LIMIT, parse_adaptive, parse_seeds
from pytest_graphnetz.plugin.declared import (
    DEFAULT_ALPHA,
    DEFAULT_SEEDS,
    MIN_ALPHA,
    OPTIONS,
    RESOLVABLE,
    Option,
)


def refuse_command_line_only(config: pytest.Config) -> None:
    """A usage error for an ini key of a command-line-only option: refreshing baselines (and
    forcing past the ratchet, or accepting one cell's loss) is a decision someone makes for
    one run; as a line in a committed pyproject.toml, a pull request could make CI rewrite the
    very baselines that gate it, every later run would pass by writing its candidate, and an
    accepted cell would have its loss accepted on every refresh."""
    for option in OPTIONS:
        if not option.command_line_only:
            continue
        try:
            present = config.getini(option.dest) is not None  # registered with default None
        except ValueError:  # set, to something that is not even a truth value
            present = True
        if not present:
            continue
        where = f" in {config.inipath.name}" if config.inipath else ""
        if option.name == "accept":
            raise pytest.UsageError(
                f"graphnetz: the ini key `{option.dest}`{where} is refused: --graphnetz-accept "
                "is command line only: as a committed line it would accept that cell's loss "
                "on every refresh, not the one someone decided on; remove the key and pass "
                "`--graphnetz-accept TASK/MODEL` with --graphnetz-update-baselines (or run "
                "`graphnetz refresh NODEID --accept TASK/MODEL`) for the refresh that accepts it")
        raise pytest.UsageError(
            f"graphnetz: the ini key `{option.dest}`{where} is refused: "
            f"--graphnetz-{option.name} is command line only, so no committed "
            "configuration can make CI refresh the baselines that gate it; remove the key "
            f"and pass `--graphnetz-{option.name}` (or run `graphnetz refresh`) when you "
            "mean to")


def named(config: pytest.Config, name: str) -> str:
    """How a message names option ``name``: where its value came from, the command line
    (``--graphnetz-workers``) or the ini file (``the ini key `graphnetz_workers` in
    tox.ini``), so the user is sent to the place to fix."""
    option = declared(name)
    if config.getoption(option.dest) is not None:
        return f"`--graphnetz-{name}`"
    where = f" in {config.inipath.name}" if config.inipath else ""
    return f"the ini key `{option.dest}`{where}"


def converted(config: pytest.Config, name: str, text: Any, convert: Callable[[str], Any],
              expected: str) -> Any:
    """``convert(text)`` for option ``name``; a usage error naming the option and ``expected``
    when ``text`` is not ASCII digits or does not convert."""
    if not str(text).isascii() or "_" in str(text):  # int() and float() read "1_0" and "٣"
        raise pytest.UsageError(
            f"graphnetz: {named(config, name)} must be {expected} written with the ASCII "
            f"digits 0-9 (no `_` separators), got {text!r}")
    try:
        return convert(str(text).strip())
    except ValueError:
        raise pytest.UsageError(
            f"graphnetz: {named(config, name)} must be {expected}, got {text!r}") from None


def getter(config: pytest.Config) -> Callable[[str, Any], Any]:
    """``get(name, default)``: the command-line value, else the ini value, else ``default``."""
    def get(name: str, default: Any) -> Any:
        option = declared(name)
        value = config.getoption(option.dest)
        if value is None and not option.command_line_only:
            try:
                value = config.getini(option.dest)
            except (ValueError, pytest.UsageError) as exc:  # a flag's value: not a truth value
                raise pytest.UsageError(
                    f"graphnetz: the ini key `{option.dest}` must be true or false (also "
                    f"1/0, yes/no, on/off): {exc}") from None
        return default if value in (None, "", False) else value
    return get


def declared(name: str) -> Option:
    """The declared option ``name`` (as in ``--graphnetz-<name>``)."""
    return next(o for o in OPTIONS if o.name == name)


def path_value(config: pytest.Config, name: str, *, follow: bool = True) -> Path:
    """A path option: relative to the invocation directory (command line) or the ini file.
    ``follow=False`` (a file the session writes): made absolute without following a link at
    the end, so :func:`~pytest_graphnetz.report.session_files.file_problem` sees and refuses the
    link."""
    dest = declared(name).dest
    value = config.getoption(dest)
    if value is not None:
        path = config.invocation_params.dir / str(value)
    else:
        base = config.inipath.parent if config.inipath else config.rootpath
        path = base / str(config.getini(dest))
    return path.resolve() if follow else Path(os.path.abspath(path))


__all__ = ["DEFAULT_ALPHA", "DEFAULT_SEEDS", "MAX_SEEDS", "MIN_ALPHA", "OPTIONS", "RESOLVABLE",
           "SEED_LIMIT", "Option", "converted", "declared", "getter", "named",
           "parse_adaptive", "parse_seeds", "path_value", "refuse_command_line_only"]
