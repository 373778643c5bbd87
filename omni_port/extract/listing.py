"""Every block of a patch set as a report row: what extract found, in module order."""

from __future__ import annotations

from collections.abc import Iterator

from omni_port.extract.markers import scan
from omni_port.model import (
    Block,
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
            yield Placement(
                piece.id,
                module.name,
                piece.owner,
                piece.member,
                piece.kind,
                piece.marked,
                Status.EXTRACTED,
                1.0,
                piece.origin.start,
                piece.origin.end,
            )
        elif isinstance(piece, Chunk) and piece.marked:
            kind = RegionKind.CLASS_LEVEL if piece.owner else RegionKind.MODULE_LEVEL
            yield Placement(
                piece.id,
                module.name,
                piece.owner,
                piece.name,
                kind,
                True,
                Status.EXTRACTED,
                1.0,
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
        yield Placement(
            f"{chunk.id}#{number}",
            module.name,
            chunk.owner,
            chunk.name,
            RegionKind.CONTAINED,
            True,
            Status.EXTRACTED,
            1.0,
            region.opener.line + offset,
            region.closer.line + offset,
        )
