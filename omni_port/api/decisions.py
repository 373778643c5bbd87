"""`resolve` and `adopt` through the API: a maintainer's answers, proved and recorded.

``resolve`` loads the workspace `sync` loads, re-decides the block's module with the chosen
place and refuses a place the next sync would not keep; it returns the edited patch set,
which the command writes.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from pathlib import Path

from omni_port.api import resolution
from omni_port.api.author import author
from omni_port.api.inputs import Settings
from omni_port.api.locked import locked_transplants
from omni_port.api.workflows import (
    Loaded,
    SyncRequest,
    load_workspace,
    sticky_upstream,
)
from omni_port.errors import BadInput, OmniPortError
from omni_port.model import (
    Block,
    BlockKind,
    Candidate,
    Code,
    ModulePatches,
    PatchSet,
    Placement,
    Resolution,
    Rule,
    Status,
    Stmt,
    code_digest,
)
from omni_port.patches import edits
from omni_port.patches.patchfile import piece_filename
from omni_port.patches.store import read_patch_set
from omni_port.pyast.syntax import split_full_key
from omni_port.report import candidate_place, shorten, shown

__all__ = [
    "Ask",
    "ResolveRequest",
    "Resolved",
    "Unusable",
    "adopt",
    "author",
    "resolve",
]

#: Asks the maintainer where a block goes, given its candidates: ``#K`` or a line.
Ask = Callable[[tuple[Candidate, ...]], str]


class Unusable(OmniPortError):
    """Flags that do not fit the block or its candidates: a usage error (exit 2), said
    before anything is recorded."""


@dataclass(frozen=True, slots=True)
class ResolveRequest:
    """What `resolve` was asked to record."""

    block_id: str
    #: ``#K`` (candidate K) or an upstream line; None: ask.
    choice: str | None
    #: With a line: how many statements from it the block replaces.
    replacing: int | None
    drop: bool
    why: str
    patches: Path
    #: The upstream spec the conflict was reported against (None: the sticky one).
    upstream: str | None
    generated: Path


@dataclass(frozen=True, slots=True)
class Resolved:
    """A resolution proved on the upstream, and the patch set that records it."""

    patch_set: PatchSet
    block: Block
    record: Resolution
    #: The upstream statements the block replaces at its place.
    held: tuple[Stmt, ...]
    #: The upstream's label.
    label: str
    #: What verify would newly report at that place ("" when nothing).
    problem: str

    def lines(self) -> list[str]:
        """What `resolve` says it recorded: where the block goes and, quoted, every
        upstream statement it replaces there; and the upstream code it deletes, which
        verify reports."""
        block, record, label = self.block, self.record, self.label
        if record.dropped:
            return [f"recorded: {block.id} is dropped on {label}; run `omni-port sync`"]
        body = " > ".join(record.path) or "the method body"
        follows = f"after `{shorten(record.after, 60)}`" if record.after else "first"
        lines = [
            f"recorded: {block.id} goes {follows} in {body}{_replacing(record)}; "
            "run `omni-port sync`"
        ]
        deleted = resolution.deletes(block, self.held)
        if deleted:
            lines.append(
                f"it deletes {deleted}, which the block did not replace in its base: verify "
                "reports it (OP514) until the block's code there is yours (edit it in place, "
                "then `omni-port continue`) or the place changes"
            )
        return lines


def resolve(request: ResolveRequest, settings: Settings, ask: Ask) -> Resolved:
    """Prove the place ``request`` chooses (``ask`` is called when it names none) on the
    workspace `sync` loads; writes nothing. BadInput (OP004, OP005, OP301) for a block that
    cannot take it, Unusable for flags that do not fit."""
    patch_set = read_patch_set(request.patches)
    module, block = edits.find_block(patch_set, request.block_id)
    where = shown(request.patches / piece_filename(module, block))
    if block.kind is BlockKind.SIGNATURE:
        raise BadInput.at(Code.OP004, where, 1, _SIGNATURE_HELP)
    if request.replacing is not None and (request.drop or (request.choice or "").startswith("#")):
        raise Unusable("--replacing goes with --at LINE (a candidate says what it replaces)")
    workspace = _workspace(request, settings)
    label = workspace.upstream.label
    before = resolution.unresolved(workspace, module, block)
    plain = before.placements[block.id]
    if plain.status is not Status.CONFLICT and block.anchor.resolution is None:
        raise BadInput.at(Code.OP005, where, 2, _placed(block, plain, request.generated, label))
    held: tuple[Stmt, ...] = ()
    if request.drop:
        record = _dropped(block, where, request.choice, request.why)
    else:
        member = resolution.member_of(module, block, workspace.upstream)
        chosen = _Chosen(request.choice, request.replacing, where)
        rank, slot = chosen.place(plain.candidates, member, block, ask)
        why = request.why or (
            f"candidate #{rank} on {label}" if rank else f"line {slot.line()} of {label}"
        )
        record = replace(resolution.resolution_at(slot), by=author(), why=why)
        held = slot.held()
    problem = _tried(workspace, module, block, record, before, where)
    edited = edits.resolve(patch_set, block.id, record)
    return Resolved(edited, block, record, held, label, problem)


def adopt(directory: Path, edit_id: str, title: str) -> tuple[PatchSet, str]:
    """The patches of ``directory`` with the implicit edit ``edit_id`` made a titled,
    marked block, and that block's id; writes nothing."""
    return edits.adopt(read_patch_set(directory), edit_id, title)


