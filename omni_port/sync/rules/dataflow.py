"""The dataflow rule: a block keeps the def-use relations it had.

New upstream code between a block's old neighbours that binds a name the block reads, or
reads a name the block binds, decides which side of it the block goes (``evidence.flow``);
relations that point both ways make it a conflict. It breaks ties, seconds a weak best
place of an insertion when the new code points at it, and checks every chosen place
against the new code right next to it. It judges new code only: where one of the block's
own old neighbours stands between two places, it has nothing to say.
"""

from __future__ import annotations

from omni_port.model import BlockKind, Rule
from omni_port.sync.context import (
    Answer,
    Check,
    Context,
    Decision,
    Dispute,
    Proposal,
    Tie,
    conflict,
)
from omni_port.sync.evidence.flow import Side
from omni_port.sync.evidence.places import WEAK_ACCEPT, Slot, old_neighbours
from omni_port.sync.facts import Flows
from omni_port.sync.rule import Silent


class Dataflow(Silent):
    name = Rule.DATAFLOW
    reads = (Flows,)

    def second(self, ctx: Context) -> Answer | None:
        """The weak best place of an insertion, when data flow through the new code between
        it and the runner-up in the same body points at it: two kinds of evidence agree.
        Data flow only seconds here; it never picks a place the anchor ranked lower."""
        block, top = ctx.block, ctx.top
        mine = ctx.flows.flow(ctx.block)
        if mine is None or block.kind is not BlockKind.INSERTION or len(top) < 2:
            return None
        best, rival = top[0], top[1]
        if best.score < WEAK_ACCEPT or best.contradicted or rival.slot.suite is not best.slot.suite:
            return None
        first, second = sorted((best, rival), key=lambda s: s.slot.index)
        between = first.slot.suite.stmts[first.slot.index : second.slot.index]
        found = ctx.flows.verdict(mine, between, first.slot) if between else None
        if found is None or found.side is None:
            return None
        if (second if found.side is Side.AFTER else first) is not best:
            return None
        reason = (
            f"best place scores {best.score:.2f}, and data flow puts it {found.side.value} "
            f"the new upstream code there: {found.why}"
        )
        return Proposal(best, reason)

    def break_tie(self, ctx: Context, tie: Tie) -> Answer | None:
        """The side of the new upstream code between the two places the block belongs on."""
        block = ctx.block
        old = old_neighbours(block.anchor)
        if any(stmt.key in old for stmt in tie.between):
            # What stands between the two places is the block's own old neighbour, not new
            # code: data flow (and layout after it) judge new code, so they have nothing
            # to say here.
            return tie.undecided(block, ctx.top)
        mine = ctx.flows.flow(ctx.block)
        found = ctx.flows.verdict(mine, tie.between, tie.first.slot) if mine is not None else None
        if found is None:
            return None
        if found.side is None:
            return tie.undecided(block, ctx.top, f"data flow points both ways: {found.why}")
        chosen = tie.second if found.side is Side.AFTER else tie.first
        reason = f"data flow puts it {found.side.value} the new upstream code: {found.why}"
        return Proposal(chosen, reason)

    def check(self, ctx: Context, check: Check) -> Decision | Dispute | None:
        """New upstream code right next to the place that data flow says belongs on the
        block's other side: a conflict."""
        contradiction = _interference(ctx, check)
        if not contradiction:
            return None
        return conflict(ctx.block, check.proposal.chosen, ctx.top, contradiction)


def _interference(ctx: Context, check: Check) -> str:
    """Why data flow contradicts the chosen place ("" when it does not)."""
    mine = ctx.flows.flow(ctx.block)
    if mine is None:
        return ""
    slot = check.proposal.chosen.slot
    if check.before:
        start = Slot(slot.suite, slot.path, slot.index - len(check.before))
        found = ctx.flows.verdict(mine, check.before, start)
        if found is not None and found.side is not Side.AFTER:
            return f"new upstream code right before its place: {found.why}"
    if check.after:
        start = Slot(slot.suite, slot.path, slot.index + slot.span)
        found = ctx.flows.verdict(mine, check.after, start)
        if found is not None and found.side is not Side.BEFORE:
            return f"new upstream code right after its place: {found.why}"
    return ""


RULE = Dataflow()
