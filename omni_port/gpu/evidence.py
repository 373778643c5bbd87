"""The evidence of an omni change: what a hunk of a copied method adds, edits and deletes.

A hunk is reduced to *items*: the omni statements it adds, the text it adds to or removes
from an upstream statement it edits, and the upstream statements it deletes. Imports,
docstrings, calls of the overridden method and bare control flow are no evidence: every
method has them in some form.
"""

from __future__ import annotations

import ast
import difflib
import enum
import keyword
import re
from collections import Counter
from collections.abc import Iterator
from dataclasses import dataclass, replace

from omni_port.model import Block, BlockKind, Stmt, Suite
from omni_port.pyast import diff
from omni_port.pyast.syntax import full_key, is_docstring, walk
from omni_port.report import shorten

#: An omni statement this similar to an upstream one it replaced is an edit of it.
EDITED = 0.6
#: Tokens of a statement or fragment: strings, names, numbers, ``**`` and punctuation.
LEX = re.compile(r"'(?:[^'\\]|\\.)*'|\"(?:[^\"\\]|\\.)*\"|\w+|\*\*|[^\w\s]")
_GENERIC = frozenset(keyword.kwlist) | {"self", "None", "True", "False"}


class ItemKind(enum.StrEnum):
    """One piece of evidence of an omni change."""

    STATEMENT = "statement"
    """An omni statement."""
    ADDED = "added"
    """Text omni added to an upstream statement."""
    REMOVED = "removed"
    """Text omni removed from an upstream statement."""
    DELETED = "deleted"
    """An upstream statement omni removed."""


@dataclass(frozen=True, slots=True)
class Item:
    kind: ItemKind
    #: The statement key, or the added / removed text.
    text: str
    #: The statement the item belongs to (the edited statement for ADDED / REMOVED).
    stmt: str
    #: Source line of that statement.
    line: int

    def describe(self) -> str:
        verb = {"statement": "", "added": "adds ", "removed": "removes ", "deleted": "deletes "}
        return f"{verb[self.kind.value]}`{shorten(self.text, 90)}`"


def hunk_items(block: Block, member: Stmt, base_method: Stmt) -> tuple[Item, ...]:
    """The omni evidence of one block of a copied method against its base method."""
    new, old = _block_statements(block, member, base_method)
    upstream = set(diff.flat_keys(base_method.clauses[0]))
    items: list[Item] = []
    left = dict(enumerate(old))
    for stmt in new:
        same = next((i for i, (key, _) in left.items() if key == stmt.key), None)
        if same is not None:
            del left[same]
            continue
        edited = max(left, key=lambda i: diff.similarity(left[i][0], stmt.key), default=None)
        if edited is not None and diff.similarity(left[edited][0], stmt.key) >= EDITED:
            items.extend(_fragments(left.pop(edited)[0], stmt.key, stmt.start))
        elif is_evidence(stmt, member.name) and stmt.key not in upstream:
            # (an upstream statement the copy moved here is vLLM's code, not omni's)
            items.append(Item(ItemKind.STATEMENT, stmt.key, stmt.key, stmt.start))
    here = set(diff.flat_keys(member.clauses[0]))
    for index, (key, head) in sorted(left.items()):
        # A statement moved elsewhere in the method is no deletion, and the body of a
        # deleted compound statement goes with it.
        if key not in here and (index == head or head not in left):
            items.append(Item(ItemKind.DELETED, key, key, block.origin.start))
    return tuple(items)


def owned_items(member: Stmt) -> tuple[Item, ...]:
    """Every statement of an omni-owned method (docstring and ``super()`` plumbing aside)."""
    return tuple(
        Item(ItemKind.STATEMENT, s.key, s.key, s.start)
        for s in flat(member)
        if is_evidence(s, member.name)
    )


