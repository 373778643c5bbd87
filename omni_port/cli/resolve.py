"""The `resolve` and `adopt` commands: a maintainer's answers, recorded in the patches."""

from __future__ import annotations

import sys
from collections.abc import Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

import click

from omni_port import api
from omni_port.api import resolution
from omni_port.api.workflows import Loaded
from omni_port.cli import (
    Options,
    generated_option,
    handle_errors,
    in_workspace,
    patches_option,
    summary,
)
from omni_port.cli.author import author
from omni_port.cli.files import publish, save_patches
from omni_port.cli.sync import sticky_upstream
from omni_port.errors import BadInput
from omni_port.model import (
    Block,
    BlockKind,
    Candidate,
    Code,
    ModulePatches,
    Placement,
    Resolution,
    Rule,
    Status,
    Stmt,
    code_digest,
)
from omni_port.patches import edits, lockfile
from omni_port.patches.patchfile import piece_filename
from omni_port.patches.store import read_patch_set
from omni_port.pyast.syntax import split_full_key
from omni_port.report import candidate_place, shorten, shown


@dataclass(frozen=True, slots=True)
class ResolveFlags:
    """The flags of `resolve`, as given."""

    block_id: str
    choice: str | None
    replacing: int | None
    drop: bool
    why: str
    patches_dir: Path | None
    upstream: str | None
    generated: Path | None


@click.command("resolve")
@click.argument("block_id")
@click.option(
    "--at", "choice", help="Where it goes: `#K` for candidate K, or an upstream line number."
)
@click.option(
    "--replacing",
    type=click.IntRange(min=0),
    metavar="N",
    help="With --at LINE: replace the N statements from that line (0: put the block before "
    "it). Without it, a block that replaced statements in its base replaces only those "
    "there; upstream code it did not replace is deleted, and verify reports it (OP514).",
)
@click.option(
    "--drop",
    is_flag=True,
    help="Record that this omni edit is obsolete on this upstream: nothing of it is "
    "generated (needs --why; not with --at).",
)
@click.option(
    "--why",
    default="",
    help="Why this place, recorded with the resolution (default: which candidate of which "
    "upstream). Who recorded it is git's author identity.",
)
@patches_option("Patches directory (default: `patches`).")
@click.option(
    "--upstream",
    help="Upstream the conflict was reported against (default: the last sync's, from the "
    "lock, as `sync` takes it).",
)
@generated_option("Generated directory whose lock names the last sync's upstream.")
@click.pass_obj
@handle_errors
@in_workspace(writes=True)
def resolve_command(options: Options, /, **given: Any) -> None:
    """Record where a conflicting block goes, so that every later sync places it there.

    Like git rerere: the choice is written into the block's patch file (visible in its
    diff) as the body, the statement to follow and the statements to replace, with who
    recorded it and why. Candidates are those the sync of the block's module lists, on the
    same upstream, history and catalog, numbered the same: only places that work (the sync
    tried each as this command records it, and verify's checks of the method with it).
    `--at LINE` puts the block before the statement at that line, replacing there only
    statements it replaced in its base (none of those there: refused, unless
    `--replacing N` says how many to replace). The chosen place is tried by that sync
    before it is kept. A block that is no conflict there (sync placed it), a place that
    sync would not take, and a signature edit are refused, exit 2. The code of a conflict
    (a signature's included) is resolved by editing the conflict region in the generated
    runner, then `omni-port continue`.
    """
    flags = ResolveFlags(**given)
    config = options.config
    directory = flags.patches_dir or config.path(config.patches)
    patch_set = read_patch_set(directory)
    module, block = edits.find_block(patch_set, flags.block_id)
    where = shown(directory / piece_filename(module, block))
    if block.kind is BlockKind.SIGNATURE:
        raise BadInput.at(Code.OP004, where, 1, _SIGNATURE_HELP)
    if flags.replacing is not None and (flags.drop or (flags.choice or "").startswith("#")):
        raise click.UsageError(
            "--replacing goes with --at LINE (a candidate says what it replaces)"
        )
    workspace = _workspace(options, flags, directory)
    label = workspace.upstream.label
    before = resolution.unresolved(workspace, module, block)
    plain = before.placements[block.id]
    if plain.status is not Status.CONFLICT and block.anchor.resolution is None:
        target = flags.generated or config.path(config.generated)
        raise BadInput.at(Code.OP005, where, 2, _placed(block, plain, target, label))
    held: tuple[Stmt, ...] = ()
    if flags.drop:
        record = _dropped(block, where, flags.choice, flags.why)
    else:
        member = resolution.member_of(module, block, workspace.upstream)
        chosen = _Chosen(flags.choice, flags.replacing, where)
        rank, slot = chosen.place(plain.candidates, member, block)
        why = flags.why or (
            f"candidate #{rank} on {label}" if rank else f"line {slot.line()} of {label}"
        )
        record = replace(resolution.resolution_at(slot), by=author(), why=why)
        held = slot.held()
    problem = _tried(workspace, module, block, record, before, where)
    save_patches(directory, edits.resolve(patch_set, block.id, record))
    publish()
    for line in _recorded(block, record, held, label):
        summary(options, line)
    if problem:
        summary(
            options,
            f"at that place verify will report {problem} (fix the code there in place, then "
            "`omni-port continue`)",
        )


