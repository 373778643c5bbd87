"""The placement engine: where each block of a copied member goes in the new upstream method.

The engine walks a fixed path of steps for each block, reading the block's facts
(``sync.facts``). At some steps it asks a question of the rules in ``rules.RULES`` order
(the first answer has it); the others are its own:

1. ``decide``: a decision before any place is scored (a recorded resolution, an edit
   upstream history explains).
2. The anchor ranks the candidate places (the engine's step); ``narrow``: fewer of them.
3. A best place that scores too little is ``second``-ed by other evidence, or followed
   release by release through upstream history (the walk, the engine's step), or it is
   a conflict.
4. The release the edit was written against (the engine's step, from upstream history).
   Replaced statements that changed upstream are ``reconcile``-d at a clear best place
   (the first answer that places the block has it, else the first conflict: a merge
   before intent); two places that score alike go to ``break_tie``; otherwise the
   anchor's best place is taken.
5. Every place about to be taken is ``check``-ed by every rule: a conflict, another
   decision (upstream has the code already), or a note instead.

Then the decisions of a member are ``settle``-d together, and two steps of the engine's
own read them all (``sync.atomic``): an upstream change is followed whole or is a
conflict, and no call runs more often than in both the new upstream and the old runner.
The engine stamps each decision with the rules whose answers it rests on, in the order
it asked them: ``anchor`` when the anchor's ranking chose the place, ``stepwise`` when
the walk did, the rule that answered each question after that, and ``upstream-history``
where the code was merged against an upstream release other than the base. Nothing here
guesses: every doubt about a place is a conflict, with its candidates ranked.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, replace

from omni_port.model import Block, BlockKind, Rule
from omni_port.pyast.syntax import walk
from omni_port.sync import atomic
from omni_port.sync.context import (
    Answer,
    Check,
    Context,
    Decision,
    Dispute,
    Narrowed,
    Proposal,
    Settled,
    Tie,
    Withdrawn,
    conflict,
)
from omni_port.sync.evidence.code import new_code_around, parameters, short
from omni_port.sync.evidence.history import Rebase
from omni_port.sync.evidence.places import (
    ACCEPT,
    PATH_CERTAIN,
    WEAK_ACCEPT,
    Scored,
    Slot,
    clear,
    distinct,
    replaced_score,
    resolution_at,
)
from omni_port.sync.facts import BlockFacts, MemberFacts
from omni_port.sync.rule import PlacementRule
from omni_port.sync.rules import RULES

__all__ = [
    "ACCEPT",
    "Decision",
    "Scored",
    "Slot",
    "decide",
    "resolution_at",
    "signature",
]

#: The path of a decision so far: the rules it rests on before the next answer.
_Path = tuple[Rule, ...]


def decide(
    facts: MemberFacts, blocks: Sequence[Block], rules: Sequence[PlacementRule] = RULES
) -> list[Decision]:
    """A decision for every block of one copied member, in block order, asking ``rules``
    (all of them by default; a golden case asks one rule alone)."""
    return _Engine(tuple(rules)).member(facts, blocks)


def signature(facts: MemberFacts, block: Block, rules: Sequence[PlacementRule] = RULES) -> Decision:
    """A signature edit: carried when upstream kept the old signature, merged when both
    changed different parameters, a conflict otherwise."""
    return _Engine(tuple(rules)).signature(facts, block)


def _stamped(decision: Decision, path: _Path, name: Rule) -> Decision:
    """``decision`` as the answer of rule ``name`` on ``path``: a conflict keeps the path
    (the answers that led to it), a placement rests on the rule too."""
    stamps = path if decision.conflict else tuple(dict.fromkeys((*path, name)))
    return replace(decision, rules=stamps)


@dataclass(frozen=True, slots=True)
class _Engine:
    """The path of steps, asking one set of rules."""

    rules: tuple[PlacementRule, ...]

    # --- a member -----------------------------------------------------------------------------

    def member(self, facts: MemberFacts, blocks: Sequence[Block]) -> list[Decision]:
        decisions = [self.block(facts.of(block)) for block in blocks]
        for rule in self.rules:
            settled = rule.settle(facts, decisions)
            if settled is not None:
                decisions = [
                    self._settled(facts, old, new, rule.name)
                    for old, new in zip(decisions, settled, strict=True)
                ]
        whole = atomic.followed_whole(facts, decisions)
        placed = _on_placed(facts, atomic.run_once(facts, whole))
        # A block that ends a conflict there leaves upstream's statements it replaced in.
        once = _apart(atomic.run_once(facts, placed))
        fates = {d.block.id: d for d in once}
        return [_named(facts, _runnable(facts, d, blocks, fates)) for d in once]

    def _settled(self, facts: MemberFacts, old: Decision, new: Settled, name: Rule) -> Decision:
        """A decision as rule ``name`` settled it: withdrawn ones decided again without
        upstream history's evidence, changed ones stamped."""
        if new is old:
            return old
        if isinstance(new, Withdrawn):
            kept = self.block(facts.without_history().of(new.decision.block))
            reason = f"{new.note}; {kept.reason}" if kept.reason else new.note
            # Decided again once history's answer was refused: a tie there is left to the
            # maintainer with the note, never settled by the order of the member's blocks.
            return replace(kept, reason=reason, tied=False)
        if new.conflict:
            return replace(new, rules=old.rules)
        history = (Rule.UPSTREAM_HISTORY,) if new.release and not old.release else ()
        return replace(new, rules=tuple(dict.fromkeys((*old.rules, name, *history))))

    def signature(self, facts: MemberFacts, block: Block) -> Decision:
        # A recorded resolution is asked first: it may hold the signature to write even
        # where upstream kept the old one.
        resolution = block.anchor.resolution
        kept = facts.member.key == block.anchor.replaced[0]
        if kept and (resolution is None or resolution.code is None):
            return Decision(block, None, 1.0, False, (), "", (Rule.ANCHOR,))
        ctx = Context(facts.of(block))
        for rule in self.rules:
            found = rule.sign(ctx)
            if found is not None:
                return _stamped(found, (), rule.name)
        return Decision(block, None, 0.0, True, (), "the signature changed upstream")

    # --- a block ------------------------------------------------------------------------------

    def block(self, facts: BlockFacts) -> Decision:
        ctx = Context(facts)
        for rule in self.rules:
            early = rule.decide(ctx)
            if early is not None:
                return _stamped(early, (), rule.name)
        ranked = _rank(ctx)
        if isinstance(ranked, Decision):
            return ranked
        return self._placed(replace(ctx, top=ranked))

    def _placed(self, ctx: Context) -> Decision:
        """The decision from the anchor's candidates and the evidence beyond it."""
        narrowed: Narrowed | None = None
        path: _Path = (Rule.ANCHOR,)
        for rule in self.rules:
            narrowed = rule.narrow(ctx)
            if narrowed is not None:
                ctx = replace(ctx, top=narrowed.top)
                if narrowed.decisive:
                    path = tuple(dict.fromkeys((Rule.ANCHOR, rule.name)))
                break
        decisive = narrowed if narrowed is not None and narrowed.decisive else None
        best = ctx.top[0]
        # Among places the anchor found plausible, a rule that narrowed them may pick one.
        if best.score < (WEAK_ACCEPT if decisive else ACCEPT):
            return self._weak(ctx)
        return self._on_base(ctx, best, clear(ctx.top), decisive, path)

    def _weak(self, ctx: Context) -> Decision:
        """The best place scores too little: another kind of evidence seconds one, or the
        block is followed through history, or it is a conflict."""
        path: _Path = (Rule.ANCHOR,)
        for rule in self.rules:
            answer = rule.second(ctx)
            if answer is not None:
                return self._taken(ctx, answer, path, rule.name)
        best = ctx.top[0]
        reason = f"best place scores {best.score:.2f}"
        if ctx.block.anchor.replaced and best.replaced < 1.0:
            reason = f"the statements it replaced changed upstream; {reason}"
        return self._unsure(ctx, reason, path)

    def _unsure(self, ctx: Context, reason: str, path: _Path, tied: bool = False) -> Decision:
        """The anchor's best place if the walk through history finds it too; else a
        conflict."""
        walked = self._walk(ctx)
        if walked is not None:
            return walked
        found = conflict(ctx.block, ctx.top[0], ctx.top, reason)
        return replace(found, rules=path, tied=tied)

    def _walk(self, ctx: Context) -> Decision | None:
        """The anchor's best place (``ctx.top[0]``) when the walk through upstream history
        reaches it too; None when the walk finds no clear place, another one, or nothing
        fits there."""
        walked = ctx.facts.walked if ctx.top else None
        if walked is None:
            return None
        slot = walked.scored.slot
        # The walk only seconds the anchor's own best place: one step's choice becomes the
        # next step's anchor, so a walk alone can drift (fuzzing found it taking a tie's
        # runner-up after upstream moved a statement across the block in a later release).
        best = ctx.top[0]
        if best.slot.key() != slot.key() or best.score < WEAK_ACCEPT or best.contradicted:
            return None
        # Whether upstream changed what the block replaced is judged against the base.
        replaced = ctx.block.anchor.replaced
        same = replaced_score(replaced, slot.held()) if replaced else 1.0
        chosen = Scored(slot, walked.scored.score, same, walked.scored.parts)
        ranked = (chosen, *(s for s in ctx.top if s.slot.key() != slot.key()))[:3]
        found = replace(ctx, top=ranked, around=walked.anchor)
        decision = self._on_base(found, chosen, True, None, (Rule.STEPWISE,))
        if decision.conflict:
            return None
        steps = ", ".join(walked.via) or "every release on the way"
        why = f"followed step by step through {steps}"
        return replace(decision, reason=f"{why}; {decision.reason}" if decision.reason else why)

    def _on_base(
        self, ctx: Context, best: Scored, clear: bool, narrowed: Narrowed | None, path: _Path
    ) -> Decision:
        """The decision at ``best`` once it is known which release the edit was written
        against (the base unless upstream history shows an older one)."""
        rebase = ctx.facts.rebase
        block = ctx.block
        if block.anchor.replaced and (best.replaced < 1.0 or rebase is not None):
            if not clear:
                reason = "the statements it replaced changed upstream, and two places score alike"
                return self._unsure(ctx, reason, path)
            return self._reconciled(ctx, best, rebase, path)
        if not clear:
            return self._tie(ctx)
        reason = narrowed.reason if narrowed is not None else ""
        return self._accept(ctx, Proposal(best, reason), path, path)

    def _reconciled(
        self, ctx: Context, best: Scored, rebase: Rebase | None, path: _Path
    ) -> Decision:
        """The block's replaced statements changed upstream: what goes at ``best``.

        The first rule that places the block has it; a rule that finds only a conflict
        leaves the later ones room to decide with their own evidence (omni's intent over an
        edit the statement merge cannot take), and its conflict stands when none does."""
        reason = "the statements it replaced changed upstream"
        first: Decision | None = None
        for rule in self.rules:
            answer = rule.reconcile(ctx, best, rebase)
            if answer is None:
                continue
            decision = self._taken(ctx, answer, path, rule.name)
            if not decision.conflict:
                return decision
            first = first or decision
        return first or replace(conflict(ctx.block, best, ctx.top, reason), rules=path)

    def _tie(self, ctx: Context) -> Decision:
        """Two places score alike: a rule decides between them, or it is a conflict."""
        top = ctx.top
        ambiguous = (
            f"ambiguous: places at upstream lines {top[0].slot.line()} and "
            f"{top[1].slot.line()} score {top[0].score:.2f} and {top[1].score:.2f}"
        )
        first, second = sorted(top[:2], key=lambda s: s.slot.index)
        same_body = first.slot.suite is second.slot.suite
        if not same_body or first.slot.span or second.slot.span:
            return replace(conflict(ctx.block, top[0], top, ambiguous), tied=True)
        between = first.slot.suite.stmts[first.slot.index : second.slot.index]
        tie = Tie(first, second, tuple(between), ambiguous)
        for rule in self.rules:
            answer = rule.break_tie(ctx, tie)
            if answer is not None:
                return self._taken(ctx, answer, (), rule.name)
        return self._unsure(ctx, ambiguous, (), tied=True)

    def _taken(self, ctx: Context, answer: Answer, path: _Path, name: Rule) -> Decision:
        """Rule ``name``'s answer on ``path``: a decision stamped, a proposal checked and
        taken (resting on upstream history too when merged against an older release)."""
        if isinstance(answer, Decision):
            return _stamped(answer, path, name)
        history = (Rule.UPSTREAM_HISTORY,) if answer.release else ()
        return self._accept(ctx, answer, path, tuple(dict.fromkeys((*path, *history, name))))

    def _accept(self, ctx: Context, proposal: Proposal, path: _Path, stamps: _Path) -> Decision:
        """The decision for a proposed place, unless a rule's check says otherwise;
        ``stamps`` are the rules it rests on, ``path`` those a conflict keeps."""
        chosen = proposal.chosen
        anchor = proposal.around or ctx.around or ctx.block.anchor
        before, after = new_code_around(anchor, chosen.slot)
        check = Check(proposal, tuple(before), tuple(after))
        dispute: Dispute | None = None
        decision: Decision | None = None
        for rule in self.rules:
            found = rule.check(ctx, check)
            if isinstance(found, Decision):
                decision = _stamped(found, stamps, rule.name)
                decision = replace(decision, rules=path) if decision.conflict else decision
                break
            if isinstance(found, Dispute):
                dispute = found
        if decision is None:
            decision = Decision(
                ctx.block,
                chosen.slot,
                chosen.score,
                False,
                ctx.top,
                proposal.reason,
                stamps,
                dispute=dispute,
            )
        if decision.conflict:
            return decision
        if proposal.review is not None:
            decision = replace(decision, review=proposal.review)
        if proposal.release:
            decision = replace(decision, release=proposal.release, lag=proposal.lag)
        return decision if proposal.code is None else replace(decision, code=proposal.code)


