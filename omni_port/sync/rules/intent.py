"""The intent rule: omni owns what it changed, where both sides changed the same statements.

A marked block declares that omni owns the statements it replaces, and a deletion no
upstream release explains (every release before the base that has the place holds
statements there, and, where upstream still has them, none brought them with the
runner's text there) is omni's too. Where upstream edited those statements and the
statement merge cannot take the edit, omni's code wins: the runner is deployable, and
the decision carries upstream's change for a maintainer to review (OP309). An unmarked
replacement both sides changed stays a conflict unless a marked block of another runner
replaces the very same upstream statements: omni declared them its own there.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace
from functools import partial

from omni_port.model import BlockKind, Rule
from omni_port.sync.context import (
    Answer,
    Check,
    Context,
    Decision,
    Dispute,
    Lag,
    Proposal,
    Review,
    Settled,
    Tie,
    conflict,
    followed,
    placed,
)
from omni_port.sync.evidence.code import binds_locals, echo_reason, short, statements_after
from omni_port.sync.evidence.history import Rebase
from omni_port.sync.evidence.places import (
    Scored,
    Slot,
    beside,
    clear,
    edited_in_place,
    new_among,
)
from omni_port.sync.facts import Flows, History, MemberFacts, Records, Stmt, Syntax
from omni_port.sync.rule import Silent


class Intent(Silent):
    name = Rule.INTENT
    reads = (Syntax, Flows, History, Records)

    def reconcile(self, ctx: Context, best: Scored, rebase: Rebase | None) -> Answer | None:
        """Omni's code at ``best`` over upstream's edit of what it replaces or deletes."""
        block = ctx.block
        kinds = (BlockKind.REPLACEMENT, BlockKind.INSERTION)
        declared = (
            block.marked or ctx.records.declared_by(ctx.block) or ctx.records.built_on(ctx.block)
        )
        if not declared or block.kind not in kinds or rebase is not None:
            return None
        return _owned(ctx, best)

    def settle(self, facts: MemberFacts, decisions: Sequence[Decision]) -> list[Settled] | None:
        """A deletion omni owns (marked, or one no release explains) whose statements
        upstream edited: the deletion wins at its clear place. Settled after the moved
        statements' merge, which may show the edits went to code omni moved (no conflict)."""
        result: list[Settled] = list(decisions)
        for position, decision in enumerate(decisions):
            others = [d for d in decisions if d is not decision]
            owned = _owned_deletion(facts, decision, others)
            if owned is not None:
                result[position] = owned
        return result

    def break_tie(self, ctx: Context, tie: Tie) -> Answer | None:
        """Two places, with upstream code between that nearly repeats a marked block's own:
        the place right beside that twin, where omni's version stands for both (as in
        ``check``); a conflict when neither place is beside it."""
        block = ctx.block
        if not block.marked or not block.code.strip():
            return None
        echoed = ctx.syntax.echo(block, tie.between)
        if echoed is None:
            return None
        for place in (tie.second, tie.first):
            twin = _beside(place.slot, echoed)
            if twin is not None:
                return _standing_for(ctx, Scored(twin, place.score, 1.0), echoed)
        return conflict(block, ctx.top[0], ctx.top, echo_reason(echoed))

    def check(self, ctx: Context, check: Check) -> Decision | Dispute | None:
        """Upstream added code next to a marked block's place that nearly repeats the
        block's own (both sides added the same element, in their own words): right beside
        the place, omni's version stands for both, upstream's is left for review; with
        other new code between, which of them runs where is the maintainer's call."""
        block = ctx.block
        if not block.marked or not block.code.strip():
            return None
        chosen = check.proposal.chosen
        echoed = ctx.syntax.echo(block, (*check.before, *check.after))
        if echoed is None:
            return None
        twin = _beside(chosen.slot, echoed)
        if twin is None:
            return conflict(block, chosen, ctx.top, echo_reason(echoed))
        return _standing_for(ctx, Scored(twin, chosen.score, 1.0), echoed)


def _owned(
    ctx: Context, best: Scored, taken: Sequence[tuple[int, int]] = ()
) -> Proposal | Decision | None:
    """Omni's code (or deletion) at ``best``, where the statements it replaces stand,
    edited by upstream; None when ``best`` does not hold them.

    Only what omni changed against the runners' lineage there is omni's: statements it
    replaces that the runners never had (they came with or after the upstream change that
    brought the runner's own code there) stay as upstream has them, beside omni's code;
    among it, omni's code cannot stand for them (None). Code at the line ranges ``taken``
    (what the member's other placed blocks replace) reads nothing in the output."""
    block, facts = ctx.block, ctx.facts
    slot = best.slot
    if not edited_in_place(block.anchor.replaced, slot.held()):
        new = new_among(block.anchor.replaced, slot.held())
        if not new or not _dead(facts, slot, new):
            return None  # not the statements it replaced, edited: nothing to own there
    kept = (
        ctx.history.never_had(ctx.block)
        if not (block.marked and block.kind is BlockKind.DELETION)
        else None
    )
    around = None
    if kept is not None:
        trimmed = kept.outside(slot)
        if trimmed is None:
            return None  # upstream code the runners never had stands among what it replaces
        around = beside(block.anchor, slot, trimmed)
        slot = trimmed
    before = ctx.history.base_text_without(
        ctx.block, kept.keys if kept is not None else frozenset()
    )
    if _binds_anew(
        facts,
        facts.flows.bound_by(slot) & facts.flows.read_after(slot, taken),
        (before, block.code),
    ):
        return None  # upstream code further on reads what only upstream's edit binds
    what = "deletes" if block.kind is BlockKind.DELETION else "replaces"
    reason = f"omni owns the statements it {what}: upstream's edit of them is left for review"
    if ctx.records.declared_by(ctx.block):
        reason = f"{reason} (omni's marked {ctx.records.declared_by(ctx.block)} replaces them too)"
    elif ctx.records.built_on(ctx.block) and not block.marked:
        name, marked = ctx.records.built_on(ctx.block)[0]
        reason = f"{reason} (it reads `{name}`, which only omni's marked {marked} binds)"
    chosen = Scored(slot, best.score, best.replaced, best.parts, best.contradicted)
    if kept is None:
        return Proposal(chosen, reason, review=Review(before, facts.syntax.source(slot.held())))
    lag = Lag(kept.brought_by)
    runners = (
        f"; the runners have `{short(kept.runners, 60)}` of {facts.history.named(kept.since)}"
        if kept.runners
        else ""
    )
    brought = partial(ctx.history.brought_here, block)
    note = kept.note(block.anchor.replaced, best.slot.held(), facts.history.named, runners, brought)
    if not slot.span and block.kind is BlockKind.DELETION:
        # Nothing omni deletes is left upstream: upstream took it out too.
        found = followed(block, chosen, ctx.top, f"upstream took out what omni deletes; {note}")
        return replace(found, release=kept.had, lag=lag)
    review = Review(before, facts.syntax.source(slot.held())) if slot.span else None
    reason = f"{reason}; {note}"
    return Proposal(chosen, reason, release=kept.had, lag=lag, review=review, around=around)


