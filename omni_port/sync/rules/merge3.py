"""The merge3 rule: both sides edited one statement; the edits merge on the syntax tree.

Where upstream changed the statements a block replaced (or a signature, or a header),
omni's code and upstream's merge with the three-way statement merge (``pyast.merge3``)
against the base's text, or against the older release history shows the edit was
written against. Edits of the same element clash: a conflict. Fields of a class body are
positions: upstream's new fields at the end keep theirs. And statements omni moved into
a block still receive upstream's edits of the originals (``pyast.moves``).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace

from omni_port.model import BlockKind, Edge, Rule
from omni_port.pyast import merge3, moves
from omni_port.pyast.syntax import Stmt, Tree, dedent_code, full_key, header_end, split_full_key
from omni_port.sync.context import (
    Answer,
    Context,
    Decision,
    Lag,
    Member,
    Proposal,
    Tie,
    conflict,
)
from omni_port.sync.evidence import history
from omni_port.sync.evidence.code import (
    def_source,
    nested,
    same_code,
    short,
    source,
    with_body,
    without_body,
)
from omni_port.sync.evidence.history import MemberHistory, Rebase, Version
from omni_port.sync.evidence.places import Scored
from omni_port.sync.rule import Silent

CHANGED = "the statements it replaced changed upstream"


class Merge3(Silent):
    name = Rule.MERGE3

    def reconcile(self, ctx: Context, best: Scored, rebase: Rebase | None) -> Answer | None:
        """omni's code with upstream's edits of the replaced statements merged in, or the
        conflict of a deletion or of edits of the same element."""
        block, tree = ctx.block, ctx.evidence.tree
        assert tree is not None
        if block.kind is BlockKind.DELETION and rebase is None:
            return conflict(block, best, ctx.top, "the statements it deleted changed upstream")
        slot = best.slot
        found = slot.held()
        theirs = source(tree, found, header=block.kind is BlockKind.HEADER)
        mine = with_body(block.code) if block.kind is BlockKind.HEADER else block.code
        base = _base_text(ctx) if rebase is None else rebase.text
        if base is None:
            return conflict(block, best, ctx.top, f"{CHANGED} inside compound statements")
        merged = merge3.merge(base, mine, theirs)
        if isinstance(merged, merge3.Clash) and block.kind is BlockKind.REPLACEMENT:
            # Upstream rewrote the statement around the one expression omni changed (an
            # unmarked edit: a marked block's markers are in omni's text, not upstream's).
            merged = (not block.marked and merge3.transplant(base, mine, theirs)) or merged
        if isinstance(merged, merge3.Clash):
            changed = CHANGED
            if rebase is not None:
                changed = f"against {rebase.label}, which explains it better than the base"
            return conflict(block, best, ctx.top, f"{changed}: {merged.reason}")
        code = without_body(merged.text) if block.kind is BlockKind.HEADER else merged.text
        reason = "merged upstream's edits: " + "; ".join(merged.taken)
        rules: tuple[Rule, ...] = (Rule.ANCHOR, self.name)
        if not merged.taken:
            reason = "upstream's changes are in omni's code already"
            rules = (Rule.ANCHOR, Rule.CONVERGENT)
        if rebase is None:
            return Proposal(best, rules, reason, code=code)
        past = ctx.evidence.history
        assert past is not None
        reason = f"written against {rebase.label}, not the base; {reason}"
        rules = (Rule.ANCHOR, Rule.HISTORY, self.name)
        lag = _lag(past, rebase.label)
        return Proposal(best, rules, reason, code=code, release=rebase.label, lag=lag)

    def break_tie(self, ctx: Context, tie: Tie) -> Answer | None:
        """Fields of a class body are positions, like arguments: upstream's new fields at
        the end keep theirs, and omni's last fields follow them."""
        block = ctx.block
        stmts = tie.first.slot.suite.stmts
        last = block.anchor.edge is Edge.LAST and tie.second.slot.index == len(stmts)
        if not (last and merge3.all_fields(block.code)):
            return None
        if not all(s.kind == "AnnAssign" for s in tie.between):
            return None
        reason = "fields are positions: upstream's new fields first, then omni's"
        return Proposal(tie.second, (self.name,), reason)

    def settle(self, ctx: Member, decisions: Sequence[Decision]) -> list[Decision] | None:
        """Upstream's edits of statements omni moved into blocks merge into the copies."""
        return _moves(ctx, decisions)

    def sign(self, ctx: Context) -> Decision | None:
        """Both sides changed the signature: different parameters merge, the same clash."""
        member, block, tree = ctx.member, ctx.block, ctx.evidence.tree
        assert tree is not None
        upstream_now = f"the signature changed upstream; upstream now has: {short(member.key, 120)}"
        theirs = with_body(dedent_code(tree.text(member.start, header_end(member))))
        base = def_source(block.anchor.replaced[0])
        merged = (
            merge3.merge(with_body(base), with_body(block.code), theirs)
            if base is not None
            else None
        )
        if not isinstance(merged, merge3.Merged):
            why = f": {merged.reason}" if isinstance(merged, merge3.Clash) else ""
            return Decision(block, None, 0.0, True, (), upstream_now + why)
        if not merged.taken:
            # Upstream's edits were omni's already (or quoting only): nothing to take.
            reason = "upstream's changes are in omni's signature already"
            return Decision(block, None, 1.0, False, (), reason, (Rule.CONVERGENT,))
        if same_code(merged.text, theirs):
            # Every change of omni's is upstream's now: nothing of omni's is left to carry.
            reason = "upstream made omni's changes of the signature"
            return Decision(block, None, 1.0, False, (), reason, (Rule.CONVERGENT,), follow=True)
        reason = "merged upstream's edits: " + "; ".join(merged.taken)
        code = without_body(merged.text)
        return Decision(block, None, 1.0, False, (), reason, (self.name,), code=code)


