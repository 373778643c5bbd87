"""The catalog's ``Location:`` lines, by the block each entry describes (for sync)."""

from __future__ import annotations

from omni_port.catalog.codematch import code_similarity
from omni_port.catalog.markdown import Catalog, EntryKind
from omni_port.model import Block, PatchSet

#: Least similarity of an entry's code to a block's for the entry to describe the block.
DESCRIBES = 0.8


def locations(catalog: Catalog, patches: PatchSet) -> dict[str, str]:
    """Block id -> the Location line of the catalog entry that describes it.

    An entry describes the block of its class and method whose code is most like its own
    (at least ``DESCRIBES``); each block takes one entry, each entry one block.
    """
    blocks = [p for m in patches.modules for p in m.pieces if isinstance(p, Block)]
    scored = []
    for number, entry in enumerate(catalog.entries):
        if not entry.location or entry.kind not in (EntryKind.BLOCK, EntryKind.STATEMENT):
            continue
        for block in blocks:
            if (block.owner, block.member) != (entry.class_name, entry.method):
                continue
            similarity = code_similarity(entry.code, block.code)
            if similarity >= DESCRIBES:
                scored.append((similarity, number, block.id, entry.location))
    found: dict[str, str] = {}
    used: set[int] = set()
    for _, number, ident, location in sorted(scored, key=lambda s: (-s[0], s[1], s[2])):
        if ident not in found and number not in used:
            found[ident] = location
            used.add(number)
    return found
