"""The records provider: what omni's own records say about a block besides its code (the
catalog's ``Location:`` line, a marked block of the patch set that declares the same
statements omni's, the marked code an unmarked edit is built on), and whether the sync
is an upgrade."""

from __future__ import annotations

from collections.abc import Mapping

from omni_port.model import Block, BlockKind
from omni_port.sync.evidence.catalog import Constraint
from omni_port.sync.facts.flows import Flows
from omni_port.sync.facts.places import Places


class Records:
    """Omni's records of one copied member's blocks."""

    def __init__(
        self,
        upgrade: bool,
        constraints: Mapping[str, Constraint],
        stale: frozenset[str],
        declared: Mapping[tuple[str, ...], str],
        flows: Flows,
        places: Places,
    ) -> None:
        #: The new upstream is not the base the patches were extracted against (see
        #: ``Inputs.upgrade``).
        self.upgrade = upgrade
        self._constraints = constraints
        #: The blocks whose Location line is stale (``Inputs.stale``).
        self._stale = stale
        self._declared = declared
        self._flows = flows
        self._places = places

    def constraint(self, block: Block) -> Constraint | None:
        """The catalog's constraint on the block's place (None when it has none, or its
        line is stale)."""
        return None if block.id in self._stale else self.location(block)

    def location(self, block: Block) -> Constraint | None:
        """The block's catalog Location line, stale or not: a place that breaks it is
        reported either way (None when it has none)."""
        return self._constraints.get(block.id)

    def declared_by(self, block: Block) -> str:
        """The marked block (of another runner, the block being unmarked) that replaces the
        very statements this edit replaces: omni declared them its own there ("" for
        none)."""
        if block.marked or not block.anchor.replaced:
            return ""
        return self._declared.get(tuple(block.anchor.replaced), "")

    def built_on(self, block: Block) -> tuple[tuple[str, str], ...]:
        """The names the unmarked edit's code reads that only marked blocks of the member
        bind (upstream binds them nowhere in the member), each with its block's id: omni's
        edit is built on omni's marked code, so it is omni's change too (none: empty)."""
        mine = self._flows.flow(block)
        if block.marked or block.kind is BlockKind.DELETION or mine is None:
            return ()
        upstream = self._places.bound
        own = self._flows.marked_binds
        return tuple((n, own[n]) for n in sorted(mine.reads) if n in own and n not in upstream)