def _named(facts: MemberFacts, decision: Decision) -> Decision:
    """A conflict about, or omni's code winning over, statements upstream changed names the
    upstream change that made the edit (docs/design.md rule 6)."""
    block = decision.block
    by = facts.of(block).changed_by if block.anchor.replaced else ""
    if not by:
        return decision
    if decision.conflict:
        return replace(decision, reason=f"{decision.reason} (what it replaced changed in {by})")
    if decision.review is not None and not decision.conflict:
        return replace(decision, review=replace(decision.review, by=by))
    return decision


def _on_placed(facts: MemberFacts, decisions: Sequence[Decision]) -> list[Decision]:
    """A decision that holds only with another block placed is a conflict when that block
    is one: an edit that reads what only a marked block binds (``built_on``) would read a
    name nothing binds, and one that relies on what another replaces would leave code
    reading what it took away. Settled until no more change."""
    result = list(decisions)
    changed = True
    while changed:
        changed = False
        fates = {d.block.id: d for d in result}
        for position, decision in enumerate(result):
            if decision.conflict or decision.follow or decision.slot is None:
                continue
            carried = _carried(facts, decision, fates)
            if carried is not None:
                result[position] = carried
                changed = True
                continue
            reason = _unheld(facts, decision, fates)
            if reason:
                shown = Scored(decision.slot, decision.score, 1.0)
                result[position] = conflict(decision.block, shown, decision.candidates, reason)
                changed = True
    return result