def _block_statements(
    block: Block, member: Stmt, base_method: Stmt
) -> tuple[list[Stmt], list[tuple[str, int]]]:
    """The block's omni statements, and the upstream statements it stands in for.

    Each upstream statement comes with the index of the replaced top-level statement it
    belongs to (its own index for a top-level one).
    """
    if block.kind is BlockKind.SIGNATURE:
        # Annotations say nothing about behaviour: compare parameters and defaults only.
        mine = replace(member, key=_unannotated(member.key))
        return [mine], [(_unannotated(base_method.key), 0)]
    if block.kind is BlockKind.HEADER:
        header = [s for s in flat(member) if s.start == block.origin.start]
        return header[:1], [(key, 0) for key in block.anchor.replaced[:1]]
    new = [s for s in flat(member) if block.origin.start <= s.start <= block.origin.end]
    wanted = Counter(block.anchor.replaced)
    old: list[tuple[str, int]] = []
    for _, suite in walk(base_method.clauses[0]):
        for stmt in suite.stmts:
            if wanted[full_key(stmt)] > 0:
                wanted[full_key(stmt)] -= 1
                head = len(old)
                old.append((stmt.key, head))
                old.extend((s.key, head) for c in stmt.clauses for s in flat_suite(c))
    return new, old


def _unannotated(header: str) -> str:
    """A ``def`` header without annotations (decorators and defaults kept)."""
    if header.startswith("@"):  # decorators share the line of a normalized header
        header = re.sub(r"\s(?=(?:async\s+)?def\s)", "\n", header, count=1)
    try:
        node = ast.parse(header + "\n    pass").body[0]
    except SyntaxError:
        return header
    if not isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
        return header
    for arg in ast.walk(node.args):
        if isinstance(arg, ast.arg):
            arg.annotation = None
    node.returns = None
    node.body = []
    return " ".join(ast.unparse(node).split("\n"))


def flat(member: Stmt) -> list[Stmt]:
    return [s for s in flat_suite(member.clauses[0]) if not is_docstring(s)]


def flat_suite(suite: Suite) -> list[Stmt]:
    found: list[Stmt] = []
    for _, body in walk(suite):
        found.extend(body.stmts)
    return sorted(found, key=lambda s: s.start)


def is_evidence(stmt: Stmt, name: str) -> bool:
    """Whether a statement tells what a method does.

    Not evidence: a docstring; a call of the overridden method itself (inheritance
    plumbing); an import (the statements using it are the behaviour); bare control flow
    such as ``continue`` or ``return result``, which every method has in some form.
    """
    if is_docstring(stmt) or stmt.kind in ("Import", "ImportFrom"):
        return False
    if f"super().{name}(" in stmt.key or re.search(rf"\b\w+\.{re.escape(name)}\(self\b", stmt.key):
        return False
    names = [t for t in re.findall(r"[A-Za-z_]\w*", stmt.key) if t not in _GENERIC]
    return not (stmt.kind in ("Return", "Continue", "Break", "Pass") and len(names) <= 1)


def _fragments(old: str, new: str, line: int) -> Iterator[Item]:
    """The runs of text ``new`` adds to ``old`` and removes from it (punctuation alone aside)."""
    a, b = list(LEX.finditer(old)), list(LEX.finditer(new))
    matcher = difflib.SequenceMatcher(
        None, [m.group() for m in a], [m.group() for m in b], autojunk=False
    )
    runs: list[list[int]] = []
    for tag, i1, i2, j1, j2 in matcher.get_opcodes():
        if tag == "equal":
            continue
        if runs and i1 - runs[-1][1] <= 1 and j1 - runs[-1][3] <= 1:
            runs[-1][1], runs[-1][3] = i2, j2  # one shared token apart: one change
        else:
            runs.append([i1, i2, j1, j2])
    for i1, i2, j1, j2 in runs:
        if j2 > j1 and words(new[b[j1].start() : b[j2 - 1].end()]):
            yield Item(ItemKind.ADDED, new[b[j1].start() : b[j2 - 1].end()].strip(" ,"), new, line)
        if i2 > i1 and words(old[a[i1].start() : a[i2 - 1].end()]):
            yield Item(
                ItemKind.REMOVED, old[a[i1].start() : a[i2 - 1].end()].strip(" ,"), new, line
            )


def words(text: str) -> Counter[str]:
    """The names, numbers and strings of ``text``; keywords only when nothing else is there."""
    every = [t for t in LEX.findall(text) if t[0].isalnum() or t[0] in "_'\""]
    significant = [t for t in every if t not in _GENERIC]
    return Counter(significant or every)
