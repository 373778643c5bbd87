"""Remove top-level import aliases from module code, keeping its formatting as libcst would.

The usual case, an import alone on one line of the module body, is a line edit read from
``ast``. Anything else goes to libcst (``importcst``), loaded only then: importing libcst
costs a sync that drops one import more than the rest of its import handling. Both give
the same text; ``tests/test_importedit.py`` compares them.
"""

from __future__ import annotations

import ast
from collections.abc import Iterator, Sequence

#: Statements whose bodies libcst's transformer does not enter.
_OPAQUE = (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)
#: Characters whose line or whitespace rules libcst and ``str.split`` may read differently.
_UNUSUAL = ("\r", "\f", "\v", "\ufeff", "\x00")


def drop_names(code: str, names: set[str]) -> str:
    """``code`` without the top-level import aliases that bind one of ``names``.

    A statement left with no alias goes, with the comment and blank lines above it (unless
    it is the module's first statement, whose lines above are the module's header)."""
    edited = _line_edits(code, names)
    if edited is not None:
        return edited
    from omni_port.pyast import importcst

    return importcst.drop_names(code, names)


def _line_edits(code: str, names: set[str]) -> str | None:
    """``drop_names`` by line edits; None when the case is not one this reads for sure."""
    if not code.endswith("\n") or any(c in code for c in _UNUSUAL):
        return None
    try:
        body = ast.parse(code).body
    except (SyntaxError, ValueError):
        return None
    if any(_binds(node, names) for stmt in body for node in _nested_imports(stmt)):
        return None
    lines = code.split("\n")
    edits: list[tuple[int, int, str | None]] = []
    for index, node in enumerate(body):
        if not isinstance(node, ast.Import | ast.ImportFrom) or not _binds(node, names):
            continue
        if not _alone_on_its_line(body, index, lines):
            return None
        keep = [a for a in node.names if _binding(node, a) not in names]
        if keep:
            line = _without(lines[node.lineno - 1], node, keep)
            if line is None:
                return None
            edits.append((node.lineno, node.lineno, line))
        else:
            first = _first_line_owned(body, index, lines)
            if first is None:
                return None
            edits.append((first, node.lineno, None))
    if sum(1 for _, _, line in edits if line is None) == len(body):
        return None  # an empty module: libcst's header and footer rules decide
    for first, last, line in reversed(edits):
        lines[first - 1 : last] = [] if line is None else [line]
    return "\n".join(lines)


def _nested_imports(stmt: ast.stmt) -> Iterator[ast.Import | ast.ImportFrom]:
    """Imports inside ``stmt`` (under ``if``, ``try``...) that libcst's transformer visits."""
    if isinstance(stmt, _OPAQUE):
        return
    for inner in _inner_statements(stmt):
        if isinstance(inner, ast.Import | ast.ImportFrom):
            yield inner
        else:
            yield from _nested_imports(inner)


def _inner_statements(node: ast.AST) -> Iterator[ast.stmt]:
    """Statements in the bodies of ``node``, through ``except`` and ``case`` clauses."""
    for child in ast.iter_child_nodes(node):
        if isinstance(child, ast.stmt):
            yield child
        elif not isinstance(child, ast.expr):
            yield from _inner_statements(child)


def _binds(node: ast.Import | ast.ImportFrom, names: set[str]) -> bool:
    if isinstance(node, ast.ImportFrom) and node.names[0].name == "*":
        return False  # a star import is left alone
    return any(_binding(node, alias) in names for alias in node.names)


def _binding(node: ast.Import | ast.ImportFrom, alias: ast.alias) -> str:
    if alias.asname:
        return alias.asname
    return alias.name.split(".")[0] if isinstance(node, ast.Import) else alias.name


def _alone_on_its_line(body: Sequence[ast.stmt], index: int, lines: Sequence[str]) -> bool:
    """The statement is one line that holds nothing else (no ``;``, no continuation)."""
    node = body[index]
    if node.end_lineno != node.lineno or lines[node.lineno - 1].rstrip().endswith("\\"):
        return False
    before = body[index - 1] if index else None
    after = body[index + 1] if index + 1 < len(body) else None
    return (before is None or (before.end_lineno or 0) < node.lineno) and (
        after is None or after.lineno > node.lineno
    )


def _first_line_owned(body: Sequence[ast.stmt], index: int, lines: Sequence[str]) -> int | None:
    """The first line libcst removes with the statement: the comment and blank lines above
    it, back to the statement before (None when a compound statement before it may own
    some of them as its body's footer)."""
    node = body[index]
    if not index:
        return node.lineno
    before = body[index - 1]
    end = before.end_lineno or before.lineno
    if lines[end - 1].rstrip().endswith("\\"):
        return None
    between = lines[end : node.lineno - 1]
    compound = any(isinstance(child, ast.stmt) for child in ast.iter_child_nodes(before))
    if compound and any(between):
        return None
    return end + 1


def _without(line: str, node: ast.Import | ast.ImportFrom, keep: Sequence[ast.alias]) -> str | None:
    """``line`` with only the aliases ``keep``: each keeps its own comma (and the spaces
    around it) but the last; None when the aliases are not plain to read."""
    raw = line.encode("utf-8")  # ast's columns count UTF-8 bytes
    spans = [(a.col_offset, a.end_col_offset or a.col_offset) for a in node.names]
    if b"(" in raw[node.col_offset : spans[0][0]]:
        return None  # parenthesized: trailing commas and comments inside are libcst's
    for alias, (start, end) in zip(node.names, spans, strict=True):
        words = raw[start:end].decode("utf-8").split()
        if words not in ([alias.name], [alias.name, "as", alias.asname]):
            return None
    kept = [i for i, alias in enumerate(node.names) if alias in keep]
    pieces = [raw[spans[i][0] : spans[i + 1][0] if i != kept[-1] else spans[i][1]] for i in kept]
    return (raw[: spans[0][0]] + b"".join(pieces) + raw[spans[-1][1] :]).decode("utf-8")
