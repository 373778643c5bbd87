"""What commands write: trees of files, atomically, or with --check what would change."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from pathlib import Path

import click

from omni_port import TOOL
from omni_port.model import Code, Finding, PatchSet
from omni_port.patches.patchfile import render_patch_set
from omni_port.patches.store import Changes, apply, existing, plan, unified_diff
from omni_port.report import shown
from omni_port.sources.textio import encode, remove_dead_temps_under


def write_files(
    root: Path,
    files: Mapping[str, bytes],
    stale: Iterable[str],
    check: bool = False,
    diff: bool = False,
) -> tuple[Changes, list[Finding]]:
    """Write a tree of outputs atomically, or with ``check`` only compare it.

    Returns what changed and, under ``check``, one OP304 finding per file that would change.
    ``diff`` prints the unified diff on stdout.
    """
    changes = plan(root, files, stale)
    if diff:
        click.echo(unified_diff(root, files, changes), nl=False)
    if check:
        return changes, would_change(root, changes)
    if not changes.clean:
        apply(root, files, changes)
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
    """Write a patch set back: changed files atomically, files of pieces that are gone removed."""
    files = {rel: encode(text) for rel, text in render_patch_set(patch_set, TOOL).items()}
    changes, _ = write_files(directory, files, existing(directory, "*/*.patch"))
    return changes
