"""What `resolve` reads of the engine: a conflict's candidates, and whether a chosen place
holds once it is recorded.

The engine decides a block among its siblings (the statement-level blocks of the same
copied member), so the candidates are numbered exactly as a sync lists them on that
upstream, and a recorded resolution is tried the same way before it is kept.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import replace

from omni_port.errors import BadInput
from omni_port.model import Block, BlockKind, Code, Copy, ModulePatches, Resolution
from omni_port.pyast.syntax import Stmt, walk
from omni_port.sources.upstream import Upstream
from omni_port.sync import locate
from omni_port.sync.facts import ModuleFacts, upstream_owner
from omni_port.sync.locate import Decision, Scored, Slot

__all__ = [
    "Decision",
    "Scored",
    "Slot",
    "decided",
    "member_of",
    "resolution_at",
    "slot_at_line",
    "unresolved",
]


def unresolved(
    module: ModulePatches,
    block: Block,
    upstream: Upstream,
    locations: Mapping[str, str] | None = None,
) -> Decision:
    """Sync's decision on ``block`` without its recorded resolution, on ``upstream`` (its
    history and the catalog's ``locations`` included, as sync reads them): its
    candidates, numbered as ``--at '#K'`` takes them."""
    plain = replace(block, anchor=replace(block.anchor, resolution=None))
    return decided(module, plain, upstream, locations)


def decided(
    module: ModulePatches,
    block: Block,
    upstream: Upstream,
    locations: Mapping[str, str] | None = None,
) -> Decision:
    """Sync's decision on ``block`` (as given, a resolution included) among its siblings,
    from the same facts as sync's."""
    blocks = _siblings(module, block)
    copy = _copy_of(module, block)
    facts = ModuleFacts.of(module, upstream, locations).member_facts(copy, blocks)
    if facts is None:
        raise _gone(block, copy, upstream)
    return next(d for d in locate.decide(facts, blocks) if d.block.id == block.id)


def resolution_at(slot: Slot) -> Resolution:
    """The record that puts a block at ``slot`` again on every later sync."""
    return locate.resolution_at(slot)


def member_of(module: ModulePatches, block: Block, upstream: Upstream) -> Stmt:
    """The upstream method ``block``'s copy comes from; BadInput when it is gone."""
    copy = _copy_of(module, block)
    member = ModuleFacts.of(module, upstream).member(copy)
    if member is None:
        raise _gone(block, copy, upstream)
    return member


def _copy_of(module: ModulePatches, block: Block) -> Copy:
    """The copied member ``block`` belongs to; BadInput when none."""
    copy = next(
        (
            p
            for p in module.pieces
            if isinstance(p, Copy) and (p.owner, p.name) == (block.owner, block.member)
        ),
        None,
    )
    if copy is None:
        raise BadInput.at(Code.OP004, block.id, 0, "the block belongs to no copied member")
    return copy


def _gone(block: Block, copy: Copy, upstream: Upstream) -> BadInput:
    where = f"{upstream_owner(copy, upstream)}.{copy.upstream_name}"
    return BadInput.at(Code.OP302, block.id, 0, f"{where} is not in {upstream.label}")


def slot_at_line(member: Stmt, line: int) -> Slot | None:
    """The place before the statement starting at ``line`` anywhere in the method."""
    for path, suite in walk(member.clauses[0]):
        for index, stmt in enumerate(suite.stmts):
            if stmt.lead <= line <= stmt.start:
                return Slot(suite, path, index)
    return None


def _siblings(module: ModulePatches, block: Block) -> list[Block]:
    """The statement-level blocks of ``block``'s copy, ``block`` in its own place: sync
    decides them together, and so must the candidates ``--at '#K'`` counts."""
    return [
        block if piece.id == block.id else piece
        for piece in module.pieces
        if isinstance(piece, Block)
        and (piece.owner, piece.member) == (block.owner, block.member)
        and piece.kind is not BlockKind.SIGNATURE
    ]
