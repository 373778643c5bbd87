"""The exits of a method: its ``return`` and ``raise`` statements, where they stand.

An exit is a statement that leaves the method: a ``return`` (of a value, or of nothing)
or a ``raise``. Exits of nested functions and classes are theirs, not the method's. A
method that yields is a generator, whose ``return`` ends an iteration rather than handing
a value to the caller: the exits of generators are out of scope (``generator``).
"""

from __future__ import annotations

import ast
import enum
from collections.abc import Iterator, Sequence
from dataclasses import dataclass

from omni_port.model import Stmt, Suite
from omni_port.pyast.syntax import node_key

#: Statement kinds whose bodies are another scope: their exits are not the method's.
_SCOPES = frozenset({"FunctionDef", "AsyncFunctionDef", "ClassDef"})
#: The keys of a return that hands nothing back.
_NOTHING = frozenset({"return", "return None"})


class ExitKind(enum.Enum):
    """What an exit hands the caller: exits are compared like with like."""

    VALUE = "return of a value"
    NOTHING = "return of nothing"
    RAISE = "raise"


@dataclass(frozen=True, slots=True)
class Exit:
    """One exit of a method's body."""

    stmt: Stmt
    kind: ExitKind
    #: Each enclosing statement, outermost first, then the exit itself: its suite and its
    #: index there.
    chain: tuple[tuple[Suite, int], ...]
    #: The keys of the enclosing compound statements' headers, outermost first, each
    #: followed by its clause's label when the exit is in another clause than the main
    #: body (``else:``, ``except KeyError:``, ``case []:``).
    path: tuple[str, ...]

    @property
    def suite(self) -> Suite:
        return self.chain[-1][0]

    @property
    def index(self) -> int:
        return self.chain[-1][1]

    def within(self, suite: Suite, start: int, stop: int) -> bool:
        """Whether the exit is one of ``suite``'s statements ``start..stop-1`` or inside one."""
        return any(s is suite and start <= i < stop for s, i in self.chain)


def kind_of(stmt: Stmt) -> ExitKind | None:
    """The kind of exit ``stmt`` is (None when it is no exit)."""
    if stmt.kind == "Raise":
        return ExitKind.RAISE
    if stmt.kind == "Return":
        return ExitKind.NOTHING if stmt.key in _NOTHING else ExitKind.VALUE
    return None


def exits(body: Suite) -> list[Exit]:
    """The exits of a method whose body is ``body``, in order, nested scopes left out."""
    return list(_walk(body, (), ()))


def _walk(
    suite: Suite, chain: tuple[tuple[Suite, int], ...], path: tuple[str, ...]
) -> Iterator[Exit]:
    for index, stmt in enumerate(suite.stmts):
        here = (*chain, (suite, index))
        kind = kind_of(stmt)
        if kind is not None:
            yield Exit(stmt, kind, here, path)
        if stmt.kind in _SCOPES:
            continue
        for clause in stmt.clauses:
            inner = (*path, stmt.key, clause.label) if clause.label else (*path, stmt.key)
            yield from _walk(clause, here, inner)


def node_kind(node: ast.stmt) -> ExitKind | None:
    """The kind of exit an ``ast`` statement is (None when it is no exit)."""
    if isinstance(node, ast.Raise):
        return ExitKind.RAISE
    if not isinstance(node, ast.Return):
        return None
    nothing = node.value is None or (
        isinstance(node.value, ast.Constant) and node.value.value is None
    )
    return ExitKind.NOTHING if nothing else ExitKind.VALUE


@dataclass(frozen=True, slots=True)
class CodeExit:
    """An exit of some code read as ``ast`` (a block's): its key, as ``Stmt.key`` has it."""

    key: str
    kind: ExitKind


def code_exits(nodes: Sequence[ast.stmt]) -> list[CodeExit]:
    """The exits of some code (a block's), in order, nested scopes left out."""
    found: list[CodeExit] = []
    for node in nodes:
        kind = node_kind(node)
        if kind is not None:
            found.append(CodeExit(node_key(node), kind))
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
            continue
        for body in _bodies(node):
            found.extend(code_exits(body))
    return found


def gist(nodes: Sequence[ast.stmt]) -> str:
    """Some code as the keys of its statements, comments left out, for a note."""
    return "; ".join(node_key(node) for node in nodes)


def _bodies(node: ast.stmt) -> list[list[ast.stmt]]:
    bodies = [getattr(node, f, None) for f in ("body", "orelse", "finalbody")]
    found = [b for b in bodies if isinstance(b, list)]
    found += [h.body for h in getattr(node, "handlers", [])]
    found += [c.body for c in getattr(node, "cases", [])]
    return found


def generator(nodes: Sequence[ast.stmt]) -> bool:
    """Whether a function yields: ``nodes`` is the function's definition alone, or its
    body (nested scopes left out)."""
    if len(nodes) == 1 and isinstance(nodes[0], ast.FunctionDef | ast.AsyncFunctionDef):
        nodes = nodes[0].body
    return any(_yields(node) for node in nodes)


def _yields(node: ast.AST) -> bool:
    if isinstance(node, ast.Yield | ast.YieldFrom):
        return True
    if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef | ast.Lambda):
        return False
    return any(_yields(child) for child in ast.iter_child_nodes(node))
