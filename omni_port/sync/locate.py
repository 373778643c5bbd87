"""The placement engine: where each block of a copied member goes in the new upstream method.

The engine asks the questions of ``sync.rule`` in a fixed path, and each question of the
rules in ``rules.RULES`` order (the first answer has it); every decision records the
rules that made it. For one block:

1. ``decide``: a decision before any place is scored (a recorded resolution, an edit
   upstream history explains).
2. ``rank``: the anchor's candidate places, best first; ``narrow``: fewer of them.
3. A best place that scores too little is ``second``-ed by other evidence, or followed
   through history (``walk``), or it is a conflict.
4. ``rebase``: the release the edit was written against. Replaced statements that
   changed upstream are ``reconcile``-d at a clear best place (the first answer that
   places the block has it, else the first conflict: a merge before intent); two places
   that score alike go to ``break_tie``; otherwise the anchor's best place is taken.
5. Every place about to be taken is ``check``-ed by every rule: a conflict, another
   decision (upstream has the code already), or a note instead.

Then the decisions of a member are ``settle``-d together. Nothing here guesses: every
doubt about a place is a conflict, with its candidates ranked.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import replace
from typing import TypeVar

from omni_port.model import Anchor, Block, Rule
from omni_port.pyast.syntax import Stmt, Tree
from omni_port.sync.context import (
    Answer,
    Check,
    Context,
    Decision,
    Dispute,
    Evidence,
    Member,
    Narrowed,
    Proposal,
    Tie,
    conflict,
)
from omni_port.sync.evidence.code import new_code_around
from omni_port.sync.evidence.history import Rebase
from omni_port.sync.evidence.places import (
    ACCEPT,
    WEAK_ACCEPT,
    Index,
    Scored,
    Slot,
    clear,
    index_of,
    resolution_at,
)
from omni_port.sync.rules import RULES

__all__ = [
    "ACCEPT",
    "Decision",
    "Evidence",
    "Scored",
    "Slot",
    "decide",
    "resolution_at",
    "signature",
]

_T = TypeVar("_T")


def decide(
    member: Stmt, blocks: Sequence[Block], evidence: Evidence | None = None
) -> list[Decision]:
    """A decision for every block of one copied member, in block order."""
    evidence = evidence or Evidence()
    index = index_of(member)
    decisions = [_decide(_context(member, index, block, evidence)) for block in blocks]

    def redecide(block: Block, other: Evidence) -> Decision:
        return _decide(_context(member, index, block, other))

    together = Member(member, index, evidence, redecide)
    for rule in RULES:
        settled = rule.settle(together, decisions)
        if settled is not None:
            decisions = settled
    return decisions


def signature(member: Stmt, block: Block, tree: Tree) -> Decision:
    """A signature edit: carried when upstream kept the old signature, merged when both
    changed different parameters, a conflict otherwise."""
    # A recorded resolution is asked first: it may hold the signature to write even where
    # upstream kept the old one.
    resolution = block.anchor.resolution
    if (resolution is None or resolution.code is None) and member.key == block.anchor.replaced[0]:
        return Decision(block, None, 1.0, False, (), "", (Rule.ANCHOR,))
    ctx = _context(member, index_of(member), block, Evidence(tree))
    found: Decision | None = _first(rule.sign(ctx) for rule in RULES)
    if found is not None:
        return found
    return Decision(block, None, 0.0, True, (), "the signature changed upstream")


def _context(member: Stmt, index: Index, block: Block, evidence: Evidence) -> Context:
    return Context(member, index, block, evidence, accept=_accept, settle=_settle_found)


def _first(answers: Iterable[_T]) -> _T | None:
    """The first answer that is not None (the rules asked in order, lazily)."""
    return next((answer for answer in answers if answer is not None), None)


def _decide(ctx: Context) -> Decision:
    early: Decision | None = _first(rule.decide(ctx) for rule in RULES)
    if early is not None:
        return early
    ranked: tuple[Scored, ...] | Decision | None = _first(rule.rank(ctx) for rule in RULES)
    assert ranked is not None, "the anchor rule ranks every block"
    if isinstance(ranked, Decision):
        return ranked
    return _placed(replace(ctx, top=ranked))


def _placed(ctx: Context) -> Decision:
    """The decision from the anchor's candidates and the evidence beyond it."""
    narrowed: Narrowed | None = _first(rule.narrow(ctx) for rule in RULES)
    if narrowed is not None:
        ctx = replace(ctx, top=narrowed.top)
    decisive = narrowed if narrowed is not None and narrowed.decisive else None
    best = ctx.top[0]
    # Among places the anchor found plausible, a rule that narrowed them may pick one.
    if best.score < (WEAK_ACCEPT if decisive else ACCEPT):
        return _weak(ctx)
    return _on_base(ctx, best, clear(ctx.top), decisive)