def _workspace(options: Options, flags: ResolveFlags, directory: Path) -> Loaded:
    """The workspace `sync` loads, on the upstream the conflict was reported against."""
    config = options.config
    target = flags.generated or config.path(config.generated)
    request = api.SyncRequest(
        directory,
        flags.upstream or sticky_upstream(options, target),
        target,
        config.upstream_class,
        config.history,
        transplants_of(options, target),
    )
    return api.workflows.load_workspace(request, options.settings)


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


def _recorded(block: Block, record: Resolution, held: Sequence[Stmt], label: str) -> list[str]:
    """What `resolve` says it recorded: where the block goes and, quoted, every upstream
    statement it replaces there (``held``); and the upstream code it deletes, which
    verify reports."""
    if record.dropped:
        return [f"recorded: {block.id} is dropped on {label}; run `omni-port sync`"]
    body = " > ".join(record.path) or "the method body"
    follows = f"after `{shorten(record.after, 60)}`" if record.after else "first"
    lines = [
        f"recorded: {block.id} goes {follows} in {body}{_replacing(record)}; run `omni-port sync`"
    ]
    deleted = resolution.deletes(block, held)
    if deleted:
        lines.append(
            f"it deletes {deleted}, which the block did not replace in its base: verify "
            "reports it (OP514) until the block's code there is yours (edit it in place, "
            "then `omni-port continue`) or the place changes"
        )
    return lines


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


def transplants_of(options: Options, generated: Path) -> tuple[Path, ...]:
    """The transplant inputs of the last sync (from its lock): the same blocks join the
    copies when resolve runs the sync."""
    lock = lockfile.read_or_none(generated)
    labels = [label for label, _ in lock.transplants] if lock is not None else []
    return tuple(options.config.path(label) for label in labels)


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
        self, candidates: tuple[Candidate, ...], member: Stmt, block: Block
    ) -> tuple[int, resolution.Slot]:
        """(candidate rank or 0, the place): ``#K``, or an upstream line (the candidate
        there, else the statement there)."""
        choice = self.choice if self.choice is not None else _ask(candidates)
        if choice.startswith("#"):
            rank = int(choice[1:]) if choice[1:].isdigit() else 0
            if not 1 <= rank <= len(candidates):
                message = f"--at '{choice}': there are {len(candidates)} candidates"
                raise click.UsageError(message)
            return rank, _slot(member, candidates[rank - 1])
        if not choice.isdigit():
            raise click.UsageError("--at takes '#K' (a candidate) or an upstream line number")
        line = int(choice)
        listed = [
            (n, c)
            for n, c in enumerate(candidates, start=1)
            if c.line == line and self.replacing in (None, c.span)
        ]
        if len(listed) > 1:
            which = "; ".join(f"#{n} {candidate_place(c.line, c.span)}" for n, c in listed)
            message = f"--at {line} is {len(listed)} candidates ({which}): give '#K'"
            raise click.UsageError(message)
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
            raise click.UsageError(f"no statement of {member.name} starts at upstream line {line}")
        stmts = at.suite.stmts[at.index :]
        if self.replacing is not None:
            if self.replacing > len(stmts):
                message = f"--replacing {self.replacing}: {len(stmts)} statements from line {line}"
                raise click.UsageError(message)
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
        raise click.UsageError(f"no place at upstream line {candidate.line} of {member.name}")
    return slot


def _ask(candidates: tuple[Candidate, ...]) -> str:
    if not sys.stdin.isatty():
        raise click.UsageError("give --at '#K' or --at LINE (no terminal to ask in)")
    for rank, candidate in enumerate(candidates, start=1):
        where = f"upstream {candidate_place(candidate.line, candidate.span)}"
        click.echo(f"  #{rank}  {where}  score {candidate.score:.2f}", err=True)
        click.echo(f"        {shorten(candidate.text, 76)}", err=True)
    answer: str = click.prompt("Where does it go (#K or a line)", err=True)
    return answer.strip()


@click.command("adopt")
@click.argument("edit_id")
@click.option("--title", default="", help="Title of the new marked block (default: the edit's).")
@patches_option("Patches directory (default: `patches`).")
@click.pass_obj
@handle_errors
@in_workspace(writes=True)
def adopt_command(options: Options, edit_id: str, title: str, patches_dir: Path | None) -> None:
    """Turn an implicit edit (code changed outside markers) into a titled, marked Omni-new block.

    The patch gets marker lines around its code, the title, and a block id; the next
    sync writes the markers into the runner, and the catalog lists it as a block.
    """
    config = options.config
    directory = patches_dir or config.path(config.patches)
    patch_set, new_id = edits.adopt(read_patch_set(directory), edit_id, title)
    save_patches(directory, patch_set)
    publish()
    summary(options, f"{edit_id} is now the marked block {new_id} in {shown(directory)}/")
