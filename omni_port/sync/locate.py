"""The placement engine: where each block of a copied member goes in the new upstream method.

The engine walks a fixed path of steps for each block, reading the block's facts
(``sync.facts``). At some steps it asks a question of the rules in ``rules.RULES`` order,
their answers combined as the question declares (``sync.rule.Combine``: most often the
first answer has it); the others are its own:

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
5. Every place about to be taken is ``check``-ed by the rules: a conflict, another
   decision (upstream has the code already), or a note instead.

Then the decisions of a member are ``settle``-d together, and ``revise``-d by the member
rules (``rules.MEMBER_RULES``: an upstream change is followed whole, no call runs more
often than in both the new upstream and the old runner, a block carries the base's
bindings it lost, coupled code stands or conflicts together, no two blocks hold the same
statements) until none changes a decision. Once every copied member of the module is
decided, the module rules (``rules.MODULE_RULES``: an upstream change is followed whole
across the methods) ``revise_module`` the decisions of all of them together, each member
they change revised again by the member rules, until neither changes one. Last, report
steps (``sync.report_steps``) say what the decisions are about, deciding nothing.

The engine stamps each decision with the rules whose answers it rests on, in the order
it asked them: ``anchor`` when the anchor's ranking chose the place, ``stepwise`` when
the walk did, the rule that answered each question after that, and ``upstream-history``
where the code was merged against an upstream release other than the base. Nothing here
guesses: every doubt about a place is a conflict, with its candidates ranked.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, replace

from omni_port.model import Block, Rule
from omni_port.sync import report_steps
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
from omni_port.sync.evidence.code import new_code_around
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
from omni_port.sync.facts import MemberFacts
from omni_port.sync.rule import PlacementRule, each, each_until_still, first, first_placed
from omni_port.sync.rules import RULES

__all__ = [
    "ACCEPT",
    "Decision",
    "Member",
    "Scored",
    "Slot",
    "decide",
    "resolution_at",
    "signature",
]

#: The path of a decision so far: the rules it rests on before the next answer.
_Path = tuple[Rule, ...]


#: One copied member and the blocks to decide in it.
Member = tuple[MemberFacts, Sequence[Block]]


def decide(
    members: Sequence[Member], rules: Sequence[PlacementRule] = RULES
) -> list[list[Decision]]:
    """A decision for every block of the copied members of one module, each member's in
    block order, asking ``rules`` (all of them by default; a golden case asks one rule
    alone), as the report says them."""
    engine = _Engine(tuple(rules))
    decided = engine.module([f for f, _ in members], [engine.member(*m) for m in members])
    return [
        report_steps.reported(facts, blocks, decisions)
        for (facts, blocks), decisions in zip(members, decided, strict=True)
    ]


def signature(facts: MemberFacts, block: Block, rules: Sequence[PlacementRule] = RULES) -> Decision:
    """A signature edit: carried when upstream kept the old signature, merged when both
    changed different parameters, a conflict otherwise."""
    return _Engine(tuple(rules)).signature(facts, block)


def _stamped(decision: Decision, path: _Path, name: Rule) -> Decision:
    """``decision`` as the answer of rule ``name`` on ``path``: a conflict keeps the path
    (the answers that led to it), a placement rests on the rule too."""
    stamps = path if decision.conflict else tuple(dict.fromkeys((*path, name)))
    return replace(decision, rules=stamps)


def _revision(old: Decision, new: Decision, name: Rule) -> Decision:
    """``new``, member rule ``name``'s revision of ``old``: it rests on the rules of
    ``old`` and on ``name`` (and on upstream history when it newly follows a release); a
    conflict names the rule after the answers that led to it. A note (only the reason
    changed) decides nothing: the decision rests on what it rested on."""
    if new is old:
        return old
    stamps = tuple(dict.fromkeys((*old.rules, name)))
    if new.conflict:
        return replace(new, rules=stamps)
    if replace(new, reason=old.reason, rules=old.rules) == old:
        return replace(new, rules=old.rules)
    history = (Rule.UPSTREAM_HISTORY,) if new.release and not old.release else ()
    return replace(new, rules=tuple(dict.fromkeys((*stamps, *history))))


@dataclass(frozen=True, slots=True)
class _Engine:
    """The path of steps, asking one set of rules."""

    rules: tuple[PlacementRule, ...]

    # --- a member -----------------------------------------------------------------------------

    def member(self, facts: MemberFacts, blocks: Sequence[Block]) -> list[Decision]:
        decisions = [self.block(Context(facts, block)) for block in blocks]
        decisions = each(
            self.rules,
            decisions,
            lambda rule, now: rule.settle(facts, now),
            lambda old, new, name: self._settled(facts, old, new, name),
        )
        return self._revised(facts, decisions)

    def _revised(self, facts: MemberFacts, decisions: list[Decision]) -> list[Decision]:
        """The member's decisions as the member rules revise them (``revise``)."""
        return each_until_still(
            self.rules,
            decisions,
            lambda rule, now: rule.revise(facts, now),
            _revision,
            repr(facts.member.key[:60]),
        )

    def module(
        self, facts: Sequence[MemberFacts], decided: list[list[Decision]]
    ) -> list[list[Decision]]:
        """The members' decisions (``decided``, by member) as the module rules revise them
        together (``revise_module``), each member they change revised again by the member
        rules, until neither changes a decision."""
        owners = [f for f, decisions in zip(facts, decided, strict=True) for _ in decisions]
        while True:
            flat = [d for decisions in decided for d in decisions]
            revised = each_until_still(
                self.rules,
                flat,
                lambda rule, now: rule.revise_module(owners, now),
                _revision,
                "the module",
            )
            if all(n is o for o, n in zip(flat, revised, strict=True)):
                return decided
            again: list[list[Decision]] = []
            for fact, decisions in zip(facts, decided, strict=True):
                mine, revised = revised[: len(decisions)], revised[len(decisions) :]
                changed = any(n is not o for o, n in zip(decisions, mine, strict=True))
                again.append(self._revised(fact, mine) if changed else decisions)
            decided = again

    def _settled(self, facts: MemberFacts, old: Decision, new: Settled, name: Rule) -> Decision:
        """A decision as rule ``name`` settled it: withdrawn ones decided again without
        upstream history's evidence, changed ones stamped."""
        if new is old:
            return old
        if isinstance(new, Withdrawn):
            kept = self.block(Context(facts.without_history(), new.decision.block))
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
        ctx = Context(facts, block)
        signed = first(self.rules, lambda rule: rule.sign(ctx))
        if signed is not None:
            return _stamped(signed[1], (), signed[0])
        return Decision(block, None, 0.0, True, (), "the signature changed upstream")

    # --- a block ------------------------------------------------------------------------------

    def block(self, ctx: Context) -> Decision:
        early = first(self.rules, lambda rule: rule.decide(ctx))
        if early is not None:
            return _stamped(early[1], (), early[0])
        ranked = _rank(ctx)
        if isinstance(ranked, Decision):
            return ranked
        return self._placed(replace(ctx, top=ranked))

    def _placed(self, ctx: Context) -> Decision:
        """The decision from the anchor's candidates and the evidence beyond it."""
        narrowed: Narrowed | None = None
        path: _Path = (Rule.ANCHOR,)
        found = first(self.rules, lambda rule: rule.narrow(ctx))
        if found is not None:
            name, narrowed = found
            ctx = replace(ctx, top=narrowed.top)
            if narrowed.decisive:
                path = tuple(dict.fromkeys((Rule.ANCHOR, name)))
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
        seconded: tuple[Rule, Answer] | None = first(self.rules, lambda rule: rule.second(ctx))
        if seconded is not None:
            return self._taken(ctx, seconded[1], path, seconded[0])
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
        walked = ctx.history.walked(ctx.block) if ctx.top else None
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
        steps = ", ".join(ctx.history.named(v) for v in walked.via) or "every release on the way"
        why = f"followed step by step through {steps}"
        return replace(decision, reason=f"{why}; {decision.reason}" if decision.reason else why)

    def _on_base(
        self, ctx: Context, best: Scored, clear: bool, narrowed: Narrowed | None, path: _Path
    ) -> Decision:
        """The decision at ``best`` once it is known which release the edit was written
        against (the base unless upstream history shows an older one)."""
        rebase = ctx.history.rebase(ctx.block)
        block = ctx.block
        # An edit holding an older revision's code is written against that revision too.
        older = rebase is not None or ctx.history.older_code(block) is not None
        if block.anchor.replaced and (best.replaced < 1.0 or older):
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
        """The block's replaced statements changed upstream: what goes at ``best``
        (``Combine.FIRST_PLACED``), a conflict when no rule answers."""
        reason = "the statements it replaced changed upstream"
        found = first_placed(
            self.rules,
            lambda rule: rule.reconcile(ctx, best, rebase),
            lambda answer, name: self._taken(ctx, answer, path, name),
        )
        return found or replace(conflict(ctx.block, best, ctx.top, reason), rules=path)

    def _tie(self, ctx: Context) -> Decision:
        """Two places score alike: a rule decides between them, or it is a conflict."""
        top = ctx.top
        ambiguous = (
            f"ambiguous: places at upstream lines {top[0].slot.line()} and "
            f"{top[1].slot.line()} score {top[0].score:.2f} and {top[1].score:.2f}"
        )
        left, right = sorted(top[:2], key=lambda s: s.slot.index)
        same_body = left.slot.suite is right.slot.suite
        if not same_body or left.slot.span or right.slot.span:
            return replace(conflict(ctx.block, top[0], top, ambiguous), tied=True)
        between = left.slot.suite.stmts[left.slot.index : right.slot.index]
        tie = Tie(left, right, tuple(between), ambiguous)
        broken: tuple[Rule, Answer] | None = first(
            self.rules, lambda rule: rule.break_tie(ctx, tie)
        )
        if broken is not None:
            return self._taken(ctx, broken[1], (), broken[0])
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
        decision: Decision | None = None
        found: tuple[Rule, Decision | Dispute] | None = first(
            self.rules, lambda rule: rule.check(ctx, check)
        )
        # A dispute is a check's answer too (``Combine.FIRST``): the place is taken, with it.
        dispute = found[1] if found is not None and isinstance(found[1], Dispute) else None
        if found is not None and isinstance(found[1], Decision):
            decision = _stamped(found[1], stamps, found[0])
            if decision.conflict:  # the answers that led to it, then the check's rule
                decision = replace(decision, rules=tuple(dict.fromkeys((*path, found[0]))))
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


def _rank(ctx: Context) -> tuple[Scored, ...] | Decision:
    """The anchor's ranking: the best three distinct places; a conflict when there is none,
    or when the replaced statements now stand in several bodies, none the block's old one."""
    block = ctx.block
    scored = ctx.places.ranked(ctx.block)
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