def _workspace(request: ResolveRequest, settings: Settings) -> Loaded:
    """The workspace `sync` loads, on the upstream the conflict was reported against."""
    config = settings.config
    target = request.generated
    sync = SyncRequest(
        request.patches,
        request.upstream or sticky_upstream(settings, target),
        target,
        config.upstream_class,
        config.history,
        locked_transplants(config, target),
    )
    return load_workspace(sync, settings)


def _tried(
    workspace: Loaded,
    module: ModulePatches,
    block: Block,
    record: Resolution,
    before: resolution.Outcome,
    where: str,
) -> str:
    """What verify would newly report with ``record`` ("" when nothing) when the sync
    takes it; BadInput (OP301, nothing recorded) when it would not hold there, would leave
    the module not compiling (a body emptied), or would make a block it places now a
    conflict."""
    label = workspace.upstream.label
    recorded = replace(block, anchor=replace(block.anchor, resolution=record))
    tried = resolution.outcome(workspace, module, recorded)
    again = tried.placements[block.id]
    if again.status is Status.CONFLICT or Rule.RESOLVED not in again.decided_by:
        reason = again.reason or "sync places it elsewhere"
        message = f"that place would not hold on {label}: {reason}; nothing recorded"
        raise BadInput.at(Code.OP301, where, 1, message)
    broken = [f for f in tried.built.findings if f.code is Code.OP501]
    if broken:
        message = (
            f"that place would not hold on {label}: the module would not compile there "
            f"({broken[0].message}); nothing recorded"
        )
        raise BadInput.at(Code.OP301, where, 1, message)
    taken = resolution.taken_from(before.placements, tried.placements)
    if taken:
        message = (
            f"that place would not hold on {label}: it takes statements that "
            f"{', '.join(taken)} replaces, which sync would make a conflict; nothing recorded"
        )
        raise BadInput.at(Code.OP301, where, 1, message)
    if record.dropped:
        return ""
    return resolution.new_problems(workspace, module, recorded, before, tried)


def _replacing(record: Resolution) -> str:
    """``, replacing 2 statements (`a = f()`; `g(a)`)``, or "" when it replaces none."""
    count = len(record.replaces)
    if not count:
        return ""
    quoted = "; ".join(f"`{shorten(split_full_key(k)[0], 60)}`" for k in record.replaces)
    return f", replacing {count} statement{'s' if count > 1 else ''} ({shorten(quoted, 200)})"


def _dropped(block: Block, where: str, choice: str | None, why: str) -> Resolution:
    """The record that drops ``block`` as obsolete; BadInput (OP005) without a reason or
    with a place as well."""
    if choice is not None:
        raise BadInput.at(Code.OP005, where, 2, "--drop records no place: leave out --at")
    if not why.strip():
        message = "--drop needs --why: the reason this omni edit is obsolete, kept in the lock"
        raise BadInput.at(Code.OP005, where, 2, message)
    return Resolution("", (), (), "", code_digest(block.code), author(), why.strip())


