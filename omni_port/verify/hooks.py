"""Check 11: a copied method still calls the methods upstream's own version calls (OP516).

A hook (``self._free_buffers()``, a method the class or a base defines, one a subclass
overrides) that the new upstream method calls and the generated copy does not is work the
runner silently skips: resources the new upstream frees there stay allocated. Each
``self.<method>(...)`` call of the upstream method (nested functions included) whose method
the generated copy never names (``self.<method>`` or ``super().<method>``) is a finding.

The tool's own evidence decides its level: when a placed block of the method (marked, or
an implicit edit) replaced the upstream statement holding the call, a compound statement
around it, a statement that calls the method, or statements on both sides of one of those
(upstream added it inside the span the block replaces), omni took the call out on purpose
and the finding is a note naming the block, at the block's line of the output; otherwise
it is an error where upstream's call would stand in the copy: at the copy's counterpart of
the upstream statement the call stood before (else after, else inside), named with its
upstream line. Replaced statements
are compared by their normalized text (a compound statement by its header), as extract
recorded them against the base. Only methods defined along the upstream class's
readable hierarchy count: attributes that hold callables are not hooks.
"""

from __future__ import annotations

import ast
from collections.abc import Iterator, Mapping, Sequence
from itertools import pairwise

from omni_port.model import Block, Code, Finding, Placement, Severity, Status
from omni_port.pyast.packages import (
    FUNCTIONS,
    STATEMENTS,
    Class,
    Function,
    World,
    class_hierarchy,
    is_self_attribute,
    lookup_class,
)
from omni_port.pyast.syntax import node_key, split_full_key
from omni_port.report import shorten
from omni_port.verify.context import Context, Override, function_in


def hook_findings(
    world: World,
    trees: Mapping[str, ast.Module],
    overrides: Sequence[Override],
    placements: Sequence[Placement],
    blocks: Sequence[Block],
    context: Context,
) -> Iterator[Finding]:
    """OP516 findings for every copied method of ``trees`` (generated module file name ->
    tree); ``blocks`` are the patches' statement-level blocks, ``placements`` say which
    were placed. Nothing without the upstream module."""
    upstream = world.tree(context.upstream.module) if context.upstream is not None else None
    if upstream is None or context.upstream is None:
        return
    placed = {p.block_id: p for p in placements if p.status is Status.PLACED}
    for override in overrides:
        tree = trees.get(override.module)
        generated = function_in(tree, override.owner, override.name) if tree else None
        theirs = function_in(upstream, override.upstream_owner, override.upstream_name)
        if generated is None or theirs is None:
            continue
        methods = _methods(world, context.upstream.module, override.upstream_owner)
        mine = [
            b
            for b in blocks
            if (b.owner, b.member) == (override.owner, override.name) and b.id in placed
        ]
        yield from _lost(override, generated, theirs, methods, [(b, placed[b.id]) for b in mine])


def _lost(
    override: Override,
    generated: Function,
    upstream: Function,
    methods: frozenset[str],
    blocks: Sequence[tuple[Block, Placement]],
) -> Iterator[Finding]:
    named = _named(generated)
    reported: set[str] = set()
    where = f"{override.owner}.{override.name}".lstrip(".")
    theirs = f"{override.upstream_owner}.{override.upstream_name}".lstrip(".")
    for call, chain in _self_calls(upstream.body, ()):
        method = call.func.attr if isinstance(call.func, ast.Attribute) else ""
        if method not in methods or method in named or method in reported:
            continue
        reported.add(method)
        message = (
            f"{where} no longer calls `self.{method}()`, which upstream's {theirs} calls "
            f"(upstream line {call.lineno})"
        )
        found = _replacer(method, chain, [b for b, _ in blocks])
        if found is None:
            line, col, place = _standing(chain, generated)
            message += f"{place}: the runner skips what it does there; restore the call"
            yield Finding(Code.OP516, override.module, line, message, col)
        else:
            block, what = found
            message += f": omni's {block.id} replaced {what}"
            row = dict((b.id, p) for b, p in blocks)[block.id]
            line, col = _line_of(block, row, generated), 1
            yield Finding(Code.OP516, override.module, line, message, col, Severity.NOTE)


