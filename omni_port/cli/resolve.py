"""The `resolve` and `adopt` commands: a maintainer's answers, recorded in the patches."""

from __future__ import annotations

import sys
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

import click

from omni_port import api
from omni_port.api import resolution
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
from omni_port.report import candidate_place, shorten, shown


@dataclass(frozen=True, slots=True)
class ResolveFlags:
    """The flags of `resolve`, as given."""

    block_id: str
    choice: str | None
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
    same upstream, history and catalog, numbered the same; the chosen place is tried by
    that sync before it is kept. A block that is no conflict there (sync placed it), a
    place that sync would not take, and a signature edit are refused, exit 2. The code of
    a conflict (a signature's included) is resolved by editing the conflict region in the
    generated runner, then `omni-port continue`.
    """
    flags = ResolveFlags(**given)
    block_id, choice, why = flags.block_id, flags.choice, flags.why
    config = options.config
    directory = flags.patches_dir or config.path(config.patches)
    patch_set = read_patch_set(directory)
    module, block = edits.find_block(patch_set, block_id)
    where = shown(directory / piece_filename(module, block))
    if block.kind is BlockKind.SIGNATURE:
        raise BadInput.at(Code.OP004, where, 1, _SIGNATURE_HELP)
    target = flags.generated or config.path(config.generated)
    chosen_upstream = flags.upstream or sticky_upstream(options, target)
    request = api.SyncRequest(
        directory,
        chosen_upstream,
        target,
        config.upstream_class,
        config.history,
        transplants_of(options, target),
    )
    workspace = api.workflows.load_workspace(request, options.settings)
    label = workspace.upstream.label
    member = resolution.member_of(module, block, workspace.upstream)
    before = resolution.unresolved(workspace, module, block)
    plain = before[block.id]
    if plain.status is not Status.CONFLICT and block.anchor.resolution is None:
        raise BadInput.at(Code.OP005, where, 2, _placed(block, plain, target, label))
    if flags.drop:
        record = _dropped(block, where, choice, why)
    else:
        rank, slot = _chosen(choice, plain.candidates, member, block)
        record = replace(
            resolution.resolution_at(slot),
            by=author(),
            why=why
            or (f"candidate #{rank} on {label}" if rank else f"line {slot.line()} of {label}"),
        )
    recorded = replace(block, anchor=replace(block.anchor, resolution=record))
    after = resolution.decided(workspace, module, recorded)
    again = after[block.id]
    if again.status is Status.CONFLICT or Rule.RESOLVED not in again.decided_by:
        reason = again.reason or "sync places it elsewhere"
        message = f"that place would not hold on {label}: {reason}; nothing recorded"
        raise BadInput.at(Code.OP301, where, 1, message)
    taken = resolution.taken_from(before, after)
    if taken:
        message = (
            f"that place would not hold on {label}: it takes statements that "
            f"{', '.join(taken)} replaces, which sync would make a conflict; nothing recorded"
        )
        raise BadInput.at(Code.OP301, where, 1, message)
    save_patches(directory, edits.resolve(patch_set, block_id, record))
    publish()
    if record.dropped:
        summary(options, f"recorded: {block_id} is dropped on {label}; run `omni-port sync`")
        return
    body = " > ".join(record.path) or "the method body"
    follows = f"after `{shorten(record.after, 60)}`" if record.after else "first"
    count = len(record.replaces)
    replaced = f", replacing {count} statement{'s' if count > 1 else ''}" if count else ""
    summary(
        options,
        f"recorded: {block_id} goes {follows} in {body}{replaced}; run `omni-port sync`",
    )


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


def _chosen(
    choice: str | None, candidates: tuple[Candidate, ...], member: Stmt, block: Block
) -> tuple[int, resolution.Slot]:
    """(candidate rank or 0, the place) of ``--at``: ``#K``, or an upstream line (one
    candidate there, else a place before the statement at that line)."""
    if choice is None:
        choice = _ask(candidates)
    if choice.startswith("#"):
        rank = int(choice[1:]) if choice[1:].isdigit() else 0
        if not 1 <= rank <= len(candidates):
            raise click.UsageError(f"--at '{choice}': there are {len(candidates)} candidates")
        return rank, _slot(member, candidates[rank - 1])
    if not choice.isdigit():
        raise click.UsageError("--at takes '#K' (a candidate) or an upstream line number")
    line = int(choice)
    listed = [(n, c) for n, c in enumerate(candidates, start=1) if c.line == line]
    if len(listed) > 1:
        which = "; ".join(f"#{n} {candidate_place(c.line, c.span)}" for n, c in listed)
        raise click.UsageError(f"--at {line} is {len(listed)} candidates ({which}): give '#K'")
    if listed:
        rank, candidate = listed[0]
        return rank, _slot(member, candidate)
    found = resolution.slot_at_line(member, line, block)
    if found is None:
        raise click.UsageError(f"no statement of {member.name} starts at upstream line {line}")
    return 0, found


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