def _dead(facts: MemberFacts, slot: Slot, new: Sequence[Stmt]) -> bool:
    """Whether the statements upstream put among those omni replaces only bind local
    names that no code after ``slot`` reads: part of upstream's edit of what omni replaces,
    for nothing else once omni's code stands there."""
    later = facts.flows.read_after(slot)
    return all(binds_locals(stmt) and not stmt.writes & later for stmt in new)


def _owned_deletion(
    facts: MemberFacts, decision: Decision, others: Sequence[Decision]
) -> Decision | None:
    """``decision``'s deletion taken at its clear place, when omni owns it and upstream
    only edited the statements it deletes; None to keep the decision.

    Taken where it was found: the checks of a place judge inserted code. Upstream code
    that the member's ``others`` replace in the output reads nothing there: a deletion
    that holds only with them relies on them (a conflict if one of them ends one)."""
    block, top = decision.block, decision.candidates
    if not decision.conflict or block.kind is not BlockKind.DELETION:
        return None
    one = Context(facts, block, top=top)
    if not block.marked and not facts.history.never_without(block):
        return None
    shown = decision.slot
    if not top or not clear(top) or (shown is not None and shown.key() != top[0].slot.key()):
        return None
    unordered = facts.history.unordered(block)
    if unordered is not None and unordered.among(top[0].slot.held()):
        return None  # releases alone cannot tell it omni's (upstream-history's check)
    owned = _owned(one, top[0])
    relies: tuple[str, ...] = ()
    if owned is None:
        replacing = {d.block.id: _replaced_lines(d) for d in others}
        owned = _owned(one, top[0], [r for lines in replacing.values() for r in lines])
        relies = _readers_in(facts, top[0].slot, replacing)
        # Their own code must not read what the deleted statements bind.
        bound = facts.flows.bound_by(top[0].slot)
        for other in (d for d in others if d.block.id in relies):
            flow = facts.flows.flow_of(other.code if other.code is not None else other.block.code)
            if flow is None or flow.reads & bound:
                return None
    if owned is None or isinstance(owned, Decision):
        return owned
    taken = placed(block, owned.chosen, top, owned.reason, owned.review)
    return replace(taken, release=owned.release, lag=owned.lag, relies_on=relies)


def _readers_in(
    facts: MemberFacts, slot: Slot, replacing: dict[str, tuple[tuple[int, int], ...]]
) -> tuple[str, ...]:
    """The blocks (of ``replacing``: id to the line ranges it replaces) that replace
    upstream code after ``slot`` reading what the statements there bind: a deletion there
    holds only with those placed."""
    bound = facts.flows.bound_by(slot)
    readers = [s.start for s in statements_after(facts.member, slot) if s.reads & bound]
    return tuple(
        block
        for block, lines in replacing.items()
        if any(start <= line <= stop for line in readers for start, stop in lines)
    )


def _replaced_lines(decision: Decision) -> tuple[tuple[int, int], ...]:
    """The line ranges of upstream statements ``decision`` puts omni's code (or nothing)
    in place of (none for a conflict, a followed edit or a header edit)."""
    slot = decision.slot
    if (
        decision.conflict
        or decision.follow
        or slot is None
        or decision.block.kind is BlockKind.HEADER
    ):
        return ()
    return tuple((s.start, s.full_end) for s in slot.held())


def _binds_anew(facts: MemberFacts, edited: frozenset[str], texts: tuple[str, str]) -> bool:
    """Whether upstream's edit binds a name (``edited``: those code further on reads)
    neither the base's statements nor omni's code (``texts``) bind (a renamed variable):
    omni's code standing for the edit would leave it unbound."""
    kept: set[str] = set()
    for text in texts:
        found = facts.flows.flow_of(text) if text.strip() else None
        kept |= found.writes if found is not None else set()
    return bool(edited - kept)


def _standing_for(ctx: Context, place: Scored, echoed: Stmt) -> Decision:
    """The block at ``place``, which covers upstream's twin of its code: omni's version
    stands for both, and upstream's is left for review."""
    reason = f"omni's block stands for upstream's similar `{short(echoed.key)}` beside it"
    return placed(ctx.block, place, ctx.top, reason, Review("", ctx.syntax.source([echoed])))


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
