"""Make a generated module's names resolve: import what copies need, drop what splicing orphaned.

A free name of copied upstream code is imported the way the upstream module imports it;
a name the upstream module defines itself is imported from that module; a name upstream
only imports under ``if TYPE_CHECKING:`` is imported under the same guard. An import of
the omni code that nothing uses any more is removed, unless the source left it unused too.
"""

from __future__ import annotations

import ast
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from typing import Protocol

from omni_port.model import Code, Finding, ModulePatches, Stmt, Suite, Tree, Upstream
from omni_port.pyast import importedit
from omni_port.pyast.names import NameIssue, issues
from omni_port.pyast.parser import compile_findings
from omni_port.pyast.syntax import import_bindings

HEADER = "# Imported for code copied from upstream (added by omni-port).\n"


class Segment(Protocol):
    """A piece of module text that may be rewritten in place."""

    text: str

    @property
    def tag(self) -> str: ...


@dataclass(frozen=True, slots=True)
class Binding:
    """How the upstream module makes a name available."""

    #: The import statement binding just this name.
    statement: str
    #: Only under ``if TYPE_CHECKING:``.
    type_checking: bool


def settle(segments: Sequence[Segment], module: ModulePatches, upstream: Upstream) -> list[Finding]:
    """Fix the imports of the assembled segments in place; unresolvable names are findings.
    Text that does not compile is left as it is (the sync reports it, OP501): a recorded
    resolution may leave a body empty."""
    text = _text_of(segments)
    if compile_findings(module.name, text):
        return []
    found = issues(text, module.name)
    undefined = sorted({i.name for i in found if i.kind == "undefined"})
    table = upstream_bindings(upstream.tree, upstream.module)
    resolved = {name: table[name] for name in undefined if name in table}
    orphaned = {i.name for i in found if i.kind == "unused-import"} - set(module.unused_imports)
    before = [segment.text for segment in segments]
    if orphaned:
        _drop_imports(segments, orphaned)
    if resolved:
        _add_imports(segments, resolved, text)
    unresolved = [i for i in found if i.kind == "undefined" and i.name not in resolved]
    return [
        Finding(
            Code.OP303,
            module.name,
            line,
            f"name {issue.name!r} is not defined here and {upstream.label} "
            "does not define or import it",
            issue.col,
        )
        for issue, line in _final_lines(unresolved, before, segments, module.name)
    ]


def _text_of(segments: Sequence[Segment]) -> str:
    return "".join(segment.text for segment in segments)


def _final_lines(
    unresolved: Sequence[NameIssue], before: Sequence[str], segments: Sequence[Segment], path: str
) -> list[tuple[NameIssue, int]]:
    """Each issue with its line in the text after the import edits."""
    moved = [(issue, _line_after_edits(issue.line, before, segments)) for issue in unresolved]
    found = [(issue, line) for issue, line in moved if line is not None]
    if len(found) == len(moved):
        return found
    final = issues(_text_of(segments), path)
    return [(issue, issue.line) for issue in final if issue.kind == "undefined"]


def _line_after_edits(line: int, before: Sequence[str], segments: Sequence[Segment]) -> int | None:
    """Where ``line`` of the text before import edits is now: shifted by the lines the
    edited segments above it gained or lost; None when an edited segment touches it."""
    shift = newlines = 0
    for old, segment in zip(before, segments, strict=True):
        first = newlines + 1
        newlines += old.count("\n")
        if first > line:
            break
        if segment.text == old:
            continue
        last = newlines if old.endswith("\n") else newlines + 1
        if line <= last:
            return None
        shift += segment.text.count("\n") - old.count("\n")
    return line + shift


def upstream_bindings(tree: Tree, module: str) -> dict[str, Binding]:
    """Every module-level name of the upstream module and how to get it."""
    runtime: dict[str, Binding] = {}
    checking: dict[str, Binding] = {}
    for stmt, guarded in _module_level(tree.body, False):
        target = checking if guarded else runtime
        if stmt.kind in ("Import", "ImportFrom"):
            for name, statement in _import_statements(stmt.key, module):
                target.setdefault(name, Binding(statement, guarded))
        elif not guarded:
            for name in _defined(stmt):
                runtime.setdefault(name, Binding(f"from {module} import {name}", False))
    return {**checking, **runtime}


