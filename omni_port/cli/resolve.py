"""The `resolve` and `adopt` commands: a maintainer's answers, recorded in the patches."""

from __future__ import annotations

import sys
from collections.abc import Mapping
from dataclasses import replace
from pathlib import Path

import click

from omni_port import api
from omni_port.api import resolution
from omni_port.cli import Options, generated_option, handle_errors, patches_option, summary
from omni_port.cli.files import save_patches
from omni_port.cli.sync import sticky_upstream
from omni_port.errors import BadInput
from omni_port.model import Block, BlockKind, Code, Status
from omni_port.patches import edits, lockfile
from omni_port.patches.patchfile import piece_filename
from omni_port.patches.store import read_patch_set
from omni_port.pyast.syntax import Stmt
from omni_port.report import shown
from omni_port.sources.upstream import Upstream


@click.command("resolve")
@click.argument("block_id")
@click.option(
    "--at", "choice", help="Where it goes: `#K` for candidate K, or an upstream line number."
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
def resolve_command(
    options: Options,
    block_id: str,
    choice: str | None,
    patches_dir: Path | None,
    upstream: str | None,
    generated: Path | None,
) -> None:
    """Record where a conflicting block goes, so that every later sync places it there.

    Like git rerere: the choice is written into the block's patch file (visible in its
    diff) as the body, the statement to follow and the statements to replace. Candidates
    are numbered as `sync` lists them, on the same upstream. Without --at, a terminal asks.
    A block that is no conflict there (sync placed it), and a choice that would not place
    the block (a signature edit has no place to choose), are refused, exit 2.
    """
    config = options.config
    directory = patches_dir or config.path(config.patches)
    patch_set = read_patch_set(directory)
    module, block = edits.find_block(patch_set, block_id)
    if block.kind is BlockKind.SIGNATURE:
        raise BadInput.at(Code.OP004, block_id, 0, _SIGNATURE_HELP)
    target = generated or config.path(config.generated)
    chosen_upstream = upstream or sticky_upstream(options, target)
    loaded = api.load_upstream(chosen_upstream, options.settings, config.upstream_class)
    member = resolution.member_of(module, block, loaded)
    decision = resolution.unresolved(module, block, loaded)
    row = _last_sync_row(options, target, loaded, block)
    refused = _not_a_conflict(block, decision, row, target, loaded.label)
    if refused:
        raise BadInput.at(Code.OP005, shown(directory / piece_filename(module, block)), 2, refused)
    candidates = decision.candidates
    slot = _chosen(choice, candidates, member)
    record = resolution.resolution_at(slot)
    recorded = replace(block, anchor=replace(block.anchor, resolution=record))
    again = resolution.decided(module, recorded, loaded)
    if again.conflict:
        message = f"that place would not hold on {loaded.label}: {again.reason}; nothing recorded"
        raise BadInput.at(Code.OP301, block_id, 0, message)
    save_patches(directory, edits.resolve(patch_set, block_id, record))
    where = " > ".join(slot.path) or "the method body"
    after = f"after `{record.after}`" if record.after else "first"
    summary(options, f"recorded: {block_id} goes {after} in {where}; run `omni-port sync`")


def _last_sync_row(
    options: Options, generated: Path, upstream: Upstream, block: Block
) -> Mapping[str, object] | None:
    """The block's row in the lock of the last sync, when that sync was onto ``upstream``."""
    lock = lockfile.read_or_none(generated)
    if lock is None or lock.upstream != options.config.recorded_spec(upstream.label):
        return None
    return next((row for row in lock.placements if row.get("id") == block.id), None)


def _not_a_conflict(
    block: Block,
    decision: resolution.Decision,
    row: Mapping[str, object] | None,
    generated: Path,
    label: str,
) -> str:
    """Why ``block`` cannot be resolved ("" when it can): sync placed it (its row in the
    last sync's lock says so) or, with no such row, its anchor alone places it. A block
    with a recorded resolution may be resolved again."""
    if block.anchor.resolution is not None:
        return ""
    if row is not None:
        if row.get("status") == Status.CONFLICT:
            return ""
        placed = lockfile.placement(row)
        where = f"{shown(generated / placed.module)}:{placed.start}"
        rules = ", ".join(rule.value for rule in placed.decided_by) or placed.status.value
    elif decision.conflict:
        return ""
    else:
        slot = decision.slot
        where = f"upstream line {slot.line()}" if slot is not None else "its place"
        rules = ", ".join(rule.value for rule in decision.rules) or "anchor"
    return (
        f"{block.id} is not a conflict: it is placed at {where} on {label} "
        f"(decided by {rules}); nothing recorded"
    )


_SIGNATURE_HELP = (
    "a signature edit has no place to choose: upstream changed the signature it edits. "
    "Edit its patch file by hand (`replaces:` the new upstream signature, the code the "
    "signature omni wants), then run `omni-port sync`"
)


def _chosen(
    choice: str | None, candidates: tuple[resolution.Scored, ...], member: Stmt
) -> resolution.Slot:
    if choice is None:
        choice = _ask(candidates)
    if choice.startswith("#"):
        rank = int(choice[1:]) if choice[1:].isdigit() else 0
        if not 1 <= rank <= len(candidates):
            raise click.UsageError(f"--at '{choice}': there are {len(candidates)} candidates")
        return candidates[rank - 1].slot
    if not choice.isdigit():
        raise click.UsageError("--at takes '#K' (a candidate) or an upstream line number")
    line = int(choice)
    listed = next((c.slot for c in candidates if c.slot.line() == line), None)
    found = listed if listed is not None else resolution.slot_at_line(member, line)
    if found is None:
        raise click.UsageError(f"no statement of {member.name} starts at upstream line {line}")
    return found


def _ask(candidates: tuple[resolution.Scored, ...]) -> str:
    if not sys.stdin.isatty():
        raise click.UsageError("give --at '#K' or --at LINE (no terminal to ask in)")
    for rank, scored in enumerate(candidates, start=1):
        where = f"upstream line {scored.slot.line()}  score {scored.score:.2f}"
        click.echo(f"  #{rank}  {where}  {scored.slot.text()[:80]}", err=True)
    answer: str = click.prompt("Where does it go (#K or a line)", err=True)
    return answer.strip()


@click.command("adopt")
@click.argument("edit_id")
@click.option("--title", default="", help="Title of the new marked block (default: the edit's).")
@patches_option("Patches directory (default: `patches`).")
@click.pass_obj
@handle_errors
def adopt_command(options: Options, edit_id: str, title: str, patches_dir: Path | None) -> None:
    """Turn an implicit edit (code changed outside markers) into a titled, marked Omni-new block.

    The patch gets marker lines around its code, the title, and a block id; the next
    sync writes the markers into the runner, and the catalog lists it as a block.
    """
    config = options.config
    directory = patches_dir or config.path(config.patches)
    patch_set, new_id = edits.adopt(read_patch_set(directory), edit_id, title)
    save_patches(directory, patch_set)
    summary(options, f"{edit_id} is now the marked block {new_id} in {shown(directory)}/")
