"""The anchor rule: the place that scores clearly best against the block's anchor.

Every place of the new method is scored on the block's anchor (``evidence.places``): the
enclosing path, the nearest surviving upstream neighbours, the replaced statements and
the edge position. The anchor ranks the candidates every other rule works on; the best
one must score at least ``ACCEPT`` and lead the runner-up clearly. Its own doubt about a
place: a neighbour the old body repeated, which the new body has fewer copies of.
"""

from __future__ import annotations

from collections import Counter

from omni_port.model import Anchor, BlockKind, Rule
from omni_port.pyast.diff import similarity
from omni_port.pyast.syntax import split_full_key
from omni_port.sync.context import Check, Context, Decision, Dispute, Narrowed, conflict
from omni_port.sync.evidence.code import short
from omni_port.sync.evidence.places import (
    FUZZY,
    PATH_CERTAIN,
    Scored,
    Slot,
    clear,
    distinct,
    edited_in_place,
    ranked,
)
from omni_port.sync.rule import Silent


class AnchorRule(Silent):
    name = Rule.ANCHOR

    def rank(self, ctx: Context) -> tuple[Scored, ...] | Decision | None:
        """The best three distinct places; a conflict when there is none, or when the
        replaced statements now stand in several bodies, none the block's old one."""
        block = ctx.block
        scored = ranked(ctx.index, block)
        top = tuple(distinct(scored))[:3]
        if not top:
            return conflict(block, None, (), "no place in the new method resembles the anchor")
        exact = [s for s in distinct(scored) if block.anchor.replaced and s.replaced == 1.0]
        if len(exact) > 1 and all(s.parts[1] < PATH_CERTAIN for s in exact):
            # Upstream now has the replaced code in several bodies and none is the old one:
            # the block may belong at each, which is the maintainer's call.
            lines = ", ".join(str(s.slot.line()) for s in exact)
            reason = (
                f"the statements it replaced occur at upstream lines {lines}, none in its old body"
            )
            return conflict(block, exact[0], tuple(exact[:3]), reason)
        return top

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
        return Narrowed(holding, decisive, self.name, "the one place that holds what it edits")

    def check(self, ctx: Context, check: Check) -> Decision | Dispute | None:
        chosen = check.proposal.chosen
        lost = _fewer_repeats(ctx.around or ctx.block.anchor, chosen.slot)
        return conflict(ctx.block, chosen, ctx.top, lost) if lost else None


def _fewer_repeats(anchor: Anchor, slot: Slot) -> str:
    """Why a place beside a statement the block's old body repeated is no evidence ("" when
    it is): upstream's body has fewer copies of it now, so which copy went, the one before
    the block or one after it, cannot be told from the text."""
    stmts = slot.suite.stmts
    beside = [*stmts[max(slot.index - 1, 0) : slot.index], *stmts[slot.index + slot.span :][:1]]
    seen = Counter(split_full_key(key)[0] for key in (*anchor.before, *anchor.after))
    for key, count in seen.items():
        if count < 2 or not any(similarity(s.key, key) >= FUZZY for s in beside):
            continue
        now = sum(similarity(s.key, key) >= FUZZY for s in stmts)
        if now < count:
            return (
                f"`{short(key, 60)}` stood {count} times around it and its body has {now} now: "
                "which of them upstream removed cannot be told"
            )
    return ""


RULE = AnchorRule()
