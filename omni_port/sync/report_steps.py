"""The report steps after the engine decided a member: what its decisions say, never where a
block goes.

Run on the decisions the rules made (``locate.decide``), before the offers step tries a
conflict's candidates (``offers``):

- ``runnable``: a conflict lists only the places where the block's code runs, with the
  member's other blocks applied as in the runner; when none does, it says why instead;
- ``named``: a conflict about, or omni's code winning over, statements upstream changed
  names the upstream change that made the edit (docs/design.md rule 6);
- ``located``: a place the block's catalog Location line rules out names the line (the
  catalog rule only narrows the candidates; a place another rule took may still break it).

Nothing here changes a place, a code, a status, or the rules a decision rests on.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace

from omni_port.model import Block
from omni_port.sync.context import Decision
from omni_port.sync.evidence.bindings import lost_binding
from omni_port.sync.evidence.catalog import allows
from omni_port.sync.evidence.places import Scored
from omni_port.sync.facts import MemberFacts


def reported(
    facts: MemberFacts, blocks: Sequence[Block], decisions: Sequence[Decision]
) -> list[Decision]:
    """The decisions of ``blocks`` as the report says them (see the module docstring)."""
    return [located(facts, named(facts, runnable(facts, d, blocks, decisions))) for d in decisions]


def runnable(
    facts: MemberFacts, decision: Decision, blocks: Sequence[Block], decisions: Sequence[Decision]
) -> Decision:
    """A conflict offers only the places where the block's code runs, with the member's
    other ``blocks`` applied as in the runner (``decisions``: the member's); when none
    does, it says why instead."""
    if not decision.conflict or not decision.candidates:
        return decision
    lost = lost_binding(facts.flows, facts.history, decision, decisions)
    if lost:
        # Upstream binds the name nowhere in the member: no place there binds it.
        why = "" if lost in decision.reason else f"; no place runs: {lost}"
        return replace(decision, candidates=(), reason=f"{decision.reason}{why}")
    kept: list[Scored] = []
    why = ""
    taken = facts.places.taken_by([b for b in blocks if b is not decision.block])
    for candidate in decision.candidates:
        found = facts.flows.why_not(decision.block, candidate.slot, taken)
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


def named(facts: MemberFacts, decision: Decision) -> Decision:
    """A conflict about, or omni's code winning over, statements upstream changed names the
    upstream change that made the edit (docs/design.md rule 6)."""
    block = decision.block
    by = facts.history.changed_by(block) if block.anchor.replaced else ""
    if not by:
        # Nothing it replaced changed (an insertion replaces nothing): the change a
        # conflict is about is the one that changed its place.
        moved = facts.history.place_changed_by(block) if decision.conflict else ""
        if not moved:
            return decision
        reason = f"{decision.reason} (upstream changed its place in {moved})"
        return replace(decision, reason=reason)
    if decision.conflict:
        what = "upstream changed its place" if facts.history.moved_only(block) else ""
        what = what or "what it replaced changed"
        return replace(decision, reason=f"{decision.reason} ({what} in {by})")
    if decision.review is not None and not decision.conflict:
        return replace(decision, review=replace(decision.review, by=by))
    return decision


def located(facts: MemberFacts, decision: Decision) -> Decision:
    """A block placed where its catalog Location line (stale or not) says it does not go
    names the line: the block or the line is wrong, and the maintainer says which."""
    constraint = facts.records.location(decision.block)
    if decision.conflict or decision.slot is None or constraint is None:
        return decision
    if allows(constraint, decision.slot, facts.member) is not False:
        return decision
    return replace(decision, breaks_location=constraint.text)
