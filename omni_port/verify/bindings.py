"""Check 4: a placed block reads no local that is not bound on every path before it.

An unbound read that an open conflict's commented-out code, restored where it stands (before
the read, in the same function), would bind on every path is that conflict's: the block was
placed and its partner was not. It is one OP507 per read, at the read, naming the conflict
(``RESOLVE_FIRST``); where the output binds the name nowhere, the upgrade summary drops the
sync's OP303 at the same place (verify's finding is the one every gate sees). Once the
conflict is resolved by code that does not bind the name (or dropped), the read is an
ordinary OP507 again.
"""

from __future__ import annotations

import ast
import re
from collections.abc import Mapping, Sequence

from omni_port.model import RESOLVE_FIRST, Code, Finding, Placement, Severity, Upstream
from omni_port.pyast.flow import hazards, unbound_reads
from omni_port.pyast.packages import (
    FUNCTIONS,
    Function,
    World,
    module_class,
    module_exports,
)
from omni_port.pyast.syntax import find_def
from omni_port.verify.conflicts import Region, commented_code, uncommented
from omni_port.verify.context import Override


def binding_findings(
    path: str,
    text: str,
    tree: ast.Module,
    blocks: Sequence[Placement],
    originals: Mapping[tuple[str, str], Function],
) -> tuple[list[Finding], frozenset[tuple[str, int]]]:
    """OP507 findings, and the (name, line) reads they explain (pyflakes need not repeat them).

    ``originals`` maps (class, method) of a copy to its upstream method: a read whose
    hazard the upstream method shares (it reads the same name where that is not bound on
    every path either) is a note, not an error: the copy inherits it. ``text`` is the
    module's, for its conflict regions (a read one of them owns names it).
    """
    findings: list[Finding] = []
    covered: set[tuple[str, int]] = set()
    module_level = module_exports(tree)
    behind = _Behind(text)
    for chain, members in _blocks_by_function(tree, blocks):
        lines = frozenset(line for b in members for line in range(b.start, b.end + 1))
        unbound = unbound_reads(chain, module_level, lines)
        for block in members:
            original = originals.get((block.owner, block.member))
            inherited = hazards(original) if original is not None else frozenset()
            reads = [n for n in unbound if block.start <= n.lineno <= block.end]
            owned = {id(n): behind.owner(chain[-1], n) for n in reads if n.id not in inherited}
            findings.extend(
                _behind_finding(path, block, n, region)
                for n in reads
                if (region := owned.get(id(n))) is not None
            )
            names = {n.id for n in reads if owned.get(id(n)) is None}
            findings.extend(_unbound_finding(path, block, n, n in inherited) for n in names)
        covered.update((n.id, n.lineno) for n in unbound)
    return findings, frozenset(covered)


class _Behind:
    """The conflict regions of one module that own an unbound read, the module's text read
    for them only when a block has an unbound read (most modules have none)."""

    def __init__(self, text: str) -> None:
        self._text = text
        self._code: dict[Region, str] | None = None
        self._restored: dict[Region, ast.Module | None] = {}

    def owner(self, function: Function, read: ast.Name) -> Region | None:
        """The conflict region of ``function`` before ``read`` (the nearest first) whose
        commented-out code, restored where it stands, binds the read's name on every path
        to it; None when none does."""
        if self._code is None:
            self._code = {}
            for region, _, code in commented_code(self._text):
                self._code[region] = self._code.get(region, "") + code + "\n"
        word = re.compile(rf"\b{re.escape(read.id)}\b")
        end = function.end_lineno or function.lineno
        regions = [
            region
            for region, code in self._code.items()
            if function.lineno < region.line < read.lineno <= end and word.search(code)
        ]
        return next((r for r in reversed(regions) if self._binds(r, read)), None)

    def _binds(self, region: Region, read: ast.Name) -> bool:
        if region not in self._restored:
            try:
                self._restored[region] = ast.parse(uncommented(self._text, region))
            except SyntaxError:  # code that stands only with what it replaced: no answer
                self._restored[region] = None
        tree = self._restored[region]
        if tree is None:
            return False
        chain = _chain(_functions(tree), read.lineno)
        unbound = (
            unbound_reads(chain, module_exports(tree), frozenset({read.lineno})) if chain else []
        )
        return not any((n.id, n.col_offset) == (read.id, read.col_offset) for n in unbound)


def _behind_finding(path: str, block: Placement, read: ast.Name, region: Region) -> Finding:
    message = (
        f"block {block.block_id} reads `{read.id}`, which the conflict {region.piece} "
        f"(line {region.line}) binds in its commented-out code: {RESOLVE_FIRST}"
    )
    return Finding(Code.OP507, path, read.lineno, message, read.col_offset + 1)


def _unbound_finding(path: str, block: Placement, name: str, inherited: bool) -> Finding:
    message = f"block {block.block_id} reads `{name}`, which is not bound on every path before it"
    if not inherited:
        return Finding(Code.OP507, path, block.start, message)
    message += " (the upstream method has the same hazard)"
    return Finding(Code.OP507, path, block.start, message, 1, Severity.NOTE)


def originals(
    world: World, upstream: Upstream | None, overrides: Sequence[Override]
) -> dict[tuple[str, str], Function]:
    """The upstream method of each copied method, by (class, method) of the copy."""
    tree = world.tree(upstream.module) if upstream is not None else None
    if tree is None:
        return {}
    found: dict[tuple[str, str], Function] = {}
    for override in overrides:
        holder: ast.Module | ast.ClassDef | None = tree
        if override.upstream_owner:
            holder = module_class(tree, override.upstream_owner)
        node = find_def(holder.body, override.upstream_name) if holder is not None else None
        if isinstance(node, FUNCTIONS):
            found[(override.owner, override.name)] = node
    return found


def _functions(tree: ast.Module) -> list[Function]:
    """Every function of ``tree``, in the order they start."""
    return sorted((n for n in ast.walk(tree) if isinstance(n, FUNCTIONS)), key=lambda n: n.lineno)


def _chain(functions: Sequence[Function], line: int) -> list[Function]:
    """The ``functions`` that hold ``line`` (past their ``def`` line), outermost first."""
    return [f for f in functions if f.lineno < line <= (f.end_lineno or 0)]


def _blocks_by_function(
    tree: ast.Module, blocks: Sequence[Placement]
) -> list[tuple[list[Function], list[Placement]]]:
    """Blocks grouped by the function they sit in, with its enclosing functions (outermost
    first). Blocks outside any function (class level) are left out: class scopes are not
    analysed."""
    functions = _functions(tree)
    groups: dict[int, tuple[list[Function], list[Placement]]] = {}
    for block in blocks:
        chain = _chain(functions, block.start)
        if chain:
            groups.setdefault(id(chain[-1]), (chain, []))[1].append(block)
    return list(groups.values())