def _unheld(facts: MemberFacts, decision: Decision, fates: dict[str, Decision]) -> str:
    """Why ``decision`` does not hold with the member's other decisions ("" when it does)."""

    def gone(block_id: str) -> bool:
        return block_id not in fates or fates[block_id].conflict

    for name, marked in facts.of(decision.block).built_on:
        if gone(marked):
            return f"it reads `{name}`, which only omni's marked {marked} binds, a conflict"
    for other in decision.relies_on:
        if gone(other):
            return f"it holds only with {other} placed, a conflict"
    lost = _lost_binding(facts, decision, fates)
    return f"{lost}: nothing binds it there" if lost else ""


def _lost_binding(facts: MemberFacts, decision: Decision, fates: dict[str, Decision]) -> str:
    """Why ``decision``'s code reads a local the base's member bound, which upstream took
    out of the member and none of the member's placed blocks binds ("" when none): placed,
    it would read a name nothing binds (docs/design.md, rule 5: what omni's code
    depended on moved or went; the maintainer decides what stands for it)."""
    lost = _lost(facts, decision, fates)
    if not lost:
        return ""
    name = lost[0]
    return (
        f"it reads `{name}`, which the base's method bound and "
        f"{facts.named(facts.dropped_locals[name])} binds nowhere in it (upstream moved or "
        "removed it)"
    )


