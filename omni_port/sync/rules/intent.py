"""The intent rule: omni owns what it changed, where both sides changed the same statements.

A marked block declares that omni owns the statements it replaces, and a deletion no
upstream release explains (every release before the base that has the place holds
statements there) is omni's too. Where upstream edited those statements and the
statement merge cannot take the edit, omni's code wins: the runner is deployable, and
the decision carries upstream's change for a maintainer to review (OP309). An unmarked
replacement both sides changed stays a conflict: nothing declares it omni's.
"""

from __future__ import annotations

from collections.abc import Sequence

from omni_port.model import Block, BlockKind, Rule
from omni_port.pyast.syntax import Stmt
from omni_port.sync.context import (
    Answer,
    Check,
    Context,
    Decision,
    Dispute,
    Member,
    Proposal,
    Review,
    Tie,
    conflict,
)
from omni_port.sync.evidence import history
from omni_port.sync.evidence.code import (
    bound_by,
    echo,
    echo_reason,
    read_after,
    short,
    source,
)
from omni_port.sync.evidence.flow import flow_of_code
from omni_port.sync.evidence.history import Rebase
from omni_port.sync.evidence.places import Scored, Slot, clear, edited_in_place
from omni_port.sync.rule import Silent


class Intent(Silent):
    name = Rule.INTENT

    def reconcile(self, ctx: Context, best: Scored, rebase: Rebase | None) -> Answer | None:
        """Omni's code at ``best`` over upstream's edit of what it replaces or deletes."""
        block = ctx.block
        kinds = (BlockKind.REPLACEMENT, BlockKind.INSERTION)
        if not block.marked or block.kind not in kinds or rebase is not None:
            return None
        return _owned(ctx, best)

    def settle(self, ctx: Member, decisions: Sequence[Decision]) -> list[Decision] | None:
        """A deletion omni owns (marked, or one no release explains) whose statements
        upstream edited: the deletion wins at its clear place. Settled after the moved
        statements' merge, which may show the edits went to code omni moved (no conflict)."""
        result = list(decisions)
        for position, decision in enumerate(decisions):
            owned = _owned_deletion(ctx, decision)
            if owned is not None:
                result[position] = owned
        return result

    def break_tie(self, ctx: Context, tie: Tie) -> Answer | None:
        """Two places, with upstream code between that nearly repeats a marked block's own:
        the place right beside that twin, where omni's version stands for both (as in
        ``check``); a conflict when neither place is beside it."""
        block, tree = ctx.block, ctx.evidence.tree
        if not block.marked or tree is None or not block.code.strip():
            return None
        echoed = echo(block.code, tie.between, lambda s: source(tree, [s]))
        if echoed is None:
            return None
        for place in (tie.second, tie.first):
            twin = _beside(place.slot, echoed)
            if twin is not None:
                return _standing_for(ctx, Scored(twin, place.score, 1.0), echoed, (self.name,))
        return conflict(block, ctx.top[0], ctx.top, echo_reason(echoed))

    def check(self, ctx: Context, check: Check) -> Decision | Dispute | None:
        """Upstream added code next to a marked block's place that nearly repeats the
        block's own (both sides added the same element, in their own words): right beside
        the place, omni's version stands for both, upstream's is left for review; with
        other new code between, which of them runs where is the maintainer's call."""
        block, tree = ctx.block, ctx.evidence.tree
        if not block.marked or tree is None or not block.code.strip():
            return None
        chosen = check.proposal.chosen
        echoed = echo(block.code, (*check.before, *check.after), lambda s: source(tree, [s]))
        if echoed is None:
            return None
        twin = _beside(chosen.slot, echoed)
        if twin is None:
            return conflict(block, chosen, ctx.top, echo_reason(echoed))
        rules = (*check.proposal.rules, self.name)
        return _standing_for(ctx, Scored(twin, chosen.score, 1.0), echoed, rules)


def _owned(ctx: Context, best: Scored) -> Proposal | None:
    """Omni's code (or deletion) at ``best``, where the statements it replaces stand,
    edited by upstream; None when ``best`` does not hold them."""
    block, tree, past = ctx.block, ctx.evidence.tree, ctx.evidence.history
    if tree is None:
        return None
    slot = best.slot
    found = slot.held()
    if not edited_in_place(block.anchor.replaced, found):
        return None  # not the statements it replaced, edited: nothing to own there
    base = history.base_text(block, past) if past is not None else None
    before = base if base is not None else "\n".join(block.anchor.replaced) + "\n"
    if _binds_anew(bound_by(slot, tree) & read_after(ctx.member, slot), before, block.code):
        return None  # upstream code further on reads what only upstream's edit binds
    what = "deletes" if block.kind is BlockKind.DELETION else "replaces"
    reason = f"omni owns the statements it {what}: upstream's edit of them is left for review"
    review = Review(before, source(tree, found))
    return Proposal(best, (Rule.ANCHOR, Rule.INTENT), reason, review=review)


def _owned_deletion(ctx: Member, decision: Decision) -> Decision | None:
    """``decision``'s deletion taken at its clear place, when omni owns it and upstream
    only edited the statements it deletes; None to keep the decision."""
    block, past, top = decision.block, ctx.evidence.history, decision.candidates
    if not decision.conflict or block.kind is not BlockKind.DELETION:
        return None
    if not block.marked and (past is None or not history.never_without(block, past)):
        return None
    shown = decision.slot
    if not top or not clear(top) or (shown is not None and shown.key() != top[0].slot.key()):
        return None
    one = Context(ctx.member, ctx.index, block, ctx.evidence, top=top)
    owned = _owned(one, top[0])
    return None if owned is None else _taken(block, owned, top)


def _taken(block: Block, proposal: Proposal, top: tuple[Scored, ...]) -> Decision:
    """A deletion taken where it was found (the checks of a place judge inserted code)."""
    chosen = proposal.chosen
    return Decision(
        block,
        chosen.slot,
        chosen.score,
        False,
        top,
        proposal.reason,
        proposal.rules,
        review=proposal.review,
    )


def _binds_anew(edited: frozenset[str], before: str, code: str) -> bool:
    """Whether upstream's edit binds a name (``edited``: those code further on reads)
    neither the base's statements nor omni's code bind (a renamed variable): omni's code
    standing for the edit would leave it unbound."""
    kept: set[str] = set()
    for text in (before, code):
        found = flow_of_code(text) if text.strip() else None
        kept |= found.writes if found is not None else set()
    return bool(edited - kept)


def _standing_for(ctx: Context, place: Scored, echoed: Stmt, rules: tuple[Rule, ...]) -> Decision:
    """The block at ``place``, which covers upstream's twin of its code: omni's version
    stands for both, and upstream's is left for review."""
    tree = ctx.evidence.tree
    assert tree is not None
    reason = f"omni's block stands for upstream's similar `{short(echoed.key)}` beside it"
    review = Review("", source(tree, [echoed]))
    slot = place.slot
    return Decision(ctx.block, slot, place.score, False, ctx.top, reason, rules, review=review)


def _beside(slot: Slot, stmt: Stmt) -> Slot | None:
    """``slot`` widened over ``stmt`` when it stands right before or right after it."""
    stmts = slot.suite.stmts
    if slot.index > 0 and stmts[slot.index - 1] is stmt:
        return Slot(slot.suite, slot.path, slot.index - 1, slot.span + 1)
    end = slot.index + slot.span
    if end < len(stmts) and stmts[end] is stmt:
        return Slot(slot.suite, slot.path, slot.index, slot.span + 1)
    return None


RULE = Intent()
