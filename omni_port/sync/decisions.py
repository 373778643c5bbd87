"""Decide every copied member of a runner module: the engine's decisions (``locate``), by
copy, in the order their edits apply in; ``splice`` writes them out."""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass

from omni_port.model import Block, BlockKind, Copy, ModulePatches, Piece, Stmt, Upstream
from omni_port.pyast.fields import Fields
from omni_port.sync import locate
from omni_port.sync.context import Decision
from omni_port.sync.evidence.places import Slot
from omni_port.sync.facts import Declared, MemberFacts, ModuleFacts
from omni_port.sync.rule import PlacementRule
from omni_port.sync.rules import RULES


@dataclass(frozen=True, slots=True)
class Copied:
    """One copied member, decided: the decisions of its blocks, statements first (in block
    order), then signatures, the order their edits apply in."""

    copy: Copy
    blocks: tuple[Block, ...]
    #: The member's facts; None when the upstream member vanished.
    facts: MemberFacts | None
    decisions: tuple[Decision, ...] = ()


@dataclass(frozen=True, slots=True)
class Decided:
    """Every copied member of a module decided: what ``assemble`` writes out. A report
    step (``offers``) may change what a conflict says before it is written."""

    module: ModulePatches
    upstream: Upstream
    rules: tuple[PlacementRule, ...]
    #: The decided copies, by copy id.
    copies: Mapping[str, Copied]


def decide(
    module: ModulePatches,
    upstream: Upstream,
    locations: Mapping[str, str] | None = None,
    rules: Sequence[PlacementRule] = RULES,
    declared: Declared | None = None,
    fields: Fields = (),
) -> Decided:
    """Where every block of ``module`` goes in the new upstream.

    ``locations`` are the catalog's ``Location:`` lines by block id (constraints);
    ``rules`` the placement rules the engine asks (all of them, but in a golden case that
    asks one rule alone); ``declared`` what the patch set's marked blocks replace;
    ``fields`` the records the output defines (``pipeline.sync`` reads them).
    """
    known = ModuleFacts.build(module, upstream, locations, declared, fields)
    copied = [
        (piece, tuple(blocks), known.member_facts(piece, blocks))
        for piece, blocks in grouped(module.pieces)
        if isinstance(piece, Copy)
    ]
    copies = {c.copy.id: c for c in decide_copies(copied, rules)}
    return Decided(module, upstream, tuple(rules), copies)


#: A copied member to decide: the copy, its blocks, and its facts (None when it vanished).
ToDecide = tuple[Copy, tuple[Block, ...], MemberFacts | None]


def decide_copies(
    copied: Sequence[ToDecide], rules: Sequence[PlacementRule] = RULES
) -> list[Copied]:
    """The decisions of each copy's blocks on its facts, the copies decided together (the
    module rules weigh them all): none for a copy that vanished."""
    present = [(facts, _statements(blocks)) for _, blocks, facts in copied if facts is not None]
    decided = iter(locate.decide(present, rules))
    found = []
    for copy, blocks, facts in copied:
        if facts is None:
            found.append(Copied(copy, blocks, None))
            continue
        statements = [_with_fallback(d, facts.member) for d in next(decided)]
        signatures = [
            locate.signature(facts, b, rules) for b in blocks if b.kind is BlockKind.SIGNATURE
        ]
        found.append(Copied(copy, blocks, facts, (*statements, *signatures)))
    return found


def _statements(blocks: Sequence[Block]) -> list[Block]:
    return [b for b in blocks if b.kind is not BlockKind.SIGNATURE]


def decide_copy(
    copy: Copy,
    blocks: tuple[Block, ...],
    facts: MemberFacts | None,
    rules: Sequence[PlacementRule] = RULES,
) -> Copied:
    """The decisions of ``copy``'s ``blocks`` on ``facts`` (none when it vanished), the
    copy decided alone."""
    return decide_copies([(copy, blocks, facts)], rules)[0]


def grouped(pieces: Sequence[Piece]) -> Iterator[tuple[Piece, list[Block]]]:
    """Each non-block piece with the blocks of the copy it is (blocks follow their copy)."""
    current: tuple[Piece, list[Block]] | None = None
    for piece in pieces:
        if isinstance(piece, Block):
            if current is not None and isinstance(current[0], Copy):
                current[1].append(piece)
                continue
            raise ValueError(f"block {piece.id} does not follow its copied member")
        if current is not None:
            yield current
        current = (piece, [])
    if current is not None:
        yield current


def _with_fallback(decision: Decision, member: Stmt) -> Decision:
    """A conflict with no candidate at all is shown at the end of the method body."""
    if decision.slot is not None:
        return decision
    body = member.clauses[0]
    slot = Slot(body, (), len(body.stmts))
    return Decision(
        decision.block, slot, decision.score, True, decision.candidates, decision.reason
    )
