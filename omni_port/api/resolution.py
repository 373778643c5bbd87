"""What `resolve` reads of the engine, and how a chosen place is proved before it is kept.

A conflict's candidates and the check of a recorded place both come from the real sync of
the block's module, in memory, on the workspace `sync` loads (``api.load_workspace``: the
same upstream with its history, catalog and transplant inputs), so `resolve` numbers
candidates exactly as the sync listed them and refuses a place the next sync would reject.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace

from omni_port.api.run import Given, sync_patches
from omni_port.api.workflows import Loaded
from omni_port.errors import BadInput
from omni_port.gpu import transplant
from omni_port.model import (
    Block,
    Candidate,
    Code,
    Copy,
    ModulePatches,
    PatchSet,
    Placement,
    Resolution,
    Status,
    Stmt,
    Upstream,
)
from omni_port.patches import edits
from omni_port.pyast.syntax import find_member, walk
from omni_port.sources.textio import decode
from omni_port.sync.evidence.places import Slot
from omni_port.sync.locate import resolution_at as _resolution_at
from omni_port.sync.offers import Trial, deletes
from omni_port.sync.splice import Built
from omni_port.verify import conflicts, trials

__all__ = [
    "Outcome",
    "Slot",
    "conflicts",
    "decided",
    "decided_on",
    "deletes",
    "member_of",
    "new_problems",
    "outcome",
    "placements",
    "replaceable",
    "resolution_at",
    "slot_at_line",
    "slot_of",
    "synced_module",
    "taken_from",
    "unresolved",
]


@dataclass(frozen=True, slots=True)
class Outcome:
    """The sync of one module: what became of each of its blocks, and the module written."""

    #: Placements by block id, with the candidates the sync lists.
    placements: dict[str, Placement]
    built: Built


def decided(workspace: Loaded, module: ModulePatches, block: Block) -> dict[str, Placement]:
    """The sync's outcome for the blocks of ``block``'s module, ``block`` as given (a
    resolution included), on the loaded workspace: placements by id, with the candidates
    sync lists."""
    return outcome(workspace, module, block).placements


def outcome(workspace: Loaded, module: ModulePatches, block: Block) -> Outcome:
    """``decided``, with the module as that sync writes it."""
    patches = _with(workspace.patch_set, module, block)
    return synced_module(
        workspace.upstream, patches, module.name, workspace.transplants, workspace.locations
    )


def decided_on(
    upstream: Upstream,
    patches: PatchSet,
    name: str,
    transplants: Sequence[transplant.Extra] = (),
    locations: Mapping[str, str] | None = None,
) -> dict[str, Placement]:
    """``decided`` on an upstream given as a value (with its history, if any): the module
    called ``name`` of ``patches``, decided as the sync of the whole patch set decides it
    (what the other runners' marked blocks replace is omni's in this one too)."""
    return synced_module(upstream, patches, name, transplants, locations).placements


def synced_module(
    upstream: Upstream,
    patches: PatchSet,
    name: str,
    transplants: Sequence[transplant.Extra] = (),
    locations: Mapping[str, str] | None = None,
) -> Outcome:
    """The sync of the module called ``name`` of ``patches`` (``decided_on``)."""
    given = Given(None, transplants, locations or {}, frozenset({name}))
    synced = sync_patches(patches, upstream, given=given)
    rows = tuple(p for p in synced.placements if p.module == name)
    text = decode(synced.result.files[name], name).text
    findings = tuple(f for f in synced.findings if f.path == name)
    return Outcome({p.block_id: p for p in rows}, Built(name, text, rows, findings))


def new_problems(
    workspace: Loaded, module: ModulePatches, block: Block, now: Outcome, tried: Outcome
) -> str:
    """What verify's checks of where blocks stand would report of the module with
    ``block`` (resolved) as ``tried`` is, and not as ``now`` is ("" when nothing): the
    judge a sync asks of each candidate it offers."""
    trial = Trial(module, workspace.upstream, block, now.built, tried.built)
    return trials.Judge()(trial)


def _with(patches: PatchSet, module: ModulePatches, block: Block) -> PatchSet:
    """``patches`` with ``block`` (its resolution as given) in ``module``."""
    pieces = tuple(block if p.id == block.id else p for p in module.pieces)
    changed = replace(module, pieces=pieces)
    return PatchSet(tuple(changed if m.name == module.name else m for m in patches.modules))


def placements(workspace: Loaded) -> dict[str, Placement]:
    """Every block's outcome in the sync of the whole workspace, by block id."""
    given = Given(None, workspace.transplants, workspace.locations)
    synced = sync_patches(workspace.patch_set, workspace.upstream, given=given)
    return {p.block_id: p for p in synced.placements}


