"""Check 4: a placed block reads no local that is not bound on every path before it."""

from __future__ import annotations

import ast
from collections.abc import Mapping, Sequence

from omni_port.model import Code, Finding, Placement, Severity, Upstream
from omni_port.pyast.flow import hazards, unbound_reads
from omni_port.pyast.packages import (
    FUNCTIONS,
    Function,
    World,
    module_class,
    module_exports,
)
from omni_port.pyast.syntax import find_def
from omni_port.verify.context import Override


def binding_findings(
    path: str,
    tree: ast.Module,
    blocks: Sequence[Placement],
    originals: Mapping[tuple[str, str], Function],
) -> tuple[list[Finding], frozenset[tuple[str, int]]]:
    """OP507 findings, and the (name, line) reads they explain (pyflakes need not repeat them).

    ``originals`` maps (class, method) of a copy to its upstream method: a read whose
    hazard the upstream method shares (it reads the same name where that is not bound on
    every path either) is a note, not an error: the copy inherits it.
    """
    findings: list[Finding] = []
    covered: set[tuple[str, int]] = set()
    module_level = module_exports(tree)
    for chain, members in _blocks_by_function(tree, blocks):
        lines = frozenset(line for b in members for line in range(b.start, b.end + 1))
        unbound = unbound_reads(chain, module_level, lines)
        for block in members:
            original = originals.get((block.owner, block.member))
            inherited = hazards(original) if original is not None else frozenset()
            names = {n.id for n in unbound if block.start <= n.lineno <= block.end}
            findings.extend(_unbound_finding(path, block, n, n in inherited) for n in names)
        covered.update((n.id, n.lineno) for n in unbound)
    return findings, frozenset(covered)


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


def _blocks_by_function(
    tree: ast.Module, blocks: Sequence[Placement]
) -> list[tuple[list[Function], list[Placement]]]:
    """Blocks grouped by the function they sit in, with its enclosing functions (outermost
    first). Blocks outside any function (class level) are left out: class scopes are not
    analysed."""
    functions = sorted(
        (n for n in ast.walk(tree) if isinstance(n, FUNCTIONS)), key=lambda n: n.lineno
    )
    groups: dict[int, tuple[list[Function], list[Placement]]] = {}
    for block in blocks:
        chain = [f for f in functions if f.lineno < block.start <= (f.end_lineno or 0)]
        if chain:
            groups.setdefault(id(chain[-1]), (chain, []))[1].append(block)
    return list(groups.values())
