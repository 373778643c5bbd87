"""The stepwise rule: follow a block's place release by release through upstream history.

A long upgrade can change the code around a block so much that nothing in the new
method resembles its anchor clearly, while each release on the way changed only a part
of it: a header renamed in one release, the neighbours rewritten in the next. Walked one
release at a time, every step is a small change the anchor rule can judge; at each step
the statements around the chosen place in that release become the anchor for the next.
The walk ends in the new upstream only when every step was clear (the anchor rule's own
floor and margin); one doubtful step and it says nothing.
"""

from __future__ import annotations

from dataclasses import dataclass, replace

from omni_port.extract.blocks import CONTEXT, edge_of
from omni_port.model import Anchor, Block, BlockKind, Rule
from omni_port.pyast.syntax import full_key
from omni_port.sync.context import Context, Decision
from omni_port.sync.evidence.history import MemberHistory
from omni_port.sync.evidence.places import WEAK_ACCEPT, Scored, Slot, clear_place, replaced_score
from omni_port.sync.rule import Silent


@dataclass(frozen=True, slots=True)
class Walked:
    """Where the walk put a block in the new upstream."""

    #: The place in the new upstream, scored against ``anchor``.
    scored: Scored
    #: The block's anchor in the release before the new upstream (what it was placed by).
    anchor: Anchor
    #: Releases on the way whose change moved the statements around the block.
    via: tuple[str, ...]


class Stepwise(Silent):
    name = Rule.STEPWISE

    def walk(self, ctx: Context) -> Decision | None:
        """The anchor's best place (``ctx.top[0]``) when the walk through upstream history
        reaches it too; None when the walk finds no clear place, another one, or nothing
        fits there."""
        past = ctx.evidence.history
        if past is None or not ctx.top:
            return None
        walked = walk(ctx.block, past)
        if walked is None:
            return None
        slot = walked.scored.slot
        # The walk only seconds the anchor's own best place: one step's choice becomes the
        # next step's anchor, so a walk alone can drift (fuzzing found it taking a tie's
        # runner-up after upstream moved a statement across the block in a later release).
        best = ctx.top[0]
        if best.slot.key() != slot.key() or best.score < WEAK_ACCEPT or best.contradicted:
            return None
        # Whether upstream changed what the block replaced is judged against the base.
        found = slot.held()
        replaced = ctx.block.anchor.replaced
        same = replaced_score(replaced, found) if replaced else 1.0
        chosen = Scored(slot, walked.scored.score, same, walked.scored.parts)
        ranked = (chosen, *(s for s in ctx.top if s.slot.key() != slot.key()))[:3]
        assert ctx.settle is not None, "the engine gives every context its settle"
        decision = ctx.settle(replace(ctx, top=ranked), chosen, walked.anchor)
        if decision.conflict:
            return None
        rules = tuple(self.name if r is Rule.ANCHOR else r for r in decision.rules)
        rules = rules if self.name in rules else (self.name, *rules)
        steps = ", ".join(walked.via) or "every release on the way"
        why = f"followed step by step through {steps}"
        reason = f"{why}; {decision.reason}" if decision.reason else why
        return replace(decision, rules=rules, reason=reason)


def walk(block: Block, history: MemberHistory) -> Walked | None:
    """The block's place in the new upstream, followed through every release between the
    base and it; None without a release between them, or when a step is not clear."""
    later = history.versions[history.base + 1 : history.target + 1]
    steps = [v for v in later if v.member is not None]
    if len(steps) < 2 or history.versions[history.target].member is None:
        return None
    current = block.anchor
    via: list[str] = []
    for version in steps:
        assert version.member is not None
        found = clear_place(version.member, replace(block, anchor=current))
        if found is None:
            return None
        if version is steps[-1]:
            return Walked(found, current, tuple(via))
        moved = anchor_at(found.slot, block.kind)
        if moved != replace(current, resolution=None):
            via.append(version.label)
        current = moved
    return None


def anchor_at(slot: Slot, kind: BlockKind) -> Anchor:
    """The anchor a block of ``kind`` at ``slot`` has: the statements around it there."""
    stmts = slot.suite.stmts
    before = tuple(s.key for s in stmts[: slot.index][::-1][:CONTEXT])
    after = tuple(s.key for s in stmts[slot.index + slot.span :][:CONTEXT])
    span = slot.held()
    if kind is BlockKind.HEADER:
        replaced = tuple(s.key for s in span)
    else:
        replaced = tuple(full_key(s) for s in span)
    return Anchor(slot.path, before, after, replaced, edge_of(bool(before), bool(after)))


RULE = Stepwise()
