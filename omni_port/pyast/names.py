"""Module-level name facts from pyflakes: undefined names, unused and duplicate imports."""

from __future__ import annotations

import ast
from dataclasses import dataclass

from pyflakes import checker, messages

from omni_port.pyast import memo
from omni_port.pyast.syntax import import_bindings


@dataclass(frozen=True, slots=True)
class NameIssue:
    """One pyflakes message that matters to a generated module."""

    #: "undefined", "unused-import", "redefinition"
    kind: str
    #: The name concerned (the binding name for an import).
    name: str
    line: int
    col: int
    message: str


def issues(text: str, path: str) -> list[NameIssue]:
    """Undefined names, unused imports and redefinitions of ``text`` (which must parse)."""
    return list(_issues(text, path))


@memo.memoized
def _issues(text: str, path: str) -> tuple[NameIssue, ...]:
    # Kept for the run: verify and the trials a sync judges check the same modules.
    tree = ast.parse(text, filename=path)
    found = checker.Checker(tree, filename=path)
    imports: dict[int, tuple[str, ...]] | None = None
    result = []
    for message in sorted(found.messages, key=lambda m: (m.lineno, m.col)):
        kind = _kind(message)
        if kind is None:
            continue
        name = str(message.message_args[0])
        if kind == "unused-import":
            # Walked only for a module that has one (most have none).
            imports = _import_bindings(tree) if imports is None else imports
            name = _binding_name(name, imports.get(message.lineno, ()))
        text_message = message.message % message.message_args
        result.append(NameIssue(kind, name, message.lineno, message.col + 1, text_message))
    return tuple(result)


def _kind(message: messages.Message) -> str | None:
    if isinstance(message, messages.UndefinedName):
        return "undefined"
    if isinstance(message, messages.UnusedImport):
        return "unused-import"
    if isinstance(message, messages.RedefinedWhileUnused):
        return "redefinition"
    return None


def _import_bindings(tree: ast.Module) -> dict[int, tuple[str, ...]]:
    """Binding names of every import, by the line pyflakes reports for it."""
    bindings: dict[int, list[str]] = {}
    for node in ast.walk(tree):
        if isinstance(node, ast.Import | ast.ImportFrom):
            bindings.setdefault(node.lineno, []).extend(import_bindings(node))
    return {line: tuple(names) for line, names in bindings.items()}


def _binding_name(reported: str, candidates: tuple[str, ...]) -> str:
    """pyflakes names ``a.b`` or ``a.b as c``; the module binds ``c``, ``b`` or ``a``."""
    if " as " in reported:
        return reported.rsplit(" as ", 1)[1]
    for candidate in candidates:
        if reported == candidate or reported.endswith("." + candidate):
            return candidate
    for candidate in candidates:
        if reported.split(".")[0] == candidate:
            return candidate
    return reported.rsplit(".", 1)[-1]


def unused_import_names(text: str, path: str) -> tuple[str, ...]:
    """Binding names of the imports ``text`` leaves unused, sorted."""
    return tuple(sorted({i.name for i in issues(text, path) if i.kind == "unused-import"}))
