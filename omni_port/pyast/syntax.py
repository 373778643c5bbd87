"""Statement trees: libcst for structure and comments, the CPython parser for positions and keys.

Both parsers read the same text and agree on its statements, so one walk pairs each libcst
statement with its ``ast`` node(s). libcst says which comment lines belong to which body
(a statement's leading lines, a body's footer); ``ast`` gives exact line numbers and the
normalized key of every statement (``ast.unparse``: comments, quotes, wrapping and
formatter style vanish).
"""

from __future__ import annotations

import ast
import copy
import hashlib
import io
import tokenize
from collections.abc import Iterator, Sequence
from typing import TypeVar, overload

from omni_port.errors import BadInput
from omni_port.model import Code
from omni_port.model import Comment as Comment  # the statement tree's records
from omni_port.model import Stmt as Stmt
from omni_port.model import Suite as Suite
from omni_port.model import Tree as Tree
from omni_port.pyast import memo


def syntax_error(path: str, text: str, line: int, col: int, message: str) -> BadInput:
    lines = text.split("\n")
    source_line = lines[line - 1] if 0 < line <= len(lines) else ""
    caret = " " * max(col - 1, 0) + "^"
    return BadInput.at(
        Code.OP002, path, line, f"syntax error: {message}\n    {source_line}\n    {caret}", col
    )


def with_module_header(body: Suite, header: tuple[Comment, ...]) -> Suite:
    """Module header comments are leading comments of the first statement."""
    if not body.stmts:
        return Suite(body.label, body.indent, body.stmts, header + body.footer, body.end)
    first = body.stmts[0]
    first = Stmt(
        first.key,
        first.kind,
        first.name,
        1,
        first.start,
        first.end,
        first.full_end,
        header + first.leading,
        first.clauses,
        first.reads,
        first.writes,
    )
    return Suite(body.label, body.indent, (first, *body.stmts[1:]), body.footer, body.end)


NAMED = (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)
_BODY_FIELDS = ("body", "orelse", "handlers", "finalbody", "cases")


def simple_key(node: ast.stmt) -> str:
    """Normalized text of a simple statement; a quoted annotation counts as unquoted."""
    if isinstance(node, ast.AnnAssign):
        node = copy.copy(node)
        node.annotation = _unquote(node.annotation)
    return ast.unparse(node)


def header_key(node: ast.AST) -> str:
    """Normalized header of a compound statement, e.g. ``with foo('x'):``."""
    shallow = copy.copy(node)
    for field in _BODY_FIELDS:
        if hasattr(shallow, field):
            setattr(shallow, field, [])
    if isinstance(shallow, ast.FunctionDef | ast.AsyncFunctionDef):
        shallow.args = _unquote_arguments(shallow.args)
        shallow.returns = _unquote(shallow.returns) if shallow.returns else None
    return " ".join(ast.unparse(shallow).split("\n"))


def is_compound(node: ast.stmt) -> bool:
    """Whether ``node`` has bodies of its own (a statement tree keys it by its header)."""
    return any(getattr(node, name, None) for name in ("body", "handlers", "cases"))


def node_key(node: ast.stmt) -> str:
    """The key a statement tree gives ``node``: its header for a compound statement."""
    return header_key(node) if is_compound(node) else simple_key(node)


class _Unquote(ast.NodeTransformer):
    """Forward references written as strings become the expressions they name."""

    def visit_Constant(self, node: ast.Constant) -> ast.AST:
        if isinstance(node.value, str):
            try:
                return ast.parse(node.value, mode="eval").body
            except SyntaxError:
                return node
        return node


_A = TypeVar("_A", bound=ast.AST)


def _unquote_arguments(arguments: ast.arguments) -> ast.arguments:
    """Arguments with unquoted annotations (defaults stay as they are: they are values)."""
    every = [*arguments.posonlyargs, *arguments.args, *arguments.kwonlyargs]
    every += [a for a in (arguments.vararg, arguments.kwarg) if a is not None]
    if not any(a.annotation is not None for a in every):
        return arguments
    arguments = copy.deepcopy(arguments)
    for arg in [
        *arguments.posonlyargs,
        *arguments.args,
        *arguments.kwonlyargs,
        *(a for a in (arguments.vararg, arguments.kwarg) if a is not None),
    ]:
        if arg.annotation is not None:
            arg.annotation = _unquote(arg.annotation)
    return arguments


