"""The merge3 rule: both sides edited one statement; the edits merge on the syntax tree.

Where upstream changed the statements a block replaced (or a signature, or a header),
omni's code and upstream's merge with the three-way statement merge
(``evidence.merging``) against the base's text, or against the older release history
shows the edit was written against. Edits of the same element clash: a conflict. Fields
of a class body are positions: upstream's new fields at the end keep theirs, and what
omni's additions hold of upstream's is written once. And
statements omni moved into a block still receive upstream's edits of the originals.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace
from functools import partial

from omni_port.model import BlockKind, Edge, Rule
from omni_port.sync.context import (
    Answer,
    Context,
    Decision,
    Lag,
    Proposal,
    Settled,
    Tie,
    conflict,
)
from omni_port.sync.evidence import code, history, merging
from omni_port.sync.evidence.code import def_source, nested, short, with_body
from omni_port.sync.evidence.history import NeverHad, Rebase, Version
from omni_port.sync.evidence.places import Scored, Slot, beside
from omni_port.sync.facts import History, MemberFacts, Stmt, Syntax, keys_of
from omni_port.sync.rule import Silent

CHANGED = "the statements it replaced changed upstream"


class Merge3(Silent):
    name = Rule.MERGE3
    reads = (Syntax, History)

    def reconcile(self, ctx: Context, best: Scored, rebase: Rebase | None) -> Answer | None:
        """omni's code with upstream's edits of the replaced statements merged in, or the
        conflict of a deletion or of edits of the same element."""
        block = ctx.block
        if block.kind is BlockKind.DELETION and rebase is None:
            return conflict(block, best, ctx.top, "the statements it deleted changed upstream")
        base = ctx.history.replaced_text(ctx.block) if rebase is None else rebase.text
        if base is None:
            return conflict(block, best, ctx.top, f"{CHANGED} inside compound statements")
        kept = _kept(ctx, best)
        around, note = None, ""
        if kept is not None:
            trimmed, never = kept
            around = beside(block.anchor, best.slot, trimmed)
            brought = partial(ctx.history.brought_here, block)
            held = best.slot.held()
            note = never.note(block.anchor.replaced, held, ctx.history.named, brought=brought)
            best = Scored(trimmed, best.score, best.replaced, best.parts, best.contradicted)
            base = never.dropped(base)
        theirs = ctx.syntax.source(best.slot.held(), header=block.kind is BlockKind.HEADER)
        fields = ctx.syntax.fields
        merged = merging.merge_block(base, block.code, theirs, block.kind, block.marked, fields)
        if isinstance(merged, merging.Clash):
            changed = CHANGED
            if rebase is not None:
                named = ctx.history.named(rebase.label)
                changed = f"against {named}, which explains it better than the base"
            return conflict(block, best, ctx.top, f"{changed}: {merged.reason}")
        reason = _merged_note(ctx, best, base, rebase, merged.taken)
        if not merged.taken:
            if rebase is None and kept is None:
                return None  # upstream's changes are omni's already: the same change
            reason = merging.already_omnis(ctx.history.changed_by(block))
        if rebase is not None:
            reason = f"written against {ctx.history.named(rebase.label)}, not the base; {reason}"
        reason = f"{reason}; {note}" if note else reason
        if rebase is None and kept is None:
            return Proposal(best, reason, code=merged.text)
        release, lag = "", None
        if rebase is not None:
            release, lag = rebase.label, _lag(ctx.facts, rebase.label)
        if kept is not None:
            release, lag = release or kept[1].had, lag or Lag(kept[1].brought_by)
        return Proposal(best, reason, code=merged.text, release=release, lag=lag, around=around)

    def break_tie(self, ctx: Context, tie: Tie) -> Answer | None:
        """Fields of a class body are positions, like arguments: upstream's new fields at
        the end keep theirs, and omni's last fields follow them."""
        block = ctx.block
        stmts = tie.first.slot.suite.stmts
        last = block.anchor.edge is Edge.LAST and tie.second.slot.index == len(stmts)
        if not (last and merging.fields_only(block.code)):
            return None
        if not all(s.kind == "AnnAssign" for s in tie.between):
            return None
        return Proposal(
            tie.second, "fields are positions: upstream's new fields first, then omni's"
        )

    def settle(self, facts: MemberFacts, decisions: Sequence[Decision]) -> list[Settled] | None:
        """Upstream's edits of statements omni moved into blocks merge into the copies."""
        return _moves(facts, decisions)

    def sign(self, ctx: Context) -> Decision | None:
        """Both sides changed the signature: different parameters merge, the same clash."""
        member, block = ctx.member, ctx.block
        upstream_now = f"the signature changed upstream; upstream now has: {short(member.key, 120)}"
        theirs = ctx.syntax.signature
        base = def_source(block.anchor.replaced[0])
        merged = (
            merging.merge_signature(with_body(base), with_body(block.code), theirs)
            if base is not None
            else None
        )
        if not isinstance(merged, merging.Merged):
            why = f": {merged.reason}" if isinstance(merged, merging.Clash) else ""
            return Decision(block, None, 0.0, True, (), upstream_now + why)
        if not merged.taken or ctx.syntax.same_code(merged.text, theirs):
            return None  # one side's changes hold the other's: the same change
        reason = "merged upstream's edits: " + "; ".join(merged.taken)
        code = merging.without_body(merged.text)
        return Decision(block, None, 1.0, False, (), reason, code=code)


