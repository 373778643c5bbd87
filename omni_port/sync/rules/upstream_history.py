"""The upstream-history rule: what the releases around an upgrade say about an unmarked edit.

Lag before intent: a difference between the runner and its base is omni's only when no
upstream revision explains it. An unmarked edit whose text some upstream release holds at
its place is upstream code, not omni's (``evidence.history``): drift when that release is
newer than the base, a lag when it is older. A deletion is no exception: when an older
release had the runner's text there (without the statements), the statements came later
and the runners never got them. The output follows the new upstream there, and the note
names the statements and the release that brought them. And an edit followed as upstream
code must leave omni's code working around it (``settle``). (The older release an edit
was written against, which the statement merge reads, is the engine's own step.)
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
    Lag,
    Proposal,
    Settled,
    Withdrawn,
    conflict,
    conflict_at,
    followed,
)
from omni_port.sync.evidence import code, history, merging
from omni_port.sync.evidence.code import nested
from omni_port.sync.evidence.flow import Flow
from omni_port.sync.evidence.history import Rebase
from omni_port.sync.evidence.places import Scored, Slot
from omni_port.sync.facts import Flows, History, MemberFacts, Places, Syntax
from omni_port.sync.rule import Silent


class UpstreamHistory(Silent):
    name = Rule.UPSTREAM_HISTORY
    reads = (Syntax, Places, Flows, History)

    def decide(self, ctx: Context) -> Decision | None:
        """An unmarked edit an older or newer release than the new upstream holds (the new
        upstream's own text is the same change: ``convergent``): the output follows the
        new upstream, naming the release."""
        found = ctx.history.explained(ctx.block)
        if found is None:
            return _renamed_in_removed(ctx)
        if found.release == ctx.history.target:
            return None
        lag = Lag(found.brought_by) if found.brought_by else None
        here = ctx.history.explained_place(ctx.block)
        decision = followed(ctx.block, here, (here,), found.reason)
        return replace(decision, release=found.release, lag=lag)

    def reconcile(self, ctx: Context, best: Scored, rebase: Rebase | None) -> Answer | None:
        """An unmarked edit that holds an older revision's code beside omni's own lines
        (``evidence.older_code``): the change upstream made to that code since is followed,
        omni's lines stay where they stand, and upstream's edits since the base merge in; a
        conflict when they do not merge. (An edit the statement merge rebases on the older
        revision itself, ``rebase``, is the merge rule's.)"""
        block = ctx.block
        older = ctx.history.older_code(block) if rebase is None else None
        base = ctx.history.replaced_text(block) if older is not None else None
        if older is None or base is None:
            return None
        was = older.note(block.anchor.replaced, ctx.history.named)
        theirs = ctx.syntax.source(best.slot.held())
        merged = merging.merge_block(base, older.code, theirs, block.kind, block.marked)
        if isinstance(merged, merging.Clash):
            reason = f"{was}; upstream's edits since the base clash with it: {merged.reason}"
            return conflict(block, best, ctx.top, reason)
        reason = f"an upstream change the runners never had: {was}; the new upstream is followed"
        if merged.taken:
            reason += "; merged upstream's edits: " + "; ".join(merged.taken)
        lag = Lag(older.changed_by)
        return Proposal(best, reason, code=merged.text, release=older.had, lag=lag)

    def check(self, ctx: Context, check: Check) -> Decision | Dispute | None:
        """An unmarked edit about to delete upstream code (all a deletion replaces, what a
        replacement's code holds nothing like) that came with the runner's text around it
        in one release: releases alone cannot tell whether the runners lag behind it or
        omni deleted it (docs/design.md rules 1 and 7), so it is a conflict naming the
        release; a clone's commits can tell."""
        found = ctx.history.unordered(ctx.block)
        if found is None or not found.among(check.proposal.chosen.slot.held()):
            return None
        kept = code.short("; ".join(found.heads), 60)
        reason = (
            f"releases alone cannot tell whether omni deleted `{kept}` or the runners lag "
            f"behind it: {ctx.history.named(found.release)} brought it together with "
            "the runners' code around it, and no release had that code without it (a "
            "clone can tell: --upstream-repo)"
        )
        return conflict(ctx.block, check.proposal.chosen, ctx.top, reason)

    def settle(self, facts: MemberFacts, decisions: Sequence[Decision]) -> list[Settled] | None:
        """An edit followed as upstream code must leave omni's code working around it.

        Coupled edits (one binds what another reads) stay together. Following the new
        upstream replaces the edit's code with upstream's; that is refused when the edit
        binds a name another block reads and upstream's code there does not bind, or when
        upstream's code reads a name that omni's code no longer binds (its binding is
        inside statements another block replaced). The edit is then placed like any omni
        edit, without upstream history's evidence.
        """
        decisions = _made_way(facts, decisions)
        result: list[Settled] = list(decisions)
        for position, decision in enumerate(decisions):
            if not decision.release or decision.slot is None:
                continue
            if decision.follow:
                theirs = facts.flows.flow_at(decision.slot)
                why = _needed(facts, decision, decisions) or _moved(facts, decision, decisions)
            elif decision.code is not None:
                theirs, why = facts.flows.flow_of(decision.code), ""
            else:
                continue
            why = why or _unbound(facts, decision, decisions, theirs)
            if why:
                named = facts.history.named(decision.release)
                note = f"kept although it is upstream code of {named}: {why}"
                result[position] = Withdrawn(decision, note)
        return result


def _made_way(facts: MemberFacts, decisions: Sequence[Decision]) -> list[Decision]:
    """The decisions, with each followed lag whose code the output would otherwise lose
    followed where upstream has its code now.

    An edit followed as the runners' lag keeps the new upstream's code for its own (an
    older release's). When that code (a statement like the edit's own) stands among
    what a block right beside the edit replaces, following the edit would drop it with
    the block's place, and omni's older version with the edit: nothing of either would
    stay. The edit dates the runners' text there to its release (docs/design.md rule 4):
    the statements from the block's end next to the edit up to that code, each the
    edit's code or one that came after the edit's release, are upstream code the runners
    never had. The edit follows them; the block replaces the rest."""
    result = list(decisions)
    for position, decision in enumerate(decisions):
        lag = decision.lag
        if not decision.follow or lag is None or decision.slot is None or decision.slot.span:
            continue  # not a lag, or upstream's code for it stands at its own place
        for at, other in enumerate(result):
            way = _way(facts, decision, other) if at != position else None
            if way is None:
                continue
            follows, rest = way
            named = facts.history.named
            heads = [s.key for s in follows.held()]
            which = facts.history.which_brought(facts.history.brought_now(heads, follows.path))
            if not which:
                kept = code.short("; ".join(heads), 60)
                which = f"`{kept}`, which {named(lag.changed_by)} brought"
            note = (
                f"upstream code the runners never had here stays: {which} "
                f"({named(decision.release)} had the runners' code here; "
                f"{decision.block.id.rsplit('.', 1)[-1]} follows it)"
            )
            reason = f"{other.reason}; {note}" if other.reason else note
            result[position] = replace(decision, slot=follows)
            result[at] = replace(other, slot=rest, reason=reason)
            break
        else:
            lost = _lost_among(decision, result)
            if lost:
                result[position] = conflict_at(decision, lost)
    return result


def _lost_among(lag: Decision, decisions: Sequence[Decision]) -> str:
    """Why following ``lag`` at its empty place would lose upstream's version of its code:
    a placed block right beside it replaces that code, and no run of statements from the
    block's end reaches it ("" when none does). Neither omni's older code nor upstream's
    would stay: a conflict, not a guess (``_made_way`` found no way)."""
    ours = lag.block.anchor
    for other in decisions:
        slot, replaced = other.slot, tuple(other.block.anchor.replaced)
        if other is lag or other.conflict or other.follow or slot is None or not replaced:
            continue
        beside = ours.after[:1] == replaced[:1] or ours.before[:1] == replaced[-1:]
        found = history.like_code(lag.block.code, slot.held()) if beside else None
        if found is not None:
            return (
                f"upstream's version of this lag's code, `{code.short(found.key, 60)}`, "
                f"stands among what {other.block.id.rsplit('.', 1)[-1]} replaces, past "
                "statements the runners had: following it would lose both"
            )
    return ""


def _way(facts: MemberFacts, lag: Decision, other: Decision) -> tuple[Slot, Slot] | None:
    """Where the followed ``lag`` finds its code in the new upstream among what ``other``
    replaces, right beside the lag's own place: (the lag's slot there, the rest of
    ``other``'s slot); None when ``other`` replaces none of it there, or nothing else."""
    slot = other.slot
    if other.conflict or other.follow or other.code is not None or slot is None:
        return None
    replaced = tuple(other.block.anchor.replaced)
    ours = lag.block.anchor
    if slot.span < 2 or not replaced or ours.path != other.block.anchor.path:
        return None
    held = slot.held()
    if ours.after[:1] == replaced[:1]:
        taken = facts.history.lag_run(lag.block, lag.release, held, slot.path)
        first, rest = slot.index, slot.index + taken
    elif ours.before[:1] == replaced[-1:]:
        taken = facts.history.lag_run(lag.block, lag.release, held[::-1], slot.path)
        first, rest = slot.index + slot.span - taken, slot.index
    else:
        return None
    if not taken or taken == slot.span:
        return None
    follows = Slot(slot.suite, slot.path, first, taken)
    return follows, Slot(slot.suite, slot.path, rest, slot.span - taken)


def _renamed_in_removed(ctx: Context) -> Decision | None:
    """An edit that only renames variables (omni's names for what upstream's code calls
    otherwise) in statements upstream has since taken out of the member: the removal is
    followed, as nothing of omni's is lost with it. An edit that changes anything else, or
    statements upstream still has anywhere in the member (perhaps edited), stays omni's."""
    block, facts = ctx.block, ctx.facts
    if block.marked or block.kind is not BlockKind.REPLACEMENT or not block.anchor.replaced:
        return None
    by = ctx.history.removed_by(ctx.block)
    text = ctx.history.replaced_text(ctx.block)
    if not by or text is None:
        return None
    old, new = facts.syntax.parsed(text), facts.syntax.parsed(block.code)
    names = code.renamed(old, new) if old is not None and new is not None else None
    if names is None or "self" in names:
        # A method's receiver is no variable omni renamed: code that reads another
        # object's attribute instead (``self.device`` to ``hidden_states.device``) changes
        # what it reads.
        return None
    here = Scored(Slot(facts.member.clauses[0], (), 0, 0), 1.0, 1.0)
    renames = ", ".join(f"`{a}` to `{b}`" for a, b in sorted(names.items()))
    reason = (
        f"{facts.history.named(by)} took out `{code.short(text.strip(), 60)}`, where omni's "
        "edit only "
        f"renamed {renames}: nothing of omni's is lost; the new upstream is followed"
    )
    return replace(followed(block, here, (here,), reason), release=by)


def _moved(facts: MemberFacts, decision: Decision, decisions: Sequence[Decision]) -> str:
    """Why upstream's code a followed deletion keeps is the runners' after all ("" when it
    is not): another edit placed in the member binds it, where omni moved it. Kept at
    both places, it would run twice."""
    if decision.block.kind is not BlockKind.DELETION:
        return ""
    replaced = set(decision.block.anchor.replaced)
    held = [s for _, suite in facts.places.index.suites for s in suite.stmts if s.key in replaced]
    for other in decisions:
        if other is decision or other.conflict or other.follow or other.slot is None:
            continue
        echoed = facts.syntax.echo(other.block, held) if held else None
        # A call that binds nothing is the run-once rule's (one copy runs, upstream's).
        if echoed is not None and echoed.writes:
            short = code.short(echoed.key, 60)
            return f"{other.block.id} writes `{short}` where omni moved it"
    return ""


def _needed(facts: MemberFacts, decision: Decision, decisions: Sequence[Decision]) -> str:
    """Why another block needs the edit's bindings ("" when none does)."""
    assert decision.slot is not None
    mine = facts.flows.flow(decision.block)
    if mine is None:
        return ""
    lost = mine.writes - facts.flows.bound_by(decision.slot)
    for other in decisions:
        flow = facts.flows.flow(other.block) if other is not decision else None
        if flow is not None and lost & flow.reads:
            names = ", ".join(f"`{n}`" for n in sorted(lost & flow.reads))
            return f"{other.block.id} reads {names}, which it binds"
    return ""


def _unbound(
    facts: MemberFacts, decision: Decision, decisions: Sequence[Decision], theirs: Flow | None
) -> str:
    """Why upstream's code at the edit's place (followed, or merged into the edit's) would
    read names omni's code lost ("")."""
    slot = decision.slot
    assert slot is not None
    mine = facts.flows.flow(decision.block)
    if theirs is None or mine is None:
        return ""
    gone: set[int] = set()
    written: set[str] = set()
    for other in decisions:
        if other is decision or other.conflict or other.slot is None or other.follow:
            continue
        flow = facts.flows.flow_of(other.code or other.block.code)
        written |= flow.writes if flow is not None else frozenset()
        gone |= {id(s) for s in nested(other.slot.held())}
    line = slot.line()
    lost = []
    for name in sorted(theirs.reads - mine.reads - written):
        binders = [
            stmt
            for _, suite in facts.places.index.suites
            for stmt in suite.stmts
            if stmt.full_end < line and name in stmt.writes
        ]
        if binders and all(id(b) in gone for b in binders):
            lost.append(name)
    if not lost:
        return ""
    names = ", ".join(f"`{n}`" for n in lost)
    return f"the new upstream's code there reads {names}, which omni's code no longer binds"


RULE = UpstreamHistory()