def _module_level(suite: Suite, guarded: bool) -> Iterator[tuple[Stmt, bool]]:
    """Module-level statements, looking inside module-level ``if`` / ``try`` but not defs."""
    for stmt in suite.stmts:
        yield stmt, guarded
        if stmt.kind in ("If", "Try", "TryStar"):
            for n, clause in enumerate(stmt.clauses):
                inner = guarded or (
                    n == 0 and stmt.key in ("if TYPE_CHECKING:", "if typing.TYPE_CHECKING:")
                )
                yield from _module_level(clause, inner)


def _import_statements(key: str, module: str) -> Iterator[tuple[str, str]]:
    node = ast.parse(key).body[0]
    if isinstance(node, ast.Import):
        for alias in node.names:
            name = alias.asname or alias.name.split(".")[0]
            yield name, f"import {alias.name}" + (f" as {alias.asname}" if alias.asname else "")
    elif isinstance(node, ast.ImportFrom):
        source = _absolute(node, module)
        for alias in node.names:
            if alias.name == "*":
                continue
            name = alias.asname or alias.name
            yield (
                name,
                f"from {source} import {alias.name}"
                + (f" as {alias.asname}" if alias.asname else ""),
            )


def _absolute(node: ast.ImportFrom, module: str) -> str:
    if not node.level:
        return node.module or ""
    package = module.split(".")[: -node.level]
    return ".".join([*package, *([node.module] if node.module else [])])


def _defined(stmt: Stmt) -> Iterator[str]:
    if stmt.name:
        yield stmt.name
        return
    if stmt.kind in ("Assign", "AnnAssign"):
        node = ast.parse(stmt.key).body[0]
        targets = node.targets if isinstance(node, ast.Assign) else [node.target]  # type: ignore[attr-defined]
        for target in targets:
            for sub in ast.walk(target):
                if isinstance(sub, ast.Name):
                    yield sub.id


def _add_imports(segments: Sequence[Segment], resolved: dict[str, Binding], text: str) -> None:
    runtime = sorted({b.statement for b in resolved.values() if not b.type_checking})
    checking = sorted({b.statement for b in resolved.values() if b.type_checking})
    block = HEADER + "".join(line + "\n" for line in runtime)
    if checking:
        if "TYPE_CHECKING" not in _top_level_names(text):
            block += "from typing import TYPE_CHECKING\n"
        block += "\nif TYPE_CHECKING:\n" + "".join(f"    {line}\n" for line in checking)
    for segment in segments:
        split = _after_last_import(segment.text) if segment.tag != "header" else None
        if split is not None:
            head, tail = segment.text[:split], segment.text[split:]
            segment.text = head + "\n" + block + tail
            return
    header = segments[0]
    header.text = header.text + block + "\n"


def _top_level_names(text: str) -> set[str]:
    names: set[str] = set()
    for node in ast.parse(text).body:
        if isinstance(node, ast.Import | ast.ImportFrom):
            names.update(a.asname or a.name.split(".")[0] for a in node.names)
    return names


def _after_last_import(text: str) -> int | None:
    """Offset just after the last top-level import of a module-level code chunk."""
    try:
        tree = ast.parse(text)
    except SyntaxError:
        return None
    last = None
    for node in tree.body:
        if isinstance(node, ast.Import | ast.ImportFrom):
            last = node.end_lineno
    if last is None:
        return None
    lines = text.split("\n")
    return sum(len(line) + 1 for line in lines[:last])


def _drop_imports(segments: Sequence[Segment], names: set[str]) -> None:
    for segment in segments:
        if segment.tag == "header" or not _binds_any(segment.text, names):
            continue
        segment.text = importedit.drop_names(segment.text, names)


def _binds_any(text: str, names: set[str]) -> bool:
    try:
        body = ast.parse(text).body
    except SyntaxError:
        return False
    return any(
        isinstance(node, ast.Import | ast.ImportFrom) and names & set(import_bindings(node))
        for node in body
    )
