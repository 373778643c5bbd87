"""Pair libcst statements with their ``ast`` nodes to build statement trees.

libcst says which comment lines belong to which body (a statement's leading lines, a
body's footer); ``ast`` gives exact line numbers and normalized keys. Both parsers read
the same text and agree on its statements, so one walk pairs them.
"""

from __future__ import annotations

import ast
from collections.abc import Iterator, Sequence
from typing import Any, cast

import libcst as cst

from omni_port.pyast.syntax import (
    NAMED,
    Comment,
    Stmt,
    Suite,
    Tree,
    case_key,
    first_line,
    header_key,
    indentation,
    names_of,
    simple_key,
    syntax_error,
    with_module_header,
)


def build(text: str, path: str, module_ast: ast.Module) -> Tree:
    """The statement tree of ``text``, whose ``ast`` parse is ``module_ast``."""
    try:
        module_cst = cst.parse_module(text)
    except cst.ParserSyntaxError as exc:
        raise syntax_error(path, text, exc.raw_line, exc.raw_column + 1, exc.message) from None
    lines = tuple(text.split("\n")[:-1] if text.endswith("\n") else text.split("\n"))
    builder = _Builder(lines)
    header = builder.comments(module_cst.header, 1)
    body = builder.suite("", module_cst.body, module_ast.body, module_cst.footer, len(header) + 1)
    if header:
        body = with_module_header(body, header)
    return Tree(path, lines, body)


class _Builder:
    """Walks libcst and ast statements side by side."""

    def __init__(self, lines: tuple[str, ...]) -> None:
        self.lines = lines

    def comments(
        self, empty_lines: Sequence[cst.EmptyLine], first_line: int
    ) -> tuple[Comment, ...]:
        found = []
        for offset, empty in enumerate(empty_lines):
            if empty.comment is not None:
                line = first_line + offset
                text = self.lines[line - 1]
                found.append(Comment(line, text.index("#") + 1, empty.comment.value))
        return tuple(found)

    def suite(
        self,
        label: str,
        cst_stmts: Sequence[cst.BaseStatement],
        ast_stmts: list[ast.stmt],
        footer: Sequence[cst.EmptyLine],
        first_line: int,
    ) -> Suite:
        stmts: list[Stmt] = []
        pending = list(ast_stmts)
        for node in cst_stmts:
            count = len(node.body) if isinstance(node, cst.SimpleStatementLine) else 1
            consumed, pending = pending[:count], pending[count:]
            stmts.append(self.stmt(node, consumed))
        last = stmts[-1].full_end if stmts else first_line - 1
        footer_comments = self.comments(footer, last + 1)
        indent = indentation(self.lines[stmts[0].start - 1]) if stmts else ""
        return Suite(label, indent, tuple(stmts), footer_comments, last + len(footer))

    def stmt(self, node: cst.BaseStatement, nodes: list[ast.stmt]) -> Stmt:
        first = nodes[0]
        start = first_line(first)
        leading_lines = node.leading_lines if hasattr(node, "leading_lines") else ()
        lead = start - len(leading_lines)
        leading = self.comments(leading_lines, lead)
        end = max(n.end_lineno or n.lineno for n in nodes)
        if isinstance(node, cst.SimpleStatementLine):
            reads, writes = names_of(nodes)
            key = "; ".join(simple_key(n) for n in nodes)
            return Stmt(
                key, type(first).__name__, "", lead, start, end, end, leading, (), reads, writes
            )
        clauses = tuple(self.clauses(node, first))
        # The bodies' statements know their names already: walk the header alone.
        reads, writes = names_of(nodes, header_only=True)
        nested = [s for clause in clauses for s in clause.stmts]
        reads = reads.union(*(s.reads for s in nested))
        writes = writes.union(*(s.writes for s in nested))
        full_end = max([end, *(c.end for c in clauses)])
        name = getattr(first, "name", "") if isinstance(first, NAMED) else ""
        return Stmt(
            header_key(first),
            type(first).__name__,
            name,
            lead,
            start,
            end,
            full_end,
            leading,
            clauses,
            reads,
            writes,
        )

    def clauses(self, node: cst.BaseStatement, tree: ast.stmt) -> Iterator[Suite]:
        if isinstance(node, cst.Match) and isinstance(tree, ast.Match):
            for case, case_ast in zip(node.cases, tree.cases, strict=True):
                yield self.body(case_key(case_ast), case.body, case_ast.body)
            return
        # Every other compound statement has a main body in both trees.
        main_body: cst.BaseSuite = cast(Any, node).body
        yield self.body("", main_body, cast(Any, tree).body)
        if isinstance(node, cst.If):
            yield from self._else_chain(
                node.orelse, tree.orelse if isinstance(tree, ast.If) else []
            )
        elif isinstance(node, cst.Try | cst.TryStar) and isinstance(tree, ast.Try | ast.TryStar):
            handlers: Sequence[Any] = node.handlers
            for handler, handler_ast in zip(handlers, tree.handlers, strict=True):
                yield self.body(header_key(handler_ast), handler.body, handler_ast.body)
            if node.orelse is not None:
                yield self.body("else:", node.orelse.body, tree.orelse)
            if node.finalbody is not None:
                yield self.body("finally:", node.finalbody.body, tree.finalbody)
        elif isinstance(node, cst.For | cst.While) and node.orelse is not None:
            yield self.body("else:", node.orelse.body, cast(Any, tree).orelse)

    def _else_chain(
        self, orelse: cst.If | cst.Else | None, tree: list[ast.stmt]
    ) -> Iterator[Suite]:
        while orelse is not None:
            if isinstance(orelse, cst.Else):
                yield self.body("else:", orelse.body, tree)
                return
            elif_ast = tree[0]
            assert isinstance(elif_ast, ast.If)
            yield self.body("el" + header_key(elif_ast), orelse.body, elif_ast.body)
            orelse, tree = orelse.orelse, elif_ast.orelse

    def body(self, label: str, block: cst.BaseSuite, tree: list[ast.stmt]) -> Suite:
        if isinstance(block, cst.IndentedBlock):
            start = first_line(tree[0]) if tree else 0
            first_lead = start - len(getattr(block.body[0], "leading_lines", ()))
            return self.suite(label, block.body, tree, block.footer, first_lead)
        stmts = tuple(self.inline(tree))
        return Suite(label, None, stmts, (), stmts[-1].full_end if stmts else 0)

    def inline(self, tree: list[ast.stmt]) -> Iterator[Stmt]:
        for node in tree:
            line = node.lineno
            reads, writes = names_of([node])
            yield Stmt(
                simple_key(node),
                type(node).__name__,
                "",
                line,
                line,
                line,
                line,
                (),
                (),
                reads,
                writes,
            )
