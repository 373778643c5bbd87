"""Catalog entries from patches: what every omni edit is and where it goes, in words."""

from __future__ import annotations

from collections.abc import Iterator

from omni_port.catalog.markdown import CatalogEntry, EntryKind, describe_location
from omni_port.extract.markers import scan
from omni_port.model import Block, BlockKind, Chunk, ModulePatches, PatchSet
from omni_port.pyast.parser import parse
from omni_port.pyast.syntax import dedent_code, split_full_key


def entries(patches: PatchSet) -> list[CatalogEntry]:
    """One entry per marked block and per implicit edit, in module order."""
    return [entry for module in patches.modules for entry in _module_entries(module)]


def _module_entries(module: ModulePatches) -> Iterator[CatalogEntry]:
    extensions: dict[str, list[Block]] = {}
    for piece in module.pieces:
        if isinstance(piece, Block) and not piece.owner and not piece.marked:
            extensions.setdefault(piece.member, []).append(piece)
    yield from (_extension_entry(module, member, edits) for member, edits in extensions.items())
    for piece in module.pieces:
        if isinstance(piece, Block) and (piece.owner or piece.marked):
            yield _block_entry(module, piece)
        elif isinstance(piece, Chunk) and piece.marked:
            yield _region_entry(module, piece)
        elif isinstance(piece, Chunk) and piece.name:
            yield from _contained_entries(module, piece)


def _block_entry(module: ModulePatches, block: Block) -> CatalogEntry:
    if block.marked:
        kind = EntryKind.BLOCK
    elif not block.owner:
        kind = EntryKind.MODULE
    elif block.kind is BlockKind.SIGNATURE:
        kind = EntryKind.METHOD
    else:
        kind = EntryKind.STATEMENT
    title = block.title or ("Omni-new block" if block.marked else "Implicit edit")
    return CatalogEntry(
        block.owner,
        module.name,
        block.member,
        _one_line(title),
        kind,
        _code(block),
        describe_location(block.anchor),
    )


def _extension_entry(module: ModulePatches, member: str, edits: list[Block]) -> CatalogEntry:
    """Implicit edits of a module-level copy (new NamedTuple fields, say), as one entry."""
    code = "".join(_code(edit) for edit in edits)
    where = "; ".join(describe_location(edit.anchor) for edit in edits)
    return CatalogEntry("", module.name, member, "Extension", EntryKind.MODULE, code, where)


def _code(block: Block) -> str:
    """The entry code of a block: its own code; a deletion shows what it removes."""
    if block.kind is BlockKind.DELETION:
        removed = [split_full_key(key)[0] for key in block.anchor.replaced]
        return "".join(f"# [Omni] removes: {line}\n" for line in removed)
    code = block.code.strip("\n") + "\n"
    if not block.marked and block.kind is not BlockKind.SIGNATURE and not code.startswith("#"):
        code = "# [Omni] implicit edit\n" + code
    before, after = block.fenced
    if before or after:
        # The upstream code the region holds beside this part, elided: the entry describes
        # the region as the runner has it.
        lines = code.splitlines(keepends=True)
        opener, inner, closer = lines[:1], lines[1:-1], lines[-1:]
        code = "".join([*opener, *(["# ...\n"] if before else []), *inner])
        code += "".join([*(["# ...\n"] if after else []), *closer])
    return code


def _region_entry(module: ModulePatches, chunk: Chunk) -> CatalogEntry:
    """A marked region around whole members (class level) or module code."""
    code = dedent_code(chunk.code.strip("\n")) + "\n"
    names = [
        line.split("(")[0].split()[-1]
        for line in code.splitlines()
        if line.lstrip().startswith("def ")
    ]
    method = names[0] if names else "__body__"
    where = "Class level, around whole members: " + ", ".join(f"`{n}`" for n in names)
    kind = EntryKind.BLOCK if chunk.owner or names else EntryKind.MODULE
    return CatalogEntry(
        chunk.owner,
        module.name,
        method,
        _one_line(chunk.title or "Omni-owned members"),
        kind,
        code,
        where if names else "Module level",
    )


def _contained_entries(module: ModulePatches, chunk: Chunk) -> Iterator[CatalogEntry]:
    """Marked regions inside an omni-owned member, which is carried whole."""
    if "omni" not in chunk.code.lower():
        return
    tree = parse(dedent_code(chunk.code), chunk.origin.path)
    for region in scan(tree).regions:
        code = dedent_code(tree.text(region.opener.line, region.closer.line))
        title = region.opener.title or _first_words(code)
        yield CatalogEntry(
            chunk.owner,
            module.name,
            chunk.name,
            _one_line(title),
            EntryKind.BLOCK,
            code,
            f"Inside the omni-owned `{chunk.name}`, carried whole",
        )


def _first_words(code: str) -> str:
    for line in code.splitlines()[1:]:
        text = line.strip().lstrip("#").strip()
        if text and not set(text) <= set("-"):
            return text[:70]
    return "Omni-new block"


def _one_line(text: str) -> str:
    return " ".join(text.split())
