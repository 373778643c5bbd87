"""The statement tree: each statement's names equal a full walk of its syntax."""

from __future__ import annotations

import ast
import difflib

import pytest

from omni_port.errors import BadInput
from omni_port.extract import basedetect
from omni_port.model import Code, Suite
from omni_port.pyast import diff, packages, parser
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


# --- how deep a tree may nest -----------------------------------------------------------------

#: Expressions nested ``n`` levels deep, each kind a way real syntax nests.
NESTED = {
    "sum": lambda n: " + ".join(["a"] * n),
    "attributes": lambda n: "a" + ".b" * n,
    "calls": lambda n: "f" + "()" * n,
    "subscripts": lambda n: "a" + "[0]" * n,
    "not": lambda n: "not " * n + "a",
    "lists": lambda n: "[" * n + "]" * n,
    "lambdas": lambda n: "lambda: " * n + "a",
    "conditionals": lambda n: " if a else ".join(["b"] * n),
}


def _module(expression: str) -> str:
    """A module whose line 4 holds ``expression``, after a long flat line (line 2)."""
    flat = "[" + ", ".join(["0"] * 3000) + "]"
    return f"def f(a, b):\n    c = {flat}\n    d = 1\n    return {expression}\n"


@pytest.mark.parametrize("kind", sorted(NESTED))
def test_a_tree_deeper_than_the_limit_is_refused_at_its_line(kind: str) -> None:
    parse(_module(NESTED[kind](parser.MAX_DEPTH - 10)), "t.py")
    with pytest.raises(BadInput) as error:
        parse(_module(NESTED[kind](parser.MAX_DEPTH + 10)), "t.py")
    (finding,) = error.value.findings
    assert (finding.code, finding.path, finding.line) == (Code.OP002, "t.py", 4)


@pytest.mark.parametrize(
    "expression",
    [
        pytest.param(NESTED["sum"](100_000), id="recursion-error"),
        pytest.param("-" * 10_000 + "a", id="memory-error"),
    ],
)
def test_a_text_pythons_parser_gives_up_on_is_refused_at_its_line(expression: str) -> None:
    with pytest.raises(BadInput) as error:
        parse(_module(expression), "t.py")
    (finding,) = error.value.findings
    assert (finding.code, finding.line, finding.col) == (Code.OP002, 4, 5)
    assert parser.module_or_none(_module(expression)) is None
    assert parser.member_source(_module(expression), "", "f") is None
    (compiled,) = parser.compile_findings("t.py", _module(NESTED["sum"](100_000)))
    assert (compiled.code, compiled.line) == (Code.OP501, 4)


def test_the_depth_check_is_no_recursion() -> None:
    """The check walks level by level: a tree too deep for every recursive walk is refused,
    never a RecursionError of its own."""
    deep = ast.parse(_module(NESTED["sum"](2000)))
    with pytest.raises(parser.TooDeep) as error:
        parser.check_depth(deep, "", "t.py")
    assert error.value.lineno == 4


def test_a_module_too_deep_to_walk_is_read_as_one_that_does_not_parse() -> None:
    """Upstream modules read outside ``parse``: ranked as a base, read for names."""
    text = "class NPUModelRunner:\n    def f(self, a):\n        return " + NESTED["sum"](400) + "\n"
    assert basedetect.method_keys(text) == {}
    world = packages.World({"deep": text}, frozenset(), frozenset())
    assert world.tree("deep") is None


def test_a_method_many_releases_leave_alone_has_its_keys_computed_once_a_run(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """issue 46: ranking thirty vLLM releases unparsed every statement of every method of
    each; a method whose lines another release had gets that release's keys (the same)."""
    from omni_port.pyast import memo

    same = "    def f(self):\n        x = 1\n        if x:\n            return x\n"
    one = f"class R:\n{same}    def g(self):\n        return 1\n"
    two = f"class R:\n{same}    def g(self):\n        return 2\n"
    alone = [basedetect.method_keys(text, "R") for text in (one, two)]
    keyed: list[str] = []
    real = basedetect.node_key

    def counted(node: ast.stmt) -> str:
        keyed.append(real(node))
        return keyed[-1]

    monkeypatch.setattr(basedetect, "node_key", counted)
    with memo.run():
        first = basedetect.method_keys(one, "R")
        done = len(keyed)
        second = basedetect.method_keys(two, "R")
    assert [first, second] == alone
    assert keyed[done:] == ["return 2"], "f's keys come from the first release"
