"""The exit analysis the early-exit rule reads (``sync.evidence.exits``): which statements
leave a method, of what kind, and where they stand.

Generators are out of scope: a ``return`` in a method that yields ends an iteration, it
hands the caller no value, so the rule says nothing of them (``generator``).
"""

from __future__ import annotations

import ast
import textwrap

from omni_port.pyast.parser import parse
from omni_port.sync.evidence.exits import ExitKind, code_exits, exits, generator

METHOD = """
def run(self, batch):
    for item in batch:
        if item is None:
            return None
        while item.busy:
            return item
    with self.lock():
        try:
            out = self.step(batch)
        except KeyError:
            raise RuntimeError("lost")
        finally:
            self.release()
    match batch:
        case []:
            return
    def helper(x):
        return x
    class Local:
        def f(self):
            raise ValueError
    if not out:
        raise
    return out
"""


def _exits() -> list[tuple[str, ExitKind, tuple[str, ...]]]:
    tree = parse(METHOD, "m.py")
    body = tree.body.stmts[0].clauses[0]
    return [(e.stmt.key, e.kind, e.path) for e in exits(body)]


def test_every_exit_of_the_method_with_its_kind_and_enclosing_headers() -> None:
    assert _exits() == [
        ("return None", ExitKind.NOTHING, ("for item in batch:", "if item is None:")),
        ("return item", ExitKind.VALUE, ("for item in batch:", "while item.busy:")),
        (
            "raise RuntimeError('lost')",
            ExitKind.RAISE,
            ("with self.lock():", "try:", "except KeyError:"),
        ),
        ("return", ExitKind.NOTHING, ("match batch:", "case []:")),
        ("raise", ExitKind.RAISE, ("if not out:",)),
        ("return out", ExitKind.VALUE, ()),
    ]


def test_the_exits_of_nested_functions_and_classes_are_theirs() -> None:
    keys = [key for key, _, _ in _exits()]
    assert "return x" not in keys
    assert "raise ValueError" not in keys


def test_an_exit_knows_the_statements_it_lies_in() -> None:
    tree = parse(METHOD, "m.py")
    body = tree.body.stmts[0].clauses[0]
    found = exits(body)
    loop = found[0]
    assert loop.within(body, 0, 1)  # inside the `for`, the method's first statement
    assert not loop.within(body, 1, 3)
    assert loop.suite.stmts[loop.index] is loop.stmt


def test_exits_of_code_text_as_a_block_holds_it() -> None:
    nodes = ast.parse(
        textwrap.dedent(
            """
            if not batch:
                return self.wrap(self.empty())
            def later():
                return 1
            with self.lock():
                raise KeyError
            """
        )
    ).body
    found = code_exits(nodes)
    assert [e.key for e in found] == ["return self.wrap(self.empty())", "raise KeyError"]
    assert [e.kind for e in found] == [ExitKind.VALUE, ExitKind.RAISE]


def test_a_method_that_yields_is_a_generator_unless_only_a_nested_function_does() -> None:
    assert generator(ast.parse("for x in y:\n    yield x\nreturn").body)
    assert generator(ast.parse("z = yield from other()").body)
    assert not generator(ast.parse("def inner():\n    yield 1\nreturn inner").body)
    assert not generator(ast.parse("f = lambda: (yield)\nreturn f").body)
    assert generator(ast.parse("def run(self):\n    yield 1").body)
    assert not generator(ast.parse("def run(self):\n    return 1").body)