#: Where a statement stands: the body holding it and its index there.
_Place = tuple[Sequence[ast.stmt], int]


def _self_calls(
    body: Sequence[ast.stmt], chain: tuple[_Place, ...]
) -> Iterator[tuple[ast.Call, tuple[_Place, ...]]]:
    """Every ``self.<name>(...)`` call under ``body``, in source order, with the places of
    the statements holding it, outermost first."""
    for index, node in enumerate(body):
        inner = (*chain, (body, index))
        for part in ast.iter_child_nodes(node):
            if isinstance(part, STATEMENTS):
                continue
            for call in ast.walk(part):
                if isinstance(call, ast.Call) and is_self_attribute(call.func):
                    yield call, inner
        for field in ("body", "orelse", "finalbody"):
            yield from _self_calls(getattr(node, field, []), inner)
        for clause in [*getattr(node, "handlers", []), *getattr(node, "cases", [])]:
            yield from _self_calls(clause.body, inner)


def _standing(chain: Sequence[_Place], generated: Function) -> tuple[int, int, str]:
    """Where upstream's call would stand in ``generated``: (line, column, what the message
    adds). The upstream statement nearest after the call's (in its body, else after the
    statements around it, the innermost first) whose counterpart the copy has, the call
    standing before it; else the nearest before, the call after it; else the counterpart
    of a statement around the call, the call inside it; else the method's ``def`` line."""
    bodies = _counterpart_bodies(chain, generated)
    for level in reversed(range(len(bodies))):
        body, index = chain[level]
        later = [(s, "before") for s in body[index + 1 :]]
        earlier = [(s, "after") for s in reversed(body[:index])]
        for stmt, side in [*later, *earlier]:
            mine = _counterpart(stmt, body, bodies[level])
            if mine is not None:
                return mine.lineno, mine.col_offset + 1, _place(side, stmt)
        if level:
            outer, at = chain[level - 1]
            mine = _counterpart(outer[at], outer, bodies[level - 1])
            if mine is not None:
                return mine.lineno, mine.col_offset + 1, _place("inside", outer[at])
    return generated.lineno, generated.col_offset + 1, ""


def _place(side: str, stmt: ast.stmt) -> str:
    return f" {side} `{shorten(node_key(stmt), 60)}` (upstream line {stmt.lineno}, here)"


def _counterpart_bodies(chain: Sequence[_Place], generated: Function) -> list[Sequence[ast.stmt]]:
    """The bodies of ``generated`` that stand for the bodies of ``chain``, outermost first,
    as far as the copy has the statements holding them."""
    bodies: list[Sequence[ast.stmt]] = [generated.body]
    for (body, index), (inner, _) in pairwise(chain):
        mine = _counterpart(body[index], body, bodies[-1])
        found = _same_field(body[index], inner, mine) if mine is not None else None
        if found is None:
            break
        bodies.append(found)
    return bodies


def _counterpart(
    stmt: ast.stmt, body: Sequence[ast.stmt], mine: Sequence[ast.stmt]
) -> ast.stmt | None:
    """The statement of ``mine`` that stands for ``stmt`` of ``body``: the one with its key
    (a compound statement's header) as often before it as ``stmt`` has (else the last)."""
    key = node_key(stmt)
    same = [s for s in mine if node_key(s) == key]
    if not same:
        return None
    nth = sum(1 for s in body[: body.index(stmt)] if node_key(s) == key)
    return same[min(nth, len(same) - 1)]


