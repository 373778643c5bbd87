"""Check 5b: every ``self.<attr>`` a placed block reads is still defined."""

from __future__ import annotations

import ast
from collections.abc import Iterator, Sequence
from dataclasses import dataclass

from omni_port.model import Code, Finding, Placement, Severity
from omni_port.pyast.packages import (
    Class,
    Hierarchy,
    World,
    class_hierarchy,
    class_names,
    dotted_name,
    is_self_attribute,
    lookup_class,
    module_class,
)
from omni_port.verify.context import Context, Override, dotted_module, unread


def attribute_findings(
    world: World,
    name: str,
    tree: ast.Module,
    blocks: Sequence[Placement],
    overrides: Sequence[Override],
    context: Context,
) -> Iterator[Finding]:
    """``self.<attr>`` reads of placed blocks, per class: errors when every class involved
    could be read, one note per class otherwise."""
    upstream = context.upstream.module if context.upstream is not None else ""
    guarded = _guarded_reads(tree)
    loads = [
        n
        for n in ast.walk(tree)
        if is_self_attribute(n) and isinstance(n.ctx, ast.Load) and _at(n) not in guarded
    ]
    for owner in sorted({b.owner for b in blocks if b.owner}):
        cls = module_class(tree, owner)
        if cls is None:
            continue
        uppers = sorted({o.upstream_owner for o in overrides if o.owner == owner} - {""})
        generated = Class(dotted_module(context.package, name), cls)
        hierarchy = _owner_hierarchy(world, generated, upstream, uppers)
        reads = [r for b in blocks if b.owner == owner for r in _self_reads(loads, b)]
        yield from _missing_attributes(name, [*uppers, owner], hierarchy, reads)


def _guarded_reads(tree: ast.Module) -> frozenset[tuple[int, int]]:
    """Positions of ``self.x`` reads that run only where ``hasattr(self, "x")`` held.

    Such a read guards against its own absence (a subclass may be the one to assign the
    attribute, as omni's GPU runners do for ``_downstream_payload_cache``), so it is no
    missing attribute."""
    guarded: set[tuple[int, int]] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.If | ast.IfExp):
            guarded |= _reads_of(_hasattr_names(node.test), node.body)
            guarded |= _reads_of(_hasattr_names(node.test, negated=True), node.orelse)
        elif isinstance(node, ast.BoolOp) and isinstance(node.op, ast.And):
            for i, value in enumerate(node.values):
                guarded |= _reads_of(_hasattr_names(value), node.values[i + 1 :])
    return frozenset(guarded)


def _hasattr_names(test: ast.expr, negated: bool = False) -> frozenset[str]:
    """The names ``test`` proves ``self`` has when it holds (or, ``negated``, when it fails)."""
    if isinstance(test, ast.UnaryOp) and isinstance(test.op, ast.Not):
        return _hasattr_names(test.operand, not negated)
    if isinstance(test, ast.BoolOp) and isinstance(test.op, ast.Or if negated else ast.And):
        return frozenset().union(*(_hasattr_names(v, negated) for v in test.values))
    if negated or not isinstance(test, ast.Call) or dotted_name(test.func) != "hasattr":
        return frozenset()
    match test.args:
        case [ast.Name(id="self"), ast.Constant(value=str(name))]:
            return frozenset({name})
    return frozenset()


def _reads_of(names: frozenset[str], scope: ast.AST | Sequence[ast.AST]) -> set[tuple[int, int]]:
    if not names:
        return set()
    roots = scope if isinstance(scope, Sequence) else [scope]
    return {
        _at(n) for root in roots for n in ast.walk(root) if is_self_attribute(n) and n.attr in names
    }


def _at(node: ast.Attribute) -> tuple[int, int]:
    return (node.lineno, node.col_offset)


def _owner_hierarchy(world: World, cls: Class, upstream: str, uppers: Sequence[str]) -> Hierarchy:
    """The generated class's bases plus those of the upstream classes its copies come from."""
    hierarchies = [class_hierarchy(world, cls)]
    for upper in uppers if upstream else ():
        found = lookup_class(world, upstream, upper)
        if isinstance(found, Class):
            hierarchies.append(class_hierarchy(world, found))
        elif found is not None:
            hierarchies.append(Hierarchy((), (found,)))
    classes = tuple(c for h in hierarchies for c in h.classes)
    unknown = tuple(dict.fromkeys(u for h in hierarchies for u in h.unknown))
    return Hierarchy(classes, unknown)


@dataclass(frozen=True, slots=True)
class _Read:
    """A name or ``self`` attribute a block reads."""

    name: str
    line: int
    col: int
    block: Placement


def _self_reads(loads: Sequence[ast.Attribute], block: Placement) -> Iterator[_Read]:
    for node in loads:
        if block.start <= node.lineno <= block.end:
            yield _Read(node.attr, node.lineno, node.col_offset + 1, block)


def _missing_attributes(
    path: str, classes: Sequence[str], hierarchy: Hierarchy, reads: Sequence[_Read]
) -> Iterator[Finding]:
    known = [class_names(c.node) for c in hierarchy.classes]
    if any(k.open for k in known):
        return
    defined = frozenset().union(*(k.names for k in known))
    missing: dict[tuple[str, str], _Read] = {}
    for read in sorted(reads, key=lambda r: (r.line, r.name)):
        if read.name not in defined:
            missing.setdefault((read.block.block_id, read.name), read)
    if hierarchy.unknown and missing:
        first = min(missing.values(), key=lambda r: r.line)
        names = ", ".join(f"`self.{n}`" for n in sorted({r.name for r in missing.values()}))
        message = (
            f"unverified: blocks of {classes[-1]} read {names}, which no class that could be "
            f"read defines; {unread(hierarchy.unknown)}"
        )
        yield Finding(Code.OP506, path, first.line, message, first.col, Severity.NOTE)
        return
    owners = " or ".join(dict.fromkeys(classes))
    for (block_id, attr), read in missing.items():
        message = (
            f"block {block_id} reads `self.{attr}`, which {owners} (and their bases) "
            "no longer assign or define"
        )
        yield Finding(Code.OP509, path, read.line, message, read.col)
