"""Check 9: a recorded resolution deletes no upstream code the block never replaced (OP514).

`resolve` records where a conflicting block goes and which upstream statements its code
replaces there. A block's own code stands for the statements it replaced in its base, and
for no others: upstream statements a resolution has it replace besides those (a line
picked by hand, `--replacing N`, a patch file edited or recorded before `resolve` checked
it) are upstream code the runner no longer runs, silently. The statements compare as the
engine tells one statement edited from another (``sync.offers.deletes``). A resolution
with code of the maintainer's own (`continue`: the code was written for that place) and a
signature's are not checked, nor a block the sync did not place by its resolution (its
conflict says why).
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence

from omni_port.model import (
    Block,
    BlockKind,
    Code,
    Finding,
    PatchSet,
    Placement,
    Rule,
    Status,
    Stmt,
    Upstream,
)
from omni_port.pyast.syntax import find_member
from omni_port.report import shorten
from omni_port.sync.evidence.places import index_of, resolved_slot
from omni_port.sync.offers import deletes
from omni_port.verify.context import Override


def resolved_blocks(patches: PatchSet) -> tuple[Block, ...]:
    """The blocks of ``patches`` whose resolution places their own code."""
    return tuple(
        piece
        for module in patches.modules
        for piece in module.pieces
        if isinstance(piece, Block)
        and piece.anchor.resolution is not None
        and piece.anchor.resolution.code is None
        and piece.kind is not BlockKind.SIGNATURE
    )


def resolution_findings(
    blocks: Sequence[Block],
    placements: Sequence[Placement],
    overrides: Sequence[Override],
    upstream: Upstream | None,
) -> Iterator[Finding]:
    """OP514 at the output line of each of ``blocks`` placed by its resolution that has
    its code replace upstream statements it did not replace in its base (read in the
    upstream method of its copy, one of ``overrides``; nothing without ``upstream``)."""
    rows = {row.block_id: row for row in placements}
    for block in blocks:
        row = rows.get(block.id)
        resolution = block.anchor.resolution
        if row is None or resolution is None or upstream is None:
            continue
        if row.status is not Status.PLACED or Rule.RESOLVED not in row.decided_by:
            continue
        held = _held(block, row.module, overrides, upstream)
        deleted = deletes(block, held)
        if not deleted:
            continue
        who = f" by {resolution.by}" if resolution.by else ""
        why = f" ({shorten(resolution.why, 60)})" if resolution.why else ""
        message = (
            f"the resolution of {block.id} recorded{who}{why} has it replace {deleted}, "
            "which it did not replace in its base: that upstream code is deleted; resolve it "
            "again, or make the code there yours (edit it in place, then `omni-port continue`)"
        )
        yield Finding(Code.OP514, row.module, max(row.start, 1), message)


def _held(
    block: Block, module: str, overrides: Sequence[Override], upstream: Upstream
) -> tuple[Stmt, ...]:
    """The upstream statements ``block``'s resolution has it replace (none when its copy's
    upstream method, or the place, is not found)."""
    copy = next(
        (
            o
            for o in overrides
            if (o.module, o.owner, o.name) == (module, block.owner, block.member)
        ),
        None,
    )
    if copy is None:
        return ()
    owner = (
        upstream.class_name if copy.upstream_owner and upstream.class_name else copy.upstream_owner
    )
    member = find_member(upstream.tree, owner, copy.upstream_name)
    slot = resolved_slot(index_of(member), block) if member is not None else None
    return slot.held() if slot is not None else ()
