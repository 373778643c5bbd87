"""The flows provider: what code binds and reads (its data flow), the block's and the new
upstream's, and whether a block's code runs at a place."""

from __future__ import annotations

from collections.abc import Sequence
from functools import cached_property

from omni_port.model import Block, Stmt
from omni_port.sync.evidence import code, flow, runs
from omni_port.sync.evidence.flow import Flow, Verdict
from omni_port.sync.evidence.places import Slot
from omni_port.sync.facts.places import Places
from omni_port.sync.facts.syntax import Syntax


class Flows:
    """The data flow of one copied member's code and of its blocks."""

    def __init__(
        self,
        member: Stmt,
        syntax: Syntax,
        places: Places,
        attributes: runs.Attributes | None,
        marked: tuple[Block, ...],
    ) -> None:
        self._member = member
        self._syntax = syntax
        self._places = places
        self._attributes = attributes
        self._marked = marked
        self._flows: dict[str, Flow | None] = {}
        self._at: dict[tuple[int, int, int], Flow | None] = {}

    def flow(self, block: Block) -> Flow | None:
        """The data flow of the block's code (None when it does not parse)."""
        return self.flow_of(block.code)

    def flow_of(self, text: str) -> Flow | None:
        """The data flow of some code (None when it does not parse), kept per text."""
        if text not in self._flows:
            nodes = self._syntax.parsed(text)
            self._flows[text] = flow.flow(nodes) if nodes is not None else None
        return self._flows[text]

    def flow_at(self, slot: Slot) -> Flow | None:
        """The data flow of the upstream statements ``slot`` spans (None for none)."""
        key = slot.key()
        if key not in self._at:
            stmts = slot.held()
            self._at[key] = self.flow_of(self._syntax.source(stmts)) if stmts else None
        return self._at[key]

    def bound_by(self, slot: Slot) -> frozenset[str]:
        """Names the upstream statements at ``slot`` bind."""
        found = self.flow_at(slot)
        return found.writes if found is not None else frozenset()

    @cached_property
    def marked_binds(self) -> dict[str, str]:
        """Names the member's marked blocks bind, each with the first such block's id."""
        found: dict[str, str] = {}
        for block in self._marked:
            bound = self.flow(block)
            for name in sorted(bound.writes if bound is not None else ()):
                found.setdefault(name, block.id)
        return found

    def read_after(self, slot: Slot, taken: Sequence[tuple[int, int]] = ()) -> frozenset[str]:
        """Names that statements after ``slot``'s statements read, other than those in the
        line ranges ``taken``."""
        return code.read_after(self._member, slot, taken)

    def verdict(self, mine: Flow, new: Sequence[Stmt], start: Slot) -> Verdict | None:
        """What data flow says about a block (``mine``) and new upstream code from ``start``."""
        nodes = self._syntax.parsed(self._syntax.source(new))
        if nodes is None:
            return None
        bound = code.bound_before(self._member, start, self._places.parameters)
        return flow.side(mine, flow.flow(nodes), bound)

    @cached_property
    def _place(self) -> runs.Place:
        places = self._places
        return runs.Place(self._member, places.index, places.bound, places.parameters)

    def why_not(self, block: Block, slot: Slot, taken: Sequence[tuple[int, int]] = ()) -> str:
        """Why ``block``'s code would not run at ``slot`` ("" when it would): it reads a
        name nothing binds before it or an attribute nothing assigns any more, or it takes
        away a binding upstream's later code reads, other than code at the line ranges
        ``taken`` (what the member's other blocks replace or delete in the runner)."""
        mine = self.flow(block)
        if mine is None:
            return ""
        return runs.why_not(self._place, mine, slot, self._attributes, taken)
