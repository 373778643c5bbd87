"""The places provider: the bodies of the new upstream member, the places the anchor ranks
for each block, and the place of its counterpart in omni's GPU runner."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace
from functools import cached_property

from omni_port.model import Block, BlockKind, Stmt
from omni_port.pyast.diff import similarity
from omni_port.pyast.syntax import split_full_key
from omni_port.sync.evidence import code
from omni_port.sync.evidence.places import FUZZY, Index, Scored, clear_place, index_of, ranked
from omni_port.sync.facts.once import PerBlock


class Places:
    """Where things stand in one copied member of the new upstream."""

    def __init__(self, member: Stmt) -> None:
        self._member = member
        #: Every body of the member and every statement's place in it.
        self.index: Index = index_of(member)
        self.ranked = PerBlock(self._ranked)
        self._counterparts = PerBlock[dict[float, Scored | None]](lambda _: {})

    @cached_property
    def parameters(self) -> frozenset[str]:
        """The member's parameters."""
        return frozenset(code.parameters(self._member.key))

    @cached_property
    def bound(self) -> frozenset[str]:
        """The names the member binds anywhere in its body, and its parameters."""
        local = frozenset(
            n for _, suite in self.index.suites for s in suite.stmts for n in s.writes
        )
        return local | self.parameters

    def _ranked(self, block: Block) -> tuple[Scored, ...]:
        """Every place of the block in the new member, best first (the anchor's ranking)."""
        return tuple(ranked(self.index, block))

    def counterpart(self, block: Block, floor: float) -> Scored | None:
        """The clear best place of the block's counterpart anchor (omni's GPU runner)
        scoring at least ``floor``; None without a counterpart or a clear place."""
        kept = self._counterparts(block)
        if floor not in kept:
            kept[floor] = self._counterpart(block, floor)
        return kept[floor]

    def _counterpart(self, block: Block, floor: float) -> Scored | None:
        if block.counterpart is None:
            return None
        ghost = replace(block, kind=BlockKind.INSERTION, anchor=block.counterpart)
        return clear_place(self.index, ghost, floor)

    def resembling(self, keys: Sequence[str]) -> list[Stmt]:
        """The statements of the new member, in any body, of the kind of a statement keyed
        in ``keys`` and alike to it as the anchor tells one statement edited from another."""
        heads = {(split_full_key(key)[0], code.kind_of(key)) for key in keys}
        return [
            stmt
            for _, suite in self.index.suites
            for stmt in suite.stmts
            if any(
                stmt.kind == kind and similarity(head, stmt.key) >= FUZZY for head, kind in heads
            )
        ]

    def taken_by(self, blocks: Sequence[Block]) -> tuple[tuple[int, int], ...]:
        """The line ranges of the new upstream's statements that ``blocks`` replace or
        delete, a compound one with its body."""
        keys = [k for b in blocks if b.kind is not BlockKind.HEADER for k in b.anchor.replaced]
        return tuple((stmt.start, stmt.full_end) for stmt in self.resembling(keys))
