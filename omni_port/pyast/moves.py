"""Moved statements still receive upstream's edits: the merge of a moved statement's copy.

omni often takes an upstream statement out of one place (a deletion or a replacement) and
writes it, maybe edited, into a block somewhere else. The copy in the block is then an
edited upstream statement: when upstream edits the original, the edit merges into the copy
(``merge3``), or the block is a conflict. The merge base is the original as the base had
it, or as an older release had it when the copy was written against that one (its text is
the older release's plus omni's additions, and the base's is not contained in it).
"""

from __future__ import annotations

import ast
from collections.abc import Sequence
from dataclasses import dataclass

from omni_port.pyast import merge3
from omni_port.pyast.diff import similarity
from omni_port.pyast.merge3 import written_against
from omni_port.pyast.syntax import Stmt, Tree, dedent_code, walk

#: Least similarity for a statement of a block to be a moved copy of an upstream one.
MOVED = 0.8


@dataclass(frozen=True, slots=True)
class Original:
    """An upstream statement as one release writes it."""

    key: str
    text: str


@dataclass(frozen=True, slots=True)
class Moved:
    """A block's code with upstream's edits of its moved statements merged in."""

    code: str
    taken: tuple[str, ...]
    #: Releases other than the base the copies were written against.
    releases: tuple[str, ...]
    #: Keys of the base statements the code holds copies of.
    origins: tuple[str, ...] = ()


def simple_statements(member: Stmt, tree: Tree) -> list[Original]:
    """Every simple statement of a member, nested ones included, with its code."""
    found = []
    for _, suite in walk(member.clauses[0]):
        for stmt in suite.stmts:
            if not stmt.clauses:
                found.append(Original(stmt.key, dedent_code(tree.text(stmt.start, stmt.end))))
    return found


def nested(stmts: Sequence[Stmt], tree: Tree) -> list[Original]:
    """The simple statements of ``stmts`` and of every body nested in them."""
    found = []
    for stmt in stmts:
        if not stmt.clauses:
            found.append(Original(stmt.key, dedent_code(tree.text(stmt.start, stmt.end))))
        for clause in stmt.clauses:
            found.extend(nested(clause.stmts, tree))
    return found


def merge_moves(
    code: str,
    removed: Sequence[Original],
    target: Sequence[Original],
    older: Sequence[tuple[str, Sequence[Original]]],
) -> Moved | merge3.Clash | None:
    """Merge upstream's edits into the statements of ``code`` that are copies of
    ``removed`` base statements; None when it holds no copy of one.

    ``target`` holds the new upstream's statements of the member; ``older`` the releases
    before the base (label, their statements), newest first, for copies written against
    one of them.
    """
    try:
        tree = ast.parse(dedent_code(code))
    except SyntaxError:
        return None
    lines = code.split("\n")
    edits: list[tuple[int, int, str]] = []
    taken: list[str] = []
    releases: list[str] = []
    origins: list[str] = []
    for node in ast.walk(tree):
        if not isinstance(node, ast.stmt) or _compound(node) or node.end_lineno is None:
            continue
        mine = ast.unparse(node)
        origin = _one(removed, mine)
        if origin is None:
            continue
        origins.append(origin.key)
        theirs = _counterpart(target, origin)
        if theirs is None:
            return merge3.Clash(f"`{_short(mine)}` is a moved upstream statement upstream removed")
        base, release = _base_for(origin, mine, older)
        if theirs.key == origin.key and not release:
            continue
        first, last = node.lineno, node.end_lineno
        text = "\n".join(lines[first - 1 : last]) + "\n"
        merged = merge3.merge(base, text, theirs.text)
        if isinstance(merged, merge3.Clash):
            return merge3.Clash(f"`{_short(mine)}` is a moved upstream statement: {merged.reason}")
        if merged.taken:
            edits.append((first, last, merged.text))
            taken.extend(f"moved `{_short(mine, 40)}`: {t}" for t in merged.taken)
            releases.extend([release] if release else [])
    if not origins:
        return None
    for first, last, text in sorted(edits, reverse=True):
        lines[first - 1 : last] = text.rstrip("\n").split("\n")
    return Moved("\n".join(lines), tuple(taken), tuple(dict.fromkeys(releases)), tuple(origins))


def moved_away(
    deleted: Sequence[Original],
    headers: tuple[tuple[str, ...], tuple[str, ...]],
    now: Sequence[Original],
    moved: set[str],
) -> bool | None:
    """Whether upstream's edits inside statements omni deleted all went to statements omni
    moved elsewhere (their copies received the edits), so the deletion still holds: True
    when some did, None when upstream only removed statements (omni removed them too),
    False when an edit went to code omni just deleted.

    ``deleted`` are the base's simple statements of the deleted region, ``now`` the new
    upstream's, ``headers`` the compound headers of both (which must not have changed).
    """
    if headers[0] != headers[1]:
        return False
    kept = {s.key for s in deleted}
    edited = [s for s in now if s.key not in kept]
    for statement in edited:
        origin = _one(deleted, statement.key)
        if origin is None or origin.key not in moved:
            return False
    return True if edited else None


def _compound(node: ast.stmt) -> bool:
    return any(isinstance(getattr(node, f, None), list) for f in ("body", "orelse"))


def _one(statements: Sequence[Original], key: str) -> Original | None:
    """The one statement of ``statements`` that ``key`` copies (equal, else similar)."""
    exact = [s for s in statements if s.key == key]
    if exact:
        return exact[0]
    close = [s for s in statements if similarity(s.key, key) >= MOVED]
    return close[0] if len(close) == 1 else None


def _counterpart(statements: Sequence[Original], origin: Original) -> Original | None:
    return _one(statements, origin.key)


def _base_for(
    origin: Original, mine: str, older: Sequence[tuple[str, Sequence[Original]]]
) -> tuple[str, str]:
    """(merge base, release other than the base it came from, or "")."""
    for label, statements in older:
        found = _one(statements, origin.key)
        if found is not None and written_against(found.text, mine, origin.text):
            return found.text, label
    return origin.text, ""


def _short(text: str, limit: int = 60) -> str:
    text = " ".join(text.split())
    return text if len(text) <= limit else text[: limit - 3] + "..."
