"""Maintainer edits of a patch set: record a conflict's resolution, adopt an implicit edit."""

from __future__ import annotations

import re
from dataclasses import replace

from omni_port.errors import BadInput
from omni_port.model import Block, BlockKind, Code, ModulePatches, PatchSet, Piece, Resolution

#: The marker lines an adopted edit is wrapped in (the runners' most common style).
MARKER = "#  " + "-" * 38 + " Omni-new " + "-" * 49


def find_block(patches: PatchSet, block_id: str) -> tuple[ModulePatches, Block]:
    """The module and block with this id; BadInput (OP004) naming close ids when absent."""
    for module in patches.modules:
        for piece in module.pieces:
            if isinstance(piece, Block) and piece.id == block_id:
                return module, piece
    known = [p.id for m in patches.modules for p in m.pieces if isinstance(p, Block)]
    close = [k for k in known if block_id.split(".")[-1] in k][:5]
    hint = f"; similar ids: {', '.join(close)}" if close else ""
    raise BadInput.at(Code.OP004, block_id, 0, f"no block with this id in the patches{hint}")


def resolve(patches: PatchSet, block_id: str, resolution: Resolution) -> PatchSet:
    """The patch set with ``resolution`` recorded in the block's anchor."""
    _, block = find_block(patches, block_id)
    updated = replace(block, anchor=replace(block.anchor, resolution=resolution))
    return _replace_piece(patches, block, updated)


def adopt(patches: PatchSet, block_id: str, title: str) -> tuple[PatchSet, str]:
    """Turn an implicit edit into a titled, marked block; returns the patch set and its new id.

    Only statement insertions and replacements can be marked: a header, signature or
    deletion edit has no statements to put between markers (BadInput OP004).
    """
    module, block = find_block(patches, block_id)
    if block.marked:
        raise BadInput.at(Code.OP004, block_id, 0, "this block is marked already")
    if block.kind not in (BlockKind.INSERTION, BlockKind.REPLACEMENT):
        raise BadInput.at(
            Code.OP004,
            block_id,
            0,
            f"a {block.kind.value} edit has no statements to mark; edit the runner by hand",
        )
    new_id = _next_block_id(module, block)
    code = _wrapped(block.code)
    adopted = replace(block, id=new_id, marked=True, code=code, title=title or block.title)
    return _replace_piece(patches, block, adopted), new_id


def _wrapped(code: str) -> str:
    """The code between marker lines, keeping the blank lines around it outside them."""
    lines = code.split("\n")
    start = next((i for i, line in enumerate(lines) if line.strip()), 0)
    end = max((i for i, line in enumerate(lines) if line.strip()), default=len(lines) - 1)
    body = lines[start : end + 1]
    return "\n".join([*lines[:start], MARKER, *body, MARKER, *lines[end + 1 :]])


def _next_block_id(module: ModulePatches, block: Block) -> str:
    prefix = re.sub(r"\.edit-\d+$", "", block.id)
    taken = {p.id for p in module.pieces}
    number = 1
    while f"{prefix}.block-{number:02d}" in taken:
        number += 1
    return f"{prefix}.block-{number:02d}"


def _replace_piece(patches: PatchSet, old: Piece, new: Piece) -> PatchSet:
    modules = []
    for module in patches.modules:
        pieces = tuple(new if piece is old else piece for piece in module.pieces)
        modules.append(replace(module, pieces=pieces))
    return PatchSet(tuple(modules))
