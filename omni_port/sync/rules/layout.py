"""The layout rule: the blank lines around a block say which paragraph it belonged to.

Code is written in paragraphs separated by blank lines. A block that stood after a blank
line began a paragraph (or stood between two); one that hugged a statement belonged to
that statement's paragraph. When upstream inserted code between the block's old
neighbours and that code joined one neighbour's paragraph without a blank line, the
block keeps its side of the paragraph break. This is the evidence a line-based merge
uses: the blank line both sides kept is common context between the two insertions.
"""

from __future__ import annotations

from collections.abc import Sequence

from omni_port.model import Rule
from omni_port.sync.context import Answer, Context, Proposal, Tie
from omni_port.sync.evidence.flow import Side
from omni_port.sync.facts import Stmt, Tree
from omni_port.sync.rule import Silent


class Layout(Silent):
    name = Rule.LAYOUT
    reads = ()

    def break_tie(self, ctx: Context, tie: Tie) -> Answer | None:
        """The side of the new code the block's paragraph break keeps it on."""
        tree = ctx.tree
        first, second = tie.first.slot, tie.second.slot
        stmts = first.suite.stmts
        before = stmts[first.index - 1] if first.index else None
        after = stmts[second.index] if second.index < len(stmts) else None
        side = _side(ctx.block.code, before, tie.between, after, tree)
        if side is None:
            return None
        chosen = tie.second if side is Side.AFTER else tie.first
        reason = f"the blank lines keep it {side.value} the new upstream code"
        return Proposal(chosen, reason)


def _blank_between(tree: Tree, first: int, last: int) -> bool:
    """Whether a blank line lies in lines ``first..last``."""
    return any(not tree.lines[n - 1].strip() for n in range(max(first, 1), last + 1))


def _side(
    code: str, before: Stmt | None, new: Sequence[Stmt], after: Stmt | None, tree: Tree
) -> Side | None:
    """Where a block goes relative to ``new`` upstream statements between its old
    neighbours ``before`` and ``after`` (None at a body's edge), from the blank lines.

    None when the layout says nothing: the block hugged both neighbours, or the new code
    stands alone between blank lines, or it hugs both sides.
    """
    if not new:
        return None
    lines = code.split("\n")
    blank_before = bool(lines) and not lines[0].strip()
    blank_after = code.endswith("\n\n")
    joins_before = before is None or not _blank_between(tree, before.full_end + 1, new[0].start - 1)
    joins_after = after is None or not _blank_between(tree, new[-1].full_end + 1, after.start - 1)
    if joins_before == joins_after:
        return None
    if blank_before and not blank_after:
        return Side.AFTER if not joins_after else None
    if blank_after and not blank_before:
        return Side.BEFORE if not joins_before else None
    if blank_before and blank_after:
        return Side.AFTER if joins_before else Side.BEFORE
    return None


RULE = Layout()
