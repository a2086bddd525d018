"""``-k`` blind to the ``graphnetz`` marker (pytest_graphnetz/plugin/selection.py), pinned to the
pytest in use.

The plugin reads ``-k`` itself because pytest matches marker names as keywords, and clears
``config.option.keyword`` while the collection hook runs so that pytest's own pass does not
apply it again. These tests fail when pytest changes what that rests on: if pytest stops matching
marker names with ``-k`` (then selection.py can go), or if its ``-k`` selects differently from
ours where our marker plays no part (a grammar or keyword-set change to follow). The selections
users see are in tests/test_usability.py (``test_k_does_not_match_the_graphnetz_marker``).
"""

from __future__ import annotations

import pytest

from pytest_graphnetz.plugin.selection import matcher, parse

INI = "[pytest]\nmarkers =\n    slow: slow\n    graphnetz: gate\n"

MARKED = """
import pytest

pytestmark = pytest.mark.graphnetz


def test_graph_classification():
    pass


def test_node_task():
    pass
"""

# Every source of -k names: module, class and function names, parameter ids, other markers,
# attributes set on the function, extra keywords; and the pytester directory (the root
# directory, which pytest does not match).
PLAIN = """
import pytest


class TestKlass:
    def test_inside(self):
        pass


@pytest.mark.parametrize("size", ["tiny", "huge"])
def test_param(size):
    pass


@pytest.mark.slow
def test_slow_one():
    pass


def test_with_attribute():
    pass


test_with_attribute.heavy_run = True


def test_extra(request):
    pass
"""

CONFTEST = """
def pytest_itemcollected(item):
    if item.name == "test_extra":
        item.extra_keyword_matches.add("bonus_kw")
"""


@pytest.mark.parametrize("expression, names, expected", [
    ("graph", {"test_Graph_x"}, True),                 # part of a name, any case
    ("graph", {"test_node"}, False),
    ("not graph", {"test_node"}, True),
    ("a and not b", {"xa", "yb"}, False),
    ("a or b and c", {"a"}, True),                     # and binds tighter than or
    ("(a or b) and c", {"a"}, False),
    ("not not a", {"a"}, True),
    ("test_x[1-2] and m.py", {"test_x[1-2]", "m.py"}, True),
])
def test_the_grammar_reads_as_pytest_documents_it(expression: str, names: set[str],
                                                  expected: bool) -> None:
    parsed = parse(expression)
    assert parsed is not None and parsed(matcher(names)) is expected


def _selected(result: pytest.RunResult) -> list[str]:
    return [line for line in result.stdout.lines if "::" in line]


def test_pytest_still_matches_marker_names_with_k(pytester: pytest.Pytester) -> None:
    # Without the plugin, -k "graph" selects test_node_task by its marker alone. When pytest
    # stops doing this, selection.py and its hook are no longer needed.
    pytester.makeini(INI)
    pytester.makepyfile(test_marked=MARKED)
    plain = pytester.runpytest("-p", "no:graphnetz", "--collect-only", "-q", "-k", "graph")
    assert [s.split("::")[1] for s in _selected(plain)] == ["test_graph_classification",
                                                            "test_node_task"]
    ours = pytester.runpytest("--collect-only", "-q", "-k", "graph")
    assert [s.split("::")[1] for s in _selected(ours)] == ["test_graph_classification"]


# Each expression holds a name that is part of "graphnetz" (so the plugin applies it itself)
# and names from every source above.
EXPRESSIONS = [
    "graph", "not graph", "a", "not a", "Klass and not p", "tiny or z", "h and not huge",
    "slow or net", "heavy_run or g", "bonus_kw or (r and not inside)", "test_plain and e",
    "test_k and not t", "TEST_PARAM and (tiny or huge) and not n", "[tiny] or phne",
    "test_plain.py::TestKlass or z",
]


@pytest.mark.parametrize("expression", EXPRESSIONS)
def test_our_k_selects_what_pytest_does_where_the_marker_plays_no_part(
        pytester: pytest.Pytester, expression: str) -> None:
    assert parse(expression) is not None   # the plugin reads it (else pytest would apply it)
    pytester.makeini(INI)
    pytester.makeconftest(CONFTEST)
    pytester.makepyfile(test_plain=PLAIN, test_marked=MARKED)  # a marked item: ours applies
    theirs = pytester.runpytest("-p", "no:graphnetz", "--collect-only", "-q", "-k", expression)
    ours = pytester.runpytest("--collect-only", "-q", "-k", expression)
    plain = [s for s in _selected(theirs) if s.startswith("test_plain.py")]
    assert plain == [s for s in _selected(ours) if s.startswith("test_plain.py")]
    assert ours.ret == theirs.ret


@pytest.mark.parametrize("expression", ['"graph"', "graph(x=1)", "graph and", "(graph",
                                        "not", "graph or or node", "a = b"])
def test_expressions_outside_the_grammar_are_left_to_pytest(
        pytester: pytest.Pytester, expression: str) -> None:
    assert parse(expression) is None
    pytester.makeini(INI)
    pytester.makepyfile(test_marked=MARKED)
    theirs = pytester.runpytest("-p", "no:graphnetz", "--collect-only", "-q", "-k", expression)
    ours = pytester.runpytest("--collect-only", "-q", "-k", expression)
    # pytest's own answer, error message included
    assert (ours.ret, _selected(ours)) == (theirs.ret, _selected(theirs))
    assert ours.stderr.lines == theirs.stderr.lines


def test_k_is_restored_for_what_reads_it_after_collection(pytester: pytest.Pytester) -> None:
    # The plugin clears config.option.keyword only while the collection hook runs.
    pytester.makeini(INI)
    pytester.makeconftest("""
        def pytest_collection_finish(session):
            print("keyword after collection:", repr(session.config.option.keyword))
    """)
    pytester.makepyfile(test_marked=MARKED)
    result = pytester.runpytest("-s", "-k", "not graph")
    result.assert_outcomes(passed=1, deselected=1)
    result.stdout.fnmatch_lines(["*keyword after collection: 'not graph'*"])


# -- what -k selects among gates -------------------------------------------------------------------

MARKED_AND_SLOW = MARKED + """

@pytest.mark.slow
def test_slow_node_task():
    pass
"""


@pytest.mark.parametrize("args, selected", [
    (["-k", "graph"], ["test_graph_classification"]),
    (["-k", "not graph"], ["test_node_task", "test_slow_node_task"]),
    (["-k", "node and not slow"], ["test_node_task"]),
    (["-k", "slow"], ["test_slow_node_task"]),             # other markers still match -k
    (["-m", "graphnetz"], ["test_graph_classification", "test_node_task", "test_slow_node_task"]),
    (["-m", "graphnetz", "-k", "graph"], ["test_graph_classification"]),
    (["-m", "not graphnetz", "-k", "node"], []),
    (["-k", "graphnetz"], ["test_graph_classification", "test_node_task",   # asked by name
                           "test_slow_node_task"]),
])
def test_k_does_not_match_the_graphnetz_marker(pytester, args, selected):
    pytester.makeini("[pytest]\nmarkers =\n    slow: slow\n")
    pytester.makepyfile(test_marked=MARKED_AND_SLOW)
    result = pytester.runpytest("--collect-only", "-q", *args)
    got = [line.split("::")[1] for line in result.stdout.lines if "::" in line]
    assert got == selected
