"""Two blocks never hold the same upstream statements: one that replaces statements where
another block's place lies is a conflict.

The output cannot both replace the statements and put the other block in them, and which
of the two holds is the maintainer's call. An edit followed as upstream's code keeps
upstream's statements and owns none (as in the order rule): it gives them up instead, and a
followed edit inside a replaced span moves after it. A header edit leaves the body, and the
blocks in it, alone.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace

from omni_port.model import BlockKind, Rule
from omni_port.sync.context import Decision, conflict_at
from omni_port.sync.evidence.code import short
from omni_port.sync.evidence.places import Slot, lies_in
from omni_port.sync.facts import MemberFacts
from omni_port.sync.rule import Silent


class Overlap(Silent):
    name = Rule.OVERLAP
    reads = ()

    def revise(self, facts: MemberFacts, decisions: Sequence[Decision]) -> list[Decision] | None:
        """The decisions in block order, each outer one judged against the others as the
        ones before it left them."""
        result = list(decisions)
        for position in range(len(result)):
            _apart(result, position)
        return result


def _apart(result: list[Decision], position: int) -> None:
    """The decision at ``position`` set apart from those whose places lie in what it
    replaces (``result`` changed in place)."""
    outer = result[position]
    slot = outer.slot
    if outer.conflict or slot is None or not slot.span or outer.block.kind is BlockKind.HEADER:
        return
    inside = [i for i, d in enumerate(result) if i != position and _within(d, slot)]
    if not inside:
        return
    if outer.follow:
        result[position] = replace(outer, slot=Slot(slot.suite, slot.path, slot.index, 0))
        return
    after = Slot(slot.suite, slot.path, slot.index + slot.span, 0)
    for i in inside:
        if result[i].follow:
            result[i] = replace(result[i], slot=after)
    placed = [result[i] for i in inside if not result[i].follow]
    if not placed:
        return
    reason = (
        f"it replaces `{short(slot.held()[0].key)}`, where {placed[0].block.id} goes "
        "too: they cannot both hold; place one by hand"
    )
    if outer.reason:
        reason = f"{reason} (alone: {outer.reason})"
    result[position] = conflict_at(outer, reason)


def _within(decision: Decision, slot: Slot) -> bool:
    """Whether ``decision``'s place lies in the statements ``slot`` spans (a conflict's
    place is where its note goes, before the statements it shows)."""
    mine = decision.slot
    return mine is not None and lies_in(mine, slot, bool(mine.span) and not decision.conflict)


RULE = Overlap()
