"""Maintainer edits of a patch set: record a conflict's resolution, adopt an implicit edit."""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import replace

from omni_port.errors import BadInput
from omni_port.model import (
    Anchor,
    Block,
    BlockKind,
    Chunk,
    Code,
    ModulePatches,
    PatchSet,
    Piece,
    Resolution,
)

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


def unresolved(block: Block) -> Block:
    """``block`` without its recorded resolution: what the engine decides on its own."""
    return replace(block, anchor=replace(block.anchor, resolution=None))


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


def carried(new: PatchSet, old: PatchSet) -> PatchSet:
    """``new`` (a re-extraction) with the ids, titles, recorded resolutions and adoptions of
    ``old`` (the patches a maintainer edited).

    Titles, ids and resolutions stay with their code. A block is the same edit as an old
    one of its module when its class, method, kind, replaced statements and code are (the
    n-th of several such edits is the n-th); failing that, when its whole anchor and kind
    are and no other edit has them (its code changed in place). A block that is the same
    edit keeps the old id, so an edit's id does not move when edits before it appear or
    vanish (ids count the edits of a method in source order); a new edit keeps its own id
    unless an old one holds it, then takes the first number no edit of the method held.
    A recorded resolution names a place in the upstream, so it stays valid however the
    runner changed around the edit; sync checks that it still holds there. Other pieces
    are the same when their id is.
    """
    new = readopted(new, old)
    previous = {module.name: module for module in old.modules}
    modules = []
    for module in new.modules:
        before = previous.get(module.name)
        modules.append(_carried_module(module, before) if before is not None else module)
    return PatchSet(tuple(modules))


def _carried_module(module: ModulePatches, old: ModulePatches) -> ModulePatches:
    blocks = [p for p in module.pieces if isinstance(p, Block)]
    matches = _same_edits(blocks, [p for p in old.pieces if isinstance(p, Block)])
    ids = _kept_ids(module, old, blocks, matches)
    by_id = {piece.id: piece for piece in old.pieces if not isinstance(piece, Block)}
    pieces = []
    for piece in module.pieces:
        if isinstance(piece, Block):
            pieces.append(_carry(replace(piece, id=ids[id(piece)]), matches.get(id(piece))))
        else:
            before = by_id.get(piece.id)
            pieces.append(_carry(piece, before if type(before) is type(piece) else None))
    return replace(module, pieces=tuple(pieces))


def _same_edits(new: list[Block], old: list[Block]) -> dict[int, Block]:
    """The old block each new block is (by ``id()`` of the new one), where there is one."""
    matches: dict[int, Block] = {}
    olds = {_identity(b, old): b for b in old}
    for block in new:
        found = olds.get(_identity(block, new))
        if found is not None:
            matches[id(block)] = found
    # An edit whose code changed where it stands: the one old edit with its whole anchor;
    # then an edit whose anchor changed (another base: other replaced statements or
    # neighbours) with the same code: the one old edit of its method with that code.
    for key in (_spot, _code_key):
        taken = {id(b) for b in matches.values()}
        spare_old = [b for b in old if id(b) not in taken]
        spare_new = [b for b in new if id(b) not in matches]
        for block in spare_new:
            same = [b for b in spare_old if key(b) == key(block)]
            if len(same) == 1 and sum(key(b) == key(block) for b in spare_new) == 1:
                matches[id(block)] = same[0]
    return matches


def _code_key(block: Block) -> tuple[object, ...]:
    """What an edit is wherever it stands and whatever it replaced: its method and code
    (against another base a replacement may read as an insertion)."""
    return (block.owner, block.member, block.marked, block.code)


def _identity(block: Block, blocks: list[Block]) -> tuple[object, ...]:
    """What makes an edit the same one: its method, kind, the upstream statements it
    replaced and its own code (not its neighbours: omni edits around it may change), and
    which of the edits alike it is, in source order."""
    key = _edit_key(block)
    alike = [b for b in blocks if _edit_key(b) == key]
    return (*key, next(n for n, b in enumerate(alike) if b is block))


def _edit_key(block: Block) -> tuple[object, ...]:
    return (block.owner, block.member, block.kind, block.anchor.replaced, block.code)


def _spot(block: Block) -> tuple[object, ...]:
    """Where an edit stands and what it is, whatever its code."""
    anchor = replace(block.anchor, resolution=None)
    return (block.owner, block.member, block.kind, block.marked, anchor)


def _kept_ids(
    module: ModulePatches, old: ModulePatches, blocks: list[Block], matches: dict[int, Block]
) -> dict[int, str]:
    """Each block's id (by ``id()``): the old one for the same edit, else its own unless
    an old one holds it."""
    ids = {id(b): matches[id(b)].id for b in blocks if id(b) in matches}
    # An old id is another edit's, kept or gone: a new edit never takes one.
    held = {p.id for p in old.pieces} | {p.id for p in module.pieces if not isinstance(p, Block)}
    used = set(ids.values())
    for block in blocks:
        if id(block) in ids:
            continue
        ident = block.id
        if ident in used or ident in held:
            ident = _first_free(ident, used | held)
        ids[id(block)] = ident
        used.add(ident)
    return ids


def _first_free(ident: str, taken: set[str]) -> str:
    """``ident`` renumbered: its prefix and label with the first number no id in ``taken``
    has (``x.edit-03`` -> ``x.edit-07``)."""
    prefix, _, number = ident.rpartition("-")
    if not number.isdigit():
        prefix = ident
    count = 1
    while f"{prefix}-{count:02d}" in taken:
        count += 1
    return f"{prefix}-{count:02d}"


