"""The `resolve` and `adopt` commands: a maintainer's answers, recorded in the patches."""

from __future__ import annotations

import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import click

from omni_port import api
from omni_port.api.report import shown
from omni_port.api.writing import publish, save_patches
from omni_port.cli import (
    Options,
    generated_option,
    handle_errors,
    in_workspace,
    patches_option,
    platform_option,
    summary,
)


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
@platform_option
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
    request = api.decisions.ResolveRequest(
        flags.block_id,
        flags.choice,
        flags.replacing,
        flags.drop,
        flags.why,
        flags.patches_dir or config.path(config.patches),
        flags.upstream,
        flags.generated or config.path(config.generated),
    )
    try:
        resolved = api.decisions.resolve(request, options.settings, _ask)
    except api.decisions.Unusable as error:
        raise click.UsageError(str(error)) from None
    save_patches(request.patches, resolved.patch_set)
    publish()
    for line in resolved.lines():
        summary(options, line)
    if resolved.problem:
        summary(
            options,
            f"at that place verify will report {resolved.problem} (fix the code there in "
            "place, then `omni-port continue`)",
        )


def _ask(candidates: tuple[api.model.Candidate, ...]) -> str:
    if not sys.stdin.isatty():
        raise click.UsageError("give --at '#K' or --at LINE (no terminal to ask in)")
    for rank, candidate in enumerate(candidates, start=1):
        where = f"upstream {api.report.candidate_place(candidate.line, candidate.span)}"
        click.echo(f"  #{rank}  {where}  score {candidate.score:.2f}", err=True)
        click.echo(f"        {api.report.shorten(candidate.text, 76)}", err=True)
    answer: str = click.prompt("Where does it go (#K or a line)", err=True)
    return answer.strip()


@click.command("adopt")
@click.argument("edit_id")
@click.option("--title", default="", help="Title of the new marked block (default: the edit's).")
@patches_option("Patches directory (default: `patches`).")
@platform_option
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
    patch_set, new_id = api.decisions.adopt(directory, edit_id, title)
    save_patches(directory, patch_set)
    publish()
    summary(options, f"{edit_id} is now the marked block {new_id} in {shown(directory)}/")
