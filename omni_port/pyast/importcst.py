"""Remove top-level import aliases from module code with libcst, keeping its formatting.

The reference for ``importedit``, which does the common cases without loading libcst.
"""

from __future__ import annotations

import libcst as cst


def drop_names(code: str, names: set[str]) -> str:
    """``code`` without the top-level import aliases that bind one of ``names``."""
    return cst.parse_module(code).visit(_DropNames(names)).code


class _DropNames(cst.CSTTransformer):
    """Remove top-level import aliases that bind one of ``names``."""

    def __init__(self, names: set[str]) -> None:
        super().__init__()
        self.names = names
        self.depth = 0

    def visit_FunctionDef(self, node: cst.FunctionDef) -> bool:
        return False

    def visit_ClassDef(self, node: cst.ClassDef) -> bool:
        return False

    def leave_Import(
        self, original: cst.Import, updated: cst.Import
    ) -> cst.Import | cst.RemovalSentinel:
        kept = [a for a in updated.names if _alias_binding(a, dotted_root=True) not in self.names]
        if len(kept) == len(updated.names):
            return updated
        if not kept:
            return cst.RemoveFromParent()
        return updated.with_changes(names=_without_last_comma(kept))

    def leave_ImportFrom(
        self, original: cst.ImportFrom, updated: cst.ImportFrom
    ) -> cst.ImportFrom | cst.RemovalSentinel:
        if isinstance(updated.names, cst.ImportStar):
            return updated
        kept = [a for a in updated.names if _alias_binding(a, dotted_root=False) not in self.names]
        if len(kept) == len(updated.names):
            return updated
        if not kept:
            return cst.RemoveFromParent()
        # A trailing comma is fine inside parentheses, a syntax error without them.
        return updated.with_changes(names=kept if updated.lpar else _without_last_comma(kept))


def _alias_binding(alias: cst.ImportAlias, dotted_root: bool) -> str:
    if alias.asname is not None and isinstance(alias.asname.name, cst.Name):
        return alias.asname.name.value
    name = cst.Module(body=[]).code_for_node(alias.name)
    return name.split(".")[0] if dotted_root else name


def _without_last_comma(aliases: list[cst.ImportAlias]) -> list[cst.ImportAlias]:
    return [*aliases[:-1], aliases[-1].with_changes(comma=cst.MaybeSentinel.DEFAULT)]