def _lag(past: MemberHistory, release: str) -> Lag | None:
    """A lag when ``release`` is older than the base: the base changed that code since."""
    if not history.older_than_base(past, release):
        return None
    return Lag(past.versions[past.base].label)


def _base_text(ctx: Context) -> str | None:
    """The code the block replaced, as the old upstream wrote it (None when unknown)."""
    block, past = ctx.block, ctx.evidence.history
    header = block.kind is BlockKind.HEADER
    if past is not None:
        text = history.base_text(block, past)
        if text is not None:
            return with_body(text) if header else text
    keys = []
    for key in block.anchor.replaced:
        head, digest = split_full_key(key)
        if digest:
            return None
        keys.append(head)
    text = "\n".join(keys)
    return with_body(text) if header else text


# --- moved statements ---------------------------------------------------------------------


def _moves(ctx: Member, decisions: Sequence[Decision]) -> list[Decision] | None:
    """The decisions with upstream's edits merged into statements omni moved into blocks;
    None when no block holds a moved statement."""
    past, tree = ctx.evidence.history, ctx.evidence.tree
    base = past.versions[past.base] if past is not None else None
    if past is None or base is None or base.member is None or tree is None:
        return None
    removed = _removed(decisions, base)
    if not removed:
        return None
    target = moves.simple_statements(ctx.member, tree)
    older = [
        (v.label, moves.simple_statements(v.member, v.tree))
        for v in reversed(past.versions[: past.base])
        if v.member is not None
    ]
    result = []
    origins: set[str] = set()
    for decision in decisions:
        kinds = (BlockKind.INSERTION, BlockKind.REPLACEMENT)
        if decision.conflict or decision.follow or decision.block.kind not in kinds:
            result.append(decision)
            continue
        code = decision.code if decision.code is not None else decision.block.code
        moved = moves.merge_moves(code, removed, target, older) if code.strip() else None
        if isinstance(moved, moves.Moved):
            origins.update(moved.origins)
        result.append(_with_moves(decision, moved, past))
    return [_moved_away(d, origins, base, tree) for d in result]


def _removed(decisions: Sequence[Decision], base: Version) -> list[moves.Original]:
    """The base's simple statements that blocks replaced (what omni may have moved)."""
    assert base.member is not None
    removed: list[moves.Original] = []
    for decision in decisions:
        anchor = decision.block.anchor
        if anchor.replaced and decision.block.kind is not BlockKind.HEADER:
            found = history.place(base.member, anchor)
            if found is not None and found.keys() == anchor.replaced:
                removed.extend(moves.nested(found.stmts(), base.tree))
    return removed


def _with_moves(
    decision: Decision, moved: moves.Moved | merge3.Clash | None, past: MemberHistory
) -> Decision:
    """``decision`` with the merge of its moved statements (a clash makes it a conflict)."""
    if moved is None or (isinstance(moved, moves.Moved) and not moved.taken):
        return decision
    if isinstance(moved, merge3.Clash):
        return replace(decision, conflict=True, reason=moved.reason, rules=())
    rules = tuple(dict.fromkeys((*decision.rules, Rule.MERGE3)))
    if moved.releases:
        rules = tuple(dict.fromkeys((*rules, Rule.HISTORY)))
    merged = "merged upstream's edits: " + "; ".join(moved.taken)
    reason = f"{decision.reason}; {merged}" if decision.reason else merged
    release = decision.release or (moved.releases[0] if moved.releases else "")
    lag = decision.lag
    if moved.releases and lag is None:
        lag = _lag(past, moved.releases[0])
    return replace(decision, code=moved.code, rules=rules, reason=reason, release=release, lag=lag)


def _moved_away(decision: Decision, moved: set[str], base: Version, tree: Tree) -> Decision:
    """A deletion whose statements upstream edited is no conflict when every edit went to
    a statement omni moved into a block (the copy received it)."""
    block = decision.block
    if not decision.conflict or block.kind is not BlockKind.DELETION or decision.slot is None:
        return decision
    assert base.member is not None
    found = history.place(base.member, block.anchor)
    if found is None or found.keys() != block.anchor.replaced:
        return decision
    slot = decision.slot
    now = slot.held()
    if tuple(full_key(s) for s in now) == found.keys():
        return decision  # upstream left them alone: the conflict is about something else
    headers = (_headers(found.stmts()), _headers(now))
    old = moves.nested(found.stmts(), base.tree)
    verdict = moves.moved_away(old, headers, moves.nested(now, tree), moved)
    if verdict is False:
        return decision
    if verdict is None:
        reason = "upstream only took out statements it deletes too"
        return replace(
            decision, conflict=False, reason=reason, rules=(Rule.ANCHOR, Rule.CONVERGENT)
        )
    reason = "upstream's edits inside it went to statements omni moved, which received them"
    return replace(decision, conflict=False, reason=reason, rules=(Rule.ANCHOR, Rule.MERGE3))


def _headers(stmts: Sequence[Stmt]) -> tuple[str, ...]:
    """Headers of the compound statements in ``stmts``, nested ones included."""
    return tuple(s.key for s in nested(stmts) if s.clauses)


RULE = Merge3()