def _same_field(
    stmt: ast.stmt, inner: Sequence[ast.stmt], mine: ast.stmt
) -> Sequence[ast.stmt] | None:
    """The body of ``mine`` in the place of ``stmt``'s body ``inner`` (``body``, ``orelse``,
    ``finalbody``, or the body of the same handler or case); None when it has none."""
    for field in ("body", "orelse", "finalbody"):
        if getattr(stmt, field, None) is inner:
            return getattr(mine, field, None)
    for field in ("handlers", "cases"):
        theirs, ours = getattr(stmt, field, []), getattr(mine, field, [])
        for index, clause in enumerate(theirs):
            if clause.body is inner:
                return ours[index].body if index < len(ours) else None
    return None


def _named(function: Function) -> frozenset[str]:
    """Methods ``function`` names on ``self`` or ``super()`` anywhere (a call, or a method
    handed on as a callback)."""
    names = set()
    for node in ast.walk(function):
        if not isinstance(node, ast.Attribute):
            continue
        value = node.value
        is_super = (
            isinstance(value, ast.Call)
            and isinstance(value.func, ast.Name)
            and value.func.id == "super"
        )
        if is_self_attribute(node) or is_super:
            names.add(node.attr)
    return frozenset(names)


def _replacer(
    method: str, chain: Sequence[_Place], blocks: Sequence[Block]
) -> tuple[Block, str] | None:
    """The block of ``blocks`` that replaced the statement that made the call, with what it
    replaced, as a note says it: one that replaced a statement calling ``method``, else a
    statement of ``chain`` (the call's statement and those around it, the innermost
    first), else statements on both sides of one of ``chain`` in its body (upstream added
    it inside the span the block replaces). Where several replaced the same statement
    (compound statements with one header stand at several places), the one whose
    neighbours are that statement's neighbours upstream replaced this one."""
    found = [
        (rank, near, order, block, what)
        for order, block in enumerate(blocks)
        for rank, near, what in _replaced_by(method, chain, block)
    ]
    if not found:
        return None
    _, _, _, block, what = min(found, key=lambda f: f[:3])
    return block, what


def _replaced_by(
    method: str, chain: Sequence[_Place], block: Block
) -> Iterator[tuple[int, bool, str]]:
    """How ``block`` replaced what made the call: (rank, lower first: the call's own
    statement, then the chain's statements from the innermost out, then a span around
    one; whether the block's neighbours are not that statement's upstream; what)."""
    heads = {split_full_key(replaced)[0] for replaced in block.anchor.replaced}
    made = "the statement that made it"
    if any(f"self.{method}(" in head for head in heads):
        yield 0, False, made
    for depth, (body, index) in enumerate(reversed(chain), 1):
        keys = [node_key(stmt) for stmt in body]
        if keys[index] in heads:
            before, after = keys[index - 1 : index][::-1], keys[index + 1 : index + 2]
            beside = block.anchor.before[:1] == tuple(before) or block.anchor.after[:1] == tuple(
                after
            )
            yield depth, not beside, made
        if heads & set(keys[:index]) and heads & set(keys[index + 1 :]):
            yield len(chain) + depth, False, "the statements around the one that made it"


def _line_of(block: Block, row: Placement, generated: Function) -> int:
    """The generated module's line where ``block`` stands: its first line, or for a block
    with no lines (a deletion) the line of its next neighbour there, else the line after
    its previous one; the method's own line when neither is found."""
    if row.start >= 1:
        return row.start
    stmts = [n for n in ast.walk(generated) if isinstance(n, ast.stmt) and n is not generated]
    anchor = block.anchor
    after = next((n for n in stmts if anchor.after and node_key(n) == anchor.after[0]), None)
    if after is not None:
        return after.lineno
    before = next((n for n in stmts if anchor.before and node_key(n) == anchor.before[0]), None)
    if before is not None:
        return (before.end_lineno or before.lineno) + 1
    return generated.lineno


def _methods(world: World, module: str, owner: str) -> frozenset[str]:
    """Names of the methods defined along the readable hierarchy of class ``owner``."""
    found = lookup_class(world, module, owner) if owner else None
    if not isinstance(found, Class):
        return frozenset()
    return frozenset(
        node.name
        for cls in class_hierarchy(world, found).classes
        for node in cls.node.body
        if isinstance(node, FUNCTIONS)
    )