def _lost(facts: MemberFacts, decision: Decision, fates: dict[str, Decision]) -> list[str]:
    """The locals ``_lost_binding`` is about, sorted."""
    dropped = facts.dropped_locals
    mine = facts.flow_of(decision.code if decision.code is not None else decision.block.code)
    if not dropped or mine is None:
        return []
    bound = {
        name
        for other in fates.values()
        if other is not decision and not other.conflict and not other.follow
        for name in _binds(facts, other)
    }
    return sorted(n for n in mine.reads if n in dropped and n not in bound)


def _carried(facts: MemberFacts, decision: Decision, fates: dict[str, Decision]) -> Decision | None:
    """``decision`` with the base's bindings of the locals it lost (``_lost``) put before
    its code, when upstream took each out of the member and its value is a plain read of
    state upstream still reads (``MemberFacts.carried``): omni's code reads what it read
    in the runner. None when it lost none, or one cannot be carried."""
    if decision.carried or decision.block.kind in (BlockKind.HEADER, BlockKind.SIGNATURE):
        return None  # carried once; nothing goes before a header of omni's
    lost = _lost(facts, decision, fates)
    texts = [facts.carried(name) for name in lost]
    if not texts or any(text is None for text in texts):
        return None
    kept = "".join(t for t in texts if t is not None)
    text = decision.code if decision.code is not None else decision.block.code
    by = facts.named(facts.dropped_locals[lost[0]])
    shown = ", ".join(f"`{t.strip()}`" for t in texts if t is not None)
    note = (
        f"it carries {shown}, which the base's method ran and {by} took out of it: omni's "
        "code reads it"
    )
    reason = f"{decision.reason}; {note}" if decision.reason else note
    return replace(decision, code=kept + text, reason=reason, carried=note)


