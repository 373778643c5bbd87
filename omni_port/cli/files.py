"""What commands write: trees of files, staged in the command's transaction (published
together when it commits), or with --check only compared."""

from __future__ import annotations

import time
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path

import click

from omni_port import TOOL
from omni_port.api.files import encode, lockfile, remove_dead_temps_under, transaction
from omni_port.api.model import BadInput, Code, Finding, PatchSet
from omni_port.api.patches import (
    Changes,
    edit_finding,
    existing,
    hand_edits,
    plan,
    render_patch_set,
    unified_diff,
)
from omni_port.api.report import shown


@dataclass(frozen=True, slots=True)
class Writing:
    """How a command writes an output tree, as its flags say."""

    #: Write nothing; report what would change (--check).
    check: bool = False
    #: Print the unified diff of what changes (--diff).
    diff: bool = False
    #: Overwrite files edited by hand since sync wrote them (--discard-edits).
    discard_edits: bool = False


def staging() -> transaction.Transaction:
    """The running command's transaction (``cli.in_workspace`` opens one for every
    command that writes)."""
    found = transaction.current()
    if found is None:
        raise RuntimeError("a command that writes runs in_workspace(writes=True)")
    return found


def write_files(
    root: Path,
    files: Mapping[str, bytes],
    stale: Iterable[str],
    check: bool = False,
    diff: bool = False,
) -> tuple[Changes, list[Finding]]:
    """Stage a tree of outputs in the command's transaction, or with ``check`` only
    compare it.

    Returns what changes and, under ``check``, one OP304 finding per file that would
    change. ``diff`` prints the unified diff on stdout.
    """
    changes = plan(root, files, stale)
    if diff:
        click.echo(unified_diff(root, files, changes), nl=False)
    if check:
        return changes, would_change(root, changes)
    if not changes.clean:
        staged = staging()
        staged.write_tree(root, files, changes.changed)
        for rel in changes.removed:
            staged.remove(root / rel)
    else:
        # Temp files a killed run left go even when nothing else changes here.
        remove_dead_temps_under(root, files)
    return changes, []


def would_change(root: Path, changes: Changes) -> list[Finding]:
    """OP304 for every file a write would rewrite or remove."""
    rows = [(rel, "rewrite") for rel in changes.changed]
    rows += [(rel, "remove") for rel in changes.removed]
    return [
        Finding(Code.OP304, shown(root / rel), 1, f"would {verb} it") for rel, verb in sorted(rows)
    ]


def save_patches(directory: Path, patch_set: PatchSet) -> Changes:
    """Stage a patch set: changed files written, files of pieces that are gone removed."""
    files = {rel: encode(text) for rel, text in render_patch_set(patch_set, TOOL).items()}
    changes, _ = write_files(directory, files, existing(directory, "*/*.patch"))
    return changes


def keep_hand_edits(generated: Path, files: Mapping[str, bytes], discard: bool) -> list[str]:
    """Refuse to overwrite a generated runner edited since sync wrote it, as git refuses to
    check out over local changes: BadInput (OP207), one finding per edited file at its
    first edited line, naming the regions and the two ways on.

    With ``discard`` the edits are dropped, but not lost: each edited file is copied into
    ``.omni-port/discarded/`` of the workspace in the same transaction; returns those
    copies' paths.
    """
    lock = lockfile.read_or_none(generated)
    edits = hand_edits(generated, lock.outputs, files) if lock is not None else []
    if not edits:
        return []
    if not discard:
        raise BadInput([edit_finding(shown(generated / e.rel), e, refused=True) for e in edits])
    staged = staging()
    folder = transaction.state_dir(staged.root) / "discarded" / time.strftime("%Y%m%d-%H%M%S")
    kept = []
    for edit in edits:
        copy = folder / generated.name / edit.rel
        staged.write(copy, (generated / edit.rel).read_bytes())
        kept.append(shown(copy))
    return kept


def publish() -> None:
    """Publish everything the command staged, as one transaction: before it says what it
    wrote (``in_workspace`` publishes what is left when the command returns)."""
    staging().commit()
