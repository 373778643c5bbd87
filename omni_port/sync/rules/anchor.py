"""The anchor rule: what the anchor says about places beyond ranking them.

The engine ranks every place of the new method against the block's anchor (its own
step: ``evidence.places`` scores the enclosing path, the nearest surviving upstream
neighbours, the replaced statements and the edge position); the best one must score at
least ``ACCEPT`` and lead the runner-up clearly. This rule narrows the candidates of a
header edit to those holding the statement it edits, and doubts a place beside a
neighbour the old body repeated, which the new body has fewer copies of.
"""

from __future__ import annotations

from omni_port.model import BlockKind, Rule
from omni_port.sync.context import Check, Context, Decision, Dispute, Narrowed, conflict
from omni_port.sync.evidence.code import fewer_repeats
from omni_port.sync.evidence.places import clear, edited_in_place
from omni_port.sync.rule import Silent


class AnchorRule(Silent):
    name = Rule.ANCHOR
    reads = ()

    def narrow(self, ctx: Context) -> Narrowed | None:
        """A header edit goes on the compound statement whose header it edits: when some
        candidates hold that statement (edited or not), one holding another statement is
        out (its header would be rewritten into omni's).

        Only for header edits: a replacement's statements may have changed past
        recognition upstream, and then the place holding look-alikes is the wrong one."""
        if ctx.block.kind is not BlockKind.HEADER:
            return None
        replaced, top = ctx.block.anchor.replaced, ctx.top
        holding = tuple(s for s in top if edited_in_place(replaced, s.slot.held()))
        if not holding or len(holding) == len(top):
            return None
        decisive = holding[0] is not top[0] or (not clear(top) and clear(holding))
        return Narrowed(holding, decisive, "the one place that holds what it edits")

    def check(self, ctx: Context, check: Check) -> Decision | Dispute | None:
        chosen = check.proposal.chosen
        lost = fewer_repeats(ctx.around or ctx.block.anchor, chosen.slot)
        return conflict(ctx.block, chosen, ctx.top, lost) if lost else None


RULE = AnchorRule()