def _binds(facts: MemberFacts, decision: Decision) -> frozenset[str]:
    """The names ``decision``'s code binds (a signature: its parameters)."""
    text = decision.code if decision.code is not None else decision.block.code
    if decision.block.kind is BlockKind.SIGNATURE:
        return frozenset(parameters(" ".join(text.split())))
    found = facts.flow_of(text)
    return found.writes if found is not None else frozenset()


def _apart(decisions: Sequence[Decision]) -> list[Decision]:
    """A decision that replaces statements holding another decision's place is a conflict:
    the output cannot both replace them and put the other block in them, and which of the
    two holds is the maintainer's call. An edit followed as upstream's code keeps
    upstream's statements and owns none (as in the order rule): it gives them up instead."""
    result = list(decisions)
    for position in range(len(result)):
        outer = result[position]
        slot = outer.slot
        if outer.conflict or slot is None or not slot.span:
            continue
        if outer.block.kind is BlockKind.HEADER:
            continue  # a header edit leaves the body, and the blocks in it, alone
        inside = [i for i, d in enumerate(result) if i != position and _within(d, slot)]
        if not inside:
            continue
        if outer.follow:
            result[position] = replace(outer, slot=Slot(slot.suite, slot.path, slot.index, 0))
            continue
        after = Slot(slot.suite, slot.path, slot.index + slot.span, 0)
        for i in inside:
            if result[i].follow:
                result[i] = replace(result[i], slot=after)
        placed = [result[i] for i in inside if not result[i].follow]
        if not placed:
            continue
        reason = (
            f"it replaces `{short(slot.held()[0].key)}`, where {placed[0].block.id} goes "
            "too: they cannot both hold; place one by hand"
        )
        if outer.reason:
            reason = f"{reason} (alone: {outer.reason})"
        shown = Scored(slot, outer.score, 1.0)
        result[position] = conflict(outer.block, shown, outer.candidates, reason)
    return result