def _unquote(node: _A) -> _A:
    if not any(isinstance(n, ast.Constant) and isinstance(n.value, str) for n in ast.walk(node)):
        return node
    result: _A = _Unquote().visit(copy.deepcopy(node))
    return result


def case_key(case: ast.match_case) -> str:
    guard = f" if {ast.unparse(case.guard)}" if case.guard is not None else ""
    return f"case {ast.unparse(case.pattern)}{guard}:"


def first_line(node: ast.stmt) -> int:
    decorators: list[ast.expr] = getattr(node, "decorator_list", None) or []
    return min([node.lineno, *(d.lineno for d in decorators)])


def indentation(line: str) -> str:
    return line[: len(line) - len(line.lstrip())]


def names_of(
    nodes: Sequence[ast.AST], header_only: bool = False
) -> tuple[frozenset[str], frozenset[str]]:
    """Names the nodes read and bind (``x``, ``self.x``).

    ``header_only`` leaves out the statements nested in them (a compound statement's
    bodies), whose names a caller already has: the tree is then walked once in all.
    """
    reads: set[str] = set()
    writes: set[str] = set()
    pending = list(nodes)
    roots = {id(n) for n in nodes}
    while pending:
        node = pending.pop()
        orelse = node.orelse if isinstance(node, ast.If) else []
        if len(orelse) == 1 and isinstance(orelse[0], ast.If):
            roots.add(id(orelse[0]))  # an ``elif``: its test is part of this header
        if isinstance(node, ast.Name):
            (reads if isinstance(node.ctx, ast.Load) else writes).add(node.id)
        elif (
            isinstance(node, ast.Attribute)
            and isinstance(node.value, ast.Name)
            and node.value.id == "self"
        ):
            (reads if isinstance(node.ctx, ast.Load) else writes).add("self." + node.attr)
        for child in ast.iter_child_nodes(node):
            if not (header_only and isinstance(child, ast.stmt) and id(child) not in roots):
                pending.append(child)
    return frozenset(reads), frozenset(writes)


def import_bindings(node: ast.Import | ast.ImportFrom) -> list[str]:
    """Names an import statement binds: ``import a.b`` binds ``a``; ``*`` binds nothing
    that can be named."""
    if isinstance(node, ast.Import):
        return [a.asname or a.name.split(".")[0] for a in node.names]
    return [a.asname or a.name for a in node.names if a.name != "*"]


def normalize(code: str) -> str:
    """Normalized key of one simple statement given as code (any indentation)."""
    tree = ast.parse(dedent_code(code))
    return "; ".join(ast.unparse(n) for n in tree.body)


def walk(suite: Suite, path: tuple[str, ...] = ()) -> Iterator[tuple[tuple[str, ...], Suite]]:
    """Every body under ``suite`` (itself included) with its path of headers."""
    yield path, suite
    for stmt in suite.stmts:
        for clause in stmt.clauses:
            inner = (*path, stmt.key) + ((clause.label,) if clause.label else ())
            yield from walk(clause, inner)


@overload
def find_def(body: Suite, name: str) -> Stmt | None: ...


@overload
def find_def(body: Sequence[ast.stmt], name: str) -> ast.stmt | None: ...


def find_def(body: Suite | Sequence[ast.stmt], name: str) -> Stmt | ast.stmt | None:
    """The def or class called ``name`` directly in ``body``, a statement tree's body or an
    ``ast`` one: the last one wins, as in Python."""
    found: Stmt | ast.stmt | None = None
    for item in body.stmts if isinstance(body, Suite) else body:
        if _def_name(item) == name:
            found = item
    return found


def is_docstring(stmt: Stmt) -> bool:
    """Whether ``stmt`` is a bare string: documentation, not code that runs."""
    return stmt.kind == "Expr" and stmt.key[:1] in ("'", '"')


