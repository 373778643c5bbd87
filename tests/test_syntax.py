"""The statement tree: each statement's names equal a full walk of its syntax."""

from __future__ import annotations

import ast
import difflib

import pytest

from omni_port.model import Suite
from omni_port.pyast import diff
from omni_port.pyast.parser import parse
from omni_port.pyast.syntax import names_of
from tests.golden import DATA

SHAPES = """
def f(self, a, b=1):
    if a.x:
        self.y = a
    elif b > self.limit:
        for i in range(b):
            total = i
        else:
            total = None
    else:
        if self.z:
            w = 1
    try:
        v = g(a)
    except (KeyError, self.Error) as err:
        v = err
    else:
        v += 1
    finally:
        self.done = True
    with self.lock as held, open(b) as fh:
        data = fh.read(held)
    match a:
        case {"k": value} if value > self.floor:
            out = value
        case _:
            out = None
    while (n := self.next()) is not None:
        last = n
    return out, last, data, total, w, v
"""


def _stmts(suite: Suite) -> list[tuple[int, frozenset[str], frozenset[str]]]:
    found = []
    for stmt in suite.stmts:
        found.append((stmt.start, stmt.reads, stmt.writes))
        for clause in stmt.clauses:
            found.extend(_stmts(clause))
    return found


@pytest.mark.parametrize(
    "text",
    [
        pytest.param(SHAPES, id="every-compound-shape"),
        pytest.param((DATA / "upstream" / "v1" / "model_runner_v1.py").read_text(), id="upstream"),
    ],
)
def test_names_of_each_statement_equal_a_full_walk(text: str) -> None:
    tree = parse(text, "t.py")
    by_line = {
        node.lineno: node
        for node in ast.walk(ast.parse(text))
        if isinstance(node, ast.stmt) and not getattr(node, "decorator_list", None)
    }
    checked = 0
    for line, reads, writes in _stmts(tree.body):
        if line in by_line:
            assert (reads, writes) == names_of([by_line[line]]), line
            checked += 1
    assert checked > 20


def test_an_elif_test_is_part_of_the_if_header() -> None:
    node = ast.parse("if a:\n    pass\nelif b:\n    c = d\n").body[0]
    assert names_of([node], header_only=True) == (frozenset({"a", "b"}), frozenset())


@pytest.mark.parametrize(
    ("a", "b"),
    [
        pytest.param(("x", "y", "x"), ("x", "x", "z"), id="repeats"),
        pytest.param(("x",), ("y",), id="disjoint"),
        pytest.param((), ("y",), id="one-empty"),
        pytest.param((), (), id="both-empty"),
        pytest.param(("a", "b", "c", "d"), ("d", "c", "b", "a", "a"), id="reordered"),
    ],
)
def test_quick_ratio_is_difflibs(a: tuple[str, ...], b: tuple[str, ...]) -> None:
    """similarity's bound is exactly SequenceMatcher's quick_ratio, float for float."""
    expected = difflib.SequenceMatcher(None, a, b, autojunk=False).quick_ratio()
    assert diff._quick_ratio(a, b) == expected