def lost(new: PatchSet, old: PatchSet) -> list[tuple[ModulePatches, Block]]:
    """The blocks of ``old`` with a recorded resolution that ``new`` (``old`` carried into
    a re-extraction of some of its modules) no longer holds: writing ``new`` would drop
    them. Modules ``new`` does not hold are not rewritten, so nothing of theirs is lost."""
    kept = {
        (piece.id, piece.anchor.resolution)
        for module in new.modules
        for piece in module.pieces
        if isinstance(piece, Block)
    }
    read = {module.name for module in new.modules}
    return [
        (module, piece)
        for module in old.modules
        if module.name in read
        for piece in module.pieces
        if isinstance(piece, Block)
        and piece.anchor.resolution is not None
        and (piece.id, piece.anchor.resolution) not in kept
    ]


def _carry(piece: Piece, old: Piece | None) -> Piece:
    if old is None:
        return piece
    if isinstance(piece, Chunk | Block) and isinstance(old, Chunk | Block) and old.title:
        piece = replace(piece, title=old.title)
    if isinstance(piece, Block) and isinstance(old, Block) and old.anchor.resolution is not None:
        piece = replace(piece, anchor=replace(piece.anchor, resolution=old.anchor.resolution))
    return piece


def readopted(new: PatchSet, old: PatchSet) -> PatchSet:
    """Adoptions survive re-extraction: an implicit edit of ``new`` that ``old`` holds as a
    block ``adopt`` made (the same place and anchor, the same code between the marker lines
    adopt wrote) becomes that marked block again, with its id and title.

    The runners themselves never get the markers (omni-port does not edit its inputs), so
    every extract finds the edit unmarked again; without this, ``make sync`` (which
    extracts first) would undo every adoption.
    """
    modules = []
    for module in new.modules:
        previous = next((m for m in old.modules if m.name == module.name), None)
        adopted = [_adopted_from(p) for p in previous.pieces] if previous is not None else []
        forms = [pair for pair in adopted if pair is not None]
        taken = {p.id for p in module.pieces}
        pieces = []
        for piece in module.pieces:
            match = _adoption_of(piece, forms)
            if match is not None and isinstance(piece, Block):
                block_id = match.id if match.id not in taken else _free_id(match.id, taken)
                taken.add(block_id)
                piece = replace(
                    match, id=block_id, origin=piece.origin, anchor=_kept_anchor(piece, match)
                )
            pieces.append(piece)
        modules.append(replace(module, pieces=tuple(pieces)))
    return PatchSet(tuple(modules))


def _adopted_from(piece: Piece) -> tuple[Block, str] | None:
    """(the block, the implicit edit's code) when ``piece`` is a block ``adopt`` made."""
    if not isinstance(piece, Block) or not piece.marked:
        return None
    lines = piece.code.split("\n")
    marks = [i for i, line in enumerate(lines) if line == MARKER]
    if len(marks) != 2:
        return None
    inner = [line for i, line in enumerate(lines) if i not in marks]
    return piece, "\n".join(inner)


def _adoption_of(piece: Piece, forms: list[tuple[Block, str]]) -> Block | None:
    if not isinstance(piece, Block) or piece.marked:
        return None
    for block, code in forms:
        same_place = (block.owner, block.member, block.kind) == (
            piece.owner,
            piece.member,
            piece.kind,
        )
        same_anchor = replace(block.anchor, resolution=None) == replace(
            piece.anchor, resolution=None
        )
        if same_place and same_anchor and code == piece.code:
            return block
    return None


def _kept_anchor(piece: Block, adopted: Block) -> Anchor:
    """The new anchor, with the resolution recorded on the adopted block."""
    return replace(piece.anchor, resolution=adopted.anchor.resolution)


def _free_id(block_id: str, taken: set[str]) -> str:
    prefix = re.sub(r"\.block-\d+$", "", block_id)
    number = 1
    while f"{prefix}.block-{number:02d}" in taken:
        number += 1
    return f"{prefix}.block-{number:02d}"


def _wrapped(code: str) -> str:
    """The code between marker lines, keeping the blank lines around it outside them."""
    lines = code.split("\n")
    start = next((i for i, line in enumerate(lines) if line.strip()), 0)
    end = max((i for i, line in enumerate(lines) if line.strip()), default=len(lines) - 1)
    body = lines[start : end + 1]
    return "\n".join([*lines[:start], MARKER, *body, MARKER, *lines[end + 1 :]])


def _next_block_id(module: ModulePatches, block: Block) -> str:
    prefix = re.sub(r"\.edit-\d+$", "", block.id)
    return _free_id(f"{prefix}.block-01", {p.id for p in module.pieces})


def relocated(patches: PatchSet, paths: Mapping[str, str]) -> PatchSet:
    """The patch set with its source paths (each module's source and base, each piece's
    origin) renamed as ``paths`` maps them; paths it does not name are kept."""
    modules = []
    for module in patches.modules:
        pieces = tuple(_moved(piece, paths) for piece in module.pieces)
        source = paths.get(module.source, module.source)
        base = paths.get(module.base, module.base)
        modules.append(replace(module, source=source, base=base, pieces=pieces))
    return PatchSet(tuple(modules))


def _moved(piece: Piece, paths: Mapping[str, str]) -> Piece:
    path = paths.get(piece.origin.path)
    return piece if path is None else replace(piece, origin=replace(piece.origin, path=path))


def _replace_piece(patches: PatchSet, old: Piece, new: Piece) -> PatchSet:
    modules = []
    for module in patches.modules:
        pieces = tuple(new if piece is old else piece for piece in module.pieces)
        modules.append(replace(module, pieces=pieces))
    return PatchSet(tuple(modules))