def find_member(tree: Tree, owner: str, name: str) -> Stmt | None:
    """The definition ``name`` of class ``owner`` in ``tree`` (at module level when
    ``owner`` is "")."""
    if not owner:
        return find_def(tree.body, name)
    cls = find_def(tree.body, owner)
    if cls is None or not cls.clauses:
        return None
    return find_def(cls.clauses[0], name)


def _def_name(item: Stmt | ast.stmt) -> str:
    if isinstance(item, Stmt):
        return item.name
    return item.name if isinstance(item, NAMED) else ""


def dedent_code(code: str) -> str:
    """Remove the first code line's indentation from every line, string contents excepted."""
    first = next((line for line in code.split("\n") if line.strip()), "")
    prefix = indentation(first)
    return reindent(code, prefix, "") if prefix else code


#: What a string that spans lines needs: triple quotes, or a backslash before a line end.
_MULTILINE_STRING_MARKS = ('"""', "'''", "\\")


@memo.memoized
def string_interior_lines(code: str) -> frozenset[int]:
    """1-based lines of ``code`` that continue a multi-line string (their text is data)."""
    if not any(mark in code for mark in _MULTILINE_STRING_MARKS):
        return frozenset()  # most statements: no string can span lines, nothing to read
    interior: set[int] = set()
    opened: list[int] = []
    try:
        for token in tokenize.generate_tokens(io.StringIO(code).readline):
            kind = tokenize.tok_name[token.type]
            if kind == "FSTRING_START":
                opened.append(token.start[0])
            elif kind == "FSTRING_END" and opened:
                interior.update(range(opened.pop() + 1, token.end[0] + 1))
            elif token.type == tokenize.STRING and token.end[0] > token.start[0]:
                interior.update(range(token.start[0] + 1, token.end[0] + 1))
    except (tokenize.TokenError, IndentationError, SyntaxError):
        pass
    return frozenset(interior)


def reindent(code: str, old: str, new: str) -> str:
    """Swap the indentation prefix ``old`` for ``new`` on every line of ``code``.

    Lines inside multi-line strings are data and stay as they are; blank lines stay blank.
    """
    if old == new:
        return code
    interior = string_interior_lines(code)
    out = []
    for number, line in enumerate(code.split("\n"), start=1):
        if number in interior:
            out.append(line)
        elif not line.strip():
            out.append("")
        elif line.startswith(old):
            out.append(new + line[len(old) :])
        else:
            out.append(line)
    return "\n".join(out)


_BODY_MARK = " [body "


def full_key(stmt: Stmt) -> str:
    """A statement's key including a fingerprint of its bodies (for compound statements).

    Replaced or deleted statements are recorded this way, so that an upstream change
    anywhere inside one is noticed, not only a change of its header.
    """
    if not stmt.clauses:
        return stmt.key
    digest = hashlib.sha1(usedforsecurity=False)
    for clause in stmt.clauses:
        digest.update(clause.label.encode() + b"\0")
        for line in _nested_keys(clause):
            digest.update(line.encode() + b"\n")
    return f"{stmt.key}{_BODY_MARK}{digest.hexdigest()[:12]}]"


def split_full_key(key: str) -> tuple[str, str]:
    """(header or statement key, body fingerprint or "") of a ``full_key``."""
    if key.endswith("]") and _BODY_MARK in key:
        head, _, digest = key.rpartition(_BODY_MARK)
        return head, digest[:-1]
    return key, ""


def _nested_keys(suite: Suite) -> Iterator[str]:
    for stmt in suite.stmts:
        yield stmt.key
        for clause in stmt.clauses:
            yield clause.label
            yield from _nested_keys(clause)


def header_end(stmt: Stmt) -> int:
    """Last line of a compound statement's header (its decorators and ``def`` for a def)."""
    if not stmt.clauses or stmt.clauses[0].indent is None or not stmt.clauses[0].stmts:
        return stmt.start
    return stmt.clauses[0].stmts[0].lead - 1
