"""The upstream-history rule: what the releases around an upgrade say about an unmarked edit.

Lag before intent: a difference between the runner and its base is omni's only when no
upstream revision explains it. An unmarked edit whose text some upstream release holds at
its place is upstream code, not omni's (``evidence.history``): drift when that release is
newer than the base, a lag when it is older. A deletion is no exception: when an older
release had the runner's text there (without the statements), the statements came later
and the runners never got them. The output follows the new upstream there, and the note
names the statements and the release that brought them. An edit an older release
explains better than the base is merged against that release's text (``rebase``). And an
edit followed as upstream code must leave omni's code working around it (``settle``).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace

from omni_port.model import Block, BlockKind, Rule
from omni_port.pyast.syntax import Stmt, Tree, full_key, walk
from omni_port.sync.context import Context, Decision, Lag, Member
from omni_port.sync.evidence import history
from omni_port.sync.evidence.code import bound_by, nested, source
from omni_port.sync.evidence.flow import Flow, flow_of_code
from omni_port.sync.evidence.history import Rebase
from omni_port.sync.evidence.places import ACCEPT, Index, Scored, Slot, score_all
from omni_port.sync.rule import Silent


class UpstreamHistory(Silent):
    name = Rule.HISTORY

    def decide(self, ctx: Context) -> Decision | None:
        """An unmarked edit upstream history explains: the output follows the new upstream."""
        block, past = ctx.block, ctx.evidence.history
        if block.marked or past is None:
            return None
        found = history.explain(block, past) or history.held_in_member(block, past)
        if found is None:
            return None
        # When the new upstream has nothing at the place, following it leaves nothing there.
        slot = _followed_slot(ctx.member, ctx.index, block, found.target_span) or Slot(
            ctx.member.clauses[0], (), 0, 0
        )
        here = (Scored(slot, 1.0, 1.0),)
        target = past.versions[past.target].label
        if found.release == target:
            rules = (Rule.CONVERGENT,)
            return Decision(block, slot, 1.0, False, here, found.reason, rules, follow=True)
        lag = Lag(found.brought_by) if found.brought_by else None
        return Decision(
            block,
            slot,
            1.0,
            False,
            here,
            found.reason,
            (self.name,),
            follow=True,
            release=found.release,
            lag=lag,
        )

    def rebase(self, ctx: Context, best: Scored) -> Rebase | None:
        """The older release an edit was written against (its text explains the edit better
        than the base's)."""
        block, past = ctx.block, ctx.evidence.history
        if past is None or not block.anchor.replaced:
            return None
        return history.merge_base(block, past)

    def settle(self, ctx: Member, decisions: Sequence[Decision]) -> list[Decision] | None:
        """An edit followed as upstream code must leave omni's code working around it.

        Coupled edits (one binds what another reads) stay together. Following the new
        upstream replaces the edit's code with upstream's; that is refused when the edit
        binds a name another block reads and upstream's code there does not bind, or when
        upstream's code reads a name that omni's code no longer binds (its binding is
        inside statements another block replaced). The edit is then placed like any omni
        edit, without this rule.
        """
        result = list(decisions)
        tree = ctx.evidence.tree
        alone = replace(ctx.evidence, history=None)
        for position, decision in enumerate(decisions):
            if self.name not in decision.rules or decision.slot is None:
                continue
            if decision.follow:
                theirs = _at(decision.slot, tree)
                why = _needed(decision, decisions, tree)
            elif decision.code is not None:
                theirs, why = flow_of_code(decision.code), ""
            else:
                continue
            why = why or _unbound(ctx.member, decision, decisions, theirs)
            if not why:
                continue
            kept = ctx.redecide(decision.block, alone)
            note = f"kept although it is upstream code of {decision.release}: {why}"
            reason = f"{note}; {kept.reason}" if kept.reason else note
            result[position] = replace(kept, reason=reason)
        return result


def _followed_slot(member: Stmt, index: Index, block: Block, span: tuple[str, ...]) -> Slot | None:
    """The place of the new upstream's own statements at a followed edit's place: where
    the member holds them as one run, when it does once; else by the edit's anchor."""
    runs = [
        Slot(suite, path, start, len(span))
        for path, suite in walk(member.clauses[0])
        for start in range(len(suite.stmts) - len(span) + 1)
        if span and tuple(full_key(s) for s in suite.stmts[start : start + len(span)]) == span
    ]
    if len(runs) == 1:
        return runs[0]
    scored = sorted(
        score_all(index, replace(block, kind=BlockKind.INSERTION)), key=lambda s: -s.score
    )
    if not scored or scored[0].score < ACCEPT:
        return None
    slot = scored[0].slot
    stmts = slot.suite.stmts
    for start in (slot.index, slot.index - len(span)):
        if start >= 0 and tuple(full_key(s) for s in stmts[start : start + len(span)]) == span:
            return Slot(slot.suite, slot.path, start, len(span))
    return Slot(slot.suite, slot.path, slot.index, 0)


def _needed(decision: Decision, decisions: Sequence[Decision], tree: Tree | None) -> str:
    """Why another block needs the edit's bindings ("" when none does)."""
    assert decision.slot is not None
    mine = flow_of_code(decision.block.code)
    if mine is None:
        return ""
    lost = mine.writes - bound_by(decision.slot, tree)
    for other in decisions:
        flow = flow_of_code(other.block.code) if other is not decision else None
        if flow is not None and lost & flow.reads:
            names = ", ".join(f"`{n}`" for n in sorted(lost & flow.reads))
            return f"{other.block.id} reads {names}, which it binds"
    return ""


def _at(slot: Slot, tree: Tree | None) -> Flow | None:
    """The flow of the new upstream's statements at ``slot``."""
    stmts = slot.held()
    return flow_of_code(source(tree, stmts)) if tree is not None and stmts else None


def _unbound(
    method: Stmt, decision: Decision, decisions: Sequence[Decision], theirs: Flow | None
) -> str:
    """Why upstream's code at the edit's place (followed, or merged into the edit's) would
    read names omni's code lost ("")."""
    slot = decision.slot
    assert slot is not None
    mine = flow_of_code(decision.block.code)
    if theirs is None or mine is None:
        return ""
    gone: set[int] = set()
    written: set[str] = set()
    for other in decisions:
        if other is decision or other.conflict or other.slot is None or other.follow:
            continue
        flow = flow_of_code(other.code or other.block.code)
        written |= flow.writes if flow is not None else frozenset()
        span = other.slot.held()
        gone |= {id(s) for s in nested(span)}
    line = slot.line()
    lost = []
    for name in sorted(theirs.reads - mine.reads - written):
        binders = [
            stmt
            for _, suite in walk(method.clauses[0])
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