def _kept(ctx: Context, best: Scored) -> tuple[Slot, NeverHad] | None:
    """The place less the statements it holds that the runners never had there (upstream
    code they lack, which stays as upstream has it beside the merge), with them; None when
    the block replaces none such, or one stands between statements the place keeps.

    Those statements are no part of omni's edit: the merge's base lacks them as the runners
    did (docs/design.md, rule 5: one upstream change is followed whole)."""
    never = ctx.history.never_had(ctx.block) if ctx.block.kind is BlockKind.REPLACEMENT else None
    if never is None:
        return None
    trimmed = never.outside(best.slot)
    if trimmed is None or not trimmed.span:
        return None
    return trimmed, never


def _lag(facts: MemberFacts, release: str) -> Lag | None:
    """A lag when ``release`` is older than the base: the base changed that code since."""
    if not facts.history.older_than_base(release):
        return None
    assert facts.history.base is not None
    return Lag(facts.history.base.label)


# --- moved statements ---------------------------------------------------------------------


def _moves(facts: MemberFacts, decisions: Sequence[Decision]) -> list[Settled] | None:
    """The decisions with upstream's edits merged into statements omni moved into blocks;
    None when no block holds a moved statement."""
    base = facts.history.base
    if base is None or base.member is None:
        return None
    removed = _removed(facts, decisions, base)
    if not removed:
        return None
    target = merging.simple_statements(facts.member, facts.tree)
    older = [
        (v.label, merging.simple_statements(v.member, v.tree))
        for v in facts.history.older
        if v.member
    ]
    result = []
    origins: set[str] = set()
    for decision in decisions:
        kinds = (BlockKind.INSERTION, BlockKind.REPLACEMENT)
        if decision.conflict or decision.follow or decision.block.kind not in kinds:
            result.append(decision)
            continue
        code = decision.code if decision.code is not None else decision.block.code
        moved = merging.merge_moves(code, removed, target, older) if code.strip() else None
        made: dict[str, str] = {}
        if isinstance(moved, merging.Moved):
            origins.update(moved.origins)
            made = _moves_made_in(facts, code, removed, older, moved.taken)
        result.append(_with_moves(facts, decision, moved, made))
    return [_moved_away(facts, d, origins, base) for d in result]


def _merged_note(
    ctx: Context, best: Scored, base: str, rebase: Rebase | None, taken: Sequence[str]
) -> str:
    """The note of upstream's edits merged into omni's code, each with the release or
    commit that first made it (docs/design.md rule 6), where upstream history shows it."""
    return _edits_note(ctx.facts, _made_in(ctx, base, rebase, taken), taken)


def _edits_note(facts: MemberFacts, made: dict[str, str], taken: Sequence[str]) -> str:
    """ "merged upstream's edits" with each of ``taken`` and the change that made it
    (``made``, by label): once for all when one change made them all."""
    named = facts.history.named
    if not made or (len(set(made.values())) == 1 and len(made) == len(taken)):
        by = f" of {named(next(iter(made.values())))}" if made else ""
        return f"merged upstream's edits{by}: " + "; ".join(taken)
    parts = [f"{t} ({named(made[t])})" if t in made else t for t in taken]
    return "merged upstream's edits: " + "; ".join(parts)


