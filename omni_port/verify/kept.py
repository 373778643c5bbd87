"""Findings about upstream statements the output keeps only while a conflict stands.

A conflict's block is commented out, so the upstream statement it replaced in its base
stays in the output: a finding about that statement (OP510: upstream's
``ExecuteModelState(...)`` against omni's extended NamedTuple; OP515: upstream's binding a
deletion took out, which placed code no longer reads) is the conflict's, and resolving the
conflict is the fix. Such a finding names the conflict, as OP515 names the conflict whose
commented-out code reads a store. The statement is matched as the anchor
tells one statement edited from another (upstream may have edited it since the base).
"""

from __future__ import annotations

import ast
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import replace

from omni_port.model import RESOLVE_FIRST, Block, Code, Finding, Placement, Status
from omni_port.pyast.diff import similarity
from omni_port.pyast.packages import Function
from omni_port.pyast.syntax import node_key, split_full_key
from omni_port.sync.evidence.places import FUZZY
from omni_port.verify.conflicts import regions
from omni_port.verify.context import Override, function_in

#: The findings about a statement a conflict keeps that name it.
KEPT_CODES = frozenset({Code.OP510, Code.OP515})


def with_keepers(
    findings: Sequence[Finding],
    modules: Mapping[str, str],
    trees: Mapping[str, ast.Module],
    overrides: Sequence[Override],
    placements: Sequence[Placement],
    blocks: Sequence[Block],
) -> list[Finding]:
    """``findings``, each of ``KEPT_CODES`` inside a copied method naming the conflict of
    that method (in ``placements``) that replaced the finding's statement in its base."""
    conflicts = {p.block_id for p in placements if p.status is Status.CONFLICT}
    keepers = [b for b in blocks if b.id in conflicts and b.anchor.replaced]
    if not keepers:
        return list(findings)
    return [
        _named(f, modules[f.path], trees[f.path], overrides, keepers)
        if f.code in KEPT_CODES and f.path in trees and not f.behind_conflict
        else f
        for f in findings
    ]


def _named(
    finding: Finding,
    text: str,
    tree: ast.Module,
    overrides: Sequence[Override],
    keepers: Sequence[Block],
) -> Finding:
    for override in overrides:
        function = function_in(tree, override.owner, override.name)
        if override.module != finding.path or function is None:
            continue
        stmt = _statement_at(function, finding.line)
        if stmt is None:
            continue
        mine = [b for b in keepers if (b.owner, b.member) == (override.owner, override.name)]
        keeper = _keeper(node_key(stmt), mine)
        if keeper is None:
            return finding
        line = next((r.line for r in regions(text) if r.piece == keeper.id), stmt.lineno)
        message = (
            f"{finding.message}; the conflict {keeper.id} (line {line}) replaced this "
            f"statement in its base, which stays until it is resolved: {RESOLVE_FIRST}"
        )
        return replace(finding, message=message)
    return finding


def _statement_at(function: Function, line: int) -> ast.stmt | None:
    """The innermost statement of ``function`` (not itself) that spans ``line``."""
    spanning = [
        n
        for n in ast.walk(function)
        if isinstance(n, ast.stmt)
        and n is not function
        and n.lineno <= line <= (n.end_lineno or n.lineno)
    ]
    return max(spanning, key=lambda n: n.lineno, default=None)


def _keeper(key: str, blocks: Sequence[Block]) -> Block | None:
    """The block of ``blocks`` whose replaced statements hold the one keyed ``key`` (the
    most alike, the first of equals; None when none is alike)."""
    scored = [(max(_alike(key, b), default=0.0), -i, b) for i, b in enumerate(blocks)]
    best = max(scored, key=lambda s: s[:2], default=None)
    return best[2] if best is not None and best[0] >= FUZZY else None


def _alike(key: str, block: Block) -> Iterator[float]:
    for replaced in block.anchor.replaced:
        yield similarity(split_full_key(replaced)[0], key)
