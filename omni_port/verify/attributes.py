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
    loads = [n for n in ast.walk(tree) if is_self_attribute(n) and isinstance(n.ctx, ast.Load)]
    for owner in sorted({b.owner for b in blocks if b.owner}):
        cls = module_class(tree, owner)
        if cls is None:
            continue
        uppers = sorted({o.upstream_owner for o in overrides if o.owner == owner} - {""})
        generated = Class(dotted_module(context.package, name), cls)
        hierarchy = _owner_hierarchy(world, generated, upstream, uppers)
        reads = [r for b in blocks if b.owner == owner for r in _self_reads(loads, b)]
        yield from _missing_attributes(name, [*uppers, owner], hierarchy, reads)


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
