"""Data flow between a block and the new upstream code next to its place (evidence).

A block keeps the def-use relations it had: every upstream statement that read a name
after the block saw the block's value, and the block read the values upstream had bound
before it. New upstream code between the block's old neighbours is related to the block
when it binds a name the block reads or reads a name the block binds; then the relation
decides the side, or, when it points both ways, makes the block a conflict.
"""

from __future__ import annotations

import ast
import enum
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from omni_port.pyast.syntax import names_of


class Side(enum.Enum):
    """Where the block goes relative to the new code."""

    BEFORE = "before"
    AFTER = "after"


@dataclass(frozen=True, slots=True)
class Flow:
    """Names a run of statements reads before binding them, and names it binds."""

    reads: frozenset[str]
    writes: frozenset[str]


@dataclass(frozen=True, slots=True)
class Verdict:
    """What data flow says about the block and one run of new upstream code."""

    #: The side, or None when the relations point both ways (a conflict).
    side: Side | None
    #: Why, in a few words, for reports.
    why: str


def flow(nodes: Sequence[ast.stmt], bound: Iterable[str] = ()) -> Flow:
    """Names read before this code binds them (free reads), and every name it binds."""
    reads: set[str] = set()
    writes: set[str] = set()
    known = set(bound)
    for node in nodes:
        head_reads, head_writes = names_of([node], header_only=True)
        reads |= head_reads - known
        bodies = _bodies(node)
        for body in bodies:
            inner = flow(body, known | head_writes)
            reads |= inner.reads
            writes |= inner.writes
        known |= head_writes
        writes |= head_writes
        for body in bodies:
            known |= flow(body, known).writes
    return Flow(frozenset(reads), frozenset(writes))


def _bodies(node: ast.stmt) -> list[list[ast.stmt]]:
    bodies = [getattr(node, name, None) for name in ("body", "orelse", "finalbody")]
    found = [b for b in bodies if isinstance(b, list) and b and isinstance(b[0], ast.stmt)]
    for handler in getattr(node, "handlers", []):
        found.append(handler.body)
    for case in getattr(node, "cases", []):
        found.append(case.body)
    return found


def _attribute(name: str) -> bool:
    return name.startswith("self.")


def side(block: Flow, new: Flow, bound: frozenset[str]) -> Verdict | None:
    """Where the block goes relative to new upstream code between its old neighbours.

    ``bound`` holds the names bound before that code (parameters included); attributes of
    ``self`` always count as bound, since other methods set them.

    - after, when the block reads a name only the new code binds: upstream moved the
      definition the block read into it;
    - before, when the new code reads a name the block binds: every upstream statement
      after the block saw its value;
    - before, when the new code rebinds a name the block reads: the block keeps reading
      the value it read.

    None when nothing relates them; a verdict without a side when they point both ways.
    """
    known = bound | {n for n in new.writes | block.reads if _attribute(n)}
    introduced = sorted(block.reads & (new.writes - known))
    read_by_new = sorted(block.writes & new.reads)
    rebound = sorted(block.reads & new.writes & known)
    after = [f"it reads {_names(introduced)}, which the new code binds first"] if introduced else []
    before = []
    if read_by_new:
        before.append(f"the new code reads {_names(read_by_new)}, which it binds")
    if rebound:
        before.append(f"the new code rebinds {_names(rebound)}, which it reads")
    if after and before:
        return Verdict(None, "; ".join(after + before))
    if after:
        return Verdict(Side.AFTER, after[0])
    if before:
        return Verdict(Side.BEFORE, "; ".join(before))
    return None


def _names(names: Sequence[str]) -> str:
    shown = ", ".join(f"`{n}`" for n in names[:3])
    return shown + (f" and {len(names) - 3} more" if len(names) > 3 else "")
