"""Whether a block's code runs at a place: what it reads is bound there, and what upstream's
later code reads stays bound.

A conflict's candidates are places a maintainer may pick with ``resolve``: one where the
block reads a local name nothing binds before it, or an attribute nothing assigns any
more, or where it takes away a binding upstream's code further on reads, is no place for
it, and is not offered. Attributes are judged by the releases: one the base's module
assigned that the new upstream's module and omni's own code no longer assign is gone,
and the release that stopped assigning it is named.
"""

from __future__ import annotations

import ast
import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field

from omni_port.model import Stmt
from omni_port.pyast import memo
from omni_port.pyast.syntax import dedent_code
from omni_port.sync.evidence.code import read_after
from omni_port.sync.evidence.flow import Flow
from omni_port.sync.evidence.places import Index, Slot

#: ``self.name`` as data flow names an attribute of the instance.
_ATTRIBUTE = re.compile(r"^self\.(\w+)$")


@memo.memoized
def assigned(text: str) -> tuple[frozenset[str], frozenset[str]]:
    """The attributes of ``self`` that code in ``text`` assigns, and those it reads (none
    when it does not parse). Kept for the run: each runner's conflicts ask it of the same
    releases' modules (vLLM's takes a quarter of a second to parse)."""
    try:
        tree = ast.parse(dedent_code(text))
    except (SyntaxError, ValueError):
        return frozenset(), frozenset()
    found: set[str] = set()
    read = {
        node.attr
        for node in ast.walk(tree)
        if isinstance(node, ast.Attribute)
        and isinstance(node.ctx, ast.Load)
        and isinstance(node.value, ast.Name)
        and node.value.id == "self"
    }
    for node in ast.walk(tree):
        targets: Iterable[ast.expr] = ()
        if isinstance(node, ast.Assign):
            targets = node.targets
        elif isinstance(node, ast.AnnAssign | ast.AugAssign):
            targets = (node.target,)
        elif isinstance(node, ast.For | ast.With):
            targets = (
                (node.target,)
                if isinstance(node, ast.For)
                else tuple(i.optional_vars for i in node.items if i.optional_vars is not None)
            )
        for target in targets:
            for part in ast.walk(target):
                if (
                    isinstance(part, ast.Attribute)
                    and isinstance(part.value, ast.Name)
                    and part.value.id == "self"
                ):
                    found.add(part.attr)
    return frozenset(found), frozenset(read)


@dataclass(slots=True)
class Attributes:
    """The attributes the releases of upstream history assign, worked out on demand (only
    a conflict asks), and those omni's own code assigns."""

    #: The module text of each release, oldest first (the base and the new upstream among
    #: them).
    releases: Sequence[tuple[str, str]]
    #: The base's and the new upstream's labels.
    base: str
    target: str
    #: What omni's own code (blocks and owned code) assigns.
    omni: frozenset[str]
    _kept: dict[str, tuple[frozenset[str], frozenset[str]]] = field(default_factory=dict)

    def in_release(self, label: str) -> tuple[frozenset[str], frozenset[str]]:
        """What the release ``label`` assigns to ``self``, and what it reads of it."""
        if label not in self._kept:
            text = dict(self.releases).get(label, "")
            self._kept[label] = assigned(text) if text else (frozenset(), frozenset())
        return self._kept[label]

    def gone(self, name: str) -> str:
        """The release that stopped assigning ``name`` when the base assigned it and the new
        upstream neither assigns nor reads it, nor does omni's code assign it ("" otherwise:
        an attribute the new upstream still reads is assigned somewhere, in vLLM's class as
        often as not)."""
        labels = [label for label, _ in self.releases]
        if name in self.omni or self.base not in labels or self.target not in labels:
            return ""
        writes, _ = self.in_release(self.base)
        now = self.in_release(self.target)
        if name not in writes or name in now[0] or name in now[1]:
            return ""
        later = labels[labels.index(self.base) + 1 :]
        return next(
            (label for label in later if name not in self.in_release(label)[0]), self.target
        )


@dataclass(frozen=True, slots=True)
class Place:
    """What the checks of a place read besides the block: the member and its statements."""

    member: Stmt
    index: Index
    #: Names the member binds anywhere (its parameters included): its local names.
    local: frozenset[str]
    parameters: frozenset[str]


def why_not(
    place: Place,
    mine: Flow,
    slot: Slot,
    attributes: Attributes | None,
    taken: Sequence[tuple[int, int]] = (),
) -> str:
    """Why the block's code (``mine``) does not run at ``slot`` ("" when it does).

    ``taken`` are the line ranges of upstream statements omni's other blocks of the member
    replace or delete: the runner never runs them, so what they read does not hold the
    block back (the runner is judged whole, as a maintainer resolves it)."""
    bound = bound_at(place, slot)
    unbound = sorted(n for n in mine.reads - bound if n in place.local and "." not in n)
    if unbound:
        return f"{_names(unbound)} would be read before anything binds it"
    if attributes is not None:
        for name in sorted(mine.reads):
            attr = _ATTRIBUTE.match(name)
            gone = attr is not None and attributes.gone(attr.group(1))
            if gone:
                return f"`{name}` is assigned nowhere since {gone}"
    held = slot.held()
    if held:
        writes = frozenset(n for s in held for n in s.writes)
        lost = sorted(
            (writes & read_after(place.member, slot, taken, simple=True)) - mine.writes - bound
        )
        if lost:
            return f"upstream's code further on reads {_names(lost)}, which it would unbind"
    return ""


def bound_at(place: Place, slot: Slot) -> frozenset[str]:
    """Names bound before ``slot``: the parameters, statements that end before it, and the
    compound statements around it."""
    line = slot.line()
    names: set[str] = set(place.parameters)
    for _, suite in place.index.suites:
        for stmt in suite.stmts:
            if stmt.full_end < line or (stmt.clauses and stmt.start < line <= stmt.full_end):
                names.update(stmt.writes)
    return frozenset(names)


def _names(names: Sequence[str]) -> str:
    shown = ", ".join(f"`{n}`" for n in names[:3])
    return shown + (f" and {len(names) - 3} more" if len(names) > 3 else "")


def omni_assigned(texts: Mapping[str, str]) -> frozenset[str]:
    """What omni's own code (``texts``, by piece id) assigns to ``self``."""
    found: set[str] = set()
    for text in texts.values():
        found |= assigned(text)[0]
    return frozenset(found)
