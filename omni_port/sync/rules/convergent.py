"""The convergent rule: upstream made the change omni made, so nothing is left to carry.

diff3's first rule: the same change on both sides is no conflict. Where upstream changed
the statements a block replaced into the block's own code, added the block's statements
at its place, or changed a signature the way omni did, the output keeps upstream's code.
Where upstream added similar code of its own next to the place (an echo), placing the
block there could run it twice: a conflict.
"""

from __future__ import annotations

from collections.abc import Sequence

from omni_port.model import BlockKind, Rule
from omni_port.pyast.syntax import Stmt, Tree, dedent_code, header_end
from omni_port.sync.context import (
    Answer,
    Check,
    Context,
    Decision,
    Dispute,
    Tie,
    conflict,
    followed,
)
from omni_port.sync.evidence.code import (
    bridges,
    echo,
    echo_reason,
    same_code,
    source,
    statements,
    through_bridges,
    with_body,
)
from omni_port.sync.evidence.history import Rebase
from omni_port.sync.evidence.places import Scored, Slot
from omni_port.sync.rule import Silent

#: What the output says when upstream's code is the block's own.
SAME_CHANGE = "upstream made the same change"
ADDED_THERE = "upstream added the same code there"


class Convergent(Silent):
    name = Rule.CONVERGENT

    def reconcile(self, ctx: Context, best: Scored, rebase: Rebase | None) -> Answer | None:
        """Upstream changed the replaced statements into the block's own code."""
        block, tree = ctx.block, ctx.evidence.tree
        if tree is None or (block.kind is BlockKind.DELETION and rebase is None):
            return None
        slot = best.slot
        found = slot.held()
        theirs = source(tree, found, header=block.kind is BlockKind.HEADER)
        mine = with_body(block.code) if block.kind is BlockKind.HEADER else block.code
        if same_code(mine, theirs):
            return followed(block, best, ctx.top, (Rule.ANCHOR, self.name), SAME_CHANGE)
        # Upstream may say it through a method of its own that only returns omni's code.
        known = bridges(tree, ctx.member)
        inlined = through_bridges(theirs, known) if known else None
        if inlined is None or not same_code(mine, inlined[0]):
            return None
        called = ", ".join(f"`self.{name}()`" for name in inlined[1])
        reason = f"{SAME_CHANGE}, through {called}, which only returns what omni's code calls"
        return followed(block, best, ctx.top, (Rule.ANCHOR, self.name), reason)

    def break_tie(self, ctx: Context, tie: Tie) -> Answer | None:
        """Upstream inserted the block's own statements between the two places, or code
        like the block's (an echo: a conflict)."""
        block, tree = ctx.block, ctx.evidence.tree
        assert tree is not None
        first = tie.first.slot
        if block.kind is BlockKind.INSERTION and same_code(block.code, source(tree, tie.between)):
            here = Scored(Slot(first.suite, first.path, first.index, len(tie.between)), 1.0, 1.0)
            return followed(block, here, ctx.top, (self.name,), ADDED_THERE)
        return None if block.marked else _echoed(ctx, tie.between, ctx.top[0], tree)

    def check(self, ctx: Context, check: Check) -> Decision | Dispute | None:
        """The block's statements are upstream's already at the place, or next to it (a
        marked block's twin next to it is the intent rule's to judge)."""
        block, tree = ctx.block, ctx.evidence.tree
        proposal = check.proposal
        chosen = proposal.chosen
        if tree is None or not block.code.strip():
            return None
        if block.kind is BlockKind.INSERTION:
            there = _already_there(block.code, chosen.slot, tree)
            if there is not None:
                here = Scored(there, chosen.score, 1.0)
                rules = (*proposal.rules, self.name)
                return followed(block, here, ctx.top, rules, ADDED_THERE)
        if block.marked:
            return None
        return _echoed(ctx, (*check.before, *check.after), chosen, tree)

    def sign(self, ctx: Context) -> Decision | None:
        """Upstream changed the signature as omni did."""
        tree = ctx.evidence.tree
        assert tree is not None
        member, block = ctx.member, ctx.block
        theirs = with_body(dedent_code(tree.text(member.start, header_end(member))))
        if not same_code(with_body(block.code), theirs):
            return None
        return Decision(block, None, 1.0, False, (), SAME_CHANGE, (self.name,), follow=True)


def _echoed(ctx: Context, new: Sequence[Stmt], shown: Scored, tree: Tree) -> Decision | None:
    """A conflict at ``shown`` when new upstream code nearly repeats one of the block's."""
    echoed = echo(ctx.block.code, new, lambda s: source(tree, [s]))
    if echoed is None:
        return None
    return conflict(ctx.block, shown, ctx.top, echo_reason(echoed))


def _already_there(code: str, slot: Slot, tree: Tree) -> Slot | None:
    """The place of upstream statements equal to the inserted code, right at ``slot``."""
    size = len(statements(code) or [])
    if not size:
        return None
    stmts = slot.suite.stmts
    for start in (slot.index, slot.index - size):
        run = stmts[max(start, 0) : start + size]
        if start >= 0 and len(run) == size and same_code(code, source(tree, run)):
            return Slot(slot.suite, slot.path, start, size)
    return None


RULE = Convergent()
