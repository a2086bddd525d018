"""``benchmarks/plugin_overhead.py --option-calls`` counts one more pytest layer per variant:
each variant must register exactly the options it says (35, or none), through the call it
names, so that a difference of counts is that call's cost. The counting itself needs valgrind;
what each variant leaves in pytest's parser does not."""

from __future__ import annotations

from collections.abc import Iterator
from types import ModuleType

import pytest

from pytest_graphnetz.plugin.declared import OPTIONS
from tests.helpers.benchmark_scripts import loaded


@pytest.fixture(scope="module")
def overhead() -> Iterator[ModuleType]:
    yield from loaded("plugin_overhead", on_path=True)


def ours(parser: pytest.Parser) -> tuple[list[str], list[str]]:
    """The ``--graphnetz-*`` flags in the parser's argparse actions, and our ini keys."""
    flags = [flag for action in parser.optparser._actions for flag in action.option_strings
             if flag.startswith("--graphnetz-")]
    return flags, [name for name in parser._inidict if name.startswith("graphnetz_")]


def test_each_variant_registers_what_it_names(overhead: ModuleType) -> None:
    every = [f"--graphnetz-{option.name}" for option in OPTIONS]
    keys = [option.dest for option in OPTIONS]
    registered = {variant: ours(overhead.probe(variant)) for variant in overhead.OPTION_CALLS}
    none, argparse_only, inner, public, with_ini, parsed, parsed_only = overhead.OPTION_CALLS
    assert registered[none] == registered[parsed_only] == ([], [])
    for variant in (argparse_only, inner, public):
        assert registered[variant] == (every, [])
    assert registered[with_ini] == registered[parsed] == (every, keys)
    # argparse alone leaves pytest's own records of an option untouched; the others do not.
    assert not overhead.probe(argparse_only)._opt2dest.keys() & set(every)
    assert set(every) <= overhead.probe(inner)._opt2dest.keys()
