"""The three-way statement merge, as the placement rules read it.

Where both sides edited one statement, omni's code and upstream's merge on the syntax
tree (``pyast.merge3``) against the base's text; statements omni moved into a block
receive upstream's edits of the originals (``pyast.moves``). This module is the engine's
one door to both: the rules speak of blocks and places, never of syntax trees.
"""

from __future__ import annotations

from collections.abc import Sequence

from omni_port.model import BlockKind, Stmt, Tree
from omni_port.pyast import merge3, moves
from omni_port.pyast.fields import Fields
from omni_port.pyast.merge3 import Clash, Merged
from omni_port.pyast.moves import Moved, Original
from omni_port.sync.evidence.code import with_body, without_body

__all__ = [
    "Clash",
    "Merged",
    "Moved",
    "Original",
    "already_omnis",
    "fields_only",
    "merge_block",
    "merge_moves",
    "merge_signature",
    "moved_away",
    "originals",
    "simple_statements",
    "without_body",
]


def already_omnis(by: str) -> str:
    """The note of a merge that takes nothing from upstream: upstream's changes are omni's
    code already, naming the change that made them (``by``, as notes name it; "" when
    history does not tell: docs/design.md rule 6)."""
    made = f" ({by} made them)" if by else ""
    return f"upstream's changes are in omni's code already{made}"


def merge_block(
    base: str, mine: str, theirs: str, kind: BlockKind, marked: bool, fields: Fields = ()
) -> Merged | Clash:
    """omni's code of a block of ``kind`` (``mine``) with upstream's edits of the code it
    replaced (``base`` became ``theirs``), or the clash; a header's code merges with a
    stand-in body (``theirs`` and ``base`` already carry one). ``fields`` are the records
    the output defines (their order orders what both sides appended to a construction).

    Where the merge clashes on an unmarked replacement, upstream may have rewritten the
    statement around the one expression omni changed: omni's expression goes into
    upstream's code (a marked block's markers are in omni's text, not upstream's)."""
    header = kind is BlockKind.HEADER
    code = with_body(mine) if header else mine
    merged = merge3.merge(base, code, theirs, fields)
    if isinstance(merged, Clash) and kind is BlockKind.REPLACEMENT and not marked:
        merged = merge3.transplant(base, code, theirs) or merged
    if isinstance(merged, Merged) and header:
        return Merged(without_body(merged.text), merged.taken)
    return merged


def merge_signature(base: str, mine: str, theirs: str) -> Merged | Clash:
    """omni's signature with upstream's edits of the one it changed (all three with a
    stand-in body: ``with_body``)."""
    return merge3.merge(base, mine, theirs)


def fields_only(code: str) -> bool:
    """Whether ``code`` is only fields of a class body (annotated names)."""
    return merge3.all_fields(code)


def simple_statements(member: Stmt, tree: Tree) -> list[Original]:
    """Every simple statement of a member, nested ones included, with its code."""
    return moves.simple_statements(member, tree)


def originals(stmts: Sequence[Stmt], tree: Tree) -> list[Original]:
    """The simple statements of ``stmts`` and of every body nested in them."""
    return moves.nested(stmts, tree)


def merge_moves(
    code: str,
    removed: Sequence[Original],
    target: Sequence[Original],
    older: Sequence[tuple[str, Sequence[Original]]],
) -> Moved | Clash | None:
    """``code`` with upstream's edits merged into its copies of ``removed`` statements
    (``pyast.moves.merge_moves``)."""
    return moves.merge_moves(code, removed, target, older)


def moved_away(
    old: Sequence[Original],
    headers: tuple[tuple[str, ...], tuple[str, ...]],
    now: Sequence[Original],
    moved: set[str],
) -> bool | None:
    """Whether upstream's edits of deleted statements all went to statements omni moved
    (``pyast.moves.moved_away``)."""
    return moves.moved_away(old, headers, now, moved)
