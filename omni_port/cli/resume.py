"""The `continue` command: the edited generated runners become the state of the workspace."""

from __future__ import annotations

from pathlib import Path

import click

from omni_port import api
from omni_port.api import continuation
from omni_port.api.model import Report, Status
from omni_port.api.report import in_directory, shorten
from omni_port.api.writing import publish, save_patches
from omni_port.cli import (
    Options,
    generated_option,
    handle_errors,
    in_workspace,
    json_option,
    patches_option,
    platform_option,
    summary,
)
from omni_port.cli.files import write_files
from omni_port.cli.output import emit


@click.command("continue")
@click.option(
    "--why",
    default="",
    help="Why, recorded with every resolution taken (default: the runner and line it was "
    "edited at). Who is git's author identity.",
)
@patches_option("Patches directory to record the resolutions in (default: `patches`).")
@generated_option("The generated directory whose runners were edited (default: `generated`).")
@json_option
@platform_option
@click.pass_obj
@handle_errors
@in_workspace(writes=True)
def continue_command(
    options: Options,
    why: str,
    patches_dir: Path | None,
    generated: Path | None,
    json_path: Path | None,
) -> Report:
    """Take the edited generated runners as the new state of the workspace (as `git rebase
    --continue` takes the files you resolved).

    Resolve a conflict's code where sync left it: in the generated runner, replace its
    conflict region by the block's code where it belongs (uncommented, changed as needed;
    a signature too), or delete the region to drop the block on this upstream; fix what
    verify found by editing a block's lines. Then run `continue`: every block whose place
    or code changed gets a resolution in its patch file (the place, its code when it is not
    the block's own, who and why), which every later command replays (like `git rerere`)
    and which becomes a conflict again, saying why, when upstream or omni changes under it.
    The patches are synced again and must give the edit back; the runners are rewritten.

    Refused (exit 2, nothing written): an edit of code no block owns (upstream's code
    outside every block, omni-owned code), and runners generated before the patches or the
    upstream changed. Exit 1 while conflicts are left.
    """
    config = options.config
    directory = patches_dir or config.path(config.patches)
    target = generated or config.path(config.generated)
    done = api.continuation.continue_workspace(directory, target, why, options.settings)
    if done.taken:
        save_patches(directory, done.patch_set)
    files = done.synced.files
    changes, _ = write_files(target, files, api.inputs.previous_outputs(target))
    publish()
    synced = done.synced.synced
    findings = (*done.notes, *in_directory(synced.findings, target, files))
    left = [p for p in synced.placements if p.status is Status.CONFLICT]
    outcome = Report(synced.placements, findings, {"taken": len(done.taken), "left": len(left)})
    emit(outcome, json_path)
    for item in done.taken:
        summary(options, _taken_line(item))
    summary(options, _continued(done, len(left), not changes.clean))
    return outcome


def _taken_line(item: continuation.Taken) -> str:
    resolution = item.resolution
    if resolution.code == "" and not resolution.replaces:
        return f"  {item.block_id}: dropped on this upstream (upstream's code stays)"
    where = f"after `{shorten(resolution.after, 50)}`" if resolution.after else "first"
    if resolution.replaces and not resolution.after and not resolution.path:
        where = "as the signature"
    count = len(resolution.replaces)
    replaced = (
        f", replacing {count} statement{'s' if count > 1 else ''}"
        if count and where != "as the signature"
        else ""
    )
    code = ", with your code" if resolution.code else ""
    was = " (was a conflict)" if item.was_conflict else ""
    return f"  {item.block_id}: {where}{replaced}{code}{was}"


def _continued(done: continuation.Continued, left: int, rewritten: bool) -> str:
    if not done.edited:
        head = "no edited runner: nothing to take"
    else:
        head = (
            f"took the edits of {len(done.edited)} runners: {len(done.taken)} resolutions "
            f"recorded in the patches"
        )
    runners = "; runners rewritten" if rewritten else ""
    if left:
        return (
            f"{head}{runners}; {left} conflicts left: edit their regions (or `omni-port "
            "resolve`), then `omni-port continue` again"
        )
    return f"{head}{runners}; no conflicts left: run `omni-port verify` (or `make sync`)"