def unresolved(workspace: Loaded, module: ModulePatches, block: Block) -> Outcome:
    """The sync of ``block``'s module without its recorded resolution: its candidates,
    numbered as ``--at #K`` takes them."""
    return outcome(workspace, module, edits.unresolved(block))


def taken_from(before: Mapping[str, Placement], after: Mapping[str, Placement]) -> list[str]:
    """Blocks placed in ``before`` that are conflicts in ``after``: a resolution that took
    their statements (two blocks never replace one statement) would make them conflicts."""
    return [
        ident
        for ident, placed in before.items()
        if placed.status is not Status.CONFLICT
        and ident in after
        and after[ident].status is Status.CONFLICT
    ]


def resolution_at(slot: Slot) -> Resolution:
    """The record that puts a block at ``slot`` again on every later sync: the statement
    it follows in that body and the upstream statements it replaces there."""
    return _resolution_at(slot)


def member_of(module: ModulePatches, block: Block, upstream: Upstream) -> Stmt:
    """The upstream method ``block``'s copy comes from; BadInput when it is gone."""
    copy = next(
        (
            p
            for p in module.pieces
            if isinstance(p, Copy) and (p.owner, p.name) == (block.owner, block.member)
        ),
        None,
    )
    if copy is None:
        raise BadInput.at(Code.OP004, block.id, 0, "the block belongs to no copied member")
    owner = (
        upstream.class_name if copy.upstream_owner and upstream.class_name else copy.upstream_owner
    )
    member = find_member(upstream.tree, owner, copy.upstream_name)
    if member is None:
        raise BadInput.at(
            Code.OP302, block.id, 0, f"{owner}.{copy.upstream_name} is not in {upstream.label}"
        )
    return member


def slot_of(member: Stmt, candidate: Candidate) -> Slot | None:
    """The place a listed candidate names: its body, the statement at its line (the end
    of the body past the last one), and the statements it replaces from there."""
    for path, suite in walk(member.clauses[0]):
        if path != candidate.path:
            continue
        for index, stmt in enumerate(suite.stmts):
            if stmt.start == candidate.line:
                return Slot(suite, path, index, candidate.span)
        if suite.stmts and candidate.line == suite.stmts[-1].full_end + 1:
            return Slot(suite, path, len(suite.stmts), 0)
    return None


def slot_at_line(member: Stmt, line: int) -> Slot | None:
    """The place before the statement starting at ``line`` (its leading comments
    included) anywhere in the method, replacing nothing; None when none starts there."""
    for path, suite in walk(member.clauses[0]):
        for index, stmt in enumerate(suite.stmts):
            if stmt.lead <= line <= stmt.start:
                return Slot(suite, path, index, 0)
    return None


def replaceable(block: Block, slot: Slot) -> int:
    """How many statements from ``slot`` on ``block`` replaced in its base (``deletes``
    finds none of them deleted), at most as many as it replaced: what it may replace
    there without deleting upstream code it never replaced."""
    stmts = slot.suite.stmts[slot.index :]
    count = 0
    while count < min(len(stmts), len(block.anchor.replaced)):
        if deletes(block, stmts[: count + 1]):
            break
        count += 1
    return count
