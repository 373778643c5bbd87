"""Convergent edits: upstream made the change omni made, so there is nothing left to carry.

diff3's first rule: the same change on both sides is no conflict. omni's statements and
upstream's compare as syntax trees, so comments, quotes and wrapping do not matter.
"""

from __future__ import annotations

import ast
from collections.abc import Sequence

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


def echo(code: str, new: Sequence[Stmt]) -> Stmt | None:
    """A new upstream statement that nearly repeats one of the block's: both sides added
    the same code in their own words, and placing the block next to it could run it twice.

    Compound statements count by their header (``if has_kv_transfer_group():``), simple
    ones by their whole text.
    """
    try:
        mine = ast.parse(dedent_code(code)).body
    except SyntaxError:
        return None
    keys = [_first_line(node) for node in mine]
    for stmt in new:
        for key in keys:
            if key == stmt.key or (not stmt.clauses and similarity(key, stmt.key) >= ECHO):
                return stmt
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
