"""The order rule: the blocks of one member keep their order, and never share statements.

Blocks of one member keep their relative order across an upgrade: a place that would put
a block before an earlier block (or after a later one) placed in the same body is no
place for it, so an ambiguous block takes the only good place that keeps the order. Only
accepted placements constrain, so nothing is guessed in a chain. And two blocks may not
replace the same upstream statements: the weaker becomes a conflict.
"""

from __future__ import annotations

from collections.abc import Container, Sequence
from dataclasses import replace

from omni_port.model import BlockKind, Rule
from omni_port.sync.context import Decision, Settled, conflict, placed
from omni_port.sync.evidence.places import ACCEPT, Slot, clear_winner
from omni_port.sync.facts import MemberFacts
from omni_port.sync.rule import Silent


class Order(Silent):
    name = Rule.ORDER
    reads = ()

    def settle(self, facts: MemberFacts, decisions: Sequence[Decision]) -> list[Settled] | None:
        return list(_one_owner_each(_in_order(decisions)))


def _in_order(decisions: Sequence[Decision]) -> list[Decision]:
    """An ambiguous block takes the best place that keeps the blocks' order, if clear."""
    result = list(decisions)
    for position, decision in enumerate(decisions):
        if not decision.conflict or not decision.tied:
            continue
        kept = [c for c in decision.candidates if _keeps_order(c.slot, position, decisions)]
        if len(kept) == len(decision.candidates) or not kept or kept[0].score < ACCEPT:
            continue
        if len(kept) == 1 or clear_winner(kept[0], kept[1]):
            reason = "the best place that keeps the order of the member's blocks"
            result[position] = placed(decision.block, kept[0], decision.candidates, reason)
    return result


def _keeps_order(slot: Slot, position: int, decisions: Sequence[Decision]) -> bool:
    for other, decision in enumerate(decisions):
        placed = decision.slot
        if other == position or decision.conflict or placed is None:
            continue
        if placed.suite is not slot.suite:
            continue
        if other < position and slot.index < placed.index + placed.span:
            return False
        if other > position and slot.index > placed.index:
            return False
    return True


def _one_owner_each(decisions: list[Decision]) -> list[Decision]:
    """Two blocks may not replace the same upstream statements: the weaker becomes a
    conflict. An edit followed as upstream code keeps upstream's statements and owns
    none: it gives up those another block replaces (they claim first)."""
    claimed: dict[tuple[int, int], Decision] = {}
    result = list(decisions)
    order = sorted(range(len(result)), key=lambda i: (result[i].follow, -result[i].score))
    for i in order:
        decision = result[i]
        if decision.conflict or decision.slot is None or not decision.slot.span:
            continue
        cells = [
            (id(decision.slot.suite), decision.slot.index + k) for k in range(decision.slot.span)
        ]
        owner = next((claimed[c] for c in cells if c in claimed), None)
        if owner is None:
            claimed.update((c, decision) for c in cells)
            continue
        if decision.follow:
            slot = _unclaimed(decision.slot, cells, claimed)
            if slot.span or decision.release or decision.block.kind is BlockKind.DELETION:
                result[i] = replace(decision, slot=slot)
                continue
            # Upstream's statements that stood for the edit's code are another block's: a
            # row that says "placed" would have nothing of it in the output.
            reason = (
                f"upstream's statements that stand for its code are replaced by "
                f"{owner.block.id}: placed, its code would be in the output nowhere"
            )
            result[i] = replace(
                conflict(decision.block, None, decision.candidates, reason),
                slot=decision.slot,
                score=decision.score,
            )
            continue
        reason = f"the statements it replaced are already replaced by {owner.block.id}"
        result[i] = replace(
            conflict(decision.block, None, decision.candidates, reason),
            slot=decision.slot,
            score=decision.score,
        )
    return result


def _unclaimed(slot: Slot, cells: list[tuple[int, int]], claimed: Container[object]) -> Slot:
    """``slot`` less the statements other blocks claimed: its first run of unclaimed
    statements, or nothing right after the claimed ones."""
    free = [k for k, cell in enumerate(cells) if cell not in claimed]
    if not free:
        return Slot(slot.suite, slot.path, slot.index + slot.span, 0)
    run = 1
    while run < len(free) and free[run] == free[0] + run:
        run += 1
    return Slot(slot.suite, slot.path, slot.index + free[0], run)


RULE = Order()
