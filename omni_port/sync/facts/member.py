"""The facts of one copied member: the member in the new upstream, its module, and one
provider per kind of fact the rules read."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from functools import cached_property

from omni_port.model import Block, Stmt, Tree
from omni_port.pyast.fields import Fields
from omni_port.sync.evidence import runs
from omni_port.sync.evidence.catalog import Constraint
from omni_port.sync.evidence.history import MemberHistory
from omni_port.sync.facts.calls import Calls
from omni_port.sync.facts.flows import Flows
from omni_port.sync.facts.history import History
from omni_port.sync.facts.places import Places
from omni_port.sync.facts.records import Records
from omni_port.sync.facts.syntax import Syntax


@dataclass(frozen=True, slots=True)
class Inputs:
    """What the facts of a member are worked out from, besides the member itself."""

    #: The new upstream module.
    tree: Tree
    #: The member across upstream history; None without history (or without the base in it).
    history: MemberHistory | None = None
    #: Catalog constraints, by block id.
    constraints: Mapping[str, Constraint] = field(default_factory=dict)
    #: The blocks whose Location line their own release breaks: stale, it says nothing
    #: about a place.
    stale: frozenset[str] = frozenset()
    #: The new upstream is not the base the patches were extracted against. Onto that
    #: base, a sync reproduces the runner as it is: a disagreement between omni's records
    #: that no upstream change brought is left to the next upgrade to raise.
    upgrade: bool = True
    #: The attributes the releases of history and omni's own code assign (None without
    #: history), for whether a block's code runs at a place.
    attributes: runs.Attributes | None = field(default=None, compare=False)
    #: Upstream statements of this member that a marked block of the patch set (in any
    #: runner) replaces, as the block's replaced keys, with that block's id: omni declared
    #: them its own.
    declared: Mapping[tuple[str, ...], str] = field(default_factory=dict)
    #: The member's marked blocks (what their code binds is omni's: ``Flows.marked_binds``).
    marked: tuple[Block, ...] = ()
    #: The keys of the statements marked blocks of the patch set (in any runner) hold in
    #: their copies of this member: omni's code, wherever a runner holds it.
    omni_code: frozenset[str] = frozenset()
    #: The records the sync's output defines, with their fields in order (``pyast.fields``).
    fields: Fields = ()


class MemberFacts:
    """One copied member in the new upstream, and its providers: each kind of fact is
    worked out the first time a rule asks and kept for the sync."""

    def __init__(self, member: Stmt, inputs: Inputs) -> None:
        #: The member in the new upstream (a method, or a module-level class or function).
        self.member = member
        #: The new upstream module, for the text of its statements.
        self.tree = inputs.tree
        self._inputs = inputs

    @cached_property
    def syntax(self) -> Syntax:
        return Syntax(self.tree, self.member, self._inputs.fields)

    @cached_property
    def places(self) -> Places:
        return Places(self.member)

    @cached_property
    def flows(self) -> Flows:
        inputs = self._inputs
        return Flows(self.member, self.syntax, self.places, inputs.attributes, inputs.marked)

    @cached_property
    def history(self) -> History:
        inputs = self._inputs
        return History(
            inputs.history, self.member, self.tree, self.syntax, self.places, inputs.omni_code
        )

    @cached_property
    def calls(self) -> Calls:
        return Calls(self.member, self.syntax, self.history)

    @cached_property
    def records(self) -> Records:
        inputs = self._inputs
        return Records(
            inputs.upgrade,
            inputs.constraints,
            inputs.stale,
            inputs.declared,
            self.flows,
            self.places,
        )

    @cached_property
    def _alone(self) -> MemberFacts:
        return MemberFacts(self.member, replace(self._inputs, history=None))

    def without_history(self) -> MemberFacts:
        """The same member, as if upstream history said nothing (its facts worked out once)."""
        return self._alone if self._inputs.history is not None else self