def _made_in(
    ctx: Context, base: str, rebase: Rebase | None, taken: Sequence[str]
) -> dict[str, str]:
    """The first release or commit after the merge's base whose code at the block's place
    merges into omni's with each of ``taken`` (by label; none without history)."""
    past = ctx.history.past
    if past is None or not taken:
        return {}
    labels = [v.label for v in past.versions]
    start = (
        labels.index(rebase.label) if rebase is not None and rebase.label in labels else past.base
    )
    block, last = ctx.block, ""
    made: dict[str, str] = {}
    for version in past.versions[start + 1 : past.target + 1]:
        found = history.place(version, block.anchor)
        if found is None:
            continue
        theirs = code.source(version.tree, found.stmts(), header=block.kind is BlockKind.HEADER)
        if theirs == last:
            continue
        last = theirs
        merged = merging.merge_block(
            base, block.code, theirs, block.kind, block.marked, ctx.syntax.fields
        )
        if isinstance(merged, merging.Merged):
            made.update((t, version.label) for t in merged.taken if t in taken and t not in made)
    return made


def _removed(
    facts: MemberFacts, decisions: Sequence[Decision], base: Version
) -> list[merging.Original]:
    """The base's simple statements that blocks replaced (what omni may have moved)."""
    removed: list[merging.Original] = []
    for decision in decisions:
        block = decision.block
        if block.anchor.replaced and block.kind is not BlockKind.HEADER:
            found = facts.history.base_place(block)
            if found is not None:
                removed.extend(merging.originals(found.stmts(), base.tree))
    return removed


def _moves_made_in(
    facts: MemberFacts,
    code: str,
    removed: Sequence[merging.Original],
    older: Sequence[tuple[str, Sequence[merging.Original]]],
    taken: Sequence[str],
) -> dict[str, str]:
    """The first release or commit of upstream history whose member, merged into the moved
    statements of ``code`` as the new upstream's is, gives each of ``taken`` (by label;
    none without history): the change that made the edit (docs/design.md rule 6)."""
    past = facts.history.past
    made: dict[str, str] = {}
    if past is None or not taken:
        return made
    for version in past.versions[: past.target + 1]:
        if version.member is None:
            continue
        now = merging.simple_statements(version.member, version.tree)
        moved = merging.merge_moves(code, removed, now, older)
        if isinstance(moved, merging.Moved):
            made.update((t, version.label) for t in moved.taken if t in taken and t not in made)
        if len(made) == len(taken):
            break
    return made


def _with_moves(
    facts: MemberFacts,
    decision: Decision,
    moved: merging.Moved | merging.Clash | None,
    made: dict[str, str],
) -> Decision:
    """``decision`` with the merge of its moved statements (a clash makes it a conflict);
    ``made``: the change that made each edit merged, by label."""
    if moved is None or (isinstance(moved, merging.Moved) and not moved.taken):
        return decision
    if isinstance(moved, merging.Clash):
        return replace(decision, conflict=True, reason=moved.reason)
    merged = _edits_note(facts, made, moved.taken)
    reason = f"{decision.reason}; {merged}" if decision.reason else merged
    release = decision.release or (moved.releases[0] if moved.releases else "")
    lag = decision.lag
    if moved.releases and lag is None:
        lag = _lag(facts, moved.releases[0])
    return replace(decision, code=moved.code, reason=reason, release=release, lag=lag)


def _moved_away(facts: MemberFacts, decision: Decision, moved: set[str], base: Version) -> Decision:
    """A deletion whose statements upstream edited is no conflict when every edit went to
    a statement omni moved into a block (the copy received it)."""
    block = decision.block
    if not decision.conflict or block.kind is not BlockKind.DELETION or decision.slot is None:
        return decision
    found = facts.history.base_place(block)
    if found is None:
        return decision
    now = decision.slot.held()
    if keys_of(now) == found.keys():
        return decision  # upstream left them alone: the conflict is about something else
    headers = (_headers(found.stmts()), _headers(now))
    old = merging.originals(found.stmts(), base.tree)
    verdict = merging.moved_away(old, headers, merging.originals(now, facts.tree), moved)
    if verdict is False:
        return decision
    if verdict is None:
        reason = "upstream only took out statements it deletes too"
    else:
        reason = "upstream's edits inside it went to statements omni moved, which received them"
    return replace(decision, conflict=False, reason=reason)


def _headers(stmts: Sequence[Stmt]) -> tuple[str, ...]:
    """Headers of the compound statements in ``stmts``, nested ones included."""
    return tuple(s.key for s in nested(stmts) if s.clauses)


RULE = Merge3()
