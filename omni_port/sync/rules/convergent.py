"""Convergent edits: upstream made the change omni made, so there is nothing left to carry.

diff3's first rule: the same change on both sides is no conflict. omni's statements and
upstream's compare as syntax trees, so comments, quotes and wrapping do not matter.
"""

from __future__ import annotations

import ast
from collections.abc import Callable, Sequence

from omni_port.pyast.diff import similarity
from omni_port.pyast.syntax import Stmt, dedent_code

#: Least similarity of a new upstream statement to one of the block's for an echo.
ECHO = 0.9


def statements(code: str) -> list[str] | None:
    """The statements of ``code`` as comparable trees (None when it does not parse)."""
    try:
        tree = ast.parse(dedent_code(code))
    except SyntaxError:
        return None
    return [ast.dump(node) for node in tree.body]


def same_code(omni: str, upstream: str) -> bool:
    """Whether ``omni`` and ``upstream`` are the same statements (an empty deletion
    counts as the same as nothing)."""
    mine, theirs = statements(omni), statements(upstream)
    return mine is not None and mine == theirs


def holds(code: str, stmts: Sequence[Stmt], text: str) -> bool:
    """Whether the statements ``stmts`` (whose source is ``text``) are exactly ``code``."""
    return bool(stmts) and same_code(code, text)


def echo(code: str, new: Sequence[Stmt], source: Callable[[Stmt], str]) -> Stmt | None:
    """A new upstream statement that nearly repeats one of the block's: both sides added
    the same code in their own words, and placing the block next to it could run it twice.

    Simple statements compare by their whole text; compound ones by their header
    (``if has_kv_transfer_group():``) or, when the header was reworded, by the whole
    statement (``source`` gives an upstream statement's code).
    """
    try:
        mine = ast.parse(dedent_code(code)).body
    except SyntaxError:
        return None
    for stmt in new:
        for node in mine:
            key = _first_line(node)
            if key == stmt.key or (not stmt.clauses and similarity(key, stmt.key) >= ECHO):
                return stmt
            theirs = _whole(source(stmt)) if stmt.clauses and key != ast.unparse(node) else None
            if theirs is not None and similarity(ast.unparse(node), theirs) >= ECHO:
                return stmt
    return None


def _whole(code: str) -> str | None:
    """A statement's code in one normal form (None when it does not parse)."""
    try:
        return ast.unparse(ast.parse(dedent_code(code)))
    except SyntaxError:
        return None


def _first_line(node: ast.stmt) -> str:
    """The key ``syntax`` gives a statement: a compound statement's header, else the whole."""
    if isinstance(node, ast.If | ast.For | ast.While | ast.With | ast.Try | ast.AsyncWith):
        shallow = ast.parse(ast.unparse(node)).body[0]
        for name in ("body", "orelse", "handlers", "finalbody"):
            if hasattr(shallow, name):
                setattr(shallow, name, [])
        return " ".join(ast.unparse(shallow).split("\n"))
    return ast.unparse(node)