def _weak(ctx: Context) -> Decision:
    """The best place scores too little: another kind of evidence seconds one, or the
    block is followed through history, or it is a conflict."""
    answer: Answer | None = _first(rule.second(ctx) for rule in RULES)
    if answer is not None:
        return _taken(ctx, answer)
    best = ctx.top[0]
    reason = f"best place scores {best.score:.2f}"
    if ctx.block.anchor.replaced and best.replaced < 1.0:
        reason = f"the statements it replaced changed upstream; {reason}"
    return _unsure(ctx, reason)


def _unsure(ctx: Context, reason: str) -> Decision:
    """The anchor's best place if a rule finds it another way; else a conflict."""
    walked: Decision | None = _first(rule.walk(ctx) for rule in RULES)
    return walked if walked is not None else conflict(ctx.block, ctx.top[0], ctx.top, reason)


def _on_base(ctx: Context, best: Scored, clear: bool, narrowed: Narrowed | None) -> Decision:
    """The decision at ``best`` once it is known which release the edit was written
    against."""
    rebase: Rebase | None = _first(rule.rebase(ctx, best) for rule in RULES)
    return _on_release(ctx, best, clear, narrowed, rebase)


def _on_release(
    ctx: Context, best: Scored, clear: bool, narrowed: Narrowed | None, rebase: Rebase | None
) -> Decision:
    """The decision once the release the edit was written against is known (``rebase``;
    None: the base)."""
    block = ctx.block
    if block.anchor.replaced and (best.replaced < 1.0 or rebase is not None):
        if not clear:
            reason = "the statements it replaced changed upstream, and two places score alike"
            return _unsure(ctx, reason)
        return _reconciled(ctx, best, rebase)
    if not clear:
        return _tie(ctx)
    if narrowed is not None:
        rules = tuple(dict.fromkeys((Rule.ANCHOR, narrowed.by)))
        return _accept(ctx, Proposal(best, rules, narrowed.reason))
    return _accept(ctx, Proposal(best, (Rule.ANCHOR,)))


def _reconciled(ctx: Context, best: Scored, rebase: Rebase | None) -> Decision:
    """The block's replaced statements changed upstream: what goes at ``best``.

    The first rule that places the block has it; a rule that finds only a conflict leaves
    the later ones room to decide with their own evidence (omni's intent over an edit the
    statement merge cannot take), and its conflict stands when none does."""
    found = conflict(ctx.block, best, ctx.top, "the statements it replaced changed upstream")
    if ctx.evidence.tree is None:
        return found
    first: Decision | None = None
    for rule in RULES:
        answer = rule.reconcile(ctx, best, rebase)
        if answer is None:
            continue
        decision = _taken(ctx, answer)
        if not decision.conflict:
            return decision
        first = first or decision
    return first or found


def _tie(ctx: Context) -> Decision:
    """Two places score alike: a rule decides between them, or it is a conflict."""
    top = ctx.top
    ambiguous = (
        f"ambiguous: places at upstream lines {top[0].slot.line()} and {top[1].slot.line()} "
        f"score {top[0].score:.2f} and {top[1].score:.2f}"
    )
    first, second = sorted(top[:2], key=lambda s: s.slot.index)
    same_body = first.slot.suite is second.slot.suite
    if ctx.evidence.tree is None or not same_body or first.slot.span or second.slot.span:
        return conflict(ctx.block, top[0], top, ambiguous)
    between = first.slot.suite.stmts[first.slot.index : second.slot.index]
    tie = Tie(first, second, tuple(between), ambiguous)
    answer: Answer | None = _first(rule.break_tie(ctx, tie) for rule in RULES)
    return _taken(ctx, answer) if answer is not None else _unsure(ctx, ambiguous)


def _taken(ctx: Context, answer: Answer) -> Decision:
    return answer if isinstance(answer, Decision) else _accept(ctx, answer)


def _accept(ctx: Context, proposal: Proposal) -> Decision:
    """The decision for a proposed place, unless a rule's check says otherwise."""
    chosen = proposal.chosen
    before, after = new_code_around(ctx.around or ctx.block.anchor, chosen.slot)
    check = Check(proposal, tuple(before), tuple(after))
    dispute: Dispute | None = None
    decision: Decision | None = None
    for rule in RULES:
        found = rule.check(ctx, check)
        if isinstance(found, Decision):
            decision = found
            break
        if isinstance(found, Dispute):
            dispute = found
    if decision is None:
        rules, reason = proposal.rules, proposal.reason
        decision = Decision(
            ctx.block, chosen.slot, chosen.score, False, ctx.top, reason, rules, dispute=dispute
        )
    if not decision.conflict and proposal.review is not None:
        decision = replace(decision, review=proposal.review)
    if decision.conflict or proposal.code is None:
        return decision
    return replace(decision, code=proposal.code, release=proposal.release, lag=proposal.lag)


def _settle_found(ctx: Context, chosen: Scored, around: Anchor) -> Decision:
    """The decision at a place found by re-anchoring the block (``around``), taken the way
    the anchor's own clear best place is."""
    return _on_base(replace(ctx, around=around), chosen, True, None)
