"""``-k`` without the ``graphnetz`` marker's name.

pytest's ``-k`` matches marker names as keywords, so ``-k graph`` would select every test marked
``graphnetz`` and ``-k "not graph"`` none of them. The plugin applies ``-k`` itself where our
marker could change the answer, matching against the names pytest documents for ``-k`` (the
names of the item and its parents, extra keywords, attributes set on the test function, the
markers) minus our marker; ``-m graphnetz`` still selects by it, and an expression that names
``graphnetz`` keeps pytest's meaning.

Only public data is read (``item.listchain()``, ``listextrakeywords()``, ``iter_markers()``,
the test function's attributes), and the expression is parsed here, by the grammar pytest
documents for ``-k`` (``and``, ``or``, ``not``, parentheses, names). An expression outside it
(quotes, ``=``, a syntax error) is left to pytest, with its own message.

One thing cannot be done without touching pytest's state: pytest's own ``-k`` pass runs after
ours and would still drop what ``-k "not graph"`` keeps. So while the collection hook runs, the
``keyword`` attribute of ``config.option`` (the public namespace of command-line values) is
empty, and it is put back after. tests/cover/test_plugin_keyword.py pins both facts to the pytest in
use: that pytest still matches marker names, and that this module selects what pytest selects
wherever our marker plays no part.

This module is a plugin of its own, registered by ``pytest_configure`` only for a run given
``-k``: without it our marker's name changes nothing, and a run need not load the parser.

Standard library and pytest only.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass

import pytest

from pytest_graphnetz.plugin.declared import MARKER

# pytest's -k/-m name token (its documented grammar: `ident: (\w|:|\+|-|\.|\[|\]|\\|/)+`).
_NAME = re.compile(r"(?:\w|:|\+|-|\.|\[|\]|\\|/)+")
# Function attributes pytest does not offer to -k (pytest >= 8.4; older ones offer them all).
IGNORED_ATTRIBUTES = frozenset({"pytestmark", "cache_parameters"})

Matcher = Callable[[str], bool]        # does a -k name match the item?
Expression = Callable[[Matcher], bool]


@dataclass(frozen=True)
class Selection:
    """The items ``-k`` keeps and those it leaves out, in collection order."""

    kept: list[pytest.Item]
    deselected: list[pytest.Item]


def parse(text: str) -> Expression | None:
    """``text`` (a ``-k`` expression) as a function of a name matcher; None when it is empty
    or outside the grammar (pytest then applies it, or says what is wrong with it)."""
    tokens = _tokens(text)
    if tokens is None or not tokens:
        return None
    parser = _Parser(tokens)
    try:
        expression = parser.expression()
    except SyntaxError:
        return None
    return expression if parser.done() else None


def names(item: pytest.Item) -> set[str]:
    """The names ``-k`` matches against for ``item``, without our marker: the names of the item
    and its parents (not the session's, nor the root directory's), its extra keywords, the
    attributes set on its test function, and its other markers."""
    directory = getattr(pytest, "Directory", None)  # pytest >= 8: the root directory is a node
    found: set[str] = set()
    for node in item.listchain():
        if isinstance(node, pytest.Session) or (
                directory is not None and isinstance(node, directory)
                and isinstance(node.parent, pytest.Session)):
            continue
        found.add(node.name)
    found.update(item.listextrakeywords())
    function = getattr(item, "function", None)
    if function is not None:
        found.update(n for n in vars(function)
                     if not n.startswith("_") and n not in IGNORED_ATTRIBUTES)
    found.update(mark.name for mark in item.iter_markers() if mark.name != MARKER)
    return found


def marker_blind(keyword: str, items: list[pytest.Item]) -> Selection | None:
    """``-k keyword`` applied to ``items`` without our marker's name; None where our marker
    cannot change pytest's answer (no item carries it, no name of the expression is part of
    ``graphnetz``, or the expression names it) or the expression is not ours to read."""
    text = keyword.strip()
    if not text or MARKER in text.lower():
        return None
    if not any(name.lower() in MARKER for name in _NAME.findall(text)
               if name not in ("and", "or", "not")):
        return None
    if not any(item.get_closest_marker(MARKER) is not None for item in items):
        return None
    expression = parse(text)
    if expression is None:
        return None
    kept: list[pytest.Item] = []
    deselected: list[pytest.Item] = []
    for item in items:
        (kept if expression(matcher(names(item))) else deselected).append(item)
    return Selection(kept, deselected)


def matcher(names: set[str]) -> Matcher:
    """pytest's ``-k`` match: a name matches when it is part of one of ``names``, ignoring
    case."""
    lowered = [n.lower() for n in names]
    return lambda sub: any(sub.lower() in n for n in lowered)


def _tokens(text: str) -> list[str] | None:
    """``(``, ``)``, ``and``, ``or``, ``not`` and names; None at any other character."""
    out, pos = [], 0
    while pos < len(text):
        if text[pos] in " \t":
            pos += 1
        elif text[pos] in "()":
            out.append(text[pos])
            pos += 1
        else:
            match = _NAME.match(text, pos)
            if match is None:
                return None
            out.append(match.group(0))
            pos = match.end()
    return out


class _Parser:
    """Recursive descent over pytest's grammar::

        expr:     and_expr ('or' and_expr)*
        and_expr: not_expr ('and' not_expr)*
        not_expr: 'not' not_expr | '(' expr ')' | name
    """

    def __init__(self, tokens: list[str]) -> None:
        self.tokens = tokens
        self.at = 0

    def done(self) -> bool:
        return self.at == len(self.tokens)

    def _peek(self) -> str | None:
        return self.tokens[self.at] if self.at < len(self.tokens) else None

    def _take(self, token: str) -> bool:
        if self._peek() == token:
            self.at += 1
            return True
        return False

    def expression(self) -> Expression:
        parts = [self._and()]
        while self._take("or"):
            parts.append(self._and())
        return parts[0] if len(parts) == 1 else (lambda m: any(p(m) for p in parts))

    def _and(self) -> Expression:
        parts = [self._not()]
        while self._take("and"):
            parts.append(self._not())
        return parts[0] if len(parts) == 1 else (lambda m: all(p(m) for p in parts))

    def _not(self) -> Expression:
        if self._take("not"):
            inner = self._not()
            return lambda m: not inner(m)
        if self._take("("):
            inner = self.expression()
            if not self._take(")"):
                raise SyntaxError("expected )")
            return inner
        token = self._peek()
        if token is None or token in ("(", ")", "and", "or", "not"):
            raise SyntaxError(f"expected a name, got {token!r}")
        self.at += 1
        name: str = token
        return lambda m: m(name)


@contextmanager
def keyword_applied(config: pytest.Config, items: list[pytest.Item]) -> Iterator[None]:
    """For the collection hook: apply ``-k`` blind to our marker (see the module docstring)
    before pytest's own pass, which, inside the block, applies ``-m`` only."""
    keyword = str(config.option.keyword or "")
    selection = marker_blind(keyword, items)
    if selection is None:
        yield
        return
    if selection.deselected:
        config.hook.pytest_deselected(items=selection.deselected)
        items[:] = selection.kept
    config.option.keyword = ""  # applied: pytest's pass would apply it again, with our marker
    try:
        yield
    finally:
        config.option.keyword = keyword


@pytest.hookimpl(wrapper=True)
def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]
                                  ) -> Iterator[None]:
    """``-k`` blind to the ``graphnetz`` marker's name: ``-k graph`` no longer selects every
    gate; ``-m graphnetz`` and ``-k graphnetz`` keep pytest's meaning."""
    with keyword_applied(config, items):
        return (yield)


__all__ = ["IGNORED_ATTRIBUTES", "Selection", "keyword_applied", "marker_blind", "matcher",
           "names", "parse", "pytest_collection_modifyitems"]
