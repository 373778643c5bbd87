"""The counterpart rule: omni's GPU runner as a second witness of a block's place.

The NPU runners carry the omni changes that the GPU runners make to vLLM's runner, so a
block often has a counterpart there, with an anchor of its own (``Block.counterpart``).
The two records are written independently. Where they point at different places in the
new upstream method, the difference matters only if upstream code between the two places
reads a name the block binds: that code computes something else at each place, and which
one omni means is the maintainers' call, never a guess. Where they agree on a place the
NPU anchor alone found weak or tied, two records agree, and that decides it.
"""

from __future__ import annotations

from collections.abc import Sequence

from omni_port.model import Block, Rule
from omni_port.sync.context import (
    Answer,
    Check,
    Context,
    Decision,
    Dispute,
    Proposal,
    Tie,
    conflict,
)
from omni_port.sync.evidence.code import shorten
from omni_port.sync.evidence.places import ACCEPT, WEAK_ACCEPT, Index, Scored, Slot
from omni_port.sync.facts import Flows, Places, Records, Stmt
from omni_port.sync.rule import Silent


class Counterpart(Silent):
    name = Rule.COUNTERPART
    reads = (Places, Flows, Records)

    def second(self, ctx: Context) -> Answer | None:
        """The weak best place, or another candidate, where the GPU runner has the code."""
        seconded = _seconded(ctx.places, ctx.block, ctx.top)
        if seconded is None:
            return None
        best = ctx.top[0]
        reason = (
            f"best place scores {best.score:.2f}, and omni's GPU runner has the same code there"
        )
        return Proposal(seconded, reason)

    def break_tie(self, ctx: Context, tie: Tie) -> Answer | None:
        seconded = _seconded(ctx.places, ctx.block, (tie.first, tie.second))
        if seconded is None:
            return None
        return Proposal(seconded, "omni's GPU runner has the same code at one of the two places")

    def check(self, ctx: Context, check: Check) -> Decision | Dispute | None:
        """The GPU runner has the block elsewhere, across code that reads what it binds: a
        conflict at an upgrade, a note onto the patches' own base (the runner is reproduced)."""
        chosen = check.proposal.chosen
        disputed = _dispute(ctx, chosen.slot)
        if disputed is None or not ctx.records.upgrade:
            return disputed
        # The two records' places first: one of them is the maintainers' answer.
        theirs = disputed.theirs
        keys = (chosen.slot.key(), theirs.slot.key())
        others = [s for s in ctx.top if s.slot.key() not in keys]
        return conflict(ctx.block, chosen, (chosen, theirs, *others[:1]), disputed.why)


def _seconded(places: Places, block: Block, top: Sequence[Scored]) -> Scored | None:
    """The candidate at the counterpart's place, when it is a weak or tied one of ``top``
    and the block replaces nothing that changed: two records written apart agree there."""
    theirs = places.counterpart(block, ACCEPT)
    if theirs is None:
        return None
    for scored in top:
        if scored.slot.key() == theirs.slot.key() and scored.replaced == 1.0:
            return scored if scored.score >= WEAK_ACCEPT else None
    return None


#: Least score of the counterpart's place for a dispute: a dispute only ever turns a
#: placement into a conflict, so weaker evidence may raise one than may decide a place.
DISPUTE = 0.5


def _dispute(ctx: Context, slot: Slot) -> Dispute | None:
    """Whether the counterpart puts the block elsewhere, with upstream code between the two
    places that reads a name the block binds: that code computes something else with the
    block on one side of it than on the other.

    Only this kind of relation counts. Code between that binds a name the block reads
    either rebinds it (the block reads the same thing under either value, as often as
    not a copy) or introduces it (then the other place cannot work at all)."""
    theirs = ctx.places.counterpart(ctx.block, DISPUTE)
    mine = ctx.flows.flow(ctx.block)
    if theirs is None or mine is None:
        return None
    other = ctx.block.counterpart
    known = frozenset((*other.before, *other.after)) if other is not None else frozenset()
    for stmt in _between(ctx.places.index, slot, theirs.slot, known):
        read = sorted(mine.writes & stmt.reads)
        if read:
            side = "before" if theirs.slot.line() < slot.line() else "after"
            names = ", ".join(f"`{name}`" for name in read[:3])
            why = (
                f"omni's GPU runner has it {side} `{shorten(stmt.key, 60)}` (upstream line "
                f"{stmt.start}), which reads {names} that the block binds"
            )
            return Dispute(theirs, why)
    return None


def _between(index: Index, mine: Slot, theirs: Slot, known: frozenset[str]) -> Sequence[Stmt]:
    """Simple statements of the method between the two places, in order (empty when the
    places coincide or the counterpart's lies inside the statements the block replaces).

    Statements in ``known`` (the counterpart's neighbours), or under them, are left out:
    the GPU runner has them too, on the other side of the block, so the NPU copy's order
    is a choice made with both in view, not a drift."""
    first = mine.line()
    last = mine.suite.stmts[mine.index + mine.span - 1].full_end + 1 if mine.span else first
    there = theirs.line()
    if first <= there <= last:
        return ()
    low, high = (there, first) if there < first else (last, there)
    return [
        stmt
        for path, suite in index.suites
        if not any(_defines(header) or header in known for header in path)
        for stmt in suite.stmts
        if not stmt.clauses and low <= stmt.start and stmt.full_end < high and stmt.key not in known
    ]


def _defines(header: str) -> bool:
    """A nested def's body runs when called, not where it stands."""
    return header.startswith(("def ", "async def ", "@", "class "))


RULE = Counterpart()