def _within(decision: Decision, slot: Slot) -> bool:
    """Whether ``decision``'s place lies in the statements ``slot`` spans (at its edges
    is beside them, not in them; a conflict's place is where its note goes, before the
    statements it shows)."""
    mine = decision.slot
    if mine is None:
        return False
    if mine.suite is slot.suite:
        if mine.span and not decision.conflict:
            return mine.index < slot.index + slot.span and slot.index < mine.index + mine.span
        return slot.index < mine.index < slot.index + slot.span
    return any(
        inner is mine.suite
        for stmt in slot.held()
        for clause in stmt.clauses
        for _, inner in walk(clause)
    )


def _runnable(
    facts: MemberFacts, decision: Decision, blocks: Sequence[Block], fates: dict[str, Decision]
) -> Decision:
    """A conflict offers only the places where the block's code runs, with the member's
    other ``blocks`` applied as in the runner (``fates``: their decisions); when none does,
    it says why instead."""
    if not decision.conflict or not decision.candidates:
        return decision
    lost = _lost_binding(facts, decision, fates)
    if lost:
        # Upstream binds the name nowhere in the member: no place there binds it.
        why = "" if lost in decision.reason else f"; no place runs: {lost}"
        return replace(decision, candidates=(), reason=f"{decision.reason}{why}")
    kept: list[Scored] = []
    why = ""
    taken = facts.taken_by([b for b in blocks if b is not decision.block])
    for candidate in decision.candidates:
        found = facts.why_not(decision.block, candidate.slot, taken)
        if found:
            why = why or found
        else:
            kept.append(candidate)
    if len(kept) == len(decision.candidates):
        return decision
    if kept:
        return replace(decision, candidates=tuple(kept))
    reason = f"{decision.reason}; no place runs: {why}"
    return replace(decision, candidates=(), reason=reason)


def _rank(ctx: Context) -> tuple[Scored, ...] | Decision:
    """The anchor's ranking: the best three distinct places; a conflict when there is none,
    or when the replaced statements now stand in several bodies, none the block's old one."""
    block = ctx.block
    scored = ctx.facts.ranked
    top = tuple(distinct(scored))[:3]
    path: _Path = (Rule.ANCHOR,)
    if not top:
        found = conflict(block, None, (), "no place in the new method resembles the anchor")
        return replace(found, rules=path)
    exact = [s for s in distinct(scored) if block.anchor.replaced and s.replaced == 1.0]
    if len(exact) > 1 and all(s.parts[1] < PATH_CERTAIN for s in exact):
        # Upstream now has the replaced code in several bodies and none is the old one:
        # the block may belong at each, which is the maintainer's call.
        lines = ", ".join(str(s.slot.line()) for s in exact)
        reason = f"the statements it replaced occur at upstream lines {lines}, none in its old body"
        return replace(conflict(block, exact[0], tuple(exact[:3]), reason), rules=path)
    return top