def _placed(block: Block, placed: Placement, generated: Path, label: str) -> str:
    """Why ``block`` cannot be resolved: the sync places it, and where."""
    at = f"{shown(generated / placed.module)}:{placed.start}" if placed.start else "its place"
    rules = ", ".join(rule.value for rule in placed.decided_by) or placed.status.value
    return (
        f"{block.id} is not a conflict: it is placed at {at} on {label} "
        f"(decided by {rules}); nothing recorded"
    )


_SIGNATURE_HELP = (
    "a signature edit has no place to choose: upstream changed the signature it edits. "
    "Write the signature in the conflict region of the generated runner, then run "
    "`omni-port continue`"
)


@dataclass(frozen=True, slots=True)
class _Chosen:
    """What `--at` and `--replacing` say, as given (``choice`` None: ask)."""

    choice: str | None
    replacing: int | None
    #: The patch file, where a refusal points.
    where: str

    def place(
        self, candidates: tuple[Candidate, ...], member: Stmt, block: Block, ask: Ask
    ) -> tuple[int, resolution.Slot]:
        """(candidate rank or 0, the place): ``#K``, or an upstream line (the candidate
        there, else the statement there)."""
        choice = self.choice if self.choice is not None else ask(candidates)
        if choice.startswith("#"):
            rank = int(choice[1:]) if choice[1:].isdigit() else 0
            if not 1 <= rank <= len(candidates):
                raise Unusable(f"--at '{choice}': there are {len(candidates)} candidates")
            return rank, _slot(member, candidates[rank - 1])
        if not choice.isdigit():
            raise Unusable("--at takes '#K' (a candidate) or an upstream line number")
        line = int(choice)
        listed = [
            (n, c)
            for n, c in enumerate(candidates, start=1)
            if c.line == line and self.replacing in (None, c.span)
        ]
        if len(listed) > 1:
            which = "; ".join(f"#{n} {candidate_place(c.line, c.span)}" for n, c in listed)
            raise Unusable(f"--at {line} is {len(listed)} candidates ({which}): give '#K'")
        if listed:
            rank, candidate = listed[0]
            return rank, _slot(member, candidate)
        return 0, self._at_line(member, line, block)

    def _at_line(self, member: Stmt, line: int, block: Block) -> resolution.Slot:
        """The place before the statement at ``line``, replacing ``replacing`` statements;
        without it, those of them the block replaced in its base (a block that replaced
        some and none is there: refused, OP005)."""
        at = resolution.slot_at_line(member, line)
        if at is None:
            raise Unusable(f"no statement of {member.name} starts at upstream line {line}")
        stmts = at.suite.stmts[at.index :]
        if self.replacing is not None:
            if self.replacing > len(stmts):
                raise Unusable(
                    f"--replacing {self.replacing}: {len(stmts)} statements from line {line}"
                )
            return replace(at, span=self.replacing)
        if block.kind not in (BlockKind.REPLACEMENT, BlockKind.DELETION):
            return at
        span = resolution.replaceable(block, at)
        if not span:
            raise BadInput.at(Code.OP005, self.where, 1, _unlike(block, stmts, line))
        return replace(at, span=span)


def _unlike(block: Block, stmts: Sequence[Stmt], line: int) -> str:
    """Why `--at LINE` records nothing for a block that replaced statements: the ones at
    that line are none of them."""
    there = "; ".join(f"`{shorten(s.key, 60)}`" for s in stmts[: len(block.anchor.replaced)])
    replaced = "; ".join(f"`{shorten(split_full_key(k)[0], 60)}`" for k in block.anchor.replaced)
    return (
        f"line {line} holds {there}, none of what {block.id} replaced in its base "
        f"({replaced}): nothing recorded; `--replacing 0` puts the block before it, "
        "`--replacing N` replaces N statements from it (upstream code the block did not "
        "replace is then deleted, which verify reports)"
    )


def _slot(member: Stmt, candidate: Candidate) -> resolution.Slot:
    slot = resolution.slot_of(member, candidate)
    if slot is None:  # the candidate is a line of this member: never expected
        raise Unusable(f"no place at upstream line {candidate.line} of {member.name}")
    return slot
