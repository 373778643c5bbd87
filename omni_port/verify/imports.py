"""Check 3: imports of the checked packages resolve against their pinned sources."""

from __future__ import annotations

import ast
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass

from omni_port.model import Code, Finding, Severity
from omni_port.pyast.packages import STATEMENTS, World, absolute_module, dotted_name, unresolved
from omni_port.verify.context import Context, dotted_module


@dataclass(frozen=True, slots=True)
class _ImportRef:
    """One imported module or name."""

    path: str
    line: int
    col: int
    #: Absolute dotted module.
    module: str
    #: Name imported from it ("" for ``import module``).
    name: str

    def statement(self) -> str:
        return f"from {self.module} import {self.name}" if self.name else f"import {self.module}"


_IMPORT_ERRORS = frozenset({"ImportError", "ModuleNotFoundError", "Exception", "BaseException"})


def import_findings(
    world: World, trees: Mapping[str, ast.Module], context: Context
) -> Iterator[Finding]:
    unverified: dict[str, list[_ImportRef]] = {}
    for name, tree in trees.items():
        package = world.package_of(dotted_module(context.package, name))
        for ref in _import_refs(name, tree, package):
            if isinstance(ref, Finding):
                yield ref
            elif ref.module.split(".")[0] not in context.checked_packages:
                continue
            elif not world.verifiable(ref.module):
                unverified.setdefault(ref.module.split(".")[0], []).append(ref)
            elif (problem := unresolved(world, ref.module, ref.name)) is not None:
                message = f"`{ref.statement()}` does not resolve: {problem}"
                yield Finding(Code.OP505, name, ref.line, message, ref.col)
    for top, refs in sorted(unverified.items()):
        yield _unverified_note(top, refs, context.unavailable.get(top, ""))


def _unverified_note(top: str, refs: list[_ImportRef], why: str) -> Finding:
    first = min(refs, key=lambda r: (r.path, r.line, r.col))
    reason = f": {why}" if why else ""
    message = f"unverified: source of {top} not available{reason} ({len(refs)} imports not checked)"
    return Finding(Code.OP506, first.path, first.line, message, first.col, Severity.NOTE)


def _import_refs(path: str, tree: ast.Module, package: str) -> Iterator[_ImportRef | Finding]:
    """Every unguarded import of ``tree`` (a try that catches ImportError guards one)."""
    for node, guarded in _import_nodes(tree.body):
        if guarded:
            continue
        col = node.col_offset + 1
        if isinstance(node, ast.Import):
            yield from (_ImportRef(path, node.lineno, col, a.name, "") for a in node.names)
            continue
        module = absolute_module(node, package)
        if module is None:
            message = f"relative import beyond the top of package {package or '(none)'}"
            yield Finding(Code.OP505, path, node.lineno, message, col)
            continue
        for alias in node.names:
            name = "" if alias.name == "*" else alias.name
            yield _ImportRef(path, node.lineno, col, module, name)


def _import_nodes(
    body: Sequence[ast.AST], guarded: bool = False
) -> Iterator[tuple[ast.Import | ast.ImportFrom, bool]]:
    for node in body:
        if isinstance(node, ast.Import | ast.ImportFrom):
            yield node, guarded
        elif isinstance(node, ast.Try | ast.TryStar):
            yield from _import_nodes(node.body, guarded or _catches_import_error(node))
            yield from _import_nodes([*node.handlers, *node.orelse, *node.finalbody], guarded)
        elif isinstance(node, STATEMENTS):
            yield from _import_nodes(list(ast.iter_child_nodes(node)), guarded)


def _catches_import_error(node: ast.Try | ast.TryStar) -> bool:
    for handler in node.handlers:
        if handler.type is None:
            return True
        kinds = handler.type.elts if isinstance(handler.type, ast.Tuple) else [handler.type]
        if any(dotted_name(k).rpartition(".")[2] in _IMPORT_ERRORS for k in kinds):
            return True
    return False
