"""The convergent rule: upstream made the change omni made, so nothing is left to carry.

diff3's first rule: the same change on both sides is no conflict. Where upstream changed
the statements a block replaced into the block's own code, added the block's statements
at its place, or changed a signature the way omni did, the output keeps upstream's code.
Where one side's change holds the other's (the statement merge takes nothing from
upstream, or nothing of omni's is left once it does), the side that holds both stands.
Where upstream took out what a deletion deletes (and runs none of it elsewhere), both
sides made that change. Where upstream added similar code of its own next to the place
(an echo), placing the block there could run it twice: a conflict.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace

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
    followed,
)
from omni_port.sync.evidence import merging
from omni_port.sync.evidence.code import (
    def_source,
    echo_reason,
    shorten,
    through_bridges,
    with_body,
)
from omni_port.sync.evidence.history import Rebase
from omni_port.sync.evidence.places import Scored, Slot
from omni_port.sync.facts import History, MemberFacts, Places, Stmt, Syntax
from omni_port.sync.rule import Silent

#: What the output says when upstream's code is the block's own.
SAME_CHANGE = "upstream made the same change"
ADDED_THERE = "upstream added the same code there"
TAKEN_OUT = "upstream took out what omni deletes"


class Convergent(Silent):
    name = Rule.CONVERGENT
    reads = (Syntax, Places, History)

    def decide(self, ctx: Context) -> Decision | None:
        """An unmarked edit whose text the new upstream holds at its place (upstream
        history's explanation names the new upstream itself), or a deletion of what
        upstream took out too: the same change."""
        found = ctx.history.explained(ctx.block)
        if found is None or found.release != ctx.history.target:
            return _taken_out_too(ctx)
        here = ctx.history.explained_place(ctx.block)
        return followed(ctx.block, here, (here,), found.reason)

    def reconcile(self, ctx: Context, best: Scored, rebase: Rebase | None) -> Answer | None:
        """Upstream changed the replaced statements into the block's own code."""
        block = ctx.block
        if block.kind is BlockKind.DELETION and rebase is None:
            return None
        theirs = ctx.syntax.source(best.slot.held(), header=block.kind is BlockKind.HEADER)
        mine = with_body(block.code) if block.kind is BlockKind.HEADER else block.code
        if ctx.syntax.same_code(mine, theirs):
            return followed(block, best, ctx.top, SAME_CHANGE)
        # Upstream may say it through a method of its own that only returns omni's code.
        known = ctx.syntax.bridges
        inlined = through_bridges(theirs, known) if known else None
        if inlined is not None and ctx.syntax.same_code(mine, inlined[0]):
            called = ", ".join(f"`self.{name}()`" for name in inlined[1])
            reason = f"{SAME_CHANGE}, through {called}, which only returns what omni's code calls"
            return followed(block, best, ctx.top, reason)
        base = ctx.history.replaced_text(ctx.block)
        if rebase is not None or base is None:
            return None
        merged = merging.merge_block(base, block.code, theirs, block.kind, block.marked)
        if isinstance(merged, merging.Merged) and not merged.taken:
            reason = merging.already_omnis(ctx.history.changed_by(block))
            return Proposal(best, reason, code=merged.text)
        return None

    def break_tie(self, ctx: Context, tie: Tie) -> Answer | None:
        """Upstream inserted the block's own statements between the two places, or code
        like the block's (an echo: a conflict)."""
        block = ctx.block
        first = tie.first.slot
        if block.kind is BlockKind.INSERTION and ctx.syntax.same_code(
            block.code, ctx.syntax.source(tie.between)
        ):
            here = Scored(Slot(first.suite, first.path, first.index, len(tie.between)), 1.0, 1.0)
            return followed(block, here, ctx.top, ADDED_THERE)
        return None if block.marked else _echoed(ctx, tie.between, ctx.top[0])

    def check(self, ctx: Context, check: Check) -> Decision | Dispute | None:
        """The block's statements are upstream's already at the place, or next to it (a
        marked block's twin next to it is the intent rule's to judge)."""
        block = ctx.block
        chosen = check.proposal.chosen
        if not block.code.strip():
            return None
        if block.kind is BlockKind.INSERTION:
            there = _already_there(block.code, chosen.slot, ctx.facts)
            if there is not None:
                return followed(block, Scored(there, chosen.score, 1.0), ctx.top, ADDED_THERE)
        if block.marked:
            return None
        return _echoed(ctx, (*check.before, *check.after), chosen)

    def sign(self, ctx: Context) -> Decision | None:
        """Upstream changed the signature as omni did, or one side's changes hold the
        other's (the parameters merge, taking nothing, or leaving nothing of omni's)."""
        block, theirs = ctx.block, ctx.syntax.signature
        if ctx.syntax.same_code(with_body(block.code), theirs):
            return Decision(block, None, 1.0, False, (), SAME_CHANGE, follow=True)
        base = def_source(block.anchor.replaced[0])
        if base is None:
            return None
        merged = merging.merge_signature(with_body(base), with_body(block.code), theirs)
        if not isinstance(merged, merging.Merged):
            return None
        if not merged.taken:
            # Upstream's edits were omni's already (or quoting only): nothing to take.
            reason = "upstream's changes are in omni's signature already"
            return Decision(block, None, 1.0, False, (), reason)
        if ctx.syntax.same_code(merged.text, theirs):
            # Every change of omni's is upstream's now: nothing of omni's is left to carry.
            reason = "upstream made omni's changes of the signature"
            return Decision(block, None, 1.0, False, (), reason, follow=True)
        return None


def _taken_out_too(ctx: Context) -> Decision | None:
    """A deletion of statements upstream has since taken out of the member too: none of
    them is left in it, not even edited, none of their simple statements is anywhere in
    the module (moved into a helper the member calls, they would still run), and what
    upstream has where they were calls nothing (a call there may run them another way).
    The same change on both sides: upstream's code stands, and the note names the change."""
    block = ctx.block
    if block.kind is not BlockKind.DELETION or not ctx.places.ranked(ctx.block):
        return None
    by, text = ctx.history.removed_by(ctx.block), ctx.history.replaced_text(ctx.block)
    if not by or text is None or ctx.syntax.held_in_module(text):
        return None
    best = ctx.places.ranked(ctx.block)[0]
    slot = best.slot
    if ctx.syntax.makes_calls(slot.held()):
        return None  # what upstream put there instead may run the same thing another way
    here = Scored(Slot(slot.suite, slot.path, slot.index, 0), best.score, 1.0)
    reason = (
        f"{TAKEN_OUT}: {ctx.history.named(by)} took out `{shorten(text, 60)}`, "
        "and none of it runs elsewhere in the module"
    )
    return replace(followed(block, here, (here,), reason), release=by)


def _echoed(ctx: Context, new: Sequence[Stmt], shown: Scored) -> Decision | None:
    """A conflict at ``shown`` when new upstream code nearly repeats one of the block's."""
    echoed = ctx.syntax.echo(ctx.block, new)
    if echoed is None:
        return None
    return conflict(ctx.block, shown, ctx.top, echo_reason(echoed))


def _already_there(code: str, slot: Slot, facts: MemberFacts) -> Slot | None:
    """The place of upstream statements equal to the inserted code, right at ``slot``."""
    size = len(facts.syntax.parsed(code) or [])
    if not size:
        return None
    stmts = slot.suite.stmts
    for start in (slot.index, slot.index - size):
        run = stmts[max(start, 0) : start + size]
        if (
            start >= 0
            and len(run) == size
            and facts.syntax.same_code(code, facts.syntax.source(run))
        ):
            return Slot(slot.suite, slot.path, start, size)
    return None


RULE = Convergent()
