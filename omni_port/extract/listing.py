"""Every block of a patch set as a report row: what extract found, in module order."""

from __future__ import annotations

from collections.abc import Iterator

from omni_port.extract.markers import scan
from omni_port.model import (
    Block,
    BlockKind,
    Chunk,
    ModulePatches,
    PatchSet,
    Placement,
    RegionKind,
    Status,
)
from omni_port.pyast.parser import parse
from omni_port.pyast.syntax import dedent_code


def extracted_blocks(patches: PatchSet) -> list[Placement]:
    """Every block of a patch set as an ``extracted`` report row, in module order."""
    return [row for module in patches.modules for row in _module_rows(module)]


def _module_rows(module: ModulePatches) -> Iterator[Placement]:
    for piece in module.pieces:
        if isinstance(piece, Block):
            yield _row(
                module,
                piece.id,
                piece.kind,
                piece.marked,
                piece.owner,
                piece.member,
                piece.origin.start,
                piece.origin.end,
            )
        elif isinstance(piece, Chunk) and piece.marked:
            kind = RegionKind.CLASS_LEVEL if piece.owner else RegionKind.MODULE_LEVEL
            yield _row(
                module,
                piece.id,
                kind,
                True,
                piece.owner,
                piece.name,
                piece.origin.start,
                piece.origin.end,
            )
        elif isinstance(piece, Chunk):
            yield from _contained_rows(module, piece)


def _contained_rows(module: ModulePatches, chunk: Chunk) -> Iterator[Placement]:
    """Marked regions inside omni-owned code (carried with it, listed for the catalog)."""
    if "omni" not in chunk.code.lower():
        return
    tree = parse(dedent_code(chunk.code), chunk.origin.path)
    offset = chunk.origin.start - 1
    for number, region in enumerate(scan(tree).regions, start=1):
        yield _row(
            module,
            f"{chunk.id}#{number}",
            RegionKind.CONTAINED,
            True,
            chunk.owner,
            chunk.name,
            region.opener.line + offset,
            region.closer.line + offset,
        )


def _row(
    module: ModulePatches,
    ident: str,
    kind: BlockKind | RegionKind,
    marked: bool,
    owner: str,
    member: str,
    start: int,
    end: int,
) -> Placement:
    return Placement(
        ident, module.name, owner, member, kind, marked, Status.EXTRACTED, 1.0, start, end
    )
